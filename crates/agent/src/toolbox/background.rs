//! Sub-agents in the background (Claude Code's `run_in_background`): the
//! `agent` call answers at once with the child's process, and the run goes
//! on; when the child ends, its result comes to the model as a message — a
//! `prompt` from `agent` recorded on the session before the model call
//! that reads it, so every request still rebuilds exactly. A child dies
//! with its parent, so a run whose model would end its turn while children
//! still run waits for them first and reads their results. At most
//! `max_parallel_agents` sub-agents (default 8) run at once, foreground and
//! background together.

use super::outcome::{Outcome, outcome_of};
use crate::contract::{Prompt, PromptSource};
use crate::run::inbox::Inbox;
use protocol::Client;
use serde_json::{Value, json};

/// How many sub-agents run at once, unless the configuration says.
pub const MAX_PARALLEL_AGENTS: u32 = 8;

/// A child running in the background.
struct Child {
    process: String,
    /// Its task in a few words (`description`), or the start of its task.
    what: String,
}

/// The run's children in the background.
#[derive(Default)]
pub(crate) struct Background {
    running: Vec<Child>,
}

/// Whether an `agent` call asks to run in the background.
pub(crate) fn asked(input: &Value) -> bool {
    input["run_in_background"].as_bool() == Some(true)
}

impl Background {
    /// How many run.
    pub fn count(&self) -> usize {
        self.running.len()
    }

    /// Keeps `process`, started for `input`; the call's result now.
    pub fn started(&mut self, process: String, input: &Value) -> Outcome {
        let what = input["description"]
            .as_str()
            .filter(|d| !d.trim().is_empty())
            .or(input["text"].as_str())
            .unwrap_or_default()
            .chars()
            .take(80)
            .collect::<String>();
        let text = format!(
            "Started sub-agent {process} in the background. Its result will come as a message \
             when it ends; go on with other work meanwhile (do not wait for it)."
        );
        self.running.push(Child {
            process: process.clone(),
            what,
        });
        Outcome {
            text,
            data: json!({"process": process, "background": true}),
            ..Outcome::default()
        }
    }

    /// The results of the children that have ended — all of them, waited
    /// for, when `wait` (an interrupt cancels them, and answers what has
    /// ended) — as the prompts that bring them to the model, in the order
    /// they were started.
    pub async fn ended(&mut self, client: &Client, wait: bool, inbox: &Inbox) -> Vec<Prompt> {
        if self.running.is_empty() {
            return Vec::new();
        }
        let ids: Vec<&str> = self.running.iter().map(|c| c.process.as_str()).collect();
        if wait {
            tokio::select! {
                _ = client.await_processes(&ids) => {}
                () = inbox.wait_interrupt() => {
                    for id in &ids {
                        let _ = client.cancel(id).await;
                    }
                }
            }
        }
        let Ok(read) = client.scope(&ids, Default::default()).await else {
            return Vec::new();
        };
        let ended: Vec<String> = read
            .scopes
            .iter()
            .filter(|s| {
                protocol::process::ProcessBody::parse(&s.body_value())
                    .status
                    .ended()
            })
            .map(|s| s.id.clone())
            .collect();
        let mut out = Vec::new();
        let mut still = Vec::new();
        for child in std::mem::take(&mut self.running) {
            if !ended.contains(&child.process) {
                still.push(child);
                continue;
            }
            let Ok(result) = client
                .scope(&[child.process.as_str()], Default::default())
                .await
            else {
                still.push(child);
                continue;
            };
            let outcome = outcome_of(Some(child.process.clone()), &result);
            let how = if outcome.is_error { "failed" } else { "ended" };
            out.push(Prompt {
                text: format!(
                    "[the background sub-agent {} ({}) {how}; its result:]\n\n{}",
                    child.process, child.what, outcome.text
                ),
                from: Some(PromptSource::Agent),
                images: Vec::new(),
                message: None,
                uuid: None,
            });
        }
        self.running = still;
        out
    }
}
