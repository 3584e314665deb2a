#![allow(clippy::unwrap_used, clippy::expect_used, dead_code)]
//! The tool programs through the engine, as real contained runs of
//! `hc program NAME`: every program's happy paths and every bad input of
//! the issue, containment, concurrency, progress, configuration.

mod common;
mod containment;
mod files;
mod search;
mod shell;
mod web;
