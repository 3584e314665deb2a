//! The browser host, measured in a real browser (docs/performance.md):
//! the release `hc serve --http` over a project of 1,000 sessions, the
//! fake model streaming a reply of 300 deltas, Debian's Chromium driven by
//! Playwright (`benches/web_bench.py`; the Python and Playwright of the
//! browser tests, made under `target/` when missing). Prints:
//!
//! * `web/first_load_1000_sessions`: navigation start to the sessions
//!   listed (`performance.now()` when the page has them), 15 loads;
//! * `web/commit_to_tile`: a tile subscribed to its own process commits
//!   there; from just before the commit is sent to the `scope_changed`
//!   frame's arrival in the tile, 200 commits;
//! * `web/delta_to_paint`: each text delta of a streamed answer, from its
//!   arrival to the animation frame after the page put it in the DOM
//!   (one frame is 16.7 ms).
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use serde_json::{Value, json};
use std::io::BufRead;
use std::path::PathBuf;
use testkit::{FakeModel, Script};

mod common;

fn python() -> PathBuf {
    let venv = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("web-python");
    let python = venv.join("bin/python");
    if !python.exists() {
        assert!(
            std::process::Command::new("python3")
                .args(["-m", "venv"])
                .arg(&venv)
                .status()
                .unwrap()
                .success()
        );
        let ok = std::process::Command::new(&python)
            .args(["-m", "pip", "install", "-q", "playwright==1.64.1"])
            .status()
            .unwrap();
        assert!(ok.success());
    }
    python
}

fn main() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let story: String = (0..300).map(|i| format!("w{i:03} ")).collect();
    let script = json!({"cycle": true, "turns": [
        {"reply": {"content": [{"type": "text", "text": story}], "stop_reason": "end_turn",
                   "usage": {"input_tokens": 10, "output_tokens": 300}},
         "pace": {"delay_ms": 5, "text_chunk": 5}}
    ]});
    let fake = runtime
        .block_on(FakeModel::start(
            Script::from_json(&script.to_string()).unwrap(),
        ))
        .unwrap();
    let project = common::project();
    let root = project.path();
    let sessions: Vec<Value> = (0..1000)
        .map(|i| {
            json!({"id": format!("s_bench{i:04}"), "name": format!("session {i}"),
            "body": {"title": format!("session {i}"), "created": "2026-11-25T00:00:00Z"},
            "placements": [{"scope": "session", "type": "instance"}]})
        })
        .collect();
    common::commit_chunks(root, &sessions);
    let mut serve = std::process::Command::new(common::HC)
        .args(["serve", "--http", "--port", "0"])
        .current_dir(root)
        .env("ANTHROPIC_BASE_URL", fake.base_url())
        .env("XDG_CONFIG_HOME", root.join(".no-user-config"))
        .env("XDG_DATA_HOME", root.join(".no-user-data"))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufReader::new(serve.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let url = line.trim().rsplit(' ').next().unwrap().to_owned();
    let out = std::process::Command::new(python())
        .arg(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("benches/web_bench.py"))
        .arg(&url)
        .arg("/usr/bin/chromium")
        .output()
        .unwrap();
    let _ = serve.kill();
    let _ = serve.wait();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let got: Value = serde_json::from_slice(&out.stdout).unwrap();
    let show = |name: &str, key: &str| {
        let q = &got[key];
        println!(
            "web/{name}: median {:.2} ms, p95 {:.2} ms, max {:.2} ms ({} samples)",
            q["median"].as_f64().unwrap_or(0.0),
            q["p95"].as_f64().unwrap_or(0.0),
            q["max"].as_f64().unwrap_or(0.0),
            q["n"]
        );
    };
    println!("web: {} sessions listed", got["sessions"]);
    show("first_load_1000_sessions", "first_load_ms");
    show("commit_to_tile", "commit_to_tile_ms");
    show("delta_to_paint", "delta_to_paint_ms");
}
