//! A real project for the tool programs: `hc init` in a temp dir, the
//! engine on its substrate, built-ins run as `hc program NAME` contained
//! through `hc-contain` — real processes, a real SQLite file.

use engine::{Context, Engine, EngineConfig};
use protocol::RunArgs;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use substrate::{ChunkDecl, Declaration, NewPlacement, PlacementType, ScopeResult, Substrate};
use tempfile::TempDir;

pub const HC: &str = env!("CARGO_BIN_EXE_hc");

/// A project with the engine running on it.
pub struct Project {
    pub dir: TempDir,
    /// The project root (canonical: what tools report paths against).
    pub root: PathBuf,
    pub db: Arc<Substrate>,
    pub engine: Engine,
}

/// What a tool answered.
#[derive(Debug, Clone)]
pub struct Answer {
    pub process: String,
    pub status: String,
    pub text: String,
    pub data: Value,
    pub is_error: bool,
    pub body: Value,
}

pub fn init(dir: &Path) {
    let out = std::process::Command::new(HC)
        .arg("init")
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "hc init: {out:?}");
}

/// `hc` in `dir`, with a user configuration of its own there.
pub fn hc_in(dir: &Path) -> std::process::Command {
    let mut command = std::process::Command::new(HC);
    command
        .current_dir(dir)
        .env("XDG_CONFIG_HOME", dir.join(".user-config"));
    command
}

/// `hc trust` in `dir`: the project's own configuration applies.
pub fn trust(dir: &Path) {
    let out = hc_in(dir).arg("trust").output().unwrap();
    assert!(out.status.success(), "hc trust: {out:?}");
}

/// The engine configuration `hc` would use: built-ins through `hc` (forked
/// by its zygote, `hc __contain`), containment through `hc-contain`.
pub fn config(root: &Path) -> EngineConfig {
    let mut config = EngineConfig::new(root);
    config.builtin_exe = PathBuf::from(HC);
    config.containment = engine::contain::Containment::On {
        exe: PathBuf::from(env!("CARGO_BIN_EXE_hc-contain")),
        args: Vec::new(),
    };
    config.zygote = Some((PathBuf::from(HC), vec!["__contain".into()]));
    config
}

impl Project {
    pub fn new() -> Project {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        init(&root);
        let db = Arc::new(Substrate::open(root.join(".hermitcrab/substrate.db")).unwrap());
        let engine = Engine::open_with(Arc::clone(&db), config(&root)).unwrap();
        Project {
            dir,
            root,
            db,
            engine,
        }
    }

    /// A file in the project, with its parents.
    pub fn file(&self, rel: &str, content: impl AsRef<[u8]>) -> PathBuf {
        let path = self.root.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, content).unwrap();
        path
    }

    /// The run arguments of `program` with `input` as its argument chunk.
    pub fn args(program: &str, input: Value) -> RunArgs {
        RunArgs {
            chunks: vec![
                ChunkDecl::generated()
                    .body(input)
                    .on(NewPlacement::instance(format!("input/{program}"))),
            ],
            ..RunArgs::default()
        }
    }

    /// Starts `program` on `input`.
    pub fn start(&self, program: &str, input: Value) -> String {
        self.engine
            .run(&Context::host(), program, Project::args(program, input))
            .unwrap()
    }

    /// Runs `program` on `input` and waits for its answer.
    pub async fn tool(&self, program: &str, input: Value) -> Answer {
        let p = self.start(program, input);
        self.answer(&p).await
    }

    /// Waits for process `p` and reads its answer.
    pub async fn answer(&self, p: &str) -> Answer {
        let ids = vec![p.to_owned()];
        let done = tokio::time::timeout(
            Duration::from_secs(120),
            self.engine.await_processes(&Context::host(), &ids),
        )
        .await
        .expect("the tool did not end within 120 s")
        .unwrap();
        answer_of(p, &done[p])
    }

    /// A run the engine refuses before the program starts (the argument
    /// breaks its type's spec: a required field is missing); the message
    /// must hold `needle`.
    pub fn refused_run(&self, program: &str, input: Value, needle: &str) {
        let before = self.db.head().unwrap();
        let e = self
            .engine
            .run(&Context::host(), program, Project::args(program, input))
            .unwrap_err();
        assert_eq!(e.code, protocol::ErrorCode::ValidationError, "{e}");
        assert!(e.message.contains(needle), "expected `{needle}` in: {e}");
        assert_eq!(
            self.db.head().unwrap(),
            before,
            "a refused run commits nothing"
        );
    }

    /// Makes the session `id`.
    pub fn session(&self, id: &str) {
        self.db
            .commit(
                Declaration::of(vec![
                    ChunkDecl::with_id(id).on(NewPlacement::instance("session")),
                ]),
                None,
            )
            .unwrap();
    }
}

/// A process's answer from its final scope.
pub fn answer_of(p: &str, done: &ScopeResult) -> Answer {
    let body = done.scopes[0].body_value();
    let outputs: Vec<Value> = done
        .chunks
        .iter()
        .filter(|c| c.is_on("engine/output", PlacementType::Instance))
        .map(|c| c.body_value())
        .collect();
    assert!(outputs.len() <= 1, "a tool answers once, got {outputs:?}");
    let out = outputs.first().cloned().unwrap_or(json!({}));
    Answer {
        process: p.to_owned(),
        status: body["status"].as_str().unwrap_or_default().to_owned(),
        text: out["text"].as_str().unwrap_or_default().to_owned(),
        data: out["data"].clone(),
        is_error: out["is_error"].as_bool().unwrap_or(false),
        body,
    }
}

impl Answer {
    /// A completed run whose request succeeded.
    pub fn ok(self) -> Answer {
        assert_eq!(self.status, "completed", "{self:#?}");
        assert!(!self.is_error, "expected success: {self:#?}");
        self
    }

    /// A completed run whose request failed; its text must hold `needle`.
    pub fn refused(self, needle: &str) -> Answer {
        assert_eq!(
            self.status, "completed",
            "an error result, not a failed run: {self:#?}"
        );
        assert!(self.is_error, "expected an error result: {self:#?}");
        assert!(
            self.text.contains(needle),
            "expected `{needle}` in: {}",
            self.text
        );
        self
    }
}

/// The SHA-256 of `bytes`, hex.
pub fn sha256(bytes: &[u8]) -> String {
    ring::digest::digest(&ring::digest::SHA256, bytes)
        .as_ref()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// A process body's RFC 3339 time field as a system time.
pub fn time(body: &Value, field: &str) -> std::time::SystemTime {
    humantime::parse_rfc3339(body[field].as_str().unwrap()).unwrap()
}
