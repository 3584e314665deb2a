//! The tool programs' figures (docs/performance.md), all through the
//! release `hc`, contained through `hc-contain` as `hc` runs them:
//!
//! * `tools/grep_100k_files/{hermitcrab,ripgrep}`: the search itself —
//!   `grep`'s code in this process vs `rg -l` — over a generated tree of
//!   100,000 files (about 1 GB); `tools/grep_100k_files/run` the same as a
//!   contained run through the engine. The tree is built once into
//!   `target/bench-data/tools/` (a minute or two). ripgrep comes from
//!   Debian (`apt-get install ripgrep`, tried when `rg` is missing).
//! * `tools/read_2000_lines_of_10mb`: `read` of a 2,000-line page from the
//!   middle of a 10 MB file, run + await.
//! * `tools/shell_true`: `shell` running `true`, run + await; beside it,
//!   where the time goes: `tools/echo` (engine commits, zygote fork, `hc`
//!   start-up and the protocol — everything but bash), `os/bash_c_true`
//!   and `os/hc_version` (the OS's cost of starting bash, and `hc`).
//! * the pulse's levers, each against its absence (`*_split_start`,
//!   `*_split_finish`, `*_exec_builtins`), with a paired median printed.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use criterion::{Criterion, criterion_group, criterion_main};
use engine::{Context, Engine, EngineConfig};
use protocol::RunArgs;
use serde_json::{Value, json};
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use substrate::{ChunkDecl, NewPlacement, Substrate};

mod common;

use common::HC;

const FILES: usize = 100_000;
const FILE_BYTES: usize = 10_000;

fn data_dir() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target/bench-data/tools");
    std::fs::create_dir_all(&dir).unwrap();
    dir.canonicalize().unwrap()
}

/// A project in `target/bench-data/tools` with the tree and the big file.
fn project() -> PathBuf {
    let root = data_dir();
    if !root.join(".hermitcrab").exists() {
        common::init(&root);
    }
    let marker = root.join("tree.ready");
    if !marker.exists() {
        eprintln!(
            "building {FILES} files (about 1 GB) under {} …",
            root.display()
        );
        build_tree(&root.join("tree"));
        build_big_file(&root.join("big.txt"));
        std::fs::write(&marker, "ok").unwrap();
    }
    root
}

/// 100,000 files of prose-like lines in 1,000 directories; one line in
/// about 1 in 500 files names `needle_NNN`.
fn build_tree(tree: &Path) {
    let words = [
        "lorem",
        "ipsum",
        "dolor",
        "sit",
        "amet",
        "consectetur",
        "adipiscing",
        "elit",
        "sed",
        "do",
        "eiusmod",
        "tempor",
        "incididunt",
        "ut",
        "labore",
        "et",
        "dolore",
        "magna",
    ];
    let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    for i in 0..FILES {
        let dir = tree.join(format!("d{:03}", i % 1000));
        if i < 1000 {
            std::fs::create_dir_all(&dir).unwrap();
        }
        let mut text = String::with_capacity(FILE_BYTES + 100);
        while text.len() < FILE_BYTES {
            for _ in 0..12 {
                text.push_str(words[(next() % words.len() as u64) as usize]);
                text.push(' ');
            }
            text.push('\n');
        }
        if i % 500 == 7 {
            text.push_str(&format!("fn needle_{i}() {{}}\n"));
        }
        std::fs::write(dir.join(format!("f{i}.txt")), text).unwrap();
    }
}

/// 10 MB of numbered lines of about 100 bytes.
fn build_big_file(path: &Path) {
    let mut out = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    let mut written = 0;
    let mut i = 0;
    while written < 10_000_000 {
        let line = format!(
            "{i:08} the quick brown fox jumps over the lazy dog; pack my box with five dozen liquor jugs\n"
        );
        out.write_all(line.as_bytes()).unwrap();
        written += line.len();
        i += 1;
    }
}

struct Setup {
    rt: tokio::runtime::Runtime,
    engine: Engine,
    root: PathBuf,
}

fn setup() -> Setup {
    setup_with(|_| {})
}

/// An engine on the project, its configuration changed by `tweak` (to
/// measure a lever without it).
fn setup_with(tweak: impl FnOnce(&mut EngineConfig)) -> Setup {
    setup_of(substrate::Options::default(), tweak)
}

/// The same on a store opened with `options`.
fn setup_of(options: substrate::Options, tweak: impl FnOnce(&mut EngineConfig)) -> Setup {
    let root = project();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let db =
        Arc::new(Substrate::open_with(root.join(".hermitcrab/substrate.db"), options).unwrap());
    let mut config = EngineConfig::new(&root);
    config.builtin_exe = PathBuf::from(HC);
    config.containment = engine::contain::Containment::On {
        exe: PathBuf::from(env!("CARGO_BIN_EXE_hc-contain")),
        args: Vec::new(),
    };
    // As `hc` runs them: the zygote is `hc` itself, which forks the
    // built-ins it carries.
    config.zygote = Some((PathBuf::from(HC), vec!["__contain".into()]));
    tweak(&mut config);
    let engine = rt.block_on(async { Engine::open_with(db, config).unwrap() });
    Setup { rt, engine, root }
}

impl Setup {
    /// One run of `program` on `input`, awaited; panics unless it answered
    /// without error.
    fn run(&self, program: &str, input: &Value) {
        let args = RunArgs {
            chunks: vec![
                ChunkDecl::generated()
                    .body(input.clone())
                    .on(NewPlacement::instance(format!("input/{program}"))),
            ],
            ..RunArgs::default()
        };
        self.rt.block_on(async {
            let ctx = Context::host();
            let p = self.engine.run(&ctx, program, args).unwrap();
            let done = self
                .engine
                .await_processes(&ctx, std::slice::from_ref(&p))
                .await
                .unwrap();
            let out = done[&p]
                .chunks
                .iter()
                .find(|c| c.is_on("engine/output", substrate::PlacementType::Instance))
                .map(|c| c.body_value())
                .unwrap_or_default();
            assert_eq!(out["is_error"], false, "{out}");
        });
    }
}

/// `rg`, installed from Debian when missing (the bench's one set-up step).
fn ripgrep() -> Option<PathBuf> {
    let found = |name: &str| {
        std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
            .map(|d| d.join(name))
            .find(|p| p.is_file())
    };
    if let Some(rg) = found("rg") {
        return Some(rg);
    }
    eprintln!("ripgrep is missing; installing it from Debian (apt-get install ripgrep) …");
    let _ = std::process::Command::new("apt-get")
        .args(["install", "-y", "-q", "ripgrep"])
        .status();
    let rg = found("rg");
    if rg.is_none() {
        eprintln!("no ripgrep: the comparison is skipped");
    }
    rg
}

fn grep(c: &mut Criterion) {
    let s = setup();
    let tree = s.root.join("tree");
    let pattern = r"fn needle_\d+";
    let input = json!({"pattern": pattern, "path": tree});
    // warm the page cache, and check both find the same files
    let ours = programs::grep_search(&s.root, input.clone()).unwrap();
    let mut group = c.benchmark_group("tools/grep_100k_files");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(20));
    group.bench_function("hermitcrab", |b| {
        b.iter(|| programs::grep_search(&s.root, input.clone()).unwrap())
    });
    if let Some(rg) = ripgrep() {
        let theirs = std::process::Command::new(&rg)
            .args(["-l", pattern])
            .arg(&tree)
            .output()
            .unwrap();
        assert_eq!(
            String::from_utf8_lossy(&theirs.stdout).lines().count(),
            ours.lines().count(),
            "ripgrep and grep find the same files"
        );
        group.bench_function("ripgrep", |b| {
            b.iter(|| {
                let out = std::process::Command::new(&rg)
                    .args(["-l", pattern])
                    .arg(&tree)
                    .output()
                    .unwrap();
                assert!(out.status.success());
            })
        });
    }
    group.bench_function("run", |b| b.iter(|| s.run("grep", &input)));
    group.finish();
}

fn read(c: &mut Criterion) {
    let s = setup();
    let input = json!({"file_path": "big.txt", "offset": 50_000, "limit": 2_000});
    c.bench_function("tools/read_2000_lines_of_10mb", |b| {
        b.iter(|| s.run("read", &input))
    });
    // The full-text index written by a thread off the commit's path,
    // against each commit indexing its own text before it returns.
    let inline = setup_of(
        substrate::Options {
            index_text_inline: true,
            ..substrate::Options::default()
        },
        |_| {},
    );
    c.bench_function("tools/read_2000_lines_of_10mb_text_inline", |b| {
        b.iter(|| inline.run("read", &input))
    });
    paired(&s, &inline, "text_inline", ("read", &input));
    paired(&s, &inline, "text_inline", ("echo", &json!({"text": "x"})));
}

fn shell(c: &mut Criterion) {
    let s = setup();
    c.bench_function("tools/shell_true", |b| {
        b.iter(|| s.run("shell", &json!({"command": "true"})))
    });
    c.bench_function("tools/echo", |b| {
        b.iter(|| s.run("echo", &json!({"text": "x"})))
    });
    // The pulse's levers, each against its absence, back to back: a run's
    // start in one commit (`split_start`: the process committed, then
    // `running`), and its result with its end (`HC_SPLIT_FINISH`: the
    // result committed, then the end once the program has exited).
    let split_start = setup_with(|c| c.levers.split_start = true);
    c.bench_function("tools/echo_split_start", |b| {
        b.iter(|| split_start.run("echo", &json!({"text": "x"})))
    });
    let split_finish = setup_with(|c| {
        let on = vec![(protocol::env::SPLIT_FINISH.to_owned(), "1".to_owned())];
        c.env_values.insert("program/echo".into(), on.clone());
        c.env_values.insert("program/shell".into(), on);
    });
    c.bench_function("tools/echo_split_finish", |b| {
        b.iter(|| split_finish.run("echo", &json!({"text": "x"})))
    });
    c.bench_function("tools/shell_true_split_finish", |b| {
        b.iter(|| split_finish.run("shell", &json!({"command": "true"})))
    });
    // Built-ins forked from the zygote (`hc` itself), against exec'd by
    // the init of a zygote that carries none (`hc-contain`).
    let exec_builtins = setup_with(|c| c.zygote = None);
    c.bench_function("tools/echo_exec_builtins", |b| {
        b.iter(|| exec_builtins.run("echo", &json!({"text": "x"})))
    });
    c.bench_function("tools/shell_true_exec_builtins", |b| {
        b.iter(|| exec_builtins.run("shell", &json!({"command": "true"})))
    });
    let echo = json!({"text": "x"});
    paired(&s, &exec_builtins, "exec_builtins", ("echo", &echo));
    paired(&s, &split_start, "split_start", ("echo", &echo));
    paired(&s, &split_finish, "split_finish", ("echo", &echo));
    c.bench_function("os/bash_c_true", |b| {
        b.iter(|| {
            std::process::Command::new("bash")
                .args(["-c", "true"])
                .status()
                .unwrap()
        })
    });
    c.bench_function("os/hc_version", |b| {
        b.iter(|| {
            std::process::Command::new(HC)
                .arg("--version")
                .stdout(std::process::Stdio::null())
                .status()
                .unwrap()
        })
    });
}

/// 100 runs of `program` with the lever and without, alternating: the
/// median of the differences (without − with), printed.
fn paired(with: &Setup, without: &Setup, lever: &str, (program, input): (&str, &Value)) {
    let time = |s: &Setup| {
        let started = std::time::Instant::now();
        s.run(program, input);
        started.elapsed()
    };
    let mut differences: Vec<f64> = (0..100)
        .map(|_| {
            let on = time(with);
            let off = time(without);
            (off.as_secs_f64() - on.as_secs_f64()) * 1000.0
        })
        .collect();
    differences.sort_by(f64::total_cmp);
    println!(
        "tools/{program} paired, {lever} − one step: median {:+.3} ms (quartiles {:+.3} … {:+.3})",
        differences[50], differences[25], differences[75]
    );
}

criterion_group!(benches, shell, read, grep);
criterion_main!(benches);
