//! Configuration: where the API is, how to authenticate, timeouts and
//! retries. Every value comes from here (or the environment through
//! `from_env`), never from a constant at a call site.

use crate::error::ModelError;
use std::time::Duration;

/// The Anthropic API's address.
pub const DEFAULT_ANTHROPIC_BASE_URL: &str = "https://api.anthropic.com";
/// The OpenAI API's address (the default for the OpenAI-compatible
/// provider; local servers set their own, e.g. `http://127.0.0.1:11434/v1`).
pub const DEFAULT_OPENAI_BASE_URL: &str = "https://api.openai.com/v1";
/// The `anthropic-version` header this crate speaks.
pub const ANTHROPIC_VERSION: &str = "2023-06-01";

/// When and how often to retry.
///
/// The rules, in order:
/// 1. `x-should-retry: true|false` decides when the server sends it.
/// 2. Otherwise 408, 409, 429 and every 5xx are retried, and so are
///    connection failures and timeouts; nothing else is.
/// 3. The wait is `retry-after-ms`, else `retry-after` (seconds, or an HTTP
///    date), when present and at most `max_retry_after`; otherwise
///    `min(initial_backoff × 2^n, max_backoff)` less up to 25 % jitter.
/// 4. At most `max_retries` retries (at most two for a connection that
///    could not be made: a wrong address more often than a blip); none once
///    a stream has delivered content (see
///    [`MessageStream`](crate::MessageStream)).
#[derive(Debug, Clone, PartialEq)]
pub struct RetryPolicy {
    /// Retries after the first attempt (default 10, as Claude Code;
    /// `HC_MAX_RETRIES` or `CLAUDE_CODE_MAX_RETRIES`).
    pub max_retries: u32,
    /// The first backoff; it doubles each retry (default 0.5 s).
    pub initial_backoff: Duration,
    /// The longest backoff (default 32 s: ten retries span about three
    /// minutes).
    pub max_backoff: Duration,
    /// The longest `retry-after` honoured; a longer one falls back to the
    /// backoff (default 5 min).
    pub max_retry_after: Duration,
    /// Overloaded answers in a row after which a call gives up, when there
    /// is somewhere else to go (a fallback model: Claude Code's 3); none:
    /// overloaded answers are retried as any.
    pub overloaded_limit: Option<u32>,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_retries: 10,
            initial_backoff: Duration::from_millis(500),
            max_backoff: Duration::from_secs(32),
            max_retry_after: Duration::from_secs(300),
            overloaded_limit: None,
        }
    }
}

/// Transport settings shared by every provider.
#[derive(Debug, Clone, PartialEq)]
pub struct HttpConfig {
    /// The longest wait to open a connection (default 10 s).
    pub connect_timeout: Duration,
    /// The longest wait for the response headers, and between two pieces
    /// of a body read whole (default 10 min, as Claude Code's
    /// `API_TIMEOUT_MS`).
    pub idle_timeout: Duration,
    /// The longest silence between two pieces of a streamed reply (default
    /// 90 s; the API pings a stream every few seconds, so a longer silence
    /// is a stalled stream: retried when nothing was delivered yet, else an
    /// error). `HC_STREAM_IDLE_TIMEOUT_MS`.
    pub stall_limit: Duration,
    /// A stream silent this long is said to the observer (default 5 s, or
    /// a quarter of a shorter stall limit), and again each time as long
    /// again passes.
    pub silence_notice: Duration,
    /// Retries.
    pub retry: RetryPolicy,
    /// Told of each retry before its wait, and of a stream gone silent (an
    /// agent shows them as status).
    pub on_retry: Option<RetryObserver>,
}

impl Default for HttpConfig {
    fn default() -> Self {
        HttpConfig {
            connect_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(600),
            stall_limit: Duration::from_secs(90),
            silence_notice: Duration::from_secs(5),
            retry: RetryPolicy::default(),
            on_retry: None,
        }
    }
}

impl HttpConfig {
    /// Defaults, with the limits a person may set in the environment:
    /// `HC_MAX_RETRIES` (or Claude Code's `CLAUDE_CODE_MAX_RETRIES`),
    /// `API_TIMEOUT_MS` and `HC_STREAM_IDLE_TIMEOUT_MS`. A value that is not
    /// a number is ignored.
    pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> HttpConfig {
        let number = |name: &str| get(name).and_then(|v| v.trim().parse::<u64>().ok());
        let mut http = HttpConfig::default();
        if let Some(n) = number("HC_MAX_RETRIES").or_else(|| number("CLAUDE_CODE_MAX_RETRIES")) {
            http.retry.max_retries = u32::try_from(n).unwrap_or(u32::MAX);
        }
        if let Some(ms) = number("API_TIMEOUT_MS").filter(|ms| *ms > 0) {
            http.idle_timeout = Duration::from_millis(ms);
        }
        if let Some(ms) = number("HC_STREAM_IDLE_TIMEOUT_MS").filter(|ms| *ms > 0) {
            http.stall_limit = Duration::from_millis(ms);
            http.silence_notice = http.silence_notice.min(http.stall_limit / 4);
        }
        http
    }
}

/// What the transport tells its observer.
#[derive(Debug, Clone, PartialEq)]
pub enum HttpNotice {
    /// A retry is about to happen.
    Retry(RetryNotice),
    /// A streamed reply has sent nothing for a while.
    Silent {
        /// For how long.
        silent_for: Duration,
        /// When the stream is given up.
        limit: Duration,
    },
}

/// A retry about to happen.
#[derive(Debug, Clone, PartialEq)]
pub struct RetryNotice {
    /// Which retry this is (1 for the first).
    pub attempt: u32,
    /// The most retries there will be.
    pub of: u32,
    /// How long until it is sent.
    pub wait: Duration,
    /// What failed.
    pub error: String,
}

/// A function told of every retry and silence.
#[derive(Clone)]
pub struct RetryObserver(pub std::sync::Arc<dyn Fn(&HttpNotice) + Send + Sync>);

impl std::fmt::Debug for RetryObserver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("RetryObserver")
    }
}

impl PartialEq for RetryObserver {
    fn eq(&self, other: &Self) -> bool {
        std::sync::Arc::ptr_eq(&self.0, &other.0)
    }
}

/// How to authenticate with the Anthropic API. Both may be set; both are
/// then sent, as the official SDKs do.
#[derive(Clone, Default, PartialEq)]
pub struct AnthropicAuth {
    /// Sent as `x-api-key` (`ANTHROPIC_API_KEY`).
    pub api_key: Option<String>,
    /// Sent as `Authorization: Bearer` (`ANTHROPIC_AUTH_TOKEN`).
    pub auth_token: Option<String>,
}

impl std::fmt::Debug for AnthropicAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.debug_struct("AnthropicAuth")
            .field("api_key", &self.api_key.as_ref().map(|_| "<set>"))
            .field("auth_token", &self.auth_token.as_ref().map(|_| "<set>"))
            .finish()
    }
}

/// Settings for [`AnthropicClient`](crate::AnthropicClient).
#[derive(Debug, Clone, PartialEq)]
pub struct AnthropicConfig {
    /// The API's base URL, without `/v1` (`ANTHROPIC_BASE_URL`).
    pub base_url: String,
    /// Credentials.
    pub auth: AnthropicAuth,
    /// Beta features for every request (`anthropic-beta`).
    pub betas: Vec<String>,
    /// Timeouts and retries.
    pub http: HttpConfig,
}

impl Default for AnthropicConfig {
    fn default() -> Self {
        AnthropicConfig {
            base_url: DEFAULT_ANTHROPIC_BASE_URL.to_owned(),
            auth: AnthropicAuth::default(),
            betas: Vec::new(),
            http: HttpConfig::default(),
        }
    }
}

impl AnthropicConfig {
    /// Defaults, with `ANTHROPIC_API_KEY`, `ANTHROPIC_AUTH_TOKEN` and
    /// `ANTHROPIC_BASE_URL` from the environment.
    pub fn from_env() -> AnthropicConfig {
        AnthropicConfig::from_lookup(|name| std::env::var(name).ok())
    }

    /// As [`from_env`](Self::from_env), reading variables through `lookup`
    /// (for a `.env` file or a test). Empty values count as unset.
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> AnthropicConfig {
        let get = |name: &str| lookup(name).filter(|v| !v.trim().is_empty());
        AnthropicConfig {
            base_url: get("ANTHROPIC_BASE_URL").map_or_else(
                || DEFAULT_ANTHROPIC_BASE_URL.to_owned(),
                |url| without_v1(&url).to_owned(),
            ),
            auth: AnthropicAuth {
                api_key: get("ANTHROPIC_API_KEY"),
                auth_token: get("ANTHROPIC_AUTH_TOKEN"),
            },
            http: HttpConfig::from_lookup(get),
            ..AnthropicConfig::default()
        }
    }

    /// Checks the configuration can make requests.
    ///
    /// # Errors
    /// No credentials for the real API, or a base URL that is not http(s).
    pub fn validate(&self) -> Result<(), ModelError> {
        let url = check_base_url(&self.base_url, "ANTHROPIC_BASE_URL")?;
        let none = self.auth.api_key.is_none() && self.auth.auth_token.is_none();
        if none && url.host_str() == Some("api.anthropic.com") {
            return Err(ModelError::Config(
                "no credentials for the Anthropic API: set ANTHROPIC_API_KEY (or ANTHROPIC_AUTH_TOKEN), or point ANTHROPIC_BASE_URL at a local server such as `hc-fake-model`".into(),
            ));
        }
        Ok(())
    }
}

/// Settings for [`OpenAiClient`](crate::OpenAiClient), for any server that
/// speaks OpenAI chat completions (OpenAI, Ollama, llama.cpp, vLLM, …).
#[derive(Clone, PartialEq)]
pub struct OpenAiConfig {
    /// The base URL including `/v1`, e.g. `http://127.0.0.1:11434/v1`
    /// (`OPENAI_BASE_URL`).
    pub base_url: String,
    /// Sent as `Authorization: Bearer` when set (`OPENAI_API_KEY`); local
    /// servers usually need none.
    pub api_key: Option<String>,
    /// Timeouts and retries.
    pub http: HttpConfig,
}

impl std::fmt::Debug for OpenAiConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.debug_struct("OpenAiConfig")
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key.as_ref().map(|_| "<set>"))
            .field("http", &self.http)
            .finish()
    }
}

impl Default for OpenAiConfig {
    fn default() -> Self {
        OpenAiConfig {
            base_url: DEFAULT_OPENAI_BASE_URL.to_owned(),
            api_key: None,
            http: HttpConfig::default(),
        }
    }
}

impl OpenAiConfig {
    /// A server at `base_url` (with `/v1`), no key.
    pub fn local(base_url: impl Into<String>) -> OpenAiConfig {
        OpenAiConfig {
            base_url: base_url.into(),
            ..OpenAiConfig::default()
        }
    }

    /// Defaults, with `OPENAI_BASE_URL` and `OPENAI_API_KEY` from the
    /// environment.
    pub fn from_env() -> OpenAiConfig {
        OpenAiConfig::from_lookup(|name| std::env::var(name).ok())
    }

    /// As [`from_env`](Self::from_env), reading variables through `lookup`.
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> OpenAiConfig {
        let get = |name: &str| lookup(name).filter(|v| !v.trim().is_empty());
        OpenAiConfig {
            base_url: get("OPENAI_BASE_URL").unwrap_or_else(|| DEFAULT_OPENAI_BASE_URL.to_owned()),
            api_key: get("OPENAI_API_KEY"),
            http: HttpConfig::from_lookup(get),
        }
    }

    /// Checks the configuration can make requests.
    ///
    /// # Errors
    /// No key for api.openai.com, or a base URL that is not http(s).
    pub fn validate(&self) -> Result<(), ModelError> {
        let url = check_base_url(&self.base_url, "OPENAI_BASE_URL")?;
        if self.api_key.is_none() && url.host_str() == Some("api.openai.com") {
            return Err(ModelError::Config(
                "no key for api.openai.com: set OPENAI_API_KEY, or set OPENAI_BASE_URL to a local server (e.g. http://127.0.0.1:11434/v1 for Ollama)".into(),
            ));
        }
        Ok(())
    }
}

fn check_base_url(base: &str, var: &str) -> Result<reqwest::Url, ModelError> {
    let url = reqwest::Url::parse(base).map_err(|e| {
        ModelError::Config(format!(
            "the base URL {base:?} is not a URL ({e}); set {var} to e.g. http://127.0.0.1:8080"
        ))
    })?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(ModelError::Config(format!(
            "the base URL {base:?} must start with http:// or https:// (check {var})"
        )));
    }
    Ok(url)
}

/// An Anthropic base URL as meant: one given with the API's `/v1` (the
/// OpenAI-compatible habit; the Messages API's paths start with it) is
/// the URL before it, so `/v1/messages` is not asked as `/v1/v1/messages`.
fn without_v1(url: &str) -> &str {
    let trimmed = url.trim_end_matches('/');
    trimmed.strip_suffix("/v1").unwrap_or(url)
}

/// `base` + `path`, without a doubled slash.
pub(crate) fn join_url(base: &str, path: &str) -> String {
    format!("{}{}", base.trim_end_matches('/'), path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_base_url_given_with_v1_is_the_url_before_it() {
        for given in ["http://127.0.0.1:9/v1", "http://127.0.0.1:9/v1/"] {
            let c = AnthropicConfig::from_lookup(|n| {
                (n == "ANTHROPIC_BASE_URL").then(|| given.to_owned())
            });
            assert_eq!(c.base_url, "http://127.0.0.1:9", "{given}");
        }
        let proxy = AnthropicConfig::from_lookup(|n| {
            (n == "ANTHROPIC_BASE_URL").then(|| "https://proxy.example/anthropic".to_owned())
        });
        assert_eq!(proxy.base_url, "https://proxy.example/anthropic");
    }

    #[test]
    fn from_lookup_reads_the_three_variables() {
        let c = AnthropicConfig::from_lookup(|n| match n {
            "ANTHROPIC_API_KEY" => Some("k".into()),
            "ANTHROPIC_AUTH_TOKEN" => Some("  ".into()),
            "ANTHROPIC_BASE_URL" => Some("http://127.0.0.1:9/".into()),
            _ => None,
        });
        assert_eq!(c.auth.api_key.as_deref(), Some("k"));
        assert_eq!(c.auth.auth_token, None);
        assert_eq!(
            join_url(&c.base_url, "/v1/messages"),
            "http://127.0.0.1:9/v1/messages"
        );
        assert!(!format!("{c:?}").contains("\"k\""));
    }

    #[test]
    fn missing_credentials_for_the_real_api_are_explained() {
        let Err(e) = AnthropicConfig::from_lookup(|_| None).validate() else {
            panic!("validated without credentials");
        };
        assert!(e.to_string().contains("ANTHROPIC_API_KEY"), "{e}");
        let local = AnthropicConfig {
            base_url: "http://127.0.0.1:1".into(),
            ..AnthropicConfig::default()
        };
        assert!(local.validate().is_ok());
        let bad = AnthropicConfig {
            base_url: "127.0.0.1:1".into(),
            ..AnthropicConfig::default()
        };
        let Err(e) = bad.validate() else {
            panic!("validated a bad URL")
        };
        assert!(e.to_string().contains("http://"), "{e}");
    }
}
