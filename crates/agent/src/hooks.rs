//! Hooks (blueprint 2.1, phases 3 and 6; 5.2): configured commands run on
//! `pre-tool`, `post-tool`, `user-prompt` and `stop`, each a run of the
//! contained `hook` program — recorded as a process like everything else —
//! given the event as JSON on stdin. Exit 0 goes on (a `pre-tool` hook may
//! print JSON that allows, denies or rewrites the call); exit 2 blocks, and
//! its stderr goes to the model; any other end is reported and does not
//! block.

use crate::config::HookConfig;
use crate::permissions::{Call, Rule};
use crate::run::Run;
use protocol::{ChunkDecl, NewPlacement, RunArgs};
use serde_json::{Value, json};

/// What the hooks of an event said.
#[derive(Debug, Default)]
pub(crate) struct Verdict {
    /// A hook blocked (exit 2): what it said.
    pub blocked: Option<String>,
    /// A pre-tool hook decided: `allow` or `deny` (with its reason).
    pub decision: Option<(String, String)>,
    /// A pre-tool hook rewrote the input.
    pub input: Option<Value>,
    /// What exit-0 hooks printed (post-tool: shown to the model).
    pub said: Vec<String>,
}

impl Run {
    /// The hooks for `event` that match `call` (every one, for events
    /// that are not about a call).
    fn hooks_for(&self, event: &str, call: Option<&Call<'_>>) -> Vec<HookConfig> {
        self.config
            .hooks
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
    pub(crate) async fn run_hooks(
        &mut self,
        event: &str,
        call: Option<&Call<'_>>,
        payload: Value,
    ) -> Verdict {
        let mut verdict = Verdict::default();
        for hook in self.hooks_for(event, call) {
            let mut event_json = payload.clone();
            event_json["event"] = json!(event);
            event_json["session"] = json!(self.session);
            event_json["process"] = json!(self.me);
            event_json["project_root"] = json!(self.root.to_string_lossy());
            if let Some(rewritten) = &verdict.input {
                event_json["tool"]["input"] = rewritten.clone();
            }
            let data = match self.run_hook(&hook, event_json).await {
                Ok(data) => data,
                Err(why) => {
                    self.status(&format!(
                        "the {event} hook `{}` did not run: {why}",
                        hook.command
                    ));
                    continue;
                }
            };
            let stderr = data["stderr"]
                .as_str()
                .unwrap_or_default()
                .trim()
                .to_owned();
            match (
                data["exit_code"].as_i64(),
                data["timed_out"].as_bool().unwrap_or(false),
            ) {
                (Some(0), _) => absorb(&mut verdict, data["stdout"].as_str().unwrap_or_default()),
                (Some(2), _) => {
                    let said = if stderr.is_empty() {
                        format!("blocked by the {event} hook `{}`", hook.command)
                    } else {
                        stderr
                    };
                    verdict.blocked = Some(said);
                    return verdict;
                }
                (_, true) => self.status(&format!(
                    "the {event} hook `{}` timed out; going on",
                    hook.command
                )),
                (code, _) => self.status(&format!(
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
        }
        verdict
    }

    /// One hook as a run of the `hook` program; answers its output's data.
    async fn run_hook(&self, hook: &HookConfig, event: Value) -> Result<Value, String> {
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
        let ids = [process.as_str()];
        let done = self
            .client
            .await_processes(&ids)
            .await
            .map_err(|e| e.to_string())?;
        let result = done
            .get(&process)
            .ok_or("the engine did not report the hook's end")?;
        let outcome = crate::calls::outcome_of(Some(process), result);
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
