//! Boundaries (`docs/protocol.md`, "Boundaries"): which chunks a caller
//! may read and write, judged on one substrate snapshot.
//!
//! A boundary is a stack of levels, each `"open"` or a list of roots; a
//! chunk is inside when every level admits it (a root admits itself and
//! every chunk with an instance chain up to it). A process's own scope tree
//! is always inside. A child inherits every level of its caller, each
//! widened by the caller's own tree (which the caller could reach), so
//! nested runs can only narrow.

use crate::error::Result;
use protocol::Boundary;
use serde_json::Value;
use std::collections::{HashMap, HashSet};
use substrate::{ChunkItem, PlacementType, ScopeCount, Snapshot};

/// Body fields of a process chunk only the engine writes.
pub const PROTECTED_FIELDS: &[&str] = &[
    "status",
    "started",
    "ended",
    "pid",
    "exit_code",
    "error",
    "timeout_ms",
    "stderr_tail",
    "arguments",
    "program",
    "engine",
    "containment",
    "served_by",
    "webview",
    "placement",
    "epoch",
    "host",
    "root",
    "stop",
];

/// One side (read or write) of a caller's effective boundary.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EffectiveBoundary {
    /// The caller's process: its tree is always inside. `None` for a host.
    pub own: Option<String>,
    /// The levels; an empty stack (a host) admits everything.
    pub levels: Vec<Boundary>,
}

impl EffectiveBoundary {
    /// Full reach.
    pub fn host() -> EffectiveBoundary {
        EffectiveBoundary::default()
    }

    /// Whether every level is open (nothing is outside).
    pub fn is_open(&self) -> bool {
        self.levels.iter().all(|l| *l == Boundary::Open)
    }

    /// The levels a run from this caller hands down: each restricted level
    /// also admits the caller's own tree.
    pub fn inherited(&self) -> Vec<Boundary> {
        self.levels
            .iter()
            .map(|level| match (level, &self.own) {
                (Boundary::Roots(roots), Some(own)) => {
                    let mut roots = roots.clone();
                    if !roots.contains(own) {
                        roots.push(own.clone());
                    }
                    Boundary::Roots(roots)
                }
                (level, _) => level.clone(),
            })
            .collect()
    }

    /// Whether `id` is inside, in `view`'s state.
    pub fn admits(&self, view: &mut View<'_, '_>, id: &str) -> Result<bool> {
        if self.is_open() {
            return Ok(true);
        }
        let ancestors = view.ancestors(id)?;
        if let Some(own) = &self.own
            && ancestors.contains(own)
        {
            return Ok(true);
        }
        Ok(self.levels.iter().all(|level| match level {
            Boundary::Open => true,
            Boundary::Roots(roots) => roots.iter().any(|r| ancestors.contains(r)),
        }))
    }
}

/// A caller's read and write boundaries.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Reach {
    /// What it may read.
    pub read: EffectiveBoundary,
    /// What it may write.
    pub write: EffectiveBoundary,
    /// Program names (globs) whose program chunks and input types it may
    /// manage outside its tree (a service's `capabilities.programs`).
    pub programs: Vec<String>,
    /// The service program it is (the only `served_by` the program chunks
    /// it manages may name).
    pub service: Option<String>,
}

impl Reach {
    /// Full reach (a host).
    pub fn host() -> Reach {
        Reach::default()
    }

    /// Whether it may manage chunk `id`: `program/NAME` or `input/NAME`
    /// with NAME matching one of its `programs` globs.
    pub fn manages(&self, id: &str) -> bool {
        let Some(name) = id
            .strip_prefix("program/")
            .or_else(|| id.strip_prefix("input/"))
        else {
            return false;
        };
        self.programs.iter().any(|pattern| {
            globset::Glob::new(pattern).is_ok_and(|g| g.compile_matcher().is_match(name))
        })
    }

    /// Whether this is a host's unrestricted reach.
    pub fn is_host(&self) -> bool {
        self.read.own.is_none() && self.read.is_open() && self.write.is_open()
    }
}

/// A snapshot with memos of what judgements ask repeatedly.
pub struct View<'a, 's> {
    /// The state judged.
    pub snap: &'a Snapshot<'s>,
    ancestors: HashMap<String, HashSet<String>>,
    kinds: HashMap<String, Protected>,
}

/// What kind of protected chunk something is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Protected {
    No,
    Process,
    Boundary,
    Argument,
}

impl<'a, 's> View<'a, 's> {
    /// A view of `snap`.
    pub fn new(snap: &'a Snapshot<'s>) -> View<'a, 's> {
        View {
            snap,
            ancestors: HashMap::new(),
            kinds: HashMap::new(),
        }
    }

    /// `id` and every chunk it reaches up instance chains.
    pub fn ancestors(&mut self, id: &str) -> Result<&HashSet<String>> {
        if !self.ancestors.contains_key(id) {
            let set = self.snap.instance_ancestors(id)?.into_iter().collect();
            self.ancestors.insert(id.to_owned(), set);
        }
        Ok(&self.ancestors[id])
    }

    pub(crate) fn protection(&mut self, id: &str) -> Result<Protected> {
        if let Some(p) = self.kinds.get(id) {
            return Ok(*p);
        }
        let snap = self.snap;
        let kind = if snap.is_instance_of(id, "engine/process")? {
            Protected::Process
        } else if snap.is_instance_of(id, "read-boundary")?
            || snap.is_instance_of(id, "write-boundary")?
        {
            Protected::Boundary
        } else {
            let mut kind = Protected::No;
            for p in snap.placements_of(id)? {
                if p.kind == PlacementType::Instance
                    && snap.is_instance_of(&p.scope, "engine/process")?
                    && snap
                        .body(&p.scope)?
                        .is_some_and(|b| lists(&b["arguments"], id))
                {
                    kind = Protected::Argument;
                    break;
                }
            }
            kind
        };
        self.kinds.insert(id.to_owned(), kind);
        Ok(kind)
    }
}

fn lists(list: &Value, id: &str) -> bool {
    list.as_array()
        .is_some_and(|a| a.iter().any(|v| v.as_str() == Some(id)))
}

pub(crate) fn describe(p: Protected) -> &'static str {
    match p {
        Protected::No => "chunk",
        Protected::Process => "process chunk",
        Protected::Boundary => "boundary chunk",
        Protected::Argument => "argument chunk (fixed for the life of its run)",
    }
}

/// Scopes the items sit on that lie outside `read`: each with its name and
/// member count, for the `topology` of a read.
pub fn topology(
    view: &mut View<'_, '_>,
    items: &[&ChunkItem],
    read: &EffectiveBoundary,
) -> Result<Vec<ScopeCount>> {
    if read.is_open() {
        return Ok(Vec::new());
    }
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    for item in items {
        for p in &item.placements {
            if !seen.insert(p.scope.clone()) || read.admits(view, &p.scope)? {
                continue;
            }
            let name = view.snap.chunk(&p.scope)?.and_then(|c| c.name.clone());
            out.push(ScopeCount {
                id: p.scope.clone(),
                name,
                count: view.snap.member_count(&p.scope)?,
            });
        }
    }
    Ok(out)
}
