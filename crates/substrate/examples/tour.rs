//! A tour of the substrate: open a store, commit a session with a prompt
//! and an answer, read it back, search it, and read the past.
//!
//! `cargo run -p substrate --example tour [PATH]` (default: a temp dir).
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use serde_json::json;
use substrate::{ChunkDecl, Declaration, NewPlacement, ScopeOpts, Substrate};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let path = std::env::args()
        .nth(1)
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| dir.path().join("substrate.db"));
    let db = Substrate::open(&path)?;
    // The substrate knows no types: a host brings its vocabulary. Here, a
    // session type (ordered, for prompts and answers) and the two content types.
    let vocabulary = vec![
        ChunkDecl::with_id("session")
            .spec(json!({"propagate": true, "ordered": true, "accepts": ["prompt", "answer"]})),
        ChunkDecl::with_id("prompt").spec(json!({"required": ["text"]})),
        ChunkDecl::with_id("answer").spec(json!({"required": ["text"]})),
    ];
    if let Some(c) = db.init(vocabulary)? {
        println!("bootstrapped {} types in commit {}", c.created.len(), c.id);
    }
    let session = format!("s_{}", std::process::id());
    let first = db.commit(
        Declaration::of(vec![
            ChunkDecl::with_id(&session)
                .name("tour")
                .on(NewPlacement::instance("session")),
            ChunkDecl::generated()
                .body(json!({"text": "what does the substrate keep?"}))
                .on(NewPlacement::instance(&session))
                .on(NewPlacement::instance("prompt")),
        ]),
        None,
    )?;
    println!(
        "commit {}: session {session} and prompt {}",
        first.id, first.created[1]
    );
    let second = db.commit(
        Declaration::of(vec![
            ChunkDecl::generated()
                .body(json!({"text": "every step, durably, queryable by scope and by time"}))
                .on(NewPlacement::instance(&session))
                .on(NewPlacement::instance("answer")),
        ]),
        None,
    )?;
    println!("commit {}: answer {}", second.id, second.created[0]);

    let now = db.scope(&[&session], &ScopeOpts::default())?;
    println!(
        "\n{session} now ({} members, as of commit {}):",
        now.total, now.as_of
    );
    for item in &now.chunks {
        let kind = item
            .placements
            .iter()
            .find(|p| p.scope != session)
            .map(|p| p.scope.as_str());
        println!("  {:<7} {}", kind.unwrap_or("?"), item.body_value()["text"]);
    }
    let then = db.scope(
        &[&session],
        &ScopeOpts {
            as_of: Some(first.id),
            ..ScopeOpts::default()
        },
    )?;
    println!("\nas of commit {}: {} member(s)", first.id, then.total);
    let hits = db.scope::<&str>(
        &[],
        &ScopeOpts {
            match_: Some("durably".into()),
            ..ScopeOpts::default()
        },
    )?;
    println!(
        "search \"durably\": {:?}",
        hits.chunks.iter().map(|c| &c.id).collect::<Vec<_>>()
    );
    let prompts = db.scope(&[session.as_str(), "prompt"], &ScopeOpts::default())?;
    println!("prompts in the session: {}", prompts.total);
    println!("\nstore: {}", path.display());
    Ok(())
}
