//! The Anthropic Messages API client.

mod delta;
pub(crate) mod stream;

use crate::config::{ANTHROPIC_VERSION, AnthropicConfig, join_url};
use crate::error::ModelError;
use crate::request::{CountTokensBody, MessagesRequest};
use crate::response::MessageResponse;
use crate::stream::{MessageStream, WireFormat};
use crate::transport::{HttpCall, Transport, excerpt};
use bytes::Bytes;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use serde::Serialize;
use std::sync::Arc;

/// A client for `POST /v1/messages` and `POST /v1/messages/count_tokens`.
///
/// Cheap to clone; clones share connections.
#[derive(Debug, Clone)]
pub struct AnthropicClient {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    config: AnthropicConfig,
    transport: Arc<Transport>,
    headers: HeaderMap,
    messages_url: String,
    count_url: String,
}

#[derive(Serialize)]
struct Body<'a> {
    #[serde(flatten)]
    request: &'a MessagesRequest,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    stream: bool,
}

impl AnthropicClient {
    /// A client for `config`.
    ///
    /// # Errors
    /// Missing credentials for the real API, a bad base URL, or a key that
    /// cannot go in an HTTP header.
    pub fn new(config: AnthropicConfig) -> Result<AnthropicClient, ModelError> {
        config.validate()?;
        let mut headers = HeaderMap::new();
        if let Some(key) = &config.auth.api_key {
            headers.insert("x-api-key", header_value(key, "ANTHROPIC_API_KEY")?);
        }
        if let Some(token) = &config.auth.auth_token {
            let bearer = format!("Bearer {token}");
            headers.insert(
                "authorization",
                header_value(&bearer, "ANTHROPIC_AUTH_TOKEN")?,
            );
        }
        headers.insert(
            "anthropic-version",
            HeaderValue::from_static(ANTHROPIC_VERSION),
        );
        headers.insert("content-type", HeaderValue::from_static("application/json"));
        headers.insert("accept", HeaderValue::from_static("application/json"));
        Ok(AnthropicClient {
            inner: Arc::new(Inner {
                transport: Arc::new(Transport::new(&config.http)?),
                messages_url: join_url(&config.base_url, "/v1/messages"),
                count_url: join_url(&config.base_url, "/v1/messages/count_tokens"),
                headers,
                config,
            }),
        })
    }

    /// The configuration.
    pub fn config(&self) -> &AnthropicConfig {
        &self.inner.config
    }

    /// The models this key may use (`GET /v1/models`): their ids.
    ///
    /// # Errors
    /// The API's error, or a connection that could not be made.
    pub async fn models(&self) -> Result<Vec<String>, ModelError> {
        let url = join_url(&self.inner.config.base_url, "/v1/models?limit=1000");
        let body = self.inner.transport.get(&url, &self.inner.headers).await?;
        crate::catalog::listed_ids(&body)
    }

    /// Sends `request` and waits for the whole reply.
    ///
    /// # Errors
    /// An invalid request, an API error (after retries), or a connection
    /// that could not be made.
    pub async fn create(&self, request: &MessagesRequest) -> Result<MessageResponse, ModelError> {
        let call = self.call(request, false)?;
        let (body, request_id) = self.inner.transport.fetch(&call).await?;
        serde_json::from_slice(&body).map_err(|e| {
            ModelError::protocol(
                format!(
                    "the reply is not a message ({e}): {}",
                    excerpt(&String::from_utf8_lossy(&body), 200)
                ),
                request_id.as_deref(),
            )
        })
    }

    /// Sends `request` with `stream: true`; the reply arrives through the
    /// returned [`MessageStream`].
    ///
    /// # Errors
    /// As [`create`](Self::create), for everything before the stream
    /// starts.
    pub async fn stream(&self, request: &MessagesRequest) -> Result<MessageStream, ModelError> {
        let call = self.call(request, true)?;
        MessageStream::open(self.inner.transport.clone(), call, WireFormat::Anthropic).await
    }

    /// How many input tokens `request` would use (its model, system,
    /// messages, tools and thinking).
    ///
    /// # Errors
    /// As [`create`](Self::create).
    pub async fn count_tokens(&self, request: &MessagesRequest) -> Result<u64, ModelError> {
        #[derive(serde::Deserialize)]
        struct Count {
            input_tokens: u64,
        }
        let body = serde_json::to_vec(&CountTokensBody::from(request))
            .map_err(|e| ModelError::InvalidRequest(format!("cannot serialize: {e}")))?;
        let call = HttpCall {
            url: self.inner.count_url.clone(),
            headers: self.headers(request)?,
            body: Bytes::from(body),
        };
        let (body, request_id) = self.inner.transport.fetch(&call).await?;
        let count: Count = serde_json::from_slice(&body).map_err(|e| {
            ModelError::protocol(
                format!("count_tokens answered without input_tokens ({e})"),
                request_id.as_deref(),
            )
        })?;
        Ok(count.input_tokens)
    }

    /// The exact bytes sent as the body of `request`.
    pub fn body(request: &MessagesRequest, stream: bool) -> Result<Vec<u8>, ModelError> {
        serde_json::to_vec(&Body { request, stream })
            .map_err(|e| ModelError::InvalidRequest(format!("cannot serialize: {e}")))
    }

    fn call(&self, request: &MessagesRequest, stream: bool) -> Result<HttpCall, ModelError> {
        request.validate().map_err(ModelError::InvalidRequest)?;
        let body = AnthropicClient::body(request, stream)?;
        Ok(HttpCall {
            url: self.inner.messages_url.clone(),
            headers: self.headers(request)?,
            body: Bytes::from(body),
        })
    }

    /// The fixed headers plus `anthropic-beta`.
    fn headers(&self, request: &MessagesRequest) -> Result<HeaderMap, ModelError> {
        let mut headers = self.inner.headers.clone();
        let mut betas: Vec<&str> = Vec::new();
        for beta in self.inner.config.betas.iter().chain(&request.betas) {
            if !betas.contains(&beta.as_str()) {
                betas.push(beta);
            }
        }
        if !betas.is_empty() {
            headers.insert(
                HeaderName::from_static("anthropic-beta"),
                header_value(&betas.join(","), "the beta list")?,
            );
        }
        Ok(headers)
    }
}

fn header_value(value: &str, what: &str) -> Result<HeaderValue, ModelError> {
    let mut v = HeaderValue::from_str(value).map_err(|_| {
        ModelError::Config(format!(
            "{what} holds characters an HTTP header cannot carry (a stray newline?); check its value"
        ))
    })?;
    v.set_sensitive(true);
    Ok(v)
}
