//! The `mcp` service as an engine runs it: a real MCP server (a Python
//! one on the official SDK, pinned, installed from PyPI into a venv under
//! `target/` on first use), started by a real engine on a SQLite file as
//! the service program `mcp/NAME` (this crate's `mcp-test` binary); its
//! tools and prompts committed as programs a host reads
//! (`mcp::body::McpProgram`), a call a recorded run, and the server's
//! secret handed in its environment, never in a program the engine keeps.

use mcp::body::McpProgram;
use mcp::config::{Handed, ServerEntry};
use protocol::RunArgs;
use serde_json::{Value, json};
use std::path::PathBuf;
use std::sync::OnceLock;
use substrate::{ChunkDecl, NewPlacement, PlacementType, ScopeOpts, Substrate};

const EXE: &str = env!("CARGO_BIN_EXE_mcp-test");

/// The pinned Python SDK the server is written on.
const PYTHON_MCP: &str = "mcp==2.3.0";

/// A secret the server is configured with: it must never be recorded.
const SECRET: &str = "s3cret-token-never-recorded";

/// A Python with the MCP SDK (a venv made once by pip from PyPI).
fn python() -> PathBuf {
    static PYTHON: OnceLock<PathBuf> = OnceLock::new();
    PYTHON
        .get_or_init(|| {
            let venv = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("mcp-crate-python");
            testkit::python_venv(&venv, &[PYTHON_MCP]).unwrap()
        })
        .clone()
}

/// A store with the engine's vocabulary and the service program of server
/// `py` (its body as a host commits it: no secret in it), and the engine
/// that runs it, the resolved server handed over in its environment.
async fn engine_with_server(dir: &std::path::Path) -> engine::Engine {
    let db = Substrate::open(dir.join("store.db")).unwrap();
    db.init(engine::vocabulary()).unwrap();
    let fixture = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/it/fixtures/server.py");
    let entry: ServerEntry = serde_json::from_value(json!({
        "command": python(), "args": [fixture],
        "env": {"FIXTURE_TOKEN": "${FIXTURE_SECRET}"},
    }))
    .unwrap();
    let lookup = |var: &str| (var == "FIXTURE_SECRET").then(|| SECRET.to_owned());
    let handed = Handed {
        server: entry.resolve("py", &lookup).unwrap(),
        redact: entry.redactions(&lookup),
    };
    let body = json!({
        "executable": "builtin:mcp",
        "runtime": "service",
        "boundary": "open",
        "text": "The test server.",
        "capabilities": {"filesystem": {"read": "all"}, "network": true, "env": ["FIXTURE_TOKEN"],
                         "programs": ["mcp__py__*", "mcp/py/*"]},
        "mcp": {"server": "py", "transport": "stdio", "startup_timeout_ms": 60_000},
    });
    let program = ChunkDecl::with_id("program/mcp/py")
        .name("mcp/py")
        .body(body)
        .on(NewPlacement::instance("engine/program"));
    db.commit(substrate::Declaration::of(vec![program]), None)
        .unwrap();
    let mut config = engine::EngineConfig::new(dir);
    config.builtin_exe = PathBuf::from(EXE);
    config.containment = contain::Containment::Off;
    config.env_values.insert(
        "program/mcp/py".into(),
        vec![(
            mcp::SERVER_ENV.into(),
            serde_json::to_string(&handed).unwrap(),
        )],
    );
    engine::Engine::open_with(std::sync::Arc::new(db), config).unwrap()
}

/// The body of program `id`, as committed.
fn body_of(engine: &engine::Engine, id: &str) -> Value {
    engine
        .db()
        .read(|s| s.body(id))
        .unwrap()
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_servers_tools_and_prompts_become_programs_and_a_call_is_a_run_its_secret_in_no_program()
{
    let dir = tempfile::tempdir().unwrap();
    let engine = engine_with_server(dir.path()).await;
    let host = engine::Context::host();
    engine.service(&host, "mcp/py", None).await.unwrap();
    // the tool, as a host reads it
    let tool = McpProgram::parse(&body_of(&engine, "program/mcp__py__greet"));
    assert_eq!(tool.served_by.as_deref(), Some("mcp/py"));
    let facts = tool.mcp.unwrap();
    assert_eq!(
        (facts.server.as_str(), facts.tool.as_deref()),
        ("py", Some("greet"))
    );
    // the prompt, on the server's hidden prompt program
    let prompts = McpProgram::parse(&body_of(&engine, "program/mcp/py/prompt")).prompts;
    assert_eq!(prompts.len(), 1, "{prompts:?}");
    assert_eq!(prompts[0].name, "review");
    assert_eq!(prompts[0].arguments[0].name, "file");
    assert!(prompts[0].arguments[0].required);
    // a call: a run of the tool's program, answered by the server
    let args = RunArgs {
        chunks: vec![
            ChunkDecl::generated()
                .body(json!({"name": "crab"}))
                .on(NewPlacement::instance("input/mcp__py__greet")),
        ],
        ..RunArgs::default()
    };
    let process = engine.run(&host, "mcp__py__greet", args).unwrap();
    let done = engine
        .await_processes(&host, std::slice::from_ref(&process))
        .await
        .unwrap();
    let output = done[&process]
        .chunks
        .iter()
        .find(|c| c.is_on("engine/output", PlacementType::Instance))
        .map(|c| protocol::program::Output::parse(&c.body_value()))
        .unwrap();
    assert!(!output.is_error, "{}", output.text);
    assert!(output.text.contains("hello crab"), "{}", output.text);
    // the server got its secret, in its environment (the tool chose to
    // say it: its answer is recorded as given)
    assert_eq!(output.text, format!("hello crab; token={SECRET}"));
    // … and no program the engine keeps holds it: not the service's
    // configuration, not the tools it committed
    let opts = ScopeOpts {
        kind: substrate::TypeFilter::Instance,
        ..ScopeOpts::default()
    };
    let programs = engine.db().scope(&["engine/program"], &opts).unwrap();
    assert!(programs.chunks.len() > 3);
    for program in &programs.chunks {
        let body = program.body_value().to_string();
        assert!(!body.contains(SECRET), "{}: {body}", program.id);
    }
    engine.shutdown().await;
}
