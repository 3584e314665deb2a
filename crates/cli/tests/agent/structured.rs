//! `--json-schema`: structured output as Claude Code gives it — the model
//! offered `StructuredOutput` with the schema as its input schema, a
//! wrong call answered with what is wrong, a text-only end nudged once,
//! the output in the result.

use crate::common::*;
use serde_json::{Value, json};

const SCHEMA: &str =
    r#"{"type":"object","properties":{"answer":{"type":"integer"}},"required":["answer"]}"#;

fn result_of(stdout: &str) -> Value {
    stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|l| l["type"] == "result")
        .unwrap_or_else(|| panic!("no result line: {stdout}"))
}

fn said(s: &Setup, n: usize) -> String {
    String::from_utf8_lossy(&s.sent()[n]).into_owned()
}

fn structured(id: &str, input: Value) -> Value {
    call(id, "StructuredOutput", input)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_schema_answered_wrong_then_right_is_the_results_structured_output() {
    let s = Setup::new(json!({"turns": [
        reply(json!([structured("a", json!({"answer": "four"}))]), "tool_use"),
        reply(json!([structured("b", json!({"answer": 4}))]), "tool_use"),
        reply(json!([text("done")]), "end_turn"),
    ]}))
    .await;
    let args = [
        "--json-schema",
        SCHEMA,
        "--output-format",
        "stream-json",
        "--verbose",
    ];
    let ran = s.run(&[&args[..], &["what is 2+2?"]].concat()).await;
    assert_eq!(ran.code, 0, "{ran:#?}");
    let result = result_of(&ran.stdout);
    assert_eq!(result["subtype"], "success", "{result}");
    assert_eq!(
        result["structured_output"],
        json!({"answer": 4}),
        "{result}"
    );
    let first: Value = serde_json::from_slice(&s.sent()[0]).unwrap();
    let tool = first["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "StructuredOutput")
        .cloned()
        .unwrap_or_else(|| panic!("offered: {first}"));
    let schema: Value = serde_json::from_str(SCHEMA).unwrap();
    assert_eq!(tool["input_schema"], schema);
    assert!(said(&s, 1).contains("Output does not match required schema"));
    assert!(said(&s, 2).contains("Structured output provided successfully"));
    let session = s.sessions().pop().unwrap();
    for n in 1..=3 {
        assert_eq!(s.rebuilt(&session, n).await, s.sent()[n - 1], "call {n}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_text_only_end_is_nudged_once_and_json_output_carries_the_result() {
    let s = Setup::new(json!({"turns": [
        reply(json!([text("it is 4")]), "end_turn"),
        reply(json!([structured("a", json!({"answer": 4}))]), "tool_use"),
        reply(json!([text("done")]), "end_turn"),
        // a second run that will not give it, even when asked
        reply(json!([text("no")]), "end_turn"),
        reply(json!([text("still no")]), "end_turn"),
    ]}))
    .await;
    let args = ["--json-schema", SCHEMA, "--output-format", "json"];
    let ran = s.run(&[&args[..], &["2+2?"]].concat()).await;
    assert_eq!(ran.code, 0, "{ran:#?}");
    let result: Value = serde_json::from_str(ran.stdout.trim()).unwrap();
    assert_eq!(
        result["structured_output"],
        json!({"answer": 4}),
        "{result}"
    );
    assert!(said(&s, 1).contains("You MUST call the StructuredOutput tool"));
    let refused = s.run(&[&args[..], &["again"]].concat()).await;
    assert_eq!(refused.code, 1, "{refused:#?}");
    let result: Value = serde_json::from_str(refused.stdout.trim()).unwrap();
    assert_eq!(result["is_error"], true, "{result}");
    assert!(result.get("structured_output").is_none(), "{result}");
    assert_eq!(s.sent().len(), 5, "one nudge, no more");
}

#[tokio::test(flavor = "multi_thread")]
async fn wrong_calls_past_the_limit_end_the_run_and_a_bad_schema_is_a_usage_error() {
    let s = Setup::new(json!({"turns": [
        reply(json!([structured("a", json!({"answer": "x"}))]), "tool_use"),
        reply(json!([structured("b", json!({"nope": 1}))]), "tool_use"),
        reply(json!([text("never")]), "end_turn"),
    ]}))
    .await;
    let args = [
        "run",
        "--json-schema",
        SCHEMA,
        "--output-format",
        "json",
        "go",
    ];
    let ran = s
        .out_with(&[("MAX_STRUCTURED_OUTPUT_RETRIES", "2")], &args)
        .await;
    assert_eq!(ran.code, 1, "{ran:#?}");
    let result: Value = serde_json::from_str(ran.stdout.trim()).unwrap();
    assert_eq!(
        result["subtype"], "error_max_structured_output_retries",
        "{result}"
    );
    assert_eq!(
        result["errors"],
        json!(["Failed to provide valid structured output after 2 attempts"])
    );
    assert_eq!(s.sent().len(), 2);
    for bad in ["not json", "[1]", r#"{"type": 12}"#] {
        let ran = s.run(&["--json-schema", bad, "go"]).await;
        assert_eq!(ran.code, 2, "{bad}: {ran:#?}");
        assert!(ran.stderr.contains("--json-schema"), "{ran:#?}");
    }
    assert_eq!(s.sent().len(), 2, "no request for a bad schema");
}
