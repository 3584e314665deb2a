//! # engine
//!
//! The authority on running programs against the substrate
//! (`seeds/engine.txt`, `design/protocol.md`). A program is a chunk with an
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

pub mod boundary;
mod clock;
mod config;
mod connection;
mod core;
mod engine;
mod error;
mod judge;
mod plan;
mod process;
mod slot;
mod subs;
mod vocabulary;

pub use config::{Context, EngineConfig, ProcessId, SubscriptionId};
/// Containment, which the engine applies to every `vm` program (its own
/// crate; re-exported so a host names one version of it).
pub use contain;
pub use engine::{Engine, serve_host};
pub use error::{EngineError, Result};
pub use judge::Judge;
pub use process::STDERR_TAIL_BYTES;
pub use subs::EventStream;
pub use vocabulary::vocabulary;
