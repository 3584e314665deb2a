//! Rewind and replay (docs/performance.md, issue 37): the release `hc`,
//! the fake model answering at once, a session of ten turns each editing
//! one line of a 4 KB file with `sed -i` (a contained `shell`).
//!
//! * Printed: the bytes a turn adds to the substrate for its file effects
//!   (the `file-effects` chunk and the before-image blob, as stored).
//! * `rewind/ten_turns`: `hc rewind --to 1 --code` — the ten turns' files
//!   put back by a recorded run (each round undone, untimed, after).
//! * `rewind/replay_ten_turns`: `hc replay` of the session (a scratch copy,
//!   the ten turns run again from the record, every request compared).
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::json;
use std::time::{Duration, Instant};
use testkit::{FakeModel, Script};

mod common;

use common::{project, quiet};

const TURNS: usize = 10;

fn script() -> Script {
    let mut turns = Vec::new();
    for n in 1..=TURNS {
        let command = format!("sed -i 's/^line {n} of/line {n} edited, of/' notes.md");
        turns.push(json!({"reply": {"content": [
            {"type": "tool_use", "id": format!("toolu_{n}"), "name": "shell", "input": {"command": command}}
        ], "stop_reason": "tool_use"}}));
    }
    turns.push(json!({"reply": {"content": [{"type": "text", "text": "done"}], "stop_reason": "end_turn"}}));
    Script::from_json(&json!({"cycle": true, "turns": turns}).to_string()).unwrap()
}

fn rewind(c: &mut Criterion) {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let fake = rt.block_on(FakeModel::start(script())).unwrap();
    let dir = project();
    let root = dir.path();
    let notes: String = (1..=100)
        .map(|n| format!("line {n} of the notes, some words\n"))
        .collect();
    std::fs::write(root.join("notes.md"), notes).unwrap();
    let url = fake.base_url();
    let ran = quiet(
        root,
        &url,
        &["run", "--permission-mode", "bypass", "edit the notes"],
    )
    .status()
    .unwrap();
    assert!(ran.success());
    let db = substrate::Substrate::open(root.join(".hermitcrab/substrate.db")).unwrap();
    let bytes = |ty: &str| -> usize {
        let read = db
            .scope(
                &[ty],
                &substrate::ScopeOpts {
                    kind: substrate::TypeFilter::Instance,
                    ..substrate::ScopeOpts::default()
                },
            )
            .unwrap();
        read.chunks
            .iter()
            .map(|c| c.body_value().to_string().len())
            .sum()
    };
    let (effects, blobs) = (bytes("engine/file-effects"), bytes("engine/blob"));
    println!(
        "rewind: a sed -i of one line of a 4 KB file stores {} bytes a turn ({} of file-effects, {} of before-images as hex)",
        (effects + blobs) / TURNS,
        effects / TURNS,
        blobs / TURNS
    );
    let session = {
        let read = db
            .scope(
                &["session"],
                &substrate::ScopeOpts {
                    kind: substrate::TypeFilter::Instance,
                    ..substrate::ScopeOpts::default()
                },
            )
            .unwrap();
        read.chunks[0].id.clone()
    };
    let mut group = c.benchmark_group("rewind");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(10));
    let hc = |args: &[&str]| {
        let status = quiet(root, &url, args).status().unwrap();
        assert!(status.success(), "hc {args:?}");
    };
    group.bench_function("ten_turns", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                let start = Instant::now();
                hc(&["rewind", &session, "--to", "1", "--code"]);
                total += start.elapsed();
                hc(&["rewind", &session, "--undo"]);
            }
            total
        })
    });
    group.bench_function("replay_ten_turns", |b| {
        b.iter(|| hc(&["replay", &session, "--permission-mode", "bypass"]))
    });
    group.finish();
}

criterion_group!(benches, rewind);
criterion_main!(benches);
