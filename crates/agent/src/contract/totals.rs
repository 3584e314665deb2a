//! What an agent run writes on its own process — its totals as it goes,
//! and how it ended — and the `data` of its answer (what a parent agent
//! reads of a sub-agent).

use protocol::process::ProcessBody;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Tokens, summed: fresh input, output, cache writes, cache reads.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Tokens {
    /// Input after the last cache breakpoint.
    pub input_tokens: u64,
    /// Output.
    pub output_tokens: u64,
    /// Input written to the cache.
    pub cache_creation_input_tokens: u64,
    /// Input read from the cache.
    pub cache_read_input_tokens: u64,
}

impl Tokens {
    /// Every input token: fresh, cache writes and cache reads.
    pub fn input(&self) -> u64 {
        self.input_tokens + self.cache_creation_input_tokens + self.cache_read_input_tokens
    }

    /// Adds `other`.
    pub fn add(&mut self, other: &Tokens) {
        self.input_tokens += other.input_tokens;
        self.output_tokens += other.output_tokens;
        self.cache_creation_input_tokens += other.cache_creation_input_tokens;
        self.cache_read_input_tokens += other.cache_read_input_tokens;
    }

    /// `self` less `other`, never below zero.
    pub fn less(&self, other: &Tokens) -> Tokens {
        Tokens {
            input_tokens: self.input_tokens.saturating_sub(other.input_tokens),
            output_tokens: self.output_tokens.saturating_sub(other.output_tokens),
            cache_creation_input_tokens: self
                .cache_creation_input_tokens
                .saturating_sub(other.cache_creation_input_tokens),
            cache_read_input_tokens: self
                .cache_read_input_tokens
                .saturating_sub(other.cache_read_input_tokens),
        }
    }
}

impl From<&model::Usage> for Tokens {
    fn from(u: &model::Usage) -> Tokens {
        Tokens {
            input_tokens: u.input_tokens,
            output_tokens: u.output_tokens,
            cache_creation_input_tokens: u.cache_creation_input_tokens,
            cache_read_input_tokens: u.cache_read_input_tokens,
        }
    }
}

/// Why a run ended (`stop_reason` on its process).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunStop {
    /// The model finished.
    EndTurn,
    /// `max_turns` model calls were made.
    MaxTurns,
    /// `max_budget_usd` was spent.
    MaxBudget,
    /// A host interrupted it.
    Interrupted,
    /// The conversation no longer fits the context window.
    PromptTooLong,
    /// Something failed (`stop_message` says what).
    Error,
    /// No structured output matched the schema in the calls allowed.
    StructuredOutputRetries,
    /// A reason this version does not know (read, never written).
    #[serde(other)]
    Other,
}

impl RunStop {
    /// The exit code of a run that stopped so: 0 done, 1 an error, 3 a
    /// gate, 130 interrupted.
    pub fn exit_code(self) -> u8 {
        match self {
            RunStop::EndTurn => 0,
            RunStop::MaxTurns | RunStop::MaxBudget => 3,
            RunStop::Interrupted => 130,
            RunStop::PromptTooLong
            | RunStop::Error
            | RunStop::StructuredOutputRetries
            | RunStop::Other => 1,
        }
    }

    /// Its name on the process.
    pub fn as_str(self) -> &'static str {
        match self {
            RunStop::EndTurn => "end_turn",
            RunStop::MaxTurns => "max_turns",
            RunStop::MaxBudget => "max_budget",
            RunStop::Interrupted => "interrupted",
            RunStop::PromptTooLong => "prompt_too_long",
            RunStop::Error => "error",
            RunStop::StructuredOutputRetries => "structured_output_retries",
            RunStop::Other => "other",
        }
    }
}

/// A call the permissions (a rule, a person, a hook) refused.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Denial {
    /// The call.
    pub tool_use_id: String,
    /// Its program.
    pub program: String,
    /// Its input.
    pub input: Value,
    /// What the model was told.
    pub reason: String,
}

/// A sub-agent's totals, as its parent counts them.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ChildTotals {
    /// The sub-agent's process.
    pub process: String,
    /// Its tokens (also in its parent's).
    pub usage: Tokens,
    /// Its dollars (also in its parent's).
    pub cost_usd: Option<f64>,
    /// Its model calls.
    pub turns: u32,
    /// Its model.
    pub model: String,
}

/// What a run's own calls of one model used (a run that fell back to
/// another model has one of these for each).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ModelTotals {
    /// The model.
    pub model: String,
    /// Its calls.
    pub turns: u32,
    /// Their tokens.
    pub usage: Tokens,
    /// Their dollars (none: the model has no price).
    pub cost_usd: Option<f64>,
}

/// What a run's tools did: their time, the lines they changed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Work {
    /// Milliseconds its tools ran (a sub-agent's call counted whole, once).
    pub tool_ms: u64,
    /// Lines its tools (its sub-agents' included) added to the project's
    /// files, as their file effects counted them.
    pub lines_added: u64,
    /// Lines they removed.
    pub lines_removed: u64,
}

impl Work {
    /// Adds `other`: its time and its lines.
    pub fn add(&mut self, other: &Work) {
        self.tool_ms += other.tool_ms;
        self.add_lines(other);
    }

    /// Adds `other`'s lines (not its time: a sub-agent's is its call's).
    pub fn add_lines(&mut self, other: &Work) {
        self.lines_added += other.lines_added;
        self.lines_removed += other.lines_removed;
    }
}

/// Whether `models` says no more than the run's model does.
fn one_model(models: &[ModelTotals]) -> bool {
    models.len() < 2
}

/// A run's totals on its process: written with every answer, and once
/// more, with how it ended, when it ends.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct RunTotals {
    /// The model.
    pub model: String,
    /// Model calls made.
    pub turns: u32,
    /// Tokens, its sub-agents' included.
    pub usage: Tokens,
    /// Dollars, its sub-agents' included (none: the model has no price).
    pub cost_usd: Option<f64>,
    /// The last call's input over the context window, in percent.
    pub context_percent: f64,
    /// Milliseconds spent waiting for the API.
    pub duration_api_ms: u64,
    /// Its tools' time and the lines they changed.
    #[serde(flatten)]
    pub work: Work,
    /// The calls refused.
    pub permission_denials: Vec<Denial>,
    /// Each sub-agent's totals.
    pub children: Vec<ChildTotals>,
    /// What the model gave as `StructuredOutput`, matching the schema
    /// (`--json-schema`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub structured_output: Option<Value>,
    /// Its own calls by model, when it called more than one (a fallback).
    #[serde(skip_serializing_if = "one_model")]
    pub models: Vec<ModelTotals>,
    /// Why it ended (none while it runs, or when it never said).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stop_reason: Option<RunStop>,
    /// What a person is told of how it ended.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stop_message: Option<String>,
}

/// The body of an agent run's process: the engine's part and the agent's.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RunBody {
    /// What the engine keeps on every process.
    #[serde(flatten)]
    pub process: ProcessBody,
    /// What the agent adds.
    #[serde(flatten)]
    pub totals: RunTotals,
}

impl RunBody {
    /// Reads a process body (lenient: what is missing is default).
    pub fn parse(body: &Value) -> RunBody {
        RunBody::deserialize(body).unwrap_or_default()
    }

    /// How the run went, in a word: `running`, `done`, `interrupted`,
    /// `stopped` (a gate), `failed` (with the engine's reason when the
    /// agent gave none).
    pub fn status(&self) -> String {
        use protocol::process::ProcessStatus;
        match (self.process.status, self.totals.stop_reason) {
            (ProcessStatus::Pending, _) if self.process.queued() => "queued".into(),
            (ProcessStatus::Pending | ProcessStatus::Running, _) => "running".into(),
            (_, Some(RunStop::EndTurn)) => "done".into(),
            (_, Some(RunStop::Interrupted)) => "interrupted".into(),
            (_, Some(RunStop::MaxTurns | RunStop::MaxBudget)) => "stopped".into(),
            (
                _,
                Some(
                    RunStop::PromptTooLong
                    | RunStop::Error
                    | RunStop::StructuredOutputRetries
                    | RunStop::Other,
                ),
            ) => "failed".into(),
            // (stopped by a person or a host before it could say why: a
            // stop, not a failure)
            (ProcessStatus::Completed | ProcessStatus::Failed, None) if self.cancelled() => {
                "stopped".into()
            }
            (ProcessStatus::Completed | ProcessStatus::Failed, None) => self
                .process
                .error
                .as_deref()
                .map_or("failed".into(), |e| format!("failed ({e})")),
        }
    }

    /// Whether it was cancelled (a second Ctrl-C, `hc stop`) before it
    /// ended by itself.
    pub fn cancelled(&self) -> bool {
        self.totals.stop_reason.is_none() && self.process.error.as_deref() == Some("cancelled")
    }

    /// The exit code of a run that ended so (1 when it never said why;
    /// 130 when it was stopped, as an interrupt is).
    pub fn exit_code(&self) -> u8 {
        if self.cancelled() {
            return RunStop::Interrupted.exit_code();
        }
        self.totals.stop_reason.map_or(1, RunStop::exit_code)
    }
}

/// The `data` of an agent run's answer (`engine/output`): what a parent
/// reads of a sub-agent, and a host of a run.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct RunOutcome {
    /// Why it ended.
    pub stop_reason: Option<RunStop>,
    /// Its tokens.
    pub usage: Tokens,
    /// Its dollars (none: no price).
    pub cost_usd: Option<f64>,
    /// Its model calls.
    pub turns: u32,
    /// Its model.
    pub model: String,
    /// Its tools' time and the lines they (and its sub-agents) changed.
    #[serde(flatten)]
    pub work: Work,
}
