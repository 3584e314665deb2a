//! Faults: programs that print garbage, exit non-zero, hang past their
//! timeout, fork children and are cancelled, flood requests, or die by a
//! signal. The engine keeps serving the others, and each process chunk says
//! exactly what happened.

use crate::common;
use common::*;
use engine::Context;
use protocol::RunArgs;
use serde_json::json;
use std::time::{Duration, Instant};

#[tokio::test(flavor = "multi_thread")]
async fn garbage_on_stdout_kills_the_program_and_says_so() {
    let h = Harness::new();
    let p = h.run("fixture", json!({"mode": "garbage"}));
    let done = h.wait(&p).await;
    assert_eq!(
        status(&done),
        ("failed".into(), Some("protocol: malformed output".into()))
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_non_zero_exit_fails_with_its_code_and_keeps_stderr() {
    let h = Harness::new();
    let p = h.run(
        "fixture",
        json!({"mode": "exit", "code": 7, "stderr": "something broke\n"}),
    );
    let done = h.wait(&p).await;
    assert_eq!(status(&done), ("failed".into(), Some("exit code 7".into())));
    let body = done.scopes[0].body_value();
    assert_eq!(body["exit_code"], 7);
    assert_eq!(body["stderr_tail"], "something broke\n");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_stderr_tail_is_the_last_64_kib() {
    let h = Harness::new();
    let big = format!("{}END", "x".repeat(100 * 1024));
    let p = h.run("fixture", json!({"mode": "exit", "code": 1, "stderr": big}));
    let body = h.wait(&p).await.scopes[0].body_value();
    let tail = body["stderr_tail"].as_str().unwrap();
    assert_eq!(tail.len(), engine::STDERR_TAIL_BYTES);
    assert!(tail.ends_with("END"));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_program_that_hangs_past_its_timeout_is_killed() {
    let h = Harness::new();
    let mut args = Harness::task(json!({"mode": "hang"}));
    args.timeout_ms = Some(700);
    let started = Instant::now();
    let p = h.engine.run(&Context::host(), "fixture", args).unwrap();
    let done = h.wait(&p).await;
    assert_eq!(status(&done), ("failed".into(), Some("timeout".into())));
    assert_eq!(
        done.scopes[0].body_value()["timeout_ms"],
        700,
        "the run's timeout overrides the program's"
    );
    assert!(started.elapsed() >= Duration::from_millis(700));
    let pid = done.scopes[0].body_value()["pid"].as_i64().unwrap();
    assert!(!alive(pid), "the hung program is gone");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_parents_clock_stands_still_while_it_awaits_its_children() {
    let h = Harness::new();
    // the parent may live 1.5 s, its child takes 2.5 s: awaiting it does not count
    let mut args = Harness::task(
        json!({"mode": "run", "program": "fixture", "task": {"mode": "hang", "seconds": 2.5}}),
    );
    args.timeout_ms = Some(1500);
    let p = h.engine.run(&Context::host(), "fixture", args).unwrap();
    let done = h.wait(&p).await;
    assert_eq!(
        status(&done),
        ("completed".into(), None),
        "{:?}",
        done.scopes[0].body_value()
    );
    assert_eq!(output(&done)["status"], "completed");
}

#[tokio::test(flavor = "multi_thread")]
async fn cancel_kills_the_program_and_everything_it_forked() {
    let h = Harness::new();
    let p = h.run("fixture", json!({"mode": "fork", "n": 3}));
    // wait for the output saying the children are forked
    loop {
        if !outputs(&h.read(&[p.as_str()])).is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // the pids it reports are its own namespace's; find them from here
    let leader = h.body(&p)["pid"].as_i64().unwrap();
    let members = group_members(leader);
    assert!(
        members.len() >= 5,
        "trampoline, init, program and 3 children: {members:?}"
    );
    h.engine.cancel(&Context::host(), &p).unwrap();
    h.engine.cancel(&Context::host(), &p).unwrap(); // idempotent
    let done = h.wait(&p).await;
    assert_eq!(status(&done), ("failed".into(), Some("cancelled".into())));
    assert_all_die(&members, "the cancel").await;
    h.engine.cancel(&Context::host(), "p_unknown").unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn cancelling_a_parent_ends_its_children_recursively() {
    let h = Harness::new();
    let top = h.run(
        "fixture",
        json!({"mode": "run", "program": "fixture", "task": {"mode": "run", "program": "fixture", "task": {"mode": "hang"}}}),
    );
    // wait until the grandchild exists
    let grandchild = loop {
        let running: Vec<String> = h
            .read(&["engine/process"])
            .chunks
            .iter()
            .filter(|c| c.body_value()["status"] == "running" && c.id != top)
            .map(|c| c.id.clone())
            .collect();
        if running.len() == 2 {
            break running;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    h.engine.cancel(&Context::host(), &top).unwrap();
    let done = h.wait(&top).await;
    assert_eq!(status(&done).1.as_deref(), Some("cancelled"));
    for id in grandchild {
        assert_eq!(
            status(&h.wait(&id).await),
            ("failed".into(), Some("parent ended".into()))
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_flood_of_100_000_requests_is_answered_and_others_are_served_meanwhile() {
    let h = Harness::new();
    let mut args = Harness::task(json!({"mode": "flood", "n": 100_000}));
    args.timeout_ms = Some(300_000);
    let flood = h.engine.run(&Context::host(), "fixture", args).unwrap();
    // while it floods, another program runs to completion
    tokio::time::sleep(Duration::from_millis(200)).await;
    let other = h.run("fixture", json!({"mode": "output", "text": "still here"}));
    let other_done = tokio::time::timeout(Duration::from_secs(30), h.wait(&other))
        .await
        .unwrap();
    assert_eq!(output(&other_done)["echo"], "still here");
    let done = h.wait(&flood).await;
    assert_eq!(
        status(&done).0,
        "completed",
        "{:?}",
        done.scopes[0].body_value()
    );
    assert_eq!(output(&done)["answered"], 100_000);
}

#[tokio::test(flavor = "multi_thread")]
async fn death_by_signal_is_reported_with_the_signal() {
    let h = Harness::new();
    let p = h.run("fixture", json!({"mode": "signal", "signal": 9}));
    assert_eq!(
        status(&h.wait(&p).await),
        ("failed".into(), Some("killed by signal 9".into()))
    );
    let p = h.run("fixture", json!({"mode": "signal", "signal": 15}));
    assert_eq!(
        status(&h.wait(&p).await),
        ("failed".into(), Some("killed by signal 15".into()))
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn an_executable_that_cannot_start_fails_with_the_reason() {
    let h = Harness::new();
    h.commit(vec![
        substrate::ChunkDecl::with_id("program/missing")
            .name("missing")
            .body(json!({"executable": "./no/such/file"}))
            .on(substrate::NewPlacement::instance("engine/program")),
    ]);
    let p = h
        .engine
        .run(&Context::host(), "missing", RunArgs::default())
        .unwrap();
    let (s, error) = status(&h.wait(&p).await);
    assert_eq!(s, "failed");
    assert!(error.unwrap().starts_with("spawn failed: "));
}

#[tokio::test(flavor = "multi_thread")]
async fn faults_side_by_side_each_end_as_they_should() {
    let h = Harness::new();
    let runs = [
        (
            "garbage",
            json!({"mode": "garbage"}),
            "failed",
            Some("protocol: malformed output"),
        ),
        (
            "exit",
            json!({"mode": "exit", "code": 2}),
            "failed",
            Some("exit code 2"),
        ),
        (
            "signal",
            json!({"mode": "signal", "signal": 9}),
            "failed",
            Some("killed by signal 9"),
        ),
        (
            "ok",
            json!({"mode": "output", "text": "fine"}),
            "completed",
            None,
        ),
    ];
    let ids: Vec<String> = runs
        .iter()
        .map(|(_, task, ..)| h.run("fixture", task.clone()))
        .collect();
    for (id, (label, _, want_status, want_error)) in ids.iter().zip(&runs) {
        let (s, e) = status(&h.wait(id).await);
        assert_eq!(
            (s.as_str(), e.as_deref()),
            (*want_status, *want_error),
            "{label}"
        );
    }
}
