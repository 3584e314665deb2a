//! The TypeScript Agent SDK (`@anthropic-ai/claude-agent-sdk` from npm,
//! pinned, installed once per build tree under `target/`) driving `hc`
//! as its CLI.

use crate::common::*;
use serde_json::{Value, json};
use std::path::PathBuf;
use std::sync::OnceLock;

/// The pinned SDK (and the zod it takes as a peer).
const SDK: [&str; 2] = ["@anthropic-ai/claude-agent-sdk@0.3.332", "zod@4"];

/// Where the SDK is installed (npm: the registry is the only network
/// used; the platform's bundled Claude Code binary is left out —
/// `pathToClaudeCodeExecutable` names `hc`).
fn sdk_dir() -> PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    let marker = "node_modules/@anthropic-ai/claude-agent-sdk";
    (DIR.get_or_init(|| npm_installed("ts-agent-sdk", &SDK, marker))).clone()
}

/// Runs scenario `name` of the fixture program; answers its JSON lines.
async fn program(s: &Setup, name: &str) -> Vec<Value> {
    let dir = sdk_dir();
    let script = dir.join("program.mjs");
    let fixture =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/agent/fixtures/ts_sdk_program.mjs");
    std::fs::copy(fixture, &script).unwrap();
    let mut command = tokio::process::Command::new("node");
    command.arg(&script).arg(name).arg(HC);
    crate::sdk::drive(s, command).await.0
}

#[tokio::test(flavor = "multi_thread")]
async fn the_typescript_sdk_gets_the_agents_question_as_ask_user_question_and_answers_it() {
    let s = Setup::new(json!({"turns": [
        reply(json!([call("q1", "AskUserQuestion", json!({"question": "Which colour?", "options": ["red", "green"]}))]), "tool_use"),
        reply(json!([text("green it is")]), "end_turn"),
    ]}))
    .await;
    let lines = program(&s, "asks").await;
    let note = lines.iter().find(|l| l["class"] == "note").unwrap();
    assert_eq!(note["seen"][0]["tool"], "AskUserQuestion", "{note}");
    let question = &note["seen"][0]["input"]["questions"][0];
    assert_eq!(question["question"], "Which colour?", "{note}");
    assert_eq!(question["options"][1]["label"], "green", "{note}");
    let result = lines.iter().find(|l| l["class"] == "result").unwrap();
    assert_eq!(result["subtype"], "success", "{result}");
    assert_eq!(result["result"], "green it is", "{result}");
    let session = s.sessions().pop().unwrap();
    assert_eq!(s.of_type(&session, "user-answer")[0]["text"], "green");
}
