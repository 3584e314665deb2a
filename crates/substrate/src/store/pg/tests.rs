//! The shared write and read logic on PostgreSQL answers as on SQLite:
//! the same declarations applied through [`Apply`] on both, then read.

use super::PgStore;
use super::conn::PgLocation;
use crate::Substrate;
use crate::store::snapshot::Snapshot;
use crate::store::write::Apply;
use crate::types::{ChunkDecl, Declaration, NewPlacement, ScopeOpts};
use serde_json::json;

fn declarations() -> Vec<Declaration> {
    let spec = json!({"ordered": true, "accepts": ["note"]});
    vec![
        Declaration::of(vec![
            ChunkDecl::with_id("note")
                .name("note")
                .spec(json!({}))
                .body(json!({})),
            ChunkDecl::with_id("list")
                .name("a list")
                .spec(spec)
                .body(json!({"title": "todo"})),
        ]),
        Declaration::of(vec![
            ChunkDecl::with_id("n1")
                .name("first")
                .body(json!({"text": "buy milk"}))
                .on(NewPlacement::instance("note"))
                .on(NewPlacement::instance("list")),
            ChunkDecl::with_id("n2")
                .name("second")
                .body(json!({"text": "walk the hermit crab"}))
                .on(NewPlacement::instance("note"))
                .on(NewPlacement::instance("list")),
        ]),
        Declaration::of(vec![
            ChunkDecl::with_id("n1")
                .name("first, changed")
                .body(json!({"text": "buy oat milk"})),
        ]),
    ]
}

/// Applies `decl` on `tx` as a commit does; answers the record.
fn apply(tx: &dyn crate::store::tx::Tx, head: i64, decl: Declaration) -> crate::Result<String> {
    let n = head as u64 + 1;
    let parent = (head > 0).then_some(head as u64);
    let (commit, _, _) =
        Apply::new(tx, n)?.run(decl, parent, "2026-11-27T00:00:00.000Z".into(), None, None)?;
    let record = serde_json::to_string(&commit).unwrap();
    tx.insert_commit(&commit, &record)?;
    Ok(record)
}

#[test]
fn the_same_declarations_answer_the_same_on_both() {
    let pg = testkit::PgCluster::start().unwrap();
    let at = PgLocation::parse(&pg.url("postgres"), "hc_test").unwrap();
    let store = PgStore::open(at.clone(), 4).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let sqlite = Substrate::open(dir.path().join("s.db")).unwrap();
    for decl in declarations() {
        let on_pg = store
            .with_write(
                |tx, head| apply(tx, head, decl.clone()),
                &std::cell::RefCell::new(None),
            )
            .unwrap();
        let on_sqlite = sqlite
            .with_writer_for_test(|tx, head| apply(tx, head, decl))
            .unwrap();
        let strip = |r: &str| {
            let mut v: serde_json::Value = serde_json::from_str(r).unwrap();
            v["timestamp"] = json!(null);
            v
        };
        assert_eq!(strip(&on_pg), strip(&on_sqlite), "the commit records");
    }
    let reads = [
        (vec!["list"], ScopeOpts::default()),
        (vec!["note", "list"], ScopeOpts::default()),
        (
            vec!["list"],
            ScopeOpts {
                as_of: Some(2),
                ..ScopeOpts::default()
            },
        ),
        (
            vec![],
            ScopeOpts {
                match_: Some("milk".into()),
                ..ScopeOpts::default()
            },
        ),
    ];
    for (ids, opts) in reads {
        let ids: Vec<String> = ids.into_iter().map(str::to_owned).collect();
        let on_pg = store
            .with_read(|tx, head| Snapshot::writing(tx, head as u64).scope(&ids, &opts))
            .unwrap();
        let on_sqlite = sqlite.scope(&ids, &opts).unwrap();
        assert_eq!(
            serde_json::to_value(&on_pg).unwrap(),
            serde_json::to_value(&on_sqlite).unwrap(),
            "{ids:?} {opts:?}"
        );
    }
    // a second opening finds the schema made, and a newer one is refused
    drop(store);
    let again = PgStore::open(at.clone(), 2).unwrap();
    drop(again);
    pg.psql(
        "postgres",
        "UPDATE hc_test.meta SET value = '99' WHERE key = 'schema_version'",
    )
    .unwrap();
    let newer = PgStore::open(at, 2).err().unwrap();
    assert!(newer.to_string().contains("upgrade hermitcrab"), "{newer}");
    // a schema of another program is not taken
    pg.psql(
        "postgres",
        "CREATE SCHEMA theirs; CREATE TABLE theirs.orders (n int)",
    )
    .unwrap();
    let theirs = PgLocation::parse(&pg.url("postgres"), "theirs").unwrap();
    let taken = PgStore::open(theirs, 2).err().unwrap();
    assert!(taken.to_string().contains("another program"), "{taken}");
}
