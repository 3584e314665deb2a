//! `hc chat`: through a pseudo-terminal (turns, slash commands, Ctrl-C,
//! permission questions inline) and with piped lines.

use crate::common::*;
use crate::terminal::*;
use serde_json::{Value, json};
use std::time::Duration;

#[tokio::test(flavor = "multi_thread")]
async fn chat_in_a_terminal_takes_turns_commands_and_ctrl_c() {
    let long = "word ".repeat(300);
    let s = Setup::new(json!({"turns": [
        reply(json!([text("Hello, person.")]), "end_turn"),
        {"reply": {"content": [text(&long)], "stop_reason": "end_turn"}, "pace": {"delay_ms": 40, "text_chunk": 10}},
        reply(json!([text("Still here.")]), "end_turn"),
    ]}))
    .await;
    let streaming = Box::new(|s: &Setup| {
        s.fake
            .requests()
            .get(1)
            .is_some_and(|r| r.received.elapsed() > Duration::from_millis(400))
    });
    let (code, shown) = in_terminal(
        &s,
        "chat --permission-mode bypass",
        &[],
        vec![
            (always(), b"hi there\r"),
            (runs_ended(1), b"/cost\r"),
            (always(), b"tell me a long story\r"),
            (streaming, b"\x03"),
            (always(), b"and now?\r"),
            (runs_ended(3), b"/sess\t\r"),
            (always(), b"\x03"),
            (always(), b"\x03"),
        ],
    )
    .await;
    assert_eq!(code, 0, "{shown}");
    assert!(shown.contains("Hello, person."), "{shown}");
    assert!(shown.contains("1 turn · "), "/cost answered: {shown}");
    assert!(shown.contains("interrupting"), "{shown}");
    assert!(
        shown.contains("Still here."),
        "the chat went on after the interrupt: {shown}"
    );
    // The table's row for the session (the title beside its status), not
    // the echo of what was typed.
    assert!(
        shown.contains("TITLE")
            && shown
                .lines()
                .any(|l| l.contains("hi there") && l.contains("done")),
        "/sessions (Tab-completed) listed: {shown}"
    );
    let sessions = s.sessions();
    assert_eq!(sessions.len(), 1, "one session for the whole chat");
    let prompts = s.of_type(&sessions[0], "prompt");
    assert_eq!(prompts.len(), 3);
    assert_eq!(s.of_type(&sessions[0], "interrupt").len(), 1);
    // The third call carried the whole conversation, the cut answer too.
    let third: Value = serde_json::from_slice(&s.sent()[2]).unwrap();
    assert_eq!(third["messages"].as_array().unwrap().len(), 5, "{third:#}");
}

#[tokio::test(flavor = "multi_thread")]
async fn chat_reads_piped_lines_and_writes_plain_text() {
    let s = Setup::new(json!({"turns": [
        reply(json!([text("First answer.")]), "end_turn"),
        reply(json!([text("Second answer.")]), "end_turn"),
    ]}))
    .await;
    let lines = b"hello\n/model claude-haiku-4-5\nagain \\\nand more\n/cost\n/nonsense\n/exit\n";
    let done = s
        .piped(&["chat", "--permission-mode", "bypass"], lines)
        .await;
    let (stdout, stderr) = (
        String::from_utf8_lossy(&done.stdout),
        String::from_utf8_lossy(&done.stderr),
    );
    assert!(done.status.success(), "{stderr}");
    assert!(
        stdout.contains("First answer.") && stdout.contains("Second answer."),
        "{stdout}"
    );
    assert!(
        !stdout.contains('\x1b') && !stderr.contains('\x1b'),
        "{stdout}{stderr}"
    );
    assert!(
        stderr.contains("the model is now claude-haiku-4-5"),
        "{stderr}"
    );
    assert!(stderr.contains("2 turns"), "/cost: {stderr}");
    assert!(stderr.contains("/help lists them"), "{stderr}");
    let session = s.sessions().pop().unwrap();
    assert!(
        stderr.contains(&format!("hc chat --resume {session}")),
        "how to go on: {stderr}"
    );
    // Going on with it shows where it left off.
    let done = s.piped(&["chat", "--continue"], b"/exit\n").await;
    let recap = String::from_utf8_lossy(&done.stderr);
    assert!(recap.contains(&format!("session {session}")), "{recap}");
    assert!(
        recap.contains("› again") && recap.contains("Second answer."),
        "{recap}"
    );
    let sent: Vec<Value> = s
        .sent()
        .iter()
        .map(|b| serde_json::from_slice(b).unwrap())
        .collect();
    assert_eq!(sent[0]["model"], model::catalog::DEFAULT_MODEL);
    assert_eq!(
        sent[1]["model"], "claude-haiku-4-5",
        "/model applies to the next run"
    );
    assert_eq!(
        sent[1]["messages"].as_array().unwrap().len(),
        3,
        "the same session"
    );
    assert_eq!(
        sent[1]["messages"][2]["content"][0]["text"], "again \nand more",
        "a line ending in \\ goes on on the next"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn chat_asks_permission_inline_and_runs_what_was_allowed() {
    let s = Setup::new(json!({"turns": [
        reply(json!([call("t1", "shell", json!({"command": "echo allowed-ran"}))]), "tool_use"),
        reply(json!([text("It ran.")]), "end_turn"),
    ]}))
    .await;
    let asked = crate::terminal::permission_asked();
    let (code, shown) = in_terminal(
        &s,
        "chat",
        &[],
        vec![
            (always(), b"run it\r"),
            (asked, b"y\r"),
            (runs_ended(1), b"/exit\r"),
        ],
    )
    .await;
    assert_eq!(code, 0, "{shown}");
    assert!(shown.contains("allow shell echo allowed-ran?"), "{shown}");
    assert!(shown.contains("It ran."), "{shown}");
    let session = s.sessions().pop().unwrap();
    let decision = &s.of_type(&session, "permission-decision")[0];
    assert_eq!(decision["decision"], "allow");
    let result = &s.of_type(&session, "tool-result")[0];
    assert_eq!(result["is_error"], false, "{result}");
    assert!(result["text"].as_str().unwrap().contains("allowed-ran"));
}

#[tokio::test(flavor = "multi_thread")]
async fn chat_clear_starts_a_new_session_and_resume_goes_back() {
    let s =
        Setup::new(json!({"cycle": true, "turns": [reply(json!([text("ok")]), "end_turn")]})).await;
    // /resume with no id goes to the latest session: after /clear and
    // before a new message that is the first one, left behind.
    let typed =
        b"first topic\n/clear\n/resume\nmore on the first\n/clear\nsecond topic\n/resume s_\n/exit\n";
    let done = s.piped(&["chat"], typed).await;
    let stderr = String::from_utf8_lossy(&done.stderr);
    assert!(done.status.success(), "{stderr}");
    assert!(
        stderr.contains("names 2 sessions"),
        "an ambiguous /resume says so: {stderr}"
    );
    let sessions = s.sessions();
    assert_eq!(sessions.len(), 2, "{stderr}");
    let prompts = |id: &str| -> Vec<String> {
        s.of_type(id, "prompt")
            .iter()
            .map(|p| p["text"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(prompts(&sessions[0]), ["first topic", "more on the first"]);
    assert_eq!(prompts(&sessions[1]), ["second topic"]);
}

#[tokio::test(flavor = "multi_thread")]
async fn chat_typed_at_a_terminal_into_a_file_writes_no_escape_codes() {
    let s = Setup::new(json!({"turns": [reply(json!([text("Written down.")]), "end_turn")]})).await;
    let (code, shown) = in_terminal(
        &s,
        "chat --permission-mode bypass > chat.out",
        &[],
        vec![(always(), b"hi there\r"), (runs_ended(1), b"\x04")],
    )
    .await;
    assert_eq!(code, 0, "{shown}");
    let written = std::fs::read_to_string(s.root.join("chat.out")).unwrap();
    assert!(written.contains("Written down."), "{written:?}");
    assert!(!written.contains('\x1b'), "{written:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn add_dir_in_chat_lets_the_next_message_write_there() {
    let other = tempfile::tempdir().unwrap();
    let dir = other.path().canonicalize().unwrap();
    let (a, b) = (dir.join("a.txt"), dir.join("b.txt"));
    let shell = |to: &std::path::Path| format!("echo hi > {}", to.display());
    let s = Setup::new(json!({"turns": [
        reply(json!([call("s1", "shell", json!({"command": shell(&a)}))]), "tool_use"),
        reply(json!([text("tried")]), "end_turn"),
        reply(json!([call("s2", "shell", json!({"command": shell(&b)}))]), "tool_use"),
        reply(json!([text("wrote")]), "end_turn"),
    ]}))
    .await;
    let typed = format!(
        "before\n/add-dir {}\n/add-dir\nafter\n/exit\n",
        dir.display()
    );
    let done = s
        .piped(&["chat", "--permission-mode", "bypass"], typed.as_bytes())
        .await;
    let stderr = String::from_utf8_lossy(&done.stderr);
    assert!(done.status.success(), "{stderr}");
    assert!(!a.exists(), "not writable before /add-dir: {stderr}");
    assert!(stderr.contains("Permission denied"), "contained: {stderr}");
    assert_eq!(
        std::fs::read_to_string(&b).ok().as_deref(),
        Some("hi\n"),
        "{stderr}"
    );
    assert!(
        stderr.contains(&format!("added directories: {}", dir.display())),
        "{stderr}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn no_and_dont_ask_again_refuses_the_rest_of_the_session_without_asking() {
    let s = Setup::new(json!({"turns": [
        reply(json!([call("t1", "shell", json!({"command": "echo first"}))]), "tool_use"),
        reply(json!([call("t2", "shell", json!({"command": "echo first"}))]), "tool_use"),
        reply(json!([text("Refused twice.")]), "end_turn"),
        reply(json!([call("t3", "shell", json!({"command": "echo first"}))]), "tool_use"),
        reply(json!([text("And again.")]), "end_turn"),
    ]}))
    .await;
    let asked = crate::terminal::permission_asked();
    let (code, shown) = in_terminal(
        &s,
        "chat",
        &[],
        vec![
            (always(), b"run it\r"),
            (asked, b"d\r"),
            (runs_ended(1), b"and the next message\r"),
            (runs_ended(2), b"/exit\r"),
        ],
    )
    .await;
    assert_eq!(code, 0, "{shown}");
    assert!(shown.contains("[d]on't ask again"), "{shown}");
    let session = s.sessions().pop().unwrap();
    assert_eq!(
        s.of_type(&session, "permission-request").len(),
        1,
        "asked once"
    );
    let decision = &s.of_type(&session, "permission-decision")[0];
    assert_eq!(decision["decision"], "never", "{decision}");
    let results = s.of_type(&session, "tool-result");
    assert_eq!(results.len(), 3, "{results:?}");
    for result in &results {
        assert_eq!(result["is_error"], true, "{result}");
    }
    assert!(
        results[0]["text"]
            .as_str()
            .unwrap()
            .contains("not to ask again"),
        "{results:?}"
    );
}

/// The agent-config bodies of the project's runs, in order.
fn modes(s: &Setup) -> Vec<Value> {
    instances(s, "agent-config")
        .iter()
        .map(|c| c.body_value()["permission_mode"].clone())
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn the_status_line_the_plan_shift_tab_and_a_shell_line_as_claude_code_has_them() {
    let plan = json!({"items": [
        {"content": "read the code", "status": "completed"},
        {"content": "fix the bug", "status": "in_progress"},
    ]});
    let s = Setup::new(json!({"turns": [
        reply(json!([text("Planning."), call("t1", "todo", plan)]), "tool_use"),
        reply(json!([text("On it.")]), "end_turn"),
        reply(json!([text("I see what it said.")]), "end_turn"),
    ]}))
    .await;
    let (code, shown) = in_terminal(
        &s,
        "chat",
        &[],
        vec![
            (always(), b"make a plan\r"),
            // Shift-Tab: the next mode, for the next message
            (runs_ended(1), b"\x1b[Z"),
            (always(), b"!echo hi-from-the-shell\r"),
            (always(), b"what did it say?\r"),
            (runs_ended(2), b"\x03"),
            (always(), b"\x03"),
        ],
    )
    .await;
    assert_eq!(code, 0, "{shown}");
    // the plan, live under its call
    assert!(shown.contains("plan · 1 of 2 done"), "{shown}");
    assert!(
        shown.contains("☑ read the code") && shown.contains("◐ fix the bug"),
        "{shown}"
    );
    // the status line's figures are `hc sessions --json`'s
    let listed = s.out(&["sessions", "--json"]).await;
    let rows: Vec<Value> = serde_json::from_str(&listed.stdout).unwrap();
    let cost = rows[0]["cost_usd"].as_f64().unwrap();
    assert!(
        shown.contains("claude-sonnet-5-5 · default · context"),
        "{shown}"
    );
    assert!(shown.contains(&format!("${cost:.4}")), "{cost} in {shown}");
    assert!(shown.contains("permission mode accept-edits"), "{shown}");
    assert_eq!(
        modes(&s),
        [json!("default"), json!("accept-edits")],
        "{shown}"
    );
    // the shell line ran contained and recorded, and went with the message
    assert!(shown.contains("hi-from-the-shell"), "{shown}");
    let shells = instances(&s, "program/shell");
    assert!(!shells.is_empty(), "the shell line is a run in the record");
    let second: Value = serde_json::from_slice(&s.sent()[2]).unwrap();
    let prompt = second["messages"].as_array().unwrap().last().unwrap()["content"].to_string();
    assert!(
        prompt.contains("<bash-input>echo hi-from-the-shell</bash-input>")
            && prompt.contains("hi-from-the-shell")
            && prompt.contains("what did it say?"),
        "{prompt}"
    );
}
