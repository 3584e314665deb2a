//! [`ModelError`]: everything that can go wrong talking to a model, each
//! with a message that says what to do.

use std::fmt;
use std::time::Duration;

/// The phase of a [`ModelError::Timeout`] for a streamed reply gone silent.
pub(crate) const STALLED: &str = "waiting for the next piece of the streamed reply (it stalled)";

/// A failed model call.
#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    /// The API answered with an error: an HTTP error status, or an `error`
    /// event inside a stream.
    #[error("{0}")]
    Api(ApiError),
    /// The server could not be reached, or the connection broke before
    /// anything of the reply arrived (retried before this is returned).
    #[error(
        "cannot reach the model API at {url}: {message}; check the base URL (ANTHROPIC_BASE_URL, or OPENAI_BASE_URL), that the server is up, and your network"
    )]
    Connect {
        /// Where.
        url: String,
        /// The transport's account.
        message: String,
    },
    /// Nothing arrived for the configured idle timeout.
    #[error(
        "the model API at {url} sent nothing for {}s while {phase}; to wait longer, set API_TIMEOUT_MS or, for a streamed reply, HC_STREAM_IDLE_TIMEOUT_MS (milliseconds)",
        after.as_secs_f64()
    )]
    Timeout {
        /// Where.
        url: String,
        /// What the client was waiting for.
        phase: &'static str,
        /// The idle timeout.
        after: Duration,
    },
    /// The stream broke after content had been delivered; not retried, so
    /// no text is duplicated.
    #[error(
        "the reply stream broke after {delivered} event(s) had been delivered: {message}; the reply is incomplete, call again to start over"
    )]
    Interrupted {
        /// Events the caller had received.
        delivered: usize,
        /// What happened.
        message: String,
        /// The `request-id`, if the API gave one.
        request_id: Option<String>,
    },
    /// The model's tool input was not valid JSON when its block ended.
    #[error(
        "the model's input for tool `{tool}` (block {index}) is not valid JSON: {message}; it wrote: {excerpt}"
    )]
    InvalidToolInput {
        /// The block index.
        index: usize,
        /// The tool's name.
        tool: String,
        /// The parser's account.
        message: String,
        /// The start of what the model wrote.
        excerpt: String,
    },
    /// The API sent something that does not follow its own format.
    #[error("unexpected data from the model API: {message}")]
    Protocol {
        /// What was wrong, with an excerpt.
        message: String,
        /// The `request-id`, if the API gave one.
        request_id: Option<String>,
    },
    /// The request was refused before it was sent.
    #[error("invalid request: {0}")]
    InvalidRequest(String),
    /// The client's configuration is unusable.
    #[error("model configuration: {0}")]
    Config(String),
    /// The provider cannot do this.
    #[error("{0}")]
    Unsupported(String),
}

impl ModelError {
    /// The API error, when that is what this is.
    pub fn api(&self) -> Option<&ApiError> {
        match self {
            ModelError::Api(e) => Some(e),
            _ => None,
        }
    }

    /// The `request-id` the API gave, for a bug report.
    pub fn request_id(&self) -> Option<&str> {
        match self {
            ModelError::Api(e) => e.request_id.as_deref(),
            ModelError::Interrupted { request_id, .. }
            | ModelError::Protocol { request_id, .. } => request_id.as_deref(),
            _ => None,
        }
    }

    /// Whether a streamed reply went silent past the stall limit.
    pub fn is_stall(&self) -> bool {
        matches!(self, ModelError::Timeout { phase, .. } if *phase == STALLED)
    }

    /// Whether the prompt no longer fits the context window (compact, then
    /// retry once).
    pub fn is_prompt_too_long(&self) -> bool {
        self.api().is_some_and(ApiError::is_prompt_too_long)
    }

    pub(crate) fn protocol(message: impl Into<String>, request_id: Option<&str>) -> ModelError {
        ModelError::Protocol {
            message: message.into(),
            request_id: request_id.map(str::to_owned),
        }
    }
}

/// What kind of API error, from `error.type` (or, failing that, the
/// status).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ApiErrorKind {
    /// 400 `invalid_request_error` (includes "prompt is too long").
    InvalidRequest,
    /// 401 `authentication_error`.
    Authentication,
    /// 402 `billing_error`.
    Billing,
    /// 403 `permission_error`.
    Permission,
    /// 404 `not_found_error`.
    NotFound,
    /// 413 `request_too_large`.
    RequestTooLarge,
    /// 429 `rate_limit_error`.
    RateLimit,
    /// 500 `api_error`.
    Server,
    /// 504 `timeout_error`.
    Timeout,
    /// 529 `overloaded_error`.
    Overloaded,
    /// Anything else, by its `error.type` (or `http_STATUS`).
    Other(String),
}

impl ApiErrorKind {
    /// The kind for an `error.type`, falling back on the HTTP status.
    pub fn classify(error_type: Option<&str>, status: Option<u16>) -> ApiErrorKind {
        match error_type {
            Some("invalid_request_error") => return ApiErrorKind::InvalidRequest,
            Some("authentication_error") => return ApiErrorKind::Authentication,
            Some("billing_error") => return ApiErrorKind::Billing,
            Some("permission_error") => return ApiErrorKind::Permission,
            Some("not_found_error") => return ApiErrorKind::NotFound,
            Some("request_too_large") => return ApiErrorKind::RequestTooLarge,
            Some("rate_limit_error") => return ApiErrorKind::RateLimit,
            Some("api_error") => return ApiErrorKind::Server,
            Some("timeout_error") => return ApiErrorKind::Timeout,
            Some("overloaded_error") => return ApiErrorKind::Overloaded,
            _ => {}
        }
        match status {
            Some(400) | Some(422) => ApiErrorKind::InvalidRequest,
            Some(401) => ApiErrorKind::Authentication,
            Some(402) => ApiErrorKind::Billing,
            Some(403) => ApiErrorKind::Permission,
            Some(404) => ApiErrorKind::NotFound,
            Some(413) => ApiErrorKind::RequestTooLarge,
            Some(429) => ApiErrorKind::RateLimit,
            Some(504) => ApiErrorKind::Timeout,
            Some(529) => ApiErrorKind::Overloaded,
            Some(s) if s >= 500 => ApiErrorKind::Server,
            _ => ApiErrorKind::Other(match (error_type, status) {
                (Some(t), _) => t.to_owned(),
                (None, Some(s)) => format!("http_{s}"),
                (None, None) => "unknown".to_owned(),
            }),
        }
    }

    fn advice(&self) -> &'static str {
        match self {
            ApiErrorKind::InvalidRequest => "the API refused the request as malformed; fix it",
            ApiErrorKind::Authentication => {
                "check the API key (ANTHROPIC_API_KEY or ANTHROPIC_AUTH_TOKEN; OPENAI_API_KEY for an OpenAI-compatible server)"
            }
            ApiErrorKind::Billing => "check the account's plan and billing",
            ApiErrorKind::Permission => "the key may not use this model or feature",
            ApiErrorKind::NotFound => {
                "the address was not found: check the base URL (ANTHROPIC_BASE_URL is the server's \
                 address, without /v1; OPENAI_BASE_URL ends in /v1)"
            }
            ApiErrorKind::RequestTooLarge => {
                "the request is over the API's size limit; send less (fewer or smaller attachments)"
            }
            ApiErrorKind::RateLimit => {
                "rate limited and out of retries; wait, or run fewer calls at once"
            }
            ApiErrorKind::Server => "the API failed; try again",
            ApiErrorKind::Timeout => "the API timed out; try again, or stream the reply",
            ApiErrorKind::Overloaded => "the API is overloaded; try again later",
            ApiErrorKind::Other(_) => "see the message",
        }
    }
}

/// An error the API reported.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiError {
    /// The HTTP status; `None` for an `error` event inside a stream that had
    /// started with 200.
    pub status: Option<u16>,
    /// The kind.
    pub kind: ApiErrorKind,
    /// `error.type` as sent (empty when the body had none).
    pub error_type: String,
    /// `error.message` as sent (or the start of the body).
    pub message: String,
    /// The `request-id` response header.
    pub request_id: Option<String>,
}

impl ApiError {
    /// An `error` event inside a stream that had started with 200.
    pub(crate) fn mid_stream(
        error_type: Option<String>,
        message: String,
        request_id: Option<String>,
    ) -> ModelError {
        ModelError::Api(ApiError {
            status: None,
            kind: ApiErrorKind::classify(error_type.as_deref(), None),
            error_type: error_type.unwrap_or_default(),
            message,
            request_id,
        })
    }

    /// Whether the API does not know the model asked for (Anthropic's 404
    /// `not_found_error` "model: …"; a 400 or 404 saying the model is not
    /// found or does not exist, as OpenAI-compatible servers do).
    pub fn is_model_not_found(&self) -> bool {
        let message = self.message.to_lowercase();
        let about_model = message.contains("model");
        let missing = message.contains("not found")
            || message.contains("not_found")
            || message.contains("does not exist")
            || message.contains("unknown model");
        match self.kind {
            ApiErrorKind::NotFound => about_model,
            ApiErrorKind::InvalidRequest => about_model && missing,
            _ => self.error_type == "model_not_found",
        }
    }

    /// Whether this is the 400 for a prompt over the context window.
    pub fn is_prompt_too_long(&self) -> bool {
        self.kind == ApiErrorKind::InvalidRequest
            && self.message.to_lowercase().contains("prompt is too long")
    }
}

impl fmt::Display for ApiError {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        let status = match self.status {
            Some(s) => format!("HTTP {s}"),
            None => "error event mid-stream".to_owned(),
        };
        let kind = if self.error_type.is_empty() {
            String::new()
        } else {
            format!(" {}", self.error_type)
        };
        let advice = if self.is_prompt_too_long() {
            "the conversation no longer fits the model's context window; compact it and retry"
        } else if self.is_model_not_found() {
            "check the model name: it may not exist, or this key may not use it"
        } else {
            self.kind.advice()
        };
        write!(
            f,
            "the model API answered {status}{kind}: {}; {advice}",
            self.message
        )?;
        if let Some(id) = &self.request_id {
            write!(f, " (request-id {id})")?;
        }
        Ok(())
    }
}

impl std::error::Error for ApiError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_come_from_the_type_then_the_status() {
        let k = ApiErrorKind::classify(Some("overloaded_error"), Some(500));
        assert_eq!(k, ApiErrorKind::Overloaded);
        assert_eq!(
            ApiErrorKind::classify(None, Some(529)),
            ApiErrorKind::Overloaded
        );
        assert_eq!(
            ApiErrorKind::classify(None, Some(502)),
            ApiErrorKind::Server
        );
        assert_eq!(
            ApiErrorKind::classify(Some("new_error"), Some(418)),
            ApiErrorKind::Other("new_error".into())
        );
    }

    #[test]
    fn prompt_too_long_says_to_compact() {
        let e = ApiError {
            status: Some(400),
            kind: ApiErrorKind::InvalidRequest,
            error_type: "invalid_request_error".into(),
            message: "prompt is too long: 210000 tokens > 200000 maximum".into(),
            request_id: Some("req_1".into()),
        };
        assert!(e.is_prompt_too_long());
        let text = e.to_string();
        assert!(text.contains("compact it"), "{text}");
        assert!(text.contains("req_1"), "{text}");
    }
}
