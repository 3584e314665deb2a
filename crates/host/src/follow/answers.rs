//! Answering what a run asks, for every answerer: the answer committed
//! where the question was asked, once (the store keeps one answer per
//! question), and who answered first when another host did.

use super::Sink;
use agent::contract::{Body, Choice, Entry, PermissionRequest, Plan, SessionItem, UserQuestion};
use engine::{Context, Engine};
use protocol::{ChunkDecl, Declaration, NewPlacement, PlacementType};

/// How often a question asked here looks whether another host answered.
const ELSEWHERE_EVERY: std::time::Duration = std::time::Duration::from_millis(100);

/// Commits `entry` on `scope` (the session, or the process that is a
/// sub-agent's session), as the host.
pub fn commit_on(engine: &Engine, scope: &str, entry: Entry) -> engine::Result<substrate::Commit> {
    let chunk = ChunkDecl::generated()
        .body(entry.body)
        .on(NewPlacement::instance(scope))
        .on(NewPlacement::instance(entry.kind));
    engine.commit(&Context::host(), Declaration::of(vec![chunk]))
}

/// Commits an answer on `on`; a failure is said on `sink`.
pub fn answer(engine: &Engine, sink: &mut dyn Sink, on: &str, entry: Entry) {
    if let Err(e) = commit_on(engine, on, entry) {
        sink.say(&format!("cannot answer: {e}"));
    }
}

/// Commits this host's answer to `id` (a chunk of `on`, answered by a
/// `kind` chunk) — unless another host answered first: then says who did.
pub fn answer_once(
    engine: &Engine,
    sink: &mut dyn Sink,
    on: &str,
    kind: &str,
    id: &str,
    entry: Entry,
) {
    if let Err(e) = commit_on(engine, on, entry) {
        match answered(engine, on, kind, id) {
            Some(said) => sink.say(&said),
            None => sink.say(&format!("cannot answer: {e}")),
        }
    }
}

/// Waits until another host (the page, another terminal — another
/// process) answers `id`: what to say of it. Meanwhile the commits other
/// processes made are followed, so the agent this engine runs hears the
/// answer too.
pub async fn answered_elsewhere(engine: Engine, on: String, kind: &str, id: String) -> String {
    loop {
        tokio::time::sleep(ELSEWHERE_EVERY).await;
        let db = std::sync::Arc::clone(engine.db());
        let _ = tokio::task::spawn_blocking(move || db.follow()).await;
        if let Some(said) = answered(&engine, &on, kind, &id) {
            return said;
        }
    }
}

/// The answer to `id` already recorded, in words: "answered on the page:
/// allow".
pub fn answered(engine: &Engine, on: &str, kind: &str, id: &str) -> Option<String> {
    let scopes = [on.to_owned(), kind.to_owned()];
    let read = engine
        .scope(&Context::host(), &scopes, &Default::default())
        .ok()?;
    let (by, what) = read.chunks.iter().find_map(|c| match SessionItem::of(c) {
        SessionItem::PermissionDecision(d) if d.request == id => {
            Some((d.by, choice_word(d.decision).to_owned()))
        }
        SessionItem::UserAnswer(a) if a.request == id => Some((a.by, a.text)),
        _ => None,
    })?;
    let by = match by.as_deref().unwrap_or("another host") {
        "the page" => "on the page".to_owned(),
        other => format!("by {other}"),
    };
    Some(format!("answered {by}: {}", crate::text::shown(&what)))
}

/// A decision in the word its body holds.
fn choice_word(choice: Choice) -> &'static str {
    match choice {
        Choice::Allow => "allow",
        Choice::Always => "always",
        Choice::Never => "never",
        Choice::Deny => "deny",
    }
}

/// Where a question was asked: the session, or the process that is a
/// sub-agent's session.
pub fn asked_on(chunk: &substrate::ChunkItem, session: &str) -> String {
    chunk
        .placements
        .iter()
        .find(|p| {
            p.kind == PlacementType::Instance
                && ![PermissionRequest::TYPE, UserQuestion::TYPE, Plan::TYPE]
                    .contains(&p.scope.as_str())
        })
        .map_or_else(|| session.to_owned(), |p| p.scope.clone())
}
