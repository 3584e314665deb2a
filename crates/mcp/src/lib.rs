//! # mcp
//!
//! hermitcrab's `mcp` program (`builtin:mcp`, `design/mcp.md`): a service
//! (`runtime: "service"`), one process per configured server (`mcp/NAME`),
//! that speaks MCP to its server through the official SDK (`rmcp`) — stdio
//! (the server a child inside the service's containment) or streamable
//! HTTP — commits each of the server's tools as a program chunk
//! `mcp__NAME__TOOL` served by it, and carries out every run of those
//! programs as one `tools/call`. An answer of any size is cut, never a
//! hang: over stdio each JSON string over 6 MiB keeps its two ends as it
//! is read (`guard`), and a message still over 32 MiB answers its request
//! with an error; over HTTP an answer over 32 MiB is refused at once,
//! saying so.
//!
//! Also here, pure and shared with hosts: the configuration a person writes
//! and its resolution ([`config`]), the tool programs ([`tools`]), the
//! result mapping ([`output`]).
//!
//! Invariants: it reaches the substrate only through the protocol, and for
//! a run only on that run's behalf; it knows nothing of agents; the
//! server's secrets reach it in its environment ([`SERVER_ENV`]), never
//! through the substrate, and nothing it says (its log, its errors, a
//! call's error) shows one: each stands as it was written
//! ([`config::redact`]). What a server says is bounded however much it
//! says: its progress is passed on newest-only, its log messages left out,
//! its word that its tools changed taken once until they are listed, and
//! a listing it does not answer waited for no longer than its startup
//! limit.

pub mod body;
mod client;
pub mod config;
pub mod elicit;
pub mod error;
pub mod extras;
mod guard;
pub mod oauth;
pub mod output;
mod service;
mod stderr;
mod stdio;
pub mod tools;

use protocol::program::{Builtin, ProgramFuture};

/// The variable the host puts the resolved [`config::Server`] in (JSON).
pub const SERVER_ENV: &str = "HC_MCP_SERVER";

/// The `mcp` built-in. It has no chunks of its own: a host commits one
/// service program per server (`program/mcp/NAME`).
pub static BUILTINS: &[Builtin] = &[Builtin {
    name: "mcp",
    chunks: Vec::new,
    main,
}];

fn main() -> ProgramFuture {
    Box::pin(service::run())
}
