//! Hooks: commands run before and after tool calls, on the prompt and at
//! the end, each a contained run of the `hook` program.

use crate::common::*;
use serde_json::{Value, json};
use substrate::{PlacementType, ScopeOpts, TypeFilter};

/// The project's hooks, trusted (a project's own hooks run only then).
fn config(s: &Setup, hooks: &str) {
    s.file(".hermitcrab/config.toml", hooks);
    s.trust();
}

fn hook_runs(s: &Setup) -> usize {
    s.db()
        .scope(
            &["program/hook"],
            &ScopeOpts {
                kind: TypeFilter::Instance,
                ..ScopeOpts::default()
            },
        )
        .unwrap()
        .chunks
        .iter()
        .filter(|c| c.is_on("engine/process", PlacementType::Instance))
        .count()
}

fn shell_then_done(command: &str) -> Value {
    json!({"turns": [
        reply(json!([call("t1", "shell", json!({"command": command}))]), "tool_use"),
        reply(json!([text("done")]), "end_turn"),
    ]})
}

#[tokio::test(flavor = "multi_thread")]
async fn a_blocking_pre_tool_hook_reaches_the_model_and_nothing_runs() {
    let s = Setup::new(shell_then_done("echo should-not-run > ran.txt")).await;
    config(
        &s,
        "[[hooks]]\nevent = \"pre-tool\"\nmatcher = \"shell\"\ncommand = \"cat > hook-event.json; echo 'no shell today' >&2; exit 2\"\n",
    );
    let ran = s.run(&["--permission-mode", "bypass", "go"]).await;
    assert_eq!(ran.code, 0, "{ran:#?}");
    assert!(!s.root.join("ran.txt").exists());
    let second: Value = serde_json::from_slice(&s.sent()[1]).unwrap();
    let result = &second["messages"][2]["content"][0];
    assert_eq!(result["is_error"], true);
    assert_eq!(
        result["content"],
        "blocked by a pre-tool hook: no shell today"
    );
    assert_eq!(hook_runs(&s), 1, "the hook ran as a process");
    let event: Value =
        serde_json::from_str(&std::fs::read_to_string(s.root.join("hook-event.json")).unwrap())
            .unwrap();
    assert_eq!(event["event"], "pre-tool");
    assert_eq!(event["tool"]["program"], "shell");
    assert_eq!(
        event["tool"]["input"]["command"],
        "echo should-not-run > ran.txt"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_pre_tool_hook_may_rewrite_the_input_and_a_post_tool_hook_adds_to_the_result() {
    let s = Setup::new(shell_then_done("echo original")).await;
    config(
        &s,
        r#"
[[hooks]]
event = "pre-tool"
matcher = "shell(echo:*)"
command = "cat > /dev/null; echo '{\"input\": {\"command\": \"echo rewritten\"}}'"

[[hooks]]
event = "post-tool"
command = "cat > /dev/null; echo 'checked by the post hook'"
"#,
    );
    let ran = s.run(&["--permission-mode", "bypass", "go"]).await;
    assert_eq!(ran.code, 0, "{ran:#?}");
    let session = s.sessions().pop().unwrap();
    let result = &s.of_type(&session, "tool-result")[0];
    let text = result["text"].as_str().unwrap();
    assert!(
        text.contains("rewritten") && !text.contains("original"),
        "{text}"
    );
    assert!(
        text.contains("[post-tool hook] checked by the post hook"),
        "{text}"
    );
    let call = &s.of_type(&session, "tool-call")[0];
    assert_eq!(
        call["input"]["command"], "echo rewritten",
        "the call records what ran"
    );
    assert_eq!(hook_runs(&s), 2);
}

#[tokio::test(flavor = "multi_thread")]
async fn hooks_that_hang_fail_or_babble_are_reported_and_do_not_block() {
    let s = Setup::new(shell_then_done("echo ran")).await;
    s.file("not-executable.sh", "#!/bin/sh\nexit 2\n");
    config(
        &s,
        r#"
[[hooks]]
event = "pre-tool"
command = "sleep 20"
timeout_ms = 300

[[hooks]]
event = "pre-tool"
command = "./not-executable.sh"

[[hooks]]
event = "pre-tool"
command = "cat > /dev/null; echo 'this is { not json'"
"#,
    );
    let ran = s.run(&["--permission-mode", "bypass", "go"]).await;
    assert_eq!(ran.code, 0, "{ran:#?}");
    assert!(ran.stderr.contains("timed out"), "{}", ran.stderr);
    assert!(
        ran.stderr.contains("not-executable.sh` failed (exit 126)"),
        "{}",
        ran.stderr
    );
    let session = s.sessions().pop().unwrap();
    assert!(
        s.of_type(&session, "tool-result")[0]["text"]
            .as_str()
            .unwrap()
            .contains("ran")
    );
    // What the babbling hook printed is neither a decision nor a rewrite:
    // the call ran as the model asked.
    assert_eq!(
        s.of_type(&session, "tool-call")[0]["input"]["command"],
        "echo ran"
    );
    assert_eq!(hook_runs(&s), 3);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_hook_that_blocks_on_failure_stops_the_call_when_it_hangs_or_fails() {
    for (hook, said) in [
        ("command = \"sleep 20\"\ntimeout_ms = 300", "timed out"),
        ("command = \"cat > /dev/null; exit 7\"", "exit 7"),
    ] {
        let s = Setup::new(shell_then_done("echo ran > ran.txt")).await;
        config(
            &s,
            &format!("[[hooks]]\nevent = \"pre-tool\"\non_failure = \"block\"\n{hook}\n"),
        );
        let ran = s.run(&["--permission-mode", "bypass", "go"]).await;
        assert_eq!(ran.code, 0, "{ran:#?}");
        assert!(
            !s.root.join("ran.txt").exists(),
            "the guarded call never ran"
        );
        let second: Value = serde_json::from_slice(&s.sent()[1]).unwrap();
        let result = &second["messages"][2]["content"][0];
        assert_eq!(result["is_error"], true, "{result}");
        let text = result["content"].as_str().unwrap();
        assert!(
            text.contains(said) && text.contains("blocks on failure"),
            "{text}"
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_stop_hook_sends_the_model_back_and_a_user_prompt_hook_can_refuse() {
    let s = Setup::new(json!({"turns": [
        reply(json!([text("All done, I think.")]), "end_turn"),
        reply(json!([text("Tests run; now done.")]), "end_turn"),
    ]}))
    .await;
    config(
        &s,
        "[[hooks]]\nevent = \"stop\"\ncommand = \"test -f .stopped || { touch .stopped; echo 'run the tests first' >&2; exit 2; }\"\n",
    );
    let ran = s.run(&["go"]).await;
    assert_eq!(ran.code, 0, "{ran:#?}");
    assert!(ran.stdout.contains("now done"));
    let second: Value = serde_json::from_slice(&s.sent()[1]).unwrap();
    let last = second["messages"].as_array().unwrap().last().unwrap();
    assert_eq!(
        last["content"][0]["text"],
        "[stop hook] run the tests first"
    );
    let session = s.sessions().pop().unwrap();
    assert!(s.rebuilt(&session, 2).await == s.sent()[1]);

    config(
        &s,
        "[[hooks]]\nevent = \"user-prompt\"\ncommand = \"echo 'name a ticket' >&2; exit 2\"\n",
    );
    let refused = s.run(&["go"]).await;
    assert_eq!(refused.code, 1);
    assert!(
        refused
            .stderr
            .contains("a user-prompt hook blocked the prompt: name a ticket"),
        "{}",
        refused.stderr
    );
    assert_eq!(s.sent().len(), 2, "no model call for a refused prompt");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_bad_hook_configuration_is_named() {
    let s = Setup::new(shell_then_done("true")).await;
    config(
        &s,
        "[[hooks]]\nevent = \"before-everything\"\ncommand = \"true\"\n",
    );
    let ran = s.run(&["go"]).await;
    assert_ne!(ran.code, 0);
    assert!(
        ran.stderr
            .contains("hook event `before-everything` is not one of pre-tool"),
        "{}",
        ran.stderr
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_post_tool_hook_replaces_what_the_model_reads_and_the_record_says_so() {
    let s = Setup::new(shell_then_done("echo token=SECRET-123")).await;
    let printed = json!({"hookSpecificOutput": {"hookEventName": "PostToolUse",
        "updatedMCPToolOutput": "token=[redacted by the hook]"}});
    s.file("hook-output.json", &printed.to_string());
    config(
        &s,
        "[[hooks]]\nevent = \"PostToolUse\"\nmatcher = \"shell\"\ncommand = \"cat > /dev/null; cat hook-output.json\"\n",
    );
    let ran = s.run(&["--permission-mode", "bypass", "go"]).await;
    assert_eq!(ran.code, 0, "{ran:#?}");
    let second: Value = serde_json::from_slice(&s.sent()[1]).unwrap();
    let read = &second["messages"][2]["content"][0];
    assert_eq!(read["content"], "token=[redacted by the hook]", "{read}");
    let session = s.sessions().pop().unwrap();
    let result = &s.of_type(&session, "tool-result")[0];
    assert_eq!(result["text"], "token=[redacted by the hook]", "{result}");
    assert_eq!(result["data"]["replaced_by"], "post-tool hook", "{result}");
    assert_eq!(s.rebuilt(&session, 2).await, s.sent()[1]);
}
