//! # substrate
//!
//! The one store everything in hermitcrab lives in: **chunks** (a type, a
//! program, a process, a session, a prompt — anything) placed on other
//! chunks (**scopes**) by **placements**, constrained by **specs**, changed
//! only by atomic **commits**, and read by **scope reads** — at head or as
//! the store stood after any earlier commit. The full specification is
//! `docs/substrate.md`; this crate implements it on SQLite.
//!
//! Main types: [`Substrate`] (open, [`commit`](Substrate::commit),
//! [`scope`](Substrate::scope), [`subscribe`](Substrate::subscribe),
//! [`init`](Substrate::init)); [`Declaration`] and [`Commit`];
//! [`ScopeOpts`] and [`ScopeResult`]; [`Snapshot`] for several reads (and
//! the engine's boundary checks) on one consistent state.
//!
//! Invariants:
//! * A commit is one SQLite transaction: it happens entirely or not at all,
//!   and a crash of any process leaves the file consistent.
//! * History is never deleted: removal ends rows, so every past commit can
//!   be read back exactly (`ScopeOpts::as_of`).
//! * Spec rules are judged on the state the whole declaration produces.
//! * The substrate knows nothing of programs, processes or boundaries; it
//!   offers the engine a guard hook inside the write transaction instead.
//!
//! Without the default `storage` feature the crate is only the data types,
//! shared with programs through the protocol crate.
//!
//! ```
//! use substrate::{ChunkDecl, Declaration, NewPlacement, ScopeOpts, Substrate};
//! use serde_json::json;
//!
//! let dir = tempfile::tempdir()?;
//! let db = Substrate::open(dir.path().join("substrate.db"))?;
//! db.init(vec![
//!     ChunkDecl::with_id("session").spec(json!({"propagate": true, "ordered": true})),
//!     ChunkDecl::with_id("prompt").spec(json!({"required": ["text"]})),
//! ])?;
//! let session = ChunkDecl::with_id("s_1").name("chat").on(NewPlacement::instance("session"));
//! let prompt = ChunkDecl::generated()
//!     .body(json!({"text": "fix the failing test"}))
//!     .on(NewPlacement::instance("s_1"))
//!     .on(NewPlacement::instance("prompt"));
//! let commit = db.commit(Declaration::of(vec![session, prompt]), None)?;
//! let read = db.scope(&["s_1"], &ScopeOpts::default())?;
//! assert_eq!(read.chunks.len(), 1);
//! assert_eq!(read.chunks[0].id, commit.created[1]);
//! assert_eq!(read.chunks[0].placements[0].seq, Some(0));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod bootstrap;
mod error;
pub mod ids;
mod json;
pub mod spec;
#[cfg(feature = "storage")]
mod store;
mod types;

pub use error::{Error, Result};
pub use json::Json;
#[cfg(feature = "storage")]
pub use store::{
    DEFAULT_LIMIT, Durability, MAX_BODY_BYTES, Options, SCHEMA_VERSION, Signer, Snapshot,
    StoreInfo, Substrate,
};
pub use types::*;

/// A PostgreSQL store's URL as it may be shown to a person: what it
/// names, never a password.
#[cfg(feature = "storage")]
pub fn shown_store(url: &str) -> String {
    store::shown_store(url)
}
