//! The fake through its public surface: the library's server and the
//! `hc-fake-model` binary, spoken to over real HTTP.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::{Value, json};
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use testkit::{FakeModel, Reply, Script, Turn};

fn messages_body(stream: bool) -> Value {
    json!({"model": "claude-sonnet-4-5", "max_tokens": 64, "stream": stream,
           "messages": [{"role": "user", "content": "hi"}]})
}

async fn post(url: &str, body: &Value, version: bool) -> reqwest::Response {
    let mut req = reqwest::Client::new().post(url).json(body);
    if version {
        req = req.header("anthropic-version", "2023-06-01");
    }
    req.send().await.unwrap()
}

/// The `data:` payloads of an SSE body.
fn data_lines(body: &str) -> Vec<Value> {
    body.lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .filter(|d| *d != "[DONE]")
        .map(|d| serde_json::from_str(d).unwrap())
        .collect()
}

#[tokio::test]
async fn a_streamed_reply_follows_the_documented_event_order() {
    let fake = FakeModel::start(Script::new(vec![Turn::reply(Reply::text("Hello there"))]))
        .await
        .unwrap();
    let response = post(
        &format!("{}/v1/messages", fake.base_url()),
        &messages_body(true),
        true,
    )
    .await;
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["content-type"], "text/event-stream");
    assert!(response.headers().contains_key("request-id"));
    let body = response.text().await.unwrap();
    let types: Vec<String> = data_lines(&body)
        .iter()
        .map(|d| d["type"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        types,
        [
            "message_start",
            "ping",
            "content_block_start",
            "content_block_delta",
            "content_block_stop",
            "message_delta",
            "message_stop"
        ]
    );
    let names: Vec<&str> = body
        .lines()
        .filter_map(|l| l.strip_prefix("event: "))
        .collect();
    assert_eq!(names, types, "each event is named as its data's type");
    let recorded = fake.requests();
    assert_eq!(recorded.len(), 1);
    assert_eq!(recorded[0].body["model"], "claude-sonnet-4-5");
    assert_eq!(recorded[0].turn, Some(0));
    assert!(recorded[0].served_in.is_some());
}

#[tokio::test]
async fn requests_the_api_would_refuse_are_refused_without_using_a_turn() {
    let fake = FakeModel::start(Script::new(vec![Turn::reply(Reply::text("ok"))]))
        .await
        .unwrap();
    let url = format!("{}/v1/messages", fake.base_url());
    let no_version = post(&url, &messages_body(false), false).await;
    assert_eq!(no_version.status(), 400);
    let body: Value = no_version.json().await.unwrap();
    assert_eq!(body["error"]["type"], "invalid_request_error");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("anthropic-version")
    );
    let no_max = post(&url, &json!({"model": "m", "messages": []}), true).await;
    assert_eq!(no_max.status(), 400);
    let ok = post(&url, &messages_body(false), true).await;
    assert_eq!(ok.status(), 200);
    let message: Value = ok.json().await.unwrap();
    assert_eq!(message["content"][0]["text"], "ok");
    assert_eq!(message["type"], "message");
}

#[tokio::test]
async fn chat_completions_stream_chunks_and_end_with_done() {
    let fake = FakeModel::start(Script::new(vec![Turn::reply(Reply::text("Hi"))]))
        .await
        .unwrap();
    let body = json!({"model": "qwen", "stream": true, "stream_options": {"include_usage": true},
                      "messages": [{"role": "user", "content": "hi"}]});
    let response = post(
        &format!("{}/chat/completions", fake.openai_base_url()),
        &body,
        false,
    )
    .await;
    let text = response.text().await.unwrap();
    assert!(text.trim_end().ends_with("data: [DONE]"));
    let chunks = data_lines(&text);
    assert_eq!(chunks[1]["choices"][0]["delta"]["content"], "Hi");
    assert_eq!(chunks[2]["choices"][0]["finish_reason"], "stop");
    assert!(chunks[3]["usage"]["completion_tokens"].is_u64());
}

#[tokio::test]
async fn unknown_paths_are_404_in_the_api_shape() {
    let fake = FakeModel::start(Script::new(vec![Turn::reply(Reply::text("ok"))]))
        .await
        .unwrap();
    let response = post(
        &format!("{}/v1/complete", fake.base_url()),
        &json!({}),
        true,
    )
    .await;
    assert_eq!(response.status(), 404);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["error"]["type"], "not_found_error");
}

/// `hc-fake-model ARG` started in `dir`; the child and the base URL it says.
fn serving(arg: &str, dir: &std::path::Path) -> (std::process::Child, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_hc-fake-model"))
        .arg(arg)
        .current_dir(dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let base = line
        .trim()
        .strip_prefix("hc-fake-model listening on ")
        .expect(&line)
        .to_owned();
    (child, base)
}

#[tokio::test]
async fn the_binary_serves_a_script_file() {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/demo.json");
    let (mut child, base) = serving(script, std::path::Path::new(env!("CARGO_MANIFEST_DIR")));
    assert!(base.starts_with("http://127.0.0.1:"), "{base}");
    let response = post(&format!("{base}/v1/messages"), &messages_body(false), true).await;
    let message: Value = response.json().await.unwrap();
    child.kill().unwrap();
    child.wait().unwrap();
    assert_eq!(message["stop_reason"], "tool_use");
    assert_eq!(message["content"][1]["name"], "read");
}

#[tokio::test]
async fn the_binary_serves_its_built_in_demo_from_anywhere() {
    // Installed, the binary has no clone beside it: `--demo` needs no file.
    let elsewhere = tempfile::tempdir().unwrap();
    let (mut child, base) = serving("--demo", elsewhere.path());
    let response = post(&format!("{base}/v1/messages"), &messages_body(false), true).await;
    let message: Value = response.json().await.unwrap();
    child.kill().unwrap();
    child.wait().unwrap();
    let file =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/demo.json")).unwrap();
    let script: Value = serde_json::from_str(&file).unwrap();
    assert_eq!(message["content"], script["turns"][0]["reply"]["content"]);
}

#[test]
fn the_binary_wants_a_script_or_demo_and_says_so() {
    let out = Command::new(env!("CARGO_BIN_EXE_hc-fake-model"))
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--demo"), "{err}");
}

#[tokio::test]
async fn the_binary_serves_on_with_its_stdout_closed() {
    // Its stdout's reader is gone before it writes a word, as with
    // `hc-fake-model … | head -0`: it still serves.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/demo.json");
    let mut child = Command::new(env!("CARGO_BIN_EXE_hc-fake-model"))
        .args([script, "--port", &port.to_string()])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    drop(child.stderr.take());
    let url = format!("http://127.0.0.1:{port}/v1/messages");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let answered = loop {
        let sent = reqwest::Client::new()
            .post(&url)
            .header("anthropic-version", "2023-06-01")
            .json(&messages_body(false))
            .send()
            .await;
        if let Ok(response) = sent {
            break response;
        }
        assert!(
            std::time::Instant::now() < deadline && child.try_wait().unwrap().is_none(),
            "the server died or never listened"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    };
    let message: Value = answered.json().await.unwrap();
    child.kill().unwrap();
    child.wait().unwrap();
    assert_eq!(message["stop_reason"], "tool_use");
}

#[test]
fn the_binary_explains_a_bad_script() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad.json");
    std::fs::write(
        &path,
        r#"{"turns": [{"reply": {"content": []}, "error": {"status": 500}}]}"#,
    )
    .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_hc-fake-model"))
        .arg(&path)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("turn 1 must have exactly one of"),
        "{stderr}"
    );

    let missing = dir.path().join("missing.json");
    let out = Command::new(env!("CARGO_BIN_EXE_hc-fake-model"))
        .arg(&missing)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("cannot read the script"), "{stderr}");
}
