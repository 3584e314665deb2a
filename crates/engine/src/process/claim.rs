//! Taking a queued run: its plan rebuilt from what was committed (its
//! program, its timeout, its boundary chunks), its program spawned, and
//! one commit — guarded: the run must still wait for an engine — that
//! says it is `running` here, with its pid, this engine's id, its host,
//! its epoch and the directory it runs in, and renews this engine's lease.
//! A claim another engine made first is refused and the program killed.

use super::{carry, spawn, unspawn};
use crate::boundary::Reach;
use crate::claim::{Fence, ensure_lease, host_name, lease_body, watch_stop};
use crate::clock::now;
use crate::config::{Context, ProcessId};
use crate::connection::Ops;
use crate::core::Core;
use crate::engine::load_reach;
use crate::error::{EngineError, Result};
use crate::plan::Planner;
use crate::slot::Slot;
use protocol::process::ProcessBody;
use protocol::{ErrorCode, RunArgs};
use serde_json::json;
use std::sync::Arc;
use substrate::{ChunkDecl, Declaration, Snapshot};

/// Claims queued run `id` for this engine and starts it.
pub(crate) fn claim<O: Ops>(core: &Arc<Core>, ops: O, id: &str) -> Result<ProcessId> {
    let planner = Planner {
        config: &core.config,
        landlock: core.landlock,
        me: core.db.is_shared().then(|| core.db.person()),
    };
    let (plan, body) = core.db.read(|snap| {
        let body = waiting(snap, id)?;
        let args = RunArgs {
            timeout_ms: body.timeout_ms,
            ..RunArgs::default()
        };
        let mut plan = planner.plan(
            snap,
            &Context::host(),
            &Reach::host(),
            &body.program,
            &args,
            id,
        )?;
        if plan.service || plan.served_by.is_some() || plan.webview.is_some() {
            return Err(EngineError::invalid(format!(
                "`{id}` cannot be claimed: `{}` is no longer a program that runs as a process",
                plan.program_name
            )));
        }
        plan.reach = load_reach(snap, id)?;
        // (a run's boundary chunks are made with it: a process without
        // them was not made by `run`)
        if plan.reach.read.levels.is_empty() || plan.reach.write.levels.is_empty() {
            return Err(EngineError::boundary(format!(
                "`{id}` has no boundaries of its own: it was not queued by `run`"
            )));
        }
        Ok::<_, EngineError>((plan, body))
    })?;
    ensure_lease(core)?;
    let epoch = body.epoch.unwrap_or(0) + 1;
    let fence = Fence {
        root: id.to_owned(),
        epoch,
    };
    let mut plan = plan;
    plan.trace = super::trace_of(core, None, id);
    let slot = Arc::new(
        Slot::new(id.to_owned(), None, plan.reach.clone(), None)
            .fenced(Some(fence))
            .traced(plan.trace),
    );
    core.slots.insert(Arc::clone(&slot));
    let spawned = spawn::spawn(core, id, &plan);
    let pid = spawned.as_ref().ok().and_then(spawn::Started::pid);
    let running = json!({
        "status": "running",
        "started": now(),
        "pid": pid,
        "engine": core.id,
        "epoch": epoch,
        "host": host_name(),
        "root": core.config.project_root.display().to_string(),
        "note": null,
        "person": core.db.person(),
        "via": core.db.signer().via,
    });
    let decl = Declaration::of(vec![
        ChunkDecl::with_id(id).merge_body(running),
        ChunkDecl::with_id(&core.id).merge_body(lease_body(core)),
    ]);
    let committed = core.db.commit_with(decl, None, |snap| {
        let now = waiting(snap, id)?;
        if now.epoch != body.epoch {
            return Err(taken(id, &now));
        }
        Ok(())
    });
    if let Err(e) = committed {
        core.slots.remove(id);
        if let Ok(child) = spawned {
            unspawn(id, child);
        }
        return Err(e);
    }
    tracing::debug!(process = %id, epoch, "claimed");
    watch_stop(core, Arc::clone(&slot));
    carry(core, ops, slot, &plan, Some(spawned))
}

/// The body of queued run `id`, still waiting for an engine; refused
/// (`FENCED`: taken, `INVALID_REQUEST`: not a queued run) otherwise.
fn waiting(snap: &Snapshot<'_>, id: &str) -> Result<ProcessBody> {
    if !snap.is_instance_of(id, "engine/process")? {
        return Err(EngineError::not_found(format!("no process `{id}`")));
    }
    let body = ProcessBody::parse(&snap.body(id)?.unwrap_or_default());
    if body.queued() {
        return Ok(body);
    }
    if body.placement.is_none() {
        return Err(EngineError::invalid(format!(
            "`{id}` was not queued: it was started at once"
        )));
    }
    Err(taken(id, &body))
}

/// The refusal of a claim on a run that no longer waits.
fn taken(id: &str, now: &ProcessBody) -> EngineError {
    let why = match (&now.engine, now.status.ended()) {
        (_, true) => format!(
            "it has ended ({})",
            now.error.as_deref().unwrap_or(now.status.as_str())
        ),
        (Some(engine), false) => format!("engine `{engine}` claimed it first"),
        (None, false) => "it changed meanwhile".to_owned(),
    };
    EngineError::new(ErrorCode::Fenced, format!("cannot claim `{id}`: {why}"))
}
