#![allow(clippy::unwrap_used, clippy::expect_used, dead_code)]
//! The agent and `hc run` against the fake model server: real contained
//! tool programs, a real substrate, every request rebuilt byte for byte.

mod acp;
mod attacks;
mod auto_mode;
mod background;
mod blocks;
mod chat;
mod cli;
mod common;
mod compaction;
mod config;
mod cycle;
mod early;
mod engines;
mod failures;
mod fallback;
mod faults;
mod flags;
mod hardening;
mod hooks;
mod hosts;
mod knowledge;
mod lossless;
mod mcp;
mod mcp_attacks;
mod mcp_oauth;
mod mcp_runners;
mod memory;
mod newcomer;
mod otel;
mod permissions;
mod plan;
mod postgres;
mod resume;
mod rewind;
mod rewind_faults;
mod safety;
mod sdk;
mod shown;
mod structured;
mod subagents;
mod terminal;
mod trust;
mod ts_sdk;
mod web;
