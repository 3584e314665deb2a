//! # model
//!
//! Clients for model APIs, with no framework in between: the Anthropic
//! Messages API ([`AnthropicClient`]: `POST /v1/messages`, streamed or
//! not, and `count_tokens`) and OpenAI-compatible chat completions
//! ([`OpenAiClient`], for OpenAI, Ollama, llama.cpp, vLLM), both behind
//! [`Provider`] and both speaking the same types.
//!
//! Main types: [`MessagesRequest`] (model, system blocks, messages, tools,
//! tool choice, thinking, cache breakpoints); [`ContentBlock`];
//! [`MessageResponse`] with [`StopReason`] and [`Usage`]; [`MessageStream`]
//! and its [`StreamEvent`]s; [`ModelError`] and [`ApiError`];
//! [`AnthropicConfig`] / [`OpenAiConfig`] with [`HttpConfig`] and
//! [`RetryPolicy`]; [`PriceTable`] for cost.
//!
//! Invariants:
//! * A reply's blocks go back to the API as they came: thinking keeps its
//!   signature, and every block this crate does not model (each
//!   `*_tool_result`, unknown types) is [`ContentBlock::Raw`], the exact
//!   JSON the API sent. Unknown stop reasons, events and deltas are kept or
//!   skipped, never fatal.
//! * Streamed and whole replies to the same request are equal
//!   [`MessageResponse`]s. Usage in a stream is cumulative: later counts
//!   overwrite earlier ones.
//! * A failure is retried only while nothing of the reply has reached the
//!   caller (the rules are on [`RetryPolicy`]); every
//!   error says what happened and what to do, with the API's `request-id`.
//! * Serializing the same request twice gives the same bytes, so a cached
//!   prefix stays a prefix. At most four cache breakpoints are accepted.
//! * Every setting comes from a config struct (`from_env` reads
//!   `ANTHROPIC_API_KEY`, `ANTHROPIC_AUTH_TOKEN`, `ANTHROPIC_BASE_URL`);
//!   none is a constant at a call site.
//!
//! ```no_run
//! use model::{
//!     AnthropicConfig, CacheControl, Message, MessagesRequest, PriceTable, Provider,
//!     ProviderConfig, StreamEvent, SystemBlock,
//! };
//! # async fn turn() -> Result<(), Box<dyn std::error::Error>> {
//! let provider = Provider::new(ProviderConfig::Anthropic(AnthropicConfig::from_env()))?;
//! let mut request = MessagesRequest::new("claude-sonnet-4-5", 8192, vec![Message::user("hello")]);
//! request.system = vec![SystemBlock::text("You are terse.").cached(CacheControl::ephemeral())];
//! let mut stream = provider.stream(&request).await?;
//! while let Some(event) = stream.next_event().await? {
//!     if let StreamEvent::TextDelta { text, .. } = event {
//!         print!("{text}");
//!     }
//! }
//! let reply = stream.finish().await?;
//! let cost = PriceTable::default().cost(&reply.model, &reply.usage)?;
//! request.messages.push(reply.to_message()); // replayed verbatim next call
//! println!("\n{:?}, ${cost:.4}", reply.stop_reason);
//! # Ok(()) }
//! ```

mod anthropic;
pub mod catalog;
mod config;
mod content;
mod error;
mod event;
mod limits;
mod openai;
mod price;
mod provider;
mod raw;
mod recorded;
mod request;
mod response;
mod retry;
mod sse;
mod stream;
mod transport;

pub use anthropic::AnthropicClient;
pub use config::{
    ANTHROPIC_VERSION, AnthropicAuth, AnthropicConfig, DEFAULT_ANTHROPIC_BASE_URL,
    DEFAULT_OPENAI_BASE_URL, HttpConfig, HttpNotice, OpenAiConfig, RetryNotice, RetryObserver,
    RetryPolicy,
};
pub use content::{
    CacheControl, CacheTtl, ContentBlock, RawBlock, RedactedThinkingBlock, TextBlock,
    ThinkingBlock, ToolResultBlock, ToolResultContent, ToolUseBlock,
};
pub use error::{ApiError, ApiErrorKind, ModelError};
pub use limits::{Limits, LimitsTable};
pub use openai::OpenAiClient;
pub use price::{Price, PriceTable};
pub use provider::{Provider, ProviderConfig};
pub use raw::RawJson;
pub use recorded::RecordedClient;
pub use request::{
    CustomTool, MAX_CACHE_BREAKPOINTS, Message, MessagesRequest, Metadata, Role, ServerTool,
    SystemBlock, Thinking, Tool, ToolChoice,
};
pub use response::{CacheCreation, MessageResponse, ServerToolUsage, StopReason, Usage};
pub use stream::{MessageStream, StreamEvent, WireFormat};
