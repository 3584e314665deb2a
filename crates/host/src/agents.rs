//! The project's agents as every view lists them — `hc agents`, `hc
//! sessions`, the page's sidebar: each session with how its last run
//! stands (`queued`, `running`, `waiting` on a person, `done`, `stopped`,
//! `failed`…), where it runs (host, branch), what its runs spent (a run's
//! totals include its sub-agents') and the question it waits on.

use agent::contract::{RunBody, SessionBody, SessionItem};
use serde::Serialize;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use substrate::{ChunkItem, PlacementType, ScopeOpts, Substrate, TypeFilter};

/// One session as the views show it.
#[derive(Serialize, Debug, Clone, PartialEq)]
pub struct AgentRow {
    /// The session's id.
    pub id: String,
    /// Its title (its first prompt, cut), or its name.
    pub title: String,
    /// When it was made (RFC 3339).
    pub created: String,
    /// When something last happened on it: its last run's end or start,
    /// else its making.
    pub active: String,
    /// `queued` (waiting for a worker), `running`, `waiting` (a question
    /// no one answered yet), `done`, `interrupted`, `stopped`, `failed`,
    /// or `empty` (no run yet).
    pub status: String,
    /// Why it failed, when it did (`engine lost`, `exit code 1`, …).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Its last run's process.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub process: Option<String>,
    /// When its last run started.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub started: Option<String>,
    /// The host its last run runs (or ran) on, when a worker claimed it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    /// Its branch, when its run works in a worktree of its own.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub branch: Option<String>,
    /// That worktree, relative to the project's root.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub worktree: Option<String>,
    /// The question it waits on, in words.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub question: Option<String>,
    /// Who asked for its last run in the background, and on which host.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub asked_by: Option<String>,
    /// The person its last run runs (or ran) for, and the front end it
    /// came through (`terminal`, `page`, `worker`, …).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub person: Option<String>,
    /// See `person`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub via: Option<String>,
    /// The host it was queued on.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub asked_on: Option<String>,
    /// What a worker said of it: why it still waits, or that it was
    /// queued again after its host was lost.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// Model calls, over its runs.
    pub turns: u64,
    /// Input tokens (cache reads and writes included), over its runs.
    pub input_tokens: u64,
    /// Output tokens, over its runs.
    pub output_tokens: u64,
    /// Dollars, over the runs whose model has a price (none: none had).
    pub cost_usd: Option<f64>,
    /// Milliseconds its tools ran, over its runs.
    pub tool_ms: u64,
    /// Lines its tools added to the project's files, over its runs.
    pub lines_added: u64,
    /// Lines they removed.
    pub lines_removed: u64,
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
pub fn rows(db: &Substrate) -> anyhow::Result<Vec<AgentRow>> {
    let sessions = instances(db, "session")?;
    let runs = instances(db, "program/agent")?;
    let known: HashSet<&str> = sessions.iter().map(|s| s.id.as_str()).collect();
    // each session's own runs (not its sub-agents': their totals are in
    // their parent's), in the order they were made
    let mut by_session: HashMap<&str, Vec<(&str, RunBody)>> = HashMap::new();
    // every agent process, sub-agents too: where it runs, to find the
    // session a question asked from a sub-agent belongs to
    let mut agents = Agents::default();
    let mut gone = crate::sessions::Gone::new(db);
    for run in &runs {
        let mut body = RunBody::parse(&run.body_value());
        if gone.judge(&body.process) {
            // as the next engine will record it
            let lost = body.process.epoch.is_some();
            body.process.status = protocol::process::ProcessStatus::Failed;
            body.process.error = Some(if lost { "engine lost" } else { "hc was killed" }.into());
        }
        let on = placed_on(run, "s_").or_else(|| placed_on(run, "p_"));
        if let Some(on) = on {
            agents.parent.insert(run.id.as_str(), on);
        }
        if !body.process.status.ended() {
            agents.running.insert(run.id.as_str());
        }
        if let Some(session) = placed_on(run, "s_").filter(|s| known.contains(s)) {
            by_session
                .entry(session)
                .or_default()
                .push((run.id.as_str(), body));
        }
    }
    let waiting = waiting_sessions(db, &agents)?;
    Ok(sessions
        .iter()
        .rev()
        .map(|s| {
            let runs = by_session.get(s.id.as_str()).map_or(&[][..], Vec::as_slice);
            row(s, runs, waiting.get(s.id.as_str()))
        })
        .collect())
}

/// One session's row, from its runs.
fn row(session: &ChunkItem, runs: &[(&str, RunBody)], question: Option<&String>) -> AgentRow {
    let body = SessionBody::parse(&session.body_value());
    let title = match body.title.is_empty() {
        true => session.name.clone().unwrap_or_default(),
        false => body.title,
    };
    let mut out = AgentRow {
        id: session.id.clone(),
        title,
        active: body.created.clone(),
        created: body.created,
        status: "empty".into(),
        error: None,
        process: None,
        started: None,
        host: None,
        branch: None,
        worktree: None,
        question: None,
        asked_by: None,
        person: None,
        via: None,
        asked_on: None,
        note: None,
        turns: 0,
        input_tokens: 0,
        output_tokens: 0,
        cost_usd: None,
        tool_ms: 0,
        lines_added: 0,
        lines_removed: 0,
    };
    for (_, run) in runs {
        let totals = &run.totals;
        out.turns += u64::from(totals.turns);
        out.input_tokens += totals.usage.input();
        out.output_tokens += totals.usage.output_tokens;
        out.tool_ms += totals.work.tool_ms;
        out.lines_added += totals.work.lines_added;
        out.lines_removed += totals.work.lines_removed;
        if let Some(cost) = totals.cost_usd {
            out.cost_usd = Some(out.cost_usd.unwrap_or(0.0) + cost);
        }
    }
    if let Some((id, last)) = runs.last() {
        let process = &last.process;
        let when = process.ended.clone().or(process.started.clone());
        out.active = when.unwrap_or(out.active);
        out.process = Some((*id).to_owned());
        out.started = process.started.clone();
        out.host = process.host.clone();
        let worktree = process.placement.as_ref().and_then(|p| p.worktree.as_ref());
        out.branch = worktree.map(|w| w.branch.clone());
        out.worktree = worktree.map(|w| w.path.clone());
        out.asked_by = process.placement.as_ref().and_then(|p| p.asked_by.clone());
        out.person = process.person.clone();
        out.via = process.via.clone();
        out.asked_on = process.placement.as_ref().and_then(|p| p.asked_on.clone());
        out.note = process.note.clone();
        out.error = process.error.clone().filter(|_| process.status.ended());
        out.status = status_of(last, question.is_some());
        if out.status == "waiting" {
            out.question = question.cloned();
        }
    }
    out
}

/// How a run stands, in a word.
fn status_of(run: &RunBody, asks: bool) -> String {
    if run.process.queued() {
        return "queued".into();
    }
    // `failed (why)` is `failed` here: `error` says why
    let status = run.status();
    let word = status.split(' ').next().unwrap_or("failed").to_owned();
    match (word.as_str(), asks) {
        ("running", true) => "waiting".into(),
        _ => word,
    }
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
/// still going, with that question in words.
fn waiting_sessions<'a>(
    db: &Substrate,
    agents: &Agents<'a>,
) -> anyhow::Result<HashMap<&'a str, String>> {
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
    let mut out = HashMap::new();
    for scope in ["permission-request", "user-question", "plan"] {
        for chunk in instances(db, scope)? {
            if answered.contains(&chunk.id) {
                continue;
            }
            let (process, words) = match SessionItem::of(&chunk) {
                SessionItem::PermissionRequest(r) => {
                    let call = crate::describe::summary(&r.program, &r.input);
                    (r.process, format!("allow {call}?"))
                }
                SessionItem::UserQuestion(q) => (q.process, q.text),
                SessionItem::Plan(p) if p.ask => (p.process, "approve the plan?".to_owned()),
                _ => continue,
            };
            if !agents.running.contains(process.as_str()) {
                continue;
            }
            if let Some(session) = session_of(&agents.parent, &process) {
                out.insert(session, crate::text::shown(&words).into_owned());
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
