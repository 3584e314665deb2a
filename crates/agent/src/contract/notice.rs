//! What the agent (and a tool it runs) tells hosts while it works, as
//! `notify` data: never stored, for display only.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One notification, tagged by `kind`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Notice {
    /// More of the reply's text.
    TextDelta {
        /// The content block it belongs to.
        index: usize,
        /// The new text.
        text: String,
    },
    /// More of the reply's thinking.
    ThinkingDelta {
        /// The content block it belongs to.
        index: usize,
        /// The new thinking.
        text: String,
    },
    /// More of a tool call's input, as the model writes it (JSON text that
    /// is not whole yet).
    ToolInputDelta {
        /// The content block it belongs to.
        index: usize,
        /// The call's id.
        tool_use_id: Option<String>,
        /// The tool's name.
        name: Option<String>,
        /// The fragment.
        json: String,
    },
    /// A call begins (after its checks; `input` as it runs).
    ToolStart {
        /// The call's id.
        tool_use_id: String,
        /// The program (or own tool).
        program: String,
        /// Its input.
        input: Value,
    },
    /// A call ended.
    ToolEnd {
        /// The call's id.
        tool_use_id: String,
        /// Its run's process (none: it never ran).
        process: Option<String>,
        /// It did not succeed.
        is_error: bool,
        /// Refused (by the permissions, a person or a hook): it never ran.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        denied: bool,
        /// Rules that would allow it (`edit(src/**)`), when a rule could.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        allow: Vec<String>,
        /// What a person sees under the call's line, so a host need not
        /// read the result: a shell's output's end, a failure's reason's
        /// start (at most [`SAID_BYTES`]).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        said: Option<String>,
        /// A shell's exit code.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        exit_code: Option<i64>,
        /// A shell that ran out of time.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        timed_out: bool,
    },
    /// What the run is doing (retrying, compacting, waiting for a person).
    Status {
        /// In words.
        text: String,
        /// A wait — for a person (a permission, a question, a plan), or
        /// for a silent model: over once answered, so a terminal says it
        /// on its progress line only.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        waiting: bool,
    },
    /// The text streamed since the last answer is void: the stream broke
    /// and the call is made again.
    Discard,
    /// The model could not answer (`trigger`: `overloaded` after the
    /// client's retries, or `model_not_found`): the run goes on with the
    /// next `--fallback-model` (Claude Code's `model_fallback`).
    ModelFallback {
        /// `overloaded` or `model_not_found`.
        trigger: String,
        /// The model that failed.
        original_model: String,
        /// The model the run goes on with.
        fallback_model: String,
    },
    /// A tool's output as it runs (the `shell` program's).
    Output {
        /// `stdout` or `stderr`.
        #[serde(default)]
        stream: Option<String>,
        /// The new output.
        text: String,
    },
    /// How far a tool has got (an MCP server's progress).
    Progress {
        /// Done so far.
        progress: f64,
        /// Of how much, when known.
        #[serde(default)]
        total: Option<f64>,
        /// In words, when said.
        #[serde(default)]
        message: Option<String>,
    },
}

impl Notice {
    /// Reads notify data; `None` for data of another vocabulary (a
    /// program of the user's may notify anything).
    pub fn parse(data: &Value) -> Option<Notice> {
        Notice::deserialize(data).ok()
    }

    /// A progress notice as one short line (`step 3 (3/10)`).
    pub fn progress_line(progress: f64, total: Option<f64>, message: Option<&str>) -> String {
        let count = match total {
            Some(total) => format!("{progress}/{total}"),
            None => format!("{progress}"),
        };
        match message {
            Some(message) => format!("{message} ({count})"),
            None => count,
        }
    }

    /// The notify data.
    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }
}

/// The most of a result a `tool-end` notice carries (`said`).
pub const SAID_BYTES: usize = 4096;
