//! Interrupt through a terminal, and going on with a session: the latest,
//! a named one, one a killed `hc` left behind.

use crate::common::*;
use crate::terminal::run_then_ctrl_c;
use serde_json::{Value, json};
use std::process::Stdio;
use std::time::Duration;

/// `hc run PROMPT` (bypass), left running once one of its `shell` calls
/// is.
async fn running_a_tool(s: &Setup, prompt: &str) -> tokio::process::Child {
    let hc = s
        .hc(&["run", "--permission-mode", "bypass", prompt])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_for("a tool to run", || {
        processes_of(s, "shell")
            .iter()
            .any(|b| b["status"] == "running")
    })
    .await;
    hc
}

/// SIGKILL, as a crash would end it.
async fn kill(mut hc: tokio::process::Child) {
    hc.start_kill().unwrap();
    hc.wait().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn ctrl_c_mid_stream_keeps_the_partial_answer_and_exits_130() {
    let long = "word ".repeat(400);
    let s = Setup::new(json!({"turns": [
        {"reply": {"content": [text(&long)], "stop_reason": "end_turn",
                   "usage": {"input_tokens": 1234, "output_tokens": 800}},
         "pace": {"delay_ms": 40, "text_chunk": 10}}
    ]}))
    .await;
    let (code, shown) = run_then_ctrl_c(&s, "--permission-mode bypass go", |s| {
        // some of the reply has streamed
        s.fake
            .requests()
            .first()
            .is_some_and(|r| r.received.elapsed() > Duration::from_millis(400))
    })
    .await;
    assert_eq!(code, 130, "{shown}");
    let session = s.sessions().pop().unwrap();
    let answers = s.of_type(&session, "answer");
    assert_eq!(answers.len(), 1, "{answers:#?}");
    assert_eq!(answers[0]["stop_reason"], "interrupted");
    let partial = answers[0]["text"].as_str().unwrap();
    assert!(partial.len() < long.len(), "cut short");
    // What was sent and streamed is counted: the input as message_start
    // said it, the output estimated from what streamed.
    let usage = &answers[0]["usage"];
    assert_eq!(usage["input_tokens"], 1234, "{usage:#}");
    let out = usage["output_tokens"].as_u64().unwrap();
    assert!(out >= (partial.len() as u64).div_ceil(4), "{usage:#}");
    assert!(answers[0]["cost_usd"].as_f64().unwrap() > 0.0);
    let agent = processes_of(&s, "agent").pop().unwrap();
    assert_eq!(agent["stop_reason"], "interrupted");
    assert_eq!(agent["turns"], 1, "{agent:#}");
    assert_eq!(agent["usage"]["output_tokens"], out, "{agent:#}");
    // The cut call is a call of the session like any other: it rebuilds.
    assert!(s.rebuilt(&session, 1).await == s.sent()[0]);
    assert_eq!(
        s.of_type(&session, "interrupt").len(),
        1,
        "the host's interrupt is on the session"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn ctrl_c_mid_tool_cancels_it_and_records_why() {
    let s = Setup::new(json!({"turns": [
        reply(json!([call("t1", "shell", json!({"command": "sleep 30"}))]), "tool_use"),
    ]}))
    .await;
    let (code, shown) = run_then_ctrl_c(&s, "--permission-mode bypass go", |s| {
        processes_of(s, "shell")
            .iter()
            .any(|b| b["status"] == "running")
    })
    .await;
    assert_eq!(code, 130, "{shown}");
    let session = s.sessions().pop().unwrap();
    let result = &s.of_type(&session, "tool-result")[0];
    assert_eq!(result["is_error"], true);
    assert!(
        result["text"].as_str().unwrap().contains("interrupted"),
        "{result:#}"
    );
    let shell = processes_of(&s, "shell").pop().unwrap();
    assert_eq!(shell["status"], "failed");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_session_left_by_a_killed_hc_goes_on() {
    let s = Setup::new(json!({"turns": [
        reply(json!([text("Working on it."), call("t1", "shell", json!({"command": "sleep 60"}))]), "tool_use"),
        reply(json!([text("Picking up where we left off.")]), "end_turn"),
    ]})).await;
    let first = running_a_tool(&s, "start the work").await;
    kill(first).await;
    let ran = s
        .run(&["--continue", "--permission-mode", "bypass", "go on"])
        .await;
    assert_eq!(ran.code, 0, "{ran:#?}");
    assert!(ran.stdout.contains("Picking up"));
    // every process the dead engine ran was failed at the next open
    let shell = processes_of(&s, "shell").pop().unwrap();
    assert_eq!(shell["status"], "failed");
    assert_eq!(shell["error"], "engine restart");
    let agents = processes_of(&s, "agent");
    assert!(
        agents.iter().any(|b| b["error"] == "engine restart"),
        "{agents:#?}"
    );
    assert_eq!(s.sessions().len(), 1, "--continue went on with the session");
    // the second run's request replayed the first, the dangling call answered
    let second: Value = serde_json::from_slice(&s.sent()[1]).unwrap();
    let messages = second["messages"].as_array().unwrap();
    assert_eq!(messages[0]["content"][0]["text"], "start the work");
    assert_eq!(messages[1]["content"][1]["name"], "shell");
    let repair = &messages[2]["content"];
    assert_eq!(repair[0]["tool_use_id"], "t1");
    assert_eq!(repair[0]["content"], "interrupted before the tool returned");
    assert_eq!(repair[0]["is_error"], true);
    assert_eq!(repair[1]["text"], "go on");
    let session = s.sessions().pop().unwrap();
    assert!(s.rebuilt(&session, 2).await == s.sent()[1]);
}

#[tokio::test(flavor = "multi_thread")]
async fn continue_picks_the_latest_session_and_resume_names_one() {
    let s =
        Setup::new(json!({"cycle": true, "turns": [reply(json!([text("ok")]), "end_turn")]})).await;
    assert_eq!(s.run(&["first"]).await.code, 0);
    assert_eq!(s.run(&["second"]).await.code, 0);
    let sessions = s.sessions();
    assert_eq!(sessions.len(), 2);
    let third = s.run(&["--continue", "third"]).await;
    assert_eq!(third.code, 0, "{third:#?}");
    assert_eq!(
        s.of_type(&sessions[1], "prompt").len(),
        2,
        "--continue added to the latest"
    );
    let prefix = &sessions[0][..sessions[0].len() - 3];
    assert_eq!(s.run(&["--resume", prefix, "fourth"]).await.code, 0);
    assert_eq!(
        s.of_type(&sessions[0], "prompt").len(),
        2,
        "--resume added to the one named"
    );
    let none = s.run(&["--resume", "s_nope", "x"]).await;
    assert_ne!(none.code, 0);
    assert!(
        none.stderr.contains("no session `s_nope`"),
        "{}",
        none.stderr
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_sub_agent_tree_left_by_a_killed_hc_is_failed_and_its_session_goes_on() {
    let s = Setup::new(json!({"turns": [
        when("ROOT work", json!([call("a1", "agent", json!({"text": "CHILD task"}))]), "tool_use"),
        when("CHILD task", json!([call("c1", "shell", json!({"command": "sleep 60"}))]), "tool_use"),
        when("go on", json!([text("Back at the root.")]), "end_turn"),
    ]}))
    .await;
    let first = running_a_tool(&s, "ROOT work").await;
    kill(first).await;
    let session = s.sessions().pop().unwrap();
    let calls_before = s.of_type(&session, "tool-call");
    let ran = s
        .run(&["--continue", "--permission-mode", "bypass", "go on"])
        .await;
    assert_eq!(ran.code, 0, "{ran:#?}");
    assert!(ran.stdout.contains("Back at the root."), "{ran:#?}");
    // Every process of the dead tree — both agents, the tool — was failed.
    let shell = processes_of(&s, "shell").pop().unwrap();
    assert_eq!(shell["error"], "engine restart", "{shell:#}");
    let agents = processes_of(&s, "agent");
    assert_eq!(agents.len(), 3, "root, child, and the resumed root");
    let restarted = agents
        .iter()
        .filter(|b| b["error"] == "engine restart")
        .count();
    assert_eq!(restarted, 2, "{agents:#?}");
    // The session is intact, and the replay answers the dangling spawn.
    assert_eq!(s.sessions(), vec![session.clone()]);
    assert_eq!(
        s.of_type(&session, "tool-call")[..calls_before.len()],
        calls_before[..]
    );
    let resumed: Value = serde_json::from_slice(s.sent().last().unwrap()).unwrap();
    let messages = resumed["messages"].as_array().unwrap();
    assert_eq!(messages[1]["content"][0]["name"], "agent");
    assert_eq!(messages[2]["content"][0]["tool_use_id"], "a1");
    assert_eq!(
        messages[2]["content"][0]["content"],
        "interrupted before the tool returned"
    );
}

/// The pids whose command line is exactly `cmdline` (NUL-separated).
fn commands_running(cmdline: &str) -> Vec<i64> {
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i64>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|c| c == cmdline.as_bytes())
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn what_a_killed_hc_left_running_does_not_outlive_its_command() {
    let s = Setup::new(json!({"turns": [
        reply(json!([call("t1", "shell", json!({"command": "sleep 117"}))]), "tool_use"),
    ]}))
    .await;
    let hc = running_a_tool(&s, "go").await;
    // The shell program runs before its bash has started the command.
    let sleep = "sleep\u{0}117\u{0}";
    wait_for("the command to start", || {
        !commands_running(sleep).is_empty()
    })
    .await;
    let sleeps = commands_running(sleep);
    assert_eq!(sleeps.len(), 1, "the command runs");
    kill(hc).await;
    let pids: Vec<i64> = ["shell", "agent"]
        .iter()
        .flat_map(|p| processes_of(&s, p))
        .filter_map(|b| b["pid"].as_i64())
        .collect();
    assert_eq!(pids.len(), 2, "both recorded their pid");
    // The tool finds its engine gone and ends, its command with it (long
    // before the command's own end), and so does everything that ran it.
    wait_for("the dead tree's processes to end", || {
        pids.iter().chain(&sleeps).all(|p| gone(*p))
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn ctrl_c_at_a_permission_question_interrupts_the_run() {
    let s = Setup::new(json!({"turns": [
        reply(json!([call("t1", "shell", json!({"command": "touch ran"}))]), "tool_use"),
        reply(json!([text("never asked for")]), "end_turn"),
    ]}))
    .await;
    let (code, shown) = run_then_ctrl_c(&s, "make-a-file", |s| {
        s.sessions()
            .first()
            .is_some_and(|id| !s.of_type(id, "permission-request").is_empty())
    })
    .await;
    assert_eq!(code, 130, "{shown}");
    assert!(shown.contains("allow shell touch ran?"), "{shown}");
    assert!(!s.root.join("ran").exists(), "the tool did not run");
    let session = s.sessions().pop().unwrap();
    assert_eq!(s.of_type(&session, "interrupt").len(), 1);
    assert_eq!(s.fake.requests().len(), 1, "no further model call");
    // One Ctrl-C, one interrupt: the agent ended it itself, not a cancel.
    let agent = processes_of(&s, "agent").pop().unwrap();
    assert_eq!(agent["stop_reason"], "interrupted", "{agent:#}");
}
