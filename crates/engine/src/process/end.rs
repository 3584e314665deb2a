//! How a process ended, and the terminal transition: its ending
//! committed, its subscriptions dropped, its live children failed
//! (`"parent ended"`, recursively), its awaiters woken, its slot forgotten.

use crate::clock::now;
use crate::core::Core;
use crate::slot::Slot;
use serde_json::json;
use std::os::unix::process::ExitStatusExt;
use std::sync::Arc;
use substrate::{ChunkDecl, Declaration};

/// How a process ended.
pub(crate) struct Ending {
    /// `completed` or `failed`.
    pub(super) status: &'static str,
    /// How it failed.
    pub(super) error: Option<String>,
    /// Its program's exit code.
    pub(super) exit_code: Option<i32>,
}

impl Ending {
    /// A process that failed for `error`.
    pub(super) fn failed(error: impl Into<String>) -> Ending {
        Ending {
            status: "failed",
            error: Some(error.into()),
            exit_code: None,
        }
    }

    /// A run its program (or its service) ended with `finish`.
    pub(super) fn finished(how: crate::slot::Finish) -> Ending {
        match how {
            Ok(()) => Ending {
                status: "completed",
                error: None,
                exit_code: None,
            },
            Err(error) => Ending::failed(error),
        }
    }

    /// A process whose program exited with `status`.
    pub(super) fn exited(status: std::process::ExitStatus) -> Ending {
        match (status.code(), status.signal()) {
            (Some(0), _) => Ending {
                status: "completed",
                error: None,
                exit_code: Some(0),
            },
            (Some(code), _) => Ending {
                status: "failed",
                error: Some(format!("exit code {code}")),
                exit_code: Some(code),
            },
            (None, Some(signal)) => Ending::failed(format!("killed by signal {signal}")),
            (None, None) => Ending::failed("killed"),
        }
    }
}

/// The terminal transition: commit the ending, drop the process's
/// subscriptions, fail its live children (`"parent ended"`, recursively),
/// then wake its awaiters and forget the slot.
pub(crate) async fn finish(core: &Core, slot: &Arc<Slot>, ending: Ending, stderr_tail: String) {
    let mut body = json!({"status": ending.status, "ended": now(), "exit_code": ending.exit_code});
    if let Some(error) = &ending.error {
        body["error"] = json!(error);
    }
    if !stderr_tail.is_empty() {
        body["stderr_tail"] = json!(stderr_tail);
    }
    let decl = Declaration::of(vec![ChunkDecl::with_id(&slot.id).merge_body(body)]);
    if let Err(e) = core.db.commit(decl, None) {
        tracing::error!(process = %slot.id, "cannot record the end of the process: {e}");
    }
    if let Some(service) = &slot.service {
        let mut reason = ending.error.clone().unwrap_or_else(|| "exited".into());
        if let Some(last) = stderr_tail.lines().rfind(|l| !l.trim().is_empty()) {
            reason = format!("{reason}: {}", last.trim());
        }
        service.exited(&slot.id, &reason);
    }
    core.subs.remove_owner(&slot.id);
    let _ = std::fs::remove_dir_all(contain::temp_dir(&slot.id));
    let children = core.slots.children(&slot.id);
    for child in &children {
        child.request_end("parent ended");
    }
    for child in &children {
        child.ended().await;
    }
    slot.mark_done();
    core.slots.remove(&slot.id);
    tracing::debug!(process = %slot.id, status = ending.status, error = ?ending.error, "ended");
}
