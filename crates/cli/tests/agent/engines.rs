//! Engines side by side: many `hc run` on one project at once, each with
//! an engine of its own. None may take another's live processes for the
//! leftovers of a crashed engine, and first-time set-up may race.

use crate::common::*;
use serde_json::{Value, json};

/// Turns for `n` runs that each read its notes after a slow first
/// byte (so that every run is mid-call while the others start), then end.
fn jobs(n: usize) -> Value {
    let mut turns = Vec::new();
    for i in 0..n {
        let mut first = when(
            &format!("job-{i} "),
            json!([call(
                &format!("toolu_{i}"),
                "read",
                json!({"file_path": format!("notes-{i}.txt")})
            )]),
            "tool_use",
        );
        first["pace"] = json!({"first_byte_delay_ms": 400});
        turns.push(first);
        turns.push(when(
            &format!("<note for job {i}>"),
            json!([text(&format!("finished job-{i}"))]),
            "end_turn",
        ));
    }
    json!({ "turns": turns })
}

/// A note for each job, in a file of its own.
fn notes(s: &Setup, n: usize) {
    for i in 0..n {
        s.file(&format!("notes-{i}.txt"), &format!("<note for job {i}>\n"));
    }
}

/// Runs `hc run "job-i …"` for every i, each started `apart` ms after
/// the one before; every one must succeed.
async fn all_at_once(s: &Setup, n: usize, apart: u64) {
    let runs = (0..n).map(|i| {
        let prompt = format!("job-{i} : read my notes");
        async move {
            tokio::time::sleep(std::time::Duration::from_millis(apart * i as u64)).await;
            (i, s.run(&[&prompt]).await)
        }
    });
    for (i, ran) in futures_util::future::join_all(runs).await {
        assert_eq!(ran.code, 0, "run {i} failed: {ran:?}");
        assert!(ran.stdout.contains(&format!("finished job-{i}")), "{ran:?}");
    }
}

/// Every process the project ever ran completed: none was failed by
/// another engine.
fn all_completed(s: &Setup, n: usize) {
    let mut agents = 0;
    for session in s.sessions() {
        for p in s.processes(&session) {
            assert_eq!(p["status"], "completed", "{p}");
            assert_eq!(p.get("error"), None, "{p}");
            agents += 1;
        }
    }
    assert_eq!(agents, n, "one agent process per run");
    let reads = processes_of(s, "read");
    assert_eq!(reads.len(), n);
    for p in reads {
        assert_eq!(p["status"], "completed", "{p}");
        assert_eq!(p.get("error"), None, "{p}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn twenty_runs_at_once_on_one_project_all_succeed_and_lose_nothing() {
    let s = Setup::new(jobs(20)).await;
    notes(&s, 20);
    // 30 ms apart: most start while others are mid-call.
    all_at_once(&s, 20, 30).await;
    all_completed(&s, 20);
    assert_eq!(s.sessions().len(), 20);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn ten_first_runs_at_once_in_a_fresh_directory_all_succeed() {
    let s = Setup::bare(jobs(10)).await;
    notes(&s, 10);
    all_at_once(&s, 10, 0).await;
    all_completed(&s, 10);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_crashed_engines_processes_are_failed_by_the_next_one() {
    // One run killed mid-call leaves its processes `running`; the next
    // engine, seeing the first one's lease free, fails them.
    let s = Setup::new(jobs(2)).await;
    notes(&s, 2);
    let mut first = s.hc(&["run", "job-0 : read my notes"]);
    let mut child = first.spawn().unwrap();
    wait_for("the first run's agent", || {
        s.sessions()
            .iter()
            .any(|session| !s.processes(session).is_empty())
    })
    .await;
    child.kill().await.unwrap();
    child.wait().await.unwrap();
    let ran = s.run(&["job-1 : read my notes"]).await;
    assert_eq!(ran.code, 0, "{ran:?}");
    let failed: Vec<Value> = s
        .sessions()
        .iter()
        .flat_map(|session| s.processes(session))
        .filter(|p| p["status"] == "failed")
        .collect();
    assert!(!failed.is_empty(), "the killed run's agent stays running");
    for p in failed {
        assert_eq!(p["error"], "engine restart", "{p}");
    }
}
