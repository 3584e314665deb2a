//! Rewind (`docs/guide/rewind.md`): a session's turns and the files each
//! changed — every run its model calls made (tools, a sub-agent's tools,
//! their children), from the `engine/file-effects` the engine recorded on
//! each — and the files put back as they were before a turn, by a run of
//! the `rewind` program (so that a rewind is recorded, and undone the same
//! way). The conversation's side is `fork.rs`.

use anyhow::{Result, bail};
use engine::effects::record::{Blob, FileEffects};
use engine::effects::{self, Effect};
use engine::file_effects::EFFECTS_TYPE;
use engine::{Context, Engine};
use protocol::{RunArgs, ScopeOpts};
use serde_json::json;
use std::path::Path;
use substrate::{ChunkDecl, ChunkItem, NewPlacement, PlacementType};

/// The program a rewind runs.
pub const REWIND_PROGRAM: &str = "program/rewind";

/// One model call of a session (`answer #N` in `hc trace`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Turn {
    /// Its number among the session's model calls, from 1.
    pub n: usize,
    /// How many of the person's prompts came before it.
    pub prompt: usize,
    /// The first line of its answer.
    pub text: String,
    /// The paths the runs it made changed.
    pub files: Vec<String>,
}

/// A session as a rewind reads it.
pub struct Record {
    /// Its model calls, in order.
    pub turns: Vec<Turn>,
    /// The person's prompts: for each, the number of the call that
    /// answered it first (one past the last when none did).
    pub prompts: Vec<usize>,
    /// Each run's effects, in order, with the call that made the run (a
    /// rewind's: the last call before it) — a rewind's among them, so
    /// that what a later rewind expects to find is what the last one
    /// left.
    ran: Vec<(usize, Vec<Effect>)>,
}

/// Where a rewind goes back to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum To {
    /// Before model call N.
    Turn(usize),
    /// Before the person's K-th prompt.
    Prompt(usize),
}

impl Record {
    /// `session`'s record, read through `engine`.
    pub fn read(engine: &Engine, session: &str) -> Result<Record> {
        let items = read_scope(engine, session)?;
        let (mut turns, mut prompts, mut runs) = (Vec::new(), Vec::new(), Vec::new());
        let (mut rewinds, mut agents) = (Vec::new(), Vec::new());
        let mut calls = std::collections::HashMap::new();
        for item in items.iter() {
            match agent::contract::SessionItem::of(item) {
                agent::contract::SessionItem::Prompt(p) if p.from.is_none() => {
                    prompts.push(turns.len() + 1);
                }
                agent::contract::SessionItem::ToolCall(c) => {
                    calls.insert(c.tool_use_id.clone(), turns.len());
                    if let Some(process) = c.process {
                        runs.push((turns.len(), process));
                    }
                }
                // a rewind's run: what it put back counts where it came
                _ if item.is_on(REWIND_PROGRAM, PlacementType::Instance) => {
                    runs.push((turns.len(), item.id.clone()));
                    rewinds.push(item.id.clone());
                }
                _ if item.is_on("engine/process", PlacementType::Instance) => {
                    agents.push(item.id.clone());
                }
                _ if agent::is_call(item) => turns.push(Turn {
                    n: turns.len() + 1,
                    prompt: prompts.len(),
                    text: first_line(item),
                    files: Vec::new(),
                }),
                _ => {}
            }
        }
        runs.extend(tool_hooks(engine, &agents, &calls)?);
        // in the order they were made (a process id sorts by its making)
        runs.sort_by(|a, b| a.1.cmp(&b.1));
        let mut ran = Vec::new();
        for (turn, process) in runs {
            let mut effects = Vec::new();
            effects_under(engine, &process, &mut effects, 0)?;
            let shown = turn.checked_sub(1).filter(|_| !rewinds.contains(&process));
            if let Some(t) = shown.and_then(|i| turns.get_mut(i)) {
                for e in &effects {
                    if !e.is_dir() && !t.files.contains(&e.path) {
                        t.files.push(e.path.clone());
                    }
                }
            }
            ran.push((turn, effects));
        }
        Ok(Record {
            turns,
            prompts,
            ran,
        })
    }

    /// The first model call `to` undoes, checked against the record.
    pub fn first_call(&self, to: To) -> Result<usize> {
        match to {
            To::Turn(n) if n >= 1 && n <= self.turns.len() => Ok(n),
            To::Turn(n) => bail!(
                "this session has {} model call{} (answer #1 to #{}); there is no turn {n}: \
                 `hc rewind --list` shows them",
                self.turns.len(),
                if self.turns.len() == 1 { "" } else { "s" },
                self.turns.len()
            ),
            To::Prompt(k) if k >= 1 && k <= self.prompts.len() => Ok(self.prompts[k - 1]),
            To::Prompt(k) => bail!(
                "this session has {} prompt{}; there is no prompt {k}: `hc rewind --list` \
                 shows them",
                self.prompts.len(),
                if self.prompts.len() == 1 { "" } else { "s" }
            ),
        }
    }

    /// What putting the files back before call `first` takes.
    pub fn plan(&self, first: usize) -> Plan {
        let effects = self
            .ran
            .iter()
            .filter(|(turn, _)| *turn >= first)
            .flat_map(|(_, effects)| effects.iter());
        Plan::undoing(effects)
    }
}

/// The runs of the hooks the agent runs `agents` ran for a tool call (a
/// `pre-tool` or `post-tool` hook's event names it), each with the call's
/// turn.
fn tool_hooks(
    engine: &Engine,
    agents: &[String],
    calls: &std::collections::HashMap<String, usize>,
) -> Result<Vec<(usize, String)>> {
    let mut out = Vec::new();
    for agent in agents {
        for child in read_scope(engine, agent)? {
            if !child.is_on("program/hook", PlacementType::Instance) {
                continue;
            }
            let input = read_scope(engine, &child.id)?
                .into_iter()
                .find(|c| c.is_on("input/hook", PlacementType::Instance))
                .and_then(|c| serde_json::from_value::<HookInput>(c.body_value()).ok());
            let call = input.and_then(|i| i.event.tool).and_then(|t| t.tool_use_id);
            if let Some(turn) = call.and_then(|id| calls.get(&id)) {
                out.push((*turn, child.id.clone()));
            }
        }
    }
    Ok(out)
}

/// What a `hook` run was given, as far as a rewind reads it: the call a
/// tool's hook ran for.
#[derive(serde::Deserialize)]
struct HookInput {
    event: HookEvent,
}

#[derive(serde::Deserialize)]
struct HookEvent {
    #[serde(default)]
    tool: Option<HookTool>,
}

#[derive(serde::Deserialize)]
struct HookTool {
    #[serde(default)]
    tool_use_id: Option<String>,
}

/// A session's members, in order, at head.
fn read_scope(engine: &Engine, scope: &str) -> Result<Vec<std::sync::Arc<ChunkItem>>> {
    let read = engine.scope(&Context::host(), &[scope.to_owned()], &ScopeOpts::default())?;
    Ok(read.chunks)
}

/// The effects recorded on `process` and on its runs, in order.
fn effects_under(
    engine: &Engine,
    process: &str,
    out: &mut Vec<Effect>,
    depth: usize,
) -> Result<()> {
    if depth > 16 {
        return Ok(());
    }
    for item in read_scope(engine, process)? {
        if item.is_on(EFFECTS_TYPE, PlacementType::Instance) {
            if let Ok(record) = serde_json::from_value::<FileEffects>(item.body_value()) {
                out.extend(record.effects);
            }
        } else if item.is_on("engine/process", PlacementType::Instance)
            && item.is_on(process, PlacementType::Instance)
        {
            effects_under(engine, &item.id, out, depth + 1)?;
        }
    }
    Ok(())
}

/// A call's first line: its answer's text, a compaction's summary, a
/// side call's reply.
fn first_line(item: &ChunkItem) -> String {
    let text = match agent::contract::SessionItem::of(item) {
        agent::contract::SessionItem::Answer(a) => a.text,
        agent::contract::SessionItem::Compaction(c) => c.summary().to_owned(),
        agent::contract::SessionItem::LlmCall(c) => c.text,
        _ => String::new(),
    };
    crate::text::shown(text.lines().find(|l| !l.trim().is_empty()).unwrap_or("")).into_owned()
}

pub use engine::effects::record::{Change, Held};

/// A rewind's plan: each path's change, and what cannot be put back.
#[derive(Clone, Debug, Default)]
pub struct Plan {
    /// Each path, as it goes back.
    pub changes: Vec<Change>,
    /// Paths that cannot be put back, and why.
    pub unrestorable: Vec<(String, String)>,
}

impl Plan {
    /// The plan that undoes `effects` (in the order they happened): each
    /// path back to what the first one found, expected to hold what the
    /// last one left.
    pub fn undoing<'a>(effects: impl Iterator<Item = &'a Effect>) -> Plan {
        let mut by_path: Vec<(String, &Effect, &Effect)> = Vec::new();
        let mut at: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
        for e in effects {
            match at.get(e.path.as_str()) {
                Some(&i) => by_path[i].2 = e,
                None => {
                    at.insert(&e.path, by_path.len());
                    by_path.push((e.path.clone(), e, e));
                }
            }
        }
        let mut plan = Plan::default();
        for (path, first, last) in by_path {
            if let Some(why) = &first.unrestorable {
                plan.unrestorable.push((path, why.clone()));
                continue;
            }
            let held = |hash: &Option<String>, mode: Option<u32>| {
                hash.clone()
                    .zip(mode)
                    .map(|(hash, mode)| Held { hash, mode })
            };
            let put = held(&first.before, first.mode);
            let expect = held(&last.after, last.after_mode);
            if put != expect {
                plan.changes.push(Change { path, expect, put });
            }
        }
        plan.changes.sort_by(|a, b| a.path.cmp(&b.path));
        plan
    }

    /// The paths whose files changed since the record (they hold what the
    /// record does not say they were left with).
    pub fn changed_since(&self, root: &Path) -> Vec<String> {
        self.changes
            .iter()
            .filter(|c| {
                let now = effects::restore::current(root, &c.path).ok().flatten();
                now.map(|s| Held {
                    hash: s.hash,
                    mode: s.mode,
                }) != c.expect
            })
            .map(|c| c.path.clone())
            .collect()
    }
}

/// How a rewind's run ended.
#[derive(Clone, Debug)]
pub struct Applied {
    /// Its process.
    pub process: String,
    /// What it said.
    pub text: String,
    /// Whether it put everything back.
    pub ok: bool,
}

/// Runs `rewind` on `session` for `plan` (`force`: over what changed since)
/// and waits for it.
pub async fn apply(engine: &Engine, session: &str, plan: &Plan, force: bool) -> Result<Applied> {
    let paths: Vec<&str> = plan.changes.iter().map(|c| c.path.as_str()).collect();
    let input = json!({"paths": paths, "changes": plan.changes, "force": force});
    let args = RunArgs {
        chunks: vec![
            ChunkDecl::generated()
                .body(input)
                .on(NewPlacement::instance("input/rewind")),
        ],
        session: Some(session.to_owned()),
        ..RunArgs::default()
    };
    let ctx = Context::host();
    let process = engine.run(&ctx, REWIND_PROGRAM, args)?;
    let ended = engine
        .await_processes(&ctx, std::slice::from_ref(&process))
        .await?;
    let output = ended.get(&process).and_then(|read| {
        read.chunks
            .iter()
            .find(|c| c.is_on("engine/output", PlacementType::Instance))
            .map(|c| protocol::program::Output::parse(&c.body_value()))
    });
    Ok(match output {
        Some(output) => Applied {
            process,
            ok: !output.is_error,
            text: output.text,
        },
        None => Applied {
            process,
            ok: false,
            text: "the rewind ended without saying what it did".to_owned(),
        },
    })
}

/// What putting a plan's files back came to.
pub enum PutBack {
    /// There was nothing to put back.
    Nothing,
    /// Nothing was done: these files changed since the record (and the
    /// rewind was not forced).
    ChangedSince(Vec<String>),
    /// The rewind's run put everything back.
    Done(Applied),
}

/// The files of `plan` put back on `session` (`force`: over what changed
/// since the record), as every front end rewinds.
pub async fn put_back(engine: &Engine, session: &str, plan: &Plan, force: bool) -> Result<PutBack> {
    if plan.changes.is_empty() {
        return Ok(PutBack::Nothing);
    }
    let changed = plan.changed_since(&engine.config().project_root);
    if !changed.is_empty() && !force {
        return Ok(PutBack::ChangedSince(changed));
    }
    let applied = apply(engine, session, plan, force).await?;
    if !applied.ok {
        bail!("rewind {}: {}", applied.process, applied.text);
    }
    Ok(PutBack::Done(applied))
}

/// Which of the person's prompts of `session` (from 1) is the one `is`
/// picks (its chunk, its body), if any is.
pub fn prompt_number(
    engine: &Engine,
    session: &str,
    is: impl Fn(&ChunkItem, &agent::contract::Prompt) -> bool,
) -> Result<Option<usize>> {
    let mut k = 0;
    for item in read_scope(engine, session)? {
        if let agent::contract::SessionItem::Prompt(p) = agent::contract::SessionItem::of(&item)
            && p.from.is_none()
        {
            k += 1;
            if is(&item, &p) {
                return Ok(Some(k));
            }
        }
    }
    Ok(None)
}

/// The content whose hash is `hash`, as the substrate keeps it.
pub fn kept(engine: &Engine, hash: &str) -> Option<Vec<u8>> {
    let id = engine::file_effects::blob_id(hash);
    let read = engine
        .scope(&Context::host(), &[id], &ScopeOpts::default())
        .ok()?;
    let blob: Blob = serde_json::from_value(read.scopes.first()?.body_value()).ok()?;
    blob.bytes(hash)
}

/// The plan that undoes the last rewind of `session` (what its run
/// recorded doing, reversed).
pub fn undo_plan(engine: &Engine, session: &str) -> Result<Plan> {
    let items = read_scope(engine, session)?;
    // the last rewind that changed something (one that was refused, or
    // found nothing to do, left nothing to undo)
    for item in items.iter().rev() {
        if !item.is_on(REWIND_PROGRAM, PlacementType::Instance) {
            continue;
        }
        let mut effects = Vec::new();
        effects_under(engine, &item.id, &mut effects, 0)?;
        if !effects.is_empty() {
            return Ok(Plan::undoing(effects.iter()));
        }
    }
    bail!("this session has no rewind that changed a file: nothing to undo")
}
