//! Runs and awaits, as the seed's examples: sequential, parallel,
//! fire-and-forget; awaiting several and the already ended; what a process
//! chunk looks like; how programs are named.

use crate::common;
use common::*;
use engine::Context;
use protocol::{ErrorCode, RunArgs};
use serde_json::json;
use substrate::{ChunkDecl, NewPlacement, PlacementType, ScopeOpts, TypeFilter};

#[tokio::test(flavor = "multi_thread")]
async fn a_run_is_a_process_chunk_with_boundaries_arguments_and_a_result() {
    let h = Harness::new();
    h.session("s_1");
    let mut args = Harness::task(json!({"mode": "output", "text": "hi"}));
    args.session = Some("s_1".into());
    let p = h.engine.run(&Context::host(), "fixture", args).unwrap();
    assert!(p.starts_with("p_"));
    let done = h.wait(&p).await;
    assert_eq!(status(&done), ("completed".into(), None));
    assert_eq!(output(&done), json!({"echo": "hi", "arguments": 1}));
    let process = &done.scopes[0];
    for scope in ["program/fixture", "engine/process", "s_1"] {
        assert!(
            process.is_on(scope, PlacementType::Instance),
            "process not placed on {scope}"
        );
    }
    let body = process.body_value();
    assert_eq!(body["program"], "program/fixture");
    assert_eq!(body["timeout_ms"], 30_000);
    assert_eq!(body["exit_code"], 0);
    assert!(
        body["pid"].as_u64().is_some() && body["started"].is_string() && body["ended"].is_string()
    );
    // the boundary chunks are related to the process, typed, with their levels
    let related =
        h.db.scope(
            &[p.as_str()],
            &ScopeOpts {
                kind: TypeFilter::Relates,
                ..ScopeOpts::default()
            },
        )
        .unwrap();
    let kinds: Vec<bool> = ["read-boundary", "write-boundary"]
        .iter()
        .map(|t| {
            related
                .chunks
                .iter()
                .any(|c| c.is_on(t, PlacementType::Instance))
        })
        .collect();
    assert_eq!(kinds, vec![true, true]);
    // the session lists its process
    let in_session = h.read(&["s_1", "engine/process"]);
    assert_eq!(
        in_session
            .chunks
            .iter()
            .map(|c| c.id.clone())
            .collect::<Vec<_>>(),
        vec![p]
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn sequential_parallel_and_fire_and_forget_from_a_program() {
    let h = Harness::new();
    let sequential = h.run(
        "fixture",
        json!({"mode": "run", "program": "fixture", "task": {"mode": "output", "text": "one"}}),
    );
    let parallel = h.run(
        "fixture",
        json!({"mode": "parallel", "program": "fixture", "tasks": [
            {"task": {"mode": "output", "text": "a"}},
            {"task": {"mode": "output", "text": "b"}},
            {"task": {"mode": "output", "text": "c"}}
        ]}),
    );
    let fire = h.run(
        "fixture",
        json!({"mode": "fire", "program": "fixture", "task": {"mode": "output", "text": "later"}}),
    );
    let s = output(&h.wait(&sequential).await);
    assert_eq!(s["status"], "completed");
    assert_eq!(s["outputs"], json!([{"echo": "one", "arguments": 1}]));
    let p = output(&h.wait(&parallel).await);
    assert_eq!(
        p["outputs"],
        json!([[{"echo": "a", "arguments": 1}], [{"echo": "b", "arguments": 1}], [{"echo": "c", "arguments": 1}]])
    );
    let f = outputs(&h.wait(&fire).await);
    assert_eq!(f[0], json!({"working": "while the child runs"}));
    assert_eq!(f[1]["outputs"], json!([{"echo": "later", "arguments": 1}]));
    // a program's runs hang under its own process
    let child = s["child"].as_str().unwrap();
    let child_chunk = h.read(&[child]).scopes[0].clone();
    assert!(child_chunk.is_on(&sequential, PlacementType::Instance));
}

#[tokio::test(flavor = "multi_thread")]
async fn await_several_and_an_already_ended_process() {
    let h = Harness::new();
    let a = h.run("fixture", json!({"mode": "output", "text": "a"}));
    let b = h.run("fixture", json!({"mode": "exit", "code": 3}));
    let both = h
        .engine
        .await_processes(&Context::host(), &[a.clone(), b.clone()])
        .await
        .unwrap();
    assert_eq!(status(&both[&a]).0, "completed");
    assert_eq!(
        status(&both[&b]),
        ("failed".into(), Some("exit code 3".into()))
    );
    // again, long after: answered from the substrate
    let again = h
        .engine
        .await_processes(&Context::host(), &[a.clone(), b.clone()])
        .await
        .unwrap();
    assert_eq!(again[&a].scopes, both[&a].scopes);
    let missing = h
        .engine
        .await_processes(&Context::host(), &["p_nope".to_owned()])
        .await
        .unwrap_err();
    assert_eq!(missing.code, ErrorCode::NotFound);
}

#[tokio::test(flavor = "multi_thread")]
async fn programs_are_named_by_id_or_by_a_unique_name() {
    let h = Harness::new();
    let by_id = h.run("program/fixture", json!({"mode": "output", "text": "x"}));
    assert_eq!(status(&h.wait(&by_id).await).0, "completed");
    let e = h
        .engine
        .run(&Context::host(), "no-such-program", RunArgs::default())
        .unwrap_err();
    assert_eq!(e.code, ErrorCode::NotFound);
    assert!(e.message.contains("no-such-program"));
    h.commit(vec![
        ChunkDecl::with_id("program/other-fixture")
            .name("fixture")
            .body(json!({"executable": "python3"}))
            .on(NewPlacement::instance("engine/program")),
    ]);
    let e = h
        .engine
        .run(&Context::host(), "fixture", RunArgs::default())
        .unwrap_err();
    assert_eq!(e.code, ErrorCode::InvalidRequest);
    assert!(
        e.message.contains("ambiguous") && e.message.contains("program/other-fixture"),
        "{e}"
    );
    // `agent` names the agent program, never an `agent` archetype
    h.commit(vec![ChunkDecl::with_id("agent").name("agent")]);
    h.program("agent", json!([]), 30_000);
    let p = h
        .engine
        .run(&Context::host(), "agent", RunArgs::default())
        .unwrap();
    let done = h.wait(&p).await;
    assert!(done.scopes[0].is_on("program/agent", PlacementType::Instance));
    assert!(!done.scopes[0].is_on("agent", PlacementType::Instance));
}

#[tokio::test(flavor = "multi_thread")]
async fn webview_programs_are_refused_with_a_reason() {
    let h = Harness::new();
    h.commit(vec![
        ChunkDecl::with_id("program/tile")
            .name("tile")
            .body(json!({"executable": "tile.html", "runtime": "webview"}))
            .on(NewPlacement::instance("engine/program")),
    ]);
    let e = h
        .engine
        .run(&Context::host(), "tile", RunArgs::default())
        .unwrap_err();
    assert_eq!(e.code, ErrorCode::InvalidRequest);
    assert!(e.message.contains("webview"), "{e}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_run_that_breaks_the_programs_spec_creates_nothing() {
    let h = Harness::new();
    let before = h.db.head().unwrap();
    // an argument the program does not accept (not typed input/fixture)
    let args = RunArgs {
        chunks: vec![ChunkDecl::generated().body(json!({"mode": "output"}))],
        ..RunArgs::default()
    };
    let e = h.engine.run(&Context::host(), "fixture", args).unwrap_err();
    assert_eq!(e.code, ErrorCode::ValidationError, "{e}");
    assert_eq!(h.db.head().unwrap(), before, "nothing was committed");
    let e = h
        .engine
        .run(
            &Context::host(),
            "fixture",
            RunArgs {
                session: Some("s_missing".into()),
                ..Harness::task(json!({}))
            },
        )
        .unwrap_err();
    assert_eq!(e.code, ErrorCode::NotFound);
}
