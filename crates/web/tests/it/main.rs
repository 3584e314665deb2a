//! The hc-web crate's integration tests: one binary, a module per area.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod gate;
