//! The hermitcrab's auto-save (docs/performance.md): what saving an
//! exchange to history adds to a turn. `hc run --agent hermitcrab` against
//! two fakes — one answering text (the kernel saves the exchange), one
//! answering nothing (no text, nothing saved) — alternating pair by pair;
//! each run timed from the fake's last byte of the answer to the process's
//! exit. The median of the differences is the save (every tenth save also
//! compresses nine entries through a summary call, which the median leaves
//! out; it is counted as a model call). Also: what the preset adds to a
//! run's start (seeding checked, capabilities compared, the shell read)
//! against the same run without it.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use serde_json::json;
use std::path::Path;
use std::time::{Duration, Instant};
use testkit::{FakeModel, Script};

mod common;

use common::HC;

fn fake(runtime: &tokio::runtime::Runtime, content: serde_json::Value) -> FakeModel {
    let script = json!({"cycle": true, "turns": [
        {"reply": {"content": content, "stop_reason": "end_turn",
                   "usage": {"input_tokens": 10, "output_tokens": 2}}}
    ]});
    runtime
        .block_on(FakeModel::start(
            Script::from_json(&script.to_string()).unwrap(),
        ))
        .unwrap()
}

/// One `hc run`: (answer's end → exit, start → first request).
fn run(fake: &FakeModel, root: &Path, preset: bool) -> (Duration, Duration) {
    let before = fake.requests_to("/v1/messages").len();
    let mut args = vec!["run"];
    if preset {
        args.push("--agent=hermitcrab");
    }
    args.push("hello");
    let started = Instant::now();
    let mut child = std::process::Command::new(HC)
        .args(&args)
        .current_dir(root)
        .env("ANTHROPIC_BASE_URL", fake.base_url())
        .env("ANTHROPIC_API_KEY", "bench")
        .env("XDG_CONFIG_HOME", root.join(".no-user-config"))
        .env("XDG_DATA_HOME", root.join(".no-user-data"))
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    assert!(child.wait().unwrap().success());
    let exited = Instant::now();
    let requests = fake.requests_to("/v1/messages");
    let first = &requests[before];
    let last = requests.last().unwrap();
    let answered = last.received + last.served_in.unwrap_or_default();
    (
        exited.saturating_duration_since(answered),
        first.received - started,
    )
}

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    xs[xs.len() / 2]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// `pairs` runs of `pair` (a, b): the medians of a, of b, of a − b, in ms.
fn paired(pairs: usize, mut pair: impl FnMut() -> (Duration, Duration)) -> (f64, f64, f64) {
    let (mut a, mut b, mut d) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..pairs {
        let (x, y) = pair();
        a.push(ms(x));
        b.push(ms(y));
        d.push(ms(x) - ms(y));
    }
    (median(a), median(b), median(d))
}

fn main() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let saying = fake(&runtime, json!([{"type": "text", "text": "ok"}]));
    let silent = fake(&runtime, json!([]));
    let pairs: usize = std::env::var("PAIRS")
        .ok()
        .and_then(|p| p.parse().ok())
        .unwrap_or(100);
    let project = common::project();
    let root = project.path();
    // seeded once
    run(&saying, root, true);
    let (saved, unsaved, diff) = paired(pairs, || {
        (run(&saying, root, true).0, run(&silent, root, true).0)
    });
    println!(
        "blocks/autosave ({pairs} pairs): answer → exit {saved:.2} ms with the save, {unsaved:.2} ms without; the save adds {diff:.3} ms (median of differences)"
    );
    let (with, without, start) = paired(pairs, || {
        (run(&silent, root, true).1, run(&silent, root, false).1)
    });
    println!(
        "blocks/start ({pairs} pairs): start → first request {with:.2} ms as hermitcrab, {without:.2} ms without; the preset adds {start:.2} ms (median of differences)"
    );
}
