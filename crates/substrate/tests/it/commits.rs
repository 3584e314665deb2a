//! Commits: create, update, merge, removal, the commit record and its chain,
//! touched scopes, bootstrap idempotency, and the broadcast of commits.

use super::common;
use common::*;
use serde_json::json;
use substrate::{
    ChunkDecl, Declaration, NewPlacement, PlacementKey, PlacementOp, PlacementType, Removals,
    ScopeOpts,
};
use tokio::sync::broadcast::error::TryRecvError;

#[test]
fn create_then_update_replaces_given_fields_and_keeps_the_rest() {
    let (_d, db) = empty();
    let c1 = commit(
        &db,
        vec![
            ChunkDecl::with_id("a")
                .name("A")
                .spec(json!({"ordered": true}))
                .body(json!({"x": 1, "y": 2})),
        ],
    );
    assert_eq!(c1.created, vec!["a"]);
    let c2 = commit(&db, vec![ChunkDecl::with_id("a").body(json!({"z": 3}))]);
    assert!(c2.created.is_empty());
    assert_eq!(c2.chunks_modified, vec!["a"]);
    let a = db.read(|s| s.chunk("a")).unwrap().unwrap();
    assert_eq!(a.name.as_deref(), Some("A"));
    assert_eq!(a.spec, json!({"ordered": true}));
    assert_eq!(a.body_value(), json!({"z": 3}));
    // name: null clears it
    commit_json(&db, json!({"chunks": [{"id": "a", "name": null}]})).unwrap();
    assert_eq!(db.read(|s| s.chunk("a")).unwrap().unwrap().name, None);
}

#[test]
fn merge_applies_an_rfc7396_patch() {
    let (_d, db) = empty();
    commit(
        &db,
        vec![
            ChunkDecl::with_id("a").body(json!({"keep": 1, "drop": 2, "nested": {"x": 1, "y": 2}})),
        ],
    );
    commit(
        &db,
        vec![
            ChunkDecl::with_id("a")
                .merge_body(json!({"drop": null, "nested": {"y": 3}, "new": [1]})),
        ],
    );
    assert_eq!(
        db.read(|s| s.body("a")).unwrap().unwrap(),
        json!({"keep": 1, "nested": {"x": 1, "y": 3}, "new": [1]})
    );
    // a merge on a chunk that does not exist applies to {}
    commit(
        &db,
        vec![ChunkDecl::with_id("b").merge_body(json!({"k": "v", "gone": null}))],
    );
    assert_eq!(
        db.read(|s| s.body("b")).unwrap().unwrap(),
        json!({"k": "v"})
    );
}

#[test]
fn create_true_refuses_an_existing_id() {
    let (_d, db) = empty();
    commit(&db, vec![ChunkDecl::with_id("a").create_only()]);
    let e = db
        .commit(
            Declaration::of(vec![ChunkDecl::with_id("a").create_only()]),
            None,
        )
        .unwrap_err();
    assert_eq!(e.code(), "VALIDATION_ERROR");
    assert!(e.message().contains("`a` already exists"), "{e}");
}

#[test]
fn generated_ids_are_returned_and_time_sortable() {
    let (_d, db) = empty();
    let c = commit(&db, vec![ChunkDecl::generated(), ChunkDecl::generated()]);
    assert_eq!(c.created.len(), 2);
    assert!(
        c.created
            .iter()
            .all(|id| id.starts_with("c_") && id.len() == 28)
    );
    assert!(c.created[0] < c.created[1]);
}

#[test]
fn an_unchanged_redeclaration_writes_no_version() {
    let (_d, db) = empty();
    commit(&db, vec![ChunkDecl::with_id("a").body(json!({"x": 1}))]);
    let c = commit(&db, vec![ChunkDecl::with_id("a").body(json!({"x": 1}))]);
    assert!(c.chunks_modified.is_empty());
}

#[test]
fn commits_chain_by_parent_and_carry_dispatch_and_timestamp() {
    let (_d, db) = empty();
    let c1 = commit(&db, vec![ChunkDecl::with_id("a")]);
    let c2 = db
        .commit(Declaration::of(vec![ChunkDecl::with_id("b")]), Some("p_1"))
        .unwrap();
    assert_eq!((c1.id, c1.parent_id), (1, None));
    assert_eq!((c2.id, c2.parent_id), (2, Some(1)));
    assert_eq!(c2.dispatch_id.as_deref(), Some("p_1"));
    // RFC 3339 UTC with milliseconds
    let ts = &c2.timestamp;
    assert!(
        ts.ends_with('Z') && ts.len() == 24 && ts.as_bytes()[19] == b'.',
        "{ts}"
    );
    // the log holds the same records
    let log = db.scope(&["commits_root"], &ScopeOpts::default()).unwrap();
    assert_eq!(log.chunks[0].id, "commit/2");
    assert_eq!(
        log.chunks[0].body_value(),
        serde_json::to_value(&c2).unwrap()
    );
    assert_eq!(log.chunks[1].id, "commit/1");
    assert_eq!(log.total, 2);
}

#[test]
fn removing_a_chunk_ends_its_placements_both_ways_and_keeps_history() {
    let (_d, db) = fresh();
    session(&db, "s");
    let p = prompt(&db, "s", "bye");
    let before = db.head().unwrap();
    let c = db
        .commit(
            Declaration {
                remove: Removals {
                    chunks: vec!["s".into()],
                    ..Removals::default()
                },
                ..Declaration::default()
            },
            None,
        )
        .unwrap();
    assert_eq!(c.removed, vec!["s"]);
    assert_eq!(c.chunks_modified, vec!["s"]);
    let removed: Vec<(&str, &str)> = c
        .placements_modified
        .iter()
        .filter(|pc| pc.op == PlacementOp::Removed)
        .map(|pc| (pc.chunk.as_str(), pc.scope.as_str()))
        .collect();
    assert!(
        removed.contains(&("s", "session")) && removed.contains(&(p.as_str(), "s")),
        "{removed:?}"
    );
    assert_eq!(
        db.scope(&["s"], &ScopeOpts::default()).unwrap_err().code(),
        "NOT_FOUND"
    );
    // the prompt survives, without its session placement
    let pr = db.read(|s| s.chunk(&p)).unwrap().unwrap();
    assert_eq!(pr.placements.len(), 1);
    // and the past is intact
    let past = db
        .scope(
            &["s"],
            &ScopeOpts {
                as_of: Some(before),
                ..ScopeOpts::default()
            },
        )
        .unwrap();
    assert_eq!(member_ids(&past), vec![p]);
}

#[test]
fn removals_apply_first_so_one_declaration_moves_a_chunk() {
    let (_d, db) = fresh();
    session(&db, "s1");
    session(&db, "s2");
    let p = prompt(&db, "s1", "moving");
    let c = db
        .commit(
            Declaration {
                placements: vec![substrate::PlacementDecl {
                    chunk: p.clone(),
                    scope: "s2".into(),
                    kind: PlacementType::Instance,
                    seq: None,
                }],
                remove: Removals {
                    placements: vec![PlacementKey {
                        chunk: p.clone(),
                        scope: "s1".into(),
                        kind: PlacementType::Instance,
                    }],
                    ..Removals::default()
                },
                ..Declaration::default()
            },
            None,
        )
        .unwrap();
    assert_eq!(c.placements_modified.len(), 2);
    assert!(read(&db, &["s1"]).chunks.is_empty());
    assert_eq!(member_ids(&read(&db, &["s2"])), vec![p]);
}

#[test]
fn touched_scopes_cover_chunks_placement_ends_and_where_modified_chunks_sit() {
    let (_d, db) = fresh();
    session(&db, "s");
    let p = prompt(&db, "s", "a");
    // a body change touches the chunk and every scope it sits on
    let c = commit(
        &db,
        vec![ChunkDecl::with_id(&p).merge_body(json!({"text": "b"}))],
    );
    for scope in [p.as_str(), "s", "prompt"] {
        assert!(
            c.touched_scopes.iter().any(|t| t == scope),
            "{scope} missing from {:?}",
            c.touched_scopes
        );
    }
    // a bare placement touches both ends, and the scopes the placed chunk
    // sits on (each of their reads shows the chunk's placements)
    let c = commit_json(
        &db,
        json!({"placements": [{"chunk": p, "scope": "culture", "type": "relates"}]}),
    )
    .unwrap();
    let mut touched = c.touched_scopes.clone();
    touched.sort();
    let mut expected = vec![
        p.clone(),
        "culture".to_owned(),
        "s".to_owned(),
        "prompt".to_owned(),
    ];
    expected.sort();
    assert_eq!(touched, expected);
    assert!(
        c.chunks_modified.is_empty(),
        "a placement is not a change of name, spec or body"
    );
    // a removed chunk touches the scopes it sat on before
    let c = commit_json(&db, json!({"remove": {"chunks": [p]}})).unwrap();
    for scope in ["s", "prompt", "culture"] {
        assert!(c.touched_scopes.iter().any(|t| t == scope), "{scope}");
    }
}

#[test]
fn init_is_idempotent_and_upgrades() {
    let (_d, db) = empty();
    let first = db.init(vocabulary()).unwrap().expect("first init commits");
    assert!(first.created.contains(&"session".to_owned()));
    assert!(first.created.contains(&"program/agent".to_owned()));
    assert!(
        db.init(vocabulary()).unwrap().is_none(),
        "second init commits nothing"
    );
    let tool = |timeout: u64| {
        vec![
            ChunkDecl::with_id("program/echo")
                .name("echo")
                .spec(json!({"propagate": true, "accepts": ["input/echo"]}))
                .body(json!({"executable": "builtin:echo", "timeout_ms": timeout}))
                .on(NewPlacement::instance("engine/program")),
            ChunkDecl::with_id("input/echo")
                .spec(json!({"required": ["text"]}))
                .on(NewPlacement::relates("program/echo")),
        ]
    };
    let c = db.init(tool(1000)).unwrap().unwrap();
    assert_eq!(c.created, vec!["program/echo", "input/echo"]);
    let c = db.init(tool(2000)).unwrap().unwrap();
    assert_eq!(c.chunks_modified, vec!["program/echo"]);
    assert_eq!(
        db.read(|s| s.body("program/echo")).unwrap().unwrap()["timeout_ms"],
        2000
    );
    assert!(db.init(tool(2000)).unwrap().is_none());
    let unnamed = db.init(vec![ChunkDecl::generated()]).unwrap_err();
    assert_eq!(unnamed.code(), "INVALID_REQUEST");
}

#[test]
fn subscribers_get_every_commit_in_order_and_a_laggard_gets_lagged() {
    let dir = tempfile::tempdir().unwrap();
    let db = substrate::Substrate::open_with(
        dir.path().join("s.db"),
        substrate::Options {
            broadcast_capacity: 4,
            ..substrate::Options::default()
        },
    )
    .unwrap();
    let mut rx = db.subscribe();
    let mut ids = Vec::new();
    for i in 0..3 {
        ids.push(commit(&db, vec![ChunkDecl::with_id(format!("a{i}"))]).id);
    }
    for id in &ids {
        assert_eq!(rx.try_recv().unwrap().id, *id);
    }
    assert!(matches!(rx.try_recv(), Err(TryRecvError::Empty)));
    // the writer never waits: 10 commits with nobody reading
    for i in 0..10 {
        commit(&db, vec![ChunkDecl::with_id(format!("b{i}"))]);
    }
    assert!(matches!(rx.try_recv(), Err(TryRecvError::Lagged(6))));
    // after the lag, the newest four are still there
    assert_eq!(rx.try_recv().unwrap().id, 10);
}

#[test]
fn a_failed_commit_publishes_nothing() {
    let (_d, db) = fresh();
    let mut rx = db.subscribe();
    assert!(
        db.commit(
            Declaration::of(vec![
                ChunkDecl::with_id("x").on(NewPlacement::instance("missing"))
            ]),
            None
        )
        .is_err()
    );
    assert!(matches!(rx.try_recv(), Err(TryRecvError::Empty)));
}

/// A commit that landed is answered as landed, even when a commit another
/// process made before it (broadcast first, to keep the order) has a
/// record that cannot be read: its caller would otherwise make it again.
#[test]
fn a_commit_that_landed_is_answered_whatever_another_processs_record_holds() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("p.db");
    let db = substrate::Substrate::open(&path).unwrap();
    let first = db
        .commit(Declaration::of(vec![ChunkDecl::with_id("a")]), None)
        .unwrap();
    let raw = rusqlite::Connection::open(&path).unwrap();
    raw.execute(
        "INSERT INTO commits (id, parent_id, timestamp, dispatch_id, record) \
         VALUES (?1, ?2, '2026-11-25T00:00:00.000Z', NULL, 'not a record')",
        [first.id as i64 + 1, first.id as i64],
    )
    .unwrap();
    let landed = db
        .commit(Declaration::of(vec![ChunkDecl::with_id("b")]), None)
        .expect("landed, so answered");
    assert_eq!(landed.id, first.id + 2);
    assert!(db.read(|s| s.chunk("b")).unwrap().is_some());
}
