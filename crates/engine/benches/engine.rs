//! The engine's figures (docs/performance.md):
//!
//! * `engine/run_await_trivial`: `run` + `await` of a program that commits
//!   one output, beside `engine/spawn_bin_true` (the OS's own cost of a
//!   process), so the engine's share is visible.
//! * `engine/scope_over_stdio`: one `scope` request from a program to its
//!   response, timed inside the program.
//! * `engine/200_processes`: 200 runs at once, all awaited.
//! * `engine/commit_to_1000_subscriptions`: a commit delivered as
//!   `scope_changed` to 1,000 subscriptions.
//! * `contain/run_await_trivial_{contained,uncontained}`: the same run and
//!   await with and without containment (Landlock, seccomp, namespaces), and
//!   `contain/added_paired`, the difference measured pair by pair.
//! * `contain/after_a_pause_paired`: what a contained run saves, after a
//!   pause, by its trampoline being born in its control groups (forked by
//!   the groups' stem) instead of moving into them at its start (both
//!   sides printed).
//!
//! Every figure but the `contain/` ones runs programs uncontained, to measure the
//! engine alone.
//!
//! When the engine starts this binary as a program (`HC_PROCESS_ID` set), it
//! is that program instead of the benchmark.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use criterion::{Criterion, criterion_group};
use engine::{Context, Engine, EngineConfig};
use protocol::{Client, RunArgs, SubscribeOpts};
use serde_json::json;
use std::sync::Arc;
use std::time::{Duration, Instant};
use substrate::{ChunkDecl, Declaration, NewPlacement, ScopeOpts, Substrate};

fn main() {
    if let Some(me) = protocol::env::process_id() {
        program(&me);
        return;
    }
    benches();
    Criterion::default().configure_from_args().final_summary();
}

/// The programs: `trivial` commits one output; `scope-loop N` times N
/// sequential scope requests and commits the total.
fn program(me: &str) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let mode: Vec<String> = std::env::args().skip(1).collect();
    rt.block_on(async {
        let (engine, _events) = Client::from_stdio();
        let mut data = json!({});
        if mode[0] == "scope-loop" {
            let n: u32 = mode[1].parse().unwrap();
            let started = Instant::now();
            for _ in 0..n {
                engine.scope(&[me], ScopeOpts::default()).await.unwrap();
            }
            data = json!({"nanos": started.elapsed().as_nanos() as u64});
        }
        let out = ChunkDecl::generated()
            .body(json!({"text": "done", "data": data}))
            .on(NewPlacement::instance(me))
            .on(NewPlacement::instance("engine/output"));
        engine.commit(Declaration::of(vec![out])).await.unwrap();
    });
    rt.shutdown_background();
}

struct Setup {
    _dir: tempfile::TempDir,
    engine: Engine,
    rt: tokio::runtime::Runtime,
}

fn setup() -> Setup {
    setup_with(engine::contain::Containment::Off)
}

fn setup_with(containment: engine::contain::Containment) -> Setup {
    setup_with_config(containment, |_| {})
}

fn setup_with_config(
    containment: engine::contain::Containment,
    tweak: impl FnOnce(&mut EngineConfig),
) -> Setup {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let db = Arc::new(Substrate::open(dir.path().join("substrate.db")).unwrap());
    db.init(engine::vocabulary()).unwrap();
    let exe = std::env::current_exe().unwrap();
    for (name, args) in [
        ("trivial", json!(["trivial"])),
        ("scope-loop", json!(["scope-loop"])),
    ] {
        db.commit(
            Declaration::of(vec![
                ChunkDecl::with_id(format!("program/{name}"))
                    .name(name)
                    .spec(json!({"propagate": true, "accepts": []}))
                    .body(json!({"executable": exe, "args": args, "runtime": "vm", "boundary": "open", "timeout_ms": 600_000}))
                    .on(NewPlacement::instance("engine/program")),
            ]),
            None,
        )
        .unwrap();
    }
    let mut config = EngineConfig::new(dir.path());
    config.containment = containment;
    tweak(&mut config);
    let engine = rt.block_on(async { Engine::open_with(db, config).unwrap() });
    Setup {
        _dir: dir,
        engine,
        rt,
    }
}

fn run_and_await(s: &Setup, program: &str, args: RunArgs) -> substrate::ScopeResult {
    s.rt.block_on(async {
        let p = s.engine.run(&Context::host(), program, args).unwrap();
        let mut done = s
            .engine
            .await_processes(&Context::host(), std::slice::from_ref(&p))
            .await
            .unwrap();
        let result = done.remove(&p).unwrap();
        assert_eq!(result.scopes[0].body_value()["status"], "completed");
        result
    })
}

fn processes(c: &mut Criterion) {
    let s = setup();
    c.bench_function("engine/run_await_trivial", |b| {
        b.iter(|| run_and_await(&s, "trivial", RunArgs::default()))
    });
    c.bench_function("engine/spawn_bin_true", |b| {
        b.iter(|| std::process::Command::new("/bin/true").status().unwrap())
    });
    let mut group = c.benchmark_group("engine");
    group.sample_size(10);
    group.bench_function("200_processes", |b| {
        b.iter(|| {
            s.rt.block_on(async {
                let ids: Vec<String> = (0..200)
                    .map(|_| {
                        s.engine
                            .run(&Context::host(), "trivial", RunArgs::default())
                            .unwrap()
                    })
                    .collect();
                let done = s
                    .engine
                    .await_processes(&Context::host(), &ids)
                    .await
                    .unwrap();
                assert!(
                    done.values()
                        .all(|r| r.scopes[0].body_value()["status"] == "completed")
                );
            })
        })
    });
    group.finish();
}

fn scope_over_stdio(c: &mut Criterion) {
    let s = setup();
    c.bench_function("engine/scope_over_stdio", |b| {
        b.iter_custom(|iters| {
            let args = RunArgs::default();
            // the program's argv carries the count: a program per sample
            s.rt.block_on(async {
                s.engine
                    .db()
                    .commit(
                        Declaration::of(vec![
                            ChunkDecl::with_id("program/scope-loop")
                                .merge_body(json!({"args": ["scope-loop", iters.to_string()]})),
                        ]),
                        None,
                    )
                    .unwrap();
            });
            let done = run_and_await(&s, "scope-loop", args);
            let out = done
                .chunks
                .iter()
                .find(|c| c.is_on("engine/output", substrate::PlacementType::Instance))
                .unwrap();
            Duration::from_nanos(out.body_value()["data"]["nanos"].as_u64().unwrap())
        })
    });
}

fn subscriptions(c: &mut Criterion) {
    let s = setup();
    s.engine
        .db()
        .commit(Declaration::of(vec![ChunkDecl::with_id("watched")]), None)
        .unwrap();
    let mut streams: Vec<engine::EventStream> = (0..1000)
        .map(|_| {
            let id = s
                .engine
                .subscribe(
                    &Context::host(),
                    &["watched".to_owned()],
                    SubscribeOpts::default(),
                )
                .unwrap();
            s.engine.events(&id).unwrap()
        })
        .collect();
    let mut n = 0u64;
    c.bench_function("engine/commit_to_1000_subscriptions", |b| {
        b.iter(|| {
            n += 1;
            s.rt.block_on(async {
                s.engine
                    .db()
                    .commit(
                        Declaration::of(vec![
                            ChunkDecl::with_id("watched").merge_body(json!({"n": n})),
                        ]),
                        None,
                    )
                    .unwrap();
                for stream in &mut streams {
                    stream.recv().await.unwrap();
                }
            })
        })
    });
}

fn containment(c: &mut Criterion) {
    let contained = setup_with(engine::contain::Containment::On {
        exe: env!("CARGO_BIN_EXE_hc-contain-test").into(),
        args: Vec::new(),
    });
    let uncontained = setup();
    let mut group = c.benchmark_group("contain");
    group.bench_function("run_await_trivial_contained", |b| {
        b.iter(|| run_and_await(&contained, "trivial", RunArgs::default()))
    });
    group.bench_function("run_await_trivial_uncontained", |b| {
        b.iter(|| run_and_await(&uncontained, "trivial", RunArgs::default()))
    });
    // The figure itself, paired: each sample runs one of each, back to back,
    // and counts only the difference, so the machine's drift between two
    // separately timed benchmarks does not enter it.
    group.bench_function("added_paired", |b| {
        b.iter_custom(|iters| {
            let mut added = Duration::ZERO;
            for _ in 0..iters {
                let start = Instant::now();
                run_and_await(&contained, "trivial", RunArgs::default());
                let with = start.elapsed();
                let start = Instant::now();
                run_and_await(&uncontained, "trivial", RunArgs::default());
                added += with.saturating_sub(start.elapsed());
            }
            added
        })
    });
    group.finish();
}

/// What a run's bounds cost where the machine gives hc control groups,
/// after a pause (a model's reply takes longer than the kernel's grace
/// period, so each tool run meets the groups cold): a contained run and
/// await, its trampoline forked by its group's stem, born there (the
/// default), against the same run whose trampoline moves into the group
/// at its start — pair by pair, the pauses not counted.
fn bounds(c: &mut Criterion) {
    if engine::contain::bounds::Cgroups::detect().is_none() {
        eprintln!("contain/after_a_pause_paired: no control groups here; bounded by rlimits");
        return;
    }
    let contained = || engine::contain::Containment::On {
        exe: env!("CARGO_BIN_EXE_hc-contain-test").into(),
        args: Vec::new(),
    };
    let ahead = setup_with(contained());
    let joining = setup_with_config(contained(), |config| config.levers.no_stems = true);
    let pause = || std::thread::sleep(Duration::from_millis(150));
    let mut sides = (Vec::new(), Vec::new());
    c.benchmark_group("contain")
        .sample_size(20)
        .bench_function("after_a_pause_paired", |b| {
            b.iter_custom(|iters| {
                let mut saved = Duration::ZERO;
                for _ in 0..iters {
                    pause();
                    let start = Instant::now();
                    run_and_await(&ahead, "trivial", RunArgs::default());
                    let with = start.elapsed();
                    pause();
                    let start = Instant::now();
                    run_and_await(&joining, "trivial", RunArgs::default());
                    let without = start.elapsed();
                    sides.0.push(with);
                    sides.1.push(without);
                    saved += without.saturating_sub(with);
                }
                saved
            })
        });
    let median = |v: &mut Vec<Duration>| {
        v.sort();
        v.get(v.len() / 2).copied().unwrap_or_default()
    };
    println!(
        "contain/after_a_pause: {:.2} ms born in the group, {:.2} ms moving into it at the start (medians of {} pairs)",
        median(&mut sides.0).as_secs_f64() * 1e3,
        median(&mut sides.1).as_secs_f64() * 1e3,
        sides.0.len()
    );
}

criterion_group!(
    benches,
    processes,
    scope_over_stdio,
    subscriptions,
    containment,
    bounds
);
