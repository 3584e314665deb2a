//! The wire types: every request, response, error and event of
//! `docs/protocol.md`, and the line parser the engine uses.

use serde::de::{self, Deserializer};
use serde::{Deserialize, Serialize, Serializer};
use serde_json::Value;
use std::sync::Arc;
use substrate::spec::kind_of;
use substrate::{ChunkDecl, Commit, Declaration, ScopeOpts};

/// The longest line either side may send, in bytes.
pub const MAX_LINE_BYTES: usize = 16 * 1024 * 1024;

/// A boundary: `"open"`, or a list of root chunk ids.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Boundary {
    /// No restriction at this level.
    Open,
    /// Chunks with an instance chain up to one of these roots (or a root itself).
    Roots(Vec<String>),
}

impl Serialize for Boundary {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Boundary::Open => s.serialize_str("open"),
            Boundary::Roots(roots) => roots.serialize(s),
        }
    }
}

impl<'de> Deserialize<'de> for Boundary {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Boundary, D::Error> {
        match Value::deserialize(d)? {
            Value::String(s) if s == "open" => Ok(Boundary::Open),
            Value::Array(items) => items
                .into_iter()
                .map(|v| match v {
                    Value::String(s) => Ok(s),
                    other => Err(de::Error::custom(format!(
                        "a boundary root must be a chunk id string, got {other}"
                    ))),
                })
                .collect::<Result<Vec<_>, _>>()
                .map(Boundary::Roots),
            other => Err(de::Error::custom(format!(
                "a boundary is \"open\" or a list of chunk ids, got {other}"
            ))),
        }
    }
}

/// Which paths a program may read: everything, or only these (relative to
/// the project root, or absolute; system directories stay readable so it
/// can run at all).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum ReadAccess {
    /// Every path.
    #[default]
    All,
    /// Only beneath these paths.
    Paths(Vec<String>),
}

impl Serialize for ReadAccess {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            ReadAccess::All => s.serialize_str("all"),
            ReadAccess::Paths(paths) => paths.serialize(s),
        }
    }
}

impl<'de> Deserialize<'de> for ReadAccess {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<ReadAccess, D::Error> {
        match Value::deserialize(d)? {
            Value::String(s) if s == "all" => Ok(ReadAccess::All),
            other => serde_json::from_value(other)
                .map(ReadAccess::Paths)
                .map_err(|_| de::Error::custom("`read` is \"all\" or a list of paths")),
        }
    }
}

/// What a program may touch on the machine when it runs contained.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FilesystemAccess {
    /// Readable paths (default: all).
    #[serde(default)]
    pub read: ReadAccess,
    /// Writable paths (default: none but the process's own temp dir).
    #[serde(default)]
    pub write: Vec<String>,
}

/// A program's capabilities (`body.capabilities` of its chunk); a run may
/// narrow them, never widen them.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Capabilities {
    /// Files.
    #[serde(default)]
    pub filesystem: FilesystemAccess,
    /// Sockets other than Unix ones.
    #[serde(default)]
    pub network: bool,
    /// Environment variables passed through from the host (all others are
    /// cleared).
    #[serde(default)]
    pub env: Vec<String>,
    /// Program names (globs, `mcp__github__*`) whose program chunks — and
    /// their input types — a service may create, change and take off
    /// `engine/program`, outside its own tree.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub programs: Vec<String>,
}

impl Capabilities {
    /// Read anything, write in the project (`.`), no network, no
    /// variables: the built-in tools that change files.
    pub fn project_writer() -> Capabilities {
        Capabilities {
            filesystem: FilesystemAccess {
                read: ReadAccess::All,
                write: vec![".".into()],
            },
            ..Capabilities::default()
        }
    }
}

/// The arguments of a `run`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunArgs {
    /// Argument chunks; the engine places each instance on the new process.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub chunks: Vec<ChunkDecl>,
    /// This run's read boundary; omitted means the caller's own.
    #[serde(
        rename = "readBoundary",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub read_boundary: Option<Boundary>,
    /// This run's write boundary; omitted means the caller's own.
    #[serde(
        rename = "writeBoundary",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub write_boundary: Option<Boundary>,
    /// Overrides the program's `timeout_ms`.
    #[serde(rename = "timeoutMs", default, skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
    /// For a host run: the session to place the process on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    /// Narrower capabilities than the program declares, for this run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capabilities: Option<Capabilities>,
    /// For a host run: queue it instead of starting it — committed
    /// `pending`, with no engine, until an engine claims it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub placement: Option<crate::process::Placement>,
}

/// Options of a `subscribe`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SubscribeOpts {
    /// Also fire for every scope with an instance chain up to a subscribed one.
    pub deep: bool,
}

/// One operation a program (or host) asks of the engine.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "lowercase", deny_unknown_fields)]
pub enum Op {
    /// Read the intersection of scopes.
    Scope {
        /// The scopes (none: the whole substrate, for an open boundary).
        scopes: Vec<String>,
        /// Read options.
        #[serde(default)]
        opts: ScopeOpts,
    },
    /// Apply a declaration.
    Commit {
        /// What to change.
        declaration: Declaration,
    },
    /// Start a program; answers with the process id at once.
    Run {
        /// A program chunk id or a program name.
        program: String,
        /// Arguments and boundaries.
        #[serde(default)]
        args: Box<RunArgs>,
    },
    /// Wait for processes to end.
    Await {
        /// Process ids.
        processes: Vec<String>,
    },
    /// End a process the caller started (directly or through descendants).
    Cancel {
        /// The process id.
        process: String,
    },
    /// Hear of commits touching scopes.
    Subscribe {
        /// The scopes.
        scopes: Vec<String>,
        /// `deep`.
        #[serde(default)]
        opts: SubscribeOpts,
    },
    /// Stop a subscription.
    Unsubscribe {
        /// The id `subscribe` answered.
        #[serde(rename = "subscriptionId")]
        subscription_id: String,
    },
    /// Forward `data`, unpersisted, to subscribers of the process and its ancestors.
    Notify {
        /// Anything JSON.
        data: Value,
    },
    /// End a run handed to this service (the request's `process`), or the
    /// caller's own run: its terminal status committed, then answered.
    Finish {
        /// `completed` or `failed`.
        status: FinishStatus,
        /// How it failed.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<String>,
        /// The run's result (an `engine/output` body), committed with its
        /// end in one commit.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        output: Option<Value>,
        /// Fields merged into its own process chunk's body with the end
        /// (a program's totals; the engine's `status`, `ended` and `error`
        /// win).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        body: Option<Value>,
    },
    /// Start the service `program` (once per engine) and wait until it says
    /// it is ready, at most `timeout_ms`; answers its process.
    Service {
        /// A service program's id or name.
        program: String,
        /// How long to wait for it to be ready.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        timeout_ms: Option<u64>,
    },
    /// A service says it is ready to serve runs.
    Ready {},
}

/// How a `finish` ends a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FinishStatus {
    /// It did what was asked.
    Completed,
    /// It did not (`error` says why).
    Failed,
}

impl Op {
    /// The op's name on the wire.
    pub fn name(&self) -> &'static str {
        match self {
            Op::Scope { .. } => "scope",
            Op::Commit { .. } => "commit",
            Op::Run { .. } => "run",
            Op::Await { .. } => "await",
            Op::Cancel { .. } => "cancel",
            Op::Subscribe { .. } => "subscribe",
            Op::Unsubscribe { .. } => "unsubscribe",
            Op::Notify { .. } => "notify",
            Op::Finish { .. } => "finish",
            Op::Service { .. } => "service",
            Op::Ready {} => "ready",
        }
    }
}

/// A request: an id the sender chose and an op.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Request {
    /// Matches the response.
    pub id: u64,
    /// The served run a service asks for (judged against that run's
    /// boundaries); none: the caller itself.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub process: Option<String>,
    /// What is asked.
    #[serde(flatten)]
    pub op: Op,
}

/// Why a line could not be taken as a request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ParseError {
    /// Not JSON, or not a JSON object: fatal for a program
    /// (`protocol: malformed output`), an error response for a host.
    Malformed(String),
    /// A JSON object, but not a valid request: an `INVALID_REQUEST`
    /// response, and the sender goes on.
    Invalid {
        /// The request's id, when it had a usable one.
        id: Option<u64>,
        /// What is wrong, for a person.
        message: String,
    },
}

impl Request {
    /// Parses one line (without its newline).
    pub fn parse(line: &[u8]) -> Result<Request, ParseError> {
        if line.len() > MAX_LINE_BYTES {
            return Err(ParseError::Malformed(format!(
                "a line of {} bytes exceeds the {MAX_LINE_BYTES}-byte limit",
                line.len()
            )));
        }
        let value: Value = serde_json::from_slice(line)
            .map_err(|e| ParseError::Malformed(format!("not JSON: {e}")))?;
        let Value::Object(mut map) = value else {
            return Err(ParseError::Malformed(format!(
                "a request must be a JSON object, got {}",
                kind_of(&value)
            )));
        };
        let id = match map.remove("id") {
            Some(Value::Number(n)) if n.as_u64().is_some() => n.as_u64(),
            Some(other) => {
                return Err(ParseError::Invalid {
                    id: None,
                    message: format!("`id` must be a non-negative integer, got {other}"),
                });
            }
            None => {
                return Err(ParseError::Invalid {
                    id: None,
                    message: "missing `id`: every request carries an integer id".into(),
                });
            }
        };
        let invalid = |message: String| ParseError::Invalid { id, message };
        let op_name = match map.get("op") {
            Some(Value::String(s)) => s.clone(),
            Some(other) => return Err(invalid(format!("`op` must be a string, got {other}"))),
            None => return Err(invalid("missing `op`".into())),
        };
        // `cancel` names its process; any other op's `process` is the
        // served run a service acts for.
        let process = match map.get("process") {
            _ if op_name == "cancel" => None,
            Some(Value::String(_)) => match map.remove("process") {
                Some(Value::String(p)) => Some(p),
                _ => None,
            },
            Some(other) => {
                return Err(invalid(format!(
                    "`process` must be a process id, got {other}"
                )));
            }
            None => None,
        };
        let op: Op = serde_json::from_value(Value::Object(map))
            .map_err(|e| invalid(format!("bad `{op_name}` request: {e}")))?;
        Ok(Request {
            id: id.unwrap_or(0),
            process,
            op,
        })
    }
}

/// The error codes of `docs/protocol.md`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ErrorCode {
    /// Outside the effective boundary, or a protected chunk.
    BoundaryViolation,
    /// The declaration breaks a spec rule.
    ValidationError,
    /// A chunk, program, process or subscription that does not exist.
    NotFound,
    /// A run the program started ended non-zero.
    RunFailed,
    /// Malformed request, unknown op, missing field, mixed virtual and real
    /// scopes, ambiguous program name.
    InvalidRequest,
    /// The engine failed; nothing was half-done.
    Internal,
    /// A commit for a claimed run whose claim this engine no longer holds
    /// (its lease expired, another engine claimed it, it was ended).
    Fenced,
}

impl ErrorCode {
    /// The code as on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCode::BoundaryViolation => "BOUNDARY_VIOLATION",
            ErrorCode::ValidationError => "VALIDATION_ERROR",
            ErrorCode::NotFound => "NOT_FOUND",
            ErrorCode::RunFailed => "RUN_FAILED",
            ErrorCode::InvalidRequest => "INVALID_REQUEST",
            ErrorCode::Internal => "INTERNAL",
            ErrorCode::Fenced => "FENCED",
        }
    }
}

impl From<&substrate::Error> for ErrorCode {
    fn from(e: &substrate::Error) -> ErrorCode {
        match e {
            substrate::Error::NotFound(_) => ErrorCode::NotFound,
            substrate::Error::Validation(_) => ErrorCode::ValidationError,
            substrate::Error::InvalidRequest(_) => ErrorCode::InvalidRequest,
            substrate::Error::Storage(_) => ErrorCode::Internal,
        }
    }
}

/// An error answer.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[error("{code:?}: {message}")]
pub struct ErrorBody {
    /// The code.
    pub code: ErrorCode,
    /// What happened and what to do, for a person.
    pub message: String,
}

impl ErrorBody {
    /// An error with a code and a message.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> ErrorBody {
        ErrorBody {
            code,
            message: message.into(),
        }
    }
}

/// A response: the request's id and exactly one of `result` or `error`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Response {
    /// The request's id (`null` when the line had none usable).
    pub id: Option<u64>,
    /// The outcome.
    #[serde(flatten)]
    pub outcome: Outcome,
}

/// `{"result": …}` or `{"error": …}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Outcome {
    /// Success.
    #[serde(rename = "result")]
    Result(Value),
    /// Failure.
    #[serde(rename = "error")]
    Error(ErrorBody),
}

/// An unsolicited message from the engine.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum Event {
    /// A commit touched a subscribed scope (filtered to what the subscriber can read).
    ScopeChanged {
        /// The subscription.
        #[serde(rename = "subscriptionId")]
        subscription_id: String,
        /// The commit record.
        commit: Arc<Commit>,
    },
    /// Events may have been missed: re-read.
    Lagged {
        /// The subscriptions concerned.
        #[serde(rename = "subscriptionIds")]
        subscription_ids: Vec<String>,
    },
    /// The engine ended a subscription whose scope became unreachable.
    SubscriptionInvalid {
        /// The subscription.
        #[serde(rename = "subscriptionId")]
        subscription_id: String,
        /// `"scope unreachable"` or `"scope removed"`.
        reason: String,
    },
    /// A process's `notify`, forwarded unpersisted.
    Notification {
        /// The notifying process.
        process: String,
        /// What it sent.
        data: Value,
    },
    /// To a service: a run of a program it serves, to carry out and
    /// `finish`.
    Run {
        /// The run's process.
        process: String,
        /// The program run.
        program: String,
    },
    /// To a service: a run it serves ended before it finished it (a
    /// cancel, a timeout, its parent's end).
    Cancel {
        /// The run's process.
        process: String,
    },
}

/// Anything the engine sends: a response or an event.
#[derive(Clone, Debug, PartialEq)]
pub enum Incoming {
    /// Answers a request.
    Response(Response),
    /// Unsolicited.
    Event(Event),
}

impl Incoming {
    /// Parses one line from the engine: an `event` key makes it an event.
    pub fn parse(line: &[u8]) -> Result<Incoming, String> {
        Ok(match RawIncoming::parse(line)? {
            RawIncoming::Event(event) => Incoming::Event(event),
            RawIncoming::Response { id, outcome } => Incoming::Response(Response {
                id,
                outcome: match outcome {
                    Ok(raw) => Outcome::Result(
                        serde_json::from_str(raw.get()).map_err(|e| format!("bad result: {e}"))?,
                    ),
                    Err(error) => Outcome::Error(error),
                },
            }),
        })
    }
}

/// A line from the engine with a response's result left as its JSON
/// text: whoever waits for it reads it straight into the type it expects
/// (a scope read of five hundred chunks is not built as a tree of values
/// first).
#[derive(Debug)]
pub enum RawIncoming {
    /// Answers a request: its result's JSON, or the error.
    Response {
        /// The request's id (`None` when the line had none usable).
        id: Option<u64>,
        /// The result, or the error.
        outcome: Result<Box<serde_json::value::RawValue>, ErrorBody>,
    },
    /// Unsolicited.
    Event(Event),
}

impl RawIncoming {
    /// Parses one line from the engine in one pass: an `event` key makes
    /// it an event.
    pub fn parse(line: &[u8]) -> Result<RawIncoming, String> {
        let parts: LineParts =
            serde_json::from_slice(line).map_err(|e| format!("not a JSON object: {e}"))?;
        if parts.event.is_some() {
            return serde_json::from_slice(line)
                .map(RawIncoming::Event)
                .map_err(|e| format!("bad event: {e}"));
        }
        let outcome = match (parts.result, parts.error) {
            (Some(result), None) => Ok(result),
            (None, Some(error)) => Err(error),
            (Some(_), Some(_)) => return Err("bad response: both `result` and `error`".into()),
            (None, None) => return Err("bad response: neither `result` nor `error`".into()),
        };
        Ok(RawIncoming::Response {
            id: parts.id,
            outcome,
        })
    }
}

/// What tells a line from the engine apart, read in one pass.
#[derive(Deserialize)]
struct LineParts<'a> {
    #[serde(default, borrow)]
    event: Option<&'a serde_json::value::RawValue>,
    #[serde(default)]
    id: Option<u64>,
    /// Present (even `null`) or absent.
    #[serde(default, deserialize_with = "present")]
    result: Option<Box<serde_json::value::RawValue>>,
    #[serde(default)]
    error: Option<ErrorBody>,
}

fn present<'de, D: Deserializer<'de>>(
    d: D,
) -> Result<Option<Box<serde_json::value::RawValue>>, D::Error> {
    Box::<serde_json::value::RawValue>::deserialize(d).map(Some)
}

/// `run`'s result.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunResult {
    /// The new process's id.
    pub process: String,
}

/// `subscribe`'s result.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SubscribeResult {
    /// The subscription's id.
    #[serde(rename = "subscriptionId")]
    pub subscription_id: String,
}
