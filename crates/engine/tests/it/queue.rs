//! Queued runs at the engine's own API: a run committed `pending` with a
//! placement waits for an engine (reopening does not fail it), an engine
//! claims it under a lease in the substrate, two engines racing for one
//! run leave one winner, a commit under an old epoch or after the lease
//! expired is fenced, and a gone engine's run is `engine lost`.

use crate::common;
use common::*;
use engine::{Context, Engine};
use protocol::ErrorCode;
use protocol::process::{Placement, ProcessBody};
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;
use substrate::ChunkDecl;

fn queued_args(task: Value) -> protocol::RunArgs {
    let mut args = Harness::task(task);
    args.placement = Some(Placement::default());
    args
}

fn queue(h: &Harness, task: Value) -> String {
    h.engine
        .run(&Context::host(), "fixture", queued_args(task))
        .unwrap()
}

fn body(h: &Harness, id: &str) -> ProcessBody {
    ProcessBody::parse(&h.body(id))
}

/// Another engine on the same substrate (the same project), configured as
/// `make` says.
fn beside(h: &Harness, lease_ms: u64) -> Engine {
    let mut config = common::config(h.dir.path());
    config.containment = engine::contain::Containment::Off;
    config.lease_ms = lease_ms;
    Engine::open_with(Arc::clone(&h.db), config).unwrap()
}

/// Waits (at most 30 s) until `path` holds the fixture's answers.
async fn report(path: &std::path::Path) -> Vec<String> {
    for _ in 0..300 {
        if let Ok(text) = std::fs::read_to_string(path)
            && let Ok(answers) = serde_json::from_str(&text)
        {
            return answers;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("no report at {}", path.display());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_queued_run_waits_for_an_engine_and_runs_once_claimed() {
    let h = Harness::uncontained();
    let id = queue(&h, json!({"mode": "output", "text": "from the queue"}));
    let waiting = body(&h, &id);
    assert_eq!(waiting.status, protocol::process::ProcessStatus::Pending);
    assert!(waiting.queued(), "{waiting:?}");
    assert_eq!(waiting.engine, None, "no engine runs it yet");
    // an engine opening on the project leaves it waiting
    let worker = beside(&h, engine::LEASE_MS);
    assert!(body(&h, &id).queued(), "opening an engine does not fail it");
    assert!(!engine::process_gone(&h.db, &body(&h, &id)));
    let queue: Vec<String> = worker.queued().unwrap().into_iter().map(|q| q.0).collect();
    assert_eq!(queue, vec![id.clone()]);
    // the first engine awaits a run another engine carries
    let awaited = tokio::spawn({
        let engine = h.engine.clone();
        let ids = vec![id.clone()];
        async move { engine.await_processes(&Context::host(), &ids).await }
    });
    assert_eq!(worker.claim(&id).unwrap(), id);
    let done = tokio::time::timeout(Duration::from_secs(30), awaited)
        .await
        .expect("await across engines ends")
        .unwrap()
        .unwrap();
    assert_eq!(status(&done[&id]).0, "completed");
    assert_eq!(output(&done[&id])["echo"], "from the queue");
    let ran = body(&h, &id);
    assert_eq!(ran.engine.as_deref(), Some(worker.id()));
    assert_eq!(ran.epoch, Some(1));
    assert_eq!(ran.host.as_deref(), Some(engine::host_name().as_str()));
    let lease = h.body(worker.id());
    assert!(lease["expires_ms"].as_u64().unwrap() > 0, "{lease}");
    assert!(worker.queued().unwrap().is_empty());
    // claimed once: a second claim is refused
    let again = worker.claim(&id).unwrap_err();
    assert_eq!(again.code, ErrorCode::Fenced, "{again}");
}

#[tokio::test(flavor = "multi_thread")]
async fn two_engines_racing_for_one_run_leave_one_winner() {
    let h = Harness::uncontained();
    for _ in 0..5 {
        let id = queue(&h, json!({"mode": "output", "text": "once"}));
        let (a, b) = (beside(&h, engine::LEASE_MS), beside(&h, engine::LEASE_MS));
        let barrier = Arc::new(std::sync::Barrier::new(2));
        let race = |engine: Engine| {
            let (id, barrier) = (id.clone(), Arc::clone(&barrier));
            let rt = tokio::runtime::Handle::current();
            std::thread::spawn(move || {
                let _guard = rt.enter();
                barrier.wait();
                engine.claim(&id)
            })
        };
        let (ra, rb) = (race(a.clone()), race(b.clone()));
        let results = [ra.join().unwrap(), rb.join().unwrap()];
        let won: Vec<_> = results.iter().filter(|r| r.is_ok()).collect();
        assert_eq!(won.len(), 1, "{results:?}");
        let lost = results.iter().find_map(|r| r.as_ref().err()).unwrap();
        assert_eq!(lost.code, ErrorCode::Fenced, "{lost}");
        assert!(lost.message.contains("claimed it first"), "{lost}");
        let done = h.wait(&id).await;
        assert_eq!(status(&done).0, "completed");
        assert_eq!(outputs(&done).len(), 1, "run once");
        a.shutdown().await;
        b.shutdown().await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_commit_under_an_old_epoch_is_fenced() {
    let h = Harness::uncontained();
    let report_at = h.dir.path().join("answers.json");
    let id = queue(
        &h,
        json!({"mode": "later", "seconds": 1, "report": report_at,
               "ops": [{"op": "commit", "declaration": {"chunks": [
                   {"id": "c_late", "body": {"text": "late"}, "placements": [{"scope": "$me", "type": "instance"}]}]}}]}),
    );
    let worker = beside(&h, engine::LEASE_MS);
    worker.claim(&id).unwrap();
    // another claim of the run (as a re-queue and a claim elsewhere would make)
    h.commit(vec![
        ChunkDecl::with_id(&id).merge_body(json!({"epoch": 2})),
    ]);
    assert_eq!(report(&report_at).await, vec!["FENCED"]);
    assert!(
        !h.db.read(|s| s.exists("c_late")).unwrap(),
        "nothing written"
    );
    worker
        .await_processes(&Context::host(), std::slice::from_ref(&id))
        .await
        .unwrap();
    // its end, made under epoch 1, is fenced as well: the run stays as the
    // later claim has it (not ended by this engine)
    let now = body(&h, &id);
    assert_eq!(now.epoch, Some(2));
    assert!(!now.status.ended(), "{now:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn an_expired_lease_fails_the_run_engine_lost_and_fences_its_engine() {
    let h = Harness::uncontained();
    let report_at = h.dir.path().join("answers.json");
    let id = queue(
        &h,
        json!({"mode": "later", "seconds": 2, "report": report_at,
               "ops": [{"op": "commit", "declaration": {"chunks": [
                   {"id": "c_late", "body": {"text": "late"}, "placements": [{"scope": "$me", "type": "instance"}]}]}}]}),
    );
    let cut_off = beside(&h, 60_000);
    cut_off.claim(&id).unwrap();
    // its lease runs out: a host cut off stops renewing it (as if on
    // another machine: on its own, an engine is judged by its lock)
    h.commit(vec![ChunkDecl::with_id(cut_off.id()).merge_body(
        json!({"expires_ms": 1, "host": "a-machine-cut-off"}),
    )]);
    // whoever next looks finds it gone: another engine opening here
    let _next = beside(&h, engine::LEASE_MS);
    let lost = body(&h, &id);
    assert_eq!(lost.status, protocol::process::ProcessStatus::Failed);
    assert_eq!(lost.error.as_deref(), Some("engine lost"));
    // the engine that was cut off cannot write for it any more
    assert_eq!(report(&report_at).await, vec!["FENCED"]);
    assert!(!h.db.read(|s| s.exists("c_late")).unwrap());
    cut_off.shutdown().await;
    assert_eq!(
        body(&h, &id).error.as_deref(),
        Some("engine lost"),
        "its end is not written over"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn stopping_a_run_another_engine_holds_or_one_still_queued() {
    let h = Harness::uncontained();
    let waiting = queue(&h, json!({"mode": "hang"}));
    h.engine.cancel(&Context::host(), &waiting).unwrap();
    let b = body(&h, &waiting);
    assert_eq!(b.error.as_deref(), Some("cancelled"));
    assert!(b.status.ended());
    let refused = beside(&h, engine::LEASE_MS).claim(&waiting).unwrap_err();
    assert_eq!(
        refused.code,
        ErrorCode::Fenced,
        "an ended run is not claimed"
    );

    let held = queue(&h, json!({"mode": "hang"}));
    let worker = beside(&h, engine::LEASE_MS);
    worker.claim(&held).unwrap();
    h.engine.cancel(&Context::host(), &held).unwrap();
    let done = h.wait(&held).await;
    assert_eq!(status(&done), ("failed".into(), Some("cancelled".into())));
    // a finished run: nothing to do
    h.engine.cancel(&Context::host(), &held).unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn only_a_host_queues_and_only_a_program_that_runs_as_a_process() {
    let h = Harness::uncontained();
    let report_at = h.dir.path().join("answers.json");
    let id = h.run(
        "fixture",
        json!({"mode": "later", "seconds": 0, "report": report_at,
               "ops": [{"op": "run", "program": "fixture", "args": {"placement": {}}}]}),
    );
    assert_eq!(report(&report_at).await, vec!["INVALID_REQUEST"]);
    h.wait(&id).await;
    let mut args = queued_args(json!({"mode": "output"}));
    args.capabilities = Some(Default::default());
    let refused = h.engine.run(&Context::host(), "fixture", args).unwrap_err();
    assert!(refused.message.contains("capabilities"), "{refused}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_run_of_an_engine_on_another_host_is_not_judged_by_this_hosts_locks() {
    let h = Harness::uncontained();
    let id = h.run("fixture", json!({"mode": "hang"}));
    assert_eq!(
        body(&h, &id).host.as_deref(),
        Some(engine::host_name().as_str())
    );
    // as an engine on another machine sharing the store would have it:
    // no lock file here, no lease in the substrate
    h.commit(vec![ChunkDecl::with_id(&id).merge_body(
        json!({"engine": "e_elsewhere", "host": "another-machine"}),
    )]);
    let _next = beside(&h, engine::LEASE_MS);
    assert!(
        !body(&h, &id).status.ended(),
        "left alone: {:?}",
        body(&h, &id)
    );
    assert!(!engine::process_gone(&h.db, &body(&h, &id)));
    // the same engine said to be on this host: its lock is gone, so is it
    h.commit(vec![
        ChunkDecl::with_id(&id).merge_body(json!({"host": engine::host_name()})),
    ]);
    assert!(engine::process_gone(&h.db, &body(&h, &id)));
    let _again = beside(&h, engine::LEASE_MS);
    assert_eq!(body(&h, &id).error.as_deref(), Some("engine restart"));
    h.engine.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_program_cannot_forge_a_queued_run_or_a_lease() {
    let h = Harness::uncontained();
    let forged = |scope: &str| {
        json!({"op": "commit", "declaration": {"chunks": [{"body": {
            "status": "pending", "program": "program/fixture", "placement": {}},
            "placements": [{"scope": "$me", "type": "instance"}, {"scope": scope, "type": "instance"}]}]}})
    };
    let id = h.run(
        "fixture",
        json!({"mode": "ops", "ops": [forged("engine/process"), forged("engine/engine")]}),
    );
    let done = h.wait(&id).await;
    let results = output(&done)["results"].as_array().unwrap().clone();
    for result in &results {
        assert_eq!(result["code"], "BOUNDARY_VIOLATION", "{result}");
        assert!(
            result["message"]
                .as_str()
                .unwrap()
                .contains("only the engine")
        );
    }
    assert_eq!(results.len(), 2);
    assert!(
        h.engine.queued().unwrap().is_empty(),
        "nothing a worker would take"
    );
}

#[tokio::test]
async fn a_program_cannot_forge_the_record_of_file_effects_a_rewind_trusts() {
    let h = Harness::uncontained();
    let typed = |scope: &str| {
        json!({"op": "commit", "declaration": {"chunks": [{"body": {"effects": []},
            "placements": [{"scope": "$me", "type": "instance"}, {"scope": scope, "type": "instance"}]}]}})
    };
    // a content named as the engine names them, in its own tree: planted
    // where a later run's before-image would be looked for
    let planted = json!({"op": "commit", "declaration": {"chunks": [{"id": format!("blob/{}", "0".repeat(64)),
        "body": {"hex": "6576696c"}, "placements": [{"scope": "$me", "type": "instance"}]}]}});
    let id = h.run(
        "fixture",
        json!({"mode": "ops", "ops": [typed("engine/file-effects"), typed("engine/blob"), planted]}),
    );
    let done = h.wait(&id).await;
    let results = output(&done)["results"].as_array().unwrap().clone();
    assert_eq!(results.len(), 3);
    for result in &results {
        assert_eq!(result["code"], "BOUNDARY_VIOLATION", "{result}");
    }
    assert!(
        results[2]["message"].as_str().unwrap().contains("blob/"),
        "{results:#?}"
    );
}
