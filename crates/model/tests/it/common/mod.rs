//! Helpers shared by the integration tests: a client pointed at a fake,
//! with retries fast enough for tests.
#![allow(dead_code)]

use model::{
    AnthropicAuth, AnthropicClient, AnthropicConfig, HttpConfig, Message, MessagesRequest,
    RetryPolicy,
};
use std::time::Duration;
use testkit::{FakeModel, Script, Turn};

/// Retries that wait milliseconds, not seconds.
pub fn fast_retries() -> RetryPolicy {
    RetryPolicy {
        max_retries: 2,
        initial_backoff: Duration::from_millis(1),
        max_backoff: Duration::from_millis(5),
        max_retry_after: Duration::from_secs(60),
        overloaded_limit: None,
    }
}

/// A configuration for `fake`, with a key and fast retries.
pub fn config(fake: &FakeModel) -> AnthropicConfig {
    AnthropicConfig {
        base_url: fake.base_url(),
        auth: AnthropicAuth {
            api_key: Some("sk-test".into()),
            auth_token: None,
        },
        betas: Vec::new(),
        http: HttpConfig {
            connect_timeout: Duration::from_secs(5),
            idle_timeout: Duration::from_secs(10),
            stall_limit: Duration::from_secs(10),
            silence_notice: Duration::from_secs(10),
            retry: fast_retries(),
            on_retry: None,
        },
    }
}

/// A client for `fake`.
pub fn client(fake: &FakeModel) -> AnthropicClient {
    AnthropicClient::new(config(fake)).expect("client")
}

/// A fake serving `turns`.
pub async fn fake(turns: Vec<Turn>) -> FakeModel {
    FakeModel::start(Script::new(turns))
        .await
        .expect("fake starts")
}

/// A one-message request.
pub fn request() -> MessagesRequest {
    MessagesRequest::new("claude-sonnet-4-5", 1024, vec![Message::user("hello")])
}
