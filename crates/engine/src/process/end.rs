//! How a process ended, and the terminal transition: its ending
//! committed, its subscriptions dropped, its live children failed
//! (`"parent ended"`, recursively), its awaiters woken, its slot forgotten.

use crate::clock::now;
use crate::core::Core;
use crate::slot::Slot;
use serde_json::json;
use std::os::unix::process::ExitStatusExt;
use std::sync::Arc;
use substrate::{ChunkDecl, Declaration, NewPlacement};

/// How a process ended.
pub(crate) struct Ending {
    /// `completed` or `failed`.
    pub(super) status: &'static str,
    /// How it failed.
    pub(super) error: Option<String>,
    /// Its program's exit code.
    pub(super) exit_code: Option<i32>,
    /// Its result, committed with the end (a `finish` that carried one).
    pub(super) output: Option<serde_json::Value>,
    /// Fields its `finish` merges into its process chunk with the end.
    pub(super) body: Option<serde_json::Value>,
}

impl Ending {
    /// A process that failed for `error`.
    pub(super) fn failed(error: impl Into<String>) -> Ending {
        Ending {
            status: "failed",
            error: Some(error.into()),
            exit_code: None,
            output: None,
            body: None,
        }
    }

    /// A run its program (or its service) ended with `finish`.
    pub(super) fn finished(how: crate::slot::Finish) -> Ending {
        let ending = match how.result {
            Ok(()) => Ending {
                status: "completed",
                error: None,
                exit_code: None,
                output: None,
                body: None,
            },
            Err(error) => Ending::failed(error),
        };
        Ending {
            output: how.output,
            body: how.body,
            ..ending
        }
    }

    /// A process whose program exited with `status`.
    pub(super) fn exited(status: std::process::ExitStatus) -> Ending {
        match (status.code(), status.signal()) {
            (Some(0), _) => Ending {
                status: "completed",
                error: None,
                exit_code: Some(0),
                output: None,
                body: None,
            },
            (Some(code), _) => Ending {
                status: "failed",
                error: Some(format!("exit code {code}")),
                exit_code: Some(code),
                output: None,
                body: None,
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
    let mut ending = ending;
    // What the program merged (its totals) — never a field only the
    // engine writes, as a commit of its own would be refused them — then
    // the engine's fields.
    let mut body = match ending.body.take() {
        Some(serde_json::Value::Object(mut own)) => {
            own.retain(|k, _| !crate::boundary::PROTECTED_FIELDS.contains(&k.as_str()));
            serde_json::Value::Object(own)
        }
        _ => json!({}),
    };
    body["status"] = json!(ending.status);
    body["ended"] = json!(now());
    body["exit_code"] = json!(ending.exit_code);
    if let Some(error) = &ending.error {
        body["error"] = json!(error);
    }
    if !stderr_tail.is_empty() {
        body["stderr_tail"] = json!(stderr_tail);
    }
    let end = ChunkDecl::with_id(&slot.id).merge_body(body);
    // The result and the end in one commit; a result that cannot be kept
    // (too large, say) fails the run rather than leaving it unended.
    let committed = match ending.output.take() {
        Some(output) => {
            let result = ChunkDecl::generated()
                .body(output)
                .on(NewPlacement::instance(&slot.id))
                .on(NewPlacement::instance("engine/output"));
            core.db
                .commit(Declaration::of(vec![result, end.clone()]), None)
                .or_else(|e| {
                    let why = format!("its result could not be recorded: {e}");
                    ending.status = "failed";
                    ending.error = Some(why.clone());
                    let failed = end.merge_body(json!({"status": "failed", "error": why}));
                    core.db.commit(Declaration::of(vec![failed]), None)
                })
        }
        None => core.db.commit(Declaration::of(vec![end]), None),
    };
    if let Err(e) = committed {
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
