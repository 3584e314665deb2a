//! Bad input: each gets a clear error, and the store is left exactly as it was.

use super::common;
use common::*;
use serde_json::{Value, json};
use substrate::{ChunkDecl, Declaration, NewPlacement};

/// Commits `decl` (as JSON), expects `code`, checks the message mentions
/// every `needle`, and checks nothing changed.
fn refused(db: &substrate::Substrate, decl: Value, code: &str, needles: &[&str]) {
    let before = everything(db);
    let err = commit_json(db, decl.clone()).unwrap_err();
    assert_eq!(err.code(), code, "{decl}: {err}");
    for n in needles {
        assert!(
            err.message().contains(n),
            "message {:?} should mention {n:?}",
            err.message()
        );
    }
    assert_eq!(
        everything(db),
        before,
        "the store changed after a refused commit"
    );
}

fn setup() -> (tempfile::TempDir, substrate::Substrate, String) {
    let (d, db) = fresh();
    session(&db, "s");
    let p = prompt(&db, "s", "existing");
    (d, db, p)
}

#[test]
fn malformed_ids() {
    let (_d, db, _) = setup();
    refused(
        &db,
        json!({"chunks": [{"id": ""}]}),
        "INVALID_REQUEST",
        &["empty"],
    );
    refused(
        &db,
        json!({"chunks": [{"id": "x".repeat(201)}]}),
        "INVALID_REQUEST",
        &["201 bytes", "200"],
    );
    refused(
        &db,
        json!({"chunks": [{"id": "a\u{0007}b"}]}),
        "INVALID_REQUEST",
        &["control"],
    );
    refused(
        &db,
        json!({"chunks": [{"id": "commit/3"}]}),
        "INVALID_REQUEST",
        &["reserved"],
    );
    refused(
        &db,
        json!({"chunks": [{"id": "commits_root"}]}),
        "INVALID_REQUEST",
        &["reserved"],
    );
    refused(
        &db,
        json!({"chunks": [{"id": 42}]}),
        "INVALID_REQUEST",
        &["malformed declaration"],
    );
    refused(
        &db,
        json!({"placements": [{"chunk": "", "scope": "s", "type": "instance"}]}),
        "INVALID_REQUEST",
        &["placements[0].chunk"],
    );
}

#[test]
fn a_body_over_8_mib() {
    let (_d, db, p) = setup();
    let big = "x".repeat(10 * 1024 * 1024);
    refused(
        &db,
        json!({"chunks": [{"id": "big", "body": {"text": big}}]}),
        "VALIDATION_ERROR",
        &["big", "8 MiB"],
    );
    // growing an existing body past the limit by merge is caught too
    refused(
        &db,
        json!({"chunks": [{"id": p, "merge": true, "body": {"more": big}}]}),
        "VALIDATION_ERROR",
        &["8 MiB"],
    );
}

#[test]
fn non_object_body_or_spec() {
    let (_d, db, _) = setup();
    refused(
        &db,
        json!({"chunks": [{"id": "a", "body": [1, 2]}]}),
        "VALIDATION_ERROR",
        &["body", "`a`", "an array"],
    );
    refused(
        &db,
        json!({"chunks": [{"id": "a", "body": "text"}]}),
        "VALIDATION_ERROR",
        &["a string"],
    );
    refused(
        &db,
        json!({"chunks": [{"id": "a", "spec": 5}]}),
        "VALIDATION_ERROR",
        &["spec", "a number"],
    );
    refused(
        &db,
        json!({"chunks": [{"id": "a", "spec": {"accepts": "prompt"}}]}),
        "VALIDATION_ERROR",
        &["accepts"],
    );
}

#[test]
fn unknown_placement_type_or_field() {
    let (_d, db, p) = setup();
    refused(
        &db,
        json!({"placements": [{"chunk": p, "scope": "s", "type": "member"}]}),
        "INVALID_REQUEST",
        &["unknown variant `member`", "instance", "relates"],
    );
    refused(
        &db,
        json!({"chunks": [{"id": "a", "placement": []}]}),
        "INVALID_REQUEST",
        &["unknown field `placement`"],
    );
    refused(&db, json!({}), "INVALID_REQUEST", &["empty declaration"]);
}

#[test]
fn seq_collisions() {
    let (_d, db, p) = setup();
    refused(
        &db,
        json!({"chunks": [{"body": {"text": "t"}, "placements": [{"scope": "s", "type": "instance", "seq": 0}, {"scope": "prompt", "type": "instance"}]}]}),
        "VALIDATION_ERROR",
        &["seq 0", &p],
    );
    refused(
        &db,
        json!({"chunks": [
            {"id": "x1", "body": {"text": "t"}, "placements": [{"scope": "s", "type": "instance", "seq": 9}, {"scope": "prompt", "type": "instance"}]},
            {"id": "x2", "body": {"text": "t"}, "placements": [{"scope": "s", "type": "instance", "seq": 9}, {"scope": "prompt", "type": "instance"}]}
        ]}),
        "VALIDATION_ERROR",
        &["seq 9"],
    );
}

#[test]
fn removing_what_does_not_exist() {
    let (_d, db, p) = setup();
    refused(
        &db,
        json!({"remove": {"chunks": ["ghost"]}}),
        "NOT_FOUND",
        &["ghost"],
    );
    refused(
        &db,
        json!({"remove": {"placements": [{"chunk": p, "scope": "s", "type": "relates"}]}}),
        "NOT_FOUND",
        &["relates", "`s`"],
    );
    // a valid change followed by a bad removal: nothing of it lands
    refused(
        &db,
        json!({"chunks": [{"id": "fine"}], "remove": {"chunks": ["ghost"]}}),
        "NOT_FOUND",
        &["ghost"],
    );
}

#[test]
fn placing_onto_or_from_nothing() {
    let (_d, db, p) = setup();
    refused(
        &db,
        json!({"chunks": [{"id": "a", "placements": [{"scope": "nowhere", "type": "instance"}]}]}),
        "NOT_FOUND",
        &["nowhere", "create it first"],
    );
    refused(
        &db,
        json!({"placements": [{"chunk": "ghost", "scope": "s", "type": "relates"}]}),
        "NOT_FOUND",
        &["ghost"],
    );
    refused(
        &db,
        json!({"placements": [{"chunk": p, "scope": p, "type": "relates"}]}),
        "VALIDATION_ERROR",
        &["itself"],
    );
}

#[test]
fn a_rule_broken_late_in_a_declaration_undoes_its_start() {
    let (_d, db, _) = setup();
    let before = everything(&db);
    let e = db
        .commit(
            Declaration::of(vec![
                ChunkDecl::with_id("ok1"),
                ChunkDecl::with_id("ok2").body(json!({"a": 1})),
                ChunkDecl::generated().on(NewPlacement::instance("s")),
            ]),
            None,
        )
        .unwrap_err();
    assert_eq!(e.code(), "VALIDATION_ERROR");
    assert_eq!(everything(&db), before);
    // and the next commit takes the next id, as if nothing happened
    let c = commit(&db, vec![ChunkDecl::with_id("ok1")]);
    assert_eq!(c.id, before.0 + 1);
}
