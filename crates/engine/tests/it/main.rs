//! The engine crate's integration tests: one binary, a module per area.
#![allow(clippy::expect_used, clippy::unwrap_used)]

mod boundaries;
mod common;
mod containment;
mod events;
mod faults;
mod queue;
mod restart;
mod runs;
mod services;
mod tiles;
