//! `web-fetch` against a real HTTP server on 127.0.0.1.

use crate::common::*;
use axum::Router;
use axum::body::{Body, Bytes};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::get;
use serde_json::json;
use std::time::Duration;

const PAGE: &str = "<html><head><title>T</title><style>.hide { color: red }</style>\
    <script>var secret = 'SCRIPT_TEXT';</script></head>\
    <body><h1>Welcome</h1><p>Hello <b>there</b>, see <a href=\"/docs\">the docs</a>.</p></body></html>";

fn typed(ty: &'static str, body: impl Into<Body>) -> Response {
    ([(header::CONTENT_TYPE, ty)], body.into()).into_response()
}

/// Serves the test pages; answers the server's base URL.
async fn server() -> String {
    let app = Router::new()
        .route(
            "/page",
            get(|| async { typed("text/html; charset=utf-8", PAGE) }),
        )
        .route(
            "/json",
            get(|| async { typed("application/json", r#"{"b":1,"a":[1,2]}"#) }),
        )
        .route("/moved", get(|| async { Redirect::temporary("/page") }))
        .route("/loop", get(|| async { Redirect::temporary("/loop") }))
        .route(
            "/missing",
            get(|| async {
                (
                    StatusCode::NOT_FOUND,
                    [(header::CONTENT_TYPE, "text/plain")],
                    "no such page here",
                )
                    .into_response()
            }),
        )
        .route(
            "/doc.pdf",
            get(|| async { typed("application/pdf", "%PDF-1.4 not really") }),
        )
        .route(
            "/huge",
            get(|| async {
                let chunk = Bytes::from(vec![b'a'; 1 << 20]);
                let stream = futures_util::stream::iter(
                    (0..40).map(move |_| Ok::<_, std::io::Error>(chunk.clone())),
                );
                typed("text/plain", Body::from_stream(stream))
            }),
        )
        .route(
            "/slow",
            get(|| async {
                let stream = futures_util::stream::unfold(0u32, |n| async move {
                    if n > 0 {
                        tokio::time::sleep(Duration::from_secs(20)).await;
                    }
                    (n < 2).then(|| (Ok::<_, std::io::Error>(Bytes::from("tick\n")), n + 1))
                });
                typed("text/plain", Body::from_stream(stream))
            }),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    format!("http://{addr}")
}

#[tokio::test(flavor = "multi_thread")]
async fn pages_become_text_without_tags_or_scripts() {
    let base = server().await;
    let p = Project::new();
    let a = p
        .tool("web-fetch", json!({"url": format!("{base}/page")}))
        .await
        .ok();
    assert!(
        a.text.contains("Welcome") && a.text.contains("Hello") && a.text.contains("there"),
        "{}",
        a.text
    );
    assert!(a.text.contains("the docs"), "{}", a.text);
    for gone in ["<p>", "<b>", "SCRIPT_TEXT", "color: red", "<script"] {
        assert!(!a.text.contains(gone), "`{gone}` in {}", a.text);
    }
    assert_eq!(a.data["status"], 200);
    assert_eq!(a.data["content_type"], "text/html; charset=utf-8");
    assert_eq!(a.data["bytes"], PAGE.len());
    let moved = p
        .tool("web-fetch", json!({"url": format!("{base}/moved")}))
        .await
        .ok();
    assert_eq!(moved.data["final_url"], format!("{base}/page"));
    let j = p
        .tool("web-fetch", json!({"url": format!("{base}/json")}))
        .await
        .ok();
    assert_eq!(j.text, "{\n  \"a\": [\n    1,\n    2\n  ],\n  \"b\": 1\n}");
}

#[tokio::test(flavor = "multi_thread")]
async fn fetch_failures_are_error_results_that_say_why() {
    let base = server().await;
    let p = Project::new();
    p.tool("web-fetch", json!({"url": format!("{base}/loop")}))
        .await
        .refused("redirects more than 10 times");
    let missing = p
        .tool("web-fetch", json!({"url": format!("{base}/missing")}))
        .await
        .refused("HTTP 404");
    assert!(
        missing.text.contains("no such page here"),
        "{}",
        missing.text
    );
    p.tool("web-fetch", json!({"url": format!("{base}/doc.pdf")}))
        .await
        .refused("application/pdf");
    p.tool("web-fetch", json!({"url": "ftp://example.com/x"}))
        .await
        .refused("http and https URLs only");
    p.tool("web-fetch", json!({"url": "file:///etc/passwd"}))
        .await
        .refused("http and https URLs only");
    p.tool("web-fetch", json!({"url": "not a url"}))
        .await
        .refused("not a URL");
    let slow = p
        .tool(
            "web-fetch",
            json!({"url": format!("{base}/slow"), "timeout": 1000}),
        )
        .await;
    let slow = slow.refused("took longer than 1000 ms");
    assert!(slow.text.contains("timeout"));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_huge_body_is_cut_at_the_limit() {
    let base = server().await;
    let p = Project::new();
    let a = p
        .tool("web-fetch", json!({"url": format!("{base}/huge")}))
        .await
        .ok();
    assert_eq!(a.data["bytes"], 10 * 1024 * 1024);
    assert_eq!(a.data["truncated"], true);
    let small = p
        .tool(
            "web-fetch",
            json!({"url": format!("{base}/huge"), "max_bytes": 1000}),
        )
        .await
        .ok();
    assert_eq!(small.data["bytes"], 1000);
    assert_eq!(small.text, "a".repeat(1000));
}
