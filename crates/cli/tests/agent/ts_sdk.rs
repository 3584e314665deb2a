//! The TypeScript Agent SDK (`@anthropic-ai/claude-agent-sdk` from npm,
//! pinned, installed once per build tree under `target/`) driving `hc`
//! as its CLI.

use crate::common::*;
use serde_json::{Value, json};
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// The pinned SDK (and the zod it takes as a peer).
const SDK: [&str; 2] = ["@anthropic-ai/claude-agent-sdk@0.3.337", "zod@4"];

/// Where the SDK is installed (npm: the registry is the only network
/// used; the platform's bundled Claude Code binary is left out —
/// `pathToClaudeCodeExecutable` names `hc`).
/// `HC_CANARY_TS_SDK=VERSION` (`scripts/canary`) puts that version in
/// the pin's place, installed beside it.
fn sdk_dir() -> PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    let marker = "node_modules/@anthropic-ai/claude-agent-sdk";
    let canary = std::env::var("HC_CANARY_TS_SDK")
        .ok()
        .filter(|v| !v.is_empty());
    (DIR.get_or_init(|| match canary {
        Some(version) => {
            let sdk = format!("@anthropic-ai/claude-agent-sdk@{version}");
            npm_installed("ts-agent-sdk-canary", &[sdk.as_str(), SDK[1]], marker)
        }
        None => npm_installed("ts-agent-sdk", &SDK, marker),
    }))
    .clone()
}

/// Runs scenario `name` of the fixture program; answers its JSON lines.
async fn program(s: &Setup, name: &str) -> Vec<Value> {
    program_with(s, name, HC.as_ref(), &[]).await
}

/// Runs scenario `name` with `hc` as the CLI the SDK starts, and `more`
/// arguments for the scenario.
async fn program_with(s: &Setup, name: &str, hc: &Path, more: &[&Path]) -> Vec<Value> {
    let dir = sdk_dir();
    let script = dir.join("program.mjs");
    let fixture =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/agent/fixtures/ts_sdk_program.mjs");
    std::fs::copy(fixture, &script).unwrap();
    let mut command = tokio::process::Command::new("node");
    command.arg(&script).arg(name).arg(hc).args(more);
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

#[tokio::test(flavor = "multi_thread")]
async fn the_newest_sdk_starts_hc_with_an_apps_mcp_server_sent_in_initialize() {
    let (python, server) = crate::mcp::python_server();
    let s = Setup::new(json!({"turns": [
        reply(json!([call("g1", "mcp__py__greet", json!({"name": "crab"}))]), "tool_use"),
        reply(json!([text("greeted")]), "end_turn"),
    ]}))
    .await;
    // hc, started through a wrapper that keeps its command line
    let argv = s.root.join("argv.txt");
    let wrapper = s.root.join("hc-wrapper");
    let script = format!(
        "#!/bin/sh\nprintf '%s\\n' \"$@\" > '{}'\nexec '{HC}' \"$@\"\n",
        argv.display()
    );
    std::fs::write(&wrapper, script).unwrap();
    std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).unwrap();
    let lines = program_with(&s, "mcp", &wrapper, &[&python, &server]).await;
    let result = lines.iter().find(|l| l["class"] == "result").unwrap();
    assert_eq!(result["subtype"], "success", "{lines:#?}");
    assert_eq!(result["result"], "greeted", "{result}");
    let note = lines.iter().find(|l| l["class"] == "note").unwrap();
    assert_eq!(note["init"]["mcp_servers_applied"], true, "{note}");
    assert_eq!(note["init"]["hook_on_failure_supported"], true, "{note}");
    assert_eq!(note["seen"], json!(["mcp__py__greet"]), "{note}");
    // the server ran with its secret, which never was on hc's command line
    let session = s.sessions().pop().unwrap();
    let results = s.of_type(&session, "tool-result");
    assert_eq!(results[0]["text"], "hello crab; token=s3cret-t0ken-42");
    let argv = std::fs::read_to_string(&argv).unwrap();
    assert!(argv.contains("--await-initialize"), "{argv}");
    assert!(!argv.contains("s3cret"), "{argv}");
    // the program's own configuration allowed it: no person was asked
    let decisions = s.of_type(&session, "permission-decision");
    assert_eq!(decisions[0]["decision"], "allow", "{decisions:?}");
    let by = decisions[0]["by"].as_str().unwrap_or_default();
    assert!(by.contains("configuration"), "{decisions:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn an_interrupt_while_a_tool_runs_is_heard_by_the_programs_interrupt_hook() {
    let s = Setup::new(json!({"turns": [
        reply(json!([call("b1", "Bash", json!({"command": "sleep 30"}))]), "tool_use"),
        reply(json!([text("never")]), "end_turn"),
    ]}))
    .await;
    let lines = program(&s, "interrupt").await;
    let note = lines.iter().find(|l| l["class"] == "note").unwrap();
    let heard = note["heard"].as_array().unwrap();
    assert_eq!(heard.len(), 1, "{lines:#?}");
    assert_eq!(heard[0]["hook_event_name"], "Interrupt", "{note}");
    assert_eq!(heard[0]["source"], "user", "{note}");
    assert_eq!(heard[0]["reason"], "stop", "{note}");
    assert_eq!(heard[0]["via"], "client", "{note}");
    assert_eq!(
        s.fake.requests().len(),
        1,
        "the turn ended at the interrupt"
    );
}
