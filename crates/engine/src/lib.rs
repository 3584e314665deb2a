//! # engine
//!
//! The authority on running programs against the substrate
//! (`docs/protocol.md`). A program is a chunk with an
//! executable; to run one is to create a process: one atomic commit makes
//! the process chunk, its read- and write-boundary chunks and its argument
//! chunks; then the executable is spawned in its own process group and
//! speaks JSON lines on its stdio. Every request it makes is judged against
//! its effective boundary — a stack of levels that only narrows down the
//! call stack — before the substrate sees it.
//!
//! Main types: [`Engine`] (`open`, `scope`, `commit`, `run`, `cancel`,
//! `await_processes`, `subscribe`, `events`, `notify`, `shutdown`),
//! [`Context`] (host or process), [`EngineError`], and
//! [`boundary::EffectiveBoundary`].
//!
//! Invariants:
//! * A process chunk exists before its program runs; its terminal status is
//!   committed before anyone awaiting it wakes.
//! * A child never outlives its parent (`"parent ended"`, recursively); a
//!   program's own forks die with its process group.
//! * Every read and write a program makes is checked: `BOUNDARY_VIOLATION`
//!   is explicit, never a silently empty read.
//! * Every `vm` program runs contained (`contain`): Landlock, seccomp and
//!   namespaces from its declared capabilities, unless the person opted out.
//! * The engine knows nothing of models: the agent is one program among many.
//!
//! A host's day: open the engine on a substrate, run a program, follow its
//! process, await its end.
//!
//! ```
//! # #[tokio::main(flavor = "multi_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use engine::{Context, Engine, EngineConfig, contain::Containment};
//! use protocol::{Event, RunArgs, SubscribeOpts};
//! use serde_json::json;
//! use substrate::{ChunkDecl, Declaration, NewPlacement, Substrate};
//!
//! let dir = tempfile::tempdir()?;
//! let db = std::sync::Arc::new(Substrate::open(dir.path().join("substrate.db"))?);
//! db.init(engine::vocabulary())?;
//! let mut config = EngineConfig::new(dir.path());
//! config.containment = Containment::Off; // no trampoline in a doc test
//! let engine = Engine::open_with(db, config)?;
//! let host = Context::host();
//! // A program: any executable; `true` answers nothing and exits 0.
//! let body = json!({"executable": "true", "runtime": "vm", "text": "does nothing"});
//! engine.commit(&host, Declaration::of(vec![ChunkDecl::with_id("program/true")
//!     .name("true").body(body).on(NewPlacement::instance("engine/program"))]))?;
//!
//! // Subscribed first to the program's runs: a run of `true` may end
//! // before a subscription to its process alone could be made.
//! let sub = engine.subscribe(&host, &["program/true".to_owned()], SubscribeOpts::default())?;
//! let mut events = engine.events(&sub).expect("a new subscription's events");
//! let process = engine.run(&host, "true", RunArgs::default())?;
//! let done = engine.await_processes(&host, &[process.clone()]).await?;
//! assert_eq!(done[&process].scopes[0].body_value()["status"], "completed");
//! // Its runs reached the subscriber as commits touching the program.
//! let wait = std::time::Duration::from_secs(10);
//! let event = tokio::time::timeout(wait, events.recv()).await?;
//! assert!(matches!(event, Some(Event::ScopeChanged { .. })));
//! # engine.shutdown().await;
//! # Ok(()) }
//! ```

pub mod boundary;
mod claim;
mod clock;
mod config;
mod connection;
mod core;
mod engine;
mod error;
pub mod file_effects;
mod judge;
mod lease;
mod plan;
mod principal;
mod process;
mod services;
mod slot;
mod subs;
mod tiles;
mod vocabulary;

#[cfg(feature = "bench")]
pub use config::Levers;
pub use config::{AddDirs, Context, EngineConfig, ProcessId, SubscriptionId, Tracing};
/// Containment, which the engine applies to every `vm` program (its own
/// crate; re-exported so a host names one version of it).
pub use contain;
pub use effects;
pub use engine::{Engine, serve_host, serve_host_as};
pub use error::{EngineError, Result};
pub use judge::Judge;
pub use principal::Principal;

pub use claim::{
    ENGINE_TYPE, LEASE_MS, cancel_elsewhere as stop_run, fail_gone, host_name, process_gone,
};
pub use process::STDERR_TAIL_BYTES;
pub use process::queue::{note_queued, queue_run, refuse_queued};
pub use subs::EventStream;
pub use vocabulary::vocabulary;
