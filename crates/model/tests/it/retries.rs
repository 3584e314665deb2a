//! Every retry rule, against the fake, which counts and times the
//! attempts.

use crate::common;

use common::{config, fake, request};
use model::{AnthropicClient, ApiErrorKind, ModelError};
use std::time::Duration;
use testkit::{FakeModel, Fault, Pace, Reply, Turn};

fn ok() -> Turn {
    Turn::reply(Reply::text("fine"))
}

/// A streamed request, read to its end.
async fn streamed(client: &AnthropicClient) -> Result<model::MessageResponse, ModelError> {
    client.stream(&request()).await?.finish().await
}

fn client_with(fake: &FakeModel, f: impl FnOnce(&mut model::AnthropicConfig)) -> AnthropicClient {
    let mut c = config(fake);
    f(&mut c);
    AnthropicClient::new(c).unwrap()
}

/// The gaps between the arrivals of the fake's requests.
fn gaps(fake: &FakeModel) -> Vec<Duration> {
    let r = fake.requests();
    r.windows(2)
        .map(|w| w[1].received - w[0].received)
        .collect()
}

#[tokio::test]
async fn retryable_statuses_are_retried_then_succeed() {
    for status in [408, 409, 429, 500, 502, 503, 504, 529] {
        let fake = fake(vec![Turn::error(status, "try again"), ok()]).await;
        let reply = common::client(&fake).create(&request()).await;
        assert_eq!(reply.unwrap().text(), "fine", "status {status}");
        assert_eq!(fake.requests().len(), 2, "status {status}");
    }
}

#[tokio::test]
async fn other_statuses_are_not_retried_and_are_typed() {
    let cases = [
        (400, ApiErrorKind::InvalidRequest),
        (401, ApiErrorKind::Authentication),
        (403, ApiErrorKind::Permission),
        (404, ApiErrorKind::NotFound),
        (413, ApiErrorKind::RequestTooLarge),
    ];
    for (status, kind) in cases {
        let fake = fake(vec![Turn::error(status, "no"), ok()]).await;
        let err = common::client(&fake).create(&request()).await.unwrap_err();
        let api = err.api().expect("an API error");
        assert_eq!((api.status, &api.kind), (Some(status), &kind));
        assert!(api.request_id.is_some(), "request-id kept for {status}");
        assert_eq!(fake.requests().len(), 1, "status {status}");
    }
}

#[tokio::test]
async fn x_should_retry_decides_when_present() {
    let fake = fake(vec![
        Turn::error(400, "flaky").header("x-should-retry", "true"),
        ok(),
    ])
    .await;
    assert!(common::client(&fake).create(&request()).await.is_ok());
    assert_eq!(fake.requests().len(), 2);

    let fake = common::fake(vec![
        Turn::error(529, "Overloaded").header("x-should-retry", "false"),
        ok(),
    ])
    .await;
    let err = common::client(&fake).create(&request()).await.unwrap_err();
    assert_eq!(err.api().unwrap().kind, ApiErrorKind::Overloaded);
    assert_eq!(fake.requests().len(), 1);
}

#[tokio::test]
async fn max_retries_bounds_the_attempts() {
    let fake = fake(vec![
        Turn::error(529, "Overloaded"),
        Turn::error(529, "Overloaded"),
        Turn::error(529, "Overloaded"),
        Turn::error(529, "Overloaded"),
        ok(),
    ])
    .await;
    let err = common::client(&fake).create(&request()).await.unwrap_err();
    assert_eq!(err.api().unwrap().kind, ApiErrorKind::Overloaded);
    assert!(err.to_string().contains("overloaded"), "{err}");
    assert_eq!(
        fake.requests().len(),
        3,
        "one try and the default two retries"
    );

    let fake = common::fake(vec![Turn::error(500, "boom"), ok()]).await;
    let client = client_with(&fake, |c| c.http.retry.max_retries = 0);
    assert!(client.create(&request()).await.is_err());
    assert_eq!(fake.requests().len(), 1);
}

#[tokio::test]
async fn retry_after_ms_overrides_the_backoff() {
    let fake = fake(vec![
        Turn::error(429, "slow down").header("retry-after-ms", "80"),
        Turn::error(529, "Overloaded")
            .header("retry-after-ms", "50")
            .header("retry-after", "30"),
        ok(),
    ])
    .await;
    // The backoff alone would wait about a millisecond.
    common::client(&fake).create(&request()).await.unwrap();
    let gaps = gaps(&fake);
    assert_eq!(gaps.len(), 2);
    assert!(gaps[0] >= Duration::from_millis(80), "{gaps:?}");
    assert!(gaps[1] >= Duration::from_millis(50), "{gaps:?}");
    assert!(
        gaps[1] < Duration::from_secs(30),
        "retry-after-ms comes first: {gaps:?}"
    );
}

#[tokio::test]
async fn retry_after_in_seconds_and_as_a_date() {
    let fake = fake(vec![
        Turn::error(429, "slow down").header("retry-after", "0.3"),
        ok(),
    ])
    .await;
    common::client(&fake).create(&request()).await.unwrap();
    assert!(
        gaps(&fake)[0] >= Duration::from_millis(300),
        "{:?}",
        gaps(&fake)
    );

    let when = std::time::SystemTime::now() + Duration::from_secs(2);
    let date = httpdate::fmt_http_date(when);
    let fake = common::fake(vec![
        Turn::error(503, "later").header("retry-after", date),
        ok(),
    ])
    .await;
    common::client(&fake).create(&request()).await.unwrap();
    // The date has whole seconds, so the wait is between one and two.
    assert!(
        gaps(&fake)[0] >= Duration::from_millis(900),
        "{:?}",
        gaps(&fake)
    );
}

#[tokio::test]
async fn backoff_doubles_without_retry_after() {
    let fake = fake(vec![Turn::error(500, "a"), Turn::error(500, "b"), ok()]).await;
    let client = client_with(&fake, |c| {
        c.http.retry.initial_backoff = Duration::from_millis(60);
        c.http.retry.max_backoff = Duration::from_secs(1);
    });
    client.create(&request()).await.unwrap();
    let gaps = gaps(&fake);
    // 60 ms then 120 ms, each less at most a quarter of jitter.
    assert!(gaps[0] >= Duration::from_millis(45), "{gaps:?}");
    assert!(gaps[1] >= Duration::from_millis(90), "{gaps:?}");
}

#[tokio::test]
async fn a_stream_cut_before_any_content_is_sent_again() {
    let fake = fake(vec![ok().fault(Fault::Drop { after_events: 2 }), ok()]).await;
    let message = common::client(&fake)
        .stream(&request())
        .await
        .unwrap()
        .finish()
        .await
        .unwrap();
    assert_eq!(message.text(), "fine");
    assert_eq!(fake.requests().len(), 2);
}

#[tokio::test]
async fn no_retry_once_a_stream_has_delivered_content() {
    let fake = fake(vec![ok().fault(Fault::Drop { after_events: 4 }), ok()]).await;
    let mut stream = common::client(&fake).stream(&request()).await.unwrap();
    let mut delivered = 0;
    let err = loop {
        match stream.next_event().await {
            Ok(Some(_)) => delivered += 1,
            Ok(None) => panic!("the stream was cut; it cannot complete"),
            Err(e) => break e,
        }
    };
    assert!(delivered > 0);
    let ModelError::Interrupted { delivered: d, .. } = &err else {
        panic!("expected Interrupted, got {err:?}");
    };
    assert_eq!(*d, delivered);
    assert_eq!(fake.requests().len(), 1, "not sent again");
}

#[tokio::test]
async fn a_whole_reply_cut_midway_is_retried() {
    let fake = fake(vec![ok().fault(Fault::Drop { after_events: 0 }), ok()]).await;
    let reply = common::client(&fake).create(&request()).await.unwrap();
    assert_eq!(reply.text(), "fine");
    assert_eq!(fake.requests().len(), 2);
}

#[tokio::test]
async fn a_slow_first_byte_times_out_and_is_retried() {
    let slow = ok().pace(Pace {
        first_byte_delay_ms: Some(400),
        ..Pace::default()
    });
    let fake = fake(vec![slow.clone(), ok()]).await;
    let client = client_with(&fake, |c| c.http.idle_timeout = Duration::from_millis(100));
    let message = streamed(&client).await.unwrap();
    assert_eq!(message.text(), "fine");
    assert_eq!(fake.requests().len(), 2);

    let fake = common::fake(vec![slow, ok()]).await;
    let client = client_with(&fake, |c| {
        c.http.idle_timeout = Duration::from_millis(100);
        c.http.retry.max_retries = 0;
    });
    let err = client.create(&request()).await.unwrap_err();
    assert!(matches!(err, ModelError::Timeout { .. }), "{err:?}");
    assert!(err.to_string().contains("set API_TIMEOUT_MS"), "{err}");
}

#[tokio::test]
async fn a_stream_that_stalls_before_content_is_sent_again() {
    // message_start and ping arrive, then silence.
    let stalling = ok().fault(Fault::Stall {
        after_events: 2,
        ms: 600,
    });
    let fake = fake(vec![stalling, ok()]).await;
    let client = client_with(&fake, |c| c.http.stall_limit = Duration::from_millis(150));
    let message = streamed(&client).await.unwrap();
    assert_eq!(message.text(), "fine");
    assert_eq!(fake.requests().len(), 2);
}

#[tokio::test]
async fn a_stream_that_stalls_after_content_is_an_interruption() {
    // message_start, ping, the block's start and a text delta, then silence.
    let stalling = ok().fault(Fault::Stall {
        after_events: 4,
        ms: 600,
    });
    let fake = fake(vec![stalling, ok()]).await;
    let client = client_with(&fake, |c| c.http.stall_limit = Duration::from_millis(150));
    let err = streamed(&client).await.unwrap_err();
    let ModelError::Interrupted {
        delivered, message, ..
    } = &err
    else {
        panic!("expected Interrupted, got {err:?}");
    };
    assert_eq!(*delivered, 2, "the block start and one text delta");
    assert!(message.contains("sent nothing"), "{message}");
    assert_eq!(fake.requests().len(), 1);
}

#[tokio::test]
async fn connection_refused_is_explained() {
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let config = model::AnthropicConfig {
        base_url: format!("http://127.0.0.1:{port}"),
        http: model::HttpConfig {
            retry: common::fast_retries(),
            ..model::HttpConfig::default()
        },
        ..model::AnthropicConfig::default()
    };
    let err = AnthropicClient::new(config)
        .unwrap()
        .create(&request())
        .await
        .unwrap_err();
    assert!(matches!(err, ModelError::Connect { .. }), "{err:?}");
    let text = err.to_string();
    assert!(text.contains(&format!("127.0.0.1:{port}")), "{text}");
    assert!(text.contains("check the base URL"), "{text}");
}

#[tokio::test]
async fn a_silent_stream_is_said_while_it_waits_and_given_up_at_the_stall_limit() {
    // message_start and ping arrive, then 700 ms of silence, then the rest.
    let stalling = || {
        ok().fault(Fault::Stall {
            after_events: 2,
            ms: 700,
        })
    };
    let notices = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = notices.clone();
    let observer = model::RetryObserver(std::sync::Arc::new(move |n: &model::HttpNotice| {
        seen.lock().unwrap().push(n.clone());
    }));
    let fake = fake(vec![stalling()]).await;
    let client = client_with(&fake, |c| {
        c.http.silence_notice = Duration::from_millis(200);
        c.http.stall_limit = Duration::from_secs(5);
        c.http.on_retry = Some(observer.clone());
    });
    let message = streamed(&client).await;
    assert_eq!(
        message.unwrap().text(),
        "fine",
        "waited out, within the limit"
    );
    let said = notices.lock().unwrap().clone();
    assert!(
        said.len() >= 2,
        "each 200 ms of the silence is said: {said:?}"
    );
    for (i, n) in said.iter().enumerate() {
        let model::HttpNotice::Silent { silent_for, limit } = n else {
            panic!("only silences: {said:?}");
        };
        assert_eq!(*silent_for, Duration::from_millis(200) * (i as u32 + 1));
        assert_eq!(*limit, Duration::from_secs(5));
    }

    // Past the limit, with nothing delivered: retried; once out of retries,
    // the stall is the error.
    let fake = common::fake(vec![stalling(), stalling()]).await;
    let client = client_with(&fake, |c| {
        c.http.silence_notice = Duration::from_millis(100);
        c.http.stall_limit = Duration::from_millis(250);
        c.http.retry.max_retries = 1;
    });
    let err = streamed(&client).await.unwrap_err();
    assert!(matches!(err, ModelError::Timeout { .. }), "{err:?}");
    assert!(err.to_string().contains("it stalled"), "{err}");
    assert!(
        err.to_string().contains("HC_STREAM_IDLE_TIMEOUT_MS"),
        "{err}"
    );
    assert_eq!(fake.requests().len(), 2, "sent again once");
}

#[test]
fn ten_retries_by_default_and_the_limits_a_person_sets() {
    let none = model::HttpConfig::from_lookup(|_| None);
    assert_eq!(none.retry.max_retries, 10, "as Claude Code");
    assert_eq!(none.retry.max_backoff, Duration::from_secs(32));
    let set = model::HttpConfig::from_lookup(|name| match name {
        "CLAUDE_CODE_MAX_RETRIES" => Some("3".into()),
        "HC_STREAM_IDLE_TIMEOUT_MS" => Some("1500".into()),
        "API_TIMEOUT_MS" => Some("nonsense".into()),
        _ => None,
    });
    assert_eq!(set.retry.max_retries, 3);
    assert_eq!(set.stall_limit, Duration::from_millis(1500));
    assert_eq!(
        set.idle_timeout,
        Duration::from_secs(600),
        "not a number: the default"
    );
    let ours = model::HttpConfig::from_lookup(|name| match name {
        "CLAUDE_CODE_MAX_RETRIES" => Some("3".into()),
        "HC_MAX_RETRIES" => Some("0".into()),
        _ => None,
    });
    assert_eq!(ours.retry.max_retries, 0, "HC_MAX_RETRIES first");
}
