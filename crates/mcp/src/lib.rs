//! # mcp
//!
//! hermitcrab's `mcp` program (`builtin:mcp`, `design/mcp.md`): a service
//! (`runtime: "service"`), one process per configured server (`mcp/NAME`),
//! that speaks MCP to its server through the official SDK (`rmcp`) — stdio
//! (the server a child inside the service's containment) or streamable
//! HTTP — commits each of the server's tools as a program chunk
//! `mcp__NAME__TOOL` served by it, and carries out every run of those
//! programs as one `tools/call`.
//!
//! Also here, pure and shared with hosts: the configuration a person writes
//! and its resolution ([`config`]), the tool programs ([`tools`]), the
//! result mapping ([`output`]).
//!
//! Invariants: it reaches the substrate only through the protocol, and for
//! a run only on that run's behalf; it knows nothing of agents; the
//! server's secrets reach it in its environment ([`SERVER_ENV`]), never
//! through the substrate.

mod client;
pub mod config;
pub mod elicit;
pub mod extras;
pub mod output;
mod service;
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
