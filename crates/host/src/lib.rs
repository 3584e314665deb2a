//! The host core of hermitcrab: what every front end — the terminal, the
//! print formats, the Agent SDK, the browser page — opens and asks before
//! and around a run. The project (found or made) and its substrate, the
//! configuration files and whether the person trusts them, keys, the
//! resolved settings, MCP configuration, the user's memory, the built-in
//! programs, session lookups, what a host says of a call in words — and
//! a turn: a run started and followed to its end ([`turn::turn`],
//! [`follow::Follower`]).
//!
//! It knows no front end: nothing here prints a run as it happens or
//! reads a terminal. A front end shows a run through a [`follow::Sink`],
//! answers what it asks through a [`follow::Answerer`], and where a host
//! must ask the person a line, it asks a [`confirm::Confirm`].

pub mod agents;
pub mod builtins;
pub mod commands;
pub mod config;
pub mod confirm;
pub mod describe;
pub mod exit;
pub mod follow;
pub mod fork;
pub mod keys;
pub mod mcp_config;
pub mod mcp_prompt;
pub mod open;
pub mod origin;
pub mod permit;
pub mod place;
pub mod principal;
pub mod project;
pub mod relay;
pub mod replay;
pub mod rewind;
pub mod serving;
pub mod sessions;
pub mod settings;
pub mod telemetry;
pub mod text;
pub mod tree;
pub mod trust;
pub mod turn;
pub mod user_memory;
pub mod worker;
pub mod worktree;
