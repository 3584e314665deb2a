//! # agent
//!
//! The agent program (`design/agent.md`): a program like any other, run by
//! the engine, speaking the protocol, whose work is calling a model and
//! whose tools are runs of other programs. It reaches the substrate only
//! through the protocol and the model only through `crates/model`.
//!
//! Main parts: [`Run`](run::Run) (what a run starts from and how it ends),
//! the cycle (`cycle.rs`: gates, the streamed call, the answer), tool
//! calls (`calls.rs`: schema, fill, permission, runs, results), the
//! request as a function of the substrate ([`request`]: [`Prefix`] and
//! [`Conversation`]; [`rebuild_request`] for any past call), permissions
//! ([`permissions`]), and the agent's vocabulary ([`vocabulary`]), which
//! `hc init` commits — the substrate knows none of it.
//!
//! Invariants:
//! * Every request is built from what the substrate holds, by one
//!   function; [`rebuild_request`] gives any past request byte for byte.
//! * Tools and system are the same bytes for every call under one context
//!   event, so the cached prefix stays a prefix.
//! * A tool call that fails is a `tool-result` with `is_error`; every
//!   denial is recorded.

mod calls;
pub mod catalog;
mod compact;
pub mod config;
pub mod context;
mod cycle;
mod events;
mod hooks;
pub mod knowledge;
mod own;
pub mod permissions;
mod rebuild;
pub mod request;
pub mod run;
mod sub;
mod tally;
mod vocabulary;

pub use config::{AgentConfig, ApiKind, HOOK_EVENTS, HookConfig, PermissionMode};
pub use rebuild::{calls, is_call, rebuild_request, request_body};
pub use request::{Conversation, Prefix};
pub use vocabulary::{
    AGENT_ENV, AGENT_TIMEOUT_MS, SESSION_ACCEPTS, agent_program, prompt_schema, vocabulary,
};

use protocol::program::{Builtin, Program, ProgramFuture};

/// The agent as a built-in program (`hc program agent`).
pub static BUILTINS: &[Builtin] = &[Builtin {
    name: "agent",
    chunks: || vec![agent_program()],
    main,
}];

fn main() -> ProgramFuture {
    Box::pin(async {
        let mut program = Program::connect()?;
        let mut run = run::Run::start(&mut program).await?;
        let stop = run.cycle().await;
        run.finish(stop).await
    })
}
