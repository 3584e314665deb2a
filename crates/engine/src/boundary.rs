//! Boundaries (`design/protocol.md`, "Boundaries"): which chunks a caller
//! may read and write, judged on one substrate snapshot.
//!
//! A boundary is a stack of levels, each `"open"` or a list of roots; a
//! chunk is inside when every level admits it (a root admits itself and
//! every chunk with an instance chain up to it). A process's own scope tree
//! is always inside. A child inherits every level of its caller, each
//! widened by the caller's own tree (which the caller could reach), so
//! nested runs can only narrow.

use crate::error::{EngineError, Result};
use protocol::Boundary;
use serde_json::Value;
use std::collections::{HashMap, HashSet};
use substrate::spec::{ComposedSpec, Spec};
use substrate::{ChunkItem, Declaration, PlacementType, ScopeCount, Snapshot};

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
}

impl Reach {
    /// Full reach (a host).
    pub fn host() -> Reach {
        Reach::default()
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
enum Protected {
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

    fn protection(&mut self, id: &str) -> Result<Protected> {
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

fn describe(p: Protected) -> &'static str {
    match p {
        Protected::No => "chunk",
        Protected::Process => "process chunk",
        Protected::Boundary => "boundary chunk",
        Protected::Argument => "argument chunk (fixed for the life of its run)",
    }
}

/// Judges a declaration from a caller with `reach`, on the state before it:
/// boundaries and protection. `Ok` means the substrate may apply it (its
/// own spec rules still apply after). The placements *of* the chunks in
/// `engine_made` are the engine's own (a new process on its program) and
/// are not judged; placements onto them are.
pub fn judge_write(
    view: &mut View<'_, '_>,
    decl: &Declaration,
    reach: &Reach,
    engine_made: &[&str],
) -> Result<()> {
    if reach.is_host() {
        return Ok(());
    }
    let declared: HashSet<&str> = decl.chunks.iter().filter_map(|c| c.id.as_deref()).collect();
    let mut new_ids: HashSet<String> = HashSet::new();
    for chunk in &decl.chunks {
        let Some(id) = chunk.id.as_deref() else {
            continue;
        };
        if !view.snap.exists(id)? {
            new_ids.insert(id.to_owned());
            continue;
        }
        if !reach.write.admits(view, id)? {
            return Err(EngineError::boundary(format!(
                "cannot change `{id}`: it is outside this process's write boundary"
            )));
        }
        match view.protection(id)? {
            Protected::No => {}
            Protected::Process => {
                if chunk.spec.is_some() {
                    return Err(EngineError::boundary(format!(
                        "cannot change the spec of process `{id}`: it is fixed by the engine"
                    )));
                }
                if let Some(body) = &chunk.body {
                    let fields = body
                        .as_object()
                        .map(|m| m.keys().collect::<Vec<_>>())
                        .unwrap_or_default();
                    if !chunk.merge {
                        return Err(EngineError::boundary(format!(
                            "cannot replace the body of process `{id}`: merge-patch it (\"merge\": true) \
                             and leave the engine's fields alone"
                        )));
                    }
                    if let Some(f) = fields
                        .iter()
                        .find(|f| PROTECTED_FIELDS.contains(&f.as_str()))
                    {
                        return Err(EngineError::boundary(format!(
                            "cannot set `{f}` on process `{id}`: only the engine writes {}",
                            PROTECTED_FIELDS.join(", ")
                        )));
                    }
                }
            }
            other => {
                return Err(EngineError::boundary(format!(
                    "cannot change `{id}`: it is a {}",
                    describe(other)
                )));
            }
        }
    }
    // Every placement the declaration adds, with the chunks placed instance
    // per chunk (for the typing exemption).
    let mut adds: Vec<(String, String, PlacementType)> = Vec::new();
    for chunk in &decl.chunks {
        let chunk_id = chunk.id.clone().unwrap_or_default();
        for p in &chunk.placements {
            adds.push((chunk_id.clone(), p.scope.clone(), p.kind));
        }
    }
    for p in &decl.placements {
        adds.push((p.chunk.clone(), p.scope.clone(), p.kind));
    }
    for (i, (chunk, scope, kind)) in adds.iter().enumerate() {
        if engine_made.contains(&chunk.as_str()) {
            continue;
        }
        let chunk_is_new = chunk.is_empty() || new_ids.contains(chunk);
        if !chunk_is_new {
            if !reach.read.admits(view, chunk)? {
                return Err(EngineError::boundary(format!(
                    "cannot place `{chunk}`: it is outside this process's read boundary"
                )));
            }
            if *kind == PlacementType::Instance && !reach.write.admits(view, chunk)? {
                return Err(EngineError::boundary(format!(
                    "cannot place `{chunk}` instance on `{scope}`: an instance placement pulls the \
                     chunk into the scope's tree, and `{chunk}` is outside the write boundary"
                )));
            }
            let p = view.protection(chunk)?;
            if p != Protected::No {
                return Err(EngineError::boundary(format!(
                    "cannot add placements of `{chunk}`: it is a {}",
                    describe(p)
                )));
            }
        }
        if declared.contains(scope.as_str()) && new_ids.contains(scope) {
            continue; // a scope created in this declaration is judged by its own placements
        }
        if !view.snap.exists(scope)? {
            continue; // the substrate answers NOT_FOUND
        }
        let p = view.protection(scope)?;
        if matches!(p, Protected::Boundary | Protected::Argument) {
            return Err(EngineError::boundary(format!(
                "cannot place anything on `{scope}`: it is a {}",
                describe(p)
            )));
        }
        if reach.write.admits(view, scope)? {
            continue;
        }
        if *kind == PlacementType::Instance && is_typing(view, decl, &adds, i)? {
            continue;
        }
        return Err(EngineError::boundary(format!(
            "cannot place `{}` on `{scope}`: `{scope}` is outside this process's write boundary",
            if chunk.is_empty() {
                "a new chunk"
            } else {
                chunk
            }
        )));
    }
    for chunk in &decl.chunks {
        if chunk
            .id
            .as_deref()
            .is_some_and(|id| engine_made.contains(&id))
        {
            continue;
        }
        if chunk.placements.is_empty()
            && chunk.id.as_ref().is_none_or(|id| new_ids.contains(id))
            && !decl
                .placements
                .iter()
                .any(|p| Some(&p.chunk) == chunk.id.as_ref())
            && !reach.write.is_open()
        {
            return Err(EngineError::boundary(
                "cannot create a chunk placed nowhere: with a restricted write boundary every new \
                 chunk must be placed on a scope inside it",
            ));
        }
    }
    for key in &decl.remove.placements {
        for id in [&key.chunk, &key.scope] {
            if view.snap.exists(id)? && !reach.write.admits(view, id)? {
                return Err(EngineError::boundary(format!(
                    "cannot remove the placement of `{}` on `{}`: `{id}` is outside the write boundary",
                    key.chunk, key.scope
                )));
            }
        }
        let p = view.protection(&key.chunk)?;
        let q = view.protection(&key.scope)?;
        if p != Protected::No || matches!(q, Protected::Boundary | Protected::Argument) {
            return Err(EngineError::boundary(format!(
                "cannot remove the placement of `{}` on `{}`: it belongs to a {}",
                key.chunk,
                key.scope,
                describe(if p != Protected::No { p } else { q })
            )));
        }
    }
    for id in &decl.remove.chunks {
        if view.snap.exists(id)? {
            if !reach.write.admits(view, id)? {
                return Err(EngineError::boundary(format!(
                    "cannot remove `{id}`: it is outside this process's write boundary"
                )));
            }
            let p = view.protection(id)?;
            if p != Protected::No {
                return Err(EngineError::boundary(format!(
                    "cannot remove `{id}`: it is a {}",
                    describe(p)
                )));
            }
        }
    }
    Ok(())
}

/// The typing exemption: the chunk of `adds[i]` is also placed instance, in
/// this declaration, on a scope whose composed `accepts` names `adds[i]`'s
/// scope.
fn is_typing(
    view: &mut View<'_, '_>,
    decl: &Declaration,
    adds: &[(String, String, PlacementType)],
    i: usize,
) -> Result<bool> {
    let (chunk, ty, _) = &adds[i];
    for (j, (other_chunk, other_scope, kind)) in adds.iter().enumerate() {
        if j == i || other_chunk != chunk || *kind != PlacementType::Instance {
            continue;
        }
        let accepts = composed_accepts(view, decl, other_scope)?;
        if accepts.iter().any(|t| t == ty) {
            return Ok(true);
        }
    }
    Ok(false)
}

/// The composed `accepts` of `scope`: from the store when it exists, else
/// from its declaration and the templates above the scopes it is declared on.
fn composed_accepts(
    view: &mut View<'_, '_>,
    decl: &Declaration,
    scope: &str,
) -> Result<Vec<String>> {
    if view.snap.exists(scope)? {
        return Ok(view.snap.composed_spec(scope)?.accepts.unwrap_or_default());
    }
    let Some(declared) = decl.chunks.iter().find(|c| c.id.as_deref() == Some(scope)) else {
        return Ok(Vec::new());
    };
    let own = declared
        .spec
        .as_ref()
        .and_then(|s| Spec::parse(scope, s).ok())
        .unwrap_or_default();
    let mut specs = Vec::new();
    for p in declared
        .placements
        .iter()
        .filter(|p| p.kind == PlacementType::Instance)
    {
        for ancestor in view.snap.instance_ancestors(&p.scope)? {
            if let Some(item) = view.snap.chunk(&ancestor)? {
                specs.push(Spec::parse(&ancestor, &item.spec.to_value()).unwrap_or_default());
            }
        }
    }
    Ok(ComposedSpec::fold(&own, &specs).accepts.unwrap_or_default())
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
