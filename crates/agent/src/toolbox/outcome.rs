//! What a call came to, and what of the run a call may touch.

use crate::run::gates::Gates;
use crate::run::inbox::Inbox;
use crate::run::writer::SessionWriter;
use protocol::PlacementType;
use serde_json::Value;

/// What the parts of a run a call may touch: the session (to commit a
/// question, a plan), the host's answers, the run's totals.
pub(crate) struct Turn<'a> {
    /// The session.
    pub writer: &'a mut SessionWriter,
    /// The host's answers and interrupts.
    pub inbox: &'a Inbox,
    /// The run's totals (denials, sub-agents).
    pub gates: &'a mut Gates,
}

/// What a call came to.
#[derive(Clone, Debug, Default)]
pub(crate) struct Outcome {
    pub text: String,
    pub is_error: bool,
    pub data: Value,
    pub process: Option<String>,
    /// Refused by the permissions.
    pub denied: bool,
    /// Rules that would have allowed a refused call (boxed: an outcome
    /// stays small enough to be an error value).
    pub allow: Box<[String]>,
    /// Scopes a `scope` call read, for the run to pin (`true`), and those
    /// it asked to unpin (`false`).
    pub pin: Box<[(String, bool)]>,
    /// Its run's time and the lines its file effects counted (none: it
    /// did not run; boxed, as `allow`).
    pub work: Option<Box<crate::contract::Work>>,
}

impl Outcome {
    pub(crate) fn error(text: impl Into<String>) -> Outcome {
        Outcome {
            text: text.into(),
            is_error: true,
            ..Outcome::default()
        }
    }

    /// A call refused (by a rule, a person or a hook), not run.
    pub(crate) fn denied(text: impl Into<String>) -> Outcome {
        Outcome {
            denied: true,
            ..Outcome::error(text)
        }
    }
}

/// Outcomes of calls a stop left without a run: each "interrupted".
pub(crate) fn unfinished(n: usize) -> Vec<Outcome> {
    (0..n)
        .map(|_| Outcome::error("interrupted: the person stopped the run before this call"))
        .collect()
}

/// What a finished process answered: its output, or why it failed.
pub(crate) fn outcome_of(process: Option<String>, result: &substrate::ScopeResult) -> Outcome {
    let body = result
        .scopes
        .first()
        .map(|s| protocol::process::ProcessBody::parse(&s.body_value()))
        .unwrap_or_default();
    let output = result
        .chunks
        .iter()
        .find(|c| c.is_on("engine/output", PlacementType::Instance))
        .map(|c| protocol::program::Output::parse(&c.body_value()));
    let failed = body.status != protocol::process::ProcessStatus::Completed;
    let work = work_of(&body, result);
    let outcome = match output {
        Some(out) => Outcome {
            text: out.text,
            is_error: failed || out.is_error,
            data: out.data,
            process,
            ..Outcome::default()
        },
        None => {
            let error = body.error.as_deref().unwrap_or("no answer");
            let tail = body.stderr_tail.as_deref().unwrap_or_default();
            let tail: String = tail
                .chars()
                .rev()
                .take(2000)
                .collect::<Vec<_>>()
                .into_iter()
                .rev()
                .collect();
            Outcome {
                text: format!(
                    "the program failed ({error}) without answering{}{}",
                    if tail.is_empty() { "" } else { ":\n" },
                    tail.trim_end()
                ),
                is_error: true,
                process,
                ..Outcome::default()
            }
        }
    };
    Outcome {
        work: Some(Box::new(work)),
        ..outcome
    }
}

/// A tool run's time (from its process) and the lines its file effects
/// counted (their chunk is on the process, in what its end read).
fn work_of(
    body: &protocol::process::ProcessBody,
    result: &substrate::ScopeResult,
) -> crate::contract::Work {
    let mut work = crate::contract::Work {
        tool_ms: body.duration_ms().map_or(0, |ms| ms as u64),
        ..Default::default()
    };
    let records = (result.chunks.iter())
        .filter(|c| c.is_on("engine/file-effects", PlacementType::Instance))
        .filter_map(|c| {
            serde_json::from_str::<effects::record::FileEffects>(c.body.as_ref()?.as_str()).ok()
        });
    for lines in records.map(|r| r.lines()) {
        work.lines_added += lines.added;
        work.lines_removed += lines.removed;
    }
    work
}
