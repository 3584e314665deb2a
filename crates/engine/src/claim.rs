//! Claims on queued runs, kept in the substrate (`design/scale.md`, "Runs
//! anywhere"): the engine that claims a run writes its lease — an
//! `engine/engine` chunk whose id is the engine's, naming its host, its pid
//! and an expiry it renews every few seconds — and stamps the run with its
//! id and an epoch. A commit made for a claimed run (or any run of its
//! tree) lands only while the run is still that engine's under that epoch
//! and has not ended: an engine cut off past its lease is fenced. Whoever
//! finds an engine gone — its lease expired, or on this host its lock file
//! let go — fails its runs `engine lost`.

use crate::config::ProcessId;
use crate::core::Core;
use crate::error::{EngineError, Result};
use protocol::ErrorCode;
use protocol::process::{LeaseBody, ProcessBody};
use serde_json::json;
use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;
use substrate::{ChunkDecl, Declaration, NewPlacement, ScopeOpts, Snapshot, Substrate};

/// The type of an engine's lease chunk.
pub const ENGINE_TYPE: &str = "engine/engine";

pub use crate::config::LEASE_MS;

pub(crate) use crate::slot::Fence;

/// Refuses (`FENCED`) a commit for a run fenced by `fence` unless its root
/// is still `engine`'s, under the same epoch, and has not ended — judged on
/// the state the commit lands on.
pub(crate) fn check_fence(snap: &Snapshot<'_>, engine: &str, fence: Option<&Fence>) -> Result<()> {
    let Some(fence) = fence else {
        return Ok(());
    };
    let body = ProcessBody::parse(&snap.body(&fence.root)?.unwrap_or_default());
    let why = if body.status.ended() {
        format!(
            "it has ended ({})",
            body.error.as_deref().unwrap_or(body.status.as_str())
        )
    } else if body.engine.as_deref() != Some(engine) {
        format!(
            "engine `{}` holds it now",
            body.engine.as_deref().unwrap_or("none")
        )
    } else if body.epoch != Some(fence.epoch) {
        format!(
            "it was claimed again (epoch {} after {})",
            body.epoch.unwrap_or(0),
            fence.epoch
        )
    } else {
        return Ok(());
    };
    Err(EngineError::new(
        ErrorCode::Fenced,
        format!(
            "run `{}` is no longer this engine's: {why}; nothing was written",
            fence.root
        ),
    ))
}

/// Milliseconds since the Unix epoch.
pub(crate) fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// This machine's name (read once): `HC_HOST` when set (a name a team
/// knows it by), else the kernel's host name.
pub fn host_name() -> String {
    static NAME: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    NAME.get_or_init(|| {
        let named = std::env::var("HC_HOST").ok().map(|n| n.trim().to_owned());
        if let Some(name) = named.filter(|n| !n.is_empty() && n.len() <= 64) {
            return name;
        }
        std::fs::read_to_string("/proc/sys/kernel/hostname")
            .map(|n| n.trim().to_owned())
            .ok()
            .filter(|n| !n.is_empty())
            .unwrap_or_else(|| "localhost".into())
    })
    .clone()
}

/// The store's clock now (see `Snapshot::now_ms`), or this machine's
/// when the store cannot be read.
pub(crate) fn store_now(db: &Substrate) -> u64 {
    db.read(|snap| snap.now_ms()).unwrap_or_else(|_| now_ms())
}

/// The lease body of an engine renewing now: its expiry by the store's
/// clock, so hosts whose clocks differ judge it alike.
pub(crate) fn lease_body(core: &Core) -> serde_json::Value {
    let body = LeaseBody {
        host: host_name(),
        pid: std::process::id(),
        expires_ms: store_now(&core.db) + core.config.lease_ms,
    };
    serde_json::to_value(body).unwrap_or_default()
}

/// Lets go of `core`'s lease, if it took one: its expiry now, so whoever
/// looks next finds it gone at once (an engine that ends cleanly).
pub(crate) fn release_lease(core: &Core) {
    // (taken back first: the renewer stops renewing)
    let made = std::mem::take(
        &mut *core
            .leased
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner),
    );
    if !made {
        return;
    }
    let released = ChunkDecl::with_id(&core.id).merge_body(json!({"expires_ms": 0}));
    if let Err(e) = core.db.commit(Declaration::of(vec![released]), None) {
        tracing::debug!("cannot release engine {}'s lease: {e}", core.id);
    }
}

/// Makes `core`'s lease chunk (once) and starts renewing it for as long
/// as the engine lives.
pub(crate) fn ensure_lease(core: &Arc<Core>) -> Result<()> {
    let mut made = core
        .leased
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if *made {
        return Ok(());
    }
    let chunk = ChunkDecl::with_id(&core.id)
        .name(format!("engine {}", core.id))
        .create_only()
        .body(lease_body(core))
        .on(NewPlacement::instance(ENGINE_TYPE));
    core.db.commit(Declaration::of(vec![chunk]), None)?;
    *made = true;
    let weak = Arc::downgrade(core);
    let every = Duration::from_millis((core.config.lease_ms / 5).max(50));
    tokio::spawn(async move {
        loop {
            tokio::time::sleep(every).await;
            let Some(core) = weak.upgrade() else {
                return;
            };
            let held = *core
                .leased
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            if !held {
                return;
            }
            let renewing = Arc::clone(&core);
            let done = tokio::task::spawn_blocking(move || {
                let renewed = ChunkDecl::with_id(&renewing.id).merge_body(lease_body(&renewing));
                renewing.db.commit(Declaration::of(vec![renewed]), None)
            })
            .await;
            if let Ok(Err(e)) = done {
                tracing::warn!("cannot renew engine {}'s lease: {e}", core.id);
            }
        }
    });
    Ok(())
}

/// Judges engines gone, each once. On a shared store (a server many
/// hosts use) by their leases in the substrate alone, against the store's
/// clock: expired is gone. In a file on this machine by their lock files
/// in `leases` (a machine that slept past a lease has not lost its runs).
pub(crate) struct Judged<'a> {
    leases: &'a Path,
    here: String,
    /// Whether the store is shared (judged by leases only).
    shared: bool,
    /// The store's clock, read once when a lease is first judged.
    now: Option<u64>,
    seen: HashMap<String, bool>,
}

impl<'a> Judged<'a> {
    pub fn new(leases: &'a Path, shared: bool) -> Judged<'a> {
        Judged {
            leases,
            here: host_name(),
            shared,
            now: None,
            seen: HashMap::new(),
        }
    }

    /// Whether `engine`, which runs a process on `host` (when the process
    /// says), is gone, and whether it held a lease in the substrate (its
    /// runs are then `engine lost`). An engine on another host with no
    /// lease in the substrate cannot be judged from here: it is not gone.
    pub fn gone(
        &mut self,
        snap: &Snapshot<'_>,
        engine: &str,
        host: Option<&str>,
    ) -> Result<(bool, bool)> {
        let lease = snap
            .body(engine)?
            .filter(|_| snap.is_instance_of(engine, ENGINE_TYPE).unwrap_or(false))
            .and_then(|b| serde_json::from_value::<LeaseBody>(b).ok());
        if let Some(known) = self.seen.get(engine) {
            return Ok((*known, lease.is_some()));
        }
        let elsewhere = host.is_some_and(|h| h != self.here);
        let gone = match &lease {
            Some(lease) if self.shared || lease.host != self.here => {
                let now = match self.now {
                    Some(now) => now,
                    None => *self.now.insert(snap.now_ms()?),
                };
                lease.expires_ms < now
            }
            Some(_) => crate::lease::gone(self.leases, engine),
            // (an engine of another host that never took a lease cannot
            // be judged from here)
            None if elsewhere => false,
            None => crate::lease::gone(self.leases, engine),
        };
        self.seen.insert(engine.to_owned(), gone);
        Ok((gone, lease.is_some()))
    }
}

/// Every process not ended, with its body.
pub(crate) fn open_processes(snap: &Snapshot<'_>) -> Result<Vec<(String, ProcessBody)>> {
    if !snap.exists("engine/process")? {
        return Ok(Vec::new());
    }
    let found = snap.scope(
        &["engine/process".to_owned()],
        &ScopeOpts {
            match_: Some("pending OR running".into()),
            limit: Some(usize::MAX),
            ..ScopeOpts::default()
        },
    )?;
    Ok(found
        .chunks
        .iter()
        .map(|c| (c.id.clone(), ProcessBody::parse(&c.body_value())))
        .filter(|(_, body)| !body.status.ended())
        .collect())
}

/// Fails every process whose engine is gone — `engine lost` where that
/// engine held a lease in the substrate (it claimed queued runs),
/// `engine restart` otherwise — leaving queued runs to wait. A lost run
/// that asked `retry = "turn"` and whose program said it can go on from
/// what it recorded (`resumable`) waits again instead, noted so. Each is
/// changed only if it is as it was found (the commit's guard), so a run
/// claimed or ended meanwhile is left alone. Answers those failed.
pub fn fail_gone(db: &Substrate) -> Result<Vec<ProcessId>> {
    let leases = crate::lease::dir_of(db.path());
    let found: Vec<(String, ProcessBody, &'static str)> = db.read(|snap| {
        let mut judged = Judged::new(&leases, db.is_shared());
        let mut out = Vec::new();
        for (id, body) in open_processes(snap)? {
            if body.queued() {
                continue;
            }
            let Some(engine) = body.engine.clone() else {
                out.push((id, body, "engine restart"));
                continue;
            };
            let (gone, leased) = judged.gone(snap, &engine, body.host.as_deref())?;
            if gone {
                let why = if leased {
                    "engine lost"
                } else {
                    "engine restart"
                };
                out.push((id, body, why));
            }
        }
        Ok::<_, EngineError>(out)
    })?;
    if found.is_empty() {
        return Ok(Vec::new());
    }
    let ended = crate::clock::now();
    let chunks = found
        .iter()
        .map(|(id, body, why)| match again(body, why) {
            true => ChunkDecl::with_id(id).merge_body(json!({
                "status": "pending", "engine": null, "pid": null, "started": null,
                "root": null, "stop": null,
                "note": format!(
                    "re-queued from its last whole turn: its engine was lost (on {})",
                    body.host.as_deref().unwrap_or("another host")
                ),
            })),
            false => ChunkDecl::with_id(id)
                .merge_body(json!({"status": "failed", "error": why, "ended": ended})),
        })
        .collect();
    let unchanged = |snap: &Snapshot<'_>| {
        for (id, was, _) in &found {
            let now = ProcessBody::parse(&snap.body(id)?.unwrap_or_default());
            if now.status != was.status || now.engine != was.engine || now.epoch != was.epoch {
                return Err(EngineError::invalid("changed since it was judged"));
            }
        }
        Ok(())
    };
    if let Err(e) = db.commit_with(Declaration::of(chunks), None, unchanged) {
        tracing::debug!("not failing gone engines' processes now: {e}");
        return Ok(Vec::new());
    }
    let requeued = found.iter().filter(|(_, b, why)| again(b, why)).count();
    if requeued > 0 {
        tracing::info!("re-queued {requeued} run(s) of lost engines from their last whole turn");
    }
    let ids: Vec<ProcessId> = found.into_iter().map(|(id, _, _)| id).collect();
    for id in &ids {
        // What the engine that ran them never got to clean up.
        contain::remove_temp_dirs(id);
    }
    tracing::info!("marked {} process(es) of gone engines failed", ids.len());
    Ok(ids)
}

/// Whether a run found lost (`why`) waits again instead of failing: it
/// asked `retry = "turn"` and its program said it can go on from what it
/// recorded.
fn again(body: &ProcessBody, why: &str) -> bool {
    why == "engine lost"
        && body.resumable != Some(false)
        && body
            .placement
            .as_ref()
            .is_some_and(|p| p.retry.as_deref() == Some("turn"))
}

/// Whether `process` — not ended — is held by an engine that is gone
/// (queued runs wait for one: never gone).
pub fn process_gone(db: &Substrate, process: &ProcessBody) -> bool {
    if process.status.ended() || process.queued() {
        return false;
    }
    let Some(engine) = process.engine.as_deref() else {
        return true;
    };
    let leases = crate::lease::dir_of(db.path());
    let host = process.host.as_deref();
    db.read(|snap| {
        Judged::new(&leases, db.is_shared())
            .gone(snap, engine, host)
            .map(|(gone, _)| gone)
    })
    .unwrap_or(false)
}

/// Waits until `process`, which no slot of this engine holds, has ended
/// as the substrate says — following other engines' commits, and failing
/// its engine's runs once that engine is found gone.
pub(crate) async fn ended_elsewhere(core: &Arc<Core>, process: &str) -> Result<()> {
    let mut commits = core.db.subscribe();
    let mut tick = tokio::time::interval(Duration::from_millis(100));
    let mut checks = 0u32;
    loop {
        let body = core.db.read(|snap| {
            Ok::<_, EngineError>(ProcessBody::parse(&snap.body(process)?.unwrap_or_default()))
        })?;
        // (a run this engine carried, ended here: its end may have been
        // fenced, and nothing more comes from here)
        let ours = body.engine.as_deref() == Some(core.id.as_str());
        if body.status.ended() || (ours && core.slots.get(process).is_none()) {
            return Ok(());
        }
        checks += 1;
        if checks.is_multiple_of(10) && process_gone(&core.db, &body) {
            let db = Arc::clone(&core.db);
            let _ = tokio::task::spawn_blocking(move || fail_gone(&db)).await;
            continue;
        }
        tokio::select! {
            _ = tick.tick() => {
                let db = Arc::clone(&core.db);
                let _ = tokio::task::spawn_blocking(move || db.follow()).await;
            }
            got = commits.recv() => {
                if let Err(tokio::sync::broadcast::error::RecvError::Closed) = got {
                    return Err(EngineError::internal("the substrate closed"));
                }
            }
        }
    }
}

/// Ends `process` where it runs: a queued run fails `cancelled` at once;
/// a running one is asked to stop (`stop` in its body: the engine that
/// holds it ends it on seeing that). An ended or unknown process: nothing
/// to do. (An engine ends its own runs itself: `Engine::cancel`.)
pub fn cancel_elsewhere(db: &Substrate, process: &str) -> Result<()> {
    let body = db.read(|snap| Ok::<_, EngineError>(snap.body(process)?))?;
    let Some(body) = body.map(|b| ProcessBody::parse(&b)) else {
        return Ok(());
    };
    if body.status.ended() {
        return Ok(());
    }
    let decl = if body.queued() {
        json!({"status": "failed", "error": "cancelled", "ended": crate::clock::now()})
    } else {
        json!({"stop": "cancelled"})
    };
    let same = |snap: &Snapshot<'_>| {
        let now = ProcessBody::parse(&snap.body(process)?.unwrap_or_default());
        if now.status != body.status || now.engine != body.engine {
            return Err(EngineError::invalid(format!(
                "`{process}` changed meanwhile: ask again"
            )));
        }
        Ok(())
    };
    let chunk = ChunkDecl::with_id(process).merge_body(decl);
    db.commit_with(Declaration::of(vec![chunk]), None, same)?;
    Ok(())
}

/// Ends `slot`'s run when a host elsewhere asks it to stop (`stop` merged
/// into its process chunk), for as long as it runs.
pub(crate) fn watch_stop(core: &Arc<Core>, slot: Arc<crate::slot::Slot>) {
    let mut commits = core.db.subscribe();
    let db = Arc::clone(&core.db);
    tokio::spawn(async move {
        // (a stop that came before this subscription is read first)
        let mut first = true;
        loop {
            if std::mem::take(&mut first) {
                if let Some(reason) = stop_asked(&db, &slot.id) {
                    slot.request_end(&reason);
                }
                continue;
            }
            tokio::select! {
                () = slot.ended() => return,
                got = commits.recv() => match got {
                    Ok(commit) if !commit.chunks_modified.contains(&slot.id) => continue,
                    Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
                    _ => {}
                },
            }
            if let Some(reason) = stop_asked(&db, &slot.id) {
                slot.request_end(&reason);
            }
        }
    });
}

/// The stop a host asked of `process`, if one did.
fn stop_asked(db: &Substrate, process: &str) -> Option<String> {
    db.read(|snap| Ok::<_, EngineError>(snap.body(process)?))
        .ok()
        .flatten()
        .and_then(|b| ProcessBody::parse(&b).stop)
}
