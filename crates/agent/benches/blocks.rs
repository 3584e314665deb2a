//! pscale blocks, the pure part (docs/performance.md): a spindle of
//! depth 9 from a block of 10,000 nodes, literal and semantic; an entry
//! added to a history of a thousand; reading and writing the 10,000-node
//! block's chunk body (what each block tool call does once).
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use agent::blocks::Block;
use criterion::{Criterion, criterion_group, criterion_main};
use std::hint::black_box;

/// A living block (decimal 4) of `nodes` nodes with a path nine deep,
/// `1.2.3.4.5.6.7.8.9`, grown by a fixed pseudo-random walk.
fn big(nodes: usize) -> Block {
    let mut block = Block::new("big", 4, "pscale zero");
    block.write(&[], "the whole").unwrap();
    block
        .write(&[1, 2, 3, 4, 5, 6, 7, 8, 9], "the deep end")
        .unwrap();
    let mut seed: u64 = 0x9E37_79B9_7F4A_7C15;
    while block.tree.count() < nodes {
        let mut path = Vec::new();
        let depth = 1 + (seed % 7) as usize;
        for _ in 0..depth {
            seed = seed
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            path.push(((seed >> 33) % 10) as u8);
        }
        block
            .write(
                &path,
                &format!("node {} — a line of text", block.tree.count()),
            )
            .unwrap();
    }
    block
}

fn spindles(c: &mut Criterion) {
    let block = big(10_000);
    assert!(block.tree.count() >= 10_000);
    assert_eq!(block.spindle("1.2.3.4.5.6.7.8.9").unwrap().len(), 10);
    c.bench_function("blocks/spindle_depth9_of_10000_literal", |b| {
        b.iter(|| black_box(block.spindle(black_box("1.2.3.4.5.6.7.8.9")).unwrap()))
    });
    c.bench_function("blocks/spindle_depth9_of_10000_semantic", |b| {
        b.iter(|| black_box(block.spindle(black_box("1234.56789")).unwrap()))
    });
    let body = block.to_body();
    c.bench_function("blocks/read_body_of_10000", |b| {
        b.iter(|| black_box(Block::from_body(black_box(&body)).unwrap()))
    });
    c.bench_function("blocks/write_body_of_10000", |b| {
        b.iter(|| black_box(block.to_body()))
    });
}

fn entries(c: &mut Criterion) {
    let mut history = Block::new("history", 1, "what happened");
    for n in 0..1000 {
        let edge = history.live_edge();
        history.add_entry(
            &edge,
            &format!("[2026-11-25T00:00:00Z] prompt {n} → answer {n}"),
        );
    }
    c.bench_function("blocks/add_entry_to_history_of_1000", |b| {
        b.iter_batched(
            || history.clone(),
            |mut h| {
                let edge = h.live_edge();
                black_box(h.add_entry(&edge, "[2026-11-25T00:00:00Z] hello → hi"))
            },
            criterion::BatchSize::SmallInput,
        )
    });
}

criterion_group!(benches, spindles, entries);
criterion_main!(benches);
