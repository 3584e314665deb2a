//! `--fallback-model`: an overloaded model (after the retries) or one the
//! API does not know moves the run to the next model, said as Claude
//! Code's `model_fallback` line, counted by model, rebuilt exactly.

use crate::common::*;
use serde_json::{Value, json};

fn lines(stdout: &str) -> Vec<Value> {
    stdout
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

fn model_of(request: &[u8]) -> String {
    let body: Value = serde_json::from_slice(request).unwrap();
    body["model"].as_str().unwrap().to_owned()
}

const STREAM: [&str; 3] = ["--output-format", "stream-json", "--verbose"];

#[tokio::test(flavor = "multi_thread")]
async fn an_overloaded_model_falls_back_after_the_retries_and_the_record_says_so() {
    let busy = json!({"error": {"status": 529, "message": "Overloaded", "headers": {"retry-after-ms": "1"}}});
    let s = Setup::new(json!({"turns": [
        reply(json!([call("r", "read", json!({"file_path": "a.txt"}))]), "tool_use"),
        busy, busy, busy,
        reply(json!([text("from the fallback")]), "end_turn"),
        reply(json!([text("the model again")]), "end_turn"),
    ]}))
    .await;
    s.file("a.txt", "hello\n");
    let mut args = vec!["run", "--model", "claude-sonnet-4-5"];
    args.extend(["--fallback-model", "claude-haiku-4-5"]);
    args.extend(STREAM);
    args.push("go");
    let ran = s.out_with(&[("HC_MAX_RETRIES", "2")], &args).await;
    assert_eq!(ran.code, 0, "{ran:#?}");
    let sent = s.sent();
    let models: Vec<String> = sent.iter().map(|r| model_of(r)).collect();
    assert_eq!(
        models,
        ["claude-sonnet-4-5"; 4]
            .into_iter()
            .chain(["claude-haiku-4-5"])
            .collect::<Vec<_>>(),
        "two retries, then the fallback for the rest of the run"
    );
    let out = lines(&ran.stdout);
    let fell: Vec<&Value> = out
        .iter()
        .filter(|l| l["type"] == "system" && l["subtype"] == "model_fallback")
        .collect();
    assert_eq!(fell.len(), 1, "{out:#?}");
    assert_eq!(fell[0]["trigger"], "overloaded");
    assert_eq!(fell[0]["original_model"], "claude-sonnet-4-5");
    assert_eq!(fell[0]["fallback_model"], "claude-haiku-4-5");
    let result = out.iter().find(|l| l["type"] == "result").unwrap();
    assert_eq!(result["subtype"], "success", "{result}");
    let usage = result["modelUsage"].as_object().unwrap();
    let keys: Vec<&String> = usage.keys().collect();
    assert_eq!(keys, ["claude-haiku-4-5", "claude-sonnet-4-5"], "{result}");
    let tokens = |m: &str| usage[m]["outputTokens"].as_u64().unwrap();
    assert!(tokens("claude-haiku-4-5") > 0 && tokens("claude-sonnet-4-5") > 0);
    // each call rebuilt with the model it went to
    let session = s.sessions().pop().unwrap();
    for (n, at) in [(1, 0), (2, 4)] {
        assert_eq!(s.rebuilt(&session, n).await, sent[at], "call {n}");
    }
    let answers: Vec<Value> = s.of_type(&session, "answer");
    let answered: Vec<&str> = answers
        .iter()
        .map(|a| a["model"].as_str().unwrap())
        .collect();
    assert_eq!(answered, ["claude-sonnet-4-5", "claude-haiku-4-5"]);
    // the next run starts on the model again
    let next = s
        .run(&["--continue", "--model", "claude-sonnet-4-5", "and?"])
        .await;
    assert_eq!(next.code, 0, "{next:#?}");
    assert_eq!(model_of(&s.sent()[5]), "claude-sonnet-4-5");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_model_the_api_does_not_know_falls_back_at_once_and_a_fallback_that_is_the_model_is_refused()
 {
    // (the fake answers as the API does: 404 for a model it does not serve)
    let s = Setup::new(json!({"turns": [
        reply(json!([text("answered")]), "end_turn"),
    ]}))
    .await;
    let mut args = vec!["run", "--model", "claude-nope-9"];
    args.extend(["--fallback-model", "claude-haiku-4-5,claude-sonnet-4-5"]);
    args.extend(STREAM);
    args.push("go");
    let ran = s.out(&args).await;
    assert_eq!(ran.code, 0, "{ran:#?}");
    let models: Vec<String> = s.sent().iter().map(|r| model_of(r)).collect();
    assert_eq!(models, ["claude-nope-9", "claude-haiku-4-5"], "no retry");
    let out = lines(&ran.stdout);
    let fell = out
        .iter()
        .find(|l| l["subtype"] == "model_fallback")
        .unwrap();
    assert_eq!(fell["trigger"], "model_not_found", "{fell}");
    let asked = s.sent().len();
    let same = s
        .run(&[
            "--model",
            "claude-haiku-4-5",
            "--fallback-model",
            "claude-haiku-4-5",
            "x",
        ])
        .await;
    assert_eq!(same.code, 2, "{same:#?}");
    assert!(same.stderr.contains("it is the model itself"), "{same:#?}");
    assert_eq!(s.sent().len(), asked);
}
