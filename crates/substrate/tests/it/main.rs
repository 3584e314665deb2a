//! The substrate crate's integration tests: one binary, a module per area.
#![allow(clippy::expect_used, clippy::unwrap_used)]
// (the same test files run once per backend: `on_postgres.rs`)
#![allow(clippy::duplicate_mod)]

mod bad_input;
mod commits;
mod common;
mod crash;
mod model;
mod open;
mod reads;
mod specs;
mod sqlite_only;

mod on_postgres;
mod postgres_only;
