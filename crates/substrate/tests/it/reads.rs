//! Scope reads: one id, intersections, ordering, the whole substrate,
//! full-text, paging, filters, facets, `as_of` and the commit log.

use super::common;
use common::*;
use serde_json::json;
use substrate::{ChunkDecl, Include, NewPlacement, ScopeOpts, TypeFilter};

fn opts() -> ScopeOpts {
    ScopeOpts::default()
}

#[test]
fn one_id_lists_its_members_with_all_their_placements() {
    let (_d, db) = fresh();
    session(&db, "s");
    let a = prompt(&db, "s", "first");
    let r = read(&db, &["s"]);
    assert_eq!(r.scopes.len(), 1);
    assert_eq!(r.scopes[0].id, "s");
    assert!(r.scopes[0].is_on("session", substrate::PlacementType::Instance));
    assert_eq!(r.total, 1);
    let item = &r.chunks[0];
    assert_eq!(item.id, a);
    assert_eq!(item.body_value(), json!({"text": "first"}));
    let scopes: Vec<&str> = item.placements.iter().map(|p| p.scope.as_str()).collect();
    assert_eq!(scopes, vec!["s", "prompt"]);
    assert_eq!(r.as_of, db.head().unwrap());
}

#[test]
fn a_chunk_placed_twice_on_a_scope_is_listed_once() {
    let (_d, db) = empty();
    commit(
        &db,
        vec![
            ChunkDecl::with_id("s"),
            ChunkDecl::with_id("x")
                .on(NewPlacement::instance("s"))
                .on(NewPlacement::relates("s")),
        ],
    );
    assert_eq!(member_ids(&read(&db, &["s"])), vec!["x"]);
}

#[test]
fn unordered_scopes_list_by_placing_commit_then_declaration_order() {
    let (_d, db) = empty();
    commit(&db, vec![ChunkDecl::with_id("s")]);
    commit(
        &db,
        vec![
            ChunkDecl::with_id("z").on(NewPlacement::instance("s")),
            ChunkDecl::with_id("a").on(NewPlacement::instance("s")),
        ],
    );
    commit(
        &db,
        vec![ChunkDecl::with_id("m").on(NewPlacement::instance("s"))],
    );
    assert_eq!(member_ids(&read(&db, &["s"])), vec!["z", "a", "m"]);
}

#[test]
fn several_ids_intersect_in_the_order_of_the_first_ordered_scope() {
    let (_d, db) = fresh();
    session(&db, "s");
    let p1 = prompt(&db, "s", "one");
    commit(
        &db,
        vec![
            ChunkDecl::generated()
                .body(json!({"text": "an answer"}))
                .on(NewPlacement::instance("s"))
                .on(NewPlacement::instance("answer")),
        ],
    );
    let p2 = prompt(&db, "s", "two");
    // the prompts in that session, in session order, whichever id comes first
    assert_eq!(
        member_ids(&read(&db, &["s", "prompt"])),
        vec![p1.clone(), p2.clone()]
    );
    assert_eq!(member_ids(&read(&db, &["prompt", "s"])), vec![p1, p2]);
    assert!(read(&db, &["s", "tool-call"]).chunks.is_empty());
}

#[test]
fn no_ids_reads_everything_first_100_without_a_limit() {
    let (_d, db) = empty();
    let chunks: Vec<ChunkDecl> = (0..150)
        .map(|i| ChunkDecl::with_id(format!("k{i:03}")))
        .collect();
    commit(&db, chunks);
    let r = db.scope::<&str>(&[], &opts()).unwrap();
    assert_eq!(r.chunks.len(), 100);
    assert_eq!(r.total, 150);
    assert!(r.scopes.is_empty());
    let next = db
        .scope::<&str>(
            &[],
            &ScopeOpts {
                after: r.next_after.clone(),
                ..opts()
            },
        )
        .unwrap();
    assert_eq!(next.chunks.len(), 50);
    assert_eq!(next.next_after, None);
    let mut all = member_ids(&r);
    all.extend(member_ids(&next));
    let expected: Vec<String> = (0..150).map(|i| format!("k{i:03}")).collect();
    assert_eq!(all, expected);
}

#[test]
fn limit_and_after_page_through_a_scope_exactly() {
    let (_d, db) = fresh();
    session(&db, "s");
    let ids: Vec<String> = (0..25)
        .map(|i| prompt(&db, "s", &format!("p{i}")))
        .collect();
    let mut seen = Vec::new();
    let mut after = None;
    loop {
        let r = db
            .scope(
                &["s"],
                &ScopeOpts {
                    limit: Some(10),
                    after: after.clone(),
                    ..opts()
                },
            )
            .unwrap();
        assert_eq!(r.total, 25);
        seen.extend(member_ids(&r));
        after = r.next_after;
        if after.is_none() {
            break;
        }
    }
    assert_eq!(seen, ids);
    let bad = db
        .scope(
            &["s"],
            &ScopeOpts {
                after: Some("garbage".into()),
                ..opts()
            },
        )
        .unwrap_err();
    assert_eq!(bad.code(), "INVALID_REQUEST");
}

#[test]
fn match_searches_names_and_every_string_in_bodies() {
    let (_d, db) = fresh();
    session(&db, "s");
    let weather = prompt(&db, "s", "what is the weather in Lisbon");
    prompt(&db, "s", "fix the failing test");
    commit(
        &db,
        vec![
            ChunkDecl::with_id("deep")
                .name("Porto notes")
                .body(json!({"list": [{"city": "Lisbon weather"}], "n": 3})),
        ],
    );
    let everywhere = db
        .scope::<&str>(
            &[],
            &ScopeOpts {
                match_: Some("weather lisbon".into()),
                ..opts()
            },
        )
        .unwrap();
    let mut hits = member_ids(&everywhere);
    hits.sort();
    let mut expected = vec!["deep".to_owned(), weather.clone()];
    expected.sort();
    assert_eq!(hits, expected);
    // within a scope
    let r = db
        .scope(
            &["s"],
            &ScopeOpts {
                match_: Some("weather".into()),
                ..opts()
            },
        )
        .unwrap();
    assert_eq!(member_ids(&r), vec![weather.clone()]);
    // by name
    assert_eq!(
        member_ids(
            &db.scope::<&str>(
                &[],
                &ScopeOpts {
                    match_: Some("porto".into()),
                    ..opts()
                }
            )
            .unwrap()
        ),
        vec!["deep"]
    );
    // an unbalanced quote is read, not refused
    let r = db
        .scope(
            &["s"],
            &ScopeOpts {
                match_: Some("fix-the \"failing".into()),
                ..opts()
            },
        )
        .unwrap();
    assert_eq!(r.total, 1);
    // updated text is searched, old text is not
    commit(
        &db,
        vec![ChunkDecl::with_id(&weather).body(json!({"text": "sunny"}))],
    );
    assert!(
        db.scope(
            &["s"],
            &ScopeOpts {
                match_: Some("lisbon".into()),
                ..opts()
            }
        )
        .unwrap()
        .chunks
        .is_empty()
    );
}

/// The `match_` language as docs/substrate.md writes it down: words,
/// prefixes, phrases, `AND`, `OR`, letters of any script, punctuation as
/// a separator — the same answers on either backend.
#[test]
fn match_reads_the_language_written_down() {
    let (_d, db) = fresh();
    let texts = [
        ("a", "The hermit crab moves into a bigger shell"),
        ("b", "crab-shell: a shell for the crab"),
        ("c", "Größe matters; café au lait"),
        ("d", "hermitage in the hills"),
        ("e", "v2.0 released, see CHANGELOG"),
    ];
    commit(
        &db,
        texts
            .iter()
            .map(|(id, text)| ChunkDecl::with_id(*id).body(json!({"text": text})))
            .collect(),
    );
    let found = |query: &str| {
        let r = db
            .scope::<&str>(
                &[],
                &ScopeOpts {
                    match_: Some(query.into()),
                    ..ScopeOpts::default()
                },
            )
            .unwrap();
        let mut ids = member_ids(&r);
        ids.sort();
        ids.join(",")
    };
    assert_eq!(found("crab"), "a,b");
    assert_eq!(found("CRAB"), "a,b", "case does not matter");
    assert_eq!(found("herm*"), "a,d", "a prefix");
    assert_eq!(found("hermit"), "a", "a whole word, not a prefix");
    assert_eq!(found("\"hermit crab\""), "a", "a phrase, in order");
    assert_eq!(found("\"crab hermit\""), "", "not out of order");
    assert_eq!(found("crab-shell"), "b", "a bare item's words are a phrase");
    assert_eq!(found("shell crab"), "a,b", "every term");
    assert_eq!(found("shell AND hills"), "");
    assert_eq!(found("hills OR café"), "c,d", "either group");
    assert_eq!(found("crab bigger OR hills"), "a,d", "AND binds first");
    assert_eq!(found("größe"), "c", "letters of any script");
    assert_eq!(found("grosse"), "", "no folding");
    assert_eq!(found("v2"), "e", "punctuation separates");
    assert_eq!(found("changelog released"), "e");
    assert_eq!(found("\"hermit cr\"*"), "a", "a phrase ending in a prefix");
    assert_eq!(found("!!! ???"), "", "no word: nothing");
}

#[test]
fn type_filter_exclude_and_include() {
    let (_d, db) = fresh();
    session(&db, "s");
    let p = prompt(&db, "s", "a");
    commit(
        &db,
        vec![ChunkDecl::with_id("ref").on(NewPlacement::relates("s"))],
    );
    let ids = |kind| member_ids(&db.scope(&["s"], &ScopeOpts { kind, ..opts() }).unwrap());
    assert_eq!(ids(TypeFilter::Instance), vec![p.clone()]);
    assert_eq!(ids(TypeFilter::Relates), vec!["ref"]);
    assert_eq!(ids(TypeFilter::Both), vec![p.clone(), "ref".to_owned()]);
    let r = db
        .scope(
            &["s"],
            &ScopeOpts {
                exclude: vec!["prompt".into()],
                ..opts()
            },
        )
        .unwrap();
    assert_eq!(member_ids(&r), vec!["ref"]);
    assert_eq!(r.total, 1);
    let r = db
        .scope(
            &["s"],
            &ScopeOpts {
                include: Include {
                    body: false,
                    dimensions: true,
                },
                ..opts()
            },
        )
        .unwrap();
    assert!(r.chunks.iter().all(|c| c.body.is_none()));
    assert_eq!(
        r.chunks[0].placements.len(),
        2,
        "placements still come without bodies"
    );
    let dims = r.dimensions.unwrap();
    assert_eq!(dims.len(), 1);
    assert_eq!(
        (dims[0].id.as_str(), dims[0].count, dims[0].name.as_deref()),
        ("prompt", 1, Some("prompt"))
    );
}

#[test]
fn dimensions_are_most_populated_first() {
    let (_d, db) = fresh();
    session(&db, "s");
    for i in 0..3 {
        prompt(&db, "s", &format!("p{i}"));
    }
    commit(
        &db,
        vec![
            ChunkDecl::generated()
                .body(json!({"text": "x"}))
                .on(NewPlacement::instance("s"))
                .on(NewPlacement::instance("answer")),
        ],
    );
    let r = db
        .scope(
            &["s"],
            &ScopeOpts {
                include: Include {
                    body: true,
                    dimensions: true,
                },
                ..opts()
            },
        )
        .unwrap();
    let dims: Vec<(String, u64)> = r
        .dimensions
        .unwrap()
        .into_iter()
        .map(|d| (d.id, d.count))
        .collect();
    assert_eq!(
        dims,
        vec![("prompt".to_owned(), 3), ("answer".to_owned(), 1)]
    );
}

#[test]
fn as_of_reads_exactly_the_past() {
    let (_d, db) = fresh();
    session(&db, "s");
    let a = prompt(&db, "s", "v1");
    let after_a = db.head().unwrap();
    let b = prompt(&db, "s", "b");
    commit(
        &db,
        vec![ChunkDecl::with_id(&a).body(json!({"text": "v2"}))],
    );
    commit_json(
        &db,
        json!({"remove": {"placements": [{"chunk": b, "scope": "s", "type": "instance"}]}}),
    )
    .unwrap();
    let past = db
        .scope(
            &["s"],
            &ScopeOpts {
                as_of: Some(after_a),
                ..opts()
            },
        )
        .unwrap();
    assert_eq!(member_ids(&past), vec![a.clone()]);
    assert_eq!(past.chunks[0].body_value(), json!({"text": "v1"}));
    assert_eq!(past.as_of, after_a);
    let now = read(&db, &["s"]);
    assert_eq!(member_ids(&now), vec![a]);
    assert_eq!(now.chunks[0].body_value(), json!({"text": "v2"}));
    // a scope that did not exist yet
    assert_eq!(
        db.scope(
            &["s"],
            &ScopeOpts {
                as_of: Some(1),
                ..opts()
            }
        )
        .unwrap_err()
        .code(),
        "NOT_FOUND"
    );
    // the future is refused, and so is a search of the past
    let head = db.head().unwrap();
    assert_eq!(
        db.scope(
            &["s"],
            &ScopeOpts {
                as_of: Some(head + 1),
                ..opts()
            }
        )
        .unwrap_err()
        .code(),
        "INVALID_REQUEST"
    );
    assert_eq!(
        db.scope(
            &["s"],
            &ScopeOpts {
                as_of: Some(1),
                match_: Some("x".into()),
                ..opts()
            }
        )
        .unwrap_err()
        .code(),
        "INVALID_REQUEST"
    );
    // as_of 0 is the empty substrate
    assert_eq!(
        db.scope::<&str>(
            &[],
            &ScopeOpts {
                as_of: Some(0),
                ..opts()
            }
        )
        .unwrap()
        .total,
        0
    );
}

#[test]
fn commits_root_lists_commits_newest_first_and_refuses_mixing() {
    let (_d, db) = empty();
    for i in 0..5 {
        commit(&db, vec![ChunkDecl::with_id(format!("a{i}"))]);
    }
    let r = db
        .scope(
            &["commits_root"],
            &ScopeOpts {
                limit: Some(2),
                ..opts()
            },
        )
        .unwrap();
    assert_eq!(member_ids(&r), vec!["commit/5", "commit/4"]);
    assert_eq!(r.scopes[0].id, "commits_root");
    let r = db
        .scope(
            &["commits_root"],
            &ScopeOpts {
                after: r.next_after,
                ..opts()
            },
        )
        .unwrap();
    assert_eq!(member_ids(&r), vec!["commit/3", "commit/2", "commit/1"]);
    let r = db
        .scope(
            &["commits_root"],
            &ScopeOpts {
                as_of: Some(2),
                ..opts()
            },
        )
        .unwrap();
    assert_eq!(member_ids(&r), vec!["commit/2", "commit/1"]);
    let e = db.scope(&["commits_root", "a1"], &opts()).unwrap_err();
    assert_eq!(e.code(), "INVALID_REQUEST");
    assert!(e.message().contains("commits_root"));
}

#[test]
fn reading_a_missing_id_is_not_found_and_names_it() {
    let (_d, db) = fresh();
    let e = db.scope(&["nope"], &opts()).unwrap_err();
    assert_eq!(e.code(), "NOT_FOUND");
    assert!(e.message().contains("nope"));
}

#[test]
fn several_reads_share_one_snapshot() {
    let (_d, db) = fresh();
    session(&db, "s");
    let (a, b) = db
        .read(|snap| {
            let a = snap.scope(&["s".to_owned()], &opts())?;
            let b = snap.scope(&["session".to_owned()], &opts())?;
            Ok::<_, substrate::Error>((a, b))
        })
        .unwrap();
    assert_eq!(a.as_of, b.as_of);
}

/// Issue 13: a scope that stops being ordered lists its members by the
/// commit that placed them, not by the `seq`s they still carry — at head,
/// as of a past commit, paged, and as the first id of an intersection.
#[test]
fn a_scope_no_longer_ordered_lists_by_placing_commit_not_leftover_seq() {
    let (_d, db) = empty();
    let steps = [
        json!({"chunks":[{"id":"tmpl","spec":{"propagate":true,"ordered":true}},
                         {"id":"s","placements":[{"scope":"tmpl","type":"instance"}]},
                         {"id":"a"},{"id":"b"},{"id":"t"}]}),
        json!({"placements":[{"chunk":"a","scope":"s","type":"instance","seq":2},
                             {"chunk":"a","scope":"t","type":"instance"}]}),
        json!({"placements":[{"chunk":"b","scope":"s","type":"instance","seq":1},
                             {"chunk":"b","scope":"t","type":"instance"}]}),
    ];
    for step in steps {
        commit_json(&db, step).unwrap();
    }
    let ordered_at = db.head().unwrap();
    assert_eq!(
        member_ids(&read(&db, &["s"])),
        vec!["b", "a"],
        "ordered: by seq"
    );
    commit_json(
        &db,
        json!({"remove":{"placements":[{"chunk":"s","scope":"tmpl","type":"instance"}]}}),
    )
    .unwrap();
    let unordered_at = db.head().unwrap();
    let by_placing = vec!["a".to_owned(), "b".to_owned()];
    assert_eq!(member_ids(&read(&db, &["s"])), by_placing);
    let paged = ScopeOpts {
        limit: Some(10),
        ..opts()
    };
    assert_eq!(member_ids(&db.scope(&["s"], &paged).unwrap()), by_placing);
    assert_eq!(member_ids(&read(&db, &["s", "t"])), by_placing);
    let at = |n: u64, ids: &[&str]| {
        let o = ScopeOpts {
            as_of: Some(n),
            ..opts()
        };
        member_ids(&db.scope(ids, &o).unwrap())
    };
    assert_eq!(at(unordered_at, &["s"]), by_placing);
    assert_eq!(at(unordered_at, &["s", "t"]), by_placing);
    assert_eq!(
        at(ordered_at, &["s"]),
        vec!["b", "a"],
        "as of when it was ordered"
    );
    assert_eq!(at(ordered_at, &["t", "s"]), vec!["b", "a"]);
}
