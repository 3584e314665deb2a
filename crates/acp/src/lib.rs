//! The Agent Client Protocol (ACP, v1) as hermitcrab speaks it, as the
//! agent: an editor (Zed, a JetBrains IDE, a Neovim plugin) drives `hc` over
//! stdin and stdout with JSON-RPC 2.0, one message a line.
//!
//! Our own types rather than the `agent-client-protocol` crate's: that
//! crate turns on serde_json's `preserve_order` for every crate built with
//! it, which would change the key order of every JSON value hermitcrab
//! writes — and with it what `hc trace --request N` rebuilds, byte for
//! byte, from a record made before. The shapes are the protocol's
//! published schema (`schema/v1/schema.json`); the tests hold the literal
//! lines.
//!
//! Never knows about: the engine, the substrate, a run — only the wire.

pub mod rpc;
pub mod schema;
