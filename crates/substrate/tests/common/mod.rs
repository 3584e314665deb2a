#![allow(clippy::unwrap_used, clippy::expect_used, dead_code)]
//! Helpers shared by the substrate's integration tests.

use serde_json::{Value, json};
use substrate::{ChunkDecl, Commit, Declaration, NewPlacement, ScopeOpts, ScopeResult, Substrate};
use tempfile::TempDir;

/// A fresh, bootstrapped substrate in a temporary directory.
pub fn fresh() -> (TempDir, Substrate) {
    let dir = tempfile::tempdir().unwrap();
    let db = Substrate::open(dir.path().join("substrate.db")).unwrap();
    db.init(vec![]).unwrap();
    (dir, db)
}

/// A substrate with no bootstrap chunks.
pub fn empty() -> (TempDir, Substrate) {
    let dir = tempfile::tempdir().unwrap();
    let db = Substrate::open(dir.path().join("substrate.db")).unwrap();
    (dir, db)
}

pub fn commit(db: &Substrate, chunks: Vec<ChunkDecl>) -> Commit {
    db.commit(Declaration::of(chunks), None).unwrap()
}

pub fn commit_json(db: &Substrate, decl: Value) -> substrate::Result<Commit> {
    db.commit(Declaration::from_json(&decl.to_string())?, None)
}

pub fn read(db: &Substrate, ids: &[&str]) -> ScopeResult {
    db.scope(ids, &ScopeOpts::default()).unwrap()
}

pub fn member_ids(r: &ScopeResult) -> Vec<String> {
    r.chunks.iter().map(|c| c.id.clone()).collect()
}

/// A new session `id`.
pub fn session(db: &Substrate, id: &str) -> Commit {
    commit(
        db,
        vec![
            ChunkDecl::with_id(id)
                .name(id)
                .on(NewPlacement::instance("session")),
        ],
    )
}

/// A prompt on `session` (dual placement), returning its id.
pub fn prompt(db: &Substrate, session: &str, text: &str) -> String {
    let c = commit(
        db,
        vec![
            ChunkDecl::generated()
                .body(json!({ "text": text }))
                .on(NewPlacement::instance(session))
                .on(NewPlacement::instance("prompt")),
        ],
    );
    c.created[0].clone()
}

/// Everything the store holds at head, for "nothing changed" checks.
pub fn everything(db: &Substrate) -> (u64, ScopeResult) {
    let all = db
        .scope::<&str>(
            &[],
            &ScopeOpts {
                limit: Some(1_000_000),
                ..ScopeOpts::default()
            },
        )
        .unwrap();
    (db.head().unwrap(), all)
}
