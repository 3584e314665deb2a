//! A newcomer's first hour: what a denial says, paging a scope, what is
//! really running after a killed `hc`, a sub-agent's trace, the tools a
//! trace counts, budgets, one exit code for a wrong session, `.env` keys,
//! a shell with no network — each as a person meets it.

use crate::common::*;
use serde_json::{Value, json};
use std::process::Stdio;

/// Ids, times and durations out of what a person reads, for snapshots.
fn redacted() -> insta::Settings {
    let mut settings = insta::Settings::clone_current();
    settings.add_filter(r"\b([spc])_[0-9A-Z]{20,}\b", "[${1}_ID]");
    settings.add_filter(r"\d{4}-\d\d-\d\dT[0-9:.]+Z", "[TIME]");
    settings.add_filter(r"\d{4}-\d\d-\d\d", "[DATE]");
    settings.add_filter(r"\d+ ms", "[N] ms");
    settings.add_filter(r"\d+\.\d s", "[N.N] s");
    settings.add_filter(r"as of commit \d+", "as of commit [N]");
    settings
}

#[tokio::test(flavor = "multi_thread")]
async fn a_denial_without_a_terminal_says_denied_the_rule_and_is_counted() {
    let s = Setup::new(json!({"turns": [
        reply(json!([call("r1", "read", json!({"file_path": "calc.py"}))]), "tool_use"),
        reply(json!([text("Fixing."), call("e1", "edit", json!({"file_path": "calc.py", "old_string": "a - b", "new_string": "a + b"}))]), "tool_use"),
        reply(json!([text("I could not change calc.py.")]), "end_turn"),
    ]}))
    .await;
    s.file("calc.py", "def add(a, b):\n    return a - b\n");
    let ran = s.run(&["fix the failing test"]).await;
    assert_eq!(ran.code, 0, "{ran:#?}");
    let lines: Vec<&str> = ran.stderr.lines().collect();
    let denied = lines.iter().find(|l| l.contains("edit calc.py")).unwrap();
    let last = lines.iter().find(|l| l.starts_with("— ")).unwrap();
    let said = lines.iter().find(|l| l.starts_with("hc: nothing")).unwrap();
    redacted().bind(|| {
        insta::assert_snapshot!("denial_line", denied);
        insta::assert_snapshot!("denial_final_line", last);
        insta::assert_snapshot!("denial_nothing_changed", said);
    });
    assert!(
        denied.contains("denied") && !denied.contains('✗'),
        "{denied}"
    );
    assert!(denied.contains("--allow 'edit(calc.py)'"), "{denied}");
    assert!(last.contains("1 call denied"), "{last}");
    // The rule it names allows it.
    let again = Setup::new(json!({"turns": [
        reply(json!([call("r1", "read", json!({"file_path": "calc.py"}))]), "tool_use"),
        reply(json!([call("e1", "edit", json!({"file_path": "calc.py", "old_string": "a - b", "new_string": "a + b"}))]), "tool_use"),
        reply(json!([text("Fixed.")]), "end_turn"),
    ]}))
    .await;
    again.file("calc.py", "def add(a, b):\n    return a - b\n");
    let ran = again
        .run(&["--allow", "edit(calc.py)", "fix the failing test"])
        .await;
    assert_eq!(ran.code, 0, "{ran:#?}");
    assert!(!ran.stderr.contains("denied"), "{}", ran.stderr);
    assert!(
        std::fs::read_to_string(again.root.join("calc.py"))
            .unwrap()
            .contains("a + b")
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_denied_read_alone_does_not_say_nothing_was_changed() {
    let s = Setup::new(json!({"turns": [
        reply(json!([call("r1", "read", json!({"file_path": ".env"}))]), "tool_use"),
        reply(json!([text("Done.")]), "end_turn"),
    ]}))
    .await;
    s.file(".env", "SECRET=1\n");
    let ran = s
        .run(&["--deny", "read(.env)", "what is in the env file?"])
        .await;
    assert_eq!(ran.code, 0, "{ran:#?}");
    assert!(ran.stderr.contains("1 call denied"), "{}", ran.stderr);
    assert!(
        !ran.stderr.contains("nothing was changed"),
        "{}",
        ran.stderr
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn scope_pages_with_the_after_cursor_it_prints() {
    let s = Setup::new(json!({"turns": [reply(json!([text("ok")]), "end_turn")]})).await;
    assert_eq!(s.run(&["hello"]).await.code, 0);
    let first = s.out(&["scope", "engine/program", "--limit", "2"]).await;
    assert_eq!(first.code, 0, "{first:#?}");
    let more = first
        .stdout
        .lines()
        .find_map(|l| l.strip_prefix("more: "))
        .unwrap_or_else(|| panic!("{}", first.stdout));
    let words: Vec<&str> = more.split_whitespace().collect();
    assert_eq!((words[0], words[2]), ("--after", "--as-of"), "{more}");
    let mut args = vec!["scope", "engine/program", "--limit", "2"];
    args.extend_from_slice(&words[..4]);
    let next = s.out(&args).await;
    assert_eq!(next.code, 0, "{next:#?}");
    let ids = |out: &str| -> Vec<String> {
        out.lines()
            .filter(|l| l.starts_with("program/"))
            .map(|l| l.split_whitespace().next().unwrap().to_owned())
            .collect()
    };
    let (a, b) = (ids(&first.stdout), ids(&next.stdout));
    assert_eq!(
        (a.len(), b.len()),
        (2, 2),
        "{}\n{}",
        first.stdout,
        next.stdout
    );
    assert!(
        a.iter().all(|id| !b.contains(id)),
        "the next page: {a:?} then {b:?}"
    );
    let bad = s
        .out(&["scope", "engine/program", "--after", "nonsense"])
        .await;
    assert_ne!(bad.code, 0);
    assert!(!bad.stderr.is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn after_a_killed_hc_ps_and_sessions_show_what_is_really_running() {
    let s = Setup::new(json!({"turns": [
        reply(json!([call("t1", "shell", json!({"command": "sleep 60"}))]), "tool_use"),
    ]}))
    .await;
    let mut hc = s
        .hc(&["run", "--permission-mode", "bypass", "start"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_for("the tool to run", || {
        processes_of(&s, "shell")
            .iter()
            .any(|b| b["status"] == "running")
    })
    .await;
    // While it runs: the run and its tool are shown running.
    let live = s.out(&["ps"]).await;
    assert!(live.stdout.contains("shell"), "{live:#?}");
    let listed = s.out(&["sessions", "--json"]).await;
    let rows: Value = serde_json::from_str(&listed.stdout).unwrap();
    assert_eq!(rows[0]["status"], "running", "{rows:#}");
    hc.start_kill().unwrap();
    hc.wait().await.unwrap();
    let ps = s.out(&["ps"]).await;
    assert_eq!(ps.code, 0, "{ps:#?}");
    assert!(
        ps.stdout.starts_with("no process is running"),
        "{}",
        ps.stdout
    );
    assert!(
        ps.stdout
            .contains("left marked running by an hc that was killed"),
        "{}",
        ps.stdout
    );
    let json_ps = s.out(&["ps", "--json"]).await;
    assert_eq!(json_ps.stdout.trim(), "[]", "{json_ps:#?}");
    let listed = s.out(&["sessions", "--json"]).await;
    let rows: Value = serde_json::from_str(&listed.stdout).unwrap();
    assert_eq!(rows[0]["status"], "failed (hc was killed)", "{rows:#}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_sub_agents_trace_has_its_run_header_and_its_calls_not_fake_runs() {
    let s = Setup::new(json!({"turns": [
        when("ROOT", json!([text("Asking a helper."), call("a1", "agent", json!({"text": "CHILD list files", "description": "list"}))]), "tool_use"),
        when("CHILD", json!([call("g1", "glob", json!({"pattern": "*.md"}))]), "tool_use"),
        when("toolu_", json!([]), "end_turn"),
        when("g1", json!([text("One file: notes.md.")]), "end_turn"),
        when("a1", json!([text("The helper found notes.md.")]), "end_turn"),
    ]}))
    .await;
    s.file("notes.md", "# notes\n");
    let ran = s.run(&["--allow", "agent", "ROOT what is here?"]).await;
    assert_eq!(ran.code, 0, "{ran:#?}");
    let traced = s.out(&["trace"]).await;
    assert_eq!(traced.code, 0, "{traced:#?}");
    let shown = &traced.stdout;
    redacted().bind(|| insta::assert_snapshot!("sub_agent_trace", shown));
    assert!(!shown.contains("0 turns"), "{shown}");
    let runs: Vec<&str> = shown
        .lines()
        .filter(|l| l.trim_start().starts_with("▶ run"))
        .collect();
    assert_eq!(runs.len(), 2, "the root's run and the sub-agent's: {shown}");
    assert!(
        runs[1].contains("1 turn ") || runs[1].contains("2 turns"),
        "{shown}"
    );
    assert!(shown.contains("✓ glob"), "{shown}");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_trace_header_counts_every_tool_the_request_sent() {
    let s = Setup::new(json!({"turns": [reply(json!([text("ok")]), "end_turn")]})).await;
    assert_eq!(s.run(&["hello"]).await.code, 0);
    let sent: Value = serde_json::from_slice(&s.sent()[0]).unwrap();
    let n = sent["tools"].as_array().unwrap().len();
    let traced = s.out(&["trace"]).await;
    assert!(
        traced.stdout.contains(&format!(" {n} tools ")),
        "{n} tools sent: {}",
        traced.stdout
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_budget_under_a_cent_is_said_as_given() {
    let s = Setup::new(json!({"turns": [
        reply(json!([call("g1", "glob", json!({"pattern": "*"}))]), "tool_use"),
        reply(json!([text("never")]), "end_turn"),
    ]}))
    .await;
    let ran = s.run(&["--max-budget-usd", "0.001", "look around"]).await;
    assert_eq!(ran.code, 3, "{ran:#?}");
    assert!(ran.stderr.contains("budget of $0.001 "), "{}", ran.stderr);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_wrong_session_id_is_exit_2_everywhere() {
    let s = Setup::new(json!({"turns": [reply(json!([text("ok")]), "end_turn")]})).await;
    assert_eq!(s.run(&["hello"]).await.code, 0);
    for args in [
        vec!["run", "--resume", "s_nope", "go on"],
        vec!["chat", "--resume", "s_nope"],
        vec!["trace", "s_nope"],
        vec!["trace", "s_nope", "--request", "1"],
    ] {
        let out = s.out(&args).await;
        assert_eq!(out.code, 2, "{args:?}: {out:#?}");
        assert!(
            out.stderr.contains("no session `s_nope`"),
            "{args:?}: {}",
            out.stderr
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn trace_without_an_id_is_the_newest_session() {
    let s = Setup::new(json!({"turns": [
        reply(json!([text("first")]), "end_turn"),
        reply(json!([text("second")]), "end_turn"),
    ]}))
    .await;
    assert_eq!(s.run(&["FIRST"]).await.code, 0);
    assert_eq!(s.run(&["SECOND"]).await.code, 0);
    let traced = s.out(&["trace"]).await;
    assert!(
        traced.stdout.contains("SECOND") && !traced.stdout.contains("FIRST"),
        "{}",
        traced.stdout
    );
    let body = s.out(&["trace", "--request", "1"]).await;
    assert_eq!(body.stdout.as_bytes(), &s.sent()[1][..]);
}

#[tokio::test(flavor = "multi_thread")]
async fn config_says_a_key_came_from_dot_env() {
    let s = Setup::new(json!({"turns": [reply(json!([text("ok")]), "end_turn")]})).await;
    s.file(".env", "ANTHROPIC_API_KEY=sk-ant-from-dotenv\n");
    let shown = s.out(&["config"]).await;
    assert_eq!(shown.code, 0, "{shown:#?}");
    let line = shown
        .stdout
        .lines()
        .find(|l| l.starts_with("ANTHROPIC_API_KEY"))
        .unwrap();
    assert!(
        line.contains("set") && line.trim_end().ends_with(".env"),
        "{line}"
    );
    assert!(!shown.stdout.contains("sk-ant-from-dotenv"));
    let help = s.out(&["run", "--help"]).await;
    assert!(help.stdout.contains(".env"), "{}", help.stdout);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_download_without_network_says_why_and_names_the_setting() {
    let s = Setup::new(json!({"turns": [
        reply(json!([call("s1", "shell", json!({"command": "curl -sS http://127.0.0.1:9/ || bash -c 'cat < /dev/tcp/127.0.0.1/9'"}))]), "tool_use"),
        reply(json!([text("The download failed.")]), "end_turn"),
    ]}))
    .await;
    let ran = s.run(&["--permission-mode", "bypass", "fetch it"]).await;
    assert_eq!(ran.code, 0, "{ran:#?}");
    let session = s.sessions().pop().unwrap();
    let result = &s.of_type(&session, "tool-result")[0];
    let said = result["text"].as_str().unwrap();
    assert!(said.contains("[no network:"), "{said}");
    assert!(
        said.contains("network = true") && said.contains("[programs.shell]"),
        "{said}"
    );
    assert!(
        ran.stderr.contains("[no network:"),
        "the person is told too: {}",
        ran.stderr
    );
    // A command that fails for another reason is not said to be offline.
    let other = Setup::new(json!({"turns": [
        reply(json!([call("s1", "shell", json!({"command": "ls /nonexistent"}))]), "tool_use"),
        reply(json!([text("ok")]), "end_turn"),
    ]}))
    .await;
    assert_eq!(
        other
            .run(&["--permission-mode", "bypass", "list"])
            .await
            .code,
        0
    );
    let session = other.sessions().pop().unwrap();
    let said = other.of_type(&session, "tool-result")[0]["text"].clone();
    assert!(!said.as_str().unwrap().contains("no network"), "{said}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_prompt_with_no_command_is_hc_run_and_thinking_takes_tokens() {
    let s = Setup::new(
        json!({"cycle": true, "turns": [reply(json!([text("Hello there.")]), "end_turn")]}),
    )
    .await;
    let ran = s.out(&["--thinking", "2048", "say hello please"]).await;
    assert_eq!(ran.code, 0, "{ran:#?}");
    assert!(ran.stdout.contains("Hello there."), "{ran:#?}");
    let sent: Value = serde_json::from_slice(&s.sent()[0]).unwrap();
    assert_eq!(sent["thinking"]["budget_tokens"], 2048, "{sent:#}");
    let plain = s.out(&["say hi"]).await;
    assert_eq!(plain.code, 0, "{plain:#?}");
    let typo = s.out(&["sesions"]).await;
    assert_eq!(
        typo.code, 2,
        "a single unknown word is a command's typo: {typo:#?}"
    );
}
