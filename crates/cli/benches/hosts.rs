//! Many hosts on one PostgreSQL server (docs/performance.md, issue 36): the
//! release `hc`, a throwaway cluster over TCP on 127.0.0.1, the fake model
//! answering at once. Each "host" is a checkout of its own (a clone of one
//! repository) with its own `HC_HOST`, its worker a process of its own.
//!
//! * Printed: 24 background runs of two turns each (a contained `read`,
//!   then the answer), queued first, then taken by 1, 2 and 3 workers
//!   (`--max 4` each) — runs per second and the mean gap between a run's
//!   two requests.
//! * Printed: a worker killed -9 mid-run (`lease_seconds = 2`) to its run
//!   failed by another host's worker — the time, over five rounds.
//! * `hosts/queued_here_to_request_there`: from `hc run --bg` on one host
//!   to the fake receiving the run's first request from another host's
//!   worker (the follow between hosts, the claim and the agent's start).
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use testkit::{FakeModel, PgCluster, Script};

mod common;

use common::{mean_gap, queued_to_first, quiet, until_requests};

const RUNS: usize = 24;

/// In round R, run `rR job KK go` reads a file, then answers; a run
/// `slow` waits for its answer; any other prompt is answered at once.
/// Each turn is taken once.
fn script() -> Script {
    let mut turns: Vec<Value> = Vec::new();
    for round in 1..=3 {
        for k in 1..=RUNS {
            turns.push(json!({"when": format!("r{round} job {k:02} go"), "reply": {"content": [
                {"type": "tool_use", "id": format!("r{round}t{k:02}_r"), "name": "read", "input": {"file_path": "notes.txt"}}
            ], "stop_reason": "tool_use"}}));
            turns.push(
                json!({"when": format!("r{round}t{k:02}_r"), "reply": {"content": [
                {"type": "text", "text": "done"}], "stop_reason": "end_turn"}}),
            );
        }
    }
    for _ in 0..5 {
        turns.push(
            json!({"when": "slow", "reply": {"content": [{"type": "text", "text": "late"}]},
            "pace": {"first_byte_delay_ms": 600_000}}),
        );
    }
    let quick =
        json!({"reply": {"content": [{"type": "text", "text": "ok"}], "stop_reason": "end_turn"}});
    turns.extend(std::iter::repeat_n(quick, 5000));
    Script::from_json(&json!({"turns": turns}).to_string()).unwrap()
}

/// Hosts: checkouts of one repository sharing the server as one project.
struct Hosts {
    _dir: tempfile::TempDir,
    roots: Vec<PathBuf>,
    store: String,
    base_url: String,
}

fn git(dir: &Path, args: &[&str]) {
    let ok = Command::new("git")
        .args(["-c", "user.name=b", "-c", "user.email=b@b"])
        .args(args)
        .current_dir(dir)
        .stdout(Stdio::null())
        .status()
        .unwrap();
    assert!(ok.success(), "git {args:?}");
}

impl Hosts {
    fn new(n: usize, cluster: &PgCluster, fake: &FakeModel, project: &str) -> Hosts {
        let dir = tempfile::tempdir().unwrap();
        let seed = dir.path().join("seed");
        std::fs::create_dir_all(&seed).unwrap();
        git(&seed, &["init", "-q"]);
        std::fs::write(seed.join("notes.txt"), "notes\n").unwrap();
        git(&seed, &["add", "notes.txt"]);
        git(&seed, &["commit", "-qm", "notes"]);
        let mut hosts = Hosts {
            roots: Vec::new(),
            store: format!("{}&schema=hc_{project}", cluster.url("postgres")),
            base_url: fake.base_url(),
            _dir: dir,
        };
        for i in 0..n {
            let root = hosts._dir.path().join(format!("host{i}"));
            git(
                hosts._dir.path(),
                &["clone", "-q", "seed", &format!("host{i}")],
            );
            let conf = root.join(".person/hermitcrab");
            std::fs::create_dir_all(&conf).unwrap();
            std::fs::write(conf.join("config.toml"), "lease_seconds = 2\n").unwrap();
            hosts.roots.push(root);
            assert!(hosts.hc(i, &["init"]).status().unwrap().success());
        }
        hosts
    }

    fn hc(&self, i: usize, args: &[&str]) -> Command {
        let root = &self.roots[i];
        let mut command = quiet(root, &self.base_url, args);
        command
            .env("HC_STORE", &self.store)
            .env("HC_HOST", format!("host-{i}"))
            .env("XDG_CONFIG_HOME", root.join(".person"))
            .env_remove("HC_PROJECT");
        command
    }

    fn worker(&self, i: usize, extra: &[&str]) -> Child {
        let mut args = vec!["worker", "--max", "4"];
        args.extend_from_slice(extra);
        let child = self.hc(i, &args).spawn().unwrap();
        std::thread::sleep(Duration::from_millis(300));
        child
    }

    fn queue(&self, i: usize, prompt: &str) {
        let args = ["run", "--bg", "--no-worktree", "--allow", "read", prompt];
        assert!(self.hc(i, &args).status().unwrap().success());
    }
}

fn stop(mut child: Child) {
    let _ = child.kill();
    let _ = child.wait();
}

/// The 24 runs, queued first (a worker asking for a label no run has
/// holds host 0's lock meanwhile, so none is started), then taken by `n`
/// workers: runs per second and the mean turn gap.
fn spread(cluster: &PgCluster, fake: &FakeModel, n: usize) -> (f64, Duration) {
    let hosts = Hosts::new(n, cluster, fake, &format!("spread{n}"));
    let holder = hosts.worker(0, &["--labels", "nobody"]);
    for k in 1..=RUNS {
        hosts.queue(0, &format!("r{n} job {k:02} go"));
    }
    stop(holder);
    fake.clear_requests();
    let started = Instant::now();
    let workers: Vec<Child> = (0..n).map(|i| hosts.worker(i, &[])).collect();
    until_requests(fake, RUNS * 2);
    let took = started.elapsed();
    let gap = mean_gap(fake);
    workers.into_iter().for_each(stop);
    (RUNS as f64 / took.as_secs_f64(), gap)
}

/// A worker on host 1 killed -9 mid-run; host 0's worker fails the run:
/// how long after the kill, as the record says.
fn lost_to_failed(cluster: &PgCluster, fake: &FakeModel, round: usize) -> Duration {
    let hosts = Hosts::new(2, cluster, fake, &format!("lost{round}"));
    let beside = hosts.roots[0].join("beside.db");
    let schema = format!("hc_lost{round}");
    let db = substrate::Substrate::open_postgres(
        &cluster.url("postgres"),
        &schema,
        Default::default(),
        &beside,
    )
    .unwrap();
    let holder = hosts.worker(0, &["--labels", "nobody"]);
    let taker = hosts.worker(1, &[]);
    fake.clear_requests();
    hosts.queue(0, "slow");
    until_requests(fake, 1);
    // (the holder, a worker too, looks for gone engines every second)
    let killed = Instant::now();
    stop(taker);
    let deadline = Instant::now() + Duration::from_secs(60);
    let took = loop {
        let lost = db
            .read(|snap| {
                let found = snap.scope(&["engine/process".to_owned()], &Default::default())?;
                Ok::<_, substrate::Error>(found.chunks.iter().any(|c| {
                    let body = c.body_value();
                    body["placement"].is_object() && body["error"] == "engine lost"
                }))
            })
            .unwrap();
        if lost || Instant::now() > deadline {
            break lost.then(|| killed.elapsed());
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    stop(holder);
    took.expect("the run was never found lost")
}

fn hosts(c: &mut Criterion) {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let fake = rt.block_on(FakeModel::start(script())).unwrap();
    let cluster = PgCluster::start().unwrap();
    for n in 1..=3 {
        let (per_second, gap) = spread(&cluster, &fake, n);
        println!(
            "hosts/spread_{n}_workers: {RUNS} runs of two turns, {per_second:.2} runs/s, turn gap \
             {:.2} ms",
            gap.as_secs_f64() * 1e3
        );
    }
    let mut lost: Vec<Duration> = (0..5).map(|r| lost_to_failed(&cluster, &fake, r)).collect();
    lost.sort();
    println!(
        "hosts/lost_to_failed (lease 2 s): median {:.2} s, most {:.2} s",
        lost[2].as_secs_f64(),
        lost[4].as_secs_f64()
    );
    let hosts = Hosts::new(2, &cluster, &fake, "follow");
    let holder = hosts.worker(0, &["--labels", "nobody"]);
    let there = hosts.worker(1, &[]);
    let mut group = c.benchmark_group("hosts");
    group
        .sample_size(20)
        .measurement_time(Duration::from_secs(10));
    let mut n = 0;
    group.bench_function("queued_here_to_request_there", |b| {
        b.iter_custom(|iters| {
            queued_to_first(&fake, &mut n, iters, |prompt| hosts.queue(0, prompt))
        })
    });
    group.finish();
    stop(there);
    stop(holder);
}

criterion_group!(benches, hosts);
criterion_main!(benches);
