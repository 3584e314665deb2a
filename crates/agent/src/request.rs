//! The request is a function of the substrate (DESIGN.md, decision 10).
//! [`Prefix`] is the part fixed by a context event — model, system, tools —
//! and [`Conversation`] the messages, mapped chunk by chunk from the
//! session (`prompt` → user text, `answer` → the reply's blocks verbatim,
//! `tool-result` → `tool_result` blocks). The agent feeds both as it goes;
//! [`build`] does the same from a read of the substrate; each chunk maps
//! the same way whether it is new or old, so the two agree byte for byte.

use crate::config::AgentConfig;
use crate::context::ContextBody;
use model::{
    CacheControl, ContentBlock, Message, MessagesRequest, Role, SystemBlock, Thinking, Tool,
};
use serde_json::Value;
use substrate::{ChunkItem, PlacementType};

/// A program the model may call: its name, description and input schema,
/// as its chunks said at the context event's `as_of`.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolDef {
    /// The program's name (the tool's).
    pub name: String,
    /// Its `body.text`.
    pub description: String,
    /// Its input type's `body.schema`.
    pub schema: Value,
}

/// A pinned scope as read at the context event's `as_of`.
#[derive(Clone, Debug)]
pub struct Pinned {
    /// The scope's own chunk.
    pub scope: ChunkItem,
    /// Its members.
    pub members: Vec<ChunkItem>,
}

/// What a context event fixes for every call made under it.
#[derive(Clone, Debug, PartialEq)]
pub struct Prefix {
    model: String,
    max_tokens: u32,
    thinking: Option<Thinking>,
    system: Vec<SystemBlock>,
    tools: Vec<Tool>,
}

impl Prefix {
    /// The prefix of `context`, for a run configured by `config`.
    pub fn new(
        config: &AgentConfig,
        context: &ContextBody,
        knowledge: &[Pinned],
        tools: &[ToolDef],
    ) -> Prefix {
        let mut system = vec![SystemBlock::text(base_text(context))];
        if !knowledge.is_empty() {
            system.push(SystemBlock::text(crate::knowledge::render(knowledge)));
        }
        if let Some(extra) = config.system_append.as_deref().filter(|s| !s.is_empty()) {
            system.push(SystemBlock::text(extra));
        }
        if let Some(last) = system.pop() {
            system.push(last.cached(CacheControl::ephemeral()));
        }
        let mut all: Vec<Tool> = tools
            .iter()
            .map(|t| Tool::custom(&t.name, &t.description, t.schema.clone()))
            .collect();
        for server in &config.server_tools {
            if let Ok(tool) = serde_json::from_value::<Tool>(server.clone()) {
                all.push(tool);
            }
        }
        for own in &context.own_tools {
            if let Ok(tool) = serde_json::from_value::<Tool>(own.clone()) {
                all.push(tool);
            }
        }
        if let Some(Tool::Custom(last)) = all.last_mut() {
            last.cache_control = Some(CacheControl::ephemeral());
        }
        Prefix {
            model: context.model.clone(),
            max_tokens: context_max_tokens(context, config),
            thinking: config
                .thinking
                .filter(|b| *b > 0)
                .map(|budget_tokens| Thinking::Enabled { budget_tokens }),
            system,
            tools: all,
        }
    }

    /// A request with this prefix and no messages yet.
    pub fn request(&self) -> MessagesRequest {
        let mut request = MessagesRequest::new(&self.model, self.max_tokens, Vec::new());
        request.system = self.system.clone();
        request.tools = self.tools.clone();
        request.thinking = self.thinking;
        request
    }
}

/// The reply limit: configured, else what the context event recorded.
fn context_max_tokens(context: &ContextBody, config: &AgentConfig) -> u32 {
    config.max_output_tokens.unwrap_or(context.max_tokens)
}

/// The first system block: the base instructions, the environment, and
/// the project's instructions.
fn base_text(context: &ContextBody) -> String {
    let mut text = context.system.clone();
    text.push_str(&format!(
        "\n\n# Environment\nWorking directory: {}\nPlatform: {}\nToday's date: {}\nModel: {}",
        context.cwd, context.platform, context.date, context.model
    ));
    for file in &context.instructions {
        text.push_str(&format!(
            "\n\n# Instructions from {}\n\n{}",
            file.path,
            file.text.trim_end()
        ));
    }
    text
}

/// The messages of a session, built chunk by chunk. Closed messages never
/// change; the open one at the end is rendered when a request is made.
#[derive(Clone, Debug, Default)]
pub struct Conversation {
    closed: Vec<Message>,
    open: Open,
    /// The `tool_use` ids of the last assistant message.
    calls: Vec<String>,
}

#[derive(Clone, Debug, Default)]
enum Open {
    #[default]
    Nothing,
    /// Consecutive answers: one assistant message.
    Assistant(Vec<ContentBlock>),
    /// Consecutive prompts and results: one user message.
    User {
        results: Vec<ContentBlock>,
        texts: Vec<ContentBlock>,
    },
}

/// The chunk types that become messages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sent {
    /// `prompt`, and `compaction` (its summary starts the messages): user text.
    Prompt,
    /// `answer`: the reply's blocks.
    Answer,
    /// `tool-result`: a `tool_result` block.
    ToolResult,
}

impl Sent {
    /// The type of `item`, if it is one that is sent.
    pub fn of(item: &ChunkItem) -> Option<Sent> {
        let is = |t: &str| item.is_on(t, PlacementType::Instance);
        if is("prompt") || is("compaction") {
            Some(Sent::Prompt)
        } else if is("answer") {
            Some(Sent::Answer)
        } else if is("tool-result") {
            Some(Sent::ToolResult)
        } else {
            None
        }
    }
}

/// The text a `tool_use` left without a result gets.
pub const INTERRUPTED: &str = "interrupted before the tool returned";

impl Conversation {
    /// Maps one session chunk (any type; those not sent are skipped).
    pub fn push(&mut self, item: &ChunkItem) {
        if let Some(kind) = Sent::of(item) {
            self.push_body(kind, &item.body_value());
        }
    }

    /// Maps a chunk of type `kind` with `body`: what [`push`](Self::push)
    /// does once it knows the type (the agent, for chunks it just committed).
    pub fn push_body(&mut self, kind: Sent, body: &Value) {
        match kind {
            Sent::Prompt => {
                let text = body["text"].as_str().unwrap_or_default();
                self.user(None, Some(ContentBlock::text(text)));
            }
            Sent::Answer => {
                let content: Vec<ContentBlock> =
                    serde_json::from_value(body["content"].clone()).unwrap_or_default();
                if !content.is_empty() {
                    self.assistant(content);
                }
            }
            Sent::ToolResult => {
                let id = body["tool_use_id"].as_str().unwrap_or_default();
                let text = body["text"].as_str().unwrap_or_default();
                let is_error = body["is_error"].as_bool().unwrap_or(false);
                self.user(Some(ContentBlock::tool_result(id, text, is_error)), None);
            }
        }
    }

    fn assistant(&mut self, mut content: Vec<ContentBlock>) {
        match &mut self.open {
            Open::Assistant(blocks) => blocks.append(&mut content),
            _ => {
                self.close();
                self.open = Open::Assistant(content);
            }
        }
    }

    fn user(&mut self, result: Option<ContentBlock>, text: Option<ContentBlock>) {
        if !matches!(self.open, Open::User { .. }) {
            self.close();
            self.open = Open::User {
                results: Vec::new(),
                texts: Vec::new(),
            };
        }
        if let Open::User { results, texts } = &mut self.open {
            results.extend(result);
            texts.extend(text);
        }
    }

    /// Moves the open message to the closed ones.
    fn close(&mut self) {
        match std::mem::take(&mut self.open) {
            Open::Nothing => {}
            Open::Assistant(content) => {
                self.calls = content
                    .iter()
                    .filter_map(|b| match b {
                        ContentBlock::ToolUse(t) => Some(t.id.clone()),
                        _ => None,
                    })
                    .collect();
                self.closed.push(Message::assistant(content));
            }
            Open::User { results, texts } => {
                let message = self.render_user(results, texts);
                self.calls.clear();
                self.closed.push(message);
            }
        }
    }

    /// A user message: results first, in the order of the calls they
    /// answer (a call with none gets [`INTERRUPTED`]), then text.
    fn render_user(&self, results: Vec<ContentBlock>, texts: Vec<ContentBlock>) -> Message {
        let mut content = Vec::with_capacity(results.len() + texts.len());
        let id_of = |b: &ContentBlock| match b {
            ContentBlock::ToolResult(r) => r.tool_use_id.clone(),
            _ => String::new(),
        };
        for call in &self.calls {
            match results.iter().find(|r| id_of(r) == *call) {
                Some(found) => content.push(found.clone()),
                None => content.push(ContentBlock::tool_result(call, INTERRUPTED, true)),
            }
        }
        for r in results {
            if !self.calls.contains(&id_of(&r)) {
                content.push(r);
            }
        }
        content.extend(texts);
        Message {
            role: Role::User,
            content,
        }
    }

    /// The messages closed so far.
    pub fn closed(&self) -> &[Message] {
        &self.closed
    }

    /// The open message, rendered (a call still unanswered at the end of
    /// an assistant message gets [`INTERRUPTED`] in a user message after it).
    pub fn tail(&self) -> Vec<Message> {
        match &self.open {
            Open::Nothing => Vec::new(),
            Open::User { results, texts } => vec![self.render_user(results.clone(), texts.clone())],
            Open::Assistant(content) => {
                let mut probe = self.clone();
                probe.close();
                let mut out = vec![Message::assistant(content.clone())];
                if !probe.calls.is_empty() {
                    out.push(probe.render_user(Vec::new(), Vec::new()));
                }
                out
            }
        }
    }

    /// Every message, for a request.
    pub fn messages(&self) -> Vec<Message> {
        let mut all = self.closed.clone();
        all.extend(self.tail());
        all
    }
}

/// Marks the last block of the last message as the conversation's cache
/// breakpoint (`on`), or takes the mark off again.
pub fn mark_breakpoint(messages: &mut [Message], on: bool) {
    let Some(block) = messages.last_mut().and_then(|m| m.content.last_mut()) else {
        return;
    };
    let mark = on.then(CacheControl::ephemeral);
    match block {
        ContentBlock::Text(b) => b.cache_control = mark,
        ContentBlock::ToolResult(b) => b.cache_control = mark,
        ContentBlock::ToolUse(b) => b.cache_control = mark,
        _ => {}
    }
}

impl Conversation {
    /// The conversation of `history` from its last compaction on (from
    /// the beginning when there is none): the summary, the last messages
    /// before it that it kept verbatim (`keep_messages`), what came after.
    pub fn since_compaction(history: &[ChunkItem]) -> Conversation {
        let Some(at) = history
            .iter()
            .rposition(|c| c.is_on("compaction", PlacementType::Instance))
        else {
            let mut conversation = Conversation::default();
            for item in history {
                conversation.push(item);
            }
            return conversation;
        };
        let summary = history[at].body_value();
        let keep = summary["keep_messages"].as_u64().unwrap_or(0) as usize;
        let kept = match keep {
            0 => Vec::new(),
            n => {
                let before = Conversation::since_compaction(&history[..at]).messages();
                before[before.len().saturating_sub(n)..].to_vec()
            }
        };
        let mut conversation = Conversation::after_summary(&summary, kept);
        for item in &history[at + 1..] {
            conversation.push(item);
        }
        conversation
    }

    /// A conversation that starts from a compaction's summary, then the
    /// messages it kept verbatim (the first an assistant message).
    pub fn after_summary(summary: &Value, kept: Vec<Message>) -> Conversation {
        let mut conversation = Conversation::default();
        conversation.push_body(Sent::Prompt, summary);
        for message in kept {
            match message.role {
                Role::Assistant => conversation.assistant(message.content),
                Role::User => {
                    for block in message.content {
                        match block {
                            ContentBlock::ToolResult(_) => conversation.user(Some(block), None),
                            other => conversation.user(None, Some(other)),
                        }
                    }
                }
            }
        }
        conversation
    }
}

/// The request of a session read from the substrate: the prefix of its
/// context event, and its chunks since the last compaction, in order.
pub fn build(prefix: &Prefix, history: &[ChunkItem]) -> MessagesRequest {
    let conversation = Conversation::since_compaction(history);
    let mut request = prefix.request();
    request.messages = conversation.messages();
    mark_breakpoint(&mut request.messages, true);
    request
}
