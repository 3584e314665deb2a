//! [`Provider`]: one face for every API, so the agent calls Anthropic and
//! OpenAI-compatible servers the same way.

use crate::anthropic::AnthropicClient;
use crate::config::{AnthropicConfig, OpenAiConfig};
use crate::error::ModelError;
use crate::openai::OpenAiClient;
use crate::request::MessagesRequest;
use crate::response::MessageResponse;
use crate::stream::MessageStream;

/// Which API to call, and how.
#[derive(Debug, Clone, PartialEq)]
pub enum ProviderConfig {
    /// The Anthropic Messages API (or anything that speaks it).
    Anthropic(AnthropicConfig),
    /// An OpenAI-compatible chat-completions server.
    OpenAi(OpenAiConfig),
}

/// A model API client.
#[derive(Debug, Clone)]
pub enum Provider {
    /// The Anthropic Messages API.
    Anthropic(AnthropicClient),
    /// An OpenAI-compatible server.
    OpenAi(OpenAiClient),
    /// Replies recorded before, served in order (`hc replay`).
    Recorded(crate::recorded::RecordedClient),
}

impl Provider {
    /// A client for `config`.
    ///
    /// # Errors
    /// When the configuration is unusable (see each client's `new`).
    pub fn new(config: ProviderConfig) -> Result<Provider, ModelError> {
        Ok(match config {
            ProviderConfig::Anthropic(c) => Provider::Anthropic(AnthropicClient::new(c)?),
            ProviderConfig::OpenAi(c) => Provider::OpenAi(OpenAiClient::new(c)?),
        })
    }

    /// The models the API lets this key use (`GET /v1/models`, or an
    /// OpenAI-compatible server's `/models`): their ids.
    ///
    /// # Errors
    /// The API's error; [`ModelError::Unsupported`] for recorded replies.
    pub async fn models(&self) -> Result<Vec<String>, ModelError> {
        match self {
            Provider::Anthropic(c) => c.models().await,
            Provider::OpenAi(c) => c.models().await,
            Provider::Recorded(_) => Err(ModelError::Unsupported(
                "recorded replies list no models".into(),
            )),
        }
    }

    /// Sends `request` and waits for the whole reply.
    ///
    /// # Errors
    /// See [`AnthropicClient::create`] and [`OpenAiClient::create`].
    pub async fn create(&self, request: &MessagesRequest) -> Result<MessageResponse, ModelError> {
        match self {
            Provider::Anthropic(c) => c.create(request).await,
            Provider::OpenAi(c) => c.create(request).await,
            Provider::Recorded(c) => c.create(),
        }
    }

    /// Sends `request` and streams the reply.
    ///
    /// # Errors
    /// See [`AnthropicClient::stream`] and [`OpenAiClient::stream`].
    pub async fn stream(&self, request: &MessagesRequest) -> Result<MessageStream, ModelError> {
        match self {
            Provider::Anthropic(c) => c.stream(request).await,
            Provider::OpenAi(c) => c.stream(request).await,
            Provider::Recorded(c) => c.stream(),
        }
    }

    /// The input tokens `request` would use.
    ///
    /// # Errors
    /// [`ModelError::Unsupported`] for OpenAI-compatible servers, which
    /// have no such endpoint; otherwise as [`create`](Self::create).
    pub async fn count_tokens(&self, request: &MessagesRequest) -> Result<u64, ModelError> {
        match self {
            Provider::Anthropic(c) => c.count_tokens(request).await,
            Provider::OpenAi(c) => Err(ModelError::Unsupported(format!(
                "counting tokens is not available from OpenAI-compatible servers ({}); use the usage of the last reply instead",
                c.config().base_url
            ))),
            Provider::Recorded(_) => Err(ModelError::Unsupported(
                "counting tokens is not available when replaying a record".to_owned(),
            )),
        }
    }
}
