//! Hooks: configured commands run on `pre-tool`, `post-tool`,
//! `user-prompt` and `stop`, each a run of the contained `hook` program —
//! recorded as a process like everything else — given the event as JSON
//! on stdin. Exit 0 goes on (a `pre-tool` hook may print JSON that allows,
//! denies or rewrites the call); exit 2 blocks, and its stderr goes to the
//! model; any other end is reported and does not block.

use super::outcome::{Outcome, outcome_of};
use crate::catalog::ProgramTool;
use crate::config::HookConfig;
use crate::permissions::{Call, Rule};
use crate::run::writer::{Notifier, SessionWriter};
use model::ToolUseBlock;
use protocol::{ChunkDecl, Client, NewPlacement, RunArgs};
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
    /// What exit-0 hooks printed (post-tool: shown to the model).
    pub said: Vec<String>,
}

/// The run's hooks and what running one takes.
pub(crate) struct Hooks {
    client: Client,
    notifier: Notifier,
    session: String,
    me: String,
    root: PathBuf,
    hooks: Vec<HookConfig>,
}

impl Hooks {
    /// The hooks of a run writing through `writer`.
    pub fn new(
        client: Client,
        writer: &SessionWriter,
        root: PathBuf,
        hooks: Vec<HookConfig>,
    ) -> Hooks {
        Hooks {
            client,
            notifier: writer.notifier(),
            session: writer.session().to_owned(),
            me: writer.me().to_owned(),
            root,
            hooks,
        }
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
                (Some(m), _) if m == "*" => true,
                (Some(m), Some(call)) => Rule::parse(m).is_ok_and(|r| r.matches(call)),
            })
            .cloned()
            .collect()
    }

    /// Runs the hooks of `event` in order, each given `payload`.
    pub async fn run(&self, event: &str, call: Option<&Call<'_>>, payload: Value) -> Verdict {
        let mut verdict = Verdict::default();
        for hook in self.matching(event, call) {
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
                    self.notifier.status(format!(
                        "the {event} hook `{}` did not run: {why}",
                        hook.command
                    ));
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
            (_, true) => self.notifier.status(format!(
                "the {event} hook `{}` timed out; going on",
                hook.command
            )),
            (code, _) => self.notifier.status(format!(
                "the {event} hook `{}` failed ({}){}; going on",
                hook.command,
                code.map_or("killed".to_owned(), |c| format!("exit {c}")),
                if stderr.is_empty() {
                    String::new()
                } else {
                    format!(": {stderr}")
                }
            )),
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

/// What an exit-0 hook printed: a JSON decision, or text.
fn absorb(verdict: &mut Verdict, stdout: &str) {
    let trimmed = stdout.trim();
    if trimmed.is_empty() {
        return;
    }
    match serde_json::from_str::<Value>(trimmed) {
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
            for said in verdict.blocked.iter().chain(&verdict.said) {
                o.text.push_str(&format!("\n\n[post-tool hook] {said}"));
            }
        }
    }
}
