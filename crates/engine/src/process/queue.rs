//! A run queued instead of started: the same one commit that creates a
//! process — its chunk, its boundary chunks, its argument chunks — with
//! the process `pending`, naming no engine and carrying its placement,
//! until an engine claims it (`claim.rs`).

use super::declaration;
use crate::boundary::Reach;
use crate::config::{Context, ProcessId};
use crate::error::{EngineError, Result};
use crate::plan::Plan;
use protocol::RunArgs;
use protocol::process::Placement;
use substrate::Substrate;

/// Queues a host's run of `program` with `args` (whose `placement` says
/// it waits) on `db` without an engine of its own running: planned as an
/// engine configured by `config` would plan it (whether Landlock is there
/// is the claiming engine's to judge), committed `pending`.
pub fn queue_run(
    db: &Substrate,
    config: &crate::EngineConfig,
    program: &str,
    args: RunArgs,
) -> Result<ProcessId> {
    let Some(placement) = args.placement.clone() else {
        return Err(EngineError::invalid("a queued run needs a `placement`"));
    };
    let id = substrate::ids::new_id("p");
    let planner = crate::plan::Planner {
        config,
        landlock: true,
        me: db.is_shared().then(|| db.person()),
    };
    let host = Context::host();
    let plan = db.read(|snap| planner.plan(snap, &host, &Reach::host(), program, &args, &id))?;
    queue(db, &host, &Reach::host(), &plan, &args, &placement, &id)
}

/// Fails queued run `id` — still waiting, as the commit's guard checks —
/// for `why` (its worktree could not be made, its program not planned).
pub fn refuse_queued(db: &Substrate, id: &str, why: &str) -> Result<()> {
    let failed =
        serde_json::json!({"status": "failed", "error": why, "ended": crate::clock::now()});
    let decl =
        substrate::Declaration::of(vec![substrate::ChunkDecl::with_id(id).merge_body(failed)]);
    db.commit_with(decl, None, |snap| {
        let body = protocol::process::ProcessBody::parse(&snap.body(id)?.unwrap_or_default());
        if !body.queued() {
            return Err(EngineError::new(
                protocol::ErrorCode::Fenced,
                format!("`{id}` no longer waits: left as it is"),
            ));
        }
        Ok(())
    })?;
    Ok(())
}

/// Notes on queued run `id` why a worker left it for another (`note` in
/// its body, shown by `hc agents`); a run no longer waiting is left as it
/// is.
pub fn note_queued(db: &Substrate, id: &str, note: &str) -> Result<()> {
    let noted = serde_json::json!({ "note": note });
    let decl =
        substrate::Declaration::of(vec![substrate::ChunkDecl::with_id(id).merge_body(noted)]);
    db.commit_with(decl, None, |snap| {
        let body = protocol::process::ProcessBody::parse(&snap.body(id)?.unwrap_or_default());
        match body.queued() {
            true => Ok(()),
            false => Err(EngineError::invalid(format!("`{id}` no longer waits"))),
        }
    })?;
    Ok(())
}

/// Commits process `id` of `plan` queued with `placement`: a host's run
/// of a program that runs as a process (not a service, a served run or a
/// tile), with its program's capabilities.
pub(super) fn queue(
    db: &Substrate,
    ctx: &Context,
    caller: &Reach,
    plan: &Plan,
    args: &RunArgs,
    placement: &Placement,
    id: &str,
) -> Result<ProcessId> {
    if ctx.process_id.is_some() || !caller.is_host() {
        return Err(EngineError::invalid(
            "`placement` is for host runs: a program's runs start at once, on its engine",
        ));
    }
    if plan.service || plan.served_by.is_some() || plan.webview.is_some() {
        return Err(EngineError::invalid(format!(
            "`{}` cannot be queued: only a program that runs as a process waits for an engine \
             (not a service, a served program or a tile)",
            plan.program_name
        )));
    }
    if args.capabilities.is_some() {
        return Err(EngineError::invalid(
            "a queued run has its program's capabilities: leave out `capabilities`, or run it \
             at once",
        ));
    }
    let (mut decl, _) = declaration(id, ("", &db.signer()), ctx, plan, args);
    let process = decl.chunks.iter_mut().find(|c| c.id.as_deref() == Some(id));
    if let Some(body) = process.and_then(|c| c.body.as_mut())
        && let Some(fields) = body.as_object_mut()
    {
        fields.remove("engine");
        fields.remove("host");
        fields.insert(
            "placement".into(),
            serde_json::to_value(placement).map_err(|e| EngineError::internal(e.to_string()))?,
        );
    }
    db.commit(decl, None)?;
    tracing::debug!(process = %id, program = %plan.program_name, "queued");
    Ok(id.to_owned())
}
