//! [`Engine`]: the API a host calls directly, and that every program's
//! protocol requests reach.

use crate::boundary::{EffectiveBoundary, Reach, View, topology};
use crate::config::{Context, EngineConfig, ProcessId, SubscriptionId};
use crate::connection::Ops;
use crate::core::Core;
use crate::error::{EngineError, Result};
use crate::judge::Judge;
use crate::lease::{self, Lease};
use crate::process;
use crate::slot::Slots;
use crate::subs::{EventStream, Sink, Subscriptions};
use contain::Containment;
use protocol::{Boundary, ErrorCode, RunArgs, SubscribeOpts};
use serde_json::Value;
use std::collections::HashMap;
use std::future::Future;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use substrate::{
    Commit, Declaration, PlacementType, ScopeOpts, ScopeResult, Snapshot, Substrate, TypeFilter,
    ids::COMMITS_ROOT,
};

/// How long `service` waits for a service to be ready, by default.
const SERVICE_WAIT_MS: u64 = 10_000;

/// The engine. Cheap to clone; clones share everything. Must be used
/// inside a tokio runtime (it spawns the programs' supervisors there).
#[derive(Clone)]
pub struct Engine {
    core: Arc<Core>,
}

impl Engine {
    /// Opens the engine on `db`, running programs in the current directory.
    pub fn open(db: Arc<Substrate>) -> Result<Engine> {
        let root = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
        Engine::open_with(db, EngineConfig::new(root))
    }

    /// Opens the engine: takes its lease, fails every process an engine
    /// that is gone left `pending` or `running` (`"engine restart"`) —
    /// never those of an engine alive beside it — then starts relaying
    /// commits to subscribers.
    pub fn open_with(db: Arc<Substrate>, config: EngineConfig) -> Result<Engine> {
        for (program, grant) in &config.grants {
            grant
                .check(program, &config.project_root)
                .map_err(EngineError::invalid)?;
        }
        let leases = lease::dir_of(db.path());
        let id = substrate::ids::new_id("e");
        let held = Lease::take(&leases, &id)
            .inspect_err(|e| {
                tracing::warn!(
                    "no engine lease in {}: {e}; another engine may take this one's processes for a crashed engine's",
                    leases.display()
                )
            })
            .ok();
        crate::claim::fail_gone(&db)?;
        let landlock = matches!(config.containment, Containment::On { .. })
            && config
                .assume_landlock
                .unwrap_or_else(contain::landlock_available);
        if let Containment::Off = config.containment {
            tracing::warn!("containment is off: programs run with all of this user's privileges");
        }
        let (net_holder, zygote) = match &config.containment {
            Containment::On { exe, args } if landlock => {
                let (zygote_exe, zygote_args) = match &config.zygote {
                    Some((exe, args)) => (exe, args),
                    None => (exe, args),
                };
                (
                    contain::landlock_scopes_available()
                        .then(|| contain::NetHolder::start(exe, args))
                        .flatten(),
                    contain::Zygote::start(zygote_exe, zygote_args),
                )
            }
            _ => (None, None),
        };
        let default_memory = contain::bounds::default_memory();
        let cgroups = landlock
            .then(contain::bounds::Cgroups::find)
            .flatten()
            .and_then(|found| {
                // groups engines now gone left behind
                found.sweep(|engine| crate::lease::gone(&leases, engine));
                let usual = contain::bounds::Bounds {
                    processes: contain::bounds::DEFAULT_PROCESSES,
                    memory: default_memory,
                    cgroups: Vec::new(),
                };
                contain::bounds::Pool::new(found, &id, &usual)
            });
        let effects = config.effects_dir.as_ref().map(|dir| {
            Arc::new(effects::Tree::open(
                &config.project_root,
                dir,
                config.effects_limits,
            ))
        });
        let core = Arc::new(Core {
            effects,
            landlock,
            net_holder,
            cgroups,
            zygote,
            default_memory,
            subs: Arc::new(Subscriptions::default()),
            slots: Slots::default(),
            services: crate::services::Services::default(),
            tiles: crate::tiles::Tiles::default(),
            db,
            config,
            id,
            leased: std::sync::Mutex::new(false),
            _lease: held,
        });
        if core.cgroups.is_some() && core.zygote.is_some() && core.config.stems() {
            // the first run's group's stem, forked while the engine starts
            let ahead = Arc::downgrade(&core);
            let _ = std::thread::Builder::new()
                .name("hc-stem".into())
                .spawn(move || ahead.upgrade().map(|core| core.stem_ahead()));
        }
        crate::subs::start_dispatcher(
            Arc::downgrade(&core.subs),
            Arc::downgrade(&core.db),
            core.db.subscribe(),
        );
        Ok(Engine { core })
    }

    /// Starts watching the project's files now, in a thread of its own, so
    /// that the first run that may write anywhere finds the tree watched (a
    /// host about to run an agent asks; one that only reads does not).
    pub fn watch_files(&self) {
        // (once: every later turn finds it watched, no thread started)
        if let Some(tree) = self.core.effects.as_ref().filter(|t| t.watch_asked()) {
            let tree = Arc::clone(tree);
            let _ = std::thread::Builder::new()
                .name("hc-effects".into())
                .spawn(move || tree.watch_now());
        }
    }

    /// The substrate.
    pub fn db(&self) -> &Arc<Substrate> {
        &self.core.db
    }

    /// The configuration.
    pub fn config(&self) -> &EngineConfig {
        &self.core.config
    }

    /// The read and write boundaries of `ctx`.
    pub fn reach(&self, ctx: &Context) -> Result<Reach> {
        let Some(id) = &ctx.process_id else {
            return Ok(Reach::host());
        };
        if let Some(slot) = self.core.slots.get(id) {
            return Ok(slot.reach.clone());
        }
        self.core.db.read(|snap| load_reach(snap, id))
    }

    /// Reads `ids` as `ctx` may: every id (and every `exclude`) must be
    /// inside its read boundary — `BOUNDARY_VIOLATION` otherwise, never a
    /// silently empty read — and scopes members sit on outside it come back
    /// as `topology`.
    pub fn scope(&self, ctx: &Context, ids: &[String], opts: &ScopeOpts) -> Result<ScopeResult> {
        let reach = self.reach(ctx)?;
        // A read on a shared store is tried again while its server is away
        // (restarting): reading twice changes nothing.
        let mut waits = [100u64, 300, 1000, 2000, 3000].into_iter();
        loop {
            let read: Result<ScopeResult> = self.core.db.read(|snap| {
                let mut result = scope_in(snap, &reach, ids, opts)?;
                if ids.len() == 1 && ids[0] == "engine/program" && self.core.db.is_shared() {
                    result.foreign = self.foreign_in(snap, &result)?;
                }
                Ok(result)
            });
            match read {
                Err(e) if e.code == ErrorCode::Internal && self.core.db.is_shared() => {
                    match waits.next() {
                        Some(ms) => pause(ms),
                        None => return Err(e),
                    }
                }
                read => return read,
            }
        }
    }

    /// The programs among a read's members that this engine's person does
    /// not take as their own ([`crate::Principal`]), as of the read.
    fn foreign_in(
        &self,
        snap: &Snapshot<'_>,
        read: &ScopeResult,
    ) -> Result<Vec<substrate::Foreign>> {
        let at = snap.as_of(read.as_of)?;
        let programs: Vec<crate::principal::Declared<'_>> = (read.chunks.iter())
            .filter(|c| c.body.is_some())
            .map(|c| crate::principal::Declared {
                id: &c.id,
                name: c.name.as_deref().unwrap_or_default(),
                body: c.body_value(),
            })
            .collect();
        let me = self.core.db.person();
        self.core.config.principal.foreign(&at, &me, &programs)
    }

    /// Commits `decl` for `ctx`: boundaries and protection judged on the
    /// state before it (inside the same transaction), then the spec rules.
    pub fn commit(&self, ctx: &Context, decl: Declaration) -> Result<Commit> {
        // (the caller's slot looked up once: its reach and its fence)
        let slot = ctx
            .process_id
            .as_deref()
            .and_then(|id| self.core.slots.get(id));
        let reach = match &slot {
            Some(slot) => slot.reach.clone(),
            None => self.reach(ctx)?,
        };
        let fence = slot.and_then(|slot| slot.fence.clone());
        let (process, user) = (ctx.process_id.as_deref(), ctx.on_behalf.as_deref());
        self.core
            .db
            .commit_for(decl.clone(), process, user, |snap| {
                crate::claim::check_fence(snap, &self.core.id, fence.as_ref())?;
                Judge::new(&mut View::new(snap), &reach, &[]).judge(&decl)
            })
    }

    /// Claims the queued run `process` (committed with a `placement`,
    /// waiting for an engine) for this engine, and starts it here: its
    /// lease in the substrate, renewed while this engine lives, and an
    /// epoch every commit for its tree is fenced by. Refused (`FENCED`)
    /// when another engine claimed it first or it ended.
    pub fn claim(&self, process: &str) -> Result<ProcessId> {
        process::claim(&self.core, self.clone(), process)
    }

    /// The queued runs waiting for an engine, oldest first, with their
    /// bodies.
    pub fn queued(&self) -> Result<Vec<(ProcessId, protocol::process::ProcessBody)>> {
        let mut out: Vec<_> = self.core.db.read(|snap| {
            Ok::<_, EngineError>(
                crate::claim::open_processes(snap)?
                    .into_iter()
                    .filter(|(_, body)| body.queued())
                    .collect::<Vec<_>>(),
            )
        })?;
        out.sort_by(|a, b| a.0.cmp(&b.0));
        Ok(out)
    }

    /// This engine's id (on every process it runs, and its lease's).
    pub fn id(&self) -> &str {
        &self.core.id
    }

    /// Starts `program` (a program chunk id or name) and returns the new
    /// process's id once it is running. See `docs/protocol.md`.
    pub fn run(&self, ctx: &Context, program: &str, args: RunArgs) -> Result<ProcessId> {
        let caller = self.reach(ctx)?;
        process::run(&self.core, self.clone(), ctx, caller, program, args)
    }

    /// Ends `process` with `error: "cancelled"`. Idempotent: an unknown or
    /// ended process is fine. A program may cancel only its descendants.
    pub fn cancel(&self, ctx: &Context, process: &str) -> Result<()> {
        if let Some(caller) = &ctx.process_id {
            let descends = self.core.db.read(|snap| {
                Ok::<_, EngineError>(
                    snap.exists(process)?
                        && snap.reaches_any(process, std::slice::from_ref(caller))?,
                )
            })?;
            let exists = self.core.db.read(|snap| snap.exists(process))?;
            if exists && (!descends || process == caller) {
                return Err(EngineError::boundary(format!(
                    "cannot cancel `{process}`: a program may cancel only processes it started, \
                     directly or through its descendants"
                )));
            }
        }
        match self.core.slots.get(process) {
            Some(slot) => slot.request_end("cancelled"),
            None => crate::claim::cancel_elsewhere(&self.core.db, process)?,
        }
        Ok(())
    }

    /// Waits until every process in `ids` has ended and its final status is
    /// committed; answers with each one's scope. A failed process is a
    /// result, not an error. While a process waits on its own descendants,
    /// its timeout clock stands still.
    pub async fn await_processes(
        &self,
        ctx: &Context,
        ids: &[ProcessId],
    ) -> Result<HashMap<ProcessId, ScopeResult>> {
        let reach = self.reach(ctx)?;
        let own_children = self.core.db.read(|snap| {
            let mut view = View::new(snap);
            let mut all_descend = true;
            for id in ids {
                if !snap.is_instance_of(id, "engine/process")? {
                    return Err(EngineError::not_found(format!("no process `{id}`")));
                }
                if !reach.read.admits(&mut view, id)? {
                    return Err(EngineError::boundary(format!(
                        "cannot await `{id}`: it is outside this process's read boundary"
                    )));
                }
                if let Some(caller) = &ctx.process_id {
                    all_descend &=
                        id != caller && snap.reaches_any(id, std::slice::from_ref(caller))?;
                }
            }
            Ok(all_descend)
        })?;
        let pause = match (&ctx.process_id, own_children) {
            (Some(caller), true) => self.core.slots.get(caller).map(|slot| slot.pause()),
            _ => None,
        };
        for id in ids {
            match self.core.slots.get(id) {
                Some(slot) => slot.ended().await,
                None => crate::claim::ended_elsewhere(&self.core, id).await?,
            }
        }
        drop(pause);
        let opts = ScopeOpts::default();
        self.core.db.read(|snap| {
            let mut out = HashMap::new();
            for id in ids {
                out.insert(
                    id.clone(),
                    scope_in(snap, &reach, std::slice::from_ref(id), &opts)?,
                );
            }
            Ok(out)
        })
    }

    /// Subscribes `ctx` to commits touching `scopes`; take the events with
    /// [`events`](Self::events). Each scope must be readable.
    pub fn subscribe(
        &self,
        ctx: &Context,
        scopes: &[String],
        opts: SubscribeOpts,
    ) -> Result<SubscriptionId> {
        let (tx, rx) = tokio::sync::mpsc::channel(crate::subs::HOST_QUEUE);
        let id = self.subscribe_to(ctx, scopes, opts, Sink::Events(tx))?;
        self.core.subs.park_receiver(&id, rx);
        Ok(id)
    }

    /// Ends a subscription (unknown ids are fine).
    pub fn unsubscribe(&self, sub_id: &str) {
        self.core.subs.remove(sub_id);
    }

    /// The events of a subscription made with [`subscribe`](Self::subscribe);
    /// `None` for an unknown id or when taken before.
    pub fn events(&self, sub_id: &str) -> Option<EventStream> {
        self.core.subs.take_receiver(sub_id)
    }

    /// What subscription `sub_id` was owed after commit `after` — every
    /// commit since that it matches, oldest first, filtered as it would
    /// have been sent — for a subscriber that got `lagged` to catch up
    /// from the store. `None` for an unknown subscription.
    pub fn missed(
        &self,
        sub_id: &str,
        after: substrate::CommitId,
    ) -> Result<Option<Vec<Arc<Commit>>>> {
        self.core.subs.missed(&self.core.db, sub_id, after)
    }

    /// Forwards `data` from process `from`, unpersisted, to subscribers of
    /// it, of its ancestor processes, and of the scopes those sit on.
    pub fn notify(&self, from: &str, data: Value) -> Result<()> {
        self.core.subs.notify(&self.core.db, from, data)
    }

    /// A protocol client with host reach, in this process (an in-memory
    /// pipe to [`serve_host`]): code written against
    /// the protocol — the agent's request rebuild, say — runs on a host's
    /// engine unchanged.
    pub fn host_client(&self) -> (protocol::Client, protocol::Events) {
        let (ours, theirs) = tokio::io::duplex(1 << 20);
        let (read, write) = tokio::io::split(theirs);
        tokio::spawn(serve_host(self.clone(), read, write));
        let (read, write) = tokio::io::split(ours);
        protocol::Client::connect(read, write)
    }

    /// Starts the service `program` (a program chunk id or name, runtime
    /// `service`) unless it is running, and waits — at most `timeout_ms`,
    /// 10 s by default — until it says it is ready; answers its process.
    pub async fn service(
        &self,
        ctx: &Context,
        program: &str,
        timeout_ms: Option<u64>,
    ) -> Result<ProcessId> {
        let reach = self.reach(ctx)?;
        let id = self.core.db.read(|snap| {
            let id = crate::plan::resolve_program(snap, program)?;
            if !reach.read.admits(&mut View::new(snap), &id)? {
                return Err(EngineError::boundary(format!(
                    "cannot start `{id}`: the program is outside this process's read boundary"
                )));
            }
            Ok(id)
        })?;
        let service = self.core.services.get(&id);
        let wait = Duration::from_millis(timeout_ms.unwrap_or(SERVICE_WAIT_MS));
        let start = |args| process::start_service(&self.core, self.clone(), &id, args);
        match tokio::time::timeout(wait, service.ensure(start)).await {
            Ok(ready) => ready.map(|(process, _)| process),
            Err(_) => Err(EngineError::new(
                protocol::ErrorCode::RunFailed,
                format!(
                    "service `{id}` was not ready within {} ms",
                    wait.as_millis()
                ),
            )),
        }
    }

    /// Cancels every running process and waits for them to end.
    pub async fn shutdown(&self) {
        for slot in self.core.slots.all() {
            slot.request_end("cancelled");
        }
        for slot in self.core.slots.all() {
            slot.ended().await;
        }
        self.core.subs.clear();
        crate::claim::release_lease(&self.core);
        if let Some(tree) = &self.core.effects {
            tree.save();
        }
    }
}

impl Engine {
    /// A one-time slot token for the tile of webview process `process`
    /// (a host's to ask: it mounts the tile), and the page it shows.
    pub fn tile_token(&self, ctx: &Context, process: &str) -> Result<(String, String)> {
        if ctx.process_id.is_some() {
            return Err(EngineError::boundary(
                "slot tokens are for hosts: the host mounts tiles",
            ));
        }
        self.core.tiles.issue(process)
    }

    /// Closes the tile of `process` as a person closing it does: its run
    /// completes.
    pub fn close_tile(&self, ctx: &Context, process: &str) -> Result<()> {
        if ctx.process_id.is_some() {
            return Err(EngineError::boundary("a tile is closed by its host"));
        }
        let slot = self.core.slots.get(process).ok_or_else(|| {
            EngineError::not_found(format!("`{process}` is not a running webview program"))
        })?;
        slot.request_finish(crate::slot::Finish::completed());
        Ok(())
    }

    /// Serves the protocol to a tile over `input`/`output`, bound to the
    /// process `token` was issued for (a token is spent once): every
    /// request is judged against that process's boundaries; a line that is
    /// not JSON is answered `INVALID_REQUEST` and the tile goes on. When
    /// the input ends the tile's socket is gone (its process waits out the
    /// grace for another). Answers at once with the refusal of a bad token.
    pub async fn serve_tile<R, W>(&self, token: &str, input: R, output: W) -> Result<()>
    where
        R: tokio::io::AsyncRead + Unpin,
        W: tokio::io::AsyncWrite + Unpin + Send + 'static,
    {
        let process = self.core.tiles.attach(token)?;
        let (out_tx, out_rx) = tokio::sync::mpsc::channel::<String>(crate::connection::OUT_QUEUE);
        let writer = tokio::spawn(crate::connection::pump(out_rx, output));
        let connection = Arc::new(crate::connection::Connection::new(
            self.clone(),
            Context::process(process.clone()),
            out_tx,
            true,
            None,
        ));
        connection.serve(input).await;
        connection.close();
        drop(connection);
        self.core.tiles.detach(&process);
        let _ = writer.await;
        Ok(())
    }
}

/// Serves the protocol to a host over `input`/`output` with full reach —
/// what `hc serve --stdio` runs. Returns when the input ends.
pub async fn serve_host<R, W>(engine: Engine, input: R, output: W)
where
    R: tokio::io::AsyncRead + Unpin,
    W: tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    crate::connection::serve_host(engine, Context::host(), input, output).await;
}

/// [`serve_host`] for a host acting for `ctx`'s person (a page user):
/// what it commits and starts records them.
pub async fn serve_host_as<R, W>(engine: Engine, ctx: Context, input: R, output: W)
where
    R: tokio::io::AsyncRead + Unpin,
    W: tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    crate::connection::serve_host(engine, ctx, input, output).await;
}

impl Ops for Engine {
    fn scope(&self, ctx: &Context, ids: &[String], opts: &ScopeOpts) -> Result<ScopeResult> {
        Engine::scope(self, ctx, ids, opts)
    }

    fn commit(&self, ctx: &Context, decl: Declaration) -> Result<Commit> {
        Engine::commit(self, ctx, decl)
    }

    fn run(&self, ctx: &Context, program: &str, args: RunArgs) -> Result<ProcessId> {
        Engine::run(self, ctx, program, args)
    }

    fn cancel(&self, ctx: &Context, process: &str) -> Result<()> {
        Engine::cancel(self, ctx, process)
    }

    fn await_processes(
        &self,
        ctx: &Context,
        ids: &[ProcessId],
    ) -> impl Future<Output = Result<HashMap<ProcessId, ScopeResult>>> + Send {
        Engine::await_processes(self, ctx, ids)
    }

    fn subscribe_to(
        &self,
        ctx: &Context,
        scopes: &[String],
        opts: SubscribeOpts,
        sink: Sink,
    ) -> Result<SubscriptionId> {
        if scopes.is_empty() {
            return Err(EngineError::invalid("subscribe needs at least one scope"));
        }
        let reach = self.reach(ctx)?;
        self.core.db.read(|snap| {
            let mut view = View::new(snap);
            for id in scopes {
                if id == COMMITS_ROOT {
                    if !reach.is_host() {
                        return Err(EngineError::boundary("`commits_root` is for hosts only"));
                    }
                    continue;
                }
                if !snap.exists(id)? {
                    return Err(EngineError::not_found(format!(
                        "cannot subscribe to `{id}`: no such chunk"
                    )));
                }
                if !reach.read.admits(&mut view, id)? {
                    return Err(EngineError::boundary(format!(
                        "cannot subscribe to `{id}`: it is outside this process's read boundary"
                    )));
                }
            }
            Ok(())
        })?;
        Ok(self.core.subs.add(
            ctx.process_id.clone(),
            scopes.to_vec(),
            opts.deep,
            reach.read,
            sink,
        ))
    }

    fn unsubscribe(&self, id: &str) {
        Engine::unsubscribe(self, id)
    }

    fn notify(&self, from: &str, data: Value) -> Result<()> {
        Engine::notify(self, from, data)
    }

    async fn finish(&self, ctx: &Context, how: crate::slot::Finish) -> Result<()> {
        let Some(process) = &ctx.process_id else {
            return Err(EngineError::invalid(
                "finish is for programs: a host has no run of its own to end",
            ));
        };
        let Some(slot) = self.core.slots.get(process) else {
            return Err(EngineError::invalid(format!(
                "`{process}` has already ended"
            )));
        };
        slot.request_finish(how);
        slot.ended().await;
        Ok(())
    }

    async fn service(
        &self,
        ctx: &Context,
        program: &str,
        timeout_ms: Option<u64>,
    ) -> Result<ProcessId> {
        Engine::service(self, ctx, program, timeout_ms).await
    }
}

/// Waits `ms` on this thread — handed over as blocking when it is a
/// Tokio worker's (the store's own reads do so), so the runtime's other
/// tasks go on meanwhile.
fn pause(ms: u64) {
    let wait = || std::thread::sleep(std::time::Duration::from_millis(ms));
    match tokio::runtime::Handle::try_current().map(|h| h.runtime_flavor()) {
        Ok(tokio::runtime::RuntimeFlavor::MultiThread) => tokio::task::block_in_place(wait),
        _ => wait(),
    }
}

/// A read as `reach` may, on `snap`.
pub(crate) fn scope_in(
    snap: &Snapshot<'_>,
    reach: &Reach,
    ids: &[String],
    opts: &ScopeOpts,
) -> Result<ScopeResult> {
    if !reach.is_host() {
        if ids.iter().any(|id| id == COMMITS_ROOT) {
            return Err(EngineError::boundary(
                "`commits_root` is for hosts only: commit records name chunks outside any program's boundary",
            ));
        }
        if ids.is_empty() && !reach.read.is_open() {
            return Err(EngineError::boundary(
                "a read of the whole substrate needs an open read boundary; name the scopes to read",
            ));
        }
        let at = match opts.as_of {
            Some(n) => snap.as_of(n)?,
            None => snap.as_of(snap.head_id())?,
        };
        let mut view = View::new(&at);
        for id in ids.iter().chain(&opts.exclude) {
            if at.exists(id)? && !reach.read.admits(&mut view, id)? {
                return Err(EngineError::boundary(format!(
                    "cannot read `{id}`: it is outside this process's read boundary"
                )));
            }
        }
    }
    let mut result = snap.scope(ids, opts)?;
    if !reach.read.is_open() {
        let at = snap.as_of(result.as_of)?;
        let mut view = View::new(&at);
        let items: Vec<&substrate::ChunkItem> = result
            .scopes
            .iter()
            .chain(&result.chunks)
            .map(|a| a.as_ref())
            .collect();
        result.topology = topology(&mut view, &items, &reach.read)?;
    }
    Ok(result)
}

/// The boundaries stored with a process (for a process with no live slot).
pub(crate) fn load_reach(snap: &Snapshot<'_>, process: &str) -> Result<Reach> {
    if !snap.is_instance_of(process, "engine/process")? {
        return Err(EngineError::not_found(format!("no process `{process}`")));
    }
    let related = snap.scope(
        &[process.to_owned()],
        &ScopeOpts {
            kind: TypeFilter::Relates,
            ..ScopeOpts::default()
        },
    )?;
    let mut reach = Reach::default();
    for item in &related.chunks {
        let levels: Vec<Boundary> =
            serde_json::from_value(item.body_value()["levels"].clone()).unwrap_or_default();
        let side = EffectiveBoundary {
            own: Some(process.to_owned()),
            levels,
        };
        if item.is_on("read-boundary", PlacementType::Instance) {
            reach.read = side;
        } else if item.is_on("write-boundary", PlacementType::Instance) {
            reach.write = side;
        }
    }
    Ok(reach)
}
