//! Hooks: configured commands run on `pre-tool`, `post-tool`,
//! `user-prompt`, `stop`, `subagent-stop`, `pre-compact` and
//! `notification`, each a run of
//! the contained `hook` program — recorded as a process like everything
//! else — given the event as JSON on stdin. Exit 0 goes on (a `pre-tool`
//! hook may print JSON that allows, denies or rewrites the call); exit 2
//! blocks, and its stderr goes to the model; any other end is reported and
//! does not block. A hook an Agent SDK program registered is a callback
//! its host runs: a `hook-callback` on the session with Claude Code's hook
//! input, answered by a `hook-answer` with Claude Code's hook output.

use super::outcome::{Outcome, outcome_of};
use crate::catalog::ProgramTool;
use crate::config::HookConfig;
use crate::contract::{Entry, HookCallback, HookOutput};
use crate::names::ToolNames;
use crate::permissions::{Call, Rule};
use crate::run::inbox::{Inbox, Reply};
use crate::run::writer::{Notifier, SessionWriter};
use model::ToolUseBlock;
use protocol::{ChunkDecl, Client, Declaration, NewPlacement, RunArgs};
use serde_json::{Value, json};
use std::path::PathBuf;

/// What a `pre-tool` hook decided of a call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Hooked {
    /// It approves: no need to ask.
    Allow,
    /// It wants the person asked.
    Ask,
}

/// What the hooks of an event said.
#[derive(Debug, Default)]
pub(crate) struct Verdict {
    /// A hook blocked (exit 2): what it said.
    pub blocked: Option<String>,
    /// A pre-tool hook decided: `allow`, `ask` or `deny` (with its reason).
    pub decision: Option<(String, String)>,
    /// A pre-tool hook rewrote the input.
    pub input: Option<Value>,
    /// A post-tool hook replaced (or redacted) the result the model reads.
    pub output: Option<Value>,
    /// What exit-0 hooks printed (post-tool: shown to the model).
    pub said: Vec<String>,
    /// A callback said the run is not to go on (`continue: false`).
    pub halt: Option<String>,
}

/// The run's hooks and what running one takes.
pub(crate) struct Hooks {
    client: Client,
    notifier: Notifier,
    session: String,
    me: String,
    root: PathBuf,
    hooks: Vec<HookConfig>,
    /// Where a callback's answer comes.
    inbox: Inbox,
    /// The permission mode and the tool names (Claude Code's hook input).
    mode: &'static str,
    names: ToolNames,
}

impl Hooks {
    /// The hooks of a run writing through `writer`.
    pub fn new(
        client: Client,
        writer: &SessionWriter,
        root: PathBuf,
        config: &crate::config::AgentConfig,
        inbox: Inbox,
    ) -> Hooks {
        Hooks {
            client,
            notifier: writer.notifier(),
            session: writer.session().to_owned(),
            me: writer.me().to_owned(),
            root,
            hooks: config.hooks.clone(),
            inbox,
            mode: config.permission_mode.as_str(),
            names: config.tool_names,
        }
    }

    /// The permission mode hooks are told from now on (a plan approved).
    pub fn set_mode(&mut self, mode: crate::config::PermissionMode) {
        self.mode = mode.as_str();
    }

    /// Whether any hook is configured for `event`.
    pub fn any(&self, event: &str) -> bool {
        self.hooks.iter().any(|h| h.event == event)
    }

    /// The hooks for `event` that match `call` (every one, for events
    /// that are not about a call).
    fn matching(&self, event: &str, call: Option<&Call<'_>>) -> Vec<HookConfig> {
        self.hooks
            .iter()
            .filter(|h| h.event == event)
            .filter(|h| match (&h.matcher, call) {
                (None, _) | (_, None) => true,
                (Some(m), _) if m == "*" || m.is_empty() => true,
                // Claude Code's `Write|Edit`: names, either naming
                (Some(m), Some(call)) if m.contains('|') => m
                    .split('|')
                    .any(|name| crate::names::program_of(name.trim()) == call.program),
                (Some(m), Some(call)) => Rule::parse(m).is_ok_and(|r| r.matches(call)),
            })
            .cloned()
            .collect()
    }

    /// The `notification` hooks (Claude Code's `Notification`): the run
    /// waits for a person (`permission_prompt`, `idle_prompt`) or a
    /// background run ended (`agent_ended`, with its `status`). What they
    /// say changes nothing.
    pub async fn notify(&self, kind: &str, message: &str, status: &str) {
        if !self.any("notification") {
            return;
        }
        let payload = json!({
            "hook_event_name": "Notification",
            "session_id": self.session,
            "message": message,
            "notification_type": kind,
            "title": "hermitcrab",
            "status": status,
        });
        let _ = self.run("notification", None, payload).await;
    }

    /// Runs the hooks of `event` in order, each given `payload`.
    pub async fn run(&self, event: &str, call: Option<&Call<'_>>, payload: Value) -> Verdict {
        let mut verdict = Verdict::default();
        for hook in self.matching(event, call) {
            if hook.callback.is_some() {
                if self.callback(event, &hook, &payload, &mut verdict).await {
                    return verdict;
                }
                continue;
            }
            let mut event_json = payload.clone();
            event_json["event"] = json!(event);
            event_json["session"] = json!(self.session);
            event_json["process"] = json!(self.me);
            event_json["project_root"] = json!(self.root.to_string_lossy());
            if let Some(rewritten) = &verdict.input {
                event_json["tool"]["input"] = rewritten.clone();
            }
            let data = match self.run_one(&hook, event_json).await {
                Ok(data) => data,
                Err(why) => {
                    let why = format!("the {event} hook `{}` did not run: {why}", hook.command);
                    if failed(&self.notifier, event, &hook, why, &mut verdict) {
                        return verdict;
                    }
                    continue;
                }
            };
            if self.judge(event, &hook, &data, &mut verdict) {
                return verdict;
            }
        }
        verdict
    }

    /// What one hook's end means; answers whether it blocked.
    fn judge(&self, event: &str, hook: &HookConfig, data: &Value, verdict: &mut Verdict) -> bool {
        let stderr = data["stderr"]
            .as_str()
            .unwrap_or_default()
            .trim()
            .to_owned();
        match (
            data["exit_code"].as_i64(),
            data["timed_out"].as_bool().unwrap_or(false),
        ) {
            (Some(0), _) => absorb(verdict, data["stdout"].as_str().unwrap_or_default()),
            (Some(2), _) => {
                verdict.blocked = Some(if stderr.is_empty() {
                    format!("blocked by the {event} hook `{}`", hook.command)
                } else {
                    stderr
                });
                return true;
            }
            (_, true) => {
                let why = format!("the {event} hook `{}` timed out", hook.command);
                return failed(&self.notifier, event, hook, why, verdict);
            }
            (code, _) => {
                let why = format!(
                    "the {event} hook `{}` failed ({}){}",
                    hook.command,
                    code.map_or("killed".to_owned(), |c| format!("exit {c}")),
                    if stderr.is_empty() {
                        String::new()
                    } else {
                        format!(": {stderr}")
                    }
                );
                return failed(&self.notifier, event, hook, why, verdict);
            }
        }
        false
    }

    /// One hook as a run of the `hook` program; answers its output's data.
    async fn run_one(&self, hook: &HookConfig, event: Value) -> Result<Value, String> {
        let args = RunArgs {
            chunks: vec![
                ChunkDecl::generated()
                    .body(json!({"command": hook.command, "event": event, "timeout_ms": hook.timeout_ms}))
                    .on(NewPlacement::instance("input/hook")),
            ],
            ..RunArgs::default()
        };
        let process = self
            .client
            .run("hook", args)
            .await
            .map_err(|e| e.to_string())?;
        let done = self
            .client
            .await_processes(&[process.as_str()])
            .await
            .map_err(|e| e.to_string())?;
        let result = done
            .get(&process)
            .ok_or("the engine did not report the hook's end")?;
        let outcome = outcome_of(Some(process), result);
        if outcome.is_error {
            Err(outcome.text)
        } else {
            Ok(outcome.data)
        }
    }
}

/// A hook that failed (`why`): a block when it blocks on failure (what
/// it guards does not happen, and the model is told why), else said and
/// the run goes on. Answers whether it blocked.
fn failed(
    notifier: &Notifier,
    event: &str,
    hook: &HookConfig,
    why: String,
    verdict: &mut Verdict,
) -> bool {
    if hook.blocks_on_failure(event) {
        verdict.blocked = Some(format!("{why}; it blocks on failure"));
        return true;
    }
    notifier.status(format!("{why}; going on"));
    false
}

/// A hook's replacement output as the model reads it: text as given,
/// content blocks' text joined, anything else as JSON.
fn output_text(output: &Value) -> String {
    match output {
        Value::String(text) => text.clone(),
        Value::Array(blocks) if blocks.iter().all(|b| b["text"].is_string()) => blocks
            .iter()
            .filter_map(|b| b["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        other => other.to_string(),
    }
}

/// What an exit-0 hook printed: a JSON decision, or text.
fn absorb(verdict: &mut Verdict, stdout: &str) {
    let trimmed = stdout.trim();
    if trimmed.is_empty() {
        return;
    }
    match serde_json::from_str::<Value>(trimmed) {
        // Claude Code's hook output, printed by a command hook
        Ok(said) if said.get("hookSpecificOutput").is_some() => {
            if let Some(read) = HookOutput::read(&said) {
                verdict.input = read.updated_input.or(verdict.input.take());
                verdict.output = read.updated_output.or(verdict.output.take());
                if let Some(decision) = read.permission {
                    verdict.decision = Some(decision);
                }
                verdict.said.extend(read.context);
            }
        }
        Ok(Value::Object(said)) => {
            if let Some(decision) = said.get("decision").and_then(Value::as_str) {
                let reason = said
                    .get("reason")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                verdict.decision = Some((decision.to_owned(), reason.to_owned()));
            }
            if let Some(input) = said.get("input").filter(|i| i.is_object()) {
                verdict.input = Some(input.clone());
            }
            if let Some(text) = said.get("text").and_then(Value::as_str) {
                verdict.said.push(text.to_owned());
            }
            if let Some(output) = said.get("output").filter(|o| !o.is_null()) {
                verdict.output = Some(output.clone());
            }
        }
        _ => verdict.said.push(trimmed.to_owned()),
    }
}

impl Hooks {
    /// The `pre-tool` hooks of a call: the input (rewritten, when a hook
    /// rewrote it, and checked again) and a hook's decision; or the
    /// call's refusal.
    pub(super) async fn pre_tool(
        &self,
        call: &ToolUseBlock,
        input: Value,
        tool: &ProgramTool,
    ) -> Result<(Value, Option<Hooked>), Outcome> {
        if !self.any("pre-tool") {
            return Ok((input, None));
        }
        let probe = Call {
            program: &call.name,
            input: &input,
            root: &self.root,
            read_only: tool.body.read_only,
        };
        let payload =
            json!({"tool": {"program": call.name, "input": input, "tool_use_id": call.id}});
        let verdict = self.run("pre-tool", Some(&probe), payload).await;
        if let Some(said) = verdict.blocked {
            return Err(Outcome::denied(format!(
                "blocked by a pre-tool hook: {said}"
            )));
        }
        let input = match verdict.input {
            Some(rewritten) => {
                protocol::schema::check(&tool.def.schema, &rewritten).map_err(|why| {
                    Outcome::error(format!(
                        "a pre-tool hook rewrote the input into one that is not valid: {why}"
                    ))
                })?;
                rewritten
            }
            None => input,
        };
        match verdict.decision {
            Some((d, reason)) if d == "deny" => Err(Outcome::denied(if reason.is_empty() {
                "denied by a pre-tool hook".to_owned()
            } else {
                format!("denied by a pre-tool hook: {reason}")
            })),
            Some((d, _)) if d == "allow" => Ok((input, Some(Hooked::Allow))),
            Some((d, _)) if d == "ask" => Ok((input, Some(Hooked::Ask))),
            _ => Ok((input, None)),
        }
    }

    /// The `post-tool` hooks of each finished call: what they say is added
    /// to the result the model reads.
    pub(super) async fn post_tool(
        &self,
        calls: &[ToolUseBlock],
        outcomes: &mut [Outcome],
        read_only: impl Fn(&str) -> bool,
    ) {
        if !self.any("post-tool") {
            return;
        }
        for (call, o) in calls.iter().zip(outcomes.iter_mut()) {
            if o.process.is_none() {
                continue; // never ran
            }
            let input = call.input_value();
            let probe = Call {
                program: &call.name,
                input: &input,
                root: &self.root,
                read_only: read_only(&call.name),
            };
            let payload = json!({
                "tool": {"program": call.name, "input": input, "tool_use_id": call.id},
                "result": {"text": o.text, "is_error": o.is_error, "data": o.data},
            });
            let verdict = self.run("post-tool", Some(&probe), payload).await;
            if let Some(output) = &verdict.output {
                // what the model reads instead; the tool's own output
                // stays on its process only
                o.text = output_text(output);
                o.data = json!({"replaced_by": "post-tool hook"});
            }
            for said in verdict.blocked.iter().chain(&verdict.said) {
                o.text.push_str(&format!("\n\n[post-tool hook] {said}"));
            }
        }
    }
}

impl Hooks {
    /// Asks the host to run callback `id` for `event` (a `hook-callback`
    /// on the session) and reads its answer into `verdict`; answers
    /// whether it blocked. No answer (the run interrupted, the callback
    /// failed, garbage) decides nothing, with a status line.
    async fn callback(
        &self,
        event: &str,
        hook: &HookConfig,
        payload: &Value,
        verdict: &mut Verdict,
    ) -> bool {
        let asked = HookCallback {
            callback_id: hook.callback.clone().unwrap_or_default(),
            event: crate::config::claude_hook_event(event).to_owned(),
            input: self.claude_input(event, payload, verdict.input.as_ref()),
            tool_use_id: payload["tool"]["tool_use_id"].as_str().map(str::to_owned),
            process: self.me.clone(),
        };
        let entry = Entry::of(&asked);
        let chunk = ChunkDecl::generated()
            .body(entry.body)
            .on(NewPlacement::instance(&self.session))
            .on(NewPlacement::instance(entry.kind));
        let request = match self.client.commit(Declaration::of(vec![chunk])).await {
            Ok(commit) => commit.created.first().cloned(),
            Err(e) => {
                self.notifier.status(format!(
                    "the {} hook callback was not asked: {e}",
                    asked.event
                ));
                return false;
            }
        };
        let Some(request) = request else {
            return false;
        };
        let output = match self.inbox.answer_to(&request).await {
            Some(Reply::Hook(answer)) if answer.error.is_none() => answer.output,
            Some(Reply::Hook(answer)) => {
                let why = answer.error.unwrap_or_default();
                let why = format!("the {} hook callback failed: {why}", asked.event);
                return failed(&self.notifier, event, hook, why, verdict);
            }
            _ => return false,
        };
        let Some(read) = HookOutput::read(&output) else {
            let why = format!(
                "the {} hook callback answered something that is not hook output",
                asked.event
            );
            return failed(&self.notifier, event, hook, why, verdict);
        };
        if let Some(input) = read.updated_input {
            verdict.input = Some(input);
        }
        if let Some(output) = read.updated_output {
            verdict.output = Some(output);
        }
        if let Some(decision) = read.permission {
            verdict.decision = Some(decision);
        }
        verdict.said.extend(read.context);
        if let Some(why) = read.stop {
            verdict.halt = Some(why.clone());
            verdict.blocked = Some(why);
            return true;
        }
        if let Some(why) = read.block {
            verdict.blocked = Some(if why.is_empty() {
                format!("blocked by the {} hook", asked.event)
            } else {
                why
            });
            return true;
        }
        false
    }

    /// Claude Code's hook input for `event`, from the agent's `payload`
    /// (`input`: a call's input as an earlier hook rewrote it).
    fn claude_input(&self, event: &str, payload: &Value, input: Option<&Value>) -> Value {
        let mut out = json!({
            "hook_event_name": crate::config::claude_hook_event(event),
            "session_id": self.session,
            "transcript_path": "",
            "cwd": self.root.to_string_lossy(),
            "permission_mode": self.mode,
        });
        let tool = &payload["tool"];
        if let Some(program) = tool["program"].as_str() {
            out["tool_name"] = json!(self.names.show(program));
            out["tool_input"] = input.cloned().unwrap_or_else(|| tool["input"].clone());
            out["tool_use_id"] = tool["tool_use_id"].clone();
        }
        match event {
            "post-tool" => {
                let result = &payload["result"];
                out["tool_response"] = json!({
                    "output": result["text"], "is_error": result["is_error"], "data": result["data"],
                });
            }
            "user-prompt" => out["prompt"] = payload["prompt"].clone(),
            "stop" | "subagent-stop" => out["stop_hook_active"] = json!(false),
            "pre-compact" => {
                out["trigger"] = payload["trigger"].clone();
                out["custom_instructions"] = Value::Null;
            }
            "notification" => {
                for key in ["message", "notification_type", "title"] {
                    out[key] = payload[key].clone();
                }
            }
            _ => {}
        }
        out
    }
}
