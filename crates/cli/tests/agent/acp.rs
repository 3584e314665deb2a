//! `hc acp` as an editor's agent: driven by the official ACP client
//! (`@agentclientprotocol/sdk` from npm, pinned, installed once per build
//! tree under `target/`), and by raw JSON-RPC lines for the faults.

use crate::common::*;
use serde_json::{Value, json};
use std::path::PathBuf;
use std::sync::OnceLock;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout};

/// The pinned client (and the zod it validates with).
const CLIENT: [&str; 2] = ["@agentclientprotocol/sdk@2.4.0", "zod@4"];

/// Where the client is installed.
fn client_dir() -> PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    let marker = "node_modules/@agentclientprotocol/sdk/package.json";
    (DIR.get_or_init(|| npm_installed("acp-client", &CLIENT, marker))).clone()
}

/// The official Rust client (`agent-client-protocol`, pinned, its own
/// workspace and lock file) built once per build tree, in a target
/// directory of its own: beside hc's crates it would turn on serde_json's
/// `preserve_order` for all of them.
fn rust_client() -> PathBuf {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        let manifest =
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/acp_rust_client/Cargo.toml");
        let target = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("acp-rust-client-target");
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let out = std::process::Command::new(cargo)
            .args(["build", "--locked", "--quiet", "--manifest-path"])
            .arg(&manifest)
            .arg("--target-dir")
            .arg(&target)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "building the Rust ACP client: {out:?}"
        );
        target.join("debug/acp-rust-client")
    })
    .clone()
}

/// Runs the client's scenario `name` against `hc acp` in the project;
/// answers what it printed.
pub(crate) async fn editor(s: &Setup, name: &str) -> Value {
    let dir = client_dir();
    let script = dir.join("acp_client.mjs");
    let fixture =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/agent/fixtures/acp_client.mjs");
    std::fs::copy(fixture, &script).unwrap();
    let mut command = tokio::process::Command::new("node");
    command.arg(&script).arg(name).arg(HC);
    let (lines, stderr) = crate::sdk::drive(s, command).await;
    lines
        .into_iter()
        .last()
        .unwrap_or_else(|| panic!("the client printed nothing: {stderr}"))
}

/// The last agent run of `session` (its final body).
fn agent_run(s: &Setup, session: &str) -> Value {
    let runs = s.processes(session);
    (runs.into_iter().rev())
        .find(|p| p["program"] == "program/agent")
        .expect("an agent run")
}

/// The updates of kind `kind`.
fn updates<'a>(all: &'a Value, kind: &str) -> Vec<&'a Value> {
    (all.as_array().unwrap().iter())
        .filter(|u| u["sessionUpdate"] == kind)
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn an_editor_streams_a_turn_that_reads_edits_and_runs_a_command_with_permission() {
    let s = Setup::new(json!({"turns": [
        reply(json!([text("Reading it first."), call("t0", "todo", json!({"items": [{"content": "fix a.txt", "status": "in_progress"}]})), call("r1", "read", json!({"file_path": "a.txt"}))]), "tool_use"),
        reply(json!([call("e1", "edit", json!({"file_path": "a.txt", "old_string": "one", "new_string": "two"}))]), "tool_use"),
        reply(json!([call("x1", "shell", json!({"command": "echo ran-it; sleep 0.5; echo done-it"}))]), "tool_use"),
        reply(json!([text("Fixed.")]), "end_turn"),
    ]}))
    .await;
    s.file("a.txt", "one\n");
    let out = editor(&s, "work").await;
    assert_eq!(out["init"]["protocolVersion"], 1, "{out}");
    assert_eq!(out["init"]["agentCapabilities"]["loadSession"], true);
    let modes: Vec<&str> = (out["made"]["modes"]["availableModes"].as_array().unwrap())
        .iter()
        .map(|m| m["id"].as_str().unwrap())
        .collect();
    assert!(
        modes.contains(&"default") && modes.contains(&"plan"),
        "{modes:?}"
    );
    assert_eq!(out["made"]["configOptions"][0]["category"], "model");
    assert_eq!(out["first"]["stopReason"], "end_turn", "{out}");
    let all = &out["updates"];
    let said: String = (updates(all, "agent_message_chunk").iter())
        .map(|u| u["content"]["text"].as_str().unwrap())
        .collect();
    assert_eq!(said, "Reading it first.Fixed.");
    let plan = updates(all, "plan");
    assert_eq!(plan[0]["entries"][0]["content"], "fix a.txt", "{all}");
    assert_eq!(plan[0]["entries"][0]["status"], "in_progress");
    let calls: Vec<&Value> = (updates(all, "tool_call").into_iter())
        .filter(|c| c["toolCallId"] != "t0")
        .collect();
    let kinds: Vec<&str> = calls.iter().map(|c| c["kind"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["read", "edit", "execute"], "{all}");
    let path = s.root.join("a.txt").display().to_string();
    assert_eq!(calls[0]["locations"][0]["path"], path);
    assert_eq!(
        calls[1]["content"][0],
        json!({"type": "diff", "path": path, "oldText": "one", "newText": "two"})
    );
    let ends = updates(all, "tool_call_update");
    // the shell's output as it came, before its end
    let live = (ends.iter())
        .find(|u| u["toolCallId"] == "x1" && u.get("status").is_none())
        .unwrap_or_else(|| panic!("no output before the shell's end: {all}"));
    assert!(
        live["content"][0]["content"]["text"]
            .as_str()
            .unwrap()
            .contains("ran-it")
    );
    let shell_end = (ends.iter())
        .find(|u| u["toolCallId"] == "x1" && u["status"] == "completed")
        .unwrap();
    assert_eq!(shell_end["status"], "completed");
    assert!(
        shell_end["content"][0]["content"]["text"]
            .as_str()
            .unwrap()
            .contains("ran-it"),
        "{shell_end}"
    );
    // the edit and the command asked, through the editor, with the four options
    let asked = out["permissions"].as_array().unwrap();
    assert_eq!(asked.len(), 2, "{asked:?}");
    let options: Vec<&str> = (asked[0]["options"].as_array().unwrap().iter())
        .map(|o| o["kind"].as_str().unwrap())
        .collect();
    assert_eq!(
        options,
        ["allow_once", "allow_always", "reject_once", "reject_always"]
    );
    assert_eq!(asked[1]["toolCall"]["toolCallId"], "x1");
    assert_eq!(
        std::fs::read_to_string(s.root.join("a.txt")).unwrap(),
        "two\n"
    );
    // recorded like every session: the editor's decisions, the requests
    let session = out["made"]["sessionId"].as_str().unwrap();
    assert_eq!(s.sessions(), [session]);
    let decisions = s.of_type(session, "permission-decision");
    assert_eq!(decisions.len(), 2);
    assert!(
        decisions
            .iter()
            .all(|d| d["decision"] == "allow" && d["by"] == "the editor")
    );
    for (n, sent) in s.sent().iter().enumerate() {
        assert_eq!(&s.rebuilt(session, n + 1).await, sent, "request {}", n + 1);
    }
    // loaded again: the history told as updates
    let replayed = &out["replayed"];
    assert_eq!(
        updates(replayed, "user_message_chunk")[0]["content"]["text"],
        "fix a.txt"
    );
    assert_eq!(updates(replayed, "tool_call").len(), 4, "{replayed}");
    assert_eq!(updates(replayed, "plan").len(), 1, "{replayed}");
    for shown in [&["sessions", "--json"][..], &["agents", "--json"]] {
        let listed = s.out(shown).await;
        assert!(
            listed.stdout.contains(session),
            "{shown:?}: {}",
            listed.stdout
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn the_agent_reads_and_edits_the_editors_unsaved_buffer_when_it_offers_its_files() {
    let s = Setup::new(json!({"turns": [
        reply(json!([call("r1", "mcp__editor__read", json!({"file_path": "a.txt"})), call("g1", "glob", json!({"pattern": "*.txt"})), call("r2", "mcp__editor__read", json!({"file_path": ".env"}))]), "tool_use"),
        reply(json!([call("e1", "mcp__editor__edit", json!({"file_path": "a.txt", "old_string": "unsaved", "new_string": "edited"}))]), "tool_use"),
        reply(json!([text("Done.")]), "end_turn"),
    ]}))
    .await;
    s.file("a.txt", "saved on disk\n");
    let out = editor(&s, "buffers").await;
    assert_eq!(out["first"]["stopReason"], "end_turn", "{out}");
    // the editor's tools stand in for the built-ins
    let first: Value = serde_json::from_slice(&s.sent()[0]).unwrap();
    let offered: Vec<&str> = (first["tools"].as_array().unwrap().iter())
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert!(offered.contains(&"mcp__editor__read"), "{offered:?}");
    assert!(
        !offered.contains(&"read") && !offered.contains(&"edit"),
        "{offered:?}"
    );
    // the read saw the buffer, not the disk, and is recorded as the editor's
    let session = out["made"]["sessionId"].as_str().unwrap();
    let results = s.of_type(session, "tool-result");
    let read = results.iter().find(|r| r["tool_use_id"] == "r1").unwrap();
    assert!(
        read["text"]
            .as_str()
            .unwrap()
            .contains("unsaved buffer text"),
        "{read}"
    );
    assert!(
        read["program"].as_str().unwrap().contains("editor"),
        "{read}"
    );
    // the other tools are untouched; a file of secrets is not served
    let glob = results.iter().find(|r| r["tool_use_id"] == "g1").unwrap();
    assert_eq!(glob["is_error"], false, "{glob}");
    assert!(glob["text"].as_str().unwrap().contains("a.txt"), "{glob}");
    let secret = results.iter().find(|r| r["tool_use_id"] == "r2").unwrap();
    assert_eq!(secret["is_error"], true, "{secret}");
    assert!(
        secret["text"].as_str().unwrap().contains("secrets"),
        "{secret}"
    );
    // the edit went to the editor (asked first), and the disk is untouched
    let written = out["written"].as_array().unwrap();
    assert_eq!(written.len(), 1, "{written:?}");
    assert_eq!(written[0]["content"], "edited buffer text\n");
    assert_eq!(
        written[0]["path"],
        s.root.join("a.txt").display().to_string()
    );
    assert_eq!(out["permissions"].as_array().unwrap().len(), 1);
    assert_eq!(
        std::fs::read_to_string(s.root.join("a.txt")).unwrap(),
        "saved on disk\n"
    );
    let calls = updates(&out["updates"], "tool_call");
    let edit = calls.iter().find(|c| c["toolCallId"] == "e1").unwrap();
    assert_eq!(edit["kind"], "edit", "{calls:?}");
    assert_eq!(edit["content"][0]["type"], "diff");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_official_rust_client_holds_a_session_with_hc() {
    let s = Setup::new(json!({"turns": [reply(json!([text("hello from hc")]), "end_turn")]})).await;
    let mut command = tokio::process::Command::new(rust_client());
    command.arg(HC).arg(&s.root);
    let (lines, stderr) = crate::sdk::drive(&s, command).await;
    let out = lines
        .last()
        .unwrap_or_else(|| panic!("nothing printed: {stderr}"));
    assert_eq!(out["protocolVersion"], 1, "{out}");
    assert_eq!(out["stopReason"], "end_turn", "{out}");
    assert_eq!(out["said"], "hello from hc", "{out}");
    let session = out["sessionId"].as_str().unwrap();
    assert_eq!(s.sessions(), [session]);
    assert_eq!(s.of_type(session, "prompt")[0]["text"], "say hello");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_cancel_withdraws_the_pending_permission_and_ends_the_turn_cancelled() {
    let s = Setup::new(json!({"turns": [
        reply(json!([call("x1", "shell", json!({"command": "rm -rf build"}))]), "tool_use"),
        reply(json!([text("not reached")]), "end_turn"),
    ]}))
    .await;
    let out = editor(&s, "cancel").await;
    assert_eq!(out["first"]["stopReason"], "cancelled", "{out}");
    let session = out["made"]["sessionId"].as_str().unwrap();
    let interrupts = s.of_type(session, "interrupt");
    assert_eq!(
        interrupts.len(),
        1,
        "the cancel is recorded as an interrupt"
    );
    let decisions = s.of_type(session, "permission-decision");
    assert_eq!(decisions[0]["decision"], "deny", "{decisions:?}");
    // withdrawn by the cancel, not answered by the editor's late word
    let said = decisions[0]["message"].as_str().unwrap();
    assert!(said.contains("withdrawn"), "{said}");
    let run = agent_run(&s, session);
    assert_eq!(run["stop_reason"], "interrupted", "{run}");
}

/// `hc acp` driven line by line.
struct Raw {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Lines<BufReader<ChildStdout>>,
}

impl Raw {
    fn start(s: &Setup) -> Raw {
        let mut command = s.hc(&["acp"]);
        command
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .kill_on_drop(true);
        Raw::of(command)
    }

    fn of(mut command: tokio::process::Command) -> Raw {
        let mut child = command.spawn().unwrap();
        let stdin = child.stdin.take();
        let lines = BufReader::new(child.stdout.take().unwrap()).lines();
        Raw {
            child,
            stdin,
            lines,
        }
    }

    async fn send(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().unwrap();
        stdin.write_all(line.as_bytes()).await.unwrap();
        stdin.write_all(b"\n").await.unwrap();
    }

    async fn request(&mut self, id: u64, method: &str, params: Value) {
        let line = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        self.send(&line.to_string()).await;
    }

    /// The next line that `pick` takes (others are passed over).
    async fn until(&mut self, mut pick: impl FnMut(&Value) -> bool) -> Value {
        loop {
            let next = tokio::time::timeout(Duration::from_secs(60), self.lines.next_line());
            let line = next.await.expect("no line within 60 s").unwrap();
            let line = line.expect("hc acp closed its output");
            let value: Value = serde_json::from_str(&line).unwrap();
            if pick(&value) {
                return value;
            }
        }
    }

    async fn answer(&mut self, id: u64) -> Value {
        self.until(|v| v["id"] == id && v.get("method").is_none())
            .await
    }

    async fn session(&mut self, s: &Setup) -> String {
        self.request(1, "initialize", json!({"protocolVersion": 1}))
            .await;
        self.answer(1).await;
        let cwd = s.root.display().to_string();
        self.request(2, "session/new", json!({"cwd": cwd, "mcpServers": []}))
            .await;
        let made = self.answer(2).await;
        made["result"]["sessionId"].as_str().unwrap().to_owned()
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn bad_lines_and_unknown_requests_are_answered_and_the_agent_lives_on() {
    let s = Setup::new(json!({"turns": [
        reply(json!([call("x1", "shell", json!({"command": "rm -rf build"}))]), "tool_use"),
        reply(json!([text("stopped")]), "end_turn"),
    ]}))
    .await;
    let mut acp = Raw::start(&s);
    acp.send("{this is not json").await;
    let parse = acp.until(|v| v.get("error").is_some()).await;
    assert_eq!(parse["error"]["code"], -32700, "{parse}");
    acp.request(7, "session/fly", json!({})).await;
    assert_eq!(acp.answer(7).await["error"]["code"], -32601);
    let session = acp.session(&s).await;
    let cwd = s.root.display().to_string();
    acp.request(
        3,
        "session/load",
        json!({"sessionId": "s_nope", "cwd": cwd, "mcpServers": []}),
    )
    .await;
    let gone = acp.answer(3).await;
    assert_eq!(gone["error"]["code"], -32002, "{gone}");
    // a turn that waits on a permission; a second prompt meanwhile is refused
    let prompt = json!({"sessionId": session, "prompt": [{"type": "text", "text": "clean"}]});
    acp.request(4, "session/prompt", prompt.clone()).await;
    let asked = acp
        .until(|v| v["method"] == "session/request_permission")
        .await;
    acp.request(5, "session/prompt", prompt).await;
    let refused = acp.answer(5).await;
    let said = refused["error"]["message"].as_str().unwrap();
    assert!(said.contains("a turn is running"), "{refused}");
    // the editor goes away mid-turn: the run is interrupted and recorded
    drop(acp.stdin.take());
    let status = tokio::time::timeout(Duration::from_secs(60), acp.child.wait())
        .await
        .expect("hc acp did not end within 60 s after its input closed")
        .unwrap();
    assert!(status.success(), "{status:?}");
    assert!(asked["params"]["toolCall"]["toolCallId"] == "x1");
    let run = agent_run(&s, &session);
    assert_eq!(run["stop_reason"], "interrupted", "{run}");
    let decisions = s.of_type(&session, "permission-decision");
    assert_eq!(decisions[0]["decision"], "deny", "{decisions:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_editors_mcp_servers_serve_its_sessions_and_a_reserved_name_is_refused() {
    let (python, server) = crate::mcp::python_server();
    let s = Setup::new(json!({"turns": [
        reply(json!([call("t1", "mcp__py__greet", json!({"name": "crab"}))]), "tool_use"),
        reply(json!([text("greeted")]), "end_turn"),
    ]}))
    .await;
    let mut command = s.hc(&["acp", "--allow", "mcp__py"]);
    command
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true);
    let mut acp = Raw::of(command);
    acp.request(1, "initialize", json!({"protocolVersion": 1}))
        .await;
    acp.answer(1).await;
    let cwd = s.root.display().to_string();
    let taken = json!([{"name": "editor", "command": "true", "args": [], "env": []}]);
    acp.request(2, "session/new", json!({"cwd": cwd, "mcpServers": taken}))
        .await;
    let refused = acp.answer(2).await;
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    let py = json!([{"name": "py", "command": python, "args": [server],
        "env": [{"name": "FIXTURE_TOKEN", "value": "from-the-editor"}]}]);
    acp.request(3, "session/new", json!({"cwd": cwd, "mcpServers": py}))
        .await;
    let made = acp.answer(3).await;
    let session = made["result"]["sessionId"].as_str().unwrap().to_owned();
    let prompt = json!({"sessionId": session, "prompt": [{"type": "text", "text": "greet"}]});
    acp.request(4, "session/prompt", prompt).await;
    assert_eq!(acp.answer(4).await["result"]["stopReason"], "end_turn");
    drop(acp.stdin.take());
    acp.child.wait().await.unwrap();
    let results = s.of_type(&session, "tool-result");
    assert_eq!(
        results[0]["text"], "hello crab; token=from-the-editor",
        "{results:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn modes_and_the_model_are_set_per_session_and_reach_the_next_run() {
    let s = Setup::new(json!({"turns": [reply(json!([text("planned")]), "end_turn")]})).await;
    let mut acp = Raw::start(&s);
    let session = acp.session(&s).await;
    let set = json!({"sessionId": session, "modeId": "plan"});
    acp.request(3, "session/set_mode", set).await;
    assert_eq!(acp.answer(3).await["result"], json!({}));
    let bad = json!({"sessionId": session, "modeId": "yolo"});
    acp.request(4, "session/set_mode", bad).await;
    let refused = acp.answer(4).await;
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    // (an alias names today's model, as in Claude Code's picker)
    let model = json!({"sessionId": session, "configId": "model", "value": "haiku"});
    acp.request(5, "session/set_config_option", model).await;
    let options = acp.answer(5).await;
    assert_eq!(
        options["result"]["configOptions"][0]["currentValue"],
        "claude-haiku-5-5"
    );
    let prompt = json!({"sessionId": session, "prompt": [{"type": "text", "text": "plan it"}]});
    acp.request(6, "session/prompt", prompt).await;
    assert_eq!(acp.answer(6).await["result"]["stopReason"], "end_turn");
    drop(acp.stdin.take());
    acp.child.wait().await.unwrap();
    let sent: Value = serde_json::from_slice(&s.sent()[0]).unwrap();
    assert_eq!(sent["model"], "claude-haiku-5-5");
    let config = instances(&s, "agent-config")[0].body_value();
    assert_eq!(config["permission_mode"], "plan", "{config}");
}
