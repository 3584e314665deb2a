//! The agent crate's integration tests: one binary, a module per area.
#![allow(clippy::expect_used, clippy::unwrap_used, missing_docs)]

mod blocks;
mod command_policy;
mod compaction;
mod contract;
mod knowledge;
mod launch;
mod permissions;
mod request;
