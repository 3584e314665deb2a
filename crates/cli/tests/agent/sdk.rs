//! Driven by the Claude Agent SDK (`design/sdk.md`): real programs on the
//! Python `claude-agent-sdk` (PyPI, pinned, in a venv under `target/`)
//! with `cli_path` = the built `hc`, against the fake model; and the
//! protocol's bad input, driven line by line.

use crate::common::*;
use serde_json::{Value, json};
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::OnceLock;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt};

/// The pinned SDK (built from its source distribution: the wheel also
/// carries Claude Code itself, which the tests do not need).
const SDK: &str = "claude-agent-sdk==0.2.190";

/// A Python with the SDK, made once (`HC_CANARY_PY_SDK=VERSION`, from
/// `scripts/canary`: that version in the pin's place, beside it).
fn sdk_python() -> PathBuf {
    static PYTHON: OnceLock<PathBuf> = OnceLock::new();
    let canary = std::env::var("HC_CANARY_PY_SDK")
        .ok()
        .filter(|v| !v.is_empty());
    PYTHON
        .get_or_init(|| {
            let (dir, sdk) = match canary {
                Some(version) => ("sdk-python-canary", format!("claude-agent-sdk=={version}")),
                None => ("sdk-python", SDK.to_owned()),
            };
            let venv = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(dir);
            testkit::python_venv(&venv, &["--no-binary", "claude-agent-sdk", &sdk]).unwrap()
        })
        .clone()
}

/// What the program printed: each message as the SDK typed it.
struct Program {
    lines: Vec<Value>,
    stderr: String,
}

impl Program {
    fn of(&self, class: &str) -> Vec<&Value> {
        self.lines.iter().filter(|l| l["class"] == class).collect()
    }

    fn result(&self) -> &Value {
        self.of("ResultMessage")
            .last()
            .copied()
            .unwrap_or_else(|| panic!("no ResultMessage: {:#?}\n{}", self.lines, self.stderr))
    }

    fn note(&self, key: &str) -> Value {
        self.lines
            .iter()
            .find(|l| l["class"] == "note" && l.get(key).is_some())
            .map(|l| l[key].clone())
            .unwrap_or_else(|| panic!("no note {key}: {:#?}\n{}", self.lines, self.stderr))
    }
}

/// Runs scenario `name` of the SDK program in `s`'s project.
async fn program(s: &Setup, name: &str) -> Program {
    let script =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/agent/fixtures/sdk_program.py");
    let mut command = tokio::process::Command::new(sdk_python());
    command.arg(script).arg(name).arg(HC);
    let (lines, stderr) = drive(s, command).await;
    Program { lines, stderr }
}

/// Runs an SDK program (`command`) in the project against the fake to its
/// end (120 s at most), which must be a success; answers its JSON lines
/// and its stderr.
pub async fn drive(s: &Setup, mut command: tokio::process::Command) -> (Vec<Value>, String) {
    command
        .current_dir(&s.root)
        .envs(home_env())
        .env("ANTHROPIC_BASE_URL", s.fake.base_url())
        .env("ANTHROPIC_API_KEY", "test-key")
        .env("XDG_CONFIG_HOME", s.root.join(".no-user-config"))
        .env("XDG_DATA_HOME", s.root.join(".no-user-data"))
        .kill_on_drop(true);
    for var in SCRUB.iter().filter(|v| !v.starts_with("ANTHROPIC")) {
        command.env_remove(var);
    }
    let out = tokio::time::timeout(Duration::from_secs(120), command.output())
        .await
        .expect("the SDK program did not end within 120 s")
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    // (a minified SDK's error shows a whole line of its source: left out)
    let said: Vec<&str> = (stderr.lines())
        .map(|l| {
            if l.len() > 1000 {
                "[a line of the SDK's source]"
            } else {
                l
            }
        })
        .collect();
    assert!(
        out.status.success(),
        "the SDK program failed: {}",
        said.join("\n")
    );
    let lines = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    (lines, stderr)
}

/// The session a result names (its `session_id`: ours, or the program's).
fn session_of(s: &Setup, result: &Value) -> String {
    let id = result["session_id"].as_str().unwrap().to_owned();
    assert!(
        s.sessions().contains(&id),
        "{id} is one of the project's sessions"
    );
    id
}

#[tokio::test(flavor = "multi_thread")]
async fn a_one_shot_query_reads_as_the_sdks_typed_messages_and_is_traced() {
    let s = Setup::new(json!({"turns": [
        reply(json!([call("t1", "Bash", json!({"command": "echo hello"}))]), "tool_use"),
        reply(json!([text("it said hello")]), "end_turn"),
    ]}))
    .await;
    let ran = program(&s, "one_shot").await;
    let init = ran.of("SystemMessage")[0];
    assert_eq!(init["subtype"], "init", "{init}");
    assert!(
        init["data"]["tools"]
            .as_array()
            .unwrap()
            .contains(&json!("Bash"))
    );
    let assistant = ran.of("AssistantMessage");
    assert_eq!(assistant[0]["blocks"], json!(["ToolUseBlock"]));
    assert_eq!(assistant[0]["content"][0]["name"], "Bash");
    assert_eq!(
        ran.of("UserMessage")[0]["blocks"],
        json!(["ToolResultBlock"])
    );
    assert_eq!(ran.of("UserMessage")[0]["content"][0]["content"], "hello\n");
    assert_eq!(assistant[1]["blocks"], json!(["TextBlock"]));
    let result = ran.result();
    assert_eq!(result["subtype"], "success");
    assert_eq!(result["result"], "it said hello");
    assert!(result["total_cost_usd"].as_f64().unwrap() > 0.0, "{result}");
    assert_eq!(result["usage"]["input_tokens"], 2000);
    // the model saw Claude Code's names; every request rebuilds exactly
    let session = session_of(&s, result);
    let sent: Value = serde_json::from_slice(&s.sent()[0]).unwrap();
    assert!(sent["tools"].to_string().contains("\"Bash\""));
    for n in 1..=2 {
        assert_eq!(s.rebuilt(&session, n).await, s.sent()[n - 1]);
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_client_takes_two_turns_on_one_session() {
    let s = Setup::new(json!({"turns": [
        when("first turn", json!([text("one")]), "end_turn"),
        when("second turn", json!([text("two")]), "end_turn"),
    ]}))
    .await;
    let ran = program(&s, "two_turns").await;
    let results = ran.of("ResultMessage");
    assert_eq!(results.len(), 2, "{:#?}", ran.lines);
    assert_eq!(results[0]["result"], "one");
    assert_eq!(results[1]["result"], "two");
    assert_eq!(results[0]["session_id"], results[1]["session_id"]);
    assert_eq!(s.sessions().len(), 1);
    let second: Value = serde_json::from_slice(&s.sent()[1]).unwrap();
    assert!(
        second["messages"].to_string().contains("first turn"),
        "{second}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn can_use_tool_allows_with_a_changed_input_and_denies_leaving_the_disk_alone() {
    let s = Setup::new(json!({"turns": [
        reply(json!([call("w", "Write", json!({"file_path": "a.txt", "content": "from the model"}))]), "tool_use"),
        reply(json!([call("e", "Edit", json!({"file_path": "a.txt", "old_string": "program", "new_string": "EDITED"}))]), "tool_use"),
        reply(json!([text("done")]), "end_turn"),
    ]}))
    .await;
    let ran = program(&s, "permissions").await;
    assert_eq!(ran.note("asked"), json!(["Write", "Edit"]));
    let written = std::fs::read_to_string(s.root.join("a.txt")).unwrap();
    assert_eq!(
        written, "changed by the program",
        "the allowed input, not the model's"
    );
    let results = ran.of("UserMessage");
    assert_eq!(results[1]["content"][0]["is_error"], true);
    assert!(
        results[1]["content"][0]["content"]
            .as_str()
            .unwrap()
            .contains("not this one")
    );
    let result = ran.result();
    assert_eq!(
        result["permission_denials"][0]["tool_name"], "Edit",
        "{result}"
    );
    // both answers are in the session, shown by hc trace
    let session = session_of(&s, result);
    let decisions = s.of_type(&session, "permission-decision");
    assert_eq!(decisions.len(), 2);
    assert_eq!(
        decisions[0]["updated_input"]["content"],
        "changed by the program"
    );
    let trace = s.out(&["trace", &session]).await;
    assert!(
        trace.stdout.contains("→ allow") && trace.stdout.contains("→ deny"),
        "{}",
        trace.stdout
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_rule_the_program_adds_for_the_session_is_not_asked_again() {
    let s = Setup::new(json!({"turns": [
        reply(json!([call("b1", "Bash", json!({"command": "echo one"}))]), "tool_use"),
        reply(json!([call("b2", "Bash", json!({"command": "echo two"}))]), "tool_use"),
        reply(json!([text("done")]), "end_turn"),
    ]}))
    .await;
    let ran = program(&s, "remembered").await;
    assert_eq!(ran.note("asked"), json!(["echo one"]), "asked once");
    let session = session_of(&s, ran.result());
    let decisions = s.of_type(&session, "permission-decision");
    assert_eq!(decisions.len(), 1);
    assert_eq!(decisions[0]["decision"], "always");
    assert_eq!(decisions[0]["rule"], "Bash(echo:*)");
    let results = s.of_type(&session, "tool-result");
    assert!(
        results.iter().all(|r| r["is_error"] == false),
        "{results:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_question_goes_to_the_program_as_ask_user_question_and_its_answer_comes_back() {
    let s = Setup::new(json!({"turns": [
        reply(json!([call("q1", "AskUserQuestion", json!({"question": "Which colour?", "options": ["red", "blue"]}))]), "tool_use"),
        reply(json!([text("blue it is")]), "end_turn"),
    ]}))
    .await;
    let ran = program(&s, "asks").await;
    let seen = ran.note("seen");
    assert_eq!(seen[0]["tool"], "AskUserQuestion", "{seen}");
    let question = &seen[0]["input"]["questions"][0];
    assert_eq!(question["question"], "Which colour?");
    assert_eq!(question["options"][1]["label"], "blue");
    assert_eq!(question["multiSelect"], false);
    let session = session_of(&s, ran.result());
    let answers = s.of_type(&session, "user-answer");
    assert_eq!(answers[0]["text"], "blue", "{answers:?}");
    let second: Value = serde_json::from_slice(&s.sent()[1]).unwrap();
    let result = &second["messages"][2]["content"][0];
    assert!(result["content"].to_string().contains("blue"), "{result}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_python_pre_tool_use_hook_denies_and_is_recorded() {
    let s = Setup::new(json!({"turns": [
        reply(json!([call("b", "Bash", json!({"command": "touch marker"}))]), "tool_use"),
        reply(json!([text("ok")]), "end_turn"),
    ]}))
    .await;
    let ran = program(&s, "hook_denies").await;
    let seen = ran.note("seen");
    assert_eq!(seen[0]["event"], "PreToolUse");
    assert_eq!(seen[0]["tool"], "Bash");
    assert_eq!(seen[0]["input"]["command"], "touch marker");
    assert!(!s.root.join("marker").exists(), "the command did not run");
    let denied = &ran.of("UserMessage")[0]["content"][0];
    assert!(
        denied["content"]
            .as_str()
            .unwrap()
            .contains("the hook says no"),
        "{denied}"
    );
    let session = session_of(&s, ran.result());
    assert_eq!(
        seen[0]["session"],
        json!(session),
        "the hook input names the session as the program knows it"
    );
    assert_eq!(
        s.of_type(&session, "hook-callback")[0]["event"],
        "PreToolUse"
    );
    assert_eq!(
        s.of_type(&session, "hook-answer")[0]["output"]["hookSpecificOutput"]["permissionDecision"],
        "deny"
    );
    let trace = s.out(&["trace", &session]).await;
    assert!(trace.stdout.contains("PreToolUse hook"), "{}", trace.stdout);
}

#[tokio::test(flavor = "multi_thread")]
async fn interrupt_ends_the_turn_and_the_client_goes_on() {
    let long = "word ".repeat(400);
    let s = Setup::new(json!({"turns": [
        {"reply": {"content": [text(&long)], "stop_reason": "end_turn"}, "pace": {"delay_ms": 30, "text_chunk": 5}},
    ]}))
    .await;
    let ran = program(&s, "interrupt").await;
    let result = ran.result();
    assert_eq!(result["subtype"], "error_during_execution", "{result}");
    assert_eq!(result["is_error"], true);
    let session = session_of(&s, result);
    let runs = s.processes(&session);
    assert_eq!(runs[0]["stop_reason"], "interrupted", "{:?}", runs[0]);
}

#[tokio::test(flavor = "multi_thread")]
async fn an_sdk_mcp_servers_tool_is_called_as_a_recorded_run() {
    let s = Setup::new(json!({"turns": [
        reply(json!([call("m", "mcp__calc__add", json!({"a": 2, "b": 3}))]), "tool_use"),
        reply(json!([text("five")]), "end_turn"),
    ]}))
    .await;
    let ran = program(&s, "sdk_server").await;
    let results = ran.of("UserMessage");
    assert_eq!(results[0]["content"][0]["content"], "5", "{:#?}", ran.lines);
    let runs = processes_of(&s, "mcp__calc__add");
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0]["status"], "completed");
    let sent: Value = serde_json::from_slice(&s.sent()[0]).unwrap();
    assert!(sent["tools"].to_string().contains("mcp__calc__add"));
    // no secret of the bridge reaches the substrate
    let db = std::fs::read(s.root.join(".hermitcrab/substrate.db")).unwrap();
    assert!(!String::from_utf8_lossy(&db).contains("Bearer tok_"));
}

#[tokio::test(flavor = "multi_thread")]
async fn accept_edits_writes_and_allowed_tools_run_without_asking() {
    let s = Setup::new(json!({"turns": [
        when("write a file", json!([call("w", "Write", json!({"file_path": "b.txt", "content": "b"}))]), "tool_use"),
        when("Created", json!([text("written")]), "end_turn"),
        when("run echo", json!([call("e", "Bash", json!({"command": "echo allowed"}))]), "tool_use"),
        when("allowed", json!([text("ran")]), "end_turn"),
    ]}))
    .await;
    let ran = program(&s, "accept_edits").await;
    assert_eq!(ran.result()["subtype"], "success");
    assert_eq!(std::fs::read_to_string(s.root.join("b.txt")).unwrap(), "b");
    let ran = program(&s, "allowed_tools").await;
    assert_eq!(
        ran.of("UserMessage")[0]["content"][0]["content"],
        "allowed\n"
    );
    assert_eq!(ran.result()["permission_denials"], json!([]));
}

#[tokio::test(flavor = "multi_thread")]
async fn max_turns_ends_with_error_max_turns() {
    let s = Setup::new(json!({"cycle": true, "turns": [
        reply(json!([call("l", "Bash", json!({"command": "true"}))]), "tool_use"),
    ]}))
    .await;
    let ran = program(&s, "max_turns").await;
    assert_eq!(
        ran.result()["subtype"],
        "error_max_turns",
        "{:#?}",
        ran.lines
    );
    assert_eq!(ran.result()["num_turns"], 2);
}

/// `hc` in the SDK's mode, driven a line at a time.
struct Raw {
    child: tokio::process::Child,
    stdin: Option<tokio::process::ChildStdin>,
    lines: tokio::sync::mpsc::UnboundedReceiver<Value>,
}

impl Raw {
    fn start(s: &Setup, extra: &[&str]) -> Raw {
        let mut args = vec![
            "--output-format",
            "stream-json",
            "--verbose",
            "--input-format",
            "stream-json",
        ];
        args.extend_from_slice(extra);
        let mut command = s.hc(&args);
        command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = command.spawn().unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = tokio::sync::mpsc::unbounded_channel();
        tokio::spawn(async move {
            let mut reader = tokio::io::BufReader::new(stdout).lines();
            while let Ok(Some(line)) = reader.next_line().await {
                if let Ok(value) = serde_json::from_str(&line) {
                    let _ = tx.send(value);
                }
            }
        });
        Raw {
            stdin: child.stdin.take(),
            child,
            lines,
        }
    }

    async fn send(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().unwrap();
        stdin.write_all(line.as_bytes()).await.unwrap();
        stdin.write_all(b"\n").await.unwrap();
        stdin.flush().await.unwrap();
    }

    async fn user(&mut self, text: &str) {
        let line = json!({"type": "user", "message": {"role": "user", "content": text}, "parent_tool_use_id": null, "session_id": ""});
        self.send(&line.to_string()).await;
    }

    async fn control(&mut self, id: &str, request: Value) {
        let line = json!({"type": "control_request", "request_id": id, "request": request});
        self.send(&line.to_string()).await;
    }

    /// The next line `pick` takes (30 s at most).
    async fn until(&mut self, what: &str, pick: impl Fn(&Value) -> bool) -> Value {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
        loop {
            let line = tokio::time::timeout_at(deadline, self.lines.recv())
                .await
                .unwrap_or_else(|_| panic!("no {what} within 30 s"))
                .unwrap_or_else(|| panic!("hc ended before {what}"));
            if pick(&line) {
                return line;
            }
        }
    }

    async fn response(&mut self, id: &str) -> Value {
        self.until(&format!("the response to {id}"), |l| {
            l["type"] == "control_response" && l["response"]["request_id"] == id
        })
        .await["response"]
            .clone()
    }

    async fn result(&mut self) -> Value {
        self.until("a result", |l| l["type"] == "result").await
    }

    /// Closes stdin; answers the exit code and stderr.
    async fn close(mut self) -> (i32, String) {
        drop(self.stdin.take());
        let out = tokio::time::timeout(Duration::from_secs(30), self.child.wait_with_output())
            .await
            .expect("hc did not end within 30 s")
            .unwrap();
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn bad_lines_and_unknown_requests_are_said_and_the_process_goes_on() {
    let s = Setup::new(json!({"turns": [
        when("hello", json!([text("hi")]), "end_turn"),
        when("again", json!([text("hi again")]), "end_turn"),
    ]}))
    .await;
    let mut hc = Raw::start(&s, &[]);
    hc.send("this is not json").await;
    hc.send("[1, 2]").await;
    hc.control("r1", json!({"subtype": "make_coffee"})).await;
    let unknown = hc.response("r1").await;
    assert_eq!(unknown["subtype"], "error");
    assert!(
        unknown["error"].as_str().unwrap().contains("make_coffee"),
        "{unknown}"
    );
    hc.control(
        "r2",
        json!({"subtype": "rewind_files", "user_message_id": "x"}),
    )
    .await;
    let rewind = hc.response("r2").await;
    assert_eq!(
        rewind["error"], "File rewinding is not enabled.",
        "{rewind}"
    );
    hc.control("r3", json!({"subtype": "initialize", "hooks": null}))
        .await;
    assert_eq!(hc.response("r3").await["subtype"], "success");
    hc.user("hello").await;
    assert_eq!(hc.result().await["result"], "hi");
    hc.control("r4", json!({"subtype": "set_model", "model": "opus"}))
        .await;
    assert_eq!(hc.response("r4").await["subtype"], "success");
    hc.control(
        "r5",
        json!({"subtype": "set_permission_mode", "mode": "acceptEdits"}),
    )
    .await;
    assert_eq!(hc.response("r5").await["subtype"], "success");
    hc.control("r6", json!({"subtype": "get_context_usage"}))
        .await;
    let usage = hc.response("r6").await;
    assert!(
        usage["response"]["totalTokens"].as_u64().unwrap() > 0,
        "{usage}"
    );
    hc.control("r7", json!({"subtype": "mcp_status"})).await;
    assert_eq!(hc.response("r7").await["response"]["mcpServers"], json!([]));
    hc.user("again").await;
    let init = hc
        .until("the second init", |l| l["subtype"] == "init")
        .await;
    // (an alias, as the SDK's `model` may be: today's model)
    assert_eq!(init["model"], "claude-opus-5-5");
    assert_eq!(init["permissionMode"], "acceptEdits");
    assert_eq!(hc.result().await["result"], "hi again");
    let (code, stderr) = hc.close().await;
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.contains("it is not JSON"), "{stderr}");
    assert!(stderr.contains("not a JSON object"), "{stderr}");
}

#[tokio::test(flavor = "multi_thread")]
async fn an_unanswered_permission_waits_and_an_interrupt_ends_the_turn() {
    let s = Setup::new(json!({"turns": [
        reply(json!([call("w", "Write", json!({"file_path": "c.txt", "content": "c"}))]), "tool_use"),
        reply(json!([text("unused")]), "end_turn"),
    ]}))
    .await;
    let mut hc = Raw::start(&s, &["--permission-prompt-tool", "stdio"]);
    hc.user("write c").await;
    let asked = hc
        .until("can_use_tool", |l| l["type"] == "control_request")
        .await;
    assert_eq!(asked["request"]["subtype"], "can_use_tool");
    assert_eq!(asked["request"]["tool_name"], "Write");
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(!s.root.join("c.txt").exists(), "it waits for the answer");
    hc.control("stop", json!({"subtype": "interrupt"})).await;
    assert_eq!(hc.response("stop").await["subtype"], "success");
    let result = hc.result().await;
    assert_eq!(result["subtype"], "error_during_execution", "{result}");
    assert!(!s.root.join("c.txt").exists());
    let (code, stderr) = hc.close().await;
    assert_eq!(
        code, 0,
        "an interrupt the program asked for is no failure: {stderr}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_hook_callback_answering_garbage_decides_nothing() {
    let s = Setup::new(json!({"turns": [
        reply(json!([call("b", "Bash", json!({"command": "echo ran"}))]), "tool_use"),
        reply(json!([text("done")]), "end_turn"),
    ]}))
    .await;
    let mut hc = Raw::start(
        &s,
        &[
            "--permission-mode",
            "bypassPermissions",
            "--include-partial-messages",
        ],
    );
    hc.control(
        "init",
        json!({"subtype": "initialize", "hooks": {"PreToolUse": [{"matcher": "Bash", "hookCallbackIds": ["hook_0"]}]}}),
    )
    .await;
    hc.response("init").await;
    hc.user("run it").await;
    let asked = hc
        .until("hook_callback", |l| l["type"] == "control_request")
        .await;
    assert_eq!(asked["request"]["subtype"], "hook_callback");
    assert_eq!(asked["request"]["input"]["hook_event_name"], "PreToolUse");
    let id = asked["request_id"].as_str().unwrap().to_owned();
    let garbage = json!({"type": "control_response", "response": {"subtype": "success", "request_id": id, "response": "garbage"}});
    hc.send(&garbage.to_string()).await;
    let result = hc.result().await;
    assert_eq!(result["subtype"], "success");
    let session = result["session_id"].as_str().unwrap().to_owned();
    let results = s.of_type(&session, "tool-result");
    assert_eq!(results[0]["text"], "ran\n", "the call ran: no decision");
    hc.close().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn stdin_closed_after_the_prompt_still_runs_the_turn_to_its_result() {
    let s = Setup::new(json!({"turns": [
        {"reply": {"content": [text("slow answer")], "stop_reason": "end_turn"}, "pace": {"first_byte_delay_ms": 300}},
    ]}))
    .await;
    let mut hc = Raw::start(
        &s,
        &["--session-id", "5b6c1e1e-0000-4000-8000-000000000001"],
    );
    hc.user("answer slowly").await;
    drop(hc.stdin.take());
    let result = hc.result().await;
    assert_eq!(result["result"], "slow answer");
    assert_eq!(result["session_id"], "5b6c1e1e-0000-4000-8000-000000000001");
    let (code, stderr) = hc.close().await;
    assert_eq!(code, 0, "{stderr}");
    // the program's name for the session is taken by --resume and hc trace
    let trace = s
        .out(&["trace", "5b6c1e1e-0000-4000-8000-000000000001"])
        .await;
    assert!(trace.stdout.contains("answer slowly"), "{}", trace.stdout);
}

#[tokio::test(flavor = "multi_thread")]
async fn print_mode_flags_with_no_command_are_hc_run_and_each_is_honoured_or_said() {
    let s = Setup::new(json!({"turns": [reply(json!([text("yes")]), "end_turn")]})).await;
    let ran = s
        .out_with(
            &[("CLAUDE_CODE_ENTRYPOINT", "sdk-py")],
            &[
                "-p",
                "--output-format",
                "json",
                "--system-prompt",
                "You are terse.",
                "--append-system-prompt",
                "Say yes.",
                "--tools",
                "Read,Grep",
                "--disallowedTools",
                "Grep",
                "--allowedTools",
                "Bash(echo:*),Read",
                "--max-thinking-tokens",
                "2048",
                "--tool-names",
                "claude",
                "--permission-mode",
                "acceptEdits",
                "--some-future-flag",
                "hi",
            ],
        )
        .await;
    assert_eq!(ran.code, 0, "{ran:#?}");
    let result: Value = serde_json::from_str(&ran.stdout).unwrap();
    assert_eq!(result["result"], "yes");
    assert!(
        ran.stderr.contains("--some-future-flag is not supported"),
        "{}",
        ran.stderr
    );
    let sent: Value = serde_json::from_slice(&s.sent()[0]).unwrap();
    let system = sent["system"].to_string();
    assert!(
        sent["system"][0]["text"]
            .as_str()
            .unwrap()
            .starts_with("You are terse.")
    );
    assert!(system.contains("Say yes."), "{system}");
    let tools: Vec<&str> = sent["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert!(
        tools.contains(&"Read") && !tools.contains(&"Grep") && !tools.contains(&"Bash"),
        "{tools:?}"
    );
    assert_eq!(sent["thinking"]["budget_tokens"], 2048);
    // a bad value is a usage error
    let bad = s.out(&["-p", "--tool-names", "klingon", "hi"]).await;
    assert_eq!(bad.code, 2);
    assert!(
        bad.stderr.contains("claude or hermitcrab"),
        "{}",
        bad.stderr
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_plan_goes_to_the_program_as_exit_plan_mode_and_its_answer_decides() {
    let s = Setup::new(json!({"turns": [
        reply(json!([call("p1", "ExitPlanMode", json!({"plan": "Write p.txt."}))]), "tool_use"),
        reply(json!([call("p2", "ExitPlanMode", json!({"plan": "Write p.txt, then stop."}))]), "tool_use"),
        reply(json!([text("approved and done")]), "end_turn"),
    ]}))
    .await;
    let mut hc = Raw::start(
        &s,
        &[
            "--permission-prompt-tool",
            "stdio",
            "--permission-mode",
            "plan",
        ],
    );
    hc.user("plan it").await;
    let answer = |id: &Value, response: Value| {
        json!({"type": "control_response", "response": {"subtype": "success", "request_id": id, "response": response}})
            .to_string()
    };
    let asked = hc
        .until("can_use_tool", |l| l["type"] == "control_request")
        .await;
    assert_eq!(asked["request"]["tool_name"], "ExitPlanMode", "{asked}");
    assert_eq!(asked["request"]["input"]["plan"], "Write p.txt.");
    hc.send(&answer(
        &asked["request_id"],
        json!({"behavior": "deny", "message": "say when it stops"}),
    ))
    .await;
    let again = hc
        .until("can_use_tool", |l| l["type"] == "control_request")
        .await;
    assert_eq!(again["request"]["input"]["plan"], "Write p.txt, then stop.");
    hc.send(&answer(
        &again["request_id"],
        json!({"behavior": "allow", "updatedInput": again["request"]["input"]}),
    ))
    .await;
    let result = hc.result().await;
    assert_eq!(result["subtype"], "success", "{result}");
    let session = s.sessions().pop().unwrap();
    let answers: Vec<Value> = s
        .of_type(&session, "user-answer")
        .iter()
        .map(|a| a["text"].clone())
        .collect();
    assert_eq!(answers, [json!("say when it stops"), json!("default")]);
    let second: Value = serde_json::from_slice(&s.sent()[1]).unwrap();
    assert!(second.to_string().contains("say when it stops"));
    hc.close().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn an_sdk_programs_answer_is_judged_like_any_call() {
    let s = Setup::new(json!({"turns": [
        reply(json!([call("t1", "Bash", json!({"command": "echo hi"}))]), "tool_use"),
        reply(json!([text("done")]), "end_turn"),
    ]}))
    .await;
    s.file("important", "keep me");
    let ran = program(&s, "swapped_input").await;
    ran.result();
    assert_eq!(
        std::fs::read_to_string(s.root.join("important")).unwrap(),
        "keep me",
        "{:#?}",
        ran.lines
    );
    let session = s.sessions().pop().unwrap();
    let result = s.of_type(&session, "tool-result")[0].clone();
    assert_eq!(result["denied"], true, "{result}");
    let text = result["text"].as_str().unwrap();
    assert!(
        text.contains("shell(rm:*)") || text.contains("Bash(rm:*)"),
        "{text}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn rewind_files_puts_back_what_a_shell_changed_since_a_user_message() {
    let s = Setup::new(json!({"turns": [
        reply(json!([call("w1", "Write", json!({"file_path": "a.txt", "content": "one\n"}))]), "tool_use"),
        reply(json!([text("wrote")]), "end_turn"),
        reply(json!([call("b2", "Bash", json!({"command": "echo two > a.txt && echo new > b.txt"}))]), "tool_use"),
        reply(json!([text("changed")]), "end_turn"),
    ]}))
    .await;
    let ran = program(&s, "rewind").await;
    let ids = ran.note("ids");
    assert_eq!(ids.as_array().unwrap().len(), 2, "{:#?}", ran.lines);
    assert_eq!(
        ran.note("unknown"),
        "No file checkpoint found for this message."
    );
    assert_eq!(ran.note("rewound"), "one\n", "{}", ran.stderr);
    assert_eq!(ran.note("b_exists"), false);
    // the uuids echoed are the prompts' own, in the record
    let session = session_of(&s, ran.result());
    let prompts = s.of_type(&session, "prompt");
    assert_eq!(prompts[1]["uuid"], ids[1]);
}

#[tokio::test(flavor = "multi_thread")]
async fn an_unknown_flag_is_a_usage_error_unless_an_sdk_drives_hc() {
    let s = Setup::new(json!({"turns": [reply(json!([text("yes")]), "end_turn")]})).await;
    let typo = s.out(&["run", "hello", "--bogus-flag"]).await;
    assert_eq!(typo.code, 2, "{typo:#?}");
    assert!(typo.stderr.contains("--bogus-flag"), "{typo:#?}");
    let near = s.out(&["-p", "--permision-mode", "bypass", "hello"]).await;
    assert_eq!(near.code, 2, "{near:#?}");
    assert!(
        near.stderr.contains("--permission-mode"),
        "the nearest flag: {near:#?}"
    );
    assert!(s.sent().is_empty(), "no request reached the model");
    // an SDK's newer flag is said and left out
    let driven = s
        .out_with(
            &[("CLAUDE_CODE_ENTRYPOINT", "sdk-ts")],
            &["-p", "--bogus-flag", "hello"],
        )
        .await;
    assert_eq!(driven.code, 0, "{driven:#?}");
    assert!(
        driven.stderr.contains("--bogus-flag is not supported"),
        "{driven:#?}"
    );
}
