//! The SDK's client when the engine's side goes away: nothing waits for
//! an answer that cannot come.

use protocol::{Client, ClientError};
use std::time::Duration;

#[tokio::test]
async fn a_request_after_the_engine_closed_fails_at_once() {
    // The engine's side: an output that ends at once, an input that takes
    // anything.
    let (client, _events) = Client::connect(tokio::io::empty(), tokio::io::sink());
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while !client.is_closed() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the end was never seen"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    for _ in 0..3 {
        let asked = tokio::time::timeout(
            Duration::from_millis(500),
            client.notify(serde_json::json!({"kind": "output"})),
        )
        .await
        .expect("a request after the end waited for an answer that cannot come");
        assert!(matches!(asked, Err(ClientError::Closed)), "{asked:?}");
    }
}
