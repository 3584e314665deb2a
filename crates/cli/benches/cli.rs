//! The command line's figures (docs/performance.md), each the whole
//! release `hc` process, from start to exit:
//!
//! * `cli/trace_1000`: `hc trace` of a session of 1,000 chunks (333 turns
//!   of answer, shell call and result, each call with its process).
//! * `cli/sessions_1000`: `hc sessions` with 1,000 sessions, each with a
//!   finished agent run.
//! * `cli/chat_start`: `hc chat` from its start to its banner (the engine
//!   open, the banner written; stdin a pipe and stdout not a terminal, so
//!   plain lines, no line editor).
//! * `cli/config_plain` and `cli/config_trusted`: `hc config` in a project
//!   whose files ask for nothing that needs trust, and in one whose files
//!   ask for hooks, a wider mode and allow rules, trusted: the difference
//!   is the trust check a run makes (reading the user's `trusted.toml`,
//!   hashing the project's `config.toml` and `.env`).
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::json;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use substrate::{ChunkDecl, Declaration, NewPlacement, Substrate};

mod common;

use common::{HC, project};

fn db(root: &Path) -> Substrate {
    Substrate::open(root.join(".hermitcrab/substrate.db")).unwrap()
}

const STARTED: &str = "2026-11-23T10:00:00.000Z";
const ENDED: &str = "2026-11-23T10:00:00.012Z";

/// A session of 1,000 chunks: its prompt, then 333 turns (answer, shell
/// call, result), each call's process beside it.
fn long_session(db: &Substrate) -> String {
    let session = "s_bench_trace";
    let mut chunks = vec![
        ChunkDecl::with_id(session)
            .body(json!({"title": "a long session", "created": STARTED}))
            .on(NewPlacement::instance("session")),
        ChunkDecl::generated()
            .body(json!({"text": "fix every failing test"}))
            .on(NewPlacement::instance("prompt"))
            .on(NewPlacement::instance(session)),
    ];
    for n in 1..=333 {
        let process = format!("p_bench_{n}");
        let usage = json!({"input_tokens": 1000 + n, "output_tokens": 40});
        chunks.push(
            ChunkDecl::generated()
                .body(json!({"text": format!("Turn {n}: running the tests."), "call": n, "usage": usage, "cost_usd": 0.003, "model": "claude-sonnet-4-5", "stop_reason": "tool_use"}))
                .on(NewPlacement::instance("answer"))
                .on(NewPlacement::instance(session)),
        );
        chunks.push(
            ChunkDecl::with_id(&process)
                .name("shell")
                .body(json!({"status": "done", "started": STARTED, "ended": ENDED}))
                .on(NewPlacement::instance("engine/process")),
        );
        chunks.push(
            ChunkDecl::generated()
                .body(json!({"tool_use_id": format!("toolu_{n}"), "program": "shell", "input": {"command": "cargo test"}, "process": process}))
                .on(NewPlacement::instance("tool-call"))
                .on(NewPlacement::instance(session)),
        );
        chunks.push(
            ChunkDecl::generated()
                .body(json!({"tool_use_id": format!("toolu_{n}"), "program": "shell", "text": "test result: ok. 12 passed\n".repeat(20), "is_error": false}))
                .on(NewPlacement::instance("tool-result"))
                .on(NewPlacement::instance(session)),
        );
    }
    db.commit(Declaration::of(chunks), None).unwrap();
    session.to_owned()
}

/// A thousand sessions, each with a finished run on it.
fn many_sessions(db: &Substrate) {
    let mut chunks = Vec::new();
    for n in 0..1000 {
        let session = format!("s_bench_{n:04}");
        chunks.push(
            ChunkDecl::with_id(&session)
                .body(json!({"title": format!("task number {n}"), "created": STARTED}))
                .on(NewPlacement::instance("session")),
        );
        chunks.push(
            ChunkDecl::generated()
                .name("agent")
                .body(json!({"status": "done", "stop_reason": "end_turn", "turns": 3, "cost_usd": 0.01, "usage": {"input_tokens": 3000, "output_tokens": 120}}))
                .on(NewPlacement::instance("engine/process"))
                .on(NewPlacement::instance("program/agent"))
                .on(NewPlacement::instance(&session)),
        );
    }
    db.commit(Declaration::of(chunks), None).unwrap();
}

fn hc(root: &Path, args: &[&str]) {
    hc_as(root, args, None);
}

/// `hc ARGS…` in `root`, with `user` as its configuration directory.
fn hc_as(root: &Path, args: &[&str], user: Option<&Path>) {
    let mut command = Command::new(HC);
    command.args(args).current_dir(root).env("NO_COLOR", "1");
    if let Some(user) = user {
        command.env("XDG_CONFIG_HOME", user);
    }
    let out = command.output().unwrap();
    assert!(out.status.success(), "{out:?}");
}

/// A project whose own files ask for power (hooks, a wider mode, allow
/// rules; a key in `.env`), trusted by the user whose configuration is
/// in `user`.
fn trusted_project(user: &Path) -> tempfile::TempDir {
    let dir = project();
    std::fs::write(
        dir.path().join(".hermitcrab/config.toml"),
        "permission_mode = \"accept-edits\"\n\n[permissions]\nallow = [\"shell(cargo test:*)\"]\n\n\
         [[hooks]]\nevent = \"pre-tool\"\ncommand = \"true\"\n",
    )
    .unwrap();
    std::fs::write(dir.path().join(".env"), "ANTHROPIC_API_KEY=sk-bench\n").unwrap();
    hc_as(dir.path(), &["trust"], Some(user));
    dir
}

/// From starting `hc chat` to its prompt: the second line of its banner.
fn chat_start(root: &Path) -> Duration {
    let started = Instant::now();
    let mut child = Command::new(HC)
        .arg("chat")
        .current_dir(root)
        .env("ANTHROPIC_BASE_URL", "http://127.0.0.1:9")
        .env("NO_COLOR", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    for _ in 0..2 {
        line.clear();
        err.read_line(&mut line).unwrap();
    }
    let took = started.elapsed();
    assert!(line.contains("/help"), "{line}");
    drop(child.stdin.take());
    assert!(child.wait().unwrap().success());
    took
}

fn cli(c: &mut Criterion) {
    let dir = project();
    let root = dir.path().to_owned();
    let db = db(&root);
    let session = long_session(&db);
    many_sessions(&db);
    db.checkpoint().unwrap();
    drop(db);
    let mut group = c.benchmark_group("cli");
    group.sample_size(20);
    group.bench_function("trace_1000", |b| b.iter(|| hc(&root, &["trace", &session])));
    group.bench_function("sessions_1000", |b| b.iter(|| hc(&root, &["sessions"])));
    group.bench_function("chat_start", |b| {
        b.iter_custom(|n| (0..n).map(|_| chat_start(&root)).sum())
    });
    let user = tempfile::tempdir().unwrap();
    let plain = project();
    let trusted = trusted_project(user.path());
    group.bench_function("config_plain", |b| {
        b.iter(|| hc_as(plain.path(), &["config"], Some(user.path())))
    });
    group.bench_function("config_trusted", |b| {
        b.iter(|| hc_as(trusted.path(), &["config"], Some(user.path())))
    });
    group.finish();
}

criterion_group!(benches, cli);
criterion_main!(benches);
