//! The programs crate's integration tests: one binary, a module per area.
#![allow(clippy::unwrap_used, missing_docs)]

mod builtins;
mod files;
