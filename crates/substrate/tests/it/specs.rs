//! Every spec rule with a passing and a failing case, through `commit`.

use super::common;
use common::*;
use serde_json::json;
use substrate::{ChunkDecl, Declaration, Error, NewPlacement, PlacementDecl, PlacementType};

fn validation(e: Error) -> String {
    match e {
        Error::Validation(m) => m,
        other => panic!("expected VALIDATION_ERROR, got {other:?}"),
    }
}

#[test]
fn required_passes_with_the_field_and_fails_without_it() {
    let (_d, db) = fresh();
    session(&db, "s");
    prompt(&db, "s", "hello");
    let bad = db
        .commit(
            Declaration::of(vec![
                ChunkDecl::generated()
                    .body(json!({"note": "no text"}))
                    .on(NewPlacement::instance("prompt")),
            ]),
            None,
        )
        .unwrap_err();
    let m = validation(bad);
    assert!(
        m.contains("prompt") && m.contains("required") && m.contains("text"),
        "{m}"
    );
    // null counts as missing
    let bad = db
        .commit(
            Declaration::of(vec![
                ChunkDecl::generated()
                    .body(json!({"text": null}))
                    .on(NewPlacement::instance("prompt")),
            ]),
            None,
        )
        .unwrap_err();
    validation(bad);
}

#[test]
fn changing_a_members_body_is_checked_again() {
    let (_d, db) = fresh();
    session(&db, "s");
    let p = prompt(&db, "s", "hello");
    let err = db
        .commit(
            Declaration::of(vec![
                ChunkDecl::with_id(&p).merge_body(json!({"text": null})),
            ]),
            None,
        )
        .unwrap_err();
    assert!(validation(err).contains(&p));
    db.commit(
        Declaration::of(vec![
            ChunkDecl::with_id(&p).merge_body(json!({"text": "bye"})),
        ]),
        None,
    )
    .unwrap();
}

#[test]
fn unique_passes_for_distinct_values_and_fails_for_a_repeat() {
    let (_d, db) = empty();
    commit(
        &db,
        vec![ChunkDecl::with_id("users").spec(json!({"unique": ["email"]}))],
    );
    let user = |email: &str| {
        ChunkDecl::generated()
            .body(json!({"email": email}))
            .on(NewPlacement::instance("users"))
    };
    commit(&db, vec![user("a@x"), user("b@x")]);
    // no value at all is not a clash
    commit(
        &db,
        vec![
            ChunkDecl::generated()
                .body(json!({}))
                .on(NewPlacement::instance("users")),
        ],
    );
    let m = validation(
        db.commit(Declaration::of(vec![user("a@x")]), None)
            .unwrap_err(),
    );
    assert!(
        m.contains("unique") && m.contains("users") && m.contains("email"),
        "{m}"
    );
    // a repeat inside one declaration is caught too
    validation(
        db.commit(Declaration::of(vec![user("c@x"), user("c@x")]), None)
            .unwrap_err(),
    );
    // values of different JSON types do not clash
    commit(
        &db,
        vec![
            ChunkDecl::generated()
                .body(json!({"email": 1}))
                .on(NewPlacement::instance("users")),
        ],
    );
    commit(
        &db,
        vec![
            ChunkDecl::generated()
                .body(json!({"email": "1"}))
                .on(NewPlacement::instance("users")),
        ],
    );
}

#[test]
fn accepts_passes_for_an_instance_of_an_accepted_type_and_fails_otherwise() {
    let (_d, db) = fresh();
    session(&db, "s");
    prompt(&db, "s", "typed");
    let m = validation(
        db.commit(
            Declaration::of(vec![
                ChunkDecl::generated()
                    .body(json!({"text": "untyped"}))
                    .on(NewPlacement::instance("s")),
            ]),
            None,
        )
        .unwrap_err(),
    );
    assert!(
        m.contains("accepts") && m.contains("`s`") && m.contains("prompt"),
        "{m}"
    );
}

#[test]
fn dual_placement_inside_one_declaration_passes_accepts() {
    let (_d, db) = fresh();
    // the session and its first prompt, and the prompt's type, all in one declaration
    let c = commit(
        &db,
        vec![
            ChunkDecl::with_id("s").on(NewPlacement::instance("session")),
            ChunkDecl::with_id("p1")
                .body(json!({"text": "hi"}))
                .on(NewPlacement::instance("s"))
                .on(NewPlacement::instance("prompt")),
        ],
    );
    assert_eq!(c.created, vec!["s", "p1"]);
    // the typing placement may also come as a bare placement after the chunk
    db.commit(
        Declaration {
            chunks: vec![
                ChunkDecl::with_id("p2")
                    .body(json!({"text": "x"}))
                    .on(NewPlacement::instance("s")),
            ],
            placements: vec![PlacementDecl {
                chunk: "p2".into(),
                scope: "prompt".into(),
                kind: PlacementType::Instance,
                seq: None,
            }],
            ..Declaration::default()
        },
        None,
    )
    .unwrap();
    assert_eq!(member_ids(&read(&db, &["s"])), vec!["p1", "p2"]);
}

#[test]
fn relates_placements_are_not_checked_by_accepts() {
    let (_d, db) = fresh();
    session(&db, "s");
    commit(
        &db,
        vec![ChunkDecl::with_id("note").on(NewPlacement::relates("s"))],
    );
    let r = read(&db, &["s"]);
    assert_eq!(
        r.chunks[0].placements[0].seq,
        Some(0),
        "relates on an ordered scope carries seq"
    );
}

#[test]
fn ordered_assigns_seq_and_refuses_collisions_and_seq_on_unordered_scopes() {
    let (_d, db) = fresh();
    session(&db, "s");
    let a = prompt(&db, "s", "a");
    let b = prompt(&db, "s", "b");
    let r = read(&db, &["s"]);
    assert_eq!(member_ids(&r), vec![a.clone(), b.clone()]);
    assert_eq!(
        r.chunks[1]
            .placements
            .iter()
            .find(|p| p.scope == "s")
            .unwrap()
            .seq,
        Some(1)
    );
    // explicit seq in a gap sorts into place
    commit(
        &db,
        vec![
            ChunkDecl::with_id("early")
                .body(json!({"text": "e"}))
                .on(NewPlacement::instance("s").at(-5))
                .on(NewPlacement::instance("prompt")),
        ],
    );
    assert_eq!(member_ids(&read(&db, &["s"]))[0], "early");
    // collision
    let m = validation(
        db.commit(
            Declaration::of(vec![
                ChunkDecl::generated()
                    .body(json!({"text": "c"}))
                    .on(NewPlacement::instance("s").at(1))
                    .on(NewPlacement::instance("prompt")),
            ]),
            None,
        )
        .unwrap_err(),
    );
    assert!(m.contains("seq 1") && m.contains(&b), "{m}");
    // seq on an unordered scope
    let m = validation(
        db.commit(
            Declaration::of(vec![
                ChunkDecl::generated().on(NewPlacement::instance("agent").at(3)),
            ]),
            None,
        )
        .unwrap_err(),
    );
    assert!(m.contains("not ordered") && m.contains("agent"), "{m}");
    // appends continue after the largest seq
    let c = prompt(&db, "s", "c");
    let r = read(&db, &["s"]);
    assert_eq!(r.chunks.last().unwrap().id, c);
    assert_eq!(r.chunks.last().unwrap().placements[0].seq, Some(2));
}

#[test]
fn re_adding_a_placement_is_a_no_op_and_a_new_seq_for_it_is_refused() {
    let (_d, db) = fresh();
    session(&db, "s");
    let p = prompt(&db, "s", "a");
    let again = |seq: Option<i64>| {
        db.commit(
            Declaration {
                placements: vec![PlacementDecl {
                    chunk: p.clone(),
                    scope: "s".into(),
                    kind: PlacementType::Instance,
                    seq,
                }],
                ..Declaration::default()
            },
            None,
        )
    };
    let c = again(None).unwrap();
    assert!(c.placements_modified.is_empty());
    again(Some(0)).unwrap();
    validation(again(Some(7)).unwrap_err());
}

#[test]
fn propagate_makes_a_template_that_binds_members_not_itself() {
    let (_d, db) = fresh();
    // `session` itself has sessions as members without any of them being prompts
    session(&db, "s1");
    session(&db, "s2");
    let instances = db
        .scope(
            &["session"],
            &substrate::ScopeOpts {
                kind: substrate::TypeFilter::Instance,
                ..Default::default()
            },
        )
        .unwrap();
    assert_eq!(member_ids(&instances), vec!["s1", "s2"]);
    // but each session accepts only its listed types
    validation(
        db.commit(
            Declaration::of(vec![
                ChunkDecl::generated().on(NewPlacement::instance("s1")),
            ]),
            None,
        )
        .unwrap_err(),
    );
}

#[test]
fn a_template_reaches_through_a_chain_of_instances() {
    let (_d, db) = empty();
    // kind (template) <- family <- household <- member
    commit(
        &db,
        vec![
            ChunkDecl::with_id("tagged").spec(json!({})),
            ChunkDecl::with_id("kind").spec(json!({"propagate": true, "ordered": true, "required": ["label"], "accepts": ["tagged"]})),
            ChunkDecl::with_id("family").on(NewPlacement::instance("kind")),
        ],
    );
    // `family` is bound by the template, so its member `household` must conform
    validation(
        db.commit(
            Declaration::of(vec![
                ChunkDecl::with_id("household").on(NewPlacement::instance("family")),
            ]),
            None,
        )
        .unwrap_err(),
    );
    commit(
        &db,
        vec![
            ChunkDecl::with_id("household")
                .body(json!({"label": "h"}))
                .on(NewPlacement::instance("family"))
                .on(NewPlacement::instance("tagged")),
        ],
    );
    // the template binds the members of `household`, two instance steps below it
    let m = validation(
        db.commit(
            Declaration::of(vec![
                ChunkDecl::generated()
                    .body(json!({"label": "x"}))
                    .on(NewPlacement::instance("household")),
            ]),
            None,
        )
        .unwrap_err(),
    );
    assert!(m.contains("household") && m.contains("tagged"), "{m}");
    let m = validation(
        db.commit(
            Declaration::of(vec![
                ChunkDecl::generated()
                    .on(NewPlacement::instance("household"))
                    .on(NewPlacement::instance("tagged")),
            ]),
            None,
        )
        .unwrap_err(),
    );
    assert!(m.contains("label"), "{m}");
    let ok = commit(
        &db,
        vec![
            ChunkDecl::generated()
                .body(json!({"label": "x"}))
                .on(NewPlacement::instance("household"))
                .on(NewPlacement::instance("tagged")),
        ],
    );
    // and makes it ordered
    let r = read(&db, &["household"]);
    assert_eq!(r.chunks[0].id, ok.created[0]);
    assert_eq!(
        r.chunks[0]
            .placements
            .iter()
            .find(|p| p.scope == "household")
            .unwrap()
            .seq,
        Some(0)
    );
    // members of the template's direct instance `family` are bound too (household is one)
    assert!(read(&db, &["family"]).chunks[0].placements[0].seq.is_some());
}

#[test]
fn accepts_of_several_templates_is_a_union() {
    let (_d, db) = fresh();
    // a process on program/agent is accepted by engine/process's template and
    // the agent program's template: it takes outputs and prompts alike
    commit(
        &db,
        vec![
            ChunkDecl::with_id("p_1")
                .on(NewPlacement::instance("program/agent"))
                .on(NewPlacement::instance("engine/process")),
        ],
    );
    commit(
        &db,
        vec![
            ChunkDecl::generated()
                .body(json!({"text": "out"}))
                .on(NewPlacement::instance("p_1"))
                .on(NewPlacement::instance("engine/output")),
            ChunkDecl::generated()
                .body(json!({"text": "task"}))
                .on(NewPlacement::instance("p_1"))
                .on(NewPlacement::instance("prompt")),
        ],
    );
    assert_eq!(read(&db, &["p_1"]).chunks.len(), 2);
}

#[test]
fn a_spec_change_does_not_revalidate_existing_members() {
    let (_d, db) = empty();
    commit(&db, vec![ChunkDecl::with_id("box")]);
    commit(
        &db,
        vec![ChunkDecl::with_id("thing").on(NewPlacement::instance("box"))],
    );
    commit(
        &db,
        vec![ChunkDecl::with_id("box").spec(json!({"required": ["size"]}))],
    );
    assert_eq!(read(&db, &["box"]).chunks.len(), 1);
    validation(
        db.commit(
            Declaration::of(vec![
                ChunkDecl::with_id("other").on(NewPlacement::instance("box")),
            ]),
            None,
        )
        .unwrap_err(),
    );
}
