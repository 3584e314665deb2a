//! The MCP figures (docs/performance.md), against
//! `@modelcontextprotocol/server-everything` over stdio (installed once by
//! npm into `target/bench-data/mcp`):
//!
//! * `mcp/echo/hermitcrab`: a call of its `echo` tool as the agent makes
//!   it — a run of `mcp__everything__echo`, served by the contained `mcp`
//!   service (started once), awaited; `mcp/echo/rmcp` the same call made
//!   directly with `rmcp` from this process. The difference is what the
//!   service path costs.
//! * `mcp/start/hermitcrab`: a fresh engine's `service` op for the server,
//!   answered once its tools are committed (spawn, contain, initialize,
//!   `tools/list`, commit, ready); `mcp/start/rmcp` the server's own
//!   start-up beside it (spawn, initialize, `tools/list` from here).
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use criterion::{Criterion, criterion_group, criterion_main};
use engine::{Context, Engine, EngineConfig};
use mcp::config::{Server, Transport};
use protocol::RunArgs;
use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use serde_json::json;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};
use substrate::{ChunkDecl, NewPlacement, Substrate};

mod common;

use common::HC;

const EVERYTHING: &str = "@modelcontextprotocol/server-everything@2026.8.31";

/// The server's entry point, installed when missing.
fn everything() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target/bench-data/mcp");
    let entry = dir.join("node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    if !entry.exists() {
        std::fs::create_dir_all(&dir).unwrap();
        let ok = std::process::Command::new("npm")
            .args(["install", "--no-audit", "--no-fund", "--prefix"])
            .arg(&dir)
            .arg(EVERYTHING)
            .status()
            .unwrap();
        assert!(ok.success(), "npm install {EVERYTHING}");
    }
    entry.canonicalize().unwrap()
}

fn server() -> Server {
    Server {
        name: "everything".into(),
        transport: Transport::Stdio {
            command: "node".into(),
            args: vec![everything().to_string_lossy().into_owned(), "stdio".into()],
            env: Default::default(),
            cwd: None,
        },
        startup_timeout_ms: 30_000,
        tool_timeout_ms: 60_000,
        interactive: false,
        oauth_store: None,
    }
}

struct Setup {
    rt: tokio::runtime::Runtime,
    dir: tempfile::TempDir,
    db: Arc<Substrate>,
}

impl Setup {
    /// A project with the server registered as `hc` registers it.
    fn new() -> Setup {
        let dir = common::project();
        let db = Arc::new(Substrate::open(dir.path().join(".hermitcrab/substrate.db")).unwrap());
        db.commit(
            substrate::Declaration::of(vec![
                ChunkDecl::with_id("program/mcp/everything")
                    .name("mcp/everything")
                    .body(json!({
                        "executable": "builtin:mcp", "runtime": "service", "boundary": "open",
                        "capabilities": {"filesystem": {"read": "all", "write": []}, "network": true,
                                         "programs": ["mcp__everything__*", "mcp/everything/*"]},
                    }))
                    .on(NewPlacement::instance("engine/program")),
            ]),
            None,
        )
        .unwrap();
        let rt = tokio::runtime::Runtime::new().unwrap();
        Setup { rt, dir, db }
    }

    fn engine(&self) -> Engine {
        let mut config = EngineConfig::new(self.dir.path());
        config.builtin_exe = PathBuf::from(HC);
        config.containment = engine::contain::Containment::On {
            exe: PathBuf::from(env!("CARGO_BIN_EXE_hc-contain")),
            args: Vec::new(),
        };
        let server = serde_json::to_string(&server()).unwrap();
        config.env_values.insert(
            "program/mcp/everything".into(),
            vec![(mcp::SERVER_ENV.into(), server)],
        );
        let db = Arc::clone(&self.db);
        self.rt
            .block_on(async { Engine::open_with(db, config).unwrap() })
    }

    /// One `echo` call through the engine, awaited.
    fn echo(&self, engine: &Engine) {
        let args = RunArgs {
            chunks: vec![
                ChunkDecl::generated()
                    .body(json!({"message": "hi"}))
                    .on(NewPlacement::instance("input/mcp__everything__echo")),
            ],
            ..RunArgs::default()
        };
        self.rt.block_on(async {
            let host = Context::host();
            let p = engine.run(&host, "mcp__everything__echo", args).unwrap();
            let done = engine
                .await_processes(&host, std::slice::from_ref(&p))
                .await
                .unwrap();
            let body = done[&p].scopes[0].body_value();
            assert_eq!(body["status"], "completed", "{body}");
        });
    }
}

/// The server started directly with rmcp, initialized, its tools listed.
async fn direct() -> rmcp::service::RunningService<rmcp::service::RoleClient, ()> {
    let mut command = tokio::process::Command::new("node");
    command
        .arg(everything())
        .arg("stdio")
        .stderr(std::process::Stdio::null());
    let transport = rmcp::transport::TokioChildProcess::new(command).unwrap();
    let client = ().serve(transport).await.unwrap();
    client.list_all_tools().await.unwrap();
    client
}

fn echo(c: &mut Criterion) {
    let s = Setup::new();
    let engine = s.engine();
    s.rt.block_on(async {
        engine
            .service(&Context::host(), "mcp/everything", Some(30_000))
            .await
            .unwrap();
    });
    let mut group = c.benchmark_group("mcp/echo");
    group.measurement_time(Duration::from_secs(10));
    group.bench_function("hermitcrab", |b| b.iter(|| s.echo(&engine)));
    let client = s.rt.block_on(direct());
    group.bench_function("rmcp", |b| {
        b.iter(|| {
            s.rt.block_on(async {
                let mut params = CallToolRequestParams::new("echo");
                params.arguments = json!({"message": "hi"}).as_object().cloned();
                client.call_tool(params).await.unwrap()
            })
        })
    });
    group.finish();
    s.rt.block_on(async {
        engine.shutdown().await;
        let _ = client.cancel().await;
    });
}

fn start(c: &mut Criterion) {
    let s = Setup::new();
    let mut group = c.benchmark_group("mcp/start");
    group.sample_size(10);
    group.bench_function("hermitcrab", |b| {
        b.iter_custom(|n| {
            let mut total = Duration::ZERO;
            for _ in 0..n {
                let engine = s.engine();
                let started = Instant::now();
                s.rt.block_on(async {
                    engine
                        .service(&Context::host(), "mcp/everything", Some(30_000))
                        .await
                        .unwrap();
                });
                total += started.elapsed();
                s.rt.block_on(engine.shutdown());
            }
            total
        })
    });
    group.bench_function("rmcp", |b| {
        b.iter_custom(|n| {
            let mut total = Duration::ZERO;
            for _ in 0..n {
                let started = Instant::now();
                let client = s.rt.block_on(direct());
                total += started.elapsed();
                s.rt.block_on(async {
                    let _ = client.cancel().await;
                });
            }
            total
        })
    });
    group.finish();
}

criterion_group!(benches, echo, start);
criterion_main!(benches);
