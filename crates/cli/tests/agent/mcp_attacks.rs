//! The MCP doors attacked: a hostile server (`fixtures/hostile_mcp.py`,
//! raw JSON-RPC on Python's standard library) that names its tools after
//! the built-ins, floods the client, is handed secrets, and answers with
//! what is not JSON-RPC. Each attack is a test, whether it held or not.

use crate::common::*;
use crate::mcp::python_server;
use serde_json::{Value, json};
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// The hostile server's script.
fn hostile() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/agent/fixtures/hostile_mcp.py")
}

/// A stdio entry running the hostile server in `mode`, with `extra`
/// fields.
fn entry(mode: &str, extra: Value) -> Value {
    let mut entry = json!({"command": "python3", "args": [hostile(), mode]});
    if let (Some(entry), Value::Object(extra)) = (entry.as_object_mut(), extra) {
        entry.extend(extra);
    }
    entry
}

/// The texts of a session's tool results, in order.
fn texts(s: &Setup, session: &str) -> Vec<(String, bool)> {
    s.of_type(session, "tool-result")
        .iter()
        .map(|r| {
            (
                r["text"].as_str().unwrap_or_default().to_owned(),
                r["is_error"] == true,
            )
        })
        .collect()
}

/// `text` cut short for an assertion's message.
fn short(text: &str) -> String {
    text.chars().take(300).collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn tools_named_after_the_built_ins_are_only_mcp_tools_and_bad_names_are_skipped() {
    let s = Setup::new(json!({"turns": [
        reply(json!([
            call("t1", "read", json!({"file_path": "notes.txt"})),
            call("t2", "Read", json!({"file_path": "notes.txt"})),
        ]), "tool_use"),
        reply(json!([
            call("t3", "mcp__h__read", json!({})),
            call("t4", "mcp__h__Bash", json!({})),
            call("t5", "mcp__h__a__b", json!({})),
            call("t6", "mcp__h__dup", json!({})),
            call("t7", "mcp__h__echo", json!({})),
        ]), "tool_use"),
        reply(json!([text("done")]), "end_turn"),
    ]}))
    .await;
    s.file("notes.txt", "the project's own note\n");
    let config = json!({"mcpServers": {"h": entry("names", json!({}))}});
    let ran = s
        .run(&[
            "--allow",
            "mcp__h",
            "--mcp-config",
            &config.to_string(),
            "go",
        ])
        .await;
    assert_eq!(ran.code, 0, "{ran:#?}");
    let session = s.sessions().pop().unwrap();
    let results = texts(&s, &session);
    // the model's `read` is the built-in, reading the file; `Read` (Claude
    // Code's name, which these names do not take) is no tool — neither
    // reaches the server
    let (read, error) = &results[0];
    assert!(
        !error && read.contains("the project's own note"),
        "read: {read}"
    );
    let (upper, error) = &results[1];
    assert!(
        *error && upper.starts_with("there is no tool `Read`"),
        "Read: {upper}"
    );
    assert_eq!(processes_of(&s, "read").len(), 1, "program/read ran");
    // the server's tools are reachable only by their prefixed names
    let said: Vec<&str> = results[2..].iter().map(|(t, _)| t.as_str()).collect();
    assert_eq!(
        said,
        [
            "hostile read",
            "hostile Bash",
            "hostile a__b",
            "hostile dup",
            "hostile echo"
        ]
    );
    assert_eq!(processes_of(&s, "mcp__h__read").len(), 1);
    assert!(processes_of(&s, "shell").is_empty(), "no shell ran");
    // the tools offered: every name once, the server's all prefixed
    let first: Value = serde_json::from_slice(&s.sent()[0]).unwrap();
    let names: Vec<&str> = first["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    let mut unique = names.clone();
    unique.sort_unstable();
    unique.dedup();
    assert_eq!(unique.len(), names.len(), "a name offered twice: {names:?}");
    let theirs: Vec<&str> = first["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["description"].as_str().unwrap_or("").contains("hostile"))
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert!(
        theirs.len() >= 8 && theirs.iter().all(|n| n.starts_with("mcp__h__")),
        "{theirs:?}"
    );
    assert!(
        theirs
            .iter()
            .all(|n| n.len() <= 64 && n.chars().all(|c| c.is_ascii_graphic())),
        "{theirs:?}"
    );
    // the bad names are skipped, and said: on the context and to the person
    let context = s.of_type(&session, "context").pop().unwrap();
    let skipped: Vec<String> = context["mcp_servers"][0]["skipped_tools"]
        .as_array()
        .unwrap_or_else(|| panic!("no skipped tools: {context}"))
        .iter()
        .map(|s| s.as_str().unwrap().to_owned())
        .collect();
    for bad in [
        "\"two words\"",
        "bell\\u0007ring",
        "tab\\tname",
        &format!("\"{}\"", "x".repeat(200)),
        "`dup`",
        &format!("`{}2`", "y".repeat(100)),
    ] {
        assert!(
            skipped.iter().any(|s| s.contains(bad)),
            "{bad} not skipped: {skipped:#?}"
        );
    }
    assert_eq!(skipped.len(), 6, "{skipped:#?}");
    assert!(
        ran.stderr.matches("that tool is skipped").count() == 6,
        "{}",
        ran.stderr
    );
    assert!(
        !ran.stderr.contains('\u{7}') && !ran.stderr.contains('\t'),
        "no control character reaches the terminal: {:?}",
        ran.stderr
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_server_name_with_a_double_underscore_is_refused_so_one_server_never_covers_another() {
    // `--allow mcp__h` covers `mcp__h__*`: were `h__a` a server's name,
    // its tools (`mcp__h__a__TOOL`) would be allowed with `h`'s
    let s = Setup::new(json!({"turns": [
        reply(json!([call("t1", "mcp__h__a__ok", json!({}))]), "tool_use"),
        reply(json!([text("done")]), "end_turn"),
    ]}))
    .await;
    let config = json!({"mcpServers": {
        "h": entry("names", json!({})),
        "h__a": entry("secret", json!({})),
    }});
    let ran = s
        .run(&[
            "--allow",
            "mcp__h",
            "--mcp-config",
            &config.to_string(),
            "go",
        ])
        .await;
    assert_eq!(ran.code, 2, "{ran:#?}");
    assert!(
        ran.stderr.contains("MCP server name `h__a`") && ran.stderr.contains("`__`"),
        "{}",
        ran.stderr
    );
    for name in ["x__y", "x_"] {
        let added = s.out(&["mcp", "add", name, "--", "python3"]).await;
        assert_eq!(added.code, 2, "{name}: {added:#?}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn floods_of_notices_neither_hang_the_call_nor_grow_the_service() {
    let s = Setup::new(json!({"turns": [
        reply(json!([call("t1", "mcp__f__flood", json!({}))]), "tool_use"),
        reply(json!([call("t2", "mcp__f__changes", json!({}))]), "tool_use"),
        reply(json!([call("t3", "mcp__f__sulk", json!({}))]), "tool_use"),
        reply(json!([call("t4", "mcp__f__stats", json!({}))]), "tool_use"),
        reply(json!([text("done")]), "end_turn"),
    ]}))
    .await;
    let config = json!({"mcpServers": {"f": entry("flood", json!({
        "tool_timeout_ms": 40_000, "startup_timeout_ms": 4_000}))}});
    let started = Instant::now();
    let ran = s
        .run(&[
            "--allow",
            "mcp__f",
            "--mcp-config",
            &config.to_string(),
            "go",
        ])
        .await;
    let took = started.elapsed();
    assert_eq!(ran.code, 0, "{ran:#?}");
    assert!(took < Duration::from_secs(60), "the run took {took:?}");
    let session = s.sessions().pop().unwrap();
    let results = texts(&s, &session);
    let said: Vec<String> = results.iter().map(|(t, _)| short(t)).collect();
    assert_eq!(said[..3], ["flooded", "changed", "sulking"], "{said:?}");
    // "lists=N peak_kb=M": the tools were listed a few times, not once per
    // notice, and the service stayed small
    let stats: Vec<i64> = said[3]
        .split(' ')
        .filter_map(|kv| kv.split_once('=').and_then(|(_, v)| v.parse().ok()))
        .collect();
    let [lists, peak_kb] = stats[..] else {
        panic!("{}", said[3]);
    };
    eprintln!("the tools were listed {lists} times; the service's peak: {peak_kb} kB");
    assert!((1..=20).contains(&lists), "listed {lists} times");
    assert!(
        (0..60_000).contains(&peak_kb),
        "the service's peak memory: {peak_kb} kB"
    );
}

/// A secret no one may see but the server.
const SECRET: &str = "hc-s3cret-7f3a9e21";

/// Every file under `.hermitcrab/` (the substrate, its log, the servers'
/// logs) that holds the secret.
fn files_with_secret(s: &Setup) -> Vec<String> {
    let mut found = Vec::new();
    let mut dirs = vec![s.root.join(".hermitcrab")];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                dirs.push(path);
            } else if let Ok(bytes) = std::fs::read(&path)
                && bytes.windows(SECRET.len()).any(|w| w == SECRET.as_bytes())
            {
                found.push(path.display().to_string());
            }
        }
    }
    found
}

#[tokio::test(flavor = "multi_thread")]
async fn a_servers_secrets_reach_it_and_nothing_else_even_when_it_fails() {
    let s = Setup::new(json!({"turns": [
        reply(json!([call("t1", "mcp__good__ok", json!({}))]), "tool_use"),
        reply(json!([text("done")]), "end_turn"),
    ]}))
    .await;
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let secret_env = json!({"API_TOKEN": "${SECRET}", "OTHER": "Bearer ${SECRET}"});
    let quick = json!({"env": secret_env, "startup_timeout_ms": 4_000});
    let config = json!({"mcpServers": {
        "good": entry("secret", json!({"env": secret_env})),
        "exits": {"command": "python3", "args": [hostile(), "exit", "--token=${SECRET}"],
                  "env": secret_env, "startup_timeout_ms": 4_000},
        "missing": {"command": "no-such-server-${SECRET}", "args": ["--token=${SECRET}"],
                    "env": secret_env, "startup_timeout_ms": 4_000},
        "slow": entry("exit", quick),
        "web": {"type": "http", "url": format!("http://127.0.0.1:{closed}/mcp?key=${{SECRET}}"),
                "headers": {"X-Api-Key": "${SECRET}"}, "bearer_token_env_var": "SECRET",
                "startup_timeout_ms": 4_000},
    }});
    s.file(".mcp.json", &config.to_string());
    s.trust();
    let with_secret = |args: &[&str]| {
        let mut hc = s.hc(args);
        hc.env("SECRET", SECRET);
        hc
    };
    let out = with_secret(&["run", "--allow", "mcp__good", "go"])
        .output()
        .await
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{stderr}");
    for name in ["exits", "missing", "web"] {
        assert!(
            stderr.contains(&format!("MCP server `{name}` failed")),
            "{name}: {stderr}"
        );
    }
    assert!(!stderr.contains(SECRET), "hc's stderr: {stderr}");
    let session = s.sessions().pop().unwrap();
    assert_eq!(texts(&s, &session)[0].0, "ok");
    // `hc mcp list`, `hc mcp get` and `hc config`, as text and as JSON
    for args in [
        &["mcp", "list"][..],
        &["mcp", "list", "--json"],
        &["mcp", "get", "web"],
        &["mcp", "get", "exits", "--json"],
        &["mcp", "get", "missing"],
        &["config"],
    ] {
        let out = with_secret(args).output().await.unwrap();
        let said = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(!said.contains(SECRET), "hc {args:?}: {said}");
        assert!(!said.is_empty(), "hc {args:?} said nothing");
    }
    // the substrate (process bodies, program chunks) and every log
    let found = files_with_secret(&s);
    assert!(found.is_empty(), "the secret is in {found:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn answers_that_are_not_json_rpc_end_each_call_with_an_error_never_a_hang() {
    let calls = [
        "unknown_id",
        "unknown_id_only",
        "string_result",
        "array_result",
        "huge_error",
        "big_error",
        "number_message",
        "object_message",
        "no_message",
        "null_id",
        "string_id",
    ];
    let mut turns: Vec<Value> = calls
        .iter()
        .enumerate()
        .map(|(n, c)| {
            reply(
                json!([call(&format!("t{n}"), &format!("mcp__m__{c}"), json!({}))]),
                "tool_use",
            )
        })
        .collect();
    turns.push(reply(
        json!([call("last", "mcp__m__ok", json!({}))]),
        "tool_use",
    ));
    turns.push(reply(json!([text("done")]), "end_turn"));
    let s = Setup::new(json!({ "turns": turns })).await;
    let config =
        json!({"mcpServers": {"m": entry("malformed", json!({"tool_timeout_ms": 3_000}))}});
    let started = Instant::now();
    let ran = s
        .run(&[
            "--allow",
            "mcp__m",
            "--mcp-config",
            &config.to_string(),
            "go",
        ])
        .await;
    assert_eq!(ran.code, 0, "{ran:#?}");
    let took = started.elapsed();
    let session = s.sessions().pop().unwrap();
    let results = texts(&s, &session);
    assert_eq!(results.len(), calls.len() + 1);
    let of = |name: &str| {
        let at = calls.iter().position(|c| *c == name).unwrap();
        results[at].clone()
    };
    // a stray answer is passed over; the real one is the call's
    assert_eq!(
        of("unknown_id"),
        ("answered after a stray answer".into(), false)
    );
    // the id given back as a string: taken for the number it spells (the
    // SDK's leniency)
    assert_eq!(of("string_id"), ("answered with a string id".into(), false));
    // an answer that is never given for the call's own id: the call's
    // limit ends it, and says so
    for name in ["unknown_id_only", "null_id"] {
        let (text, error) = of(name);
        assert!(
            error && text.contains("timeout"),
            "{name}: {}",
            short(&text)
        );
    }
    // a result that is not a tools/call result
    for name in ["string_result", "array_result"] {
        let (text, error) = of(name);
        assert!(
            error && text.contains("answered tools/call with something else"),
            "{name}: {}",
            short(&text)
        );
    }
    // an error message of any size: cut, as a tool's text is
    for name in ["huge_error", "big_error"] {
        let (text, error) = of(name);
        assert!(
            error && text.len() < 110_000 && text.contains("refused the call"),
            "{name}: {} bytes: {}",
            text.len(),
            short(&text)
        );
    }
    // an error that is not an error object as JSON-RPC has it: said at
    // once, not left to the limit
    for name in ["number_message", "object_message", "no_message"] {
        let (text, error) = of(name);
        assert!(
            error && text.contains("not valid JSON-RPC") && !text.contains("timeout"),
            "{name}: {}",
            short(&text)
        );
    }
    // and the connection still serves
    assert_eq!(results[calls.len()], ("ok".into(), false));
    // two calls waited for their 3 s limit; nothing else waited
    assert!(took < Duration::from_secs(45), "the run took {took:?}");
    let log =
        std::fs::read_to_string(s.root.join(".hermitcrab/logs/mcp-m.log")).unwrap_or_default();
    assert!(!log.contains("panicked"), "{log}");
    assert!(!ran.stderr.contains("panicked"), "{}", ran.stderr);
}

#[tokio::test(flavor = "multi_thread")]
async fn an_answer_of_any_size_is_cut_and_never_waits_for_the_timeout() {
    let (python, server) = python_server();
    let s = Setup::new(json!({"turns": [
        reply(json!([call("t1", "mcp__py__huge", json!({}))]), "tool_use"),
        reply(json!([call("t2", "mcp__py__greet", json!({"name": "after"}))]), "tool_use"),
        reply(json!([text("done")]), "end_turn"),
    ]}))
    .await;
    let config = json!({"mcpServers": {"py": {
        "command": python, "args": [server], "tool_timeout_ms": 20_000}}});
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
    let session = s.sessions().pop().unwrap();
    let results = s.of_type(&session, "tool-result");
    // twenty megabytes in one string: its two ends, not an error, and
    // long before the timeout
    let huge = results[0]["text"].as_str().unwrap();
    assert_eq!(
        results[0]["is_error"],
        false,
        "{}",
        &huge[..huge.len().min(500)]
    );
    assert!(
        huge.len() < 110_000 && huge.contains("cut by hermitcrab"),
        "{}",
        huge.len()
    );
    assert!(!huge.contains("timeout"));
    assert!(huge.starts_with("xxxx") && huge.ends_with("xxxx"));
    // and the connection goes on
    assert_eq!(results[1]["text"], "hello after; token=unset");
}
