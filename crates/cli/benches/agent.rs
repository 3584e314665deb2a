//! The agent's figures through the whole process (README, "Performance"):
//! the release `hc run` against the fake model answering at once, tools
//! contained through `hc-contain`.
//!
//! * `agent/turn_gap`: the gap between consecutive model requests of a run
//!   whose every turn calls `shell` with `echo turn-N` — the harness and a
//!   contained tool run (one sample: the gaps of one 20-turn run, averaged).
//! * `agent/first_request`: from starting `hc run` to the fake receiving
//!   its first request.
//! * Peak RSS of the whole process tree during the 20-turn run (sampled
//!   every millisecond from `/proc`), printed.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::json;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use testkit::{FakeModel, Script};

const HC: &str = env!("CARGO_BIN_EXE_hc");
const TURNS: usize = 20;

fn script() -> Script {
    let mut turns = Vec::new();
    for n in 1..=TURNS {
        turns.push(json!({"reply": {"content": [
            {"type": "tool_use", "id": format!("toolu_{n}"), "name": "shell", "input": {"command": format!("echo turn-{n}")}}
        ], "stop_reason": "tool_use", "usage": {"input_tokens": 10, "output_tokens": 5}}}));
    }
    turns.push(json!({"reply": {"content": [{"type": "text", "text": "done"}], "stop_reason": "end_turn"}}));
    Script::from_json(&json!({"cycle": true, "turns": turns}).to_string()).unwrap()
}

fn project() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let ok = std::process::Command::new(HC)
        .arg("init")
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(ok.status.success());
    dir
}

fn hc_run(root: &Path, base_url: &str, prompt: &str) -> std::process::Child {
    std::process::Command::new(HC)
        .args(["run", "--permission-mode", "bypass", prompt])
        .current_dir(root)
        .env("ANTHROPIC_BASE_URL", base_url)
        .env_remove("ANTHROPIC_API_KEY")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap()
}

/// Every process whose ancestry leads to `root` (and `root`).
fn tree_rss_kb(root: u32) -> u64 {
    let mut parent = std::collections::HashMap::new();
    let mut rss = std::collections::HashMap::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(status) = std::fs::read_to_string(format!("/proc/{pid}/status")) else {
            continue;
        };
        let field = |name: &str| {
            status
                .lines()
                .find(|l| l.starts_with(name))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse::<u64>().ok())
        };
        if let Some(ppid) = field("PPid:") {
            parent.insert(pid, ppid as u32);
        }
        rss.insert(pid, field("VmRSS:").unwrap_or(0));
    }
    rss.iter()
        .filter(|(pid, _)| {
            let mut at = **pid;
            for _ in 0..64 {
                if at == root {
                    return true;
                }
                match parent.get(&at) {
                    Some(&up) if up != at => at = up,
                    _ => return false,
                }
            }
            false
        })
        .map(|(_, kb)| kb)
        .sum()
}

/// One 20-turn run: the mean gap between its requests, and the peak RSS.
fn one_run(fake: &FakeModel, root: &Path) -> (Duration, u64) {
    fake.clear_requests();
    let mut child = hc_run(root, &fake.base_url(), "go");
    let mut peak = 0;
    while child.try_wait().unwrap().is_none() {
        peak = peak.max(tree_rss_kb(child.id()));
        std::thread::sleep(Duration::from_millis(1));
    }
    let times: Vec<Instant> = fake
        .requests_to("/v1/messages")
        .iter()
        .map(|r| r.received)
        .collect();
    assert_eq!(times.len(), TURNS + 1, "one request a turn");
    let gaps: Vec<Duration> = times.windows(2).map(|w| w[1] - w[0]).collect();
    (gaps.iter().sum::<Duration>() / gaps.len() as u32, peak)
}

fn agent(c: &mut Criterion) {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let fake = rt.block_on(FakeModel::start(script())).unwrap();
    let dir = project();
    let root: PathBuf = dir.path().to_path_buf();
    let mut peak = 0;
    let mut group = c.benchmark_group("agent");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(20));
    group.bench_function("turn_gap", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                let (gap, rss) = one_run(&fake, &root);
                peak = peak.max(rss);
                total += gap;
            }
            total
        })
    });
    group.bench_function("first_request", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                fake.clear_requests();
                let started = Instant::now();
                let mut child = hc_run(&root, &fake.base_url(), "go");
                while fake.requests_to("/v1/messages").is_empty() {
                    std::thread::sleep(Duration::from_micros(200));
                }
                let first = fake.requests_to("/v1/messages")[0].received - started;
                if std::env::var_os("HC_BENCH_DEBUG").is_some() {
                    eprintln!("first request after {first:?}; run total so far");
                }
                total += first;
                // to its end, so the script stays in step
                let _ = child.wait();
            }
            total
        })
    });
    group.finish();
    println!(
        "agent/peak_rss_of_the_process_tree: {:.1} MB (over the turn_gap runs)",
        peak as f64 / 1024.0
    );
}

criterion_group!(benches, agent);
criterion_main!(benches);
