//! # testkit
//!
//! A fake model API for tests and demos: a real HTTP server on 127.0.0.1
//! ([`FakeModel`], axum) that answers from a [`Script`], in the wire format
//! of the endpoint asked:
//!
//! * `POST /v1/messages` — Anthropic Messages, whole or streamed as
//!   server-sent events (`stream: true`);
//! * `POST /v1/messages/count_tokens` — `{"input_tokens": N}`, N from
//!   [`estimate_tokens`] (no turn is used);
//! * `POST /v1/chat/completions` — OpenAI chat completions, whole or
//!   streamed as chunks ending in `data: [DONE]`.
//!
//! Every request is recorded ([`FakeModel::requests`]: headers, body,
//! arrival time, how long the answer took). Like the real API, the fake
//! refuses a Messages request without `anthropic-version`, or without
//! `model`, `messages` or `max_tokens`, with a 400 that uses no turn.
//!
//! Main types: [`FakeModel`], [`Script`], [`Turn`], [`Reply`],
//! [`ErrorReply`], [`Pace`], [`Fault`], [`RecordedRequest`]. The binary
//! `hc-fake-model SCRIPT.json [--port N]` serves a script file (`--demo`: the
//! built-in demo) so anyone
//! can run hermitcrab end to end without an API key.
//!
//! Invariant: the fake knows the wire formats only — never the types of
//! the `model` crate — so the client is tested against what the APIs send,
//! not against itself.
//!
//! ## The script format
//!
//! A JSON object; unknown fields are refused, so a typo is an error.
//!
//! ```json
//! {
//!   "pace": {"delay_ms": 0, "text_chunk": 16},
//!   "cycle": false,
//!   "api_key": null,
//!   "turns": [
//!     {"error": {"status": 529, "message": "Overloaded", "headers": {"retry-after-ms": "50"}}},
//!     {"reply": {"content": [{"type": "text", "text": "Let me look."},
//!                            {"type": "tool_use", "id": "toolu_1", "name": "read",
//!                             "input": {"file_path": "README.md", "limit": 20}}],
//!                "stop_reason": "tool_use",
//!                "usage": {"input_tokens": 120, "output_tokens": 30}}},
//!     {"reply": {"content": [{"type": "text", "text": "It is a README."}]},
//!      "pace": {"delay_ms": 20}},
//!     {"sse": "event: message_start\ndata: {\"type\":\"message_start\", ...}\n\n..."}
//!   ]
//! }
//! ```
//!
//! * `turns` — each request to `/v1/messages` or `/v1/chat/completions`
//!   takes the next turn. When they run out the fake answers 400 saying
//!   so, unless `cycle` is true (start again). A turn with `"when":
//!   "text"` is taken only by a request whose last message holds that text
//!   (the first such turn not yet taken): agents calling at once each get
//!   the answer meant for them.
//! * A turn is exactly one of:
//!   * `reply` — a message in the Anthropic shape: `content` (blocks as the
//!     API sends them: `text` with `citations`, `thinking` with
//!     `signature`, `redacted_thinking`, `tool_use`, `server_tool_use`, any
//!     `*_tool_result`, anything else), `stop_reason` (default
//!     `end_turn`), `stop_sequence`, `usage`, `id` (default `msg_fake_N`),
//!     `model` (default: the request's), `container`. Streamed, it becomes
//!     the documented event sequence: `message_start`, `ping`, per block
//!     `content_block_start` / deltas / `content_block_stop` (text in
//!     `text_delta`s after any `citations_delta`s; thinking in
//!     `thinking_delta`s then a `signature_delta`; tool input in
//!     `input_json_delta`s, the first one empty; other blocks whole in
//!     their start event), `message_delta` (stop reason, full usage),
//!     `message_stop`. On the chat-completions endpoint, thinking becomes
//!     `reasoning_content`, text `content`, `tool_use` `tool_calls`
//!     (other blocks have no form there and are left out).
//!   * `error` — `{"status", "type" (default: the API's type for the
//!     status), "message", "headers"}`: an HTTP error in the API's shape,
//!     e.g. 429 with `retry-after`, 529 with `retry-after-ms`, 500 with
//!     `x-should-retry: false`.
//!   * `sse` — a server-sent-event body sent exactly as written, split at
//!     blank lines into events.
//! * `pace` (script-wide, overridden field by field per turn):
//!   `delay_ms` between pieces, `first_byte_delay_ms` before the response
//!   headers, `text_chunk` and `json_chunk` (characters per delta, default
//!   16), `ping_every` (extra pings), `chunk_bytes` (re-split the body into
//!   pieces of this many bytes, across lines and UTF-8 characters).
//! * `fault` (per turn): `{"drop": {"after_events": N}}` cuts the
//!   connection after N events; `{"error_event": {"after_events": N,
//!   "type": "overloaded_error", "message": "Overloaded"}}` sends an
//!   `error` event and ends; `{"malformed": {"after_events": N}}` inserts
//!   an event whose data is cut-off JSON; `{"stall": {"after_events": N,
//!   "ms": M}}` goes silent for M ms. On a whole (unstreamed) answer,
//!   `drop` cuts the body, `error_event` becomes the matching HTTP error,
//!   `malformed` sends half the JSON and `stall` waits before the body.
//! * `api_key` — when set, requests without it get 401
//!   `authentication_error`.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use testkit::{FakeModel, Reply, Script, Turn};
//! let fake = FakeModel::start(Script::new(vec![Turn::reply(Reply::text("hi"))])).await?;
//! println!("ANTHROPIC_BASE_URL={}", fake.base_url());
//! assert!(fake.requests().is_empty());
//! # Ok(()) }
//! ```

pub mod models;
mod netns;
pub mod otlp;
mod postgres;
mod render;
mod script;
mod server;

pub use netns::{Net, NetError, NetHost};
pub use postgres::{PG_PASSWORD, PG_USER, PgCluster, PgError, SharedCluster};
pub use script::{ErrorReply, Fault, Pace, Reply, Script, ScriptError, Turn, error_type_for};
pub use server::{FakeModel, RecordedRequest};

/// The fake's token count for a request: one token per four characters of
/// its system prompt, messages and tools (as JSON), rounded up.
pub fn estimate_tokens(request: &serde_json::Value) -> u64 {
    let chars: usize = ["system", "messages", "tools"]
        .iter()
        .filter_map(|k| request.get(*k))
        .map(|v| v.to_string().chars().count())
        .sum();
    chars.div_ceil(4) as u64
}

/// A Python virtual environment at `venv` with `pip install ARGS` done in
/// it, made once (a venv whose `.installed` names the same arguments is
/// taken as it is, so a changed pin makes it again): its interpreter. For
/// tests that run real programs from PyPI (an MCP server's SDK, an Agent
/// SDK); `python3` with `venv` must be on the machine.
pub fn python_venv(
    venv: &std::path::Path,
    pip_args: &[&str],
) -> Result<std::path::PathBuf, String> {
    let python = venv.join("bin/python");
    let ready = venv.join(".installed");
    let wanted = pip_args.join(" ");
    if std::fs::read_to_string(&ready).ok().as_deref() == Some(wanted.as_str()) {
        return Ok(python);
    }
    let made = std::process::Command::new("python3")
        .args(["-m", "venv"])
        .arg(venv)
        .status()
        .map_err(|e| format!("python3 -m venv: {e}"))?;
    if !made.success() {
        return Err(format!("python3 -m venv {} failed", venv.display()));
    }
    let out = std::process::Command::new(&python)
        .args(["-m", "pip", "install", "-q"])
        .args(pip_args)
        .output()
        .map_err(|e| format!("pip install {wanted}: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "pip install {wanted}: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    std::fs::write(&ready, &wanted).map_err(|e| format!("{}: {e}", ready.display()))?;
    Ok(python)
}
