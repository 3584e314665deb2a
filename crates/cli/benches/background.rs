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
use std::collections::HashMap;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use testkit::{FakeModel, Script};

mod common;

use common::{HC, project};

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

fn hc(root: &Path, base_url: &str, args: &[&str]) -> Command {
    let mut command = Command::new(HC);
    command
        .args(args)
        .current_dir(root)
        .env("ANTHROPIC_BASE_URL", base_url)
        .env("XDG_CONFIG_HOME", root.join(".no-user-config"))
        .env("XDG_DATA_HOME", root.join(".no-user-data"))
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("HC_STORE")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    command
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

/// Waits until the fake has received `n` requests whose first message is
/// one of the runs'.
fn until_requests(fake: &FakeModel, n: usize) {
    let deadline = Instant::now() + Duration::from_secs(600);
    while fake.requests_to("/v1/messages").len() < n {
        assert!(Instant::now() < deadline, "the runs did not end");
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// When the fake received the first request of the run of `prompt`.
fn first_of(fake: &FakeModel, prompt: &str) -> Instant {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let found = fake
            .requests_to("/v1/messages")
            .into_iter()
            .find(|r| r.body["messages"][0]["content"][0]["text"].as_str() == Some(prompt));
        if let Some(r) = found {
            return r.received;
        }
        assert!(Instant::now() < deadline, "no request for {prompt}");
        std::thread::sleep(Duration::from_micros(200));
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

/// The mean gap between consecutive requests of one run, over every run.
fn mean_gap(fake: &FakeModel) -> Duration {
    let mut by_run: HashMap<String, Vec<Instant>> = HashMap::new();
    for r in fake.requests_to("/v1/messages") {
        let first = r.body["messages"][0]["content"][0]["text"]
            .as_str()
            .unwrap_or("")
            .to_owned();
        by_run.entry(first).or_default().push(r.received);
    }
    let gaps: Vec<Duration> = by_run
        .values_mut()
        .flat_map(|times| {
            times.sort();
            times.windows(2).map(|w| w[1] - w[0]).collect::<Vec<_>>()
        })
        .collect();
    gaps.iter().sum::<Duration>() / gaps.len().max(1) as u32
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

fn background(c: &mut Criterion) {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let fake = rt.block_on(FakeModel::start(script())).unwrap();
    let dir = project();
    let root = dir.path().to_path_buf();
    repository(&root);
    let url = fake.base_url();
    let mut worker: Child = hc(&root, &url, &["worker", "--max", "4"]).spawn().unwrap();
    std::thread::sleep(Duration::from_millis(500));
    // the load: background beside the same runs in sequence, alternating
    let mut rounds = Vec::new();
    for _ in 0..3 {
        rounds.push((twenty(&fake, &root, true), twenty(&fake, &root, false)));
    }
    rounds.sort_by_key(|r| (r.0).0);
    let ((bg_total, bg_gap), (seq_total, seq_gap)) = rounds[1];
    let _ = worker.kill();
    let _ = worker.wait();
    let fake = rt.block_on(FakeModel::start(quick_script())).unwrap();
    let dir = project();
    let root = dir.path().to_path_buf();
    repository(&root);
    let url = fake.base_url();
    let mut worker: Child = hc(&root, &url, &["worker", "--max", "4"]).spawn().unwrap();
    std::thread::sleep(Duration::from_millis(500));
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
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                n += 1;
                let prompt = format!("first {n}");
                let started = Instant::now();
                let args = ["run", "--bg", "--no-worktree", &prompt];
                assert!(hc(&root, &url, &args).status().unwrap().success());
                total += first_of(&fake, &prompt) - started;
            }
            total
        })
    });
    group.finish();
    let _ = worker.kill();
    let _ = worker.wait();
}

criterion_group!(benches, background);
criterion_main!(benches);
