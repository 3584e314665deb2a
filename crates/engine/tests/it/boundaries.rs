//! Every boundary rule of `docs/protocol.md`, exercised by a real program
//! (the Python fixture) making real requests: reads and writes inside and
//! outside, narrowing through three levels of nesting, protected chunks,
//! subscribing outside the boundary.

use crate::common;
use common::*;
use protocol::Boundary;
use serde_json::{Value, json};
use substrate::{ChunkDecl, NewPlacement};

fn roots(ids: &[&str]) -> Option<Boundary> {
    Some(Boundary::Roots(
        ids.iter().map(|s| (*s).to_owned()).collect(),
    ))
}

/// Two sessions with a prompt each; `shared` sits on both.
fn world() -> (Harness, String, String) {
    let h = Harness::new();
    h.session("s_in");
    h.session("s_out");
    let prompt = |session: &str, text: &str| {
        h.commit(vec![
            ChunkDecl::generated()
                .body(json!({"text": text}))
                .on(NewPlacement::instance(session))
                .on(NewPlacement::instance("prompt")),
        ])
        .created[0]
            .clone()
    };
    let inside = prompt("s_in", "inside");
    let outside = prompt("s_out", "outside");
    h.commit(vec![
        ChunkDecl::with_id("shared")
            .body(json!({"text": "on both"}))
            .on(NewPlacement::instance("s_in"))
            .on(NewPlacement::instance("prompt"))
            .on(NewPlacement::relates("s_out")),
    ]);
    (h, inside, outside)
}

/// Runs the fixture's `ops` mode and returns each request's outcome.
async fn ops(
    h: &Harness,
    program: &str,
    read: Option<Boundary>,
    write: Option<Boundary>,
    ops: Value,
) -> Vec<Value> {
    let p = h.run_with(program, json!({"mode": "ops", "ops": ops}), read, write);
    let done = h.wait(&p).await;
    assert_eq!(
        status(&done).0,
        "completed",
        "{:?}",
        done.scopes[0].body_value()
    );
    let last = outputs(&done).pop().unwrap();
    last["results"].as_array().unwrap().clone()
}

fn codes(results: &[Value]) -> Vec<String> {
    results
        .iter()
        .map(|r| {
            if r["ok"] == true {
                "ok".to_owned()
            } else {
                r["code"].as_str().unwrap().to_owned()
            }
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn reads_inside_pass_and_reads_outside_are_refused_explicitly() {
    let (h, inside, outside) = world();
    let results = ops(
        &h,
        "fixture",
        roots(&["s_in"]),
        roots(&["s_in"]),
        json!([
            {"op": "scope", "scopes": ["s_in"]},
            {"op": "scope", "scopes": [inside]},
            {"op": "scope", "scopes": ["s_out"]},
            {"op": "scope", "scopes": [outside]},
            {"op": "scope", "scopes": []},
            {"op": "scope", "scopes": ["commits_root"]},
            {"op": "scope", "scopes": ["s_in"], "opts": {"exclude": ["s_out"]}},
            {"op": "scope", "scopes": ["$me"]},
            {"op": "scope", "scopes": ["engine/program"]}
        ]),
    )
    .await;
    assert_eq!(
        codes(&results),
        [
            "ok",
            "ok",
            "BOUNDARY_VIOLATION",
            "BOUNDARY_VIOLATION",
            "BOUNDARY_VIOLATION",
            "BOUNDARY_VIOLATION",
            "BOUNDARY_VIOLATION",
            "ok",
            "BOUNDARY_VIOLATION"
        ]
    );
    assert!(results[2]["message"].as_str().unwrap().contains("s_out"));
    // inside an opened scope every member is visible; scopes outside show as topology
    let read = &results[0]["result"];
    assert_eq!(read["chunks"].as_array().unwrap().len(), 2);
    let topology = read["topology"].as_array().unwrap();
    let out = topology
        .iter()
        .find(|t| t["id"] == "s_out")
        .expect("s_out in topology");
    assert_eq!(out["count"], 2, "s_out's members are counted, not shown");
}

#[tokio::test(flavor = "multi_thread")]
async fn writes_inside_pass_and_writes_outside_are_refused() {
    let (h, inside, outside) = world();
    let typed = |scope: &str| json!({"body": {"text": "t"}, "placements": [{"scope": scope, "type": "instance"}, {"scope": "prompt", "type": "instance"}]});
    let results = ops(
        &h,
        "fixture",
        roots(&["s_in", "s_out"]),
        roots(&["s_in"]),
        json!([
            // a new prompt on the writable session, typed `prompt` (the typing exemption)
            {"op": "commit", "declaration": {"chunks": [typed("s_in")]}},
            {"op": "commit", "declaration": {"chunks": [typed("s_out")]}},
            // a new chunk placed nowhere
            {"op": "commit", "declaration": {"chunks": [{"body": {"x": 1}}]}},
            // changing an existing chunk inside, and outside
            {"op": "commit", "declaration": {"chunks": [{"id": inside, "merge": true, "body": {"edited": true}}]}},
            {"op": "commit", "declaration": {"chunks": [{"id": outside, "merge": true, "body": {"edited": true}}]}},
            // placing a readable-but-not-writable chunk: relates is reading, instance would pull it in
            {"op": "commit", "declaration": {"placements": [{"chunk": outside, "scope": "s_in", "type": "relates"}]}},
            {"op": "commit", "declaration": {"placements": [{"chunk": outside, "scope": "s_in", "type": "instance"}]}},
            // not a type the session accepts: no exemption for `culture`
            {"op": "commit", "declaration": {"chunks": [{"body": {"text": "t"}, "placements": [{"scope": "s_in", "type": "instance"}, {"scope": "prompt", "type": "instance"}, {"scope": "culture", "type": "instance"}]}]}},
            // removal outside
            {"op": "commit", "declaration": {"remove": {"chunks": [outside]}}},
            // BOUNDARY_VIOLATION wins over VALIDATION_ERROR (no text, and outside)
            {"op": "commit", "declaration": {"chunks": [{"body": {}, "placements": [{"scope": "s_out", "type": "instance"}, {"scope": "prompt", "type": "instance"}]}]}},
            // inside but invalid: the spec speaks
            {"op": "commit", "declaration": {"chunks": [{"body": {}, "placements": [{"scope": "s_in", "type": "instance"}, {"scope": "prompt", "type": "instance"}]}]}}
        ]),
    )
    .await;
    assert_eq!(
        codes(&results),
        [
            "ok",
            "BOUNDARY_VIOLATION",
            "BOUNDARY_VIOLATION",
            "ok",
            "BOUNDARY_VIOLATION",
            "ok",
            "BOUNDARY_VIOLATION",
            "BOUNDARY_VIOLATION",
            "BOUNDARY_VIOLATION",
            "BOUNDARY_VIOLATION",
            "VALIDATION_ERROR"
        ]
    );
    assert_eq!(
        h.body(&outside),
        json!({"text": "outside"}),
        "nothing outside changed"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_placement_onto_an_unreadable_chunk_is_refused() {
    let (h, _, outside) = world();
    let results = ops(
        &h,
        "fixture",
        roots(&["s_in"]),
        roots(&["s_in"]),
        json!([{"op": "commit", "declaration": {"placements": [{"chunk": outside, "scope": "s_in", "type": "relates"}]}}]),
    )
    .await;
    assert_eq!(codes(&results), ["BOUNDARY_VIOLATION"]);
    assert!(
        results[0]["message"]
            .as_str()
            .unwrap()
            .contains("read boundary")
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn protected_chunks_stay_protected_even_from_the_parent() {
    let (h, ..) = world();
    let results = ops(
        &h,
        "fixture",
        None,
        None,
        json!([
            // its own process: other fields by merge are fine
            {"op": "commit", "declaration": {"chunks": [{"id": "$me", "merge": true, "body": {"note": "mine"}}]}},
            {"op": "commit", "declaration": {"chunks": [{"id": "$me", "merge": true, "body": {"status": "completed"}}]}},
            {"op": "commit", "declaration": {"chunks": [{"id": "$me", "body": {"note": "replaced"}}]}},
            {"op": "commit", "declaration": {"chunks": [{"id": "$me", "spec": {}}]}},
            {"op": "commit", "declaration": {"remove": {"chunks": ["$me"]}}},
            {"op": "commit", "declaration": {"placements": [{"chunk": "$me", "scope": "s_in", "type": "relates"}]}},
            // its argument (the pinned input) and its placements
            {"op": "commit", "declaration": {"chunks": [{"id": "$arg", "merge": true, "body": {"mode": "x"}}]}},
            {"op": "commit", "declaration": {"placements": [{"chunk": "s_in", "scope": "$arg", "type": "relates"}]}},
            {"op": "commit", "declaration": {"remove": {"placements": [{"chunk": "$arg", "scope": "$me", "type": "instance"}]}}},
            // its child's engine fields
            {"op": "commit", "declaration": {"chunks": [{"id": "$child", "merge": true, "body": {"error": "forged"}}]}},
            {"op": "commit", "declaration": {"remove": {"chunks": ["$child"]}}}
        ]),
    )
    .await;
    assert_eq!(
        codes(&results)[..9],
        [
            "ok",
            "BOUNDARY_VIOLATION",
            "BOUNDARY_VIOLATION",
            "BOUNDARY_VIOLATION",
            "BOUNDARY_VIOLATION",
            "BOUNDARY_VIOLATION",
            "BOUNDARY_VIOLATION",
            "BOUNDARY_VIOLATION",
            "BOUNDARY_VIOLATION"
        ]
    );
    // the `$child` ops had no child: spawn one and try again
    let p = h.run(
        "fixture",
        json!({"mode": "ops", "spawn": {"program": "fixture", "task": {"mode": "hang"}}, "ops": [
            {"op": "commit", "declaration": {"chunks": [{"id": "$child", "merge": true, "body": {"error": "forged"}}]}},
            {"op": "commit", "declaration": {"chunks": [{"id": "$child", "merge": true, "body": {"label": "allowed"}}]}},
            {"op": "commit", "declaration": {"remove": {"chunks": ["$child"]}}},
            {"op": "cancel", "process": "$child"}
        ]}),
    );
    let done = h.wait(&p).await;
    assert_eq!(
        codes(output(&done)["results"].as_array().unwrap()),
        ["BOUNDARY_VIOLATION", "ok", "BOUNDARY_VIOLATION", "ok"]
    );
    let me = h.body(&p);
    assert_eq!(me["status"], "completed");
}

#[tokio::test(flavor = "multi_thread")]
async fn boundaries_narrow_through_three_levels_of_nesting() {
    let (h, ..) = world();
    let probe = json!({"mode": "ops", "ops": [
        {"op": "scope", "scopes": ["s_in"]},
        {"op": "scope", "scopes": ["s_out"]},
        {"op": "scope", "scopes": ["$me"]},
        {"op": "commit", "declaration": {"chunks": [{"body": {"text": "t"}, "placements": [{"scope": "s_in", "type": "instance"}, {"scope": "prompt", "type": "instance"}]}]}},
        {"op": "commit", "declaration": {"chunks": [{"body": {"text": "t"}, "placements": [{"scope": "s_out", "type": "instance"}, {"scope": "prompt", "type": "instance"}]}]}}
    ]});
    // level 1 reaches both sessions; level 2 narrows reads to s_in; level 3
    // asks for s_out again — and cannot widen.
    let nested = |level3_read: Value| {
        json!({"mode": "run", "program": "fixture", "readBoundary": ["s_in", "engine/program"], "task": {
            "mode": "run", "program": "fixture", "readBoundary": level3_read, "task": probe
        }})
    };
    let widen = h.run_with(
        "fixture",
        nested(json!(["s_out"])),
        roots(&["s_in", "s_out", "engine/program"]),
        roots(&["s_in", "s_out"]),
    );
    let inherit = h.run_with(
        "fixture",
        nested(json!("open")),
        roots(&["s_in", "s_out", "engine/program"]),
        roots(&["s_in", "s_out"]),
    );
    let level3 = |top: &common::Harness, out: &Value| -> Vec<String> {
        let _ = top;
        let inner = &out["outputs"][0]["outputs"][0]["results"];
        codes(
            inner
                .as_array()
                .unwrap_or_else(|| panic!("no level-3 results in {out}")),
        )
    };
    let widen_out = output(&h.wait(&widen).await);
    assert_eq!(
        level3(&h, &widen_out),
        ["BOUNDARY_VIOLATION", "BOUNDARY_VIOLATION", "ok", "ok", "ok"]
    );
    let inherit_out = output(&h.wait(&inherit).await);
    assert_eq!(
        level3(&h, &inherit_out),
        ["ok", "BOUNDARY_VIOLATION", "ok", "ok", "ok"]
    );
    // writes were never narrowed below level 1's [s_in, s_out]: both commits landed
}

#[tokio::test(flavor = "multi_thread")]
async fn write_narrowing_through_nesting() {
    let (h, ..) = world();
    let probe = json!({"mode": "ops", "ops": [
        {"op": "commit", "declaration": {"chunks": [{"body": {"text": "t"}, "placements": [{"scope": "s_in", "type": "instance"}, {"scope": "prompt", "type": "instance"}]}]}},
        {"op": "commit", "declaration": {"chunks": [{"body": {"text": "t"}, "placements": [{"scope": "s_out", "type": "instance"}, {"scope": "prompt", "type": "instance"}]}]}}
    ]});
    let top = h.run_with(
        "fixture",
        json!({"mode": "run", "program": "fixture", "writeBoundary": ["s_in"], "task": {
            "mode": "run", "program": "fixture", "writeBoundary": ["s_in", "s_out"], "task": probe
        }}),
        None,
        roots(&["s_in", "s_out"]),
    );
    let out = output(&h.wait(&top).await);
    let results = out["outputs"][0]["outputs"][0]["results"]
        .as_array()
        .unwrap()
        .clone();
    assert_eq!(codes(&results), ["ok", "BOUNDARY_VIOLATION"]);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_programs_intrinsic_boundary_holds_whatever_the_run_asks() {
    let (h, ..) = world();
    let results = ops(
        &h,
        "narrow",
        Some(Boundary::Open),
        Some(Boundary::Open),
        json!([
            {"op": "scope", "scopes": ["s_in"]},
            {"op": "scope", "scopes": ["$me"]},
            {"op": "commit", "declaration": {"chunks": [{"body": {"text": "out"}, "placements": [{"scope": "$me", "type": "instance"}, {"scope": "engine/output", "type": "instance"}]}]}}
        ]),
    )
    .await;
    assert_eq!(codes(&results), ["BOUNDARY_VIOLATION", "ok", "ok"]);
}

#[tokio::test(flavor = "multi_thread")]
async fn subscribing_running_and_cancelling_need_reach() {
    let (h, ..) = world();
    let sibling = h.run("fixture", json!({"mode": "hang", "seconds": 5}));
    let results = ops(
        &h,
        "fixture",
        roots(&["s_in"]),
        roots(&["s_in"]),
        json!([
            {"op": "subscribe", "scopes": ["s_in"]},
            {"op": "subscribe", "scopes": ["s_out"]},
            {"op": "subscribe", "scopes": ["commits_root"]},
            {"op": "run", "program": "fixture", "args": {}},
            {"op": "cancel", "process": sibling},
            {"op": "await", "processes": [sibling]}
        ]),
    )
    .await;
    assert_eq!(
        codes(&results),
        [
            "ok",
            "BOUNDARY_VIOLATION",
            "BOUNDARY_VIOLATION",
            "BOUNDARY_VIOLATION",
            "BOUNDARY_VIOLATION",
            "BOUNDARY_VIOLATION"
        ]
    );
    assert!(results[3]["message"].as_str().unwrap().contains("program"));
    h.engine.cancel(&engine::Context::host(), &sibling).unwrap();
}

/// A run the judge refuses never starts: it is judged before anything is
/// spawned, not only in the commit after the spawn (a program can act
/// before it reads a byte from the engine — here, one that makes a file
/// as it starts). The same program, allowed, does make its file.
#[tokio::test(flavor = "multi_thread")]
async fn a_refused_run_never_starts_its_program() {
    let (h, ..) = world();
    let marks = tempfile::tempdir().unwrap();
    let marker = |name: &str| {
        h.commit(vec![
            ChunkDecl::with_id(format!("program/{name}"))
                .name(name)
                .body(json!({
                    "executable": "sh",
                    "args": ["-c", format!(": > '{}'", marks.path().join(name).display())],
                    "runtime": "vm",
                    "text": "makes a file as it starts",
                    "capabilities": {"filesystem": {"read": "all", "write": [marks.path()]}},
                }))
                .on(NewPlacement::instance("engine/program")),
        ]);
    };
    marker("refused");
    marker("allowed");
    // Many arguments the caller may place, then one it may not: judging
    // them takes long enough that a program spawned first would act.
    let mut arguments: Vec<Value> = (0..3000)
        .map(|n| json!({"body": {"text": format!("argument {n}")}, "placements": [{"scope": "s_in", "type": "instance"}]}))
        .collect();
    arguments.push(json!({"body": {"text": "an argument placed outside"}, "placements": [{"scope": "s_out", "type": "instance"}]}));
    let results = ops(
        &h,
        "fixture",
        Some(Boundary::Open),
        roots(&["s_in"]),
        json!([
            {"op": "run", "program": "refused", "args": {"chunks": arguments}},
            {"op": "run", "program": "allowed", "args": {}}
        ]),
    )
    .await;
    assert_eq!(codes(&results), ["BOUNDARY_VIOLATION", "ok"], "{results:?}");
    let allowed = marks.path().join("allowed");
    let started = std::time::Instant::now();
    while !allowed.exists() && started.elapsed() < std::time::Duration::from_secs(10) {
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert!(allowed.exists(), "the allowed run made its file");
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    assert!(
        !marks.path().join("refused").exists(),
        "the refused run never started"
    );
}
