//! Restart: the host is killed (SIGKILL) mid-run; reopening the engine
//! marks the runs it left behind failed with "engine restart", and nothing
//! else is lost.

use crate::common;
use common::*;
use engine::{Context, Engine};
use serde_json::json;
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::Arc;
use substrate::Substrate;

/// The child: a host on the parent's project that starts two long runs,
/// reports their ids, and waits to be killed.
#[tokio::test(flavor = "multi_thread")]
#[ignore = "run by `a_killed_host_leaves_runs_that_reopening_marks_failed` as a child process"]
async fn restart_host_child() {
    let Ok(dir) = std::env::var("ENGINE_RESTART_DIR") else {
        return;
    };
    let db = Arc::new(Substrate::open(std::path::Path::new(&dir).join("substrate.db")).unwrap());
    let engine = Engine::open_with(db, common::config(std::path::Path::new(&dir))).unwrap();
    for _ in 0..2 {
        let p = engine
            .run(
                &Context::host(),
                "fixture",
                Harness::task(json!({"mode": "hang"})),
            )
            .unwrap();
        println!("hc-test-process {p}");
    }
    tokio::time::sleep(std::time::Duration::from_secs(600)).await;
}

#[test]
fn a_killed_host_leaves_runs_that_reopening_marks_failed() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let h = rt.block_on(async { Harness::new() });
    h.session("s_keep");
    let kept = h.commit(vec![
        substrate::ChunkDecl::generated()
            .body(json!({"text": "survives"}))
            .on(substrate::NewPlacement::instance("s_keep"))
            .on(substrate::NewPlacement::instance("prompt")),
    ]);
    let finished = rt.block_on(async {
        let p = h.run("fixture", json!({"mode": "output", "text": "done before"}));
        h.wait(&p).await;
        p
    });
    let Harness { dir, db, engine } = h;
    drop(engine);
    drop(db);

    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--ignored",
            "--exact",
            "restart::restart_host_child",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("ENGINE_RESTART_DIR", dir.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut running = Vec::new();
    let mut seen = Vec::new();
    while running.len() < 2 {
        let line = lines
            .next()
            .unwrap_or_else(|| panic!("the child host ended early: {seen:?}"))
            .unwrap();
        seen.push(line.clone());
        // libtest's "test … ... " may share the line with the first marker
        if let Some((_, p)) = line.split_once("hc-test-process ") {
            running.push(p.trim().to_owned());
        }
    }
    child.kill().unwrap(); // SIGKILL: no cleanup of any kind
    child.wait().unwrap();
    // This process's user, as the directory is named.
    let uid = std::os::unix::fs::MetadataExt::uid(&std::fs::metadata("/proc/self").unwrap());
    // (each run's is its id and a random suffix)
    let temp = |p: &str| {
        let mine = std::env::temp_dir().join(format!("hermitcrab-{uid}"));
        std::fs::read_dir(mine).unwrap().flatten().any(|e| {
            e.file_name()
                .to_string_lossy()
                .starts_with(&format!("{p}."))
        })
    };
    for p in &running {
        assert!(temp(p), "a contained run has its temp dir");
    }

    let h = rt.block_on(async { Harness::reopen(dir) });
    for p in &running {
        assert!(!temp(p), "reopening removes a stale run's temp dir");
    }
    for p in &running {
        let body = h.body(p);
        assert_eq!(body["status"], "failed", "{body}");
        assert_eq!(body["error"], "engine restart");
        assert!(body["ended"].is_string());
        // the orphaned program itself is not ours to keep: end it
        if let Some(pid) = body["pid"].as_i64() {
            let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
        }
    }
    assert_eq!(
        h.body(&finished)["status"],
        "completed",
        "finished runs are untouched"
    );
    let session = h.read(&["s_keep"]);
    assert_eq!(session.chunks.len(), 1);
    assert_eq!(session.chunks[0].id, kept.created[0]);
    let check: String = rusqlite_check(&h);
    assert_eq!(check, "ok");
}

fn rusqlite_check(h: &Harness) -> String {
    let out = Command::new("python3")
        .args(["-c", "import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute('PRAGMA integrity_check').fetchone()[0])"])
        .arg(h.dir.path().join("substrate.db"))
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

#[tokio::test(flavor = "multi_thread")]
async fn an_engine_opened_beside_a_live_one_leaves_its_runs_alone() {
    let h = Harness::new();
    let live = h.run("fixture", json!({"mode": "hang", "seconds": 0.6}));
    let beside = Arc::new(Substrate::open(h.dir.path().join("substrate.db")).unwrap());
    let second = Engine::open_with(beside, common::config(h.dir.path())).unwrap();
    let body = h.body(&live);
    assert_ne!(body["status"], "failed", "{body}");
    assert!(body["engine"].is_string(), "a run names its engine: {body}");
    h.wait(&live).await;
    let body = h.body(&live);
    assert_eq!(body["status"], "completed", "{body}");
    assert!(body.get("error").is_none(), "{body}");
    drop(second);
}
