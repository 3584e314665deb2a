//! What recording a run's file effects costs (`docs/performance.md`,
//! "Rewind"): on a 10,000-file tree, a walk's two snapshots with the
//! index warm (what a `shell` run adds), the first snapshot of a tree
//! never seen (every file read and kept), and one named path's (what a
//! `write` or `edit` adds).

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use criterion::{Criterion, criterion_group, criterion_main};
use effects::{Limits, Scope, Tree};
use std::path::Path;

/// 10,000 files of 2–6 KB in 100 directories of 10 subdirectories, and a
/// `target/` of 2,000 ignored files.
fn project(root: &Path) {
    for d in 0..100 {
        for s in 0..10 {
            let dir = root.join(format!("src{d}/mod{s}"));
            std::fs::create_dir_all(&dir).unwrap();
            for f in 0..10 {
                let body = format!("// file {d}/{s}/{f}\n").repeat(100 + (f * 40));
                std::fs::write(dir.join(format!("f{f}.rs")), body).unwrap();
            }
        }
    }
    std::fs::create_dir_all(root.join("target")).unwrap();
    for f in 0..2000 {
        std::fs::write(root.join(format!("target/o{f}")), "o").unwrap();
    }
    std::fs::write(root.join(".gitignore"), "target/\n").unwrap();
}

fn bench(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("p");
    project(&root);
    let whole = || Scope::Tree(vec![String::new()]);
    let mut group = c.benchmark_group("effects");
    group.sample_size(20);
    group.bench_function("first_snapshot_10k", |b| {
        b.iter_with_setup(
            || tempfile::tempdir().unwrap(),
            |state| Tree::open(&root, state.path(), Limits::default()).snapshot(whole()),
        )
    });
    let tree = Tree::open(&root, &dir.path().join("state"), Limits::default());
    tree.snapshot(whole());
    let mut n = 0u64;
    group.bench_function("shell_run_10k", |b| {
        b.iter(|| {
            let before = tree.snapshot(whole());
            n += 1;
            std::fs::write(root.join("src7/mod3/f2.rs"), format!("changed {n}\n")).unwrap();
            let effects = tree.effects(&before);
            assert_eq!(effects.len(), 1);
        })
    });
    group.bench_function("write_one_path", |b| {
        let paths = ["src9/mod1/f4.rs".to_owned()];
        b.iter(|| {
            let before = tree.snapshot(tree.scope_of_paths(&paths));
            n += 1;
            std::fs::write(root.join(&paths[0]), format!("written {n}\n")).unwrap();
            assert_eq!(tree.effects(&before).len(), 1);
        })
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
