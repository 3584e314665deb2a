//! The OpenAI-compatible chat-completions provider, for OpenAI itself and
//! for local servers (Ollama, llama.cpp, vLLM).

pub(crate) mod stream;
pub(crate) mod wire;

use crate::config::{OpenAiConfig, join_url};
use crate::error::ModelError;
use crate::request::MessagesRequest;
use crate::response::MessageResponse;
use crate::stream::{MessageStream, WireFormat};
use crate::transport::{HttpCall, Transport};
use bytes::Bytes;
use reqwest::header::{HeaderMap, HeaderValue};
use std::sync::Arc;

/// A client for `POST {base_url}/chat/completions`, taking and giving the
/// same types as [`AnthropicClient`](crate::AnthropicClient).
#[derive(Debug, Clone)]
pub struct OpenAiClient {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    config: OpenAiConfig,
    transport: Arc<Transport>,
    headers: HeaderMap,
    url: String,
}

impl OpenAiClient {
    /// A client for `config`.
    ///
    /// # Errors
    /// A bad base URL, no key for api.openai.com, or a key that cannot go in
    /// an HTTP header.
    pub fn new(config: OpenAiConfig) -> Result<OpenAiClient, ModelError> {
        config.validate()?;
        let mut headers = HeaderMap::new();
        headers.insert("content-type", HeaderValue::from_static("application/json"));
        if let Some(key) = &config.api_key {
            let mut v = HeaderValue::from_str(&format!("Bearer {key}")).map_err(|_| {
                ModelError::Config(
                    "OPENAI_API_KEY holds characters an HTTP header cannot carry; check its value"
                        .into(),
                )
            })?;
            v.set_sensitive(true);
            headers.insert("authorization", v);
        }
        Ok(OpenAiClient {
            inner: Arc::new(Inner {
                transport: Arc::new(Transport::new(&config.http)?),
                url: join_url(&config.base_url, "/chat/completions"),
                headers,
                config,
            }),
        })
    }

    /// The configuration.
    pub fn config(&self) -> &OpenAiConfig {
        &self.inner.config
    }

    /// The models the server serves (`GET {base}/models`): their ids.
    ///
    /// # Errors
    /// The server's error, or a connection that could not be made.
    pub async fn models(&self) -> Result<Vec<String>, ModelError> {
        let url = join_url(&self.inner.config.base_url, "/models");
        let body = self.inner.transport.get(&url, &self.inner.headers).await?;
        crate::catalog::listed_ids(&body)
    }

    /// Sends `request` and waits for the whole reply.
    ///
    /// # Errors
    /// A request that cannot be mapped (server tools, images), an API error
    /// (after retries), or a connection that could not be made.
    pub async fn create(&self, request: &MessagesRequest) -> Result<MessageResponse, ModelError> {
        let call = self.call(request, false)?;
        let (body, request_id) = self.inner.transport.fetch(&call).await?;
        wire::parse_completion(&body)
            .map_err(|message| ModelError::protocol(message, request_id.as_deref()))
    }

    /// Sends `request` with `stream: true`.
    ///
    /// # Errors
    /// As [`create`](Self::create), for everything before the stream starts.
    pub async fn stream(&self, request: &MessagesRequest) -> Result<MessageStream, ModelError> {
        let call = self.call(request, true)?;
        MessageStream::open(self.inner.transport.clone(), call, WireFormat::OpenAiChat).await
    }

    /// The exact bytes sent as the body of `request` (mapped to chat
    /// completions).
    pub fn body(request: &MessagesRequest, stream: bool) -> Result<Vec<u8>, ModelError> {
        let body = wire::chat_request(request, stream)?;
        serde_json::to_vec(&body)
            .map_err(|e| ModelError::InvalidRequest(format!("cannot serialize: {e}")))
    }

    fn call(&self, request: &MessagesRequest, stream: bool) -> Result<HttpCall, ModelError> {
        request.validate().map_err(ModelError::InvalidRequest)?;
        let body = OpenAiClient::body(request, stream)?;
        Ok(HttpCall {
            url: self.inner.url.clone(),
            headers: self.inner.headers.clone(),
            body: Bytes::from(body),
        })
    }
}
