//! The body of an `engine/process` chunk, as the engine writes it over a
//! process's life (created `pending`, then `running`, then `completed` or
//! `failed`), typed for whoever reads it. Reading is lenient: a field the
//! engine has not written yet takes its default.

use serde::{Deserialize, Serialize};

/// The exit code of a service that cannot serve until the person signs in
/// (an MCP server that wants OAuth): hosts show it as `needs-auth`, not
/// `failed` (EX_NOPERM).
pub const EXIT_NEEDS_AUTH: i32 = 77;

/// Whether the last of a service's `processes` to end ended wanting the
/// person to sign in ([`EXIT_NEEDS_AUTH`]).
pub fn last_needs_auth(processes: impl IntoIterator<Item = ProcessBody>) -> bool {
    processes
        .into_iter()
        .filter(|p| p.ended.is_some())
        .max_by(|a, b| a.ended.cmp(&b.ended))
        .is_some_and(|p| p.exit_code == Some(EXIT_NEEDS_AUTH))
}

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
    /// A queued run's placement: what an engine that claims it must give.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub placement: Option<Placement>,
    /// A claimed run's epoch: 1 at its first claim, one more at each
    /// claim after; a commit made for it under another epoch is refused.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub epoch: Option<u64>,
    /// The host its engine runs on (a claimed run).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    /// The person its engine runs it for (the engine's own: on a shared
    /// store, the role it connects as).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub person: Option<String>,
    /// The front end or process it was started through: `terminal`,
    /// `page`, `sdk`, `acp`, `worker`, … (decision 19).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub via: Option<String>,
    /// The directory it runs in when not the project's own (a worktree).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub root: Option<String>,
    /// A stop asked of a claimed run by a host other than its engine's
    /// (`hc stop`): the reason its engine ends it with.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stop: Option<String>,
    /// Why a queued run still waits, said by a worker that left it for
    /// another (its base commit missing there, no containment there).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// What its program said last: whether it can be started again from
    /// what it recorded (the agent: every tool call of its last turn has
    /// its result recorded). None: it said nothing (nothing done yet).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resumable: Option<bool>,
    /// The trace a run with no parent process continued: the host's own
    /// `TRACEPARENT` when it was started inside a trace.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub traceparent: Option<String>,
}

/// Where a queued run may run: what the engine that claims it must give.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Placement {
    /// Labels a worker must carry, each, to take it (`hc worker --labels`);
    /// none: a worker given no labels takes it.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub labels: Vec<String>,
    /// The git worktree it works in, made by the worker that claims it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub worktree: Option<WorktreeAsk>,
    /// `turn`: when the engine running it is lost, it waits again to be
    /// claimed — from what it recorded — if its program said it can go on
    /// from there (`resumable`); none: it fails `engine lost`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retry: Option<String>,
    /// The host it was queued on.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub asked_on: Option<String>,
    /// The person who queued it (the page's signed-in person, or the
    /// user `hc` ran as).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub asked_by: Option<String>,
}

impl Placement {
    /// Why a worker carrying `labels` does not take this run, if it does
    /// not: a run goes to a worker that carries every label it asks; a
    /// worker given labels takes only runs asking for them.
    pub fn refused_by(&self, labels: &[String]) -> Option<String> {
        let missing: Vec<&str> = (self.labels.iter())
            .filter(|l| !labels.contains(l))
            .map(String::as_str)
            .collect();
        if !missing.is_empty() {
            return Some(format!("it asks for label(s) {}", missing.join(", ")));
        }
        (self.labels.is_empty() && !labels.is_empty()).then(|| {
            "it asks for no label, and this worker takes only runs asking for its labels".into()
        })
    }
}

/// A queued run's own git worktree: its branch, made from `base`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorktreeAsk {
    /// The branch (`hc/<session>`).
    pub branch: String,
    /// The commit it starts from.
    pub base: String,
    /// Where, relative to the project's root.
    pub path: String,
}

/// A claiming engine's lease, the body of its `engine/engine` chunk
/// (whose id is the engine's): renewed every few seconds while it holds
/// runs; past `expires` its runs are lost.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct LeaseBody {
    /// The host it runs on.
    pub host: String,
    /// Its operating-system process.
    pub pid: u32,
    /// Until when it holds its runs: milliseconds since the Unix epoch.
    pub expires_ms: u64,
}

impl ProcessBody {
    /// A run waiting in the queue: committed `pending` with a placement,
    /// no engine has claimed it.
    pub fn queued(&self) -> bool {
        self.status == ProcessStatus::Pending && self.placement.is_some() && self.engine.is_none()
    }
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
