//! What a run reads from files before its first call (README,
//! "Performance"): `knowledge/files` finds and reads 5 nested instruction
//! files (one importing another), 50 skills and 20 custom agents — as the
//! agent does at a run's start — against `knowledge/bare`, the same in a
//! project with none of them. (Command files are read by the host only
//! for a `/` prompt; memory does not exist yet.)
#![allow(clippy::unwrap_used, missing_docs)]

use agent::context::{Places, read_instructions};
use criterion::{Criterion, criterion_group, criterion_main};
use std::path::Path;

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

fn project(full: bool) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir_all(root.join("a/b/c/d")).unwrap();
    if full {
        let rules = "Keep functions short. Test what you change. ".repeat(40);
        for (i, sub) in ["", "a", "a/b", "a/b/c", "a/b/c/d"].iter().enumerate() {
            write(
                &root.join(sub).join("AGENTS.md"),
                &format!("level {i}\n{rules}\n"),
            );
        }
        write(&root.join("docs/style.md"), &rules);
        write(
            &root.join("AGENTS.md"),
            &format!("root\n@docs/style.md\n{rules}"),
        );
        for n in 0..50 {
            write(
                &root.join(format!(".claude/skills/skill-{n}/SKILL.md")),
                &format!(
                    "---\nname: skill-{n}\ndescription: Does thing {n}\n---\nSteps for {n}.\n"
                ),
            );
        }
        for n in 0..20 {
            write(
                &root.join(format!(".claude/agents/agent-{n}.md")),
                &format!(
                    "---\nname: agent-{n}\ndescription: Agent {n}\ntools: Read, Grep\n---\nYou are {n}.\n"
                ),
            );
        }
    }
    dir
}

fn read_all(root: &Path) -> usize {
    let working = root.join("a/b/c/d");
    let places = Places {
        root,
        working: Some(&working),
        user_dir: None,
        home: None,
    };
    let files = read_instructions(&places);
    let (skills, _) = agent::skills::find(root, None, None);
    let (agents, _) = agent::agents::find(root, None, None);
    files.len() + skills.len() + agents.len()
}

fn bench(c: &mut Criterion) {
    let full = project(true);
    let bare = project(false);
    assert_eq!(read_all(full.path()), 6 + 50 + 20);
    let mut group = c.benchmark_group("knowledge");
    group.bench_function("files", |b| b.iter(|| read_all(full.path())));
    group.bench_function("bare", |b| b.iter(|| read_all(bare.path())));
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
