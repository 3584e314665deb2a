//! Tools that start while the reply still streams (the blueprint's
//! streaming executor; Claude Code's `StreamingToolExecutor`): a call
//! whose input is complete (its block stopped) starts at once when it
//! could only ever run quietly — a read-only, concurrency-safe program,
//! its input valid, no `pre-tool` hook configured, the permissions
//! allowing it without asking — and every call of the reply before it
//! started too (so the early ones are the reply's first batch), at most
//! [`MAX_PARALLEL`](super::MAX_PARALLEL).
//!
//! Nothing is recorded early: the answer is committed first, then the
//! `tool-call` chunks, then the results in the model's order, exactly as
//! when nothing started early — so `hc trace --request N` rebuilds the
//! same request. A reply that breaks off, is retried, falls back, is
//! interrupted, or ends without running its calls cancels what started.

use super::{MAX_PARALLEL, Prepared, SUB_AGENT, Toolbox};
use crate::catalog::{ProgramTool, is_own_tool};
use model::ToolUseBlock;
use serde_json::Value;
use tokio::task::JoinHandle;

/// A run's start: its process id, or why it could not start.
type Start = JoinHandle<Result<String, String>>;

/// The calls of the reply streaming now that started early.
#[derive(Default)]
pub(super) struct Early {
    /// Whether the next complete call may still start (every call of the
    /// reply before it did).
    open: bool,
    runs: Vec<Started>,
}

/// One call started early.
struct Started {
    /// The call as the model made it (its program's name).
    call: ToolUseBlock,
    tool: Box<ProgramTool>,
    /// The input the run got (filled, as `prepare` fills it).
    input: Value,
    start: Start,
}

impl Toolbox {
    /// A new reply begins to stream: its calls may start early.
    pub fn open_early(&mut self) {
        self.early.open = self.config.early_tools != Some(false);
    }

    /// The reply streamed whole: no more calls start early.
    pub fn close_early(&mut self) {
        self.early.open = false;
    }

    /// A call of the streaming reply is complete: started now if it can
    /// only ever run quietly, else no later call of the reply starts
    /// early. Nothing is committed, nobody asked; it never waits.
    pub fn offer_early(&mut self, call: &ToolUseBlock) {
        if !self.early.open {
            return;
        }
        let mut call = call.clone();
        if self.config.tool_names == crate::names::ToolNames::Claude {
            call.name = crate::names::program_of(&call.name).to_owned();
        }
        let quiet = match self.early.runs.len() < MAX_PARALLEL {
            true => self.quietly(&call),
            false => None,
        };
        let Some((tool, input)) = quiet else {
            self.early.open = false;
            return;
        };
        let args = self.run_args(&tool, &input);
        let client = self.client.clone();
        let name = tool.def.name.clone();
        let start = tokio::spawn(async move {
            client
                .run(&name, args)
                .await
                .map_err(|e| format!("the `{name}` program could not be started: {e}"))
        });
        self.early.runs.push(Started {
            call,
            tool: Box::new(tool),
            input,
            start,
        });
    }

    /// The program and the input `call` runs with when it could only ever
    /// run quietly (as `prepare` would run it, with no one asked).
    fn quietly(&mut self, call: &ToolUseBlock) -> Option<(ProgramTool, Value)> {
        // (an MCP tool's read-only hint is the server's word, not a
        // guarantee: it waits for the whole reply)
        if answered_here(&call.name) || call.name.starts_with("mcp__") || self.hooks.any("pre-tool")
        {
            return None;
        }
        let tool = self.tool(&call.name)?.clone();
        if !(tool.body.read_only && tool.body.concurrency_safe) {
            return None;
        }
        let input = call.input_value();
        protocol::schema::check(&tool.def.schema, &input).ok()?;
        if self
            .derived
            .cannot_succeed(&self.root, &call.name, &input)
            .is_some()
            || !self.permit.allows_quietly(call, &input, &tool)
        {
            return None;
        }
        let input = self.finish_input(&call.name, input);
        Some((tool, input))
    }

    /// The run already started for `call`, when it started early with
    /// the input the reply ended with.
    pub(super) fn take_early(&mut self, call: &ToolUseBlock) -> Option<(Prepared, Start)> {
        let at = self.early.runs.iter().position(|r| {
            r.call.id == call.id && r.call.name == call.name && r.call.input == call.input
        })?;
        let run = self.early.runs.remove(at);
        let prepared = Prepared::Run {
            tool: run.tool,
            input: run.input,
        };
        Some((prepared, run.start))
    }

    /// Cancels every run started early and not taken (the reply broke
    /// off, was interrupted, or will not run its calls).
    pub async fn cancel_early(&mut self) {
        self.early.open = false;
        let runs = std::mem::take(&mut self.early.runs);
        for run in runs {
            self.permit.forget(&run.call.id);
            cancel(&self.client, run.start).await;
        }
    }
}

/// Cancels the run `start` started, once it has.
pub(super) async fn cancel(client: &protocol::Client, start: Start) {
    if let Ok(Ok(process)) = start.await {
        let _ = client.cancel(&process).await;
    }
}

/// Whether the agent answers a call of `name` itself (or runs it its own
/// way): never started early.
fn answered_here(name: &str) -> bool {
    is_own_tool(name)
        || super::blocks::TOOLS.contains(&name)
        || super::resources::RESOURCE_TOOLS.contains(&name)
        || [
            "memory",
            "skill",
            SUB_AGENT,
            super::message::TOOL,
            super::structured::TOOL,
            super::search::TOOL,
            super::plan::TOOL,
        ]
        .contains(&name)
}
