#![allow(clippy::unwrap_used, clippy::expect_used, dead_code)]
//! Shared by the engine's tests: a real substrate in a temp dir, the engine
//! on it, and programs backed by `programs/fixture.py` (stdlib Python).

use engine::{Context, Engine, EngineConfig};
use protocol::{Boundary, RunArgs};
use serde_json::{Value, json};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use substrate::{
    ChunkDecl, Declaration, NewPlacement, PlacementType, ScopeOpts, ScopeResult, Substrate,
};
use tempfile::TempDir;

/// The engine's vocabulary, and the session types a host brings (shaped as
/// the agent's: a session is ordered and takes prompts and processes).
pub fn vocabulary() -> Vec<ChunkDecl> {
    let mut out = engine::vocabulary();
    out.push(ChunkDecl::with_id("session").spec(
        json!({"propagate": true, "ordered": true, "accepts": ["prompt", "engine/process"]}),
    ));
    out.push(ChunkDecl::with_id("prompt").spec(json!({"required": ["text"]})));
    out.push(ChunkDecl::with_id("culture"));
    out
}

pub struct Harness {
    pub dir: TempDir,
    pub db: Arc<Substrate>,
    pub engine: Engine,
}

pub fn fixture_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/programs/fixture.py")
}

/// The engine's configuration for tests: programs run contained, through
/// the engine's own trampoline binary.
pub fn config(root: &std::path::Path) -> EngineConfig {
    let mut config = EngineConfig::new(root);
    config.containment = engine::contain::Containment::On {
        exe: PathBuf::from(env!("CARGO_BIN_EXE_hc-contain-test")),
        args: Vec::new(),
    };
    config
}

impl Harness {
    /// A fresh project with the `fixture` program (intrinsic boundary open)
    /// and `narrow` (intrinsic boundary: its own process tree only).
    pub fn new() -> Harness {
        Harness::with(config)
    }

    /// The same, with programs uncontained (the person opted out).
    pub fn uncontained() -> Harness {
        Harness::with(|root| {
            let mut c = config(root);
            c.containment = engine::contain::Containment::Off;
            c
        })
    }

    /// The same, with the configuration `make` gives for the project root.
    pub fn with(make: impl FnOnce(&std::path::Path) -> EngineConfig) -> Harness {
        let dir = tempfile::tempdir().unwrap();
        let db = Arc::new(Substrate::open(dir.path().join("substrate.db")).unwrap());
        db.init(vocabulary()).unwrap();
        let engine = Engine::open_with(Arc::clone(&db), make(dir.path())).unwrap();
        let h = Harness { dir, db, engine };
        h.commit(vec![
            ChunkDecl::with_id("input/fixture")
                .name("input/fixture")
                .body(json!({"text": "what the fixture should do", "schema": {"type": "object"}})),
        ]);
        h.program("fixture", json!("open"), 30_000);
        h.program("narrow", json!([]), 30_000);
        h
    }

    pub fn reopen(dir: TempDir) -> Harness {
        let db = Arc::new(Substrate::open(dir.path().join("substrate.db")).unwrap());
        let engine = Engine::open_with(Arc::clone(&db), config(dir.path())).unwrap();
        Harness { dir, db, engine }
    }

    /// A program `program/NAME` running the fixture.
    pub fn program(&self, name: &str, boundary: Value, timeout_ms: u64) {
        self.program_with(name, boundary, timeout_ms, Value::Null);
    }

    /// The same, declaring `capabilities`.
    pub fn program_with(&self, name: &str, boundary: Value, timeout_ms: u64, capabilities: Value) {
        self.commit(vec![
            ChunkDecl::with_id(format!("program/{name}"))
                .name(name)
                .spec(json!({"propagate": true, "accepts": ["input/fixture"]}))
                .body(json!({
                    "executable": "python3",
                    "args": [fixture_path()],
                    "runtime": "vm",
                    "text": "the test fixture",
                    "input_type": "input/fixture",
                    "boundary": boundary,
                    "timeout_ms": timeout_ms,
                    "capabilities": capabilities,
                }))
                .on(NewPlacement::instance("engine/program")),
        ]);
    }

    pub fn commit(&self, chunks: Vec<ChunkDecl>) -> substrate::Commit {
        self.db.commit(Declaration::of(chunks), None).unwrap()
    }

    /// The fixture's argument chunk for `task`.
    pub fn task(task: Value) -> RunArgs {
        RunArgs {
            chunks: vec![
                ChunkDecl::generated()
                    .body(task)
                    .on(NewPlacement::instance("input/fixture")),
            ],
            ..RunArgs::default()
        }
    }

    pub fn run(&self, program: &str, task: Value) -> String {
        self.engine
            .run(&Context::host(), program, Harness::task(task))
            .unwrap()
    }

    pub fn run_with(
        &self,
        program: &str,
        task: Value,
        read: Option<Boundary>,
        write: Option<Boundary>,
    ) -> String {
        let mut args = Harness::task(task);
        args.read_boundary = read;
        args.write_boundary = write;
        self.engine.run(&Context::host(), program, args).unwrap()
    }

    /// Awaits one process (at most 180 s) and returns its final scope.
    pub async fn wait(&self, id: &str) -> ScopeResult {
        let ids = vec![id.to_owned()];
        let done = tokio::time::timeout(
            Duration::from_secs(60),
            self.engine.await_processes(&Context::host(), &ids),
        )
        .await
        .expect("the process did not end within 180 s")
        .unwrap();
        done[id].clone()
    }

    /// The process's body now.
    pub fn body(&self, id: &str) -> Value {
        self.db.read(|s| s.body(id)).unwrap().unwrap()
    }

    /// A session chunk.
    pub fn session(&self, id: &str) {
        self.commit(vec![
            ChunkDecl::with_id(id).on(NewPlacement::instance("session")),
        ]);
    }

    pub fn read(&self, ids: &[&str]) -> ScopeResult {
        self.db.scope(ids, &ScopeOpts::default()).unwrap()
    }
}

/// The `data` of each `engine/output` chunk on a process, in order.
pub fn outputs(result: &ScopeResult) -> Vec<Value> {
    result
        .chunks
        .iter()
        .filter(|c| c.is_on("engine/output", PlacementType::Instance))
        .map(|c| c.body_value()["data"].clone())
        .collect()
}

/// The single output's data.
pub fn output(result: &ScopeResult) -> Value {
    let all = outputs(result);
    assert_eq!(
        all.len(),
        1,
        "expected one output, got {all:?}; process: {:?}",
        result.scopes[0].body_value()
    );
    all[0].clone()
}

pub fn status(result: &ScopeResult) -> (String, Option<String>) {
    let body = result.scopes[0].body_value();
    (
        body["status"].as_str().unwrap_or_default().to_owned(),
        body["error"].as_str().map(str::to_owned),
    )
}

/// Whether a pid is alive (and not a zombie).
pub fn alive(pid: i64) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => !stat.split(") ").nth(1).unwrap_or("").starts_with('Z'),
        Err(_) => false,
    }
}

/// Asserts that every one of `pids` is dead within a few seconds: SIGKILL
/// is delivered asynchronously, and a PID namespace is torn down after its
/// init dies, so "dead" lags the process's recorded end a little.
pub async fn assert_all_die(pids: &[i64], what: &str) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while pids.iter().any(|pid| alive(*pid)) && std::time::Instant::now() < deadline {
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    for pid in pids {
        assert!(!alive(*pid), "pid {pid} outlived {what}");
    }
}

/// Host pids of every live process in the process group `leader` leads.
pub fn group_members(leader: i64) -> Vec<i64> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i64>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        // fields after the command: state ppid pgrp ...
        let fields: Vec<&str> = stat.rsplit(") ").next().unwrap_or("").split(' ').collect();
        if fields.get(2).and_then(|g| g.parse::<i64>().ok()) == Some(leader) && alive(pid) {
            out.push(pid);
        }
    }
    out
}
