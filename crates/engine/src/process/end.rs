//! How a process ended, and the terminal transition: its ending
//! committed, its subscriptions dropped, its live children failed
//! (`"parent ended"`, recursively), its awaiters woken, its slot forgotten.

use crate::clock::now;
use crate::core::Core;
use crate::slot::Slot;
use protocol::ErrorCode;
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
    /// A process that ended `status`, for `error`, with `exit_code`.
    fn of(status: &'static str, error: Option<String>, exit_code: Option<i32>) -> Ending {
        Ending {
            status,
            error,
            exit_code,
            output: None,
            body: None,
        }
    }

    /// A process that failed for `error`.
    pub(super) fn failed(error: impl Into<String>) -> Ending {
        Ending::of("failed", Some(error.into()), None)
    }

    /// A run its program (or its service) ended with `finish`.
    pub(super) fn finished(how: crate::slot::Finish) -> Ending {
        let ending = match how.result {
            Ok(()) => Ending::of("completed", None, None),
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
            (Some(0), _) => Ending::of("completed", None, Some(0)),
            (Some(code), _) => Ending::of("failed", Some(format!("exit code {code}")), Some(code)),
            (None, Some(signal)) => Ending::failed(format!("killed by signal {signal}")),
            (None, None) => Ending::failed("killed"),
        }
    }

    /// A run that hit one of its bounds fails naming it — in its result
    /// too, where the model reads it.
    fn bounded(&mut self, hit: String) {
        self.status = "failed";
        if let Some(serde_json::Value::Object(output)) = &mut self.output {
            let text = output.get("text").and_then(|t| t.as_str()).unwrap_or("");
            let text = format!("{}\n[{hit}]", text.trim_end());
            output.insert("text".into(), json!(text));
            output.insert("is_error".into(), json!(true));
        }
        self.error = Some(hit);
    }

    /// The fields its end merges into the process chunk: what its program
    /// merged (its totals) — never a field only the engine writes, as a
    /// commit of its own would be refused them — then the engine's.
    fn body(&self, stderr_tail: &str) -> serde_json::Value {
        // (cloned: a commit the store failed is made again, whole)
        let mut body = match self.body.clone() {
            Some(serde_json::Value::Object(mut own)) => {
                own.retain(|k, _| !crate::boundary::PROTECTED_FIELDS.contains(&k.as_str()));
                serde_json::Value::Object(own)
            }
            _ => json!({}),
        };
        body["status"] = json!(self.status);
        body["ended"] = json!(now());
        body["exit_code"] = json!(self.exit_code);
        if let Some(error) = &self.error {
            body["error"] = json!(error);
        }
        if !stderr_tail.is_empty() {
            body["stderr_tail"] = json!(stderr_tail);
        }
        body
    }

    /// Commits the end of `slot`'s process, and the result its program's
    /// `finish` carried in the same commit — the program's commit, as its
    /// own result always was. A result that cannot be kept (too large,
    /// say) fails the run rather than leaving it unended.
    fn commit(
        &mut self,
        core: &Core,
        slot: &Slot,
        stderr_tail: &str,
        effects: &[ChunkDecl],
    ) -> crate::Result<()> {
        let end = ChunkDecl::with_id(&slot.id).merge_body(self.body(stderr_tail));
        let with_effects = |mut chunks: Vec<ChunkDecl>| {
            chunks.extend(effects.iter().cloned());
            Declaration::of(chunks)
        };
        // A claimed run's end lands only while the claim is this engine's.
        let fenced = |snap: &substrate::Snapshot<'_>| {
            crate::claim::check_fence(snap, &core.id, slot.fence.as_ref())
        };
        let Some(output) = self.output.clone() else {
            return core
                .db
                .commit_with(with_effects(vec![end]), None, fenced)
                .map(drop);
        };
        let result = ChunkDecl::generated()
            .body(output)
            .on(NewPlacement::instance(&slot.id))
            .on(NewPlacement::instance("engine/output"));
        let both = with_effects(vec![result, end.clone()]);
        match core.db.commit_with(both, Some(&slot.id), fenced) {
            // (fenced: not ours to end; the store away: tried again)
            Err(e) if matches!(e.code, ErrorCode::Fenced | ErrorCode::Internal) => return Err(e),
            Err(e) => {
                self.output = None;
                let why = format!("its result could not be recorded: {e}");
                self.status = "failed";
                self.error = Some(why.clone());
                let failed = end.merge_body(json!({"status": "failed", "error": why}));
                // (without its effects: they may be what could not be kept)
                core.db
                    .commit_with(Declaration::of(vec![failed]), None, fenced)?;
            }
            Ok(_) => {}
        }
        Ok(())
    }
}

/// The terminal transition: commit the ending, drop the process's
/// subscriptions, fail its live children (`"parent ended"`, recursively),
/// then wake its awaiters and forget the slot.
pub(crate) async fn finish(core: &Core, slot: &Arc<Slot>, ending: Ending, stderr_tail: String) {
    let mut ending = ending;
    if let Some(hit) = slot.bound_hit() {
        ending.bounded(hit);
    }
    // A claimed run's children end first: once its own end is recorded,
    // the fence refuses theirs.
    if slot.fence.as_ref().is_some_and(|f| f.root == slot.id) {
        let children = core.slots.children(&slot.id);
        for child in &children {
            child.request_end("parent ended");
        }
        for child in &children {
            child.ended().await;
        }
    }
    // The store away (a database server restarting) is waited for a
    // while: a run left unended would be judged lost once its engine goes.
    let effects = slot
        .take_effects()
        .map(|before| crate::file_effects::after(core, &slot.id, &before))
        .unwrap_or_default();
    let mut waits = [100u64, 300, 1000, 2000, 3000, 5000].into_iter();
    loop {
        match ending.commit(core, slot, &stderr_tail, &effects) {
            Err(e) if e.code == ErrorCode::Internal => match waits.next() {
                Some(ms) => tokio::time::sleep(std::time::Duration::from_millis(ms)).await,
                None => {
                    tracing::error!(process = %slot.id, "cannot record the end of the process: {e}");
                    break;
                }
            },
            Err(e) => {
                tracing::error!(process = %slot.id, "cannot record the end of the process: {e}");
                break;
            }
            Ok(()) => break,
        }
    }
    if let Some(service) = &slot.service {
        let mut reason = ending.error.clone().unwrap_or_else(|| "exited".into());
        if let Some(last) = stderr_tail.lines().rfind(|l| !l.trim().is_empty()) {
            reason = format!("{reason}: {}", last.trim());
        }
        service.exited(&slot.id, &reason);
    }
    core.subs.remove_owner(&slot.id);
    contain::remove_temp_dirs(&slot.id);
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
