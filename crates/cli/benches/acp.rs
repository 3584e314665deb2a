//! `hc acp` as an editor drives it (docs/performance.md): one `hc acp`
//! process, a new session every 20 turns (an editor's thread), the fake
//! model answering at once.
//!
//! - `acp/first_chunk`: from writing a `session/prompt` line to reading
//!   the first `agent_message_chunk` (the model answers with text at once).
//! - `acp/tool_update`: a turn whose model calls `read` (allowed) and then
//!   answers; after the runs, `acp/tool_update_lag` prints the median and
//!   p90 of each `read`'s completed `tool_call_update` arriving at the
//!   editor less the commit of its `tool-result`, and less the end the
//!   engine recorded for its process (the record's times are cut to the
//!   millisecond, so the figures are upper bounds).
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant, SystemTime};
use substrate::{PlacementType, ScopeOpts, Substrate};
use testkit::{FakeModel, Script};

mod common;

/// `hc acp` driven line by line.
struct Editor {
    child: Child,
    stdin: ChildStdin,
    out: BufReader<ChildStdout>,
    session: String,
    next: u64,
    /// Turns on the session so far (a new one every [`TURNS_A_SESSION`]).
    turns: usize,
    cwd: String,
}

/// Turns on one session before the next is made: an editor's thread is
/// tens of turns, and a session of a thousand would time its reading.
const TURNS_A_SESSION: usize = 20;

impl Editor {
    fn start(root: &Path, fake: &FakeModel) -> Editor {
        let mut child = Command::new(common::HC)
            .arg("acp")
            .current_dir(root)
            .env("ANTHROPIC_BASE_URL", fake.base_url())
            .env("ANTHROPIC_API_KEY", "bench-key")
            .env("XDG_CONFIG_HOME", root.join(".no-user-config"))
            .env("XDG_DATA_HOME", root.join(".no-user-data"))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let out = BufReader::new(child.stdout.take().unwrap());
        let mut editor = Editor {
            child,
            stdin,
            out,
            session: String::new(),
            next: 1,
            turns: 0,
            cwd: root.display().to_string(),
        };
        editor.call("initialize", json!({"protocolVersion": 1}));
        editor.new_session();
        editor
    }

    fn new_session(&mut self) {
        let params = json!({"cwd": self.cwd, "mcpServers": []});
        let made = self.call("session/new", params);
        self.session = made["result"]["sessionId"].as_str().unwrap().to_owned();
        self.turns = 0;
    }

    fn send(&mut self, method: &str, params: Value) -> u64 {
        let id = self.next;
        self.next += 1;
        let line = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        writeln!(self.stdin, "{line}").unwrap();
        self.stdin.flush().unwrap();
        id
    }

    fn line(&mut self) -> Value {
        let mut line = String::new();
        assert!(self.out.read_line(&mut line).unwrap() > 0, "hc acp ended");
        serde_json::from_str(&line).unwrap()
    }

    /// Reads until the answer to `id`, handing every other line to `seen`.
    fn until_answer(&mut self, id: u64, mut seen: impl FnMut(&Value)) -> Value {
        loop {
            let line = self.line();
            if line["id"] == id && line.get("method").is_none() {
                return line;
            }
            seen(&line);
        }
    }

    fn call(&mut self, method: &str, params: Value) -> Value {
        let id = self.send(method, params);
        self.until_answer(id, |_| {})
    }

    /// A new session when this one has had its turns (before the clock).
    fn rotate(&mut self) {
        if self.turns == TURNS_A_SESSION {
            self.new_session();
        }
        self.turns += 1;
    }

    fn prompt(&mut self) -> u64 {
        let params = json!({"sessionId": self.session, "prompt": [{"type": "text", "text": "go"}]});
        self.send("session/prompt", params)
    }

    /// One turn: the time to its first message chunk.
    fn first_chunk(&mut self) -> Duration {
        self.rotate();
        let started = Instant::now();
        let id = self.prompt();
        let mut first = None;
        self.until_answer(id, |line| {
            if first.is_none() && line["params"]["update"]["sessionUpdate"] == "agent_message_chunk"
            {
                first = Some(started.elapsed());
            }
        });
        first.expect("no agent_message_chunk")
    }

    /// One turn: when each completed tool update arrived.
    fn tool_turn(&mut self) -> Vec<SystemTime> {
        self.rotate();
        let id = self.prompt();
        let mut arrived = Vec::new();
        self.until_answer(id, |line| {
            let update = &line["params"]["update"];
            if update["sessionUpdate"] == "tool_call_update" && update["status"] == "completed" {
                arrived.push(SystemTime::now());
            }
        });
        arrived
    }
}

impl Drop for Editor {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn fake(runtime: &tokio::runtime::Runtime, turns: Value) -> FakeModel {
    let script = json!({"cycle": true, "turns": turns});
    let script = Script::from_json(&script.to_string()).unwrap();
    runtime.block_on(FakeModel::start(script)).unwrap()
}

fn reply(content: Value, stop: &str) -> Value {
    json!({"reply": {"content": content, "stop_reason": stop,
        "usage": {"input_tokens": 10, "output_tokens": 5}}})
}

/// The recorded ends of the project's `read` processes, in order.
fn read_ends(root: &Path) -> Vec<SystemTime> {
    let db = Substrate::open(root.join(".hermitcrab/substrate.db")).unwrap();
    let read = db.scope(&["program/read"], &ScopeOpts::default()).unwrap();
    let mut ends: Vec<SystemTime> = (read.chunks.iter())
        .filter(|c| c.is_on("engine/process", PlacementType::Instance))
        .filter_map(|c| {
            let body = c.body_value();
            humantime::parse_rfc3339(body["ended"].as_str()?).ok()
        })
        .collect();
    ends.sort();
    ends
}

/// The times of the project's `tool-result` commits, in order.
fn result_commits(root: &Path) -> Vec<SystemTime> {
    let out = Command::new(common::HC)
        .args(["log", "--limit", "1000000", "--json"])
        .current_dir(root)
        .output()
        .unwrap();
    let commits: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
    let mut times: Vec<SystemTime> = (commits.iter())
        .filter(|c| {
            (c["touched_scopes"].as_array()).is_some_and(|s| s.contains(&json!("tool-result")))
        })
        .filter_map(|c| humantime::parse_rfc3339(c["timestamp"].as_str()?).ok())
        .collect();
    times.sort();
    times
}

/// The median and p90 of `came − at` (milliseconds; earlier is
/// negative), paired from the newest (the log reads the newest commits).
fn lags(at: &[SystemTime], came: &[SystemTime]) -> (usize, f64, f64) {
    let mut lags: Vec<f64> = (at.iter().rev().zip(came.iter().rev()))
        .map(|(at, came)| match came.duration_since(*at) {
            Ok(after) => after.as_secs_f64() * 1e3,
            Err(before) => -before.duration().as_secs_f64() * 1e3,
        })
        .collect();
    lags.sort_by(f64::total_cmp);
    let n = lags.len();
    (n, lags[n / 2], lags[n * 9 / 10])
}

fn bench(c: &mut Criterion) {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let mut group = c.benchmark_group("acp");
    group
        .sample_size(30)
        .measurement_time(Duration::from_secs(20));

    let talk = fake(
        &runtime,
        json!([reply(json!([{"type": "text", "text": "hi"}]), "end_turn")]),
    );
    let project = common::project();
    let mut editor = Editor::start(project.path(), &talk);
    editor.first_chunk();
    group.bench_function("first_chunk", |b| {
        b.iter_custom(|iters| (0..iters).map(|_| editor.first_chunk()).sum())
    });
    drop(editor);

    let tools = fake(
        &runtime,
        json!([
            reply(
                json!([{"type": "tool_use", "id": "r1", "name": "read", "input": {"file_path": "a.txt"}}]),
                "tool_use"
            ),
            reply(json!([{"type": "text", "text": "read it"}]), "end_turn"),
        ]),
    );
    let project = common::project();
    let root = project.path();
    std::fs::write(root.join("a.txt"), "one\n").unwrap();
    let mut editor = Editor::start(root, &tools);
    let mut arrived = Vec::new();
    group.bench_function("tool_update", |b| {
        b.iter_custom(|iters| {
            let started = Instant::now();
            for _ in 0..iters {
                arrived.extend(editor.tool_turn());
            }
            started.elapsed()
        })
    });
    group.finish();
    drop(editor);
    let (n, median, p90) = lags(&read_ends(root), &arrived);
    println!(
        "acp/tool_update_lag ({n} updates): from the process's recorded end: median {median:.2} ms, \
         p90 {p90:.2} ms"
    );
    let (n, median, p90) = lags(&result_commits(root), &arrived);
    println!(
        "acp/tool_update_lag ({n} updates): from the tool-result's commit: median {median:.2} ms, \
         p90 {p90:.2} ms (negative: the update came first)"
    );
}

criterion_group!(benches, bench);
criterion_main!(benches);
