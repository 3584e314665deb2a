//! The bodies of the chunks the agent (and a host answering it) places on
//! a session, one type each. Every field a host may read is here; reading
//! is lenient (a missing field takes its default), so a session written
//! by an older `hc` still reads.

use model::{ContentBlock, StopReason, Usage};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A chunk body with the type it is placed instance on.
pub trait Body: Serialize {
    /// The chunk's type (the scope it is an instance of).
    const TYPE: &'static str;
}

/// `session`: what a host writes when it makes one.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct SessionBody {
    /// The prompt's first line, cut.
    pub title: String,
    /// When it was made (RFC 3339, milliseconds).
    pub created: String,
    /// The name a program gave it (`--session-id`, a UUID), which
    /// `--resume` and `hc trace` take and stream-json lines carry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// The session it was forked from, when it was (`hc fork`, a rewind
    /// of the conversation): its history is that one's up to the cut,
    /// the same chunks placed on it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub forked_from: Option<Forked>,
    /// The session it replays (`hc replay`), when it is a replay.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replay_of: Option<String>,
}

/// Where a session was forked from.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Forked {
    /// The session.
    pub session: String,
    /// How many of its model calls the fork kept.
    pub calls: usize,
}

impl Body for SessionBody {
    const TYPE: &'static str = "session";
}

impl SessionBody {
    /// Reads a session's body (what is missing is empty).
    pub fn parse(body: &Value) -> SessionBody {
        SessionBody::deserialize(body).unwrap_or_default()
    }
}

/// Who a prompt came from, when not the person.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PromptSource {
    /// A `stop` hook that sent the model back to work.
    Hook,
    /// A sub-agent that ran in the background: its result.
    Agent,
    /// A message another session or a person sent (`hc send`).
    Message,
}

/// `prompt`: a task or message for the agent.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Prompt {
    /// Its text.
    pub text: String,
    /// Who sent it, when not the person.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub from: Option<PromptSource>,
    /// Images sent with it (`--image`, a path in a chat message), before
    /// its text; kept whole, so a rebuild sends the same bytes.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub images: Vec<PromptImage>,
    /// The `message` it brings to the model, when it brings one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// The id the driving program gave its user message (the Agent SDK's
    /// `uuid`), which `rewind_files` names it by.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub uuid: Option<String>,
}

/// An image a prompt carries.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct PromptImage {
    /// The file it was read from, as given.
    pub path: String,
    /// `image/png`, `image/jpeg`, `image/gif` or `image/webp`.
    pub media_type: String,
    /// Its bytes, base64.
    pub data: String,
}

impl Body for Prompt {
    const TYPE: &'static str = "prompt";
}

/// `answer`: one model reply, as it came.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Answer {
    /// Its text blocks, joined.
    pub text: String,
    /// Its content blocks, verbatim (replayed to the API as they are).
    pub content: Vec<ContentBlock>,
    /// The model that answered.
    pub model: String,
    /// Why it stopped (`interrupted` for one a person cut short).
    pub stop_reason: Option<StopReason>,
    /// The call's tokens.
    pub usage: Usage,
    /// The call's dollars (none: the model has no price).
    pub cost_usd: Option<f64>,
    /// The agent process that made the call.
    pub process: String,
    /// The commit the call's request was built from.
    pub as_of: Option<u64>,
    /// Its number among its run's model calls (from 1).
    pub call: Option<u32>,
    /// The API's id of the message.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message_id: Option<String>,
    /// The code-execution container the reply ran in (its id): the next
    /// call of the session goes on in it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub container: Option<String>,
    /// When the call was made and how long it took (none: recorded by a
    /// version that did not time calls).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timing: Option<CallTiming>,
}

/// How a model call went in time.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct CallTiming {
    /// When it was sent (RFC 3339, UTC, milliseconds).
    pub started: String,
    /// From sending to the reply's end, retries included.
    pub duration_ms: u64,
    /// From sending to the first content of the reply.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_token_ms: Option<u64>,
    /// Times the client asked again (a refused or broken attempt).
    pub retries: u32,
}

impl Body for Answer {
    const TYPE: &'static str = "answer";
}

impl Answer {
    /// The `tool_use` ids of its calls, in order.
    pub fn call_ids(&self) -> impl Iterator<Item = &str> {
        self.content.iter().filter_map(|b| match b {
            ContentBlock::ToolUse(t) => Some(t.id.as_str()),
            _ => None,
        })
    }
}

/// `tool-call`: a call the model made, with the run it became.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ToolCall {
    /// The program (or own tool) called.
    pub program: String,
    /// Its run's process (none: answered without a run).
    pub process: Option<String>,
    /// The model's id of the call.
    pub tool_use_id: String,
    /// The input it ran with (filled: `expect_sha256`, `cwd`).
    pub input: Value,
}

impl Body for ToolCall {
    const TYPE: &'static str = "tool-call";
}

/// `tool-result`: what a call came to, as the model reads it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ToolResult {
    /// The program (or own tool) called.
    pub program: String,
    /// Its run's process (none: it never ran).
    pub process: Option<String>,
    /// The call it answers.
    pub tool_use_id: String,
    /// What the model reads.
    pub text: String,
    /// The call did not succeed.
    pub is_error: bool,
    /// The same facts for machines (the program's output `data`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
    /// Refused by the permissions, a person or a hook: never ran.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub denied: bool,
}

impl Body for ToolResult {
    const TYPE: &'static str = "tool-result";
}

/// `compaction`: a summary the next calls start from.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Compaction {
    /// The summary, as the model is shown it.
    pub text: String,
    /// The summary call's tokens.
    pub usage: Usage,
    /// The model that summarized.
    pub model: String,
    /// The summary call's dollars (0 with no price).
    pub cost_usd: f64,
    /// The agent process that compacted.
    pub process: String,
    /// The commit the summary call's request was built from.
    pub as_of: Option<u64>,
    /// How many messages before it are kept verbatim after it.
    pub keep_messages: usize,
}

impl Body for Compaction {
    const TYPE: &'static str = "compaction";
}

impl Compaction {
    /// The summary alone, without the header the model is shown it under.
    pub fn summary(&self) -> &str {
        self.text
            .split_once("]\n\n")
            .map_or(self.text.as_str(), |(_, s)| s)
    }
}

/// `permission-request`: the agent asks whether a call may run.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct PermissionRequest {
    /// The call.
    pub tool_use_id: String,
    /// Its program.
    pub program: String,
    /// Its input.
    pub input: Value,
    /// Why it asks.
    pub reason: String,
    /// The rule that would allow calls like it (`shell(cargo test:*)`).
    pub rule: String,
    /// Every rule "always" adds, when it takes more than one (a command
    /// running several commands, or writing files).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub rules: Vec<String>,
    /// The agent process that asks.
    pub process: String,
}

impl Body for PermissionRequest {
    const TYPE: &'static str = "permission-request";
}

/// A person's answer to a permission request.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Choice {
    /// This call may run.
    Allow,
    /// Calls the rule covers may run, for the rest of the session.
    Always,
    /// It may not, and calls the rule covers are refused without asking
    /// for the rest of the session ("no, and don't ask again").
    Never,
    /// It may not (any answer that is not one of the others).
    #[default]
    #[serde(other)]
    Deny,
}

/// `permission-decision`: a host's answer to a `permission-request`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct PermissionDecision {
    /// The request's chunk id.
    pub request: String,
    /// The answer.
    pub decision: Choice,
    /// With `always` (`never`): the rule to allow (refuse), else the
    /// request's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rule: Option<String>,
    /// With a denial: what to tell the model.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// With an allowance: the input the call runs with instead (checked
    /// against the tool's schema), as an Agent SDK program's
    /// `updatedInput`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub updated_input: Option<Value>,
    /// With a denial: stop the run too (the SDK's `interrupt`).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub interrupt: bool,
    /// Who answered, in words (`the terminal`, `the page`, `the SDK
    /// program`): what every other host asking the same shows.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub by: Option<String>,
}

impl Body for PermissionDecision {
    const TYPE: &'static str = "permission-decision";
}

/// `user-question`: the agent's `ask_user`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct UserQuestion {
    /// The question.
    pub text: String,
    /// Suggested answers.
    pub options: Option<Vec<String>>,
    /// The call that asked.
    pub tool_use_id: String,
    /// The agent process that asks.
    pub process: String,
}

impl Body for UserQuestion {
    const TYPE: &'static str = "user-question";
}

/// `plan`: the plan a run in plan mode ended its research with
/// (`exit_plan`). With `ask`, the agent waits for a `user-answer` to it:
/// [`PLAN_APPROVE`] or [`PLAN_ACCEPT_EDITS`] approves it (the run goes on
/// in that mode), any other text is the person's feedback; without, no
/// one can approve it and the run ends with it as its result.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Plan {
    /// The plan, as the model wrote it (markdown).
    pub text: String,
    /// The call that made it.
    pub tool_use_id: String,
    /// The agent process.
    pub process: String,
    /// Whether the agent waits for a person's answer.
    pub ask: bool,
}

impl Body for Plan {
    const TYPE: &'static str = "plan";
}

/// The answer to a `plan` that approves it, edits still asked about.
pub const PLAN_APPROVE: &str = "default";
/// The answer to a `plan` that approves it, edits accepted.
pub const PLAN_ACCEPT_EDITS: &str = "accept-edits";

/// `user-answer`: a host's answer to a `user-question`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct UserAnswer {
    /// The question's chunk id.
    pub request: String,
    /// The answer.
    pub text: String,
    /// Who answered, in words (as [`PermissionDecision::by`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub by: Option<String>,
}

impl Body for UserAnswer {
    const TYPE: &'static str = "user-answer";
}

/// `message`: something sent to a session from outside it (`hc send`, a
/// person or another session), read by its agent at its next turn — it
/// records a `prompt` bringing it, so the requests stay the session's own.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Message {
    /// Its text.
    pub text: String,
    /// Who sent it, in words (a session's id, `a person`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub from: Option<String>,
    /// On a message a run sent (on its own session): the session it is
    /// for (an id, a prefix or a name), for its host to deliver.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub to: Option<String>,
    /// On a delivered copy: the message it copies (one copy each).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub relayed_from: Option<String>,
    /// On a sent message, once delivered: the session it went to.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub delivered: Option<String>,
    /// On a sent message that could not be delivered: why.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub undelivered: Option<String>,
    /// Who sent it, as the host that committed it knows (decision 19):
    /// never what the text, or a sender's `from`, claims.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sender: Option<Sender>,
}

impl Body for Message {
    const TYPE: &'static str = "message";
}

/// Who sent a message: a person through a front end, or another
/// session's agent.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Sender {
    /// The person, when a person sent it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub person: Option<String>,
    /// Through what: `hc send`, `page`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub via: Option<String>,
    /// The session whose agent sent it, when an agent did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
}

impl Sender {
    /// A person's, through `via`.
    pub fn person(person: &str, via: &str) -> Sender {
        Sender {
            person: Some(person.to_owned()),
            via: Some(via.to_owned()),
            session: None,
        }
    }

    /// Another session's agent's.
    pub fn session(session: &str) -> Sender {
        Sender {
            session: Some(session.to_owned()),
            ..Sender::default()
        }
    }

    /// In words: `alice (hc send)`, `session s_… (an agent)`.
    pub fn shown(&self) -> String {
        match (&self.person, &self.via, &self.session) {
            (Some(person), Some(via), _) => format!("{person} ({via})"),
            (Some(person), None, _) => person.clone(),
            (None, _, Some(session)) => format!("session {session} (an agent)"),
            (None, _, None) => "an unknown sender".into(),
        }
    }
}

impl Message {
    /// The prompt that brings it to its session's model: a header built
    /// from who sent it as its host recorded it (never from its text),
    /// then its text, every line quoted (`> `), so no line of it can pass
    /// for a header, or for the person's own words.
    pub fn framed(&self) -> String {
        let from = match &self.sender {
            Some(sender) => sender.shown(),
            None => "an unknown sender (it came through no front end hc knows)".into(),
        };
        let mut out = format!("[a message from {from}; its text, quoted:]\n");
        for line in self.text.split_inclusive('\n') {
            let line = line.trim_end_matches(['\n', '\r']);
            let line = line.replace(['\u{2028}', '\u{2029}', '\u{85}', '\r'], " ");
            match line.is_empty() {
                true => out.push_str(">\n"),
                false => {
                    out.push_str("> ");
                    out.push_str(&line);
                    out.push('\n');
                }
            }
        }
        out.truncate(out.trim_end_matches('\n').len());
        out
    }
}

impl Message {
    /// A message body, read leniently (what does not read is empty).
    pub fn parse_body(body: &serde_json::Value) -> Message {
        Message::deserialize(body).unwrap_or_default()
    }

    /// Whether it came to its session (not one the session's own run sent
    /// elsewhere).
    pub fn incoming(&self) -> bool {
        self.to.is_none()
    }
}

/// `interrupt`: a host asks the run to stop.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Interrupt {
    /// Who asked, in words.
    pub text: String,
}

impl Body for Interrupt {
    const TYPE: &'static str = "interrupt";
}

/// Where a plan's item stands.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TodoStatus {
    /// Not begun.
    #[default]
    Pending,
    /// Being worked on.
    InProgress,
    /// Done.
    Completed,
}

/// One item of the plan.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TodoItem {
    /// What is to be done.
    pub content: String,
    /// Where it stands.
    pub status: TodoStatus,
    /// Anything else the model said of it, kept.
    #[serde(flatten)]
    pub extra: serde_json::Map<String, Value>,
}

/// `todo`: the agent's plan, replaced whole each time.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Todo {
    /// The items, in order.
    pub items: Vec<TodoItem>,
    /// `N of M done`.
    pub text: String,
}

impl Body for Todo {
    const TYPE: &'static str = "todo";
}

impl Todo {
    /// A plan of `items`, with its line of progress.
    pub fn of(items: Vec<TodoItem>) -> Todo {
        let text = format!("{} of {} done", Todo::done_in(&items), items.len());
        Todo { items, text }
    }

    /// How many items are completed.
    pub fn done(&self) -> usize {
        Todo::done_in(&self.items)
    }

    fn done_in(items: &[TodoItem]) -> usize {
        items
            .iter()
            .filter(|i| i.status == TodoStatus::Completed)
            .count()
    }
}
