//! What the agent knows, at a run's start (docs/performance.md):
//! `knowledge/first_request_full` — from starting `hc run` to the fake
//! receiving the first request, in a project with 50 skills, 20 command
//! files, 5 instruction files (one importing another), 20 custom agents
//! and 500 memory entries; `knowledge/first_request_bare` — the same in a
//! project with none of them. Measured one after the other against the
//! same fake, so the difference is what knowing costs; and, printed first,
//! `knowledge/paired`: the two alternating run by run (`PAIRS`, default
//! 60), the median of their differences — the figure docs/performance.md gives, as
//! the machine's drift falls on both alike. `PARTS` (default `fsam`)
//! chooses what the full project has: `f` instruction files, `s` skills,
//! `a` command files and custom agents, `m` memory. The full project's
//! files are unchanged between runs: they are the same chunks, committed
//! once.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::json;
use std::path::Path;
use std::time::{Duration, Instant};
use testkit::{FakeModel, Script};

mod common;

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// What the full project has (`PARTS`).
fn parts() -> String {
    std::env::var("PARTS").unwrap_or_else(|_| "fsam".into())
}

/// A project; with `full`, every kind of knowledge in it.
fn project(full: bool) -> tempfile::TempDir {
    let dir = common::project();
    let root = dir.path();
    if !full {
        return dir;
    }
    let parts = parts();
    let rules = "Keep functions short. Test what you change. ".repeat(40);
    if parts.contains('f') {
        for (i, sub) in ["", "a", "a/b", "a/b/c"].iter().enumerate() {
            write(
                &root.join(sub).join("AGENTS.md"),
                &format!("level {i}\n{rules}\n"),
            );
        }
        write(&root.join("docs/style.md"), &rules);
        write(
            &root.join("AGENTS.md"),
            &format!("root\n@docs/style.md\n{rules}"),
        );
    }
    if parts.contains('s') {
        for n in 0..50 {
            write(
                &root.join(format!(".claude/skills/skill-{n}/SKILL.md")),
                &format!(
                    "---\nname: skill-{n}\ndescription: Does thing {n}\n---\nSteps for {n}.\n"
                ),
            );
        }
    }
    if parts.contains('a') {
        for n in 0..20 {
            write(
                &root.join(format!(".claude/commands/command-{n}.md")),
                &format!("---\ndescription: Command {n}\n---\nDo {n} with $ARGUMENTS.\n"),
            );
            write(
                &root.join(format!(".claude/agents/agent-{n}.md")),
                &format!(
                    "---\nname: agent-{n}\ndescription: Agent {n}\ntools: Read, Grep\n---\nYou are {n}.\n"
                ),
            );
        }
    }
    if !parts.contains('m') {
        return dir;
    }
    let chunks: Vec<_> = (0..500)
        .map(|i| {
            json!({"id": format!("m_{i:04}"),
                   "body": {"text": format!("Fact {i}: the build of part {i} is `make part-{i}`."), "created": "2026-11-25T00:00:00Z"},
                   "placements": [{"scope": "memory", "type": "instance"}]})
        })
        .collect();
    common::commit_chunks(root, &chunks);
    dir
}

/// Starts `hc run` in `root`; the time until the fake got its request.
fn first_request(fake: &FakeModel, root: &Path) -> Duration {
    fake.clear_requests();
    let started = Instant::now();
    let dir = (root.join("a/b/c").canonicalize()).unwrap_or(root.to_path_buf());
    let mut child = common::run_go(root, &dir, &fake.base_url())
        .spawn()
        .unwrap();
    while fake.requests_to("/v1/messages").is_empty() {
        std::thread::sleep(Duration::from_micros(200));
    }
    let took = fake.requests_to("/v1/messages")[0].received - started;
    assert!(child.wait().unwrap().success());
    took
}

/// The median of `xs`.
fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    xs[xs.len() / 2]
}

/// Runs in `full` and `bare` alternating, pair by pair (the machine's
/// drift falls on both alike); prints the medians and the median of the
/// differences.
fn paired(fake: &FakeModel, full: &Path, bare: &Path) {
    let pairs: usize = std::env::var("PAIRS")
        .ok()
        .and_then(|p| p.parse().ok())
        .unwrap_or(60);
    let (mut f, mut b, mut d) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..pairs {
        let x = first_request(fake, full).as_secs_f64() * 1e3;
        let y = first_request(fake, bare).as_secs_f64() * 1e3;
        f.push(x);
        b.push(y);
        d.push(x - y);
    }
    println!(
        "knowledge/paired ({pairs} pairs): full {:.2} ms, bare {:.2} ms, full − bare {:.2} ms (medians)",
        median(f),
        median(b),
        median(d)
    );
}

fn bench(c: &mut Criterion) {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let script = json!({"cycle": true, "turns": [
        {"reply": {"content": [{"type": "text", "text": "done"}], "stop_reason": "end_turn"}}
    ]});
    let fake = runtime
        .block_on(FakeModel::start(
            Script::from_json(&script.to_string()).unwrap(),
        ))
        .unwrap();
    let full = project(true);
    let bare = project(false);
    std::fs::create_dir_all(bare.path().join("a/b/c")).unwrap();
    // the first run commits the files; later ones find them unchanged
    first_request(&fake, full.path());
    let body: serde_json::Value =
        serde_json::from_slice(&fake.requests_to("/v1/messages")[0].raw_body).unwrap();
    let system = body["system"].to_string();
    if parts() == "fsam" {
        assert!(
            system.contains("skill-49")
                && system.contains("Fact 499")
                && system.contains("level 3"),
            "the full project's knowledge is in the request"
        );
    }
    paired(&fake, full.path(), bare.path());
    let mut group = c.benchmark_group("knowledge");
    group
        .sample_size(20)
        .measurement_time(Duration::from_secs(15));
    for (name, dir) in [("first_request_full", &full), ("first_request_bare", &bare)] {
        group.bench_function(name, |b| {
            b.iter_custom(|iters| (0..iters).map(|_| first_request(&fake, dir.path())).sum())
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
