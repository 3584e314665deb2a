//! Forking a session (`hc fork`, `hc rewind --conversation`, `/rewind`,
//! `--fork-session`): a new session whose history is the old one's up to
//! a cut — the same chunks, placed on the new session in the same order
//! (referenced, not copied: nothing of the history is written again but
//! its placements). The runs of the old session stay its own; the new
//! one's first run reads the history as its own and goes on from it.

use agent::contract::{Body as _, Forked, SessionBody, SessionItem};
use anyhow::{Result, bail};
use engine::{Context, Engine};
use protocol::ScopeOpts;
use serde_json::json;
use substrate::{ChunkDecl, ChunkItem, Declaration, NewPlacement, PlacementDecl, PlacementType};

/// Where a fork cuts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cut {
    /// After model call N and the results of the runs it made.
    After(usize),
    /// Before model call N (the prompt that led to it left out when it
    /// came right before).
    Before(usize),
    /// Before the person's K-th prompt.
    BeforePrompt(usize),
    /// The whole history.
    Whole,
}

/// Forks `session` at `cut`: the new session's id.
pub fn fork(engine: &Engine, session: &str, cut: Cut) -> Result<String> {
    let read = engine.scope(
        &Context::host(),
        &[session.to_owned()],
        &ScopeOpts::default(),
    )?;
    let Some(old) = read.scopes.first() else {
        bail!("no session `{session}`");
    };
    let items: Vec<&ChunkItem> = read
        .chunks
        .iter()
        .map(|c| c.as_ref())
        .filter(|c| !c.is_on("engine/process", PlacementType::Instance))
        .collect();
    let (end, calls) = cut_at(&items, cut)?;
    let old_body = SessionBody::parse(&old.body_value());
    let id = substrate::ids::new_id("s");
    let body = SessionBody {
        title: old_body.title.clone(),
        created: humantime::format_rfc3339_millis(std::time::SystemTime::now()).to_string(),
        session_id: None,
        forked_from: Some(Forked {
            session: session.to_owned(),
            calls,
        }),
        replay_of: None,
    };
    let mut decl = Declaration::of(vec![
        ChunkDecl::with_id(&id)
            .name(old.name.clone().unwrap_or(old_body.title))
            .body(serde_json::to_value(&body).unwrap_or(json!({})))
            .on(NewPlacement::instance(SessionBody::TYPE)),
    ]);
    for item in &items[..end] {
        let seq = item
            .placements
            .iter()
            .find(|p| p.scope == session && p.kind == PlacementType::Instance)
            .and_then(|p| p.seq);
        decl.placements.push(PlacementDecl {
            chunk: item.id.clone(),
            scope: id.clone(),
            kind: PlacementType::Instance,
            seq,
        });
    }
    engine.commit(&Context::host(), decl)?;
    Ok(id)
}

/// How many of `items` a fork at `cut` keeps, and how many model calls
/// those hold.
fn cut_at(items: &[&ChunkItem], cut: Cut) -> Result<(usize, usize)> {
    let calls: Vec<usize> = (0..items.len())
        .filter(|&i| agent::is_call(items[i]))
        .collect();
    let prompts: Vec<usize> = (0..items.len())
        .filter(|&i| matches!(SessionItem::of(items[i]), SessionItem::Prompt(ref p) if p.from.is_none()))
        .collect();
    let count = |end: usize| calls.iter().filter(|&&i| i < end).count();
    let end = match cut {
        Cut::Whole => items.len(),
        Cut::After(n) if n >= 1 && n <= calls.len() => {
            let next = calls.get(n).copied().unwrap_or(items.len());
            back_to_run_start(items, next)
        }
        Cut::Before(n) if n >= 1 && n <= calls.len() => back_to_run_start(items, calls[n - 1]),
        Cut::BeforePrompt(k) if k >= 1 && k <= prompts.len() => prompts[k - 1],
        Cut::After(n) | Cut::Before(n) => bail!(
            "the session has {} model call{}: there is no turn {n} (`hc trace` numbers them \
             `answer #N`)",
            calls.len(),
            if calls.len() == 1 { "" } else { "s" }
        ),
        Cut::BeforePrompt(k) => bail!(
            "the session has {} prompt{}: there is no prompt {k}",
            prompts.len(),
            if prompts.len() == 1 { "" } else { "s" }
        ),
    };
    Ok((end, count(end)))
}

/// `end` moved back over what starts a run (its context, the person's
/// prompt) when they come right before it.
fn back_to_run_start(items: &[&ChunkItem], mut end: usize) -> usize {
    while end > 0 {
        match SessionItem::of(items[end - 1]) {
            SessionItem::Context(_) => end -= 1,
            SessionItem::Prompt(p) if p.from.is_none() => {
                end -= 1;
                break;
            }
            _ => break,
        }
    }
    end
}

/// The fork `forked` (of `session` at `cut`) in a git worktree of its own
/// (`.hermitcrab/worktrees/SESSION`, branch `hc/SESSION`, from `HEAD`), its
/// files as they were at the cut: the project's, with what the session's
/// later runs changed put back. Its path, and what could not be put back.
pub fn worktree(
    engine: &Engine,
    root: &std::path::Path,
    session: &str,
    at: Option<usize>,
    forked: &str,
) -> Result<(std::path::PathBuf, Vec<String>)> {
    let asked = crate::worktree::ask(root, forked, None)?;
    let path = crate::worktree::make(root, &asked)?;
    let first = at.map_or(usize::MAX, |n| n + 1);
    let said = crate::replay::files_at(engine, root, session, first, &path)?;
    Ok((path, said))
}
