//! # protocol
//!
//! The one protocol every hermitcrab program speaks, in any language:
//! JSON objects, one per line, over the program's stdin (engine → program)
//! and stdout (program → engine). `docs/protocol.md` is the spec; this
//! crate is its types ([`Request`], [`Op`], [`Response`], [`Event`],
//! [`ErrorCode`], and the substrate's `Declaration`, `Commit` and
//! `ScopeResult`) and a Rust SDK ([`Client`]) for programs and hosts.
//!
//! Invariants: serializing any type here yields exactly the JSON of the spec
//! page (the tests compare against its literal examples); [`Request::parse`]
//! never panics, whatever bytes it is given.
//!
//! ```no_run
//! # async fn program() -> Result<(), protocol::ClientError> {
//! use protocol::Client;
//! use substrate::ScopeOpts;
//! let (engine, _events) = Client::from_stdio();
//! let me = protocol::env::process_id().unwrap_or_default();
//! let args = engine.scope(&[me.as_str()], ScopeOpts::default()).await?;
//! println!("{} argument chunk(s)", args.chunks.len());
//! # Ok(()) }
//! ```

mod client;
pub mod origin;
pub mod paths;
pub mod process;
pub mod program;
pub mod schema;
pub mod trace;
mod wire;

pub use client::{Client, ClientError, Events, ServedRun, run_args};
pub use substrate::{
    ChunkDecl, ChunkItem, Commit, Declaration, NewPlacement, PlacementType, ScopeOpts, ScopeResult,
};
pub use wire::*;

/// The environment a program is started with.
pub mod env {
    /// The program's process chunk id.
    pub const PROCESS_ID: &str = "HC_PROCESS_ID";
    /// The protocol version, `1`.
    pub const PROTOCOL: &str = "HC_PROTOCOL";
    /// The project root directory.
    pub const PROJECT_ROOT: &str = "HC_PROJECT_ROOT";
    /// What the program may touch in this run, as JSON: `{"read": "all" |
    /// [absolute paths], "write": [absolute paths], "network": bool}` — so
    /// a program can refuse a path itself, with a message, before
    /// containment would.
    pub const CAPABILITIES: &str = "HC_CAPABILITIES";
    /// Set (to anything): a typed program commits its result and then
    /// exits, for the engine to commit its end — the two steps `finish`
    /// with its output makes one. Only to measure that lever against (the
    /// paired benchmark `tools/echo_split_finish`; the `bench` feature
    /// only): nothing else sets it.
    #[cfg(feature = "bench")]
    pub const SPLIT_FINISH: &str = "HC_SPLIT_FINISH";

    /// `$HC_PROCESS_ID`, when the engine started this program.
    pub fn process_id() -> Option<String> {
        std::env::var(PROCESS_ID).ok()
    }
}
