//! The commands that read or change what a project holds, each straight
//! from the substrate or the configuration files: `hc sessions`, `scope`,
//! `log`, `ps`, `programs`, `commit` (`inspect.rs`), `hc trace`
//! (`trace.rs`, drawn by `tree.rs`), `hc config` and `hc trust`
//! (`config.rs`), `hc mcp` (`mcp.rs`), `hc memory` (`memory.rs`), `hc
//! blocks` (`blocks.rs`).

pub mod agents;
pub mod blocks;
pub mod config;
pub mod inspect;
pub mod mcp;
pub mod mcp_auth;
pub mod memory;
pub mod models;
pub mod otel;
pub mod replay;
pub mod rewind;
pub mod store;
pub mod trace;
pub mod tree;
