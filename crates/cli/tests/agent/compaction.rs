//! Compaction: by usage, by a prompt-too-long answer, and asked for;
//! nothing deleted, the next request starting from the summary.

use crate::common::*;
use serde_json::{Value, json};

fn heavy(content: Value, stop: &str, input_tokens: u64) -> Value {
    json!({"reply": {"content": content, "stop_reason": stop, "usage": {"input_tokens": input_tokens, "output_tokens": 10}}})
}

#[tokio::test(flavor = "multi_thread")]
async fn only_the_input_counts_toward_the_threshold() {
    // 65 % of the window in, 30 % out: not above 70 % of input.
    let s = Setup::new(json!({"turns": [
        {"reply": {"content": [call("t1", "read", json!({"file_path": "a.txt"}))], "stop_reason": "tool_use",
                   "usage": {"input_tokens": 1300, "output_tokens": 600}}},
        heavy(json!([text("Done.")]), "end_turn", 1350),
    ]}))
    .await;
    s.file("a.txt", "alpha\n");
    s.file(".hermitcrab/config.toml", "context_window = 2000\n");
    let ran = s.run(&["--permission-mode", "bypass", "look"]).await;
    assert_eq!(ran.code, 0, "{ran:#?}");
    assert!(!ran.stderr.contains("compacting"), "{}", ran.stderr);
    assert_eq!(s.sent().len(), 2, "no summary call");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_full_window_is_compacted_and_the_next_request_starts_from_the_summary() {
    let s = Setup::new(json!({"turns": [
        heavy(json!([text("Reading."), call("t1", "read", json!({"file_path": "a.txt"}))]), "tool_use", 1500),
        heavy(json!([text("SUMMARY: read a.txt, it says alpha.")]), "end_turn", 1500),
        heavy(json!([text("Done after compaction.")]), "end_turn", 300),
    ]})).await;
    s.file("a.txt", "alpha\n");
    s.file(".hermitcrab/config.toml", "context_window = 2000\n");
    let ran = s
        .run(&["--permission-mode", "bypass", "look at a.txt"])
        .await;
    assert_eq!(ran.code, 0, "{ran:#?}");
    assert!(ran.stderr.contains("compacting"), "{}", ran.stderr);
    let sent: Vec<Value> = s
        .sent()
        .iter()
        .map(|b| serde_json::from_slice(b).unwrap())
        .collect();
    assert_eq!(sent.len(), 3);
    assert_eq!(
        sent[1]["tool_choice"]["type"], "none",
        "the summary call may not use tools"
    );
    // The summary (with the latest request), then the most recent turn
    // verbatim: the read call and its result.
    let after = sent[2]["messages"].as_array().unwrap();
    assert_eq!(after.len(), 3, "{after:#?}");
    let first = after[0]["content"][0]["text"].as_str().unwrap();
    assert!(
        first.contains("SUMMARY: read a.txt") && first.contains("look at a.txt"),
        "{first}"
    );
    assert_eq!(after[1]["role"], "assistant");
    assert_eq!(after[1]["content"], sent[1]["messages"][1]["content"]);
    assert_eq!(after[2]["content"][0]["tool_use_id"], "t1");
    assert!(
        after[2]["content"][0]["content"]
            .to_string()
            .contains("alpha"),
        "{after:#?}"
    );
    let session = s.sessions().pop().unwrap();
    // nothing deleted: the whole history is still there
    assert_eq!(s.of_type(&session, "tool-result").len(), 1);
    assert_eq!(s.of_type(&session, "prompt").len(), 1);
    assert_eq!(s.of_type(&session, "compaction").len(), 1);
    // Every call rebuilds, the summary's too (call 2), byte for byte.
    for (n, sent) in s.sent().iter().enumerate() {
        assert!(
            s.rebuilt(&session, n + 1).await == *sent,
            "call {} rebuilds",
            n + 1
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn prompt_too_long_compacts_and_tries_once_more() {
    let s = Setup::new(json!({"turns": [
        {"error": {"status": 400, "type": "invalid_request_error", "message": "prompt is too long: 210000 tokens > 200000 maximum"}},
        heavy(json!([text("SUMMARY: nothing yet.")]), "end_turn", 100),
        heavy(json!([text("Fits now.")]), "end_turn", 100),
    ]})).await;
    let ran = s.run(&["a very long story"]).await;
    assert_eq!(ran.code, 0, "{ran:#?}");
    assert!(ran.stdout.contains("Fits now."));
    assert_eq!(s.sent().len(), 3);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_failed_summary_ends_the_run_clearly_and_keeps_the_session() {
    let s = Setup::new(json!({"turns": [
        {"error": {"status": 400, "type": "invalid_request_error", "message": "prompt is too long: 210000 tokens > 200000 maximum"}},
        {"error": {"status": 400, "type": "invalid_request_error", "message": "prompt is too long: 210000 tokens > 200000 maximum"}},
    ]})).await;
    let ran = s.run(&["a very long story"]).await;
    assert_eq!(ran.code, 1, "{ran:#?}");
    assert!(
        ran.stderr.contains("could not be compacted") && ran.stderr.contains("session is intact"),
        "{}",
        ran.stderr
    );
    let session = s.sessions().pop().unwrap();
    assert_eq!(s.of_type(&session, "prompt").len(), 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn compaction_can_be_asked_for_with_the_next_run() {
    let s = Setup::new(json!({"turns": [
        heavy(json!([text("First.")]), "end_turn", 100),
        heavy(json!([text("SUMMARY: said first.")]), "end_turn", 100),
        heavy(json!([text("Second.")]), "end_turn", 100),
    ]}))
    .await;
    assert_eq!(s.run(&["one"]).await.code, 0);
    let ran = s.run(&["--continue", "--compact", "two"]).await;
    assert_eq!(ran.code, 0, "{ran:#?}");
    let third: Value = serde_json::from_slice(&s.sent()[2]).unwrap();
    let messages = third["messages"].as_array().unwrap();
    let text = messages[0]["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("SUMMARY: said first."), "{text}");
    // The last turn and the new request, verbatim after the summary.
    assert_eq!(messages.len(), 3, "{messages:#?}");
    assert_eq!(messages[1]["content"][0]["text"], "First.");
    assert_eq!(messages[2]["content"][0]["text"], "two");
    let session = s.sessions().pop().unwrap();
    assert!(s.rebuilt(&session, 3).await == s.sent()[2], "it rebuilds");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_window_still_full_after_a_compaction_is_not_compacted_at_once_again() {
    let s = Setup::new(json!({"turns": [
        heavy(json!([call("t1", "read", json!({"file_path": "a.txt"}))]), "tool_use", 1500),
        heavy(json!([text("SUMMARY: read it.")]), "end_turn", 100),
        heavy(json!([call("t2", "read", json!({"file_path": "a.txt"}))]), "tool_use", 1500),
        heavy(json!([text("Done.")]), "end_turn", 300),
    ]}))
    .await;
    s.file("a.txt", "alpha\n");
    s.file(".hermitcrab/config.toml", "context_window = 2000\n");
    let ran = s.run(&["--permission-mode", "bypass", "read twice"]).await;
    assert_eq!(ran.code, 0, "{ran:#?}");
    assert!(ran.stdout.contains("Done."), "{ran:#?}");
    let session = s.sessions().pop().unwrap();
    assert_eq!(s.of_type(&session, "compaction").len(), 1);
    assert_eq!(s.sent().len(), 4);
}

#[tokio::test(flavor = "multi_thread")]
async fn turns_too_large_to_keep_are_only_summarized() {
    // A result of a third of the window: the turn is not kept verbatim.
    let big = "x".repeat(2_400);
    let s = Setup::new(json!({"turns": [
        heavy(json!([call("t1", "shell", json!({"command": format!("echo {big}")}))]), "tool_use", 1500),
        heavy(json!([text("SUMMARY: printed many x.")]), "end_turn", 100),
        heavy(json!([text("Done.")]), "end_turn", 100),
    ]}))
    .await;
    s.file(".hermitcrab/config.toml", "context_window = 2000\n");
    let ran = s.run(&["--permission-mode", "bypass", "print"]).await;
    assert_eq!(ran.code, 0, "{ran:#?}");
    let third: Value = serde_json::from_slice(&s.sent()[2]).unwrap();
    assert_eq!(third["messages"].as_array().unwrap().len(), 1, "{third:#}");
    let session = s.sessions().pop().unwrap();
    assert!(s.rebuilt(&session, 3).await == s.sent()[2], "it rebuilds");
    assert!(
        s.rebuilt(&session, 2).await == s.sent()[1],
        "the summary's too"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn after_a_compaction_the_files_read_come_back_and_images_stay_out_of_the_summary_call() {
    let s = Setup::new(json!({"turns": [
        heavy(json!([call("r1", "read", json!({"file_path": "a.txt"}))]), "tool_use", 100),
        heavy(json!([call("r2", "read", json!({"file_path": "shot.png"}))]), "tool_use", 100),
        heavy(json!([call("r3", "read", json!({"file_path": "missing.txt"}))]), "tool_use", 100),
        heavy(json!([call("r4", "read", json!({"file_path": "b.txt"}))]), "tool_use", 100),
        heavy(json!([text("Read them.")]), "end_turn", 100),
        heavy(json!([text("SUMMARY: read a.txt and a picture.")]), "end_turn", 100),
        heavy(json!([text("Going on.")]), "end_turn", 100),
    ]}))
    .await;
    s.file("a.txt", "alpha v1\n");
    s.file("b.txt", "beta\n");
    std::fs::write(s.root.join("shot.png"), crate::plan::PNG).unwrap();
    let ran = s.run(&["--permission-mode", "bypass", "read"]).await;
    assert_eq!(ran.code, 0, "{ran:#?}");
    s.file("a.txt", "alpha v2\n");
    // b.txt swapped for a link to a file outside: not read again
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("key"), "OUTSIDE-SECRET\n").unwrap();
    std::fs::remove_file(s.root.join("b.txt")).unwrap();
    std::os::unix::fs::symlink(outside.path().join("key"), s.root.join("b.txt")).unwrap();
    let ran = s.run(&["--continue", "--compact", "go on"]).await;
    assert_eq!(ran.code, 0, "{ran:#?}");
    let summary = String::from_utf8_lossy(&s.sent()[5]).into_owned();
    assert!(!summary.contains("\"type\":\"image\""), "{summary}");
    assert!(
        summary.contains("[image omitted from the summary call]"),
        "{summary}"
    );
    let after: Value = serde_json::from_slice(&s.sent()[6]).unwrap();
    let first = after["messages"][0]["content"][0]["text"].as_str().unwrap();
    assert!(first.contains("SUMMARY: read a.txt"), "{first}");
    assert!(
        first.contains("[Files read before the summary, as they are now]")
            && first.contains("### a.txt\n```\nalpha v2\n```"),
        "the file as it is now: {first}"
    );
    assert!(
        !first.contains("missing.txt"),
        "a failed read is not restored: {first}"
    );
    let session = s.sessions().pop().unwrap();
    assert!(
        s.rebuilt(&session, 5).await == s.sent()[4],
        "the summary call rebuilds"
    );
    assert!(
        s.rebuilt(&session, 6).await == s.sent()[5],
        "the next call rebuilds"
    );
}
