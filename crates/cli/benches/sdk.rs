//! An Agent SDK program, whole, on `hc` and on the Claude Code the SDK
//! bundles (docs/performance.md): Python's `claude-agent-sdk` (its
//! wheel, which carries Claude Code; pinned, in a venv under `target/`,
//! installed by the first run) runs `query()` of one tool turn — the
//! model calls `Bash` (`echo hi`, allowed by `allowed_tools`), then
//! answers — against the fake model answering at once, with `cli_path` =
//! the release `hc`, then = the bundled `claude`, alternating, in the same
//! run. `sdk/paired` prints the medians of each and of the differences;
//! `sdk/query_hc` and `sdk/query_claude_code` are the criterion groups.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::json;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use testkit::{FakeModel, Script};

mod common;

const SDK: &str = "claude-agent-sdk==0.2.189";

const PROGRAM: &str = r#"
import sys, time, anyio
from claude_agent_sdk import query, ClaudeAgentOptions
async def main():
    opts = ClaudeAgentOptions(cli_path=sys.argv[1], allowed_tools=["Bash"])
    started = time.monotonic()
    async for m in query(prompt="say hi", options=opts):
        if type(m).__name__ == "ResultMessage":
            assert m.result == "done: hi", m
    print(time.monotonic() - started)
anyio.run(main)
"#;

/// The venv with the SDK's wheel; answers its python and the bundled claude.
fn venv() -> (PathBuf, PathBuf) {
    let venv = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("bench-sdk-python");
    let python = venv.join("bin/python");
    let ready = venv.join(".installed");
    if std::fs::read_to_string(&ready).ok().as_deref() != Some(SDK) {
        let ok = std::process::Command::new("python3")
            .args(["-m", "venv"])
            .arg(&venv)
            .status()
            .unwrap();
        assert!(ok.success());
        let out = std::process::Command::new(&python)
            .args(["-m", "pip", "install", "-q", SDK])
            .output()
            .unwrap();
        assert!(out.status.success(), "pip install {SDK}: {out:?}");
        std::fs::write(&ready, SDK).unwrap();
    }
    let site = std::process::Command::new(&python)
        .args([
            "-c",
            "import claude_agent_sdk, os; print(os.path.dirname(claude_agent_sdk.__file__))",
        ])
        .output()
        .unwrap();
    let dir = String::from_utf8(site.stdout).unwrap();
    (python, PathBuf::from(dir.trim()).join("_bundled/claude"))
}

/// One run of the program with `cli`, in `root`: its wall time.
fn run(python: &Path, cli: &Path, root: &Path, fake: &FakeModel) -> Duration {
    run_timed(python, cli, root, fake).0
}

/// One run: its wall time, and the time `query()` took in it (the CLI's
/// part: the Python interpreter and the SDK's import left out).
fn run_timed(python: &Path, cli: &Path, root: &Path, fake: &FakeModel) -> (Duration, f64) {
    let started = Instant::now();
    let out = std::process::Command::new(python)
        .arg(root.join("program.py"))
        .arg(cli)
        .current_dir(root)
        .env("ANTHROPIC_BASE_URL", fake.base_url())
        .env("ANTHROPIC_API_KEY", "bench-key")
        .env("HOME", root.join("home"))
        .env("XDG_CONFIG_HOME", root.join("home/.config"))
        .env("XDG_DATA_HOME", root.join("home/.local/share"))
        .env("DISABLE_TELEMETRY", "1")
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .output()
        .unwrap();
    let took = started.elapsed();
    assert!(
        out.status.success(),
        "{}: {}",
        cli.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    let query: f64 = String::from_utf8_lossy(&out.stdout)
        .trim()
        .parse()
        .unwrap_or(0.0);
    (took, query * 1e3)
}

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    xs[xs.len() / 2]
}

fn bench(c: &mut Criterion) {
    let (python, claude) = venv();
    let hc = PathBuf::from(common::HC);
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let script = json!({"cycle": true, "turns": [
        {"reply": {"content": [{"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "echo hi"}}],
                   "stop_reason": "tool_use", "usage": {"input_tokens": 10, "output_tokens": 5}}},
        {"reply": {"content": [{"type": "text", "text": "done: hi"}], "stop_reason": "end_turn",
                   "usage": {"input_tokens": 12, "output_tokens": 3}}}
    ]});
    let fake = runtime
        .block_on(FakeModel::start(
            Script::from_json(&script.to_string()).unwrap(),
        ))
        .unwrap();
    let project = common::project();
    let root = project.path();
    std::fs::create_dir_all(root.join("home")).unwrap();
    std::fs::write(root.join("program.py"), PROGRAM).unwrap();
    // once each first: Claude Code makes its files, hc its session store
    run(&python, &claude, root, &fake);
    run(&python, &hc, root, &fake);
    let pairs: usize = std::env::var("PAIRS")
        .ok()
        .and_then(|p| p.parse().ok())
        .unwrap_or(10);
    let (mut h, mut k, mut hq, mut kq) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for _ in 0..pairs {
        let (whole, query) = run_timed(&python, &hc, root, &fake);
        h.push(whole.as_secs_f64() * 1e3);
        hq.push(query);
        let (whole, query) = run_timed(&python, &claude, root, &fake);
        k.push(whole.as_secs_f64() * 1e3);
        kq.push(query);
    }
    println!(
        "sdk/paired ({pairs} pairs, medians): the whole program: hc {:.0} ms, Claude Code {:.0} ms; \
         query() alone (the CLI's part): hc {:.0} ms, Claude Code {:.0} ms",
        median(h),
        median(k),
        median(hq),
        median(kq)
    );
    let mut group = c.benchmark_group("sdk");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(30));
    group.bench_function("query_hc", |b| {
        b.iter_custom(|iters| (0..iters).map(|_| run(&python, &hc, root, &fake)).sum())
    });
    group.bench_function("query_claude_code", |b| {
        b.iter_custom(|iters| (0..iters).map(|_| run(&python, &claude, root, &fake)).sum())
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
