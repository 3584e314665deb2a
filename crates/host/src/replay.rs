//! `hc replay` (`docs/guide/rewind.md`): a recorded session run again
//! through today's harness — its prompts, in order, on a new session,
//! the model's answers served from the record (`AgentConfig::replay`),
//! in a scratch copy of the project at the files the session started
//! from — and what differs from the record: each model request and each
//! tool result, the first shown as a diff.

use crate::follow::{Answerer, Sink};
use crate::rewind::{Record, kept};
use agent::contract::{Notice, SessionItem, ToolResult};
use anyhow::Result;
use engine::effects::restore::{self, Put};
use engine::{Context, Engine};
use protocol::ScopeOpts;
use std::path::Path;

/// A sink that shows nothing (what a replay does is read from the record).
pub struct Quiet;

impl Sink for Quiet {
    fn notice(&mut self, _notice: &Notice) {}
    fn wants_answers(&self) -> bool {
        false
    }
    fn wants_results(&self) -> bool {
        false
    }
    fn answer(&mut self, _answer: &agent::contract::Answer, _parent: Option<&str>) {}
    fn results(&mut self, _results: &[ToolResult], _parent: Option<&str>) {}
    fn ended(&mut self, _ended: &crate::follow::Ended<'_>) -> Result<()> {
        Ok(())
    }
}

/// What `session` holds, item by item, in order.
fn items(engine: &Engine, session: &str) -> Result<Vec<SessionItem>> {
    let read = engine.scope(
        &Context::host(),
        &[session.to_owned()],
        &ScopeOpts::default(),
    )?;
    Ok(read.chunks.iter().map(|c| SessionItem::of(c)).collect())
}

/// The person's prompts of `session`, in order.
pub fn prompts(engine: &Engine, session: &str) -> Result<Vec<String>> {
    Ok(items(engine, session)?
        .into_iter()
        .filter_map(|item| match item {
            SessionItem::Prompt(p) if p.from.is_none() => Some(p.text),
            _ => None,
        })
        .collect())
}

/// Fills `scratch` with the project's files at `root` (what `.gitignore`
/// leaves, but `.git` and `.hermitcrab`) as `session` found them: what its
/// runs changed put back. What cannot be put back is said.
pub fn scratch(engine: &Engine, root: &Path, session: &str, scratch: &Path) -> Result<Vec<String>> {
    files_at(engine, root, session, 1, scratch)
}

/// Fills `into` with the project's files as they were before `session`'s
/// call `first` (past its last: as they are): copied, then what the runs
/// of that call and later ones changed put back.
pub fn files_at(
    engine: &Engine,
    root: &Path,
    session: &str,
    first: usize,
    into: &Path,
) -> Result<Vec<String>> {
    let scratch = into;
    let mut said = copy_tree(root, scratch)?;
    let plan = Record::read(engine, session)?.plan(first);
    said.extend(
        plan.unrestorable.iter().map(|(path, why)| {
            format!("{path} is as it is now, not as the session found it: {why}")
        }),
    );
    for change in plan.changes.iter().rev().filter(|c| c.put.is_none()) {
        let _ = restore::put(scratch, &change.path, Put::Absent);
    }
    for change in &plan.changes {
        let Some(put) = &change.put else { continue };
        let content = match put.mode & 0o170_000 == engine::effects::DIR {
            true => Some(Vec::new()),
            false => kept(engine, &put.hash),
        };
        let Some(content) = content else {
            said.push(format!(
                "{}: its content is not in the substrate",
                change.path
            ));
            continue;
        };
        if let Err(e) = restore::put(scratch, &change.path, Put::of(put.mode, &content)) {
            said.push(e);
        }
    }
    Ok(said)
}

/// The project's files at `root` (what `.gitignore` leaves, but `.git` and
/// `.hermitcrab`) copied into `into` — each put there as a rewind puts a
/// file (never through a link `into` holds); what is neither a file, a
/// link nor a directory is left, and what could not be copied said.
fn copy_tree(root: &Path, into: &Path) -> Result<Vec<String>> {
    let mut said = Vec::new();
    let walk = ignore::WalkBuilder::new(root)
        .hidden(false)
        .ignore(false)
        .git_global(false)
        .require_git(false)
        .filter_entry(|e| e.file_name() != ".git" && e.file_name() != ".hermitcrab")
        .build();
    for entry in walk.flatten() {
        let Ok(rel) = entry.path().strip_prefix(root) else {
            continue;
        };
        let rel = rel.to_string_lossy();
        if rel.is_empty() {
            continue;
        }
        let Ok(meta) = std::fs::symlink_metadata(entry.path()) else {
            continue;
        };
        let mode = std::os::unix::fs::MetadataExt::mode(&meta);
        let put = if meta.is_dir() {
            restore::put(into, &rel, Put::Dir(mode))
        } else if meta.file_type().is_symlink() {
            let target = std::fs::read_link(entry.path()).unwrap_or_default();
            restore::put(into, &rel, Put::Link(target.as_os_str().as_encoded_bytes()))
        } else if meta.is_file() {
            match restore::read(root, &rel, u64::MAX) {
                Some(bytes) => restore::put(into, &rel, Put::File(&bytes, mode)),
                None => Err(format!("cannot read {rel}")),
            }
        } else {
            continue;
        };
        if let Err(e) = put {
            said.push(e);
        }
    }
    Ok(said)
}

/// One thing the replay did otherwise than the record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Difference {
    /// What differs (`request 3`, `the result of shell (tool call t1)`).
    pub what: String,
    /// The record's side and the replay's, as text.
    pub recorded: String,
    /// The replay's.
    pub replayed: String,
}

/// Refuses a turn `n` the session does not have (as `hc fork --at`
/// does): a replay through it would compare requests that were never
/// made, one by one.
pub fn check_turn(engine: &Engine, session: &str, n: usize) -> Result<()> {
    let calls = calls(engine, session)?;
    if n == 0 || n > calls {
        return Err(crate::exit::exit(
            2,
            format!(
                "the session {session} has {calls} model call{}: there is no turn {n} to replay \
                 through (`hc trace` numbers them `answer #N`; --at takes 1 to {calls})",
                if calls == 1 { "" } else { "s" }
            ),
        ));
    }
    Ok(())
}

/// How many model calls `session` holds.
fn calls(engine: &Engine, session: &str) -> Result<usize> {
    let read = engine.scope(
        &Context::host(),
        &[session.to_owned()],
        &ScopeOpts::default(),
    )?;
    Ok(read.chunks.iter().filter(|c| agent::is_call(c)).count())
}

/// What `replayed` did otherwise than `recorded` — each model request
/// (through call `through`, when given) and each tool result — with the
/// scratch directory read as the project's root.
pub async fn compare(
    engine: &Engine,
    recorded: &str,
    replayed: &str,
    roots: (&Path, &Path),
    through: Option<usize>,
) -> Result<(usize, Vec<Difference>)> {
    let (client, _events) = engine.host_client();
    let (had, made) = (calls(engine, recorded)?, calls(engine, replayed)?);
    let last = through.unwrap_or(usize::MAX).min(had.max(made));
    let (root, scratch) = (roots.0.to_string_lossy(), roots.1.to_string_lossy());
    let mut out = Vec::new();
    for n in 1..=last {
        let old = agent::request_body(&client, recorded, n).await;
        let new = agent::request_body(&client, replayed, n).await;
        let text = |body: std::result::Result<Vec<u8>, agent::RebuildError>| match body {
            Ok(bytes) => String::from_utf8_lossy(&bytes).replace(scratch.as_ref(), &root),
            Err(e) => format!("(no request {n}: {e})"),
        };
        let (old, new) = (text(old), text(new));
        if old != new {
            out.push(Difference {
                what: format!("request {n}"),
                recorded: pretty(&old),
                replayed: pretty(&new),
            });
        }
    }
    let (old, new) = (results(engine, recorded)?, results(engine, replayed)?);
    for i in 0..old.len().max(new.len()) {
        let shown = |r: Option<&ToolResult>| match r {
            Some(r) => r.text.replace(scratch.as_ref(), &root),
            None => "(no such tool result)".to_owned(),
        };
        let (a, b) = (shown(old.get(i)), shown(new.get(i)));
        if a != b {
            let call = old.get(i).or(new.get(i));
            out.push(Difference {
                what: format!(
                    "the result of {} (tool call {})",
                    call.map_or("", |c| c.program.as_str()),
                    call.map_or("", |c| c.tool_use_id.as_str())
                ),
                recorded: a,
                replayed: b,
            });
        }
    }
    Ok((made, out))
}

/// The tool results of a session, in order.
fn results(engine: &Engine, session: &str) -> Result<Vec<ToolResult>> {
    Ok(items(engine, session)?
        .into_iter()
        .filter_map(|item| match item {
            SessionItem::ToolResult(r) => Some(r),
            _ => None,
        })
        .collect())
}

fn pretty(text: &str) -> String {
    serde_json::from_str::<serde_json::Value>(text)
        .and_then(|v| serde_json::to_string_pretty(&v))
        .unwrap_or_else(|_| text.to_owned())
}

/// Whoever answers a replay's questions: no one (what was asked of a
/// person then is refused now, and shows as a difference).
pub fn answerer() -> impl Answerer {
    crate::follow::Nobody
}
