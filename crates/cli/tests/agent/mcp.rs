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

#[tokio::test(flavor = "multi_thread")]
async fn an_mcp_tool_is_a_served_run_and_the_request_is_rebuilt_exactly() {
    let s = Setup::new(json!({"turns": [
        reply(json!([call("t1", "mcp__everything__echo", json!({"message": "hi there"}))]), "tool_use"),
        reply(json!([call("t2", "mcp__everything__get-sum", json!({"a": 2, "b": 3}))]), "tool_use"),
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
        .filter(|n| !["ask_user", "scope", "todo"].contains(n))
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
    for n in 1..=3 {
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
}
