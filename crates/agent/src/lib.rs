//! # agent
//!
//! The agent program (`design/agent.md`): a program like any other, which
//! calls a model and whose tools are runs of other programs. This crate
//! owns the agent's vocabulary — sessions and what they hold, the agent's
//! configuration, `program/agent` — which `hc init` commits; the substrate
//! knows none of it.

mod vocabulary;

pub use vocabulary::{SESSION_ACCEPTS, vocabulary};
