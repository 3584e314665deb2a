//! Services: a program with `runtime: "service"` started once when first
//! needed, serving the runs of programs naming it in `served_by` — each
//! run a recorded process whose ops the service does on its behalf, judged
//! against the run's boundaries — restarted after it dies, its runs failed
//! with the reason. The service is `programs/service.py` (stdlib Python).

use crate::common;
use common::*;
use engine::Context;
use protocol::{Boundary, ErrorCode, RunArgs};
use serde_json::{Value, json};
use std::path::PathBuf;
use std::time::Duration;
use substrate::{ChunkDecl, NewPlacement, PlacementType};

fn service_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/programs/service.py")
}

/// A project with the service `svc`, configured (by its host, through the
/// engine's configuration, never the substrate) with `config`.
fn with_service(config: Value) -> Harness {
    let h = Harness::with(|root| {
        let mut c = common::config(root);
        let value = vec![("FIXTURE_SERVICE".to_owned(), config.to_string())];
        c.env_values.insert("program/svc".into(), value);
        c
    });
    h.commit(vec![
        ChunkDecl::with_id("program/svc")
            .name("svc")
            .body(json!({
                "executable": "python3",
                "args": [service_path()],
                "runtime": "service",
                "text": "serves svc__* programs",
                "capabilities": {"programs": ["svc__*"]},
            }))
            .on(NewPlacement::instance("engine/program")),
    ]);
    h
}

fn echo_service() -> Harness {
    with_service(json!({"tools": ["svc__echo"], "token": "s3cr3t-t0ken"}))
}

/// A run of `program` with `task` as its argument (typed by its input type).
fn served_args(program: &str, task: Value) -> RunArgs {
    RunArgs {
        chunks: vec![
            ChunkDecl::generated()
                .body(task)
                .on(NewPlacement::instance(format!("input/{program}"))),
        ],
        ..RunArgs::default()
    }
}

async fn start(h: &Harness) -> String {
    h.engine
        .service(&Context::host(), "svc", None)
        .await
        .unwrap()
}

fn run(h: &Harness, task: Value) -> String {
    let args = served_args("svc__echo", task);
    h.engine.run(&Context::host(), "svc__echo", args).unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_served_run_is_a_process_the_service_carries_out_and_finishes() {
    let h = echo_service();
    let service = start(&h).await;
    // the service is a process like any: on its program, running
    let body = h.body(&service);
    assert_eq!(body["status"], "running");
    assert_eq!(body["program"], "program/svc");
    // it made the program it serves (it manages `svc__*`)
    let tool = h.body("program/svc__echo");
    assert_eq!(tool["served_by"], "svc");
    let p = run(&h, json!({"mode": "echo", "text": "hi"}));
    let done = h.wait(&p).await;
    assert_eq!(status(&done), ("completed".into(), None));
    assert_eq!(
        output(&done),
        json!({"echo": "hi", "program": "svc__echo", "by": service})
    );
    let process = &done.scopes[0];
    assert!(process.is_on("program/svc__echo", PlacementType::Instance));
    assert_eq!(process.body_value()["served_by"], "program/svc");
    // one service for every run: a second need finds it up
    assert_eq!(start(&h).await, service);
    let failed = h.wait(&run(&h, json!({"mode": "fail"}))).await;
    assert_eq!(
        status(&failed),
        ("failed".into(), Some("asked to fail".into()))
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn the_first_run_starts_the_service_and_its_secrets_stay_out_of_the_substrate() {
    let h = echo_service();
    // the program chunk the service will make does not exist yet: the
    // test makes it as the service would, and runs it before any start
    h.commit(vec![
        ChunkDecl::with_id("program/svc__echo")
            .name("svc__echo")
            .spec(json!({"propagate": true, "accepts": ["input/svc__echo"]}))
            .body(json!({"executable": "-", "served_by": "svc", "input_type": "input/svc__echo"}))
            .on(NewPlacement::instance("engine/program")),
        ChunkDecl::with_id("input/svc__echo").on(NewPlacement::relates("program/svc__echo")),
    ]);
    let p = run(&h, json!({"mode": "echo", "text": "first"}));
    let done = h.wait(&p).await;
    assert_eq!(output(&done)["echo"], "first");
    h.engine.shutdown().await;
    for file in ["substrate.db", "substrate.db-wal"] {
        let bytes = std::fs::read(h.dir.path().join(file)).unwrap_or_default();
        let text = String::from_utf8_lossy(&bytes);
        assert!(!text.contains("s3cr3t-t0ken"), "the secret is in {file}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_cancelled_or_timed_out_run_tells_the_service_and_acting_for_it_after_is_refused() {
    let h = echo_service();
    let service = start(&h).await;
    let p = run(&h, json!({"mode": "hang"}));
    tokio::time::sleep(Duration::from_millis(200)).await;
    h.engine.cancel(&Context::host(), &p).unwrap();
    let done = h.wait(&p).await;
    assert_eq!(status(&done), ("failed".into(), Some("cancelled".into())));
    let told = wait_for_output(&h, &service).await;
    assert_eq!(
        told,
        json!({"cancelled": p, "late_commit": "BOUNDARY_VIOLATION"})
    );
    let mut args = served_args("svc__echo", json!({"mode": "hang"}));
    args.timeout_ms = Some(300);
    let p = h.engine.run(&Context::host(), "svc__echo", args).unwrap();
    let done = h.wait(&p).await;
    assert_eq!(status(&done), ("failed".into(), Some("timeout".into())));
}

/// The first output the service commits on its own process.
async fn wait_for_output(h: &Harness, service: &str) -> Value {
    for _ in 0..200 {
        if let Some(found) = outputs(&h.read(&[service])).into_iter().next() {
            return found;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    h.engine.shutdown().await;
    panic!(
        "the service committed nothing on its process: {}",
        h.body(service)
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn ops_for_a_run_are_judged_against_that_runs_boundaries_not_the_services() {
    let h = echo_service();
    start(&h).await;
    // a program the host made, whose boundary is open (a service may not
    // make one so)
    h.commit(vec![
        ChunkDecl::with_id("notes").body(json!({"text": "mine"})),
        ChunkDecl::with_id("program/svc__wide")
            .name("svc__wide")
            .spec(json!({"propagate": true, "accepts": ["input/svc__wide"]}))
            .body(
                json!({"executable": "-", "served_by": "svc", "input_type": "input/svc__wide",
                         "boundary": "open"}),
            )
            .on(NewPlacement::instance("engine/program")),
        ChunkDecl::with_id("input/svc__wide").on(NewPlacement::relates("program/svc__wide")),
    ]);
    // a run whose write boundary is open: the service may write for it
    // what it may not write for itself
    let args = served_args("svc__wide", json!({"mode": "outside", "target": "notes"}));
    let open = h.engine.run(&Context::host(), "svc__wide", args).unwrap();
    assert_eq!(output(&h.wait(&open).await), json!({"outside": null}));
    let mut args = served_args("svc__echo", json!({"mode": "outside", "target": "notes"}));
    args.write_boundary = Some(Boundary::Roots(vec![]));
    let closed = h.engine.run(&Context::host(), "svc__echo", args).unwrap();
    assert_eq!(
        output(&h.wait(&closed).await),
        json!({"outside": "BOUNDARY_VIOLATION"})
    );
    // a run not handed to it: refused
    let other = h.run("fixture", json!({"mode": "hang"}));
    let asks = run(&h, json!({"mode": "other", "process": other}));
    assert_eq!(
        output(&h.wait(&asks).await),
        json!({"other": "BOUNDARY_VIOLATION"})
    );
    h.engine.cancel(&Context::host(), &other).unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_service_that_dies_mid_run_fails_the_run_and_the_next_run_restarts_it() {
    let h = echo_service();
    let first = start(&h).await;
    let p = run(&h, json!({"mode": "die"}));
    let done = h.wait(&p).await;
    let (state, error) = status(&done);
    assert_eq!(state, "failed");
    let error = error.unwrap();
    assert!(
        error.contains("service `program/svc` ended during the run")
            && error.contains("exit code 7"),
        "{error}"
    );
    assert_eq!(h.body(&first)["status"], "failed");
    let again = run(&h, json!({"mode": "echo", "text": "back"}));
    let done = h.wait(&again).await;
    assert_eq!(output(&done)["echo"], "back");
    assert_ne!(output(&done)["by"], json!(first), "a new service process");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_service_that_cannot_start_fails_its_needs_with_the_reason() {
    let h = with_service(json!({"exit_at_start": 3}));
    let err = h
        .engine
        .service(&Context::host(), "svc", None)
        .await
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::RunFailed);
    assert!(
        err.message.contains("ended before it was ready") && err.message.contains("exit code 3"),
        "{}",
        err.message
    );
    // the next need waits out the backoff, tries again, and says why
    let err = h
        .engine
        .service(&Context::host(), "svc", Some(5_000))
        .await
        .unwrap_err();
    assert!(err.message.contains("exit code 3"), "{}", err.message);
    let tries = h
        .read(&["program/svc"])
        .chunks
        .iter()
        .filter(|c| c.is_on("engine/process", PlacementType::Instance))
        .count();
    assert_eq!(tries, 2);
}

#[tokio::test(flavor = "multi_thread")]
async fn services_are_started_by_the_service_op_and_served_by_names_a_service() {
    let h = echo_service();
    let err = h
        .engine
        .run(&Context::host(), "svc", RunArgs::default())
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::InvalidRequest);
    assert!(err.message.contains("`service` op"), "{}", err.message);
    h.commit(vec![
        ChunkDecl::with_id("program/wrong")
            .name("wrong")
            .body(json!({"executable": "-", "served_by": "fixture"}))
            .on(NewPlacement::instance("engine/program")),
    ]);
    let err = h
        .engine
        .run(&Context::host(), "wrong", RunArgs::default())
        .unwrap_err();
    assert!(
        err.message.contains("not a service program"),
        "{}",
        err.message
    );
    let err = h
        .engine
        .service(&Context::host(), "fixture", None)
        .await
        .unwrap_err();
    assert!(err.message.contains("not a service"), "{}", err.message);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_plain_program_may_end_its_run_with_finish_before_it_exits() {
    let h = Harness::new();
    let p = h.run("fixture", json!({"mode": "finish"}));
    let done = h.wait(&p).await;
    assert_eq!(status(&done), ("completed".into(), None));
    assert_eq!(output(&done), json!({"finished": true}));
    let p = h.run(
        "fixture",
        json!({"mode": "finish", "status": "failed", "error": "it said so"}),
    );
    let done = h.wait(&p).await;
    assert_eq!(status(&done), ("failed".into(), Some("it said so".into())));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_run_that_finishes_with_a_child_still_running_ends_the_child() {
    let h = Harness::new();
    let p = h.run(
        "fixture",
        json!({"mode": "finish_leaving_a_child", "program": "fixture", "task": {"mode": "hang"}}),
    );
    let done = tokio::time::timeout(Duration::from_secs(10), h.wait(&p))
        .await
        .expect("the parent's end was answered");
    assert_eq!(status(&done).0, "completed");
    let child = output(&done)["child"].as_str().unwrap().to_owned();
    let ended = tokio::time::timeout(Duration::from_secs(10), h.wait(&child))
        .await
        .expect("the child was ended");
    assert_eq!(
        status(&ended),
        ("failed".into(), Some("parent ended".into()))
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn finish_with_its_output_commits_the_result_and_the_end_at_once() {
    let h = Harness::new();
    // It lingers after `finish`: its awaiter is answered without waiting
    // for it to exit.
    let p = h.run(
        "fixture",
        json!({"mode": "finish_with_output", "linger": 1.5}),
    );
    let started = std::time::Instant::now();
    let done = h.wait(&p).await;
    assert!(
        started.elapsed() < Duration::from_millis(1400),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(status(&done), ("completed".into(), None));
    assert_eq!(output(&done), json!({"fused": true}));
    let result = done
        .chunks
        .iter()
        .find(|c| c.is_on("engine/output", substrate::PlacementType::Instance))
        .unwrap();
    let commits = h
        .engine
        .db()
        .scope(&["commits_root"], &substrate::ScopeOpts::default())
        .unwrap();
    let made: Vec<substrate::Commit> = commits
        .chunks
        .iter()
        .filter_map(|c| serde_json::from_value(c.body_value()).ok())
        .filter(|c: &substrate::Commit| c.created.contains(&result.id))
        .collect();
    assert_eq!(made.len(), 1);
    assert!(
        made[0].chunks_modified.contains(&p),
        "the result and the end are one commit: {:?}",
        made[0]
    );
    assert_eq!(
        made[0].dispatch_id.as_deref(),
        Some(p.as_str()),
        "the commit of its result is its own"
    );
    // Its result may not carry a field only the engine writes.
    let forged = h.run(
        "fixture",
        json!({"mode": "finish_with_output", "forge": true}),
    );
    let done = h.wait(&forged).await;
    let body = done.scopes[0].body_value();
    assert_eq!(body["status"], "completed");
    assert_ne!(body["pid"], 1, "a program cannot set its pid: {body}");
    assert_eq!(body["containment"], "on", "nor say how it ran: {body}");
    assert!(
        body.get("webview").is_none(),
        "nor what a tile shows: {body}"
    );
    assert_eq!(body["totals"], "kept", "its own fields are merged: {body}");
    // A result over the body limit fails the run, saying so; nothing is
    // left unended.
    let big = h.run(
        "fixture",
        json!({"mode": "finish_with_output", "size": 9_000_000}),
    );
    let done = h.wait(&big).await;
    let (state, error) = status(&done);
    assert_eq!(state, "failed");
    assert!(error.unwrap().contains("could not be recorded"));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_service_may_write_only_programs_it_serves_named_as_managed_and_closed() {
    let program = |name: &str, body: Value| {
        json!({"id": format!("program/{name}"), "name": name, "body": body,
               "placements": [{"scope": "engine/program", "type": "instance"}]})
    };
    let served = json!({"executable": "-", "served_by": "svc"});
    let h = with_service(json!({"attempt": [
        // an executable of its choosing, with capabilities of its choosing
        program("svc__x", json!({"executable": "bash", "capabilities": {"network": true}})),
        // served by another service
        program("svc__y", json!({"executable": "-", "served_by": "fixture"})),
        // another program's name, which would make `shell` ambiguous
        {"id": "program/svc__z", "name": "shell", "body": served,
         "placements": [{"scope": "engine/program", "type": "instance"}]},
        // a boundary beyond the run's own tree
        program("svc__w", json!({"executable": "-", "served_by": "svc", "boundary": "open"})),
        // a service of its own
        program("svc__v", json!({"executable": "-", "served_by": "svc", "runtime": "service"})),
        // and what it may write
        program("svc__ok", served),
    ]}));
    let service = start(&h).await;
    let said = wait_for_output(&h, &service).await;
    let refused = json!("BOUNDARY_VIOLATION");
    assert_eq!(
        said["attempts"],
        json!([refused, refused, refused, refused, refused, null])
    );
}
