//! Tools that start while the reply still streams: a read whose block is
//! complete runs before the reply ends (seen in the substrate while the
//! rest of the reply is still arriving), its result recorded after the
//! answer in the model's order, the request rebuilt exactly; a reply that
//! breaks off after a read started leaves no call of it in the session;
//! a `pre-tool` hook keeps every call for after the reply.

use crate::common::*;
use serde_json::{Value, json};
use substrate::{PlacementType, ScopeOpts};

/// The reply the tests stream: two reads, then text that takes its time.
fn reads_then_slow_text() -> Value {
    json!({"reply": {"content": [
        call("r1", "read", json!({"file_path": "a.txt"})),
        call("r2", "read", json!({"file_path": "b.txt"})),
        text("and while those are read, this text takes a while to arrive"),
    ], "stop_reason": "tool_use"}, "pace": {"delay_ms": 40, "text_chunk": 1, "json_chunk": 0}})
}

/// A project with `a.txt` and `b.txt`, the fake answering `turns`.
async fn two_files(turns: Value) -> Setup {
    let s = Setup::new(json!({ "turns": turns })).await;
    s.file("a.txt", "alpha\n");
    s.file("b.txt", "beta\n");
    s
}

/// Runs `hc ARGS…`, watching the substrate: whether a `read` process was
/// there while no answer was recorded yet. Waits for `hc` to end.
async fn read_before_answer(s: &Setup, args: &[&str]) -> (bool, Ran) {
    let child = s
        .hc(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let db = s.db();
    let count = |scope: &str, kind: substrate::TypeFilter| {
        let opts = ScopeOpts {
            kind,
            ..ScopeOpts::default()
        };
        db.scope(&[scope.to_owned()], &opts)
            .map(|r| {
                r.chunks
                    .iter()
                    .filter(|c| {
                        scope != "program/read"
                            || c.is_on("engine/process", PlacementType::Instance)
                    })
                    .count()
            })
            .unwrap_or(0)
    };
    let mut seen = false;
    for _ in 0..1000 {
        let answers = count("answer", substrate::TypeFilter::Instance);
        if answers > 0 {
            break;
        }
        if count("program/read", substrate::TypeFilter::Instance) > 0 {
            seen = true;
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    let out = child.wait_with_output().await.unwrap();
    let ran = Ran {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    };
    (seen, ran)
}

#[tokio::test(flavor = "multi_thread")]
async fn reads_start_while_the_reply_streams_and_are_recorded_after_it_in_the_models_order() {
    let s = two_files(json!([
        reads_then_slow_text(),
        reply(json!([text("read both")]), "end_turn"),
    ]))
    .await;
    let (early, ran) = read_before_answer(&s, &["run", "read them"]).await;
    assert_eq!(ran.code, 0, "{ran:#?}");
    assert!(early, "a read ran before the reply was whole");
    let session = s.sessions().pop().unwrap();
    let results = s.of_type(&session, "tool-result");
    let texts: Vec<&str> = results
        .iter()
        .map(|r| r["text"].as_str().unwrap())
        .collect();
    assert_eq!(texts.len(), 2, "{results:?}");
    assert!(
        texts[0].contains("alpha") && texts[1].contains("beta"),
        "{texts:?}"
    );
    // the second request, as sent, is the one rebuilt from the record
    let sent = s.sent();
    assert_eq!(s.rebuilt(&session, 2).await, sent[1]);
    let body: Value = serde_json::from_slice(&sent[1]).unwrap();
    let last = body["messages"].as_array().unwrap().last().unwrap().clone();
    let ids: Vec<&str> = last["content"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|b| b["tool_use_id"].as_str())
        .collect();
    assert_eq!(ids, ["r1", "r2"], "the model's order: {last}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_reply_that_breaks_off_after_a_read_started_leaves_no_call_of_it() {
    let mut broken = reads_then_slow_text();
    // message_start, ping, the first read's start, input and stop, the
    // second's start and input: then the connection is cut
    broken["fault"] = json!({"drop": {"after_events": 7}});
    let s = two_files(json!([
        broken,
        reply(
            json!([call("r9", "read", json!({"file_path": "a.txt"}))]),
            "tool_use"
        ),
        reply(json!([text("read it")]), "end_turn"),
    ]))
    .await;
    let ran = s.run(&["read it"]).await;
    assert_eq!(ran.code, 0, "{ran:#?}");
    let session = s.sessions().pop().unwrap();
    let calls: Vec<String> = s
        .of_type(&session, "tool-call")
        .iter()
        .map(|c| c["tool_use_id"].as_str().unwrap_or_default().to_owned())
        .collect();
    let results = s.of_type(&session, "tool-result");
    assert_eq!(
        results.len(),
        1,
        "only the retried reply's call: {results:?}"
    );
    assert!(!calls.iter().any(|c| c == "r1"), "{calls:?}");
    let reads = spans(&s.db(), "read");
    assert_eq!(
        reads.len(),
        2,
        "the broken reply's read started, then the retried one's"
    );
    assert_eq!(s.rebuilt(&session, 2).await, s.sent()[2]);
}

#[tokio::test(flavor = "multi_thread")]
async fn with_a_pre_tool_hook_every_call_waits_for_the_whole_reply() {
    let s = two_files(json!([
        reads_then_slow_text(),
        reply(json!([text("read both")]), "end_turn"),
    ]))
    .await;
    let hooks = json!({"hooks": {"PreToolUse": [{"matcher": "*",
        "hooks": [{"type": "command", "command": "true"}]}]}});
    let (early, ran) =
        read_before_answer(&s, &["run", "--settings", &hooks.to_string(), "read them"]).await;
    assert_eq!(ran.code, 0, "{ran:#?}");
    assert!(!early, "nothing ran before the reply was whole");
    let session = s.sessions().pop().unwrap();
    assert_eq!(s.of_type(&session, "tool-result").len(), 2);
}
