//! The agent's figures through the whole process (docs/performance.md):
//! the release `hc run` against the fake model answering at once, tools
//! contained through `hc-contain`.
//!
//! * `agent/turn_gap`: the gap between consecutive model requests of a run
//!   whose every turn calls `shell` with `echo turn-N` — the harness and a
//!   contained tool run (one sample: the gaps of one 20-turn run, averaged).
//! * `agent/streamed_reads_gap`: the same gap when every turn's reply
//!   reads three files first and streams its text after (2 ms a piece),
//!   and paired against `HC_NO_EARLY_TOOLS` (no call starting while the
//!   reply streams).
//! * `agent/first_request`: from starting `hc run` to the fake receiving
//!   its first request.
//! * `agent/sub_agent_gap` and `agent/hook_gap`: the same gap when every
//!   turn runs a trivial sub-agent (the fake answering it at once) instead
//!   of `shell`, and when every `shell` call first runs a `pre-tool` hook
//!   that runs `true` — each to set beside `turn_gap`.
//! * `agent/turn_gap` paired with telemetry on (every run sent to a
//!   collector on 127.0.0.1) against off.
//! * Peak RSS of the whole process tree during a 20-turn run (sampled
//!   every millisecond from `/proc`, in runs apart from the timed ones),
//!   printed.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::json;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use testkit::{FakeModel, Script};

mod common;

use common::{HC, project};
const TURNS: usize = 20;

fn script() -> Script {
    let mut turns = Vec::new();
    for n in 1..=TURNS {
        turns.push(json!({"reply": {"content": [
            {"type": "tool_use", "id": format!("toolu_{n}"), "name": "shell", "input": {"command": format!("echo turn-{n}")}}
        ], "stop_reason": "tool_use", "usage": {"input_tokens": 10, "output_tokens": 5}}}));
    }
    turns.push(json!({"reply": {"content": [{"type": "text", "text": "done"}], "stop_reason": "end_turn"}}));
    Script::from_json(&json!({"cycle": true, "turns": turns}).to_string()).unwrap()
}

/// Twenty turns each reading three files, the reads first in the reply
/// and its text streamed after them (ten pieces, 2 ms apart, as a model
/// streams): what a read that starts while the reply streams gains.
fn streamed_reads_script() -> Script {
    let mut turns = Vec::new();
    for n in 1..=TURNS {
        let read = |k: usize| json!({"type": "tool_use", "id": format!("toolu_{n}_{k}"), "name": "read", "input": {"file_path": format!("f{k}.txt")}});
        turns.push(json!({"reply": {"content": [read(1), read(2), read(3),
            {"type": "text", "text": "reading these three files now, then on"}],
            "stop_reason": "tool_use", "usage": {"input_tokens": 10, "output_tokens": 5}},
            "pace": {"delay_ms": 2, "text_chunk": 4, "json_chunk": 0}}));
    }
    turns.push(json!({"reply": {"content": [{"type": "text", "text": "done"}], "stop_reason": "end_turn"}}));
    Script::from_json(&json!({"cycle": true, "turns": turns}).to_string()).unwrap()
}

/// Twenty turns of the root each calling a sub-agent, which answers at
/// once (turns matched to their caller by `when`).
fn sub_agent_script() -> Script {
    let mut turns = Vec::new();
    for n in 1..=TURNS {
        // The root's first request ends with its prompt; each later one
        // with the sub-agent's answer.
        let when = if n == 1 { "ROOT" } else { "sub done" };
        turns.push(json!({"when": when, "reply": {"content": [
            {"type": "tool_use", "id": format!("toolu_{n}"), "name": "agent", "input": {"text": "SUB task"}}
        ], "stop_reason": "tool_use", "usage": {"input_tokens": 10, "output_tokens": 5}}}));
        turns.push(json!({"when": "SUB task", "reply": {"content": [{"type": "text", "text": "sub done"}], "stop_reason": "end_turn"}}));
    }
    turns.push(json!({"when": "sub done", "reply": {"content": [{"type": "text", "text": "done"}], "stop_reason": "end_turn"}}));
    Script::from_json(&json!({"cycle": true, "turns": turns}).to_string()).unwrap()
}

/// One run with `prompt`; the mean gap between the requests whose first
/// message is that prompt (the root's).
fn root_gap(fake: &FakeModel, root: &Path, prompt: &str) -> Duration {
    fake.clear_requests();
    hc_run(root, &fake.base_url(), prompt).wait().unwrap();
    let times: Vec<Instant> = fake
        .requests_to("/v1/messages")
        .iter()
        .filter(|r| r.body["messages"][0]["content"][0]["text"] == prompt)
        .map(|r| r.received)
        .collect();
    assert_eq!(times.len(), TURNS + 1, "one root request a turn");
    let gaps: Vec<Duration> = times.windows(2).map(|w| w[1] - w[0]).collect();
    gaps.iter().sum::<Duration>() / gaps.len() as u32
}

fn harness(c: &mut Criterion) {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let mut group = c.benchmark_group("agent");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(20));
    let subs = rt.block_on(FakeModel::start(sub_agent_script())).unwrap();
    let dir = project();
    group.bench_function("sub_agent_gap", |b| {
        b.iter_custom(|iters| {
            (0..iters)
                .map(|_| root_gap(&subs, dir.path(), "ROOT go"))
                .sum()
        })
    });
    let shell = rt.block_on(FakeModel::start(script())).unwrap();
    let hooked = project();
    std::fs::write(
        hooked.path().join(".hermitcrab/config.toml"),
        "[[hooks]]\nevent = \"pre-tool\"\nmatcher = \"shell\"\ncommand = \"echo x >> hook-ran\"\n",
    )
    .unwrap();
    // A project's own hooks run only once the person trusts it.
    let trusted = std::process::Command::new(HC)
        .arg("trust")
        .current_dir(hooked.path())
        .env("XDG_CONFIG_HOME", user_config())
        .output()
        .unwrap();
    assert!(trusted.status.success(), "{trusted:?}");
    group.bench_function("hook_gap", |b| {
        b.iter_custom(|iters| {
            (0..iters)
                .map(|_| root_gap(&shell, hooked.path(), "go"))
                .sum()
        })
    });
    // (when a filter left the benchmark out, nothing ran to check)
    if let Ok(ran) = std::fs::read_to_string(hooked.path().join("hook-ran")) {
        assert!(
            ran.lines().count() >= TURNS,
            "the hook ran before every call"
        );
    }
    group.finish();
}

/// The user configuration directory every `hc` of the benchmark gets (its
/// own: trusting a project must not touch the real one).
fn user_config() -> &'static Path {
    static DIR: std::sync::OnceLock<tempfile::TempDir> = std::sync::OnceLock::new();
    DIR.get_or_init(|| tempfile::tempdir().unwrap()).path()
}

fn hc_run(root: &Path, base_url: &str, prompt: &str) -> std::process::Child {
    hc_run_with(root, base_url, prompt, &[])
}

/// The same with `env` set: without a lever (`HC_EXEC_BUILTINS`:
/// built-ins exec'd by the init of a zygote that carries none, as before
/// they were forked from `hc`'s own zygote; `HC_INDEX_TEXT_INLINE`: each
/// commit indexing its own text, as before the indexing thread), or on a
/// PostgreSQL store (`HC_STORE`).
fn hc_run_with(
    root: &Path,
    base_url: &str,
    prompt: &str,
    env: &[(&str, &str)],
) -> std::process::Child {
    let mut command = std::process::Command::new(HC);
    command.envs(env.iter().copied());
    command
        .args(["run", "--permission-mode", "bypass", prompt])
        .current_dir(root)
        .env("ANTHROPIC_BASE_URL", base_url)
        .env("XDG_CONFIG_HOME", user_config())
        .env_remove("ANTHROPIC_API_KEY")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap()
}

/// The summed RSS and PSS (shared pages divided among their sharers: the
/// `hc` executable is mapped by several processes of the tree) of every
/// process whose ancestry leads to `root`, in KiB.
fn tree_rss_kb(root: u32) -> (u64, u64) {
    let mut parent = std::collections::HashMap::new();
    let mut rss = std::collections::HashMap::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(status) = std::fs::read_to_string(format!("/proc/{pid}/status")) else {
            continue;
        };
        let field = |name: &str| {
            status
                .lines()
                .find(|l| l.starts_with(name))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse::<u64>().ok())
        };
        if let Some(ppid) = field("PPid:") {
            parent.insert(pid, ppid as u32);
        }
        rss.insert(pid, field("VmRSS:").unwrap_or(0));
    }
    let inside: Vec<u32> = rss
        .keys()
        .copied()
        .filter(|pid| {
            let mut at = *pid;
            for _ in 0..64 {
                if at == root {
                    return true;
                }
                match parent.get(&at) {
                    Some(&up) if up != at => at = up,
                    _ => return false,
                }
            }
            false
        })
        .collect();
    let pss = |pid: &u32| -> u64 {
        std::fs::read_to_string(format!("/proc/{pid}/smaps_rollup"))
            .ok()
            .and_then(|t| {
                t.lines()
                    .find(|l| l.starts_with("Pss:"))
                    .and_then(|l| l.split_whitespace().nth(1).and_then(|v| v.parse().ok()))
            })
            .unwrap_or(0)
    };
    (
        inside.iter().map(|p| rss[p]).sum(),
        inside.iter().map(pss).sum(),
    )
}

/// One 20-turn run: the mean gap between its requests, and — when
/// `sample` — the peak RSS of its process tree (sampling costs CPU, so
/// timed runs do not sample).
fn one_run(fake: &FakeModel, root: &Path, sample: bool) -> (Duration, (u64, u64)) {
    one_run_with(fake, root, sample, &[])
}

fn one_run_with(
    fake: &FakeModel,
    root: &Path,
    sample: bool,
    env: &[(&str, &str)],
) -> (Duration, (u64, u64)) {
    fake.clear_requests();
    let mut child = hc_run_with(root, &fake.base_url(), "go", env);
    let mut peak = (0, 0);
    if sample {
        while child.try_wait().unwrap().is_none() {
            let now = tree_rss_kb(child.id());
            peak = (peak.0.max(now.0), peak.1.max(now.1));
            std::thread::sleep(Duration::from_millis(1));
        }
    } else {
        child.wait().unwrap();
    }
    let times: Vec<Instant> = fake
        .requests_to("/v1/messages")
        .iter()
        .map(|r| r.received)
        .collect();
    assert_eq!(times.len(), TURNS + 1, "one request a turn");
    let gaps: Vec<Duration> = times.windows(2).map(|w| w[1] - w[0]).collect();
    (gaps.iter().sum::<Duration>() / gaps.len() as u32, peak)
}

/// 10,000 files of 2–6 KB in 1,000 directories.
fn ten_thousand_files(root: &Path) {
    for d in 0..100 {
        for s in 0..10 {
            let dir = root.join(format!("src{d}/mod{s}"));
            std::fs::create_dir_all(&dir).unwrap();
            for f in 0..10 {
                let body = format!("// file {d}/{s}/{f}\n").repeat(100 + f * 40);
                std::fs::write(dir.join(format!("f{f}.rs")), body).unwrap();
            }
        }
    }
}

fn agent(c: &mut Criterion) {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let fake = rt.block_on(FakeModel::start(script())).unwrap();
    let dir = project();
    let root: PathBuf = dir.path().to_path_buf();
    let mut peak = (0, 0);
    for _ in 0..5 {
        let run = one_run(&fake, &root, true).1;
        peak = (peak.0.max(run.0), peak.1.max(run.1));
    }
    lever_paired(&fake, &root, "forked built-ins", "HC_EXEC_BUILTINS");
    lever_paired(
        &fake,
        &root,
        "text indexed off the commit path",
        "HC_INDEX_TEXT_INLINE",
    );
    lever_paired(
        &fake,
        &root,
        "the head's facts kept between commits",
        "HC_WITHOUT_FACTS",
    );
    lever_paired(&fake, &root, "file effects recorded", "HC_NO_FILE_EFFECTS");
    let big = project();
    ten_thousand_files(big.path());
    lever_paired(
        &fake,
        big.path(),
        "file effects recorded on 10,000 files",
        "HC_NO_FILE_EFFECTS",
    );
    let reads = rt
        .block_on(FakeModel::start(streamed_reads_script()))
        .unwrap();
    for k in 1..=3 {
        std::fs::write(
            root.join(format!("f{k}.txt")),
            "a line to read\n".repeat(200),
        )
        .unwrap();
    }
    lever_paired(
        &reads,
        &root,
        "reads started while the reply streams",
        "HC_NO_EARLY_TOOLS",
    );
    // every run's spans, events and metrics sent to a collector on
    // 127.0.0.1 (http/protobuf), against none
    let collector = testkit::otlp::Collector::http().unwrap();
    paired(
        &fake,
        &root,
        "telemetry sent to a local collector",
        &[("OTEL_EXPORTER_OTLP_ENDPOINT", &collector.endpoint)],
        ("no OTEL_EXPORTER_OTLP_ENDPOINT", &[]),
    );
    let cluster = testkit::PgCluster::start().unwrap();
    let socket = format!("{}&schema=bench_agent", cluster.url("postgres"));
    let tcp = format!("{}?schema=bench_agent_tcp", cluster.tcp_url("postgres"));
    store_paired(&fake, &root, &socket, &tcp);
    let mut group = c.benchmark_group("agent");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(20));
    group.bench_function("turn_gap_postgres", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                total += one_run_with(&fake, &root, false, &[("HC_STORE", &socket)]).0;
            }
            total
        })
    });
    group.bench_function("turn_gap", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                total += one_run(&fake, &root, false).0;
            }
            total
        })
    });
    group.bench_function("streamed_reads_gap", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                total += one_run(&reads, &root, false).0;
            }
            total
        })
    });
    group.bench_function("first_request", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                fake.clear_requests();
                let started = Instant::now();
                let mut child = hc_run(&root, &fake.base_url(), "go");
                while fake.requests_to("/v1/messages").is_empty() {
                    std::thread::sleep(Duration::from_micros(200));
                }
                total += fake.requests_to("/v1/messages")[0].received - started;
                // to its end, so the script stays in step
                let _ = child.wait();
            }
            total
        })
    });
    group.finish();
    println!(
        "agent/peak_memory_of_the_process_tree: RSS {:.1} MiB, PSS {:.1} MiB (the most of five 20-turn runs)",
        peak.0 as f64 / 1024.0,
        peak.1 as f64 / 1024.0
    );
}

/// The turn gap on SQLite against the same on PostgreSQL over its Unix
/// socket and over TCP, run by run, alternating (ten rounds): the medians.
fn store_paired(fake: &FakeModel, root: &Path, socket: &str, tcp: &str) {
    let stores = [
        ("SQLite", None),
        ("PG socket", Some(socket)),
        ("PG TCP", Some(tcp)),
    ];
    let mut gaps: Vec<Vec<Duration>> = vec![Vec::new(); stores.len()];
    for _ in 0..10 {
        for (i, (_, url)) in stores.iter().enumerate() {
            let env: Vec<(&str, &str)> = url.iter().map(|u| ("HC_STORE", *u)).collect();
            gaps[i].push(one_run_with(fake, root, false, &env).0);
        }
    }
    let said: Vec<String> = stores
        .iter()
        .zip(&mut gaps)
        .map(|((name, _), g)| {
            g.sort();
            format!("{name} {:.2} ms", g[g.len() / 2].as_secs_f64() * 1000.0)
        })
        .collect();
    println!(
        "agent/turn_gap paired by store (ten alternating rounds, medians): {}",
        said.join(", ")
    );
}

/// A lever against its absence (`without`: the variable that turns it
/// off), run by run, alternating (ten pairs, then ten more unsampled): the
/// median turn gaps, and the most memory of each, printed.
fn lever_paired(fake: &FakeModel, root: &Path, lever: &str, without: &str) {
    paired(fake, root, lever, &[], (without, &[(without, "1")]));
}

/// Runs with `on` set against runs with `off` set (named `without`), as
/// [`lever_paired`] pairs them.
fn paired(
    fake: &FakeModel,
    root: &Path,
    lever: &str,
    on: &[(&str, &str)],
    (without, off): (&str, &[(&str, &str)]),
) {
    let mut gaps = (Vec::new(), Vec::new());
    let mut peaks = ((0, 0), (0, 0));
    for n in 0..20 {
        let sample = n < 10;
        let (gap, peak) = one_run_with(fake, root, sample, on);
        gaps.0.push(gap);
        peaks.0 = (peaks.0.0.max(peak.0), peaks.0.1.max(peak.1));
        let (gap, peak) = one_run_with(fake, root, sample, off);
        gaps.1.push(gap);
        peaks.1 = (peaks.1.0.max(peak.0), peaks.1.1.max(peak.1));
    }
    // The gaps of the unsampled runs (sampling the tree's memory every
    // millisecond takes a core's share).
    let median = |v: &[Duration]| {
        let mut v = v[10..].to_vec();
        v.sort();
        v[v.len() / 2].as_secs_f64() * 1000.0
    };
    let mib = |kb: u64| kb as f64 / 1024.0;
    println!(
        "agent/turn_gap paired, {lever} vs without ({without}): {:.2} vs {:.2} ms; peak RSS {:.1} vs {:.1} MiB, PSS {:.1} vs {:.1} MiB (ten alternating pairs each)",
        median(&gaps.0),
        median(&gaps.1),
        mib(peaks.0.0),
        mib(peaks.1.0),
        mib(peaks.0.1),
        mib(peaks.1.1)
    );
}

criterion_group!(benches, agent, harness);
criterion_main!(benches);
