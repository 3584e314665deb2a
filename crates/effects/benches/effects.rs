//! What recording a run's file effects costs (`docs/performance.md`,
//! "Rewind"), on a 10,000-file tree: what a `shell` run adds — the tree
//! watched (inotify: what changed looked at again; kept) and the tree
//! walked (a stat snapshot before and after, the index warm) — the first
//! snapshot of a tree never seen (every file read and kept), one named
//! path's (what a `write` or `edit` adds); and the other way measured,
//! an overlay of the project in the run's own mount namespace (mounted,
//! the change made through it, its upper directory walked and copied
//! back), against the same change made without one.

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
    let mut n = 0u64;
    for (name, tree) in [
        (
            "shell_run_10k_walked",
            Tree::walking(&root, &dir.path().join("walked"), Limits::default()),
        ),
        (
            "shell_run_10k_watched",
            Tree::open(&root, &dir.path().join("watched"), Limits::default()),
        ),
    ] {
        tree.snapshot(whole());
        group.bench_function(name, |b| {
            b.iter(|| {
                let before = tree.snapshot(whole());
                n += 1;
                std::fs::write(root.join("src7/mod3/f2.rs"), format!("changed {n}\n")).unwrap();
                let effects = tree.effects(&before);
                assert_eq!(effects.len(), 1);
            })
        });
    }
    let tree = Tree::open(&root, &dir.path().join("state"), Limits::default());
    group.bench_function("write_one_path", |b| {
        let paths = ["src9/mod1/f4.rs".to_owned()];
        b.iter(|| {
            let before = tree.snapshot(tree.scope_of_paths(&paths));
            n += 1;
            std::fs::write(root.join(&paths[0]), format!("written {n}\n")).unwrap();
            assert_eq!(tree.effects(&before).len(), 1);
        })
    });
    overlay(&mut group, &root, dir.path());
    group.finish();
}

/// The change a `shell` run makes, in a mount namespace of its own: with
/// the project as an overlay's lower directory (mounted, changed through
/// the overlay, the upper directory walked and copied back over the
/// project), and without.
fn overlay(
    group: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    root: &Path,
    scratch: &Path,
) {
    let (upper, work, merged) = (
        scratch.join("upper"),
        scratch.join("work"),
        scratch.join("merged"),
    );
    let plain = format!("echo changed > {}/src7/mod3/f2.rs", root.display());
    let overlaid = format!(
        "rm -rf {u} {w} && mkdir -p {u} {w} {m} && mount -t overlay overlay -o lowerdir={r},upperdir={u},workdir={w} {m} \
         && echo changed > {m}/src7/mod3/f2.rs && umount {m} && find {u} -type f | wc -l > /dev/null && cp -a {u}/. {r}/",
        u = upper.display(),
        w = work.display(),
        m = merged.display(),
        r = root.display()
    );
    let works = std::process::Command::new("unshare")
        .args(["-m", "sh", "-c", &overlaid])
        .status()
        .is_ok_and(|s| s.success());
    if !works {
        eprintln!("effects/overlay: no overlay in a mount namespace here; not measured");
        return;
    }
    for (name, script) in [
        ("shell_plain_unshare", plain),
        ("shell_overlay_unshare", overlaid),
    ] {
        group.bench_function(name, |b| {
            b.iter(|| {
                let status = std::process::Command::new("unshare")
                    .args(["-m", "sh", "-c", &script])
                    .status()
                    .unwrap();
                assert!(status.success());
            })
        });
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
