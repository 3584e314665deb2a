//! One run of the agent, in parts with one owner each:
//!
//! * [`SessionWriter`] — the only code that commits on the session (and on
//!   the run's process), in order, moving `as_of`;
//! * [`Request`] — the request's bytes, the same code for a live call and
//!   a rebuild;
//! * [`Gates`] — the totals, the limits, the compaction threshold;
//! * [`Toolbox`] — calls, own tools, hooks, sub-agents, permissions;
//! * [`Inbox`] — the host's interrupts and answers.
//!
//! The run itself only joins them: the cycle (`cycle.rs`), compaction
//! (`compact.rs`), its start (`start.rs`) and its end.

mod compact;
mod crab;
mod cycle;
mod fallback;
mod files;
pub(crate) mod gates;
pub(crate) mod inbox;
mod replay;
mod restore;
pub(crate) mod side;
mod start;
pub(crate) mod stop;
pub(crate) mod writer;

pub use stop::Stop;

use crate::catalog;
use crate::config::AgentConfig;
use crate::contract::{ContextBody, Entry, Prompt, RunStop};
use crate::request::{Prefix, Request};
use crate::toolbox::{Outcome, Toolbox};
use gates::Gates;
use inbox::Inbox;
use model::ToolUseBlock;
use protocol::Client;
use protocol::program::{Output, ProgramError};
use std::sync::Arc;
use writer::SessionWriter;

/// What the knowledge layer is built from: the latest context event's
/// body and the scopes it pins, in order.
#[derive(Clone, Debug)]
struct Knowledge {
    context: ContextBody,
    pins: Vec<String>,
    /// The pins the run was started with by the person or its parent
    /// (culture among them): never unpinned by the model.
    fixed: Vec<String>,
    /// A hermitcrab's shell, as its context event read it.
    shell: Option<crate::blocks::crab::Crab>,
}

/// A run in progress.
pub struct Run {
    client: Client,
    config: Arc<AgentConfig>,
    writer: SessionWriter,
    request: Request,
    gates: Gates,
    toolbox: Toolbox,
    inbox: Inbox,
    knowledge: Knowledge,
    provider: Result<Arc<model::Provider>, String>,
    /// The text of the session's last prompt (kept verbatim by a compaction).
    prompt: Option<String>,
    /// The text of the run's last answer.
    last_answer: String,
    /// Whether the run was claimed again after its engine was lost (it
    /// goes on from the record: the prompt's hooks ran already).
    resumed: bool,
    /// Whether, so claimed, its last answer was recorded already: only
    /// its end is left to record.
    ended: bool,
    /// A hermitcrab's history, being read while the model answers.
    history_read: Option<crab::HistoryRead>,
    /// How the last model call went in time.
    timing: Option<crate::contract::CallTiming>,
}

impl Run {
    /// Writes how the run ended on its process, and answers the exit.
    pub async fn finish(mut self, stop: Stop) -> Result<(), ProgramError> {
        let mut totals = self.gates.final_totals(&stop);
        totals.structured_output = self.toolbox.structured_output().cloned();
        // Its answer, as any program's: what a parent agent reads as the
        // sub-agent's result, and what a host shows.
        let text = match (&stop, stop.message()) {
            (Stop::Planned(plan), _) => plan.clone(),
            (Stop::EndTurn, _) | (_, None) => self.last_answer.clone(),
            (_, Some(message)) if self.last_answer.is_empty() => message,
            (_, Some(message)) => format!("{}\n\n[{message}]", self.last_answer),
        };
        let output = Output {
            text,
            data: serde_json::to_value(self.gates.outcome(&stop)).unwrap_or_default(),
            is_error: stop.reason() != RunStop::EndTurn,
        };
        if self.config.background && self.config.depth <= 1 {
            let status = match stop.reason() {
                RunStop::EndTurn => "done",
                RunStop::Interrupted => "interrupted",
                RunStop::MaxTurns | RunStop::MaxBudget => "stopped",
                _ => "failed",
            };
            let said = format!("a background agent is {status}: {}", self.writer.session());
            let hooks = self.toolbox.hooks();
            hooks.notify("agent_ended", &said, status).await;
        }
        self.writer.finish(&totals, output, stop.exit_code()).await;
        match stop.exit_code() {
            0 => Ok(()),
            code => Err(ProgramError::Exit(code, stop.message().unwrap_or_default())),
        }
    }

    /// Changes the knowledge layer: a new context event pinning `add`
    /// after the others and without `remove`, the programs, pins and
    /// memory read anew as of one commit, and the request's prefix rebuilt
    /// from it.
    async fn repin(
        &mut self,
        add: &[String],
        remove: &[String],
    ) -> Result<(), protocol::ClientError> {
        let mut pins = self.knowledge.pins.clone();
        let fixed = &self.knowledge.fixed;
        pins.retain(|p| !remove.contains(p) || fixed.contains(p));
        for id in add {
            if !pins.contains(id) {
                pins.push(id.clone());
            }
        }
        if pins == self.knowledge.pins {
            return Ok(());
        }
        let context = self.knowledge.context.clone();
        self.new_context(context, pins).await
    }

    /// Writes a new context event — `context` pinning `pins`, the programs
    /// and memory read anew as of one commit — and rebuilds the request's
    /// prefix from it.
    async fn new_context(
        &mut self,
        mut context: ContextBody,
        pins: Vec<String>,
    ) -> Result<(), protocol::ClientError> {
        let names = context.tools.clone();
        let (at, tools) = catalog::program_tools(&self.client, None, Some(&names), &[]).await?;
        context.as_of = at;
        let scopes: Vec<&str> = context.memory.iter().map(String::as_str).collect();
        let (_, memory, memory_at) = catalog::read_memory_now(&self.client, &scopes).await;
        context.memory_at = memory_at;
        let mut known = self
            .writer
            .write_context(&context, &pins, &[], memory)
            .await?;
        known.shell = self.knowledge.shell.clone();
        let defs: Vec<_> = tools.iter().map(|t| t.def.clone()).collect();
        self.request
            .set_prefix(Prefix::new(&self.config, &context, &known, &defs));
        self.toolbox.set_tools(tools);
        self.toolbox.set_pins(pins.clone());
        self.knowledge = Knowledge {
            context,
            pins,
            fixed: std::mem::take(&mut self.knowledge.fixed),
            shell: known.shell,
        };
        Ok(())
    }

    /// Pins the scopes `scope` calls read by id (and unpins those they
    /// ask to), and says so in their results.
    async fn pin_read_scopes(&mut self, outcomes: &mut [Outcome]) {
        for outcome in outcomes.iter_mut() {
            let (ids, gone): (Vec<_>, Vec<_>) = std::mem::take(&mut outcome.pin)
                .into_vec()
                .into_iter()
                .partition(|(_, add)| *add);
            let ids: Vec<String> = ids.into_iter().map(|(id, _)| id).collect();
            let gone: Vec<String> = gone.into_iter().map(|(id, _)| id).collect();
            if ids.is_empty() && gone.is_empty() {
                continue;
            }
            let before = self.knowledge.pins.clone();
            let (kept, gone): (Vec<String>, Vec<String>) = gone
                .into_iter()
                .partition(|g| self.knowledge.fixed.contains(g));
            if !kept.is_empty() {
                outcome.text.push_str(&format!(
                    "\n({} {} pinned by whoever started this run and cannot be unpinned)",
                    kept.join(", "),
                    if kept.len() == 1 { "is" } else { "are" }
                ));
                if ids.is_empty() && gone.is_empty() {
                    continue;
                }
            }
            match self.repin(&ids, &gone).await {
                Ok(()) if !ids.is_empty() => outcome
                    .text
                    .push_str("\n(added to your knowledge from the next turn on)"),
                Ok(()) => {
                    let missing: Vec<&String> =
                        gone.iter().filter(|g| !before.contains(g)).collect();
                    if !missing.is_empty() {
                        let names: Vec<&str> = missing.iter().map(|s| s.as_str()).collect();
                        outcome.text.push_str(&format!(
                            "\n({} {} not pinned)",
                            names.join(", "),
                            if names.len() == 1 { "was" } else { "were" }
                        ));
                    }
                    outcome
                        .text
                        .push_str("\n(dropped from your knowledge from the next turn on)");
                }
                Err(e) => outcome
                    .text
                    .push_str(&format!("\n(your knowledge is unchanged: {e})")),
            }
        }
    }

    /// Records the results of `calls`: mapped into the request, committed
    /// while the next model call is made (after any commit still in
    /// flight; settled before its answer, which records the commit its
    /// request was built from).
    fn record_results(&mut self, calls: &[ToolUseBlock], outcomes: Vec<Outcome>) {
        if calls.is_empty() {
            return;
        }
        let results = self.toolbox.results(calls, outcomes, &mut self.gates);
        let entries: Vec<Entry> = results.iter().map(Entry::of).collect();
        for entry in &entries {
            self.request.push(&entry.item());
        }
        self.writer.commit_in_background(entries, true);
    }

    /// Commits `entry` on the session (with the run's totals, when
    /// given) and maps it into the request.
    async fn record(
        &mut self,
        entry: Entry,
        with_totals: bool,
    ) -> Result<substrate::Commit, protocol::ClientError> {
        let totals = with_totals.then(|| self.gates.totals());
        let commit = self
            .writer
            .commit(vec![entry.clone()], totals.as_ref())
            .await?;
        self.request.push(&entry.item());
        Ok(commit)
    }

    /// A prompt of the run's own making (a `stop` hook's), recorded.
    async fn record_prompt(&mut self, prompt: Prompt) -> bool {
        self.record(Entry::of(&prompt), false).await.is_ok()
    }
}
