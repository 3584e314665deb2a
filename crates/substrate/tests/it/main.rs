//! The substrate crate's integration tests: one binary, a module per area.
#![allow(clippy::expect_used, clippy::unwrap_used)]

mod bad_input;
mod commits;
mod common;
mod crash;
mod model;
mod open;
mod reads;
mod specs;
