//! The pulse as sessions and stores grow (docs/performance.md), the
//! release `hc run` against the fake model answering at once, tools
//! contained:
//!
//! * `pulse/long_session`: one run of 1,000 `shell` turns on one session;
//!   the mean gap between model requests over turns 2–21 and over the
//!   last 20, and their ratio (three runs, printed).
//! * `pulse/big_store`: the 20-turn run of `agent/turn_gap` in a project
//!   whose store already holds 1,000,000 chunks (1,000 scopes of 1,000,
//!   each with a text the full-text index keeps; built once under
//!   `target/bench-data/pulse/`, a minute or two), beside the same run in
//!   a fresh project, alternating (five pairs; medians printed).
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use serde_json::json;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use substrate::{ChunkDecl, Declaration, NewPlacement, Substrate};
use testkit::{FakeModel, Script};

mod common;

/// A script of `turns` turns each calling `shell`, then an answer.
fn script(turns: usize) -> Script {
    let mut all = Vec::new();
    for n in 1..=turns {
        all.push(json!({"reply": {"content": [
            {"type": "tool_use", "id": format!("toolu_{n}"), "name": "shell", "input": {"command": format!("echo turn-{n}")}}
        ], "stop_reason": "tool_use", "usage": {"input_tokens": 10, "output_tokens": 5}}}));
    }
    all.push(json!({"reply": {"content": [{"type": "text", "text": "done"}], "stop_reason": "end_turn"}}));
    Script::from_json(&json!({"cycle": true, "turns": all}).to_string()).unwrap()
}

/// One run in `root`; the times the fake received each request.
fn run(fake: &FakeModel, root: &Path) -> Vec<Instant> {
    run_served(fake, root).into_iter().map(|(t, _)| t).collect()
}

/// One run in `root`; when the fake received each request, and how long
/// it took to answer it (its own share of each gap).
fn run_served(fake: &FakeModel, root: &Path) -> Vec<(Instant, Duration)> {
    fake.clear_requests();
    let status = common::run_go(root, root, &fake.base_url())
        .status()
        .unwrap();
    assert!(status.success());
    fake.requests_to("/v1/messages")
        .iter()
        .map(|r| (r.received, r.served_in.unwrap_or_default()))
        .collect()
}

/// The mean gap between consecutive times.
fn mean_gap(times: &[Instant]) -> Duration {
    let gaps: Vec<Duration> = times.windows(2).map(|w| w[1] - w[0]).collect();
    gaps.iter().sum::<Duration>() / gaps.len().max(1) as u32
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn long_session(rt: &tokio::runtime::Runtime) {
    const TURNS: usize = 1_000;
    let fake = rt.block_on(FakeModel::start(script(TURNS))).unwrap();
    for _ in 0..3 {
        let dir = common::project();
        let served = run_served(&fake, dir.path());
        assert_eq!(served.len(), TURNS + 1, "one request a turn");
        let times: Vec<Instant> = served.iter().map(|(t, _)| *t).collect();
        // Each gap less the fake's own time answering the request that
        // opened it: what `hc` spent.
        let own = |from: usize, to: usize| {
            let fake: Duration = served[from..to].iter().map(|(_, s)| *s).sum();
            (times[to] - times[from]).saturating_sub(fake) / (to - from) as u32
        };
        let (early, late) = (own(1, 21), own(TURNS - 20, TURNS));
        println!(
            "pulse/long_session: turns 2–21 {:.2} ms ({:.2} ms less the fake's answers), turns {}–{} {:.2} ms ({:.2} ms less the fake's), ratio {:.3}",
            ms(mean_gap(&times[1..=21])),
            ms(early),
            TURNS - 19,
            TURNS,
            ms(mean_gap(&times[TURNS - 20..=TURNS])),
            ms(late),
            late.as_secs_f64() / early.as_secs_f64()
        );
    }
}

/// The project whose store holds a million chunks besides its own.
fn big_store() -> PathBuf {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target/bench-data/pulse");
    let ready = root.join("million.ready");
    if ready.exists() {
        return root.canonicalize().unwrap();
    }
    let _ = std::fs::remove_dir_all(&root);
    std::fs::create_dir_all(&root).unwrap();
    common::init(&root);
    eprintln!("committing 1,000,000 chunks under {} …", root.display());
    let db = Substrate::open(root.join(".hermitcrab/substrate.db")).unwrap();
    let started = Instant::now();
    for s in 0..1_000 {
        let scope = format!("bench/s{s}");
        let mut chunks = vec![
            ChunkDecl::with_id(&scope)
                .name(scope.clone())
                .body(json!({})),
        ];
        for n in 0..1_000 {
            chunks.push(
                ChunkDecl::generated()
                    .body(json!({"text": format!("note {n} of scope {s}: the turn read file_{n}.rs and answered")}))
                    .on(NewPlacement::instance(&scope)),
            );
        }
        db.commit(Declaration::of(chunks), None).unwrap();
    }
    eprintln!("… in {:.0} s", started.elapsed().as_secs_f64());
    drop(db);
    std::fs::write(&ready, "ok").unwrap();
    root.canonicalize().unwrap()
}

fn store_size(rt: &tokio::runtime::Runtime) {
    let big = big_store();
    let fake = rt.block_on(FakeModel::start(script(20))).unwrap();
    let (mut fresh_gaps, mut big_gaps) = (Vec::new(), Vec::new());
    for _ in 0..5 {
        let fresh = common::project();
        fresh_gaps.push(mean_gap(&run(&fake, fresh.path())));
        big_gaps.push(mean_gap(&run(&fake, &big)));
    }
    let (fresh, big) = (median(fresh_gaps), median(big_gaps));
    println!(
        "pulse/big_store: turn gap {:.2} ms in a store of 1,000,000 chunks, {:.2} ms in a fresh one, ratio {:.3}",
        ms(big),
        ms(fresh),
        big.as_secs_f64() / fresh.as_secs_f64()
    );
}

fn main() {
    let filter = std::env::args().skip(1).find(|a| !a.starts_with('-'));
    let wants = |name: &str| filter.as_deref().is_none_or(|f| name.contains(f));
    let rt = tokio::runtime::Runtime::new().unwrap();
    if wants("pulse/long_session") {
        long_session(&rt);
    }
    if wants("pulse/big_store") {
        store_size(&rt);
    }
}
