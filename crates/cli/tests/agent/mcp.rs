//! MCP servers nobody here wrote, installed from the registries on first
//! use (`@modelcontextprotocol/server-everything` from npm, pinned): their
//! tools are programs, each call a recorded, served run, the request
//! rebuilt byte for byte; a server that cannot start is a status line.

use crate::common::*;
use serde_json::{Value, json};
use std::path::PathBuf;
use std::sync::OnceLock;

/// The pinned server every MCP test talks to.
const EVERYTHING: &str = "@modelcontextprotocol/server-everything@2026.8.31";

/// The installed server's entry point (installed once per build tree,
/// under `target/`, by npm: the registry is the only network used).
pub fn everything() -> PathBuf {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    PATH.get_or_init(|| {
        let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("mcp-everything");
        let entry = dir.join("node_modules/@modelcontextprotocol/server-everything/dist/index.js");
        if !entry.exists() {
            std::fs::create_dir_all(&dir).unwrap();
            let out = std::process::Command::new("npm")
                .args(["install", "--no-audit", "--no-fund", "--prefix"])
                .arg(&dir)
                .arg(EVERYTHING)
                .output()
                .expect("npm is needed for the MCP tests (Debian: apt-get install npm)");
            assert!(out.status.success(), "npm install failed: {out:?}");
        }
        entry
    })
    .clone()
}

/// A `.mcp.json` with the everything server over stdio, as `NAME`.
fn mcp_json(name: &str) -> String {
    json!({"mcpServers": {name: {"command": "node", "args": [everything(), "stdio"]}}}).to_string()
}

fn result_text(s: &Setup, session: &str, n: usize) -> Value {
    s.of_type(session, "tool-result")[n].clone()
}

/// Runs `program` as a host, its input `input`; answers the process.
async fn host_run(client: &protocol::Client, program: &str, input: Value) -> String {
    use protocol::{ChunkDecl, NewPlacement, RunArgs};
    let args = RunArgs {
        chunks: vec![
            ChunkDecl::generated()
                .body(input)
                .on(NewPlacement::instance(format!("input/{program}"))),
        ],
        ..RunArgs::default()
    };
    client.run(program, args).await.unwrap()
}

/// The output of run `p`, once it has ended.
async fn output_of(client: &protocol::Client, p: &str) -> Value {
    let done = client.await_processes(&[p]).await.unwrap();
    done[p]
        .chunks
        .iter()
        .find(|c| c.is_on("engine/output", substrate::PlacementType::Instance))
        .unwrap()
        .body_value()
}

#[tokio::test(flavor = "multi_thread")]
async fn an_mcp_tool_is_a_served_run_and_the_request_is_rebuilt_exactly() {
    let s = Setup::new(json!({"turns": [
        reply(json!([call("t1", "mcp__everything__echo", json!({"message": "hi there"}))]), "tool_use"),
        reply(json!([call("t2", "mcp__everything__get-sum", json!({"a": 2, "b": 3}))]), "tool_use"),
        reply(json!([call("t3", "mcp__everything__get-tiny-image", json!({}))]), "tool_use"),
        reply(json!([text("done")]), "end_turn"),
    ]}))
    .await;
    s.file(".mcp.json", &mcp_json("everything"));
    s.trust();
    let ran = s.run(&["--allow", "mcp__everything", "say hi"]).await;
    assert_eq!(ran.code, 0, "{ran:#?}");
    let session = s.sessions().pop().unwrap();
    let echo = result_text(&s, &session, 0);
    assert_eq!(echo["is_error"], false, "{echo}");
    assert!(
        echo["text"].as_str().unwrap().contains("hi there"),
        "{echo}"
    );
    let sum = result_text(&s, &session, 1);
    assert!(sum["text"].as_str().unwrap().contains('5'), "{sum}");
    // the tools were offered after the built-ins, with the server's schema
    let first: Value = serde_json::from_slice(&s.sent()[0]).unwrap();
    let names: Vec<&str> = first["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["name"].as_str())
        .filter(|n| {
            ![
                "ask_user",
                "scope",
                "todo",
                "memory",
                "mcp_list_resources",
                "mcp_read_resource",
            ]
            .contains(n)
        })
        .collect();
    let at = names
        .iter()
        .position(|n| *n == "mcp__everything__echo")
        .unwrap();
    assert!(
        names[at..].iter().all(|n| n.starts_with("mcp__")),
        "{names:?}"
    );
    assert!(
        names[..at].iter().all(|n| !n.starts_with("mcp__")),
        "{names:?}"
    );
    // each call a run of its program, served by the server's service
    let runs = processes_of(&s, "mcp__everything__echo");
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0]["status"], "completed");
    assert_eq!(runs[0]["served_by"], "program/mcp/everything");
    // an image is passed to the model as an image
    let last: Value = serde_json::from_slice(&s.sent()[3]).unwrap();
    let messages = last["messages"].as_array().unwrap();
    let content = &messages[messages.len() - 1]["content"][0]["content"];
    let kinds: Vec<&str> = content
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|b| b["type"].as_str())
        .collect();
    assert_eq!(kinds, vec!["text", "image"], "{content}");
    assert_eq!(content[1]["source"]["media_type"], "image/png");
    for n in 1..=4 {
        assert_eq!(s.rebuilt(&session, n).await, s.sent()[n - 1], "request {n}");
    }
    let log = std::fs::read_to_string(s.root.join(".hermitcrab/logs/mcp-everything.log"));
    assert!(log.is_ok(), "the server's stderr has a log file");
}

#[tokio::test(flavor = "multi_thread")]
async fn an_untrusted_projects_servers_do_not_start_and_a_failing_server_is_a_status_line() {
    let s = Setup::new(json!({"turns": [
        reply(json!([text("ok")]), "end_turn"),
        reply(json!([text("ok")]), "end_turn"),
        reply(json!([text("ok")]), "end_turn"),
    ]}))
    .await;
    s.file(".mcp.json", &mcp_json("everything"));
    let ran = s.run(&["hello"]).await;
    assert_eq!(ran.code, 0, "{ran:#?}");
    assert!(
        ran.stderr.contains("MCP server `everything`"),
        "{}",
        ran.stderr
    );
    let registered = s
        .db()
        .read(|snap| snap.exists("program/mcp/everything"))
        .unwrap();
    assert!(
        !registered,
        "an untrusted project's server is not even registered"
    );
    // a server whose command does not exist, given on the command line
    let broken = json!({"mcpServers": {"broken": {"command": "no-such-mcp-server-here"}}});
    let ran = s
        .run(&[
            "--mcp-config",
            &broken.to_string(),
            "--strict-mcp-config",
            "hello",
        ])
        .await;
    assert_eq!(ran.code, 0, "{ran:#?}");
    assert!(
        ran.stderr.contains("MCP server `broken` failed")
            && ran.stderr.contains("no-such-mcp-server-here"),
        "{}",
        ran.stderr
    );
    let session = s.sessions().pop().unwrap();
    let context = s.of_type(&session, "context").pop().unwrap();
    assert_eq!(context["mcp_servers"][0]["status"], "failed", "{context}");
    // stream-json's init line lists the servers once started, as Claude
    // Code's does (it waits for them)
    let (python, server) = python_server();
    let off = json!({"mcpServers": {"off": {"command": "x", "enabled": false}, "broken": {"command": "y"},
        "py": {"command": python, "args": [server], "startup_timeout_ms": 30000}}});
    let ran = s
        .run(&[
            "--mcp-config",
            &off.to_string(),
            "--strict-mcp-config",
            "--output-format",
            "stream-json",
            "hi",
        ])
        .await;
    let init: Value = serde_json::from_str(ran.stdout.lines().next().unwrap()).unwrap();
    assert_eq!(
        init["mcp_servers"],
        json!([{"name": "broken", "status": "failed"}, {"name": "off", "status": "disabled"},
            {"name": "py", "status": "connected"}]),
        "{init}"
    );
}

/// The pinned Python SDK the second server is written on.
const PYTHON_MCP: &str = "mcp==2.3.0";

/// A Python with the MCP SDK (a venv under `target/`, made once by pip from
/// PyPI), and the test server written on it.
pub fn python_server() -> (PathBuf, PathBuf) {
    static PYTHON: OnceLock<PathBuf> = OnceLock::new();
    let python = PYTHON
        .get_or_init(|| {
            let venv = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("mcp-python");
            testkit::python_venv(&venv, &[PYTHON_MCP]).unwrap()
        })
        .clone();
    let server =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/agent/fixtures/mcp_server.py");
    (python, server)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_python_server_gets_its_secret_is_told_of_a_cancel_and_is_restarted_after_a_crash() {
    let (python, server) = python_server();
    let s = Setup::new(json!({"turns": [
        reply(json!([call("t1", "mcp__py__greet", json!({"name": "crab"}))]), "tool_use"),
        reply(json!([call("t2", "mcp__py__count", json!({"n": 3}))]), "tool_use"),
        reply(json!([call("t3", "mcp__py__wait_forever", json!({}))]), "tool_use"),
        reply(json!([call("t4", "mcp__py__crash", json!({}))]), "tool_use"),
        reply(json!([call("t5", "mcp__py__greet", json!({"name": "again"}))]), "tool_use"),
        reply(json!([text("done")]), "end_turn"),
    ]}))
    .await;
    let marker = s.root.join("out/marker");
    std::fs::create_dir_all(marker.parent().unwrap()).unwrap();
    let config = json!({"mcpServers": {"py": {
        "command": python, "args": [server],
        "env": {"FIXTURE_TOKEN": "${HC_TEST_TOKEN}", "FIXTURE_MARKER": marker},
        "tool_timeout_ms": 2000,
        "capabilities": {"filesystem": {"read": "all", "write": [s.root.join("out")]}, "network": false}
    }}});
    let mut hc = s.hc(&[
        "run",
        "--allow",
        "mcp__py",
        "--mcp-config",
        &config.to_string(),
        "go",
    ]);
    hc.env("HC_TEST_TOKEN", "s3cret-t0ken-42");
    let out = hc.output().await.unwrap();
    assert!(out.status.success(), "{out:?}");
    let session = s.sessions().pop().unwrap();
    let results = s.of_type(&session, "tool-result");
    let text = |n: usize| results[n]["text"].as_str().unwrap().to_owned();
    assert_eq!(text(0), "hello crab; token=s3cret-t0ken-42");
    assert_eq!(text(1), "counted to 3");
    assert_eq!(results[2]["is_error"], true, "{}", text(2));
    assert!(text(2).contains("timeout"), "{}", text(2));
    wait_for("the server to be told of the cancel", || {
        std::fs::read_to_string(&marker).is_ok_and(|m| m == "cancelled")
    })
    .await;
    assert_eq!(results[3]["is_error"], true);
    assert!(text(3).contains("closed the connection"), "{}", text(3));
    assert_eq!(text(4), "hello again; token=s3cret-t0ken-42", "reconnected");
    // the secret reached the server through its environment, and the
    // substrate holds it only where the tool's own answer said it
    let service = s
        .db()
        .read(|snap| snap.body("program/mcp/py"))
        .unwrap()
        .unwrap();
    assert_eq!(
        service["mcp"]["env_keys"],
        json!(["FIXTURE_MARKER", "FIXTURE_TOKEN"])
    );
    assert!(!service.to_string().contains("s3cret"));
    for p in processes_of(&s, "mcp/py") {
        assert!(!p.to_string().contains("s3cret"), "{p}");
    }
    let log = std::fs::read_to_string(s.root.join(".hermitcrab/logs/mcp-py.log")).unwrap();
    assert!(log.contains("crashing on purpose"), "{log}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_servers_progress_reaches_whoever_watches_the_run() {
    use protocol::Event;
    let (python, server) = python_server();
    let s = Setup::new(json!({"turns": [reply(json!([text("unused")]), "end_turn")]})).await;
    let config = json!({"mcpServers": {"py": {"command": python, "args": [server]}}});
    s.file(".mcp.json", &config.to_string());
    s.trust();
    let (_child, client, mut events) = s.serve();
    client.service("mcp/py", Some(30_000)).await.unwrap();
    client
        .subscribe(&["program/mcp__py__count"], false)
        .await
        .unwrap();
    let p = host_run(&client, "mcp__py__count", json!({"n": 4})).await;
    let mut steps = Vec::new();
    while steps.len() < 4 {
        let event = tokio::time::timeout(std::time::Duration::from_secs(20), events.recv())
            .await
            .expect("four progress notices within 20 s")
            .unwrap();
        if let Event::Notification { process, data } = event
            && process == p
            && data["kind"] == "progress"
        {
            steps.push(data);
        }
    }
    assert_eq!(
        steps[0],
        json!({"kind": "progress", "progress": 1.0, "total": 4.0, "message": "step 1"})
    );
    assert_eq!(steps[3]["progress"], 4.0);
    assert_eq!(output_of(&client, &p).await["text"], "counted to 4");
}

/// A free port on 127.0.0.1.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_streamable_http_server_added_with_hc_mcp_add_is_listed_and_called() {
    let port = free_port();
    let mut server = tokio::process::Command::new("node")
        .arg(everything())
        .arg("streamableHttp")
        .env("PORT", port.to_string())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    wait_for("the HTTP server to listen", || {
        std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
    })
    .await;
    let s = Setup::new(json!({"turns": [
        reply(json!([call("t1", "mcp__web__echo", json!({"message": "over http"}))]), "tool_use"),
        reply(json!([text("done")]), "end_turn"),
    ]}))
    .await;
    let url = format!("http://127.0.0.1:{port}/mcp");
    let added = s
        .out(&[
            "mcp",
            "add",
            "--transport",
            "http",
            "web",
            &url,
            "--header",
            "X-Trace: ${NOPE:-abc}",
        ])
        .await;
    assert_eq!(added.code, 0, "{added:#?}");
    let file: Value =
        serde_json::from_str(&std::fs::read_to_string(s.root.join(".mcp.json")).unwrap()).unwrap();
    assert_eq!(
        file["mcpServers"]["web"],
        json!({"type": "http", "url": url, "headers": {"X-Trace": "${NOPE:-abc}"}})
    );
    // not trusted yet: listed, not started
    let listed = s.out(&["mcp", "list", "--json"]).await;
    let list: Value = serde_json::from_str(&listed.stdout).unwrap();
    assert_eq!(list[0]["status"], "untrusted", "{list}");
    s.trust();
    let listed = s.out(&["mcp", "list", "--json"]).await;
    let list: Value = serde_json::from_str(&listed.stdout).unwrap();
    assert_eq!(list[0]["name"], "web");
    assert_eq!(list[0]["transport"], "http");
    assert_eq!(list[0]["status"], "connected", "{list}");
    assert!(
        list[0]["tools"]
            .as_array()
            .unwrap()
            .contains(&json!("mcp__web__echo"))
    );
    assert_eq!(
        list[0]["headers"],
        json!(["X-Trace"]),
        "header names, never values"
    );
    let ran = s.run(&["--allow", "mcp__web__echo", "echo it"]).await;
    assert_eq!(ran.code, 0, "{ran:#?}");
    let session = s.sessions().pop().unwrap();
    let result = &s.of_type(&session, "tool-result")[0];
    assert!(
        result["text"].as_str().unwrap().contains("over http"),
        "{result}"
    );
    let removed = s.out(&["mcp", "remove", "web"]).await;
    assert_eq!(removed.code, 0, "{removed:#?}");
    let missing = s.out(&["mcp", "get", "web"]).await;
    assert_eq!(missing.code, 1);
    assert!(
        missing.stderr.contains("no MCP server `web`"),
        "{}",
        missing.stderr
    );
    server.kill().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn user_scope_servers_go_in_your_own_file_which_keeps_what_you_wrote() {
    let s = Setup::new(json!({"turns": [reply(json!([text("unused")]), "end_turn")]})).await;
    let user = s.file(
        ".no-user-config/hermitcrab/config.toml",
        "# my settings\nmodel = \"claude-sonnet-4-5\"\n",
    );
    let added = s
        .out(&[
            "mcp",
            "add",
            "-s",
            "user",
            "-e",
            "API_KEY=${API_KEY}",
            "tools",
            "--",
            "node",
            "server.js",
            "--flag",
        ])
        .await;
    assert_eq!(added.code, 0, "{added:#?}");
    let text = std::fs::read_to_string(&user).unwrap();
    assert!(
        text.starts_with("# my settings\nmodel = \"claude-sonnet-4-5\"\n"),
        "{text}"
    );
    let table: toml::Table = text.parse().unwrap();
    assert_eq!(
        table["mcp_servers"]["tools"]["args"],
        toml::Value::Array(vec!["server.js".into(), "--flag".into()])
    );
    assert_eq!(
        table["mcp_servers"]["tools"]["env"]["API_KEY"].as_str(),
        Some("${API_KEY}")
    );
    let removed = s.out(&["mcp", "remove", "--scope", "user", "tools"]).await;
    assert_eq!(removed.code, 0, "{removed:#?}");
    let text = std::fs::read_to_string(&user).unwrap();
    assert!(
        !text.contains("tools") && text.contains("# my settings"),
        "{text}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_servers_prompt_is_a_slash_command_and_its_resources_are_read_by_the_agent() {
    let doc = "demo://resource/static/document/architecture.md";
    let s = Setup::new(json!({"turns": [
        reply(json!([call("t1", "mcp_list_resources", json!({}))]), "tool_use"),
        reply(json!([call("t2", "mcp_read_resource", json!({"uri": doc}))]), "tool_use"),
        reply(json!([text("done")]), "end_turn"),
    ]}))
    .await;
    s.file(".mcp.json", &mcp_json("everything"));
    s.trust();
    // a required argument missing is said, with the usage
    let ran = s.run(&["/mcp__everything__args-prompt"]).await;
    assert_eq!(ran.code, 1, "{ran:#?}");
    assert!(ran.stderr.contains("needs `city`"), "{}", ran.stderr);
    let ran = s.run(&["/mcp__everything__args-prompt Lisbon"]).await;
    assert_eq!(ran.code, 0, "{ran:#?}");
    let session = s.sessions().pop().unwrap();
    let prompt = &s.of_type(&session, "prompt")[0];
    assert_eq!(prompt["text"], "What's weather in Lisbon?");
    let results = s.of_type(&session, "tool-result");
    let listed = results[0]["text"].as_str().unwrap();
    assert!(listed.contains(doc), "{listed}");
    let read = results[1]["text"].as_str().unwrap();
    assert!(
        read.starts_with("# Everything Server – Architecture"),
        "{read}"
    );
    // offered to the model as the agent's own tools, and rebuilt exactly
    let first: Value = serde_json::from_slice(&s.sent()[0]).unwrap();
    let names: Vec<&str> = first["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert!(
        names.ends_with(&["mcp_list_resources", "mcp_read_resource"]),
        "{names:?}"
    );
    for n in 1..=3 {
        assert_eq!(s.rebuilt(&session, n).await, s.sent()[n - 1], "request {n}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn servers_that_fail_to_start_or_misanswer_are_named_and_the_run_goes_on() {
    let (python, server) = python_server();
    let s = Setup::new(json!({"turns": [
        reply(json!([call("t1", "mcp__py__refuse", json!({})), call("t2", "mcp__py__big", json!({}))]), "tool_use"),
        reply(json!([text("done")]), "end_turn"),
    ]}))
    .await;
    let quick = |code: &str| json!({"command": "python3", "args": ["-c", code], "startup_timeout_ms": 1500});
    let config = json!({"mcpServers": {
        "py": {"command": python, "args": [server]},
        "exits": quick("import sys; sys.exit(3)"),
        "silent": quick("import time; time.sleep(60)"),
        "garbage": quick("import time; print('this is not JSON-RPC', flush=True); time.sleep(60)"),
        "off": {"command": "python3", "enabled": false},
    }});
    let ran = s
        .run(&[
            "--allow",
            "mcp__py",
            "--mcp-config",
            &config.to_string(),
            "go",
        ])
        .await;
    assert_eq!(ran.code, 0, "{ran:#?}");
    for name in ["exits", "silent", "garbage"] {
        assert!(
            ran.stderr.contains(&format!("MCP server `{name}` failed")),
            "{name}: {}",
            ran.stderr
        );
    }
    assert!(ran.stderr.contains("did not initialize"), "{}", ran.stderr);
    assert!(
        ran.stderr.contains("not ready within 1500 ms"),
        "{}",
        ran.stderr
    );
    assert!(
        !ran.stderr.contains("`off`"),
        "a disabled server is not started"
    );
    assert!(
        ran.stderr.contains(
            "MCP server `py`: the tool \"two words\" has an invalid name; that tool is skipped"
        ),
        "{}",
        ran.stderr
    );
    let session = s.sessions().pop().unwrap();
    let context = s.of_type(&session, "context").pop().unwrap();
    let statuses: Vec<(String, String)> = context["mcp_servers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["name"].as_str().unwrap().into(),
                s["status"].as_str().unwrap().into(),
            )
        })
        .collect();
    assert!(
        statuses.contains(&("off".into(), "disabled".into())),
        "{statuses:?}"
    );
    assert!(
        statuses.contains(&("py".into(), "connected".into())),
        "{statuses:?}"
    );
    let results = s.of_type(&session, "tool-result");
    assert_eq!(results[0]["is_error"], true);
    assert!(
        results[0]["text"]
            .as_str()
            .unwrap()
            .contains("refused on purpose"),
        "{}",
        results[0]
    );
    let big = results[1]["text"].as_str().unwrap();
    assert!(
        big.len() < 110_000 && big.contains("MAX_MCP_OUTPUT_CHARS"),
        "{}",
        big.len()
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_malformed_mcp_json_is_refused_naming_the_file_and_line() {
    let s = Setup::new(json!({"turns": [reply(json!([text("unused")]), "end_turn")]})).await;
    s.file(
        ".mcp.json",
        "{\n  \"mcpServers\": {\n    \"x\": {\"command\": }\n  }\n}\n",
    );
    let ran = s.run(&["hello"]).await;
    assert_eq!(ran.code, 2, "{ran:#?}");
    assert!(
        ran.stderr.contains(".mcp.json is not valid JSON") && ran.stderr.contains("line 3"),
        "{}",
        ran.stderr
    );
    assert!(s.sent().is_empty(), "the run did not start");
}

#[tokio::test(flavor = "multi_thread")]
async fn tools_that_change_mid_run_are_recorded_and_two_servers_serve_alongside_a_built_in() {
    let (python, server) = python_server();
    let s = Setup::new(json!({"turns": [
        reply(json!([
            call("t1", "mcp__py__grow", json!({})),
            call("t2", "mcp__everything__echo", json!({"message": "beside"})),
            call("t3", "read", json!({"file_path": "notes.txt"})),
        ]), "tool_use"),
        reply(json!([text("done")]), "end_turn"),
    ]}))
    .await;
    s.file("notes.txt", "a note\n");
    let config = json!({"mcpServers": {
        "py": {"command": python, "args": [server]},
        "everything": {"command": "node", "args": [everything(), "stdio"]},
    }});
    let ran = s
        .run(&[
            "--allow",
            "mcp__py",
            "--allow",
            "mcp__everything",
            "--mcp-config",
            &config.to_string(),
            "go",
        ])
        .await;
    assert_eq!(ran.code, 0, "{ran:#?}");
    let session = s.sessions().pop().unwrap();
    let results = s.of_type(&session, "tool-result");
    let texts: Vec<&str> = results
        .iter()
        .map(|r| r["text"].as_str().unwrap())
        .collect();
    assert_eq!(texts[0], "grown");
    assert!(texts[1].contains("beside"), "{texts:?}");
    assert!(texts[2].contains("a note"), "{texts:?}");
    // the server said its tools changed during the run: the service listed
    // them again and recorded what changed
    let db = s.db();
    let live = |id: &str| {
        db.read(|snap| snap.is_instance_of(id, "engine/program"))
            .unwrap()
    };
    assert!(live("program/mcp__py__added"), "the new tool is a program");
    assert!(
        !live("program/mcp__py__wait_forever"),
        "the tool taken away is off the programs"
    );
    assert!(
        db.read(|snap| snap.exists("program/mcp__py__wait_forever"))
            .unwrap(),
        "its chunk stays"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_servers_question_is_asked_of_the_host_and_declined_when_no_one_can_answer() {
    use protocol::{ChunkDecl, NewPlacement};
    let s = Setup::new(json!({"turns": [
        reply(json!([call("t1", "mcp__everything__trigger-elicitation-request", json!({}))]), "tool_use"),
        reply(json!([text("done")]), "end_turn"),
    ]}))
    .await;
    s.file(".mcp.json", &mcp_json("everything"));
    s.trust();
    // `hc run` with no terminal: no one can answer, the server is told so
    let ran = s.run(&["--allow", "mcp__everything", "ask me"]).await;
    assert_eq!(ran.code, 0, "{ran:#?}");
    let session = s.sessions().pop().unwrap();
    let result = &s.of_type(&session, "tool-result")[0];
    assert!(
        result["text"]
            .as_str()
            .unwrap()
            .to_lowercase()
            .contains("declined"),
        "{result}"
    );
    // a host answers the question where it was asked
    let (_child, client, _events) = s.serve();
    client
        .service("mcp/everything", Some(30_000))
        .await
        .unwrap();
    let program = "mcp__everything__trigger-elicitation-request";
    let p = host_run(&client, program, json!({})).await;
    let db = s.db();
    let mut asked = None;
    wait_for("the server's question on the run", || {
        let read = db
            .scope(
                &[p.as_str(), "user-question"],
                &substrate::ScopeOpts::default(),
            )
            .unwrap();
        asked = read.chunks.first().map(|c| (c.id.clone(), c.body_value()));
        asked.is_some()
    })
    .await;
    let (question, body) = asked.unwrap();
    assert!(
        body["text"].as_str().unwrap().contains("name (string)"),
        "{body}"
    );
    let answer = ChunkDecl::generated()
        .body(json!({"request": question, "text": "name=Ada Lovelace; integer=7"}))
        .on(NewPlacement::instance(&p))
        .on(NewPlacement::instance("user-answer"));
    client
        .commit(protocol::Declaration::of(vec![answer]))
        .await
        .unwrap();
    let output = output_of(&client, &p).await;
    let text = output["text"].as_str().unwrap();
    assert!(
        text.contains("Name: Ada Lovelace") && text.contains("Favorite Integer: 7"),
        "{text}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn http_servers_that_refuse_are_named_with_what_they_answered() {
    use axum::http::StatusCode;
    let app = axum::Router::new()
        .route(
            "/auth",
            axum::routing::any(|| async { StatusCode::UNAUTHORIZED }),
        )
        .route(
            "/boom",
            axum::routing::any(|| async { StatusCode::INTERNAL_SERVER_ERROR }),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move { axum::serve(listener, app).await });
    let s = Setup::new(json!({"turns": [reply(json!([text("ok")]), "end_turn")]})).await;
    let url = |path: &str| format!("http://127.0.0.1:{port}{path}");
    let config = json!({"mcpServers": {
        "auth": {"type": "http", "url": url("/auth"), "startup_timeout_ms": 3000},
        "keyed": {"type": "http", "url": url("/auth"), "startup_timeout_ms": 3000,
            "headers": {"Authorization": "Bearer wrong-key-0123"}},
        "boom": {"type": "http", "url": url("/boom"), "startup_timeout_ms": 3000},
        "gone": {"type": "http", "url": url("/nope"), "startup_timeout_ms": 3000},
    }});
    let ran = s.run(&["--mcp-config", &config.to_string(), "hi"]).await;
    assert_eq!(ran.code, 0, "{ran:#?}");
    for (name, said) in [("keyed", "401"), ("boom", "500"), ("gone", "404")] {
        let line = ran
            .stderr
            .lines()
            .find(|l| l.contains(&format!("MCP server `{name}` failed")))
            .unwrap_or_else(|| panic!("no line for {name}: {}", ran.stderr));
        assert!(line.contains(&format!("HTTP {said}")), "{name}: {line}");
        assert!(!line.contains("rmcp::"), "no SDK type names: {line}");
    }
    assert!(
        ran.stderr
            .contains("the credentials it was given were refused"),
        "{}",
        ran.stderr
    );
    assert!(!ran.stderr.contains("wrong-key-0123"), "{}", ran.stderr);
    // one given no credentials wants the person to sign in
    assert!(
        ran.stderr
            .contains("MCP server `auth` needs you to sign in (`hc mcp login auth`)"),
        "{}",
        ran.stderr
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_server_name_that_is_not_plain_is_refused() {
    let s = Setup::new(json!({"turns": [reply(json!([text("unused")]), "end_turn")]})).await;
    let wild = json!({"mcpServers": {"*": {"command": "x"}}});
    let ran = s.run(&["--mcp-config", &wild.to_string(), "hi"]).await;
    assert_eq!(ran.code, 2, "{ran:#?}");
    assert!(ran.stderr.contains("MCP server name `*`"), "{}", ran.stderr);
    let added = s.out(&["mcp", "add", "a/b", "--", "x"]).await;
    assert_eq!(added.code, 2, "{added:#?}");
}
