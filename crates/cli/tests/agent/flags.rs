//! No flag accepted and ignored: `--settings`, `--effort`, `--thinking
//! adaptive`, `--thinking-display`, `--setting-sources` applied — each
//! seen in what reaches the model — and what hermitcrab cannot do
//! refused with a usage error before any request.

use crate::common::*;
use serde_json::{Value, json};

fn body(s: &Setup, n: usize) -> Value {
    serde_json::from_slice(&s.sent()[n]).unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn settings_json_is_applied_rules_mode_model_and_hooks() {
    let s = Setup::new(json!({"turns": [
        reply(json!([call("t1", "shell", json!({"command": "echo ran"}))]), "tool_use"),
        reply(json!([call("t2", "shell", json!({"command": "rm -rf keep"}))]), "tool_use"),
        reply(json!([text("done")]), "end_turn"),
    ]}))
    .await;
    std::fs::create_dir(s.root.join("keep")).unwrap();
    let settings = json!({
        "$schema": "https://json.schemastore.org/claude-code-settings.json",
        "model": "claude-haiku-4-5",
        "permissions": {"allow": ["Bash(echo:*)"], "deny": ["Bash(rm:*)"]},
        "hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [
            {"type": "command", "command": "echo hooked >> hook.log"}]}]},
    });
    let ran = s.run(&["--settings", &settings.to_string(), "go"]).await;
    assert_eq!(ran.code, 0, "{ran:#?}");
    assert_eq!(body(&s, 0)["model"], "claude-haiku-4-5");
    let session = s.sessions().pop().unwrap();
    let results = s.of_type(&session, "tool-result");
    assert_eq!(
        results[0]["is_error"], false,
        "allowed by the settings' rule: {results:?}"
    );
    assert!(s.root.join("keep").exists(), "denied by the settings' rule");
    let log = std::fs::read_to_string(s.root.join("hook.log")).unwrap_or_default();
    assert!(log.contains("hooked"), "the settings' hook ran: {log:?}");
    // a file works as well; --model beside it wins
    std::fs::write(s.root.join("s.json"), settings.to_string()).unwrap();
    let asked = s.sent().len();
    let refused = s
        .run(&["--settings", "s.json", "--model", "claude-sonnet-4-5", "x"])
        .await;
    // (the script is spent: the run fails at the model, after its request)
    assert_eq!(
        body(&s, asked)["model"],
        "claude-sonnet-4-5",
        "{refused:#?}"
    );
    // what hermitcrab does not apply is refused by name, nothing sent
    let asked = s.sent().len();
    for (bad, says) in [
        (json!({"env": {"A": "1"}}), "`env`"),
        (
            json!({"permissions": {"disableBypassPermissionsMode": "disable"}}),
            "disableBypassPermissionsMode",
        ),
        (json!({"sandbox": {"enabled": false}}), "always"),
        (
            json!({"hooks": {"PreToolUse": [{"hooks": [{"type": "prompt", "command": "x"}]}]}}),
            "`command` hooks",
        ),
    ] {
        let ran = s.run(&["--settings", &bad.to_string(), "x"]).await;
        assert_eq!(ran.code, 2, "{bad}: {ran:#?}");
        assert!(ran.stderr.contains(says), "{bad}: {}", ran.stderr);
    }
    assert_eq!(s.sent().len(), asked, "no request for refused settings");
}

#[tokio::test(flavor = "multi_thread")]
async fn effort_and_adaptive_thinking_reach_the_request_and_are_rebuilt() {
    let s =
        Setup::new(json!({"cycle": true, "turns": [reply(json!([text("ok")]), "end_turn")]})).await;
    let ran = s
        .run(&[
            "--effort",
            "high",
            "--thinking",
            "adaptive",
            "--thinking-display",
            "omitted",
            "hi",
        ])
        .await;
    assert_eq!(ran.code, 0, "{ran:#?}");
    let sent = body(&s, 0);
    assert_eq!(sent["output_config"], json!({"effort": "high"}), "{sent}");
    assert_eq!(
        sent["thinking"],
        json!({"type": "adaptive", "display": "omitted"})
    );
    let beta = &s.fake.requests_to("/v1/messages")[0].headers["anthropic-beta"];
    assert!(beta.contains("effort-2025-11-24"), "{beta}");
    let session = s.sessions().pop().unwrap();
    assert_eq!(s.rebuilt(&session, 1).await, s.sent()[0]);
    let asked = s.sent().len();
    for (args, says) in [
        (vec!["--effort", "extreme"], "low, medium, high, xhigh, max"),
        (vec!["--thinking-display", "omitted"], "thinking is off"),
        (
            vec!["--thinking-display", "loud", "--thinking", "adaptive"],
            "summarized or omitted",
        ),
        (vec!["--permission-prompt-tool", "mcp__auth__ask"], "stdio"),
        (vec!["--include-hook-events"], "hc trace"),
        (
            vec!["--setting-sources", "user,team"],
            "`team` is not a source",
        ),
    ] {
        let mut all = args.clone();
        all.push("x");
        let ran = s.run(&all).await;
        assert_eq!(ran.code, 2, "{args:?}: {ran:#?}");
        assert!(ran.stderr.contains(says), "{args:?}: {}", ran.stderr);
    }
    assert_eq!(s.sent().len(), asked, "no request for a refused flag");
}

#[tokio::test(flavor = "multi_thread")]
async fn setting_sources_none_leaves_the_projects_files_out() {
    let s =
        Setup::new(json!({"cycle": true, "turns": [reply(json!([text("ok")]), "end_turn")]})).await;
    s.file("AGENTS.md", "PROJECT RULES HERE");
    s.file(".hermitcrab/config.toml", "model = \"claude-opus-4-5\"\n");
    s.trust();
    assert_eq!(s.run(&["hi"]).await.code, 0);
    let all = body(&s, 0);
    assert_eq!(all["model"], "claude-opus-4-5");
    assert!(all["system"].to_string().contains("PROJECT RULES HERE"));
    let ran = s.run(&["--setting-sources", "", "hi"]).await;
    assert_eq!(ran.code, 0, "{ran:#?}");
    let none = body(&s, 1);
    assert_ne!(
        none["model"], "claude-opus-4-5",
        "the project's config is left out"
    );
    assert!(!none["system"].to_string().contains("PROJECT RULES HERE"));
    let ran = s.run(&["--setting-sources", "user,project", "hi"]).await;
    assert_eq!(ran.code, 0, "{ran:#?}");
    assert!(
        body(&s, 2)["system"]
            .to_string()
            .contains("PROJECT RULES HERE")
    );
    // the init line lists what the run has: the project's skill only when kept
    s.file(
        ".hermitcrab/skills/release/SKILL.md",
        "---\nname: release\ndescription: How to release\n---\nSteps.\n",
    );
    for (sources, skills) in [("", json!([])), ("project", json!(["release"]))] {
        let args = [
            "--setting-sources",
            sources,
            "--output-format",
            "stream-json",
            "--verbose",
            "hi",
        ];
        let ran = s.run(&args).await;
        let first = ran.stdout.lines().next().unwrap_or_default().to_owned();
        let init: Value = serde_json::from_str(&first).unwrap();
        assert_eq!(init["skills"], skills, "{sources:?}: {init}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn flags_that_go_with_others_are_refused_alone() {
    let s = Setup::new(json!({"turns": [reply(json!([text("unused")]), "end_turn")]})).await;
    let id = "1b4e28ba-2fa1-11d2-883f-0016d3cca427";
    let stream = [
        "--input-format",
        "stream-json",
        "--output-format",
        "stream-json",
        "--verbose",
    ];
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (
            vec!["run", "--compact", "x"],
            "--compact goes with --resume or --continue",
        ),
        (
            vec!["run", "--continue", "--session-id", id, "x"],
            "--session-id names a new session",
        ),
        (
            vec!["run", "--include-partial-messages", "x"],
            "--include-partial-messages goes with",
        ),
        (
            vec!["run", "--permission-prompt-tool", "stdio", "x"],
            "--input-format stream-json",
        ),
        (
            [&["run"][..], &stream[..], &["x"][..]].concat(),
            "leave out the prompt argument",
        ),
        (
            vec!["serve", "--stdio", "--port", "9000"],
            "--port is the page's",
        ),
        (
            vec!["agents", "--json", "rm", "s_x"],
            "--json goes with `hc agents` alone",
        ),
        (
            vec!["trace", "--request", "1", "--json"],
            "--json goes with the session's tree",
        ),
        (vec!["memory", "edit", "m_x", "--user"], "--user goes with"),
    ];
    for (args, says) in cases {
        let ran = s.out(&args).await;
        assert_eq!(ran.code, 2, "{args:?}: {ran:#?}");
        assert!(ran.stderr.contains(says), "{args:?}: {}", ran.stderr);
    }
    let header = s
        .out(&["mcp", "add", "x", "--header", "A: b", "--", "some-server"])
        .await;
    assert_ne!(header.code, 0, "{header:#?}");
    assert!(
        header.stderr.contains("--header is sent with HTTP"),
        "{header:#?}"
    );
    assert!(s.sent().is_empty(), "nothing reached the model");
}

#[tokio::test(flavor = "multi_thread")]
async fn driven_over_stdin_fork_session_forks_and_compact_compacts() {
    let s =
        Setup::new(json!({"cycle": true, "turns": [reply(json!([text("ok")]), "end_turn")]})).await;
    assert_eq!(s.run(&["first"]).await.code, 0);
    let first = s.sessions().pop().unwrap();
    let line = json!({"type": "user", "message": {"role": "user", "content": "more"}});
    let input = format!("{line}\n");
    let args = [
        "run",
        "--input-format",
        "stream-json",
        "--output-format",
        "stream-json",
        "--verbose",
        "--resume",
        &first,
        "--fork-session",
        "--compact",
    ];
    let out = s.piped(&args, input.as_bytes()).await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let sessions = s.sessions();
    assert_eq!(sessions.len(), 2, "a fork was made");
    assert_eq!(
        s.of_type(&first, "prompt").len(),
        1,
        "the old session is left alone"
    );
    let fork = sessions.into_iter().find(|id| *id != first).unwrap();
    assert_eq!(
        s.of_type(&fork, "compaction").len(),
        1,
        "--compact compacted it"
    );
}
