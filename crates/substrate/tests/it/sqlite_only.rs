//! What only the SQLite store has: its file, its full-text queue.

use crate::common::*;
use serde_json::json;
use substrate::{ChunkDecl, ScopeOpts};

/// The full-text index is written off the commit's path (a thread indexes
/// what commits queue); a search never reads it behind. Here the state a
/// process killed between its commit and the indexing leaves — the old
/// text still indexed, the new one queued — is searched: the new text is
/// found, the old is not, and the queue is emptied.
#[test]
fn a_search_never_reads_the_index_behind_what_was_committed() {
    let (dir, db) = fresh();
    commit(
        &db,
        vec![ChunkDecl::with_id("note").body(json!({"text": "Braga rain"}))],
    );
    db.checkpoint().unwrap(); // indexes what is queued
    let path = dir.path().join("substrate.db");
    let raw = rusqlite::Connection::open(&path).unwrap();
    let key: i64 = raw
        .query_row("SELECT key FROM chunks WHERE id = 'note'", [], |r| r.get(0))
        .unwrap();
    raw.execute_batch(&format!(
        "DELETE FROM chunk_text WHERE rowid = {key};
         INSERT INTO chunk_text (rowid, text) VALUES ({key}, 'Porto sun');
         INSERT INTO text_queue (key) VALUES ({key});"
    ))
    .unwrap();
    let search = |words: &str| {
        member_ids(
            &db.scope::<&str>(
                &[],
                &ScopeOpts {
                    match_: Some(words.into()),
                    ..ScopeOpts::default()
                },
            )
            .unwrap(),
        )
    };
    assert_eq!(search("braga"), vec!["note".to_owned()]);
    assert!(search("porto").is_empty(), "the stale text is gone");
    let queued: i64 = raw
        .query_row("SELECT count(*) FROM text_queue", [], |r| r.get(0))
        .unwrap();
    assert_eq!(queued, 0);
    // And a commit's text is found by a search right after it, however
    // far the indexing thread has got.
    for n in 0..50 {
        commit(
            &db,
            vec![ChunkDecl::with_id(format!("n{n}")).body(json!({"text": format!("word{n}")}))],
        );
        assert_eq!(search(&format!("word{n}")), vec![format!("n{n}")]);
    }
}
