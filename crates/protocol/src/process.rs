//! The body of an `engine/process` chunk, as the engine writes it over a
//! process's life (created `pending`, then `running`, then `completed` or
//! `failed`), typed for whoever reads it. Reading is lenient: a field the
//! engine has not written yet takes its default.

use serde::{Deserialize, Serialize};

/// Where a process is in its life.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ProcessStatus {
    /// Committed; its program not started yet.
    #[default]
    Pending,
    /// Its program runs.
    Running,
    /// Its program exited 0.
    Completed,
    /// It ended any other way (`error` says how).
    Failed,
}

impl ProcessStatus {
    /// Whether the process has ended.
    pub fn ended(self) -> bool {
        matches!(self, ProcessStatus::Completed | ProcessStatus::Failed)
    }

    /// Its name in the body.
    pub fn as_str(self) -> &'static str {
        match self {
            ProcessStatus::Pending => "pending",
            ProcessStatus::Running => "running",
            ProcessStatus::Completed => "completed",
            ProcessStatus::Failed => "failed",
        }
    }
}

/// What the engine keeps on a process chunk.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ProcessBody {
    /// Where it is in its life.
    pub status: ProcessStatus,
    /// The program chunk it runs.
    pub program: String,
    /// Its timeout.
    pub timeout_ms: Option<u64>,
    /// Its argument chunks.
    pub arguments: Vec<String>,
    /// `on` or `off`.
    pub containment: Option<String>,
    /// When its program started (RFC 3339, milliseconds).
    pub started: Option<String>,
    /// Its program's pid.
    pub pid: Option<u32>,
    /// When it ended.
    pub ended: Option<String>,
    /// Its program's exit code, when it exited.
    pub exit_code: Option<i32>,
    /// How it failed: `exit code N`, `timeout`, `cancelled`, `parent
    /// ended`, `engine restart`, `killed by signal N`, `spawn failed: …`,
    /// `protocol: malformed output`.
    pub error: Option<String>,
    /// The last 64 KiB of its stderr.
    pub stderr_tail: Option<String>,
    /// The engine that runs it (its lease's id): only once that engine is
    /// gone may another fail it for an `engine restart`.
    pub engine: Option<String>,
    /// A webview run's page: its program's `entry`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub webview: Option<String>,
}

impl ProcessBody {
    /// Reads a process body (lenient: what is missing is default; one
    /// that does not read at all is a default body).
    pub fn parse(body: &serde_json::Value) -> ProcessBody {
        ProcessBody::deserialize(body).unwrap_or_default()
    }

    /// Milliseconds from its start to its end, when both are known.
    pub fn duration_ms(&self) -> Option<u128> {
        let started = humantime::parse_rfc3339(self.started.as_deref()?).ok()?;
        let ended = humantime::parse_rfc3339(self.ended.as_deref()?).ok()?;
        ended.duration_since(started).ok().map(|d| d.as_millis())
    }
}
