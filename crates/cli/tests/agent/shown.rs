//! What the terminal shows of what a tool did: a failure's reason, a
//! shell's exit code and last lines (all with `--verbose`), a permission
//! question's diff, no question for a call that cannot succeed, no stale
//! "waiting" line, and an answer's markdown drawn on a terminal (raw when
//! piped).

use crate::common::*;
use crate::terminal::{always, in_terminal};
use serde_json::json;

fn failing_calls() -> serde_json::Value {
    json!({"turns": [
        reply(json!([call("s1", "shell", json!({"command": "seq 1 6; exit 3"}))]), "tool_use"),
        reply(json!([call("r1", "read", json!({"file_path": "calc.py"}))]), "tool_use"),
        reply(json!([call("e1", "edit", json!({"file_path": "calc.py",
            "old_string": "no such text", "new_string": "x"}))]), "tool_use"),
        reply(json!([text("done")]), "end_turn"),
    ]})
}

#[tokio::test(flavor = "multi_thread")]
async fn a_failed_tool_says_why_and_a_shell_its_exit_code_and_last_lines() {
    let s = Setup::new(failing_calls()).await;
    s.file("calc.py", "def add(a, b):\n    return a + b\n");
    let ran = s
        .run(&["--allow", "shell(*)", "--allow", "edit", "go"])
        .await;
    assert_eq!(ran.code, 0, "{ran:#?}");
    let lines: Vec<&str> = ran.stderr.lines().map(str::trim).collect();
    let shell = lines
        .iter()
        .position(|l| l.starts_with("✗ shell") && l.ends_with("· exit 3"))
        .unwrap_or_else(|| panic!("the shell's line with its exit code: {}", ran.stderr));
    assert_eq!(
        lines[shell + 1..shell + 6],
        ["⎿ … 2 more lines (--verbose shows all)", "3", "4", "5", "6"],
        "{}",
        ran.stderr
    );
    let edit = lines
        .iter()
        .position(|l| *l == "✗ edit calc.py")
        .unwrap_or_else(|| panic!("{}", ran.stderr));
    assert!(
        lines[edit + 1].starts_with("⎿ ") && lines[edit + 1].contains("old_string was not found"),
        "the reason, not only in hc trace: {}",
        ran.stderr
    );

    let s = Setup::new(failing_calls()).await;
    s.file("calc.py", "def add(a, b):\n    return a + b\n");
    let ran = s
        .run(&["--verbose", "--allow", "shell(*)", "--allow", "edit", "go"])
        .await;
    let lines: Vec<&str> = ran.stderr.lines().map(str::trim).collect();
    let shell = lines.iter().position(|l| l.starts_with("✗ shell")).unwrap();
    assert_eq!(
        lines[shell + 1..shell + 7],
        ["⎿ 1", "2", "3", "4", "5", "6"],
        "--verbose shows every line: {}",
        ran.stderr
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn an_edit_of_a_file_not_read_fails_without_asking() {
    let s = Setup::new(json!({"turns": [
        reply(json!([call("e1", "edit", json!({"file_path": "calc.py",
            "old_string": "a + b", "new_string": "a - b"}))]), "tool_use"),
        reply(json!([text("I will read it first.")]), "end_turn"),
    ]}))
    .await;
    s.file("calc.py", "def add(a, b):\n    return a + b\n");
    let (code, shown) = in_terminal(&s, "run 'fix calc'", &[], vec![]).await;
    assert_eq!(code, 0, "{shown}");
    assert!(!shown.contains("allow edit"), "nobody is asked: {shown}");
    assert!(shown.contains("has not been read"), "{shown}");
    let session = s.sessions().pop().unwrap();
    assert!(s.of_type(&session, "permission-request").is_empty());
    assert_eq!(
        std::fs::read_to_string(s.root.join("calc.py")).unwrap(),
        "def add(a, b):\n    return a + b\n"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_permission_question_shows_the_change_and_leaves_no_waiting_line() {
    let s = Setup::new(json!({"turns": [
        reply(json!([call("r1", "read", json!({"file_path": "calc.py"}))]), "tool_use"),
        reply(json!([call("e1", "edit", json!({"file_path": "calc.py",
            "old_string": "return a + b", "new_string": "return a - b"}))]), "tool_use"),
        reply(json!([text("changed")]), "end_turn"),
    ]}))
    .await;
    s.file("calc.py", "def add(a, b):\n    return a + b\n");
    let (code, shown) = in_terminal(&s, "run 'fix calc'", &[], vec![(always(), b"y\n")]).await;
    assert_eq!(code, 0, "{shown}");
    let plain = strip_escapes(&shown);
    let minus = plain
        .find("- return a + b")
        .unwrap_or_else(|| panic!("{plain}"));
    let plus = plain
        .find("+ return a - b")
        .unwrap_or_else(|| panic!("{plain}"));
    let question = plain
        .find("allow edit")
        .unwrap_or_else(|| panic!("{plain}"));
    assert!(
        minus < question && plus < question,
        "the diff before the question: {plain}"
    );
    assert!(
        !plain.contains("· waiting for permission"),
        "no leftover waiting line: {plain}"
    );
    assert!(
        std::fs::read_to_string(s.root.join("calc.py"))
            .unwrap()
            .contains("a - b")
    );
}

const ANSWER: &str = "## Summary\n\n- one **two** `three`\n\
    the quick brown fox jumps over the lazy dog and over the lazy cat again\n";

#[tokio::test(flavor = "multi_thread")]
async fn an_answer_is_drawn_as_markdown_on_a_terminal_and_raw_when_piped() {
    let s = Setup::new(json!({"turns": [reply(json!([text(ANSWER)]), "end_turn")]})).await;
    let (code, shown) = in_terminal(&s, "run hi", &[("COLUMNS", "40")], vec![]).await;
    assert_eq!(code, 0, "{shown}");
    let plain = strip_escapes(&shown);
    assert!(
        plain.lines().any(|l| l.trim_end() == "Summary"),
        "a heading without its #s: {plain:?}"
    );
    assert!(plain.contains("• one two three"), "{plain:?}");
    assert!(!plain.contains("**") && !plain.contains("## "), "{plain:?}");
    for line in plain.lines().filter(|l| l.contains("lazy")) {
        assert!(
            line.trim_end().chars().count() <= 40,
            "wrapped at 40: {line:?}"
        );
    }
    assert!(
        plain.contains("the quick brown fox jumps over the lazy\r\ndog"),
        "{plain:?}"
    );

    let s = Setup::new(json!({"turns": [reply(json!([text(ANSWER)]), "end_turn")]})).await;
    let ran = s.run(&["hi"]).await;
    assert_eq!(
        ran.stdout.trim_end(),
        ANSWER.trim_end(),
        "piped: as written"
    );
}

/// `text` without its colour codes.
fn strip_escapes(text: &str) -> String {
    let mut out = String::new();
    let mut escape = false;
    for c in text.chars() {
        match (escape, c) {
            (false, '\x1b') => escape = true,
            (true, c) if c.is_ascii_alphabetic() => escape = false,
            (true, _) => {}
            (false, c) => out.push(c),
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread")]
async fn with_stdout_and_stderr_in_one_file_the_answer_and_the_tool_lines_keep_their_own_lines() {
    let s = Setup::new(json!({"turns": [
        reply(json!([text("Looking now."), call("t1", "shell", json!({"command": "echo hi"}))]), "tool_use"),
        reply(json!([text("Done.")]), "end_turn"),
    ]}))
    .await;
    let mut both = tokio::process::Command::new("sh");
    both.args([
        "-c",
        &format!("exec {HC} run --allow shell go > both.log 2>&1"),
    ]);
    let out = s.in_project(both).output().await.unwrap();
    assert!(out.status.success(), "{out:?}");
    let log = std::fs::read_to_string(s.root.join("both.log")).unwrap();
    let line = log.lines().find(|l| l.contains("Looking now.")).unwrap();
    assert_eq!(line.trim(), "Looking now.", "{log}");
    assert!(
        log.lines()
            .any(|l| l.trim_start().starts_with("✓ shell echo hi")),
        "{log}"
    );
}
