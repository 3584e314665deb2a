#![allow(clippy::unwrap_used, clippy::expect_used, dead_code)]
//! Helpers shared by the substrate's integration tests.

use serde_json::{Value, json};
use substrate::{ChunkDecl, Commit, Declaration, NewPlacement, ScopeOpts, ScopeResult, Substrate};
use tempfile::TempDir;

/// A fresh substrate in a temporary directory, with [`vocabulary`].
pub fn fresh() -> (TempDir, Substrate) {
    let dir = tempfile::tempdir().unwrap();
    let db = Substrate::open(dir.path().join("substrate.db")).unwrap();
    db.init(vocabulary()).unwrap();
    (dir, db)
}

fn archetype(id: &str, spec: Value) -> ChunkDecl {
    ChunkDecl::with_id(id).name(id).spec(spec).body(json!({}))
}

/// A vocabulary shaped like the one the engine and the agent define (the
/// substrate knows none of it): process and program types, sessions and
/// their content types, culture.
pub fn vocabulary() -> Vec<ChunkDecl> {
    let accepts = [
        "prompt",
        "answer",
        "tool-call",
        "tool-result",
        "context",
        "engine/process",
    ];
    let mut out = vec![
        archetype("engine/program", json!({"required": ["executable"]})),
        archetype(
            "engine/process",
            json!({"propagate": true, "ordered": true, "accepts": ["engine/process", "engine/output"]}),
        ),
        archetype("engine/output", json!({})),
        archetype("agent", json!({})),
        archetype(
            "session",
            json!({"propagate": true, "ordered": true, "accepts": accepts}),
        )
        .on(NewPlacement::instance("agent")),
    ];
    for (id, spec) in [
        ("prompt", json!({"required": ["text"]})),
        ("answer", json!({"required": ["text"]})),
        ("tool-call", json!({"required": ["program"]})),
        ("tool-result", json!({"required": ["program"]})),
        ("context", json!({"propagate": true, "ordered": true})),
    ] {
        out.push(
            archetype(id, spec)
                .on(NewPlacement::instance("agent"))
                .on(NewPlacement::relates("session")),
        );
    }
    out.push(archetype("culture", json!({})));
    out.push(
        ChunkDecl::with_id("program/agent")
            .name("agent")
            .spec(json!({"propagate": true, "accepts": ["prompt", "context"]}))
            .body(json!({"executable": "builtin:agent", "boundary": "open"}))
            .on(NewPlacement::instance("engine/program")),
    );
    out
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

/// The same stores on PostgreSQL: a schema of each test's own on the
/// test process's one cluster (Debian's `postgresql`, started once).
pub mod postgres {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// A new, empty schema's substrate.
    pub fn empty() -> (TempDir, Substrate) {
        static N: AtomicUsize = AtomicUsize::new(0);
        let cluster = testkit::PgCluster::shared().expect("a PostgreSQL cluster");
        let schema = format!(
            "t{}_{}",
            std::process::id(),
            N.fetch_add(1, Ordering::SeqCst)
        );
        let db = Substrate::open_postgres(
            &cluster.url,
            &schema,
            substrate::Options::default(),
            std::path::Path::new("/nonexistent/substrate.db"),
        )
        .unwrap();
        (tempfile::tempdir().unwrap(), db)
    }

    /// [`empty`], with the vocabulary.
    pub fn fresh() -> (TempDir, Substrate) {
        let (dir, db) = empty();
        db.init(vocabulary()).unwrap();
        (dir, db)
    }
}
