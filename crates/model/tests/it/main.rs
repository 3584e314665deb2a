//! The model crate's integration tests: one binary, a module per area.
#![allow(clippy::expect_used, clippy::unwrap_used)]

mod catalog;
mod client;
mod common;
mod decode;
mod openai;
mod retries;
mod shapes;
