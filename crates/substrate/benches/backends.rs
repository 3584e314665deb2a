//! The same operations on both backends, in one run (docs/performance.md,
//! "The substrate on PostgreSQL"): SQLite's file beside PostgreSQL over a
//! Unix socket and over TCP on 127.0.0.1 (a throwaway cluster of Debian's
//! binaries, started by the bench):
//!
//! * `commit_tool_turn`: one commit of a tool turn's size (a call and its
//!   result, ~1 KiB each, on an ordered session);
//! * `scope_session_1000`: a 1,000-member ordered session read;
//! * `as_of_session_1000`: the same read as of an earlier commit;
//! * `match_one_word`: a full-text search in the same store;
//! * `follow_latency` (PostgreSQL): from one engine's commit returning to
//!   another engine's subscriber receiving it (each engine a `Substrate`
//!   of its own on the schema, as two hosts would have);
//! * commits per second from 1, 4 and 16 writers at once, each an engine
//!   of its own committing tool turns (printed: a rate, not a latency).
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::json;
use std::hint::black_box;
use substrate::{ChunkDecl, Declaration, NewPlacement, Options, ScopeOpts, Substrate};

fn vocabulary() -> Vec<ChunkDecl> {
    vec![
        ChunkDecl::with_id("session")
            .spec(json!({"propagate": true, "ordered": true, "accepts": ["prompt", "turn"]})),
        ChunkDecl::with_id("prompt").spec(json!({"required": ["text"]})),
        ChunkDecl::with_id("turn"),
    ]
}

/// A store with one 1,000-member session `s`; answers the commit after
/// its first 500 members.
fn fill(db: &Substrate) -> u64 {
    db.init(vocabulary()).unwrap();
    db.commit(
        Declaration::of(vec![
            ChunkDecl::with_id("s").on(NewPlacement::instance("session")),
            ChunkDecl::with_id("t").on(NewPlacement::instance("session")),
        ]),
        None,
    )
    .unwrap();
    let mut half = 0;
    for batch in 0..10 {
        let chunks = (0..100)
            .map(|i| {
                ChunkDecl::generated()
                    .body(json!({"text": format!("prompt {batch}-{i} about the hermit crab's shell")}))
                    .on(NewPlacement::instance("s"))
                    .on(NewPlacement::instance("prompt"))
            })
            .collect();
        let c = db.commit(Declaration::of(chunks), None).unwrap();
        if batch == 4 {
            half = c.id;
        }
    }
    half
}

/// A tool turn's chunks, on session `t` (so `s` keeps its 1,000 members
/// for the reads however many turns the benchmark commits).
fn tool_turn(n: u64) -> Declaration {
    let text = "x".repeat(1000);
    Declaration::of(vec![
        ChunkDecl::generated()
            .body(json!({"program": "read", "input": {"file_path": format!("f{n}.rs")}, "note": text}))
            .on(NewPlacement::instance("t"))
            .on(NewPlacement::instance("turn")),
        ChunkDecl::generated()
            .body(json!({"program": "read", "text": text}))
            .on(NewPlacement::instance("t"))
            .on(NewPlacement::instance("turn")),
    ])
}

fn backends(c: &mut Criterion) {
    let cluster = testkit::PgCluster::start().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let beside = dir.path().join("pg.db");
    let stores = [
        ("sqlite", Substrate::open(dir.path().join("s.db")).unwrap()),
        (
            "postgres_socket",
            Substrate::open_postgres(
                &cluster.url("postgres"),
                "bench_socket",
                Options::default(),
                &beside,
            )
            .unwrap(),
        ),
        (
            "postgres_tcp",
            Substrate::open_postgres(
                &cluster.tcp_url("postgres"),
                "bench_tcp",
                Options::default(),
                &beside,
            )
            .unwrap(),
        ),
    ];
    let mut group = c.benchmark_group("backends");
    group.sample_size(30);
    for (name, db) in &stores {
        let half = fill(db);
        let mut n = 0;
        group.bench_function(format!("{name}/commit_tool_turn"), |b| {
            b.iter(|| {
                n += 1;
                black_box(db.commit(tool_turn(n), None).unwrap())
            })
        });
        let session = ScopeOpts {
            limit: Some(1000),
            ..ScopeOpts::default()
        };
        group.bench_function(format!("{name}/scope_session_1000"), |b| {
            b.iter(|| black_box(db.scope(&["s"], &session).unwrap()))
        });
        let past = ScopeOpts {
            as_of: Some(half),
            ..session.clone()
        };
        group.bench_function(format!("{name}/as_of_session_1000"), |b| {
            b.iter(|| black_box(db.scope(&["s"], &past).unwrap()))
        });
        let search = ScopeOpts {
            match_: Some("crab".into()),
            limit: Some(10),
            ..ScopeOpts::default()
        };
        group.bench_function(format!("{name}/match_one_word"), |b| {
            b.iter(|| black_box(db.scope::<&str>(&[], &search).unwrap()))
        });
    }
    group.finish();
    following(c, &cluster, &beside);
    writers(&cluster, &dir, &beside);
}

/// How long another engine's subscriber waits for a commit.
fn following(c: &mut Criterion, cluster: &testkit::PgCluster, beside: &std::path::Path) {
    let open = || {
        Substrate::open_postgres(
            &cluster.url("postgres"),
            "bench_follow",
            Options::default(),
            beside,
        )
        .unwrap()
    };
    let (ours, theirs) = (open(), open());
    fill(&ours);
    let mut events = theirs.subscribe();
    let mut group = c.benchmark_group("backends");
    group.sample_size(50);
    let mut n = 0;
    group.bench_function("postgres_socket/follow_latency", |b| {
        b.iter_custom(|iters| {
            let mut total = std::time::Duration::ZERO;
            for _ in 0..iters {
                n += 1;
                let started = std::time::Instant::now();
                let made = ours.commit(tool_turn(n), None).unwrap().id;
                loop {
                    match events.try_recv() {
                        Ok(c) if c.id == made => break,
                        Ok(_) => {}
                        Err(tokio::sync::broadcast::error::TryRecvError::Empty) => {
                            std::thread::sleep(std::time::Duration::from_micros(50))
                        }
                        Err(e) => panic!("{e}"),
                    }
                }
                total += started.elapsed();
            }
            total
        })
    });
    group.finish();
}

/// Commits per second from 1, 4 and 16 engines committing at once, on
/// each backend (SQLite: processes' handles on one file).
fn writers(cluster: &testkit::PgCluster, dir: &tempfile::TempDir, beside: &std::path::Path) {
    const EACH: u64 = 100;
    for count in [1usize, 4, 16] {
        let mut said = Vec::new();
        for backend in ["sqlite", "postgres_socket"] {
            let stores: Vec<Substrate> = (0..count)
                .map(|_| match backend {
                    "sqlite" => Substrate::open(dir.path().join("writers.db")).unwrap(),
                    _ => Substrate::open_postgres(
                        &cluster.url("postgres"),
                        "bench_writers",
                        Options::default(),
                        beside,
                    )
                    .unwrap(),
                })
                .collect();
            fill(&stores[0]);
            let started = std::time::Instant::now();
            std::thread::scope(|scope| {
                for db in &stores {
                    scope.spawn(move || {
                        for n in 0..EACH {
                            db.commit(tool_turn(n), None).unwrap();
                        }
                    });
                }
            });
            let rate = (EACH as f64 * count as f64) / started.elapsed().as_secs_f64();
            said.push(format!("{backend} {rate:.0}/s"));
        }
        println!(
            "backends/writers_{count}: commits per second, {count} engines at once: {}",
            said.join(", ")
        );
    }
}

criterion_group!(benches, backends);
criterion_main!(benches);
