//! HTTP with retries, shared by every provider: send a call until it
//! succeeds or a failure is final, and read bodies under the idle timeout.

use crate::config::{HttpConfig, HttpNotice};
use crate::error::{ApiError, ApiErrorKind, ModelError};
use crate::retry;
use bytes::Bytes;
use futures_util::StreamExt;
use reqwest::header::HeaderMap;
use std::time::Duration;

/// One request, kept so it can be sent again.
#[derive(Debug, Clone)]
pub(crate) struct HttpCall {
    pub url: String,
    pub headers: HeaderMap,
    pub body: Bytes,
}

/// A failure before any of the reply was delivered.
pub(crate) struct Failure {
    pub error: ModelError,
    /// Connection failures and timeouts are worth another try.
    pub retryable: bool,
    /// The response's headers, for `retry-after`.
    pub headers: Option<HeaderMap>,
    /// A connection that could not be made: a wrong address more often
    /// than a blip, so tried at most [`FEW_RETRIES`] more times.
    pub few: bool,
}

/// Retries of a connection that could not be made.
const FEW_RETRIES: u32 = 2;

/// The reqwest client and the policy.
#[derive(Debug)]
pub(crate) struct Transport {
    http: reqwest::Client,
    config: HttpConfig,
}

impl Transport {
    pub fn new(config: &HttpConfig) -> Result<Transport, ModelError> {
        let http = reqwest::Client::builder()
            .connect_timeout(config.connect_timeout)
            .user_agent(concat!("hermitcrab-model/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| ModelError::Config(format!("cannot build the HTTP client: {e}")))?;
        Ok(Transport {
            http,
            config: config.clone(),
        })
    }

    /// `GET url` with `headers`, once: the body of a success, else the
    /// API's error.
    pub async fn get(
        &self,
        url: &str,
        headers: &reqwest::header::HeaderMap,
    ) -> Result<Bytes, ModelError> {
        let sent = self.http.get(url).headers(headers.clone()).send();
        let response = match tokio::time::timeout(self.config.idle_timeout, sent).await {
            Err(_) => return Err(self.timeout(url, "waiting for the response headers").error),
            Ok(Err(e)) => return Err(transport_failure(url, &e).error),
            Ok(Ok(r)) => r,
        };
        let status = response.status().as_u16();
        let request_id = request_id(response.headers());
        let ok = response.status().is_success();
        let body = self.read_body(response, url).await.map_err(|f| f.error)?;
        match ok {
            true => Ok(body),
            false => Err(ModelError::Api(api_error(status, &body, request_id))),
        }
    }

    /// Sends `call` until the status is a success, retrying by the policy.
    /// `retries` counts the retries made so far and is updated.
    pub async fn send(
        &self,
        call: &HttpCall,
        retries: &mut Tries,
    ) -> Result<reqwest::Response, ModelError> {
        loop {
            let failure = match self.attempt(call).await {
                Ok(response) => return Ok(response),
                Err(failure) => failure,
            };
            self.pause_or_fail(failure, retries).await?;
        }
    }

    /// Waits before the next retry, or returns the failure when it is
    /// final: not retryable, the retries spent, or — when the policy says
    /// so — the model overloaded too many times in a row.
    pub async fn pause_or_fail(
        &self,
        failure: Failure,
        retries: &mut Tries,
    ) -> Result<(), ModelError> {
        let most = match failure.few {
            true => self.config.retry.max_retries.min(FEW_RETRIES),
            false => self.config.retry.max_retries,
        };
        let overloaded = matches!(&failure.error, ModelError::Api(api) if api.kind == crate::ApiErrorKind::Overloaded);
        retries.overloaded = if overloaded {
            retries.overloaded + 1
        } else {
            0
        };
        // (with somewhere else to go — a fallback model — a model
        // overloaded this many times in a row is given up on)
        let given_up =
            (self.config.retry.overloaded_limit).is_some_and(|limit| retries.overloaded >= limit);
        if !failure.retryable || retries.count >= most || given_up {
            return Err(failure.error);
        }
        let wait = retry::delay(&self.config.retry, retries.count, failure.headers.as_ref());
        retries.count += 1;
        tracing::debug!(retry = retries.count, ?wait, error = %failure.error, "retrying model call");
        if let Some(observer) = &self.config.on_retry {
            (observer.0)(&HttpNotice::Retry(crate::config::RetryNotice {
                attempt: retries.count,
                of: self.config.retry.max_retries,
                wait,
                error: failure.error.to_string(),
            }));
        }
        tokio::time::sleep(wait).await;
        Ok(())
    }

    /// Sends `call` and reads the whole body (retrying, too, a connection
    /// that breaks while the body is read).
    pub async fn fetch(&self, call: &HttpCall) -> Result<(Bytes, Option<String>), ModelError> {
        let mut retries = Tries::default();
        loop {
            let response = self.send(call, &mut retries).await?;
            let request_id = request_id(response.headers());
            match self.read_body(response, &call.url).await {
                Ok(body) => return Ok((body, request_id)),
                Err(failure) => self.pause_or_fail(failure, &mut retries).await?,
            }
        }
    }

    /// One try: a success response, or a failure saying whether to retry.
    async fn attempt(&self, call: &HttpCall) -> Result<reqwest::Response, Failure> {
        let send = self
            .http
            .post(&call.url)
            .headers(call.headers.clone())
            .body(call.body.clone())
            .send();
        let response = match tokio::time::timeout(self.config.idle_timeout, send).await {
            Err(_) => return Err(self.timeout(&call.url, "waiting for the response headers")),
            Ok(Err(e)) => return Err(transport_failure(&call.url, &e)),
            Ok(Ok(r)) => r,
        };
        let status = response.status().as_u16();
        if response.status().is_success() {
            return Ok(response);
        }
        let headers = response.headers().clone();
        let retryable = retry::should_retry_status(status, &headers);
        let request_id = request_id(&headers);
        let body = self
            .read_body(response, &call.url)
            .await
            .unwrap_or_default();
        Err(Failure {
            error: ModelError::Api(api_error(status, &body, request_id)),
            retryable,
            headers: Some(headers),
            few: false,
        })
    }

    /// The whole body, each piece within the idle timeout.
    async fn read_body(&self, response: reqwest::Response, url: &str) -> Result<Bytes, Failure> {
        let mut stream = response.bytes_stream();
        let mut body = Vec::new();
        loop {
            match tokio::time::timeout(self.config.idle_timeout, stream.next()).await {
                Err(_) => return Err(self.timeout(url, "reading the response body")),
                Ok(None) => return Ok(Bytes::from(body)),
                Ok(Some(Err(e))) => return Err(transport_failure(url, &e)),
                Ok(Some(Ok(chunk))) => body.extend_from_slice(&chunk),
            }
        }
    }

    pub fn timeout(&self, url: &str, phase: &'static str) -> Failure {
        Failure {
            error: ModelError::Timeout {
                url: url.to_owned(),
                phase,
                after: self.config.idle_timeout,
            },
            retryable: true,
            headers: None,
            few: false,
        }
    }

    /// The longest silence in a streamed reply, and how often a silence is
    /// said.
    pub fn stall_limits(&self) -> (Duration, Duration) {
        (self.config.stall_limit, self.config.silence_notice)
    }

    /// Tells the observer a stream has been silent `silent_for`.
    pub fn say_silence(&self, silent_for: Duration) {
        if let Some(observer) = &self.config.on_retry {
            (observer.0)(&HttpNotice::Silent {
                silent_for,
                limit: self.config.stall_limit,
            });
        }
    }

    /// A stream silent past the stall limit.
    pub fn stalled(&self, url: &str) -> Failure {
        Failure {
            error: ModelError::Timeout {
                url: url.to_owned(),
                phase: crate::error::STALLED,
                after: self.config.stall_limit,
            },
            retryable: true,
            headers: None,
            few: false,
        }
    }
}

fn transport_failure(url: &str, e: &reqwest::Error) -> Failure {
    Failure {
        error: ModelError::Connect {
            url: url.to_owned(),
            message: root_cause(e),
        },
        retryable: !e.is_builder(),
        headers: None,
        few: e.is_connect(),
    }
}

/// An error and its causes, joined: reqwest's own message alone rarely
/// says what went wrong.
pub(crate) fn error_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        let part = s.to_string();
        if !text.contains(&part) {
            text.push_str(": ");
            text.push_str(&part);
        }
        source = s.source();
    }
    text
}

/// What went wrong at the bottom of an error's causes (`Connection
/// refused (os error 111)`, not reqwest's three layers around it).
pub(crate) fn root_cause(e: &dyn std::error::Error) -> String {
    let mut cause = e;
    while let Some(deeper) = cause.source() {
        cause = deeper;
    }
    cause.to_string()
}

/// The `request-id` header (Anthropic), or `x-request-id` (others).
pub(crate) fn request_id(headers: &HeaderMap) -> Option<String> {
    ["request-id", "x-request-id"]
        .iter()
        .find_map(|name| headers.get(*name)?.to_str().ok().map(str::to_owned))
}

/// An error body (`{"error": {"type", "message"}}`, or `{"error": "…"}`),
/// typed.
pub(crate) fn api_error(status: u16, body: &[u8], request_id: Option<String>) -> ApiError {
    let parsed: Option<serde_json::Value> = serde_json::from_slice(body).ok();
    let error = parsed.as_ref().and_then(|v| v.get("error"));
    let error_type = error
        .and_then(|e| e.get("type"))
        .and_then(|t| t.as_str())
        .map(str::to_owned);
    let message = match error {
        Some(serde_json::Value::String(s)) => Some(s.clone()),
        Some(e) => e.get("message").and_then(|m| m.as_str()).map(str::to_owned),
        None => None,
    }
    .unwrap_or_else(|| excerpt(&String::from_utf8_lossy(body), 300));
    let request_id = request_id.or_else(|| {
        parsed
            .as_ref()
            .and_then(|v| v.get("request_id")?.as_str().map(str::to_owned))
    });
    ApiError {
        status: Some(status),
        kind: ApiErrorKind::classify(error_type.as_deref(), Some(status)),
        error_type: error_type.unwrap_or_default(),
        message: if message.is_empty() {
            "(empty body)".to_owned()
        } else {
            message
        },
        request_id,
    }
}

/// The start of `text`, at most `max` characters, for error messages.
pub(crate) fn excerpt(text: &str, max: usize) -> String {
    let mut chars = text.chars();
    let head: String = chars.by_ref().take(max).collect();
    if chars.next().is_some() {
        format!("{head}…")
    } else {
        head
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_bodies_of_every_shape_are_typed() {
        let e = api_error(
            529,
            br#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
            Some("req_1".into()),
        );
        assert_eq!(e.kind, ApiErrorKind::Overloaded);
        assert_eq!(e.message, "Overloaded");
        let e = api_error(404, br#"{"error":"model 'x' not found"}"#, None);
        assert_eq!(e.kind, ApiErrorKind::NotFound);
        assert_eq!(e.message, "model 'x' not found");
        let e = api_error(502, b"<html>bad gateway</html>", None);
        assert_eq!(e.kind, ApiErrorKind::Server);
        assert!(e.message.contains("bad gateway"));
    }
}

/// How a call has fared so far: its retries, and how many of its last
/// answers in a row said the model is overloaded.
#[derive(Clone, Copy, Debug, Default)]
pub struct Tries {
    /// Retries made.
    pub count: u32,
    /// Overloaded answers in a row.
    pub overloaded: u32,
}
