//! Gates, and the failures a person meets first: no key, a bad model, the
//! API down — each a clear message and a non-zero exit.

use crate::common::*;
use serde_json::json;

#[tokio::test(flavor = "multi_thread")]
async fn the_turn_gate_stops_the_run_with_exit_3() {
    let s = Setup::new(json!({"turns": [
        reply(json!([call("t1", "read", json!({"file_path": "a.txt"}))]), "tool_use"),
        reply(json!([text("never")]), "end_turn"),
    ]}))
    .await;
    s.file("a.txt", "a");
    let ran = s.run(&["--max-turns", "1", "go"]).await;
    assert_eq!(ran.code, 3, "{ran:#?}");
    assert!(
        ran.stderr.contains("max_turns") && ran.stderr.contains("--max-turns"),
        "{}",
        ran.stderr
    );
    assert_eq!(s.sent().len(), 1);
    let session = s.sessions().pop().unwrap();
    let agent = s
        .processes(&session)
        .into_iter()
        .find(|p| p["program"] == "program/agent")
        .unwrap();
    assert_eq!(agent["stop_reason"], "max_turns");
    assert_eq!(agent["status"], "failed");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_budget_gate_stops_the_run_with_exit_3() {
    let costly = json!({"reply": {"content": [call("t1", "read", json!({"file_path": "a.txt"}))], "stop_reason": "tool_use",
        "usage": {"input_tokens": 200000, "output_tokens": 1000}}});
    let s = Setup::new(json!({"turns": [costly, reply(json!([text("never")]), "end_turn")]})).await;
    s.file("a.txt", "a");
    let ran = s.run(&["--max-budget-usd", "0.3", "go"]).await;
    assert_eq!(ran.code, 3, "{ran:#?}");
    assert!(ran.stderr.contains("budget of $0.30"), "{}", ran.stderr);
    assert_eq!(s.sent().len(), 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn no_key_says_which_variable_to_set() {
    // `hc run` with no key at all: exit 1, naming the variable
    async fn keyless(s: &Setup) -> String {
        let out = s
            .hc(&["run", "hi"])
            .env_remove("ANTHROPIC_BASE_URL")
            .output()
            .await
            .unwrap();
        assert_eq!(out.status.code(), Some(1));
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(err.contains("ANTHROPIC_API_KEY"), "{err}");
        err
    }
    let script = json!({"turns": [reply(json!([text("unused")]), "end_turn")]});
    keyless(&Setup::new(script.clone()).await).await;
    // where there is no project yet, none is made for a run that cannot start
    let bare = Setup::bare(script).await;
    let err = keyless(&bare).await;
    assert!(!bare.root.join(".hermitcrab").exists(), "{err}");
}

#[tokio::test(flavor = "multi_thread")]
async fn an_unknown_model_is_named() {
    let s = Setup::new(json!({"turns": [{"error": {"status": 404, "type": "not_found_error", "message": "model: claude-nope"}}]})).await;
    let ran = s.run(&["--model", "claude-nope", "hi"]).await;
    assert_eq!(ran.code, 1, "{ran:#?}");
    assert!(
        ran.stderr.contains("does not know the model `claude-nope`")
            && ran.stderr.contains("--model"),
        "{}",
        ran.stderr
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn an_unreachable_api_says_what_to_check() {
    let s = Setup::new(json!({"turns": [reply(json!([text("unused")]), "end_turn")]})).await;
    let out = s
        .hc(&["run", "hi"])
        .env("ANTHROPIC_BASE_URL", "http://127.0.0.1:9")
        .output()
        .await
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("cannot reach the model API") && err.contains("ANTHROPIC_BASE_URL"),
        "{err}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn the_api_key_never_reaches_a_tool() {
    let s = Setup::new(json!({"turns": [
        reply(json!([call("t1", "shell", json!({"command": "env; tr '\\0' '\\n' < /proc/1/environ; echo END"}))]), "tool_use"),
        reply(json!([text("ok")]), "end_turn"),
    ]})).await;
    let out = s
        .hc(&["run", "--permission-mode", "bypass", "look"])
        .env("ANTHROPIC_API_KEY", "sk-ant-secret-4242")
        .output()
        .await
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let session = s.sessions().pop().unwrap();
    let text = s.of_type(&session, "tool-result")[0]["text"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(text.contains("END"), "{text}");
    assert!(
        !text.contains("sk-ant-secret-4242"),
        "the key leaked into a tool: {text}"
    );
    // and the agent did send it
    assert_eq!(
        s.fake.requests()[0].header("x-api-key"),
        Some("sk-ant-secret-4242")
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn an_empty_prompt_is_a_usage_error() {
    let s = Setup::new(json!({"turns": [reply(json!([text("unused")]), "end_turn")]})).await;
    let ran = s.run(&["   "]).await;
    assert_eq!(ran.code, 2);
    assert!(ran.stderr.contains("empty"));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_busy_api_is_retried_honouring_retry_after_and_each_try_is_said() {
    let busy = |status: u16, after: &str| json!({"error": {"status": status, "headers": {"retry-after": after}}});
    let s = Setup::new(json!({"turns": [
        busy(529, "1"),
        busy(429, "0"),
        busy(500, "0"),
        reply(json!([text("done at last")]), "end_turn"),
    ]}))
    .await;
    let ran = s.run(&["hi"]).await;
    assert_eq!(ran.code, 0, "{ran:#?}");
    assert!(ran.stdout.contains("done at last"), "{ran:#?}");
    assert_eq!(s.sent().len(), 4, "three retries, then the reply");
    let said = format!("{}{}", ran.stdout, ran.stderr);
    assert!(
        said.contains("retrying in 1.0 s · attempt 1/10"),
        "the server's retry-after, and the tries Claude Code makes: {said}"
    );
    assert!(
        said.contains("attempt 2/10") && said.contains("attempt 3/10"),
        "{said}"
    );
    assert!(said.contains("overloaded"), "why it retries: {said}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_silent_stream_is_said_and_ends_with_a_clear_error_at_the_stall_limit() {
    let stalling = json!({"reply": {"content": [text("never seen")], "stop_reason": "end_turn"},
        "fault": {"stall": {"after_events": 2, "ms": 3000}}});
    let s = Setup::new(json!({"turns": [stalling.clone(), stalling]})).await;
    let ran = s
        .hc(&["run", "hi"])
        .env("HC_STREAM_IDLE_TIMEOUT_MS", "800")
        .env("HC_MAX_RETRIES", "1")
        .output()
        .await
        .unwrap();
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&ran.stdout),
        String::from_utf8_lossy(&ran.stderr)
    );
    assert_eq!(ran.status.code(), Some(1), "{said}");
    assert!(
        said.contains("the model has sent nothing for 200 ms; waiting up to 800 ms"),
        "the silence is said while it lasts: {said}"
    );
    assert!(
        said.contains("the model's reply stalled") && said.contains("HC_STREAM_IDLE_TIMEOUT_MS"),
        "{said}"
    );
    assert_eq!(s.sent().len(), 2, "a stall before any reply is sent again");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_400_model_not_found_points_at_the_model_flag() {
    let s = Setup::new(
        json!({"turns": [{"error": {"status": 400, "type": "invalid_request_error",
        "message": "The model `gpt-nope` does not exist or you do not have access to it."}}]}),
    )
    .await;
    let ran = s.run(&["--model", "gpt-nope", "hi"]).await;
    assert_eq!(ran.code, 1, "{ran:#?}");
    assert!(
        ran.stderr.contains("does not know the model `gpt-nope`") && ran.stderr.contains("--model"),
        "{}",
        ran.stderr
    );
}
