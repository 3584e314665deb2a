//! MCP servers started by a package runner, as Claude Code users write
//! them (`npx -y @modelcontextprotocol/server-filesystem .`), under
//! containment: each gets a cache of its own to write; and a server that
//! fails to start says its last words, where its log is, and what to grant
//! when containment refused it.

use crate::common::*;
use serde_json::json;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// The pinned server `npx` fetches.
const FILESYSTEM: &str = "@modelcontextprotocol/server-filesystem@2026.8.31";

/// An npm cache holding [`FILESYSTEM`] as a first `npx -y` leaves it
/// (filled once per build tree from the npm registry: the only network
/// used; the test itself runs npm offline).
fn npx_cache() -> PathBuf {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    PATH.get_or_init(|| {
        let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("npx-cache");
        if !dir.join("_npx").exists() {
            let out = std::process::Command::new("npm")
                .args([
                    "exec",
                    "--yes",
                    "--package",
                    FILESYSTEM,
                    "--",
                    "node",
                    "-e",
                    "0",
                ])
                .env("npm_config_cache", &dir)
                .env("npm_config_update_notifier", "false")
                .output()
                .expect("npm is needed for the MCP tests (Debian: apt-get install npm)");
            assert!(out.status.success(), "npm exec failed: {out:?}");
        }
        dir
    })
    .clone()
}

/// A home whose npm works offline (what the person's `~/.npmrc` may say):
/// nothing here reaches the registry. Not writable under containment.
fn offline_home(s: &Setup) -> PathBuf {
    let home = s.root.join(".home");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::write(home.join(".npmrc"), "offline=true\n").unwrap();
    home
}

/// Copies what `from` holds into `to`.
fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    let out = std::process::Command::new("cp")
        .arg("-a")
        .arg(from.join("."))
        .arg(to)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn an_npx_server_starts_as_written_under_containment() {
    let s = Setup::new(json!({"turns": [
        reply(json!([call("t1", "mcp__fs__list_allowed_directories", json!({}))]), "tool_use"),
        reply(json!([text("listed")]), "end_turn"),
    ]}))
    .await;
    s.file(
        ".mcp.json",
        &json!({"mcpServers": {"fs": {"command": "npx", "args": ["-y", FILESYSTEM, "."]}}})
            .to_string(),
    );
    s.trust();
    let home = offline_home(&s);
    let caches = tempfile::tempdir().unwrap();
    // hc makes the server a cache of its own (its first start fails here:
    // npm is offline, and that cache is empty) …
    let listed = s
        .hc(&["mcp", "list"])
        .env("HOME", &home)
        .env("XDG_CACHE_HOME", caches.path())
        .output()
        .await
        .unwrap();
    assert!(
        String::from_utf8_lossy(&listed.stdout).contains("ENOTCACHED"),
        "{listed:?}"
    );
    let mine = std::fs::read_dir(caches.path().join("hermitcrab/mcp"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path()
        .join("fs");
    // … which a first run's download would have filled
    copy_dir(&npx_cache(), &mine.join("npm"));
    let out = s
        .hc(&["run", "--allow", "mcp__fs", "list what you may read"])
        .env("HOME", &home)
        .env("XDG_CACHE_HOME", caches.path())
        .output()
        .await
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(!stderr.contains("failed"), "{stderr}");
    let session = s.sessions().pop().unwrap();
    let result = &s.of_type(&session, "tool-result")[0];
    assert_eq!(result["is_error"], false, "{result}");
    let root = std::fs::canonicalize(&s.root).unwrap();
    assert!(
        result["text"]
            .as_str()
            .unwrap()
            .contains(root.to_str().unwrap()),
        "the project is what it may read: {result}"
    );
    assert!(
        !home.join(".npm").exists(),
        "nothing of it is written in the person's home"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_server_that_cannot_start_says_its_last_words_its_log_and_what_to_grant() {
    let s = Setup::new(json!({"turns": [reply(json!([text("ok")]), "end_turn")]})).await;
    let home = offline_home(&s);
    let writes_home = "import os, sys\nprint('starting up', file=sys.stderr, flush=True)\n\
                       open(os.path.expanduser('~/state.json'), 'w')";
    let config =
        json!({"mcpServers": {"writer": {"command": "python3", "args": ["-c", writes_home]}}});
    let out = s
        .hc(&["run", "--mcp-config", &config.to_string(), "hi"])
        .env("HOME", &home)
        .output()
        .await
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("MCP server `writer` failed"), "{stderr}");
    assert!(
        stderr.contains("starting up") && stderr.contains("Permission denied"),
        "its last lines: {stderr}"
    );
    assert!(
        stderr.contains(".hermitcrab/logs/mcp-writer.log"),
        "{stderr}"
    );
    assert!(
        stderr.contains("containment refused") && stderr.contains("\"capabilities\""),
        "what to grant: {stderr}"
    );
    assert!(!home.join("state.json").exists());
}

/// A script for a test that asks the model nothing.
fn unused() -> serde_json::Value {
    json!({"turns": [reply(json!([text("unused")]), "end_turn")]})
}

/// A `.mcp.json` with one stdio server that is never started here.
const PROJECT_SERVER: &str =
    r#"{"mcpServers": {"notes": {"command": "python3", "args": ["notes_server.py"]}}}"#;

#[tokio::test(flavor = "multi_thread")]
async fn mcp_list_where_there_is_no_project_makes_none_and_untrusted_is_not_failed() {
    let s = Setup::bare(unused()).await;
    s.file(".mcp.json", PROJECT_SERVER);
    let listed = s.out(&["mcp", "list"]).await;
    assert_eq!(listed.code, 0, "{listed:#?}");
    assert!(!s.root.join(".hermitcrab").exists(), "no project was made");
    assert!(
        listed.stdout.contains("notes:")
            && listed.stdout.contains("not started: untrusted (`hc trust`"),
        "{listed:#?}"
    );
    assert!(!listed.stdout.contains("failed"), "{listed:#?}");

    let s = Setup::new(unused()).await;
    s.file(".mcp.json", PROJECT_SERVER);
    let listed = s.out(&["mcp", "list"]).await;
    assert!(
        listed.stdout.contains("notes:")
            && listed.stdout.contains("not started: untrusted (`hc trust`"),
        "in an untrusted project too: {listed:#?}"
    );
    assert!(!listed.stdout.contains("failed"), "{listed:#?}");
    let json = s.out(&["mcp", "list", "--json"]).await;
    let servers: serde_json::Value = serde_json::from_str(&json.stdout).unwrap();
    assert_eq!(servers[0]["status"], "untrusted", "{servers}");
}

#[tokio::test(flavor = "multi_thread")]
async fn trust_and_config_show_what_each_server_may_do() {
    let s = Setup::new(unused()).await;
    s.file(
        ".mcp.json",
        r#"{"mcpServers": {"notes": {"command": "python3", "args": ["notes_server.py"], "env": {"NOTES_KEY": "${NOTES_KEY}"}},
            "narrow": {"command": "./narrow", "capabilities": {"filesystem": {"read": ["docs"], "write": ["out"]}, "network": false}}}}"#,
    );
    let trusted = s.out(&["trust"]).await;
    assert_eq!(trusted.code, 0, "{trusted:#?}");
    assert!(
        trusted.stdout.contains(
            "the MCP server `notes` from .mcp.json (runs `python3 notes_server.py`; reads every file, \
             writes only its own cache, the network, gets NOTES_KEY)"
        ),
        "{trusted:#?}"
    );
    assert!(
        trusted
            .stdout
            .contains("reads docs, writes out and its own cache, no network"),
        "{trusted:#?}"
    );
    let config = s.out(&["config"]).await;
    assert!(
        config
            .stdout
            .contains("reads every file, writes only its own cache, the network"),
        "{config:#?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn slash_mcp_in_chat_lists_the_servers_before_the_first_message() {
    let s = Setup::new(unused()).await;
    s.file(".mcp.json", PROJECT_SERVER);
    s.trust();
    let extra = r#"{"mcpServers": {"mine": {"command": "python3", "args": ["-c", "pass"]}}}"#;
    let (code, shown) = crate::terminal::in_terminal(
        &s,
        &format!("chat --mcp-config '{extra}'"),
        &[],
        vec![
            (crate::terminal::always(), b"/mcp\r"),
            (crate::terminal::always(), b"/exit\r"),
        ],
    )
    .await;
    assert_eq!(code, 0, "{shown}");
    assert!(
        shown.contains("notes: not started yet") && shown.contains("mine: not started yet"),
        "{shown}"
    );
    assert!(!shown.contains("no MCP servers"), "{shown}");
}
