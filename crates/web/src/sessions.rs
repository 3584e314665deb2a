//! `GET /api/sessions`: the sidebar's rows — each session with when it
//! was last active, how its last run stands (`running`, `waiting` on a
//! person, `done`, `failed`…) and what its runs spent, counted as `hc
//! sessions` and `hc trace` count them (a run's totals include its
//! sub-agents').

use super::App;
use agent::contract::{RunBody, SessionBody, SessionItem};
use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use substrate::{ChunkItem, PlacementType, ScopeOpts, Substrate, TypeFilter};

/// One session as the sidebar shows it.
#[derive(Serialize, Debug, PartialEq)]
pub struct SessionRow {
    /// The session's id.
    pub id: String,
    /// Its title (its first prompt, cut), or its name.
    pub title: String,
    /// When it was made (RFC 3339).
    pub created: String,
    /// When something last happened on it: its last run's end or start,
    /// else its making.
    pub active: String,
    /// `running`, `waiting` (a question no one answered yet), `done`,
    /// `interrupted`, `stopped`, `failed`, or `empty` (no run yet).
    pub status: String,
    /// Model calls, over its runs.
    pub turns: u64,
    /// Input tokens (cache reads and writes included), over its runs.
    pub input_tokens: u64,
    /// Output tokens, over its runs.
    pub output_tokens: u64,
    /// Dollars, over the runs whose model has a price (none: none had).
    pub cost_usd: Option<f64>,
}

/// `GET /api/sessions`: every session, newest first.
pub async fn list(State(app): State<App>) -> Response {
    let db = Arc::clone(app.engine.db());
    let rows = tokio::task::spawn_blocking(move || rows(&db)).await;
    match rows {
        Ok(Ok(rows)) => Json(rows).into_response(),
        Ok(Err(e)) => super::api::failed(StatusCode::INTERNAL_SERVER_ERROR, e),
        Err(e) => super::api::failed(StatusCode::INTERNAL_SERVER_ERROR, e),
    }
}

fn instances(db: &Substrate, scope: &str) -> anyhow::Result<Vec<Arc<ChunkItem>>> {
    let opts = ScopeOpts {
        kind: TypeFilter::Instance,
        ..ScopeOpts::default()
    };
    Ok(db.scope(&[scope], &opts)?.chunks)
}

/// The scope `chunk` is an instance on that starts with `prefix`.
fn placed_on<'a>(chunk: &'a ChunkItem, prefix: &str) -> Option<&'a str> {
    chunk
        .placements
        .iter()
        .find(|p| p.kind == PlacementType::Instance && p.scope.starts_with(prefix))
        .map(|p| p.scope.as_str())
}

/// The rows of every session of `db`, newest first.
pub fn rows(db: &Substrate) -> anyhow::Result<Vec<SessionRow>> {
    let sessions = instances(db, "session")?;
    let runs = instances(db, "program/agent")?;
    let known: HashSet<&str> = sessions.iter().map(|s| s.id.as_str()).collect();
    // each session's own runs (not its sub-agents': their totals are in
    // their parent's), in the order they were made
    let mut by_session: HashMap<&str, Vec<RunBody>> = HashMap::new();
    // every agent process, sub-agents too: where it runs, to find the
    // session a question asked from a sub-agent belongs to
    let mut agents = Agents::default();
    let mut gone = hc_host::sessions::Gone::new(db);
    for run in &runs {
        let mut body = RunBody::parse(&run.body_value());
        if gone.judge(&body.process) {
            // as `hc sessions` says it, and the next engine will record it
            body.process.status = protocol::process::ProcessStatus::Failed;
            body.process.error = Some("hc was killed".into());
        }
        let on = placed_on(run, "s_").or_else(|| placed_on(run, "p_"));
        if let Some(on) = on {
            agents.parent.insert(run.id.as_str(), on);
        }
        if !body.process.status.ended() {
            agents.running.insert(run.id.as_str());
        }
        if let Some(session) = placed_on(run, "s_").filter(|s| known.contains(s)) {
            by_session.entry(session).or_default().push(body);
        }
    }
    let waiting = waiting_sessions(db, &agents)?;
    Ok(sessions
        .iter()
        .rev()
        .map(|s| {
            let runs = by_session.get(s.id.as_str()).map_or(&[][..], Vec::as_slice);
            row(s, runs, waiting.contains(s.id.as_str()))
        })
        .collect())
}

/// One session's row, from its runs.
fn row(session: &ChunkItem, runs: &[RunBody], waiting: bool) -> SessionRow {
    let body = SessionBody::parse(&session.body_value());
    let title = match body.title.is_empty() {
        true => session.name.clone().unwrap_or_default(),
        false => body.title,
    };
    let mut out = SessionRow {
        id: session.id.clone(),
        title,
        active: body.created.clone(),
        created: body.created,
        status: "empty".into(),
        turns: 0,
        input_tokens: 0,
        output_tokens: 0,
        cost_usd: None,
    };
    for run in runs {
        let totals = &run.totals;
        out.turns += u64::from(totals.turns);
        out.input_tokens += totals.usage.input();
        out.output_tokens += totals.usage.output_tokens;
        if let Some(cost) = totals.cost_usd {
            out.cost_usd = Some(out.cost_usd.unwrap_or(0.0) + cost);
        }
    }
    if let Some(last) = runs.last() {
        let when = last.process.ended.clone().or(last.process.started.clone());
        out.active = when.unwrap_or(out.active);
        // `failed (why)` is `failed` here: the row has room for a word
        let status = last.status();
        out.status = status.split(' ').next().unwrap_or("failed").to_owned();
        if waiting && out.status == "running" {
            out.status = "waiting".into();
        }
    }
    out
}

/// Every agent process (sub-agents too): where each runs, and which
/// still run.
#[derive(Default)]
struct Agents<'a> {
    /// A process's session, or its parent's process for a sub-agent.
    parent: HashMap<&'a str, &'a str>,
    /// The processes not ended.
    running: HashSet<&'a str>,
}

/// The sessions with a question no host has answered yet (a permission,
/// the agent's question, a plan put to the person) from a run that is
/// still going.
fn waiting_sessions<'a>(db: &Substrate, agents: &Agents<'a>) -> anyhow::Result<HashSet<&'a str>> {
    let mut answered = HashSet::new();
    for scope in ["permission-decision", "user-answer"] {
        for chunk in instances(db, scope)? {
            match SessionItem::of(&chunk) {
                SessionItem::PermissionDecision(d) => answered.insert(d.request),
                SessionItem::UserAnswer(a) => answered.insert(a.request),
                _ => false,
            };
        }
    }
    let mut out = HashSet::new();
    for scope in ["permission-request", "user-question", "plan"] {
        for chunk in instances(db, scope)? {
            if answered.contains(&chunk.id) {
                continue;
            }
            let process = match SessionItem::of(&chunk) {
                SessionItem::PermissionRequest(r) => r.process,
                SessionItem::UserQuestion(q) => q.process,
                SessionItem::Plan(p) if p.ask => p.process,
                _ => continue,
            };
            if !agents.running.contains(process.as_str()) {
                continue;
            }
            if let Some(session) = session_of(&agents.parent, &process) {
                out.insert(session);
            }
        }
    }
    Ok(out)
}

/// The session an agent process works on: its own placement, or its
/// parent's for a sub-agent (a few levels at most).
fn session_of<'a>(parent: &HashMap<&'a str, &'a str>, process: &str) -> Option<&'a str> {
    let mut at = *parent.get(process)?;
    for _ in 0..16 {
        if at.starts_with("s_") {
            return Some(at);
        }
        at = parent.get(at)?;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sub_agents_question_belongs_to_its_parents_session() {
        let parent: HashMap<&str, &str> = [
            ("p_top", "s_one"),
            ("p_child", "p_top"),
            ("p_grandchild", "p_child"),
            ("p_loop_a", "p_loop_b"),
            ("p_loop_b", "p_loop_a"),
        ]
        .into_iter()
        .collect();
        assert_eq!(session_of(&parent, "p_top"), Some("s_one"));
        assert_eq!(session_of(&parent, "p_grandchild"), Some("s_one"));
        assert_eq!(session_of(&parent, "p_unknown"), None);
        assert_eq!(session_of(&parent, "p_loop_a"), None, "a circle ends");
    }
}
