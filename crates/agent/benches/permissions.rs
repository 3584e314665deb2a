//! Judging a command (docs/performance.md): `permissions/shell_100_commands`
//! parses a `shell` call of 100 simple commands (lists, pipelines, a
//! substitution, redirections) and decides it against allow and deny
//! rules — what the agent does before every `shell` call.
#![allow(clippy::unwrap_used, missing_docs)]

use agent::PermissionMode;
use agent::permissions::{Call, Permissions};
use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::json;
use std::path::Path;

fn bench(c: &mut Criterion) {
    let parts: Vec<String> = (0..100)
        .map(|n| match n % 4 {
            0 => format!("git status --short src/file_{n}.rs"),
            1 => format!("cargo test -p crate_{n} | grep -v warning"),
            2 => format!("echo \"step {n}: $(date +%s)\" >> build.log"),
            _ => format!("RUST_LOG=debug cargo build --release --bin tool_{n}"),
        })
        .collect();
    let command = parts.join(" && ");
    let permissions = Permissions::new(
        PermissionMode::Default,
        &[
            "shell(git status:*)".into(),
            "shell(cargo:*)".into(),
            "shell(grep:*)".into(),
            "shell(echo:*)".into(),
            "shell(date:*)".into(),
        ],
        &["shell(rm:*)".into(), "shell(curl:*)".into()],
        &[],
    )
    .unwrap();
    let input = json!({"command": command});
    let call = Call {
        program: "shell",
        input: &input,
        root: Path::new("/proj"),
        read_only: false,
    };
    c.bench_function("permissions/shell_100_commands", |b| {
        b.iter(|| permissions.decide(&call))
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
