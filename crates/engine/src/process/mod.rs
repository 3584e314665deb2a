//! Processes: `run` — a slot, one atomic commit, spawn, `running` — and
//! the terminal transition with its cascade to children. Spawning (the
//! program, contained or not) is in `spawn.rs`; watching a process from
//! spawn to its end — its stdio, its timeout (paused while it awaits its
//! own children), cancel — is in `supervise.rs`.

mod claim;
mod end;
pub(crate) mod queue;
mod served;
mod spawn;
mod supervise;
mod webview;

pub(crate) use claim::claim;
pub(crate) use end::{Ending, finish};
use queue::queue;

use crate::boundary::{Reach, View};
use crate::clock::now;
use crate::config::{Context, ProcessId};
use crate::connection::Ops;
use crate::core::Core;
use crate::error::{EngineError, Result};
use crate::judge::Judge;
use crate::plan::{Plan, Planner};
use crate::slot::Slot;
use protocol::RunArgs;
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;
use substrate::ids::new_id;
use substrate::{ChunkDecl, Declaration, NewPlacement};
use supervise::supervise;

/// How much of a program's stderr the process chunk keeps.
pub const STDERR_TAIL_BYTES: usize = 64 * 1024;

/// `run`, in the seed's order: slot, one atomic commit, spawn, `running`.
/// A service program is refused: it is started by the `service` op.
pub(crate) fn run<O: Ops>(
    core: &Arc<Core>,
    ops: O,
    ctx: &Context,
    caller: Reach,
    program: &str,
    args: RunArgs,
) -> Result<ProcessId> {
    launch(core, ops, ctx, caller, program, args, false)
}

/// Starts the process of a service program (see `services.rs`).
pub(crate) fn start_service<O: Ops>(
    core: &Arc<Core>,
    ops: O,
    program: &str,
    args: RunArgs,
) -> Result<ProcessId> {
    launch(
        core,
        ops,
        &Context::host(),
        Reach::host(),
        program,
        args,
        true,
    )
}

fn launch<O: Ops>(
    core: &Arc<Core>,
    ops: O,
    ctx: &Context,
    caller: Reach,
    program: &str,
    args: RunArgs,
    service: bool,
) -> Result<ProcessId> {
    let id = new_id("p");
    let planner = Planner {
        config: &core.config,
        landlock: core.landlock,
        me: core.db.is_shared().then(|| core.db.person()),
    };
    let mut plan = core
        .db
        .read(|snap| planner.plan(snap, ctx, &caller, program, &args, &id))?;
    refuse_misplaced(ctx, &args, &plan, service)?;
    plan.trace = trace_of(core, ctx.process_id.as_deref(), &id);
    plan.outer_trace = (plan.trace.is_some() && ctx.process_id.is_none())
        .then(|| core.config.trace.as_ref().and_then(|t| t.outer))
        .flatten();
    if let Some(placement) = &args.placement {
        return queue(&core.db, ctx, &caller, &plan, &args, placement, &id);
    }
    // On a store many hosts share, an engine is judged by its lease there:
    // taken before its first run, renewed while it lives.
    if core.db.is_shared() {
        crate::claim::ensure_lease(core)?;
    }
    // A program is started before its process is committed, so that the
    // one commit that creates it says it is `running`, with its pid: it
    // cannot act before then — nothing reads its stdout until it is
    // supervised, after the commit — and a commit refused kills it.
    let by = core.db.signer();
    let (mut decl, arguments) = declaration(&id, (&core.id, &by), ctx, &plan, &args);
    // The caller is judged for its arguments as placed — on the new process
    // (inside its own tree) and typed — with the process's own placements
    // being the engine's.
    let judged = Declaration::of(
        decl.chunks
            .iter()
            .filter(|c| {
                c.id.as_ref()
                    .is_some_and(|c| *c == id || arguments.contains(c))
            })
            .cloned()
            .collect(),
    );
    let judge = |snap: &substrate::Snapshot<'_>| {
        Judge::new(&mut View::new(snap), &caller, &[id.as_str()]).judge(&judged)
    };
    // Judged before anything is spawned — a run the caller may not make
    // never starts, not even until its commit is refused — and again in
    // the commit, on the state it lands on.
    core.db.read(judge)?;
    // A run of a claimed run's tree is fenced as its root is.
    let fence = ctx
        .process_id
        .as_deref()
        .and_then(|parent| core.slots.get(parent))
        .and_then(|parent| parent.fence.clone());
    let slot = Arc::new(
        Slot::new(
            id.clone(),
            ctx.process_id.clone(),
            plan.reach.clone(),
            service.then(|| core.services.get(&plan.program_id)),
        )
        .fenced(fence.clone())
        .traced(plan.trace),
    );
    core.slots.insert(Arc::clone(&slot));
    slot.set_effects(crate::file_effects::before(core, &plan));
    let split = core.config.split_start();
    let spawned = (plan.served_by.is_none() && plan.webview.is_none() && !split)
        .then(|| spawn::spawn(core, &id, &plan));
    if let Some(Ok(child)) = &spawned {
        mark_running(&mut decl, &id, child.pid());
    }
    let (process, user) = (ctx.process_id.as_deref(), ctx.on_behalf.as_deref());
    let committed = core.db.commit_for(decl, process, user, |snap| {
        crate::claim::check_fence(snap, &core.id, fence.as_ref())?;
        judge(snap)
    });
    if let Err(e) = committed {
        core.slots.remove(&id);
        if let Some(Ok(child)) = spawned {
            unspawn(&id, child);
        }
        return Err(e);
    }
    if ctx.process_id.is_none() && !service {
        // a host's run may be stopped from elsewhere (`hc stop`)
        crate::claim::watch_stop(core, Arc::clone(&slot));
    }
    carry(core, ops, slot, &plan, spawned)
}

/// A service started by `run` (or a program by `service`), or a program's
/// run naming a session: refused, saying how it is done.
fn refuse_misplaced(ctx: &Context, args: &RunArgs, plan: &Plan, service: bool) -> Result<()> {
    if plan.service != service {
        return Err(EngineError::invalid(if plan.service {
            format!(
                "`{}` is a service: it is started with the `service` op, and serves the runs of \
                 programs naming it in `served_by`",
                plan.program_name
            )
        } else {
            format!("`{}` is not a service program", plan.program_name)
        }));
    }
    if ctx.process_id.is_some() && args.session.is_some() {
        return Err(EngineError::invalid(
            "`session` is for host runs: a program's runs are placed on its own process",
        ));
    }
    Ok(())
}

/// A child spawned for a commit that was refused: killed and reaped.
fn unspawn(id: &str, mut child: spawn::Started) {
    contain::kill_group(child.pid());
    tokio::spawn(async move { child.end.wait().await });
    contain::remove_temp_dirs(id);
}

/// A committed process carried to its end: handed to its service, shown
/// as a tile, or its spawned program supervised.
fn carry<O: Ops>(
    core: &Arc<Core>,
    ops: O,
    slot: Arc<Slot>,
    plan: &Plan,
    spawned: Option<std::io::Result<spawn::Started>>,
) -> Result<ProcessId> {
    let id = slot.id.clone();
    if let Some(served_by) = &plan.served_by {
        return serve(core, ops, slot, plan, served_by);
    }
    if let Some(entry) = &plan.webview {
        let sockets = core.tiles.add(&id, entry);
        let budget = Duration::from_millis(plan.timeout_ms);
        tokio::spawn(webview::carry(Arc::clone(core), slot, sockets, budget));
        return Ok(id);
    }
    let spawned = match spawned {
        #[cfg(feature = "bench")]
        None if core.config.split_start() => Some(split_start(core, &id, plan)),
        spawned => spawned,
    };
    let child = match spawned {
        Some(Ok(child)) => child,
        Some(Err(e)) => {
            let core = Arc::clone(core);
            let reason = format!("spawn failed: {e}");
            tokio::spawn(async move {
                finish(&core, &slot, Ending::failed(reason), String::new()).await
            });
            return Ok(id);
        }
        None => {
            return Err(EngineError::internal("a program to spawn was not spawned"));
        }
    };
    let pid = child.pid();
    tracing::debug!(process = %id, program = %plan.program_name, ?pid, "running");
    let core = Arc::clone(core);
    let budget = Duration::from_millis(plan.timeout_ms);
    tokio::spawn(async move { supervise(core, ops, slot, child, budget).await });
    Ok(id)
}

/// The process of `decl` spawned already: `running`, with its pid.
fn mark_running(decl: &mut Declaration, id: &str, pid: Option<u32>) {
    let process = decl.chunks.iter_mut().find(|c| c.id.as_deref() == Some(id));
    if let Some(body) = process.and_then(|c| c.body.as_mut()) {
        body["status"] = json!("running");
        body["started"] = json!(now());
        body["pid"] = json!(pid);
    }
}

/// The start as it was before it was one commit (`split_start`): spawn,
/// then commit `running` with the pid.
#[cfg(feature = "bench")]
fn split_start(core: &Core, id: &str, plan: &Plan) -> std::io::Result<spawn::Started> {
    let child = spawn::spawn(core, id, plan)?;
    let running = json!({"status": "running", "started": now(), "pid": child.pid()});
    let decl = Declaration::of(vec![ChunkDecl::with_id(id).merge_body(running)]);
    if let Err(e) = core.db.commit(decl, None) {
        contain::kill_group(child.pid());
        return Err(std::io::Error::other(e));
    }
    Ok(child)
}

/// A served run, committed `running`: handed to its service.
fn serve<O: Ops>(
    core: &Arc<Core>,
    ops: O,
    slot: Arc<Slot>,
    plan: &Plan,
    served_by: &str,
) -> Result<ProcessId> {
    let id = slot.id.clone();
    let service = core.services.get(served_by);
    let budget = Duration::from_millis(plan.timeout_ms);
    let program = plan.program_name.clone();
    let (core, by) = (Arc::clone(core), service.program.clone());
    let start = {
        let core = Arc::clone(&core);
        move |args| start_service(&core, ops.clone(), &by, args)
    };
    tokio::spawn(served::serve_run(
        core, start, slot, service, program, budget,
    ));
    Ok(id)
}

/// The trace context of process `id` when traces are on: its parent's
/// trace, else the one the host was started in, else its own.
pub(crate) fn trace_of(
    core: &Core,
    parent: Option<&str>,
    id: &str,
) -> Option<protocol::trace::TraceParent> {
    use protocol::trace::{TraceParent, trace_id};
    let tracing = core.config.trace.as_ref()?;
    let inherited = parent
        .and_then(|p| core.slots.get(p))
        .and_then(|slot| slot.trace);
    let trace = match (inherited, parent, tracing.outer) {
        (Some(t), _, _) => t.trace_id,
        (None, None, Some(outer)) => outer.trace_id,
        _ => trace_id(id),
    };
    Some(TraceParent::of_process(trace, id))
}

/// Placements of a new process: its program, `engine/process`, and the
/// caller's process or the host's session.
pub(crate) fn process_placements(program: &str, parent: Option<&str>) -> Vec<NewPlacement> {
    let mut out = vec![
        NewPlacement::instance(program),
        NewPlacement::instance("engine/process"),
    ];
    if let Some(parent) = parent {
        out.push(NewPlacement::instance(parent));
    }
    out
}

/// The one commit that creates a process: its chunk, its two boundary
/// chunks (relates on it, their levels in their bodies) and its argument
/// chunks (instance on it). `engine` is the id of the engine running it.
pub(crate) fn declaration(
    id: &str,
    (engine, by): (&str, &substrate::Signer),
    ctx: &Context,
    plan: &Plan,
    args: &RunArgs,
) -> (Declaration, Vec<String>) {
    let parent = ctx.process_id.as_deref().or(args.session.as_deref());
    let mut arguments = Vec::new();
    let mut chunks = Vec::new();
    let mut argument_chunks = Vec::new();
    for chunk in &args.chunks {
        let mut chunk = chunk.clone();
        let arg_id = chunk.id.clone().unwrap_or_else(|| new_id("c"));
        chunk.id = Some(arg_id.clone());
        chunk.placements.push(NewPlacement::instance(id));
        arguments.push(arg_id);
        argument_chunks.push(chunk);
    }
    let mut body = json!({
        "status": "pending",
        "program": plan.program_id,
        "timeout_ms": plan.timeout_ms,
        "arguments": arguments,
        "containment": if plan.contained { "on" } else { "off" },
        "engine": engine,
        "host": crate::claim::host_name(),
    });
    // whom it runs for, and through which front end (the store records
    // the same of each commit; on a shared store its database stamps it)
    if !by.person.is_empty() {
        body["person"] = json!(by.person);
    }
    if !by.via.is_empty() {
        body["via"] = json!(by.via);
    }
    // A served run has nothing to spawn: it is running once committed;
    // so is a tile (the host mounts it).
    // a run with no parent process, started in the host's trace, says so
    if let Some(outer) = &plan.outer_trace {
        body["traceparent"] = json!(outer.to_string());
    }
    if let Some(served_by) = &plan.served_by {
        body["status"] = json!("running");
        body["started"] = json!(now());
        body["served_by"] = json!(served_by);
    }
    if let Some(entry) = &plan.webview {
        body["status"] = json!("running");
        body["started"] = json!(now());
        body["webview"] = json!(entry);
    }
    let mut process = ChunkDecl::with_id(id)
        .name(plan.program_name.clone())
        .create_only()
        .body(body);
    process.placements = process_placements(&plan.program_id, parent);
    chunks.push(process);
    // The levels are the boundary, in the body. The roots are not placed
    // on the boundary chunk: a root (`culture`, `engine/program`) reached by
    // every run would gain a placement each run, and its every version and
    // read would grow with the number of runs.
    for (kind, side) in [
        ("read-boundary", &plan.reach.read),
        ("write-boundary", &plan.reach.write),
    ] {
        chunks.push(
            ChunkDecl::with_id(new_id("c"))
                .name(format!("{kind} of {id}"))
                .body(json!({"levels": side.levels}))
                .on(NewPlacement::instance(kind))
                .on(NewPlacement::relates(id)),
        );
    }
    chunks.extend(argument_chunks);
    (
        Declaration {
            chunks,
            ..Declaration::default()
        },
        arguments,
    )
}
