//! Agents in the background (docs/performance.md, issue 35): the release
//! `hc` against the fake model answering at once.
//!
//! * `background/bg_returns` and `background/bg_returns_worktree`: `hc run
//!   --bg` from its start to its exit (a worker already running, so none is
//!   started) — in the project's directory, and asking for a worktree of
//!   its own (the git checks `hc` makes before queueing).
//! * `background/queued_to_first_request`: from starting `hc run --bg` to
//!   the fake receiving the run's first request, a worker running.
//! * Printed: twenty background runs of twenty contained `shell` turns each
//!   (`max_background` 4, on this machine's cores) — the total time and the
//!   mean gap between a run's consecutive requests — beside the same twenty
//!   runs in sequence in the foreground.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::{Value, json};
use std::path::Path;
use std::process::{Child, Command};
use std::time::{Duration, Instant};
use testkit::{FakeModel, Script};

mod common;

use common::{mean_gap, project, queued_to_first, quiet as hc, until_requests};

const RUNS: usize = 20;
const TURNS: usize = 20;

/// Each run `job KK go` calls `shell` TURNS times, then ends; its turns
/// found by the id of its last call (ids of fixed width: none is a part of
/// another).
fn script() -> Script {
    let mut turns: Vec<Value> = Vec::new();
    for k in 1..=RUNS {
        for n in 1..=TURNS {
            let when = match n {
                1 => format!("job {k:02} go"),
                n => format!("t{k:02}_{:02}", n - 1),
            };
            turns.push(json!({"when": when, "reply": {"content": [
                {"type": "tool_use", "id": format!("t{k:02}_{n:02}"), "name": "shell", "input": {"command": format!("echo {k}-{n}")}}
            ], "stop_reason": "tool_use", "usage": {"input_tokens": 10, "output_tokens": 5}}}));
        }
        turns.push(
            json!({"when": format!("t{k:02}_{TURNS:02}"), "reply": {"content": [
            {"type": "text", "text": "done"}], "stop_reason": "end_turn"}}),
        );
    }
    Script::from_json(&json!({"cycle": true, "turns": turns}).to_string()).unwrap()
}

/// One turn, again and again: the one-turn runs the other figures start
/// (a project and a worker of their own: the twenty runs' script cycles
/// only once every turn of it is taken).
fn quick_script() -> Script {
    let turn =
        json!({"reply": {"content": [{"type": "text", "text": "ok"}], "stop_reason": "end_turn"}});
    Script::from_json(&json!({"cycle": true, "turns": [turn]}).to_string()).unwrap()
}

/// The project a git repository with one commit.
fn repository(root: &Path) {
    for args in [
        vec!["init", "-q"],
        vec![
            "-c",
            "user.name=b",
            "-c",
            "user.email=b@b",
            "commit",
            "-q",
            "--allow-empty",
            "-m",
            "start",
        ],
    ] {
        assert!(
            Command::new("git")
                .args(&args)
                .current_dir(root)
                .status()
                .unwrap()
                .success()
        );
    }
}

/// Waits until the fake has had no request for a second.
fn until_idle(fake: &FakeModel) {
    let mut seen = usize::MAX;
    loop {
        let now = fake.requests_to("/v1/messages").len();
        if now == seen {
            return;
        }
        seen = now;
        std::thread::sleep(Duration::from_secs(1));
    }
}

/// Twenty runs in the background (`hc run --bg`, taken by the worker) or
/// in sequence (`hc run`): total time and mean turn gap.
fn twenty(fake: &FakeModel, root: &Path, background: bool) -> (Duration, Duration) {
    fake.clear_requests();
    let started = Instant::now();
    for k in 1..=RUNS {
        let prompt = format!("job {k:02} go");
        let args: Vec<&str> = match background {
            true => vec![
                "run",
                "--bg",
                "--no-worktree",
                "--permission-mode",
                "bypass",
                &prompt,
            ],
            false => vec!["run", "--permission-mode", "bypass", &prompt],
        };
        assert!(
            hc(root, &fake.base_url(), &args)
                .status()
                .unwrap()
                .success()
        );
    }
    until_requests(fake, RUNS * (TURNS + 1));
    let total = started.elapsed();
    (total, mean_gap(fake))
}

/// The fake serving `script`, a project that is a git repository, and a
/// worker taking its runs (given time to start).
fn set_up(rt: &tokio::runtime::Runtime, script: Script) -> (FakeModel, tempfile::TempDir, Child) {
    let fake = rt.block_on(FakeModel::start(script)).unwrap();
    let dir = project();
    repository(dir.path());
    let url = fake.base_url();
    let worker = hc(dir.path(), &url, &["worker", "--max", "4"])
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(500));
    (fake, dir, worker)
}

fn background(c: &mut Criterion) {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let (fake, dir, mut worker) = set_up(&rt, script());
    let root = dir.path().to_path_buf();
    // the load: background beside the same runs in sequence, alternating
    let mut rounds = Vec::new();
    for _ in 0..3 {
        rounds.push((twenty(&fake, &root, true), twenty(&fake, &root, false)));
    }
    rounds.sort_by_key(|r| (r.0).0);
    let ((bg_total, bg_gap), (seq_total, seq_gap)) = rounds[1];
    let _ = worker.kill();
    let _ = worker.wait();
    let (fake, dir, mut worker) = set_up(&rt, quick_script());
    let (root, url) = (dir.path().to_path_buf(), fake.base_url());
    println!(
        "background/twenty_runs_of_twenty_turns: in the background (max_background 4) {:.2} s, \
         turn gap {:.2} ms; in sequence {:.2} s, turn gap {:.2} ms (the middle of three rounds)",
        bg_total.as_secs_f64(),
        bg_gap.as_secs_f64() * 1e3,
        seq_total.as_secs_f64(),
        seq_gap.as_secs_f64() * 1e3
    );
    let mut group = c.benchmark_group("background");
    group
        .sample_size(20)
        .measurement_time(Duration::from_secs(10));
    for (name, extra) in [
        ("bg_returns", vec!["--no-worktree"]),
        ("bg_returns_worktree", vec![]),
    ] {
        group.bench_function(name, |b| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    let mut args = vec!["run", "--bg"];
                    args.extend(&extra);
                    args.push("quick");
                    let started = Instant::now();
                    assert!(hc(&root, &url, &args).status().unwrap().success());
                    total += started.elapsed();
                }
                total
            })
        });
    }
    // (the runs the figures above queued, done first)
    until_idle(&fake);
    let mut n = 0;
    group.bench_function("queued_to_first_request", |b| {
        b.iter_custom(|iters| {
            queued_to_first(&fake, &mut n, iters, |prompt| {
                let args = ["run", "--bg", "--no-worktree", prompt];
                assert!(hc(&root, &url, &args).status().unwrap().success());
            })
        })
    });
    group.finish();
    let _ = worker.kill();
    let _ = worker.wait();
}

criterion_group!(benches, background);
criterion_main!(benches);
