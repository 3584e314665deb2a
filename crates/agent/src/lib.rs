//! # agent
//!
//! The agent program (`hc program agent`): a program like any other, run
//! by the engine, speaking the protocol, whose work is calling a model and
//! whose tools are runs of other programs. It reaches the substrate only
//! through the protocol and the model only through the `model` crate.
//!
//! Main parts:
//!
//! * [`contract`] — every body the agent writes and a host reads, the
//!   notices it streams, and [`SessionItem`](contract::SessionItem), what
//!   a chunk on a session is. Hosts (the terminal, `hc serve`, a browser,
//!   the Agent SDK) read through these types, never by string keys.
//! * [`launch`] — how a host starts a run: a session, the pins, the run's
//!   arguments and boundaries.
//! * [`run`] — a run in parts with one owner each: the session writer, the
//!   request, the gates, the toolbox, the inbox.
//! * [`request`] — the request as a function of the substrate:
//!   [`Prefix`], [`Conversation`], and [`Request`], the one place a
//!   request's bytes are laid out, for a live call and for
//!   [`rebuild_request`] alike.
//! * [`permissions`] — rules and modes; [`vocabulary`] — the chunks
//!   `hc init` commits for the agent (the substrate knows none of them).
//!
//! Invariants:
//! * Every request is built from what the substrate holds, by one
//!   function; [`rebuild_request`] gives any past request byte for byte.
//! * Tools and system are the same bytes for every call under one context
//!   event, so the cached prefix stays a prefix.
//! * A tool call that fails is a `tool-result` with `is_error`; every
//!   denial is recorded.
//!
//! ```
//! use agent::contract::{Answer, Entry, SessionItem, ToolResult};
//! use agent::request::{Conversation, Prefix, Request};
//! use agent::{AgentConfig, contract::ContextBody};
//!
//! // The request of a session, item by item, as the agent builds it.
//! let config = AgentConfig { model: "claude-sonnet-4-5".into(), ..AgentConfig::default() };
//! let context = ContextBody { system: "You help.".into(), model: config.model.clone(),
//!     max_tokens: 1024, ..ContextBody::default() };
//! let mut request = Request::new(Prefix::new(&config, &context, &Default::default(), &[]), Conversation::default());
//! let prompt = agent::contract::Prompt { text: "hello".into(), ..Default::default() };
//! request.push(&Entry::of(&prompt).item());
//! let next = request.next_call();
//! assert_eq!(next.messages.len(), 1);
//! assert_eq!(next.model, "claude-sonnet-4-5");
//! ```

pub mod blocks;
pub mod catalog;
mod compact;
pub mod config;
pub mod contract;
pub mod launch;
pub mod memory;
pub mod names;
pub mod permissions;
mod rebuild;
pub mod request;
pub mod run;
pub mod sources;
mod toolbox;
mod vocabulary;
mod within;

pub use compact::recent_turns;
pub use config::{
    AgentConfig, ApiKind, BadToolSearch, CLAUDE_HOOK_EVENTS, HOOK_EVENTS, HookConfig,
    MalformedConfig, OnFailure, PermissionMode, SettingSources, ToolSearch, claude_hook_event,
    hook_event,
};
pub use rebuild::{RebuildError, calls, is_call, rebuild_request, request_body};
pub use request::{Conversation, Prefix, Request};
pub use toolbox::plan::TOOL as EXIT_PLAN;
pub use vocabulary::{
    AGENT_ENV, AGENT_TIMEOUT_MS, SESSION_ACCEPTS, agent_program, prompt_schema, seeds, vocabulary,
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
