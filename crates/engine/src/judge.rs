//! Judging a write: a declaration from a caller, on the state before it,
//! against the caller's boundaries and the engine's protections. `Ok`
//! means the substrate may apply it (its own spec rules still apply
//! after). One phase a method: the chunks it changes, the placements it
//! adds, the chunks it would leave placed nowhere, the placements and the
//! chunks it removes.

use crate::boundary::{PROTECTED_FIELDS, Protected, Reach, View, describe};
use crate::error::{EngineError, Result};
use std::collections::HashSet;
use substrate::spec::{ComposedSpec, Spec};
use substrate::{ChunkDecl, Declaration, PlacementType};

/// A placement a declaration adds: chunk, scope, type.
type Add = (String, String, PlacementType);

/// The judge of one caller's writes on one snapshot.
pub struct Judge<'j, 'a, 's> {
    view: &'j mut View<'a, 's>,
    reach: &'j Reach,
    /// Chunks whose own placements are the engine's (a new process on its
    /// program): not judged; placements onto them are.
    engine_made: &'j [&'j str],
}

impl<'j, 'a, 's> Judge<'j, 'a, 's> {
    /// A judge of writes by a caller with `reach`, on `view`.
    pub fn new(view: &'j mut View<'a, 's>, reach: &'j Reach, engine_made: &'j [&'j str]) -> Self {
        Judge {
            view,
            reach,
            engine_made,
        }
    }

    /// Judges `decl`: boundaries and protection.
    pub fn judge(mut self, decl: &Declaration) -> Result<()> {
        if self.reach.is_host() {
            return Ok(());
        }
        self.no_forged_processes(decl)?;
        let new_ids = self.changed_chunks(decl)?;
        self.added_placements(decl, &new_ids)?;
        self.placed_somewhere(decl, &new_ids)?;
        self.removed_placements(decl)?;
        self.removed_chunks(decl)
    }

    /// Only the engine makes processes and engines' leases: a program
    /// placing a chunk of its own on `engine/process` or `engine/engine`
    /// (a forged queued run a worker would take, a forged lease) is refused.
    fn no_forged_processes(&self, decl: &Declaration) -> Result<()> {
        // (a run's file effects and the contents kept for them are the
        // engine's record: a rewind trusts them)
        let engine_types = [
            "engine/process",
            crate::claim::ENGINE_TYPE,
            crate::file_effects::EFFECTS_TYPE,
            crate::file_effects::BLOB_TYPE,
        ];
        let own = |chunk: Option<&str>| chunk.is_some_and(|c| self.engine_made.contains(&c));
        if let Some(blob) = decl
            .chunks
            .iter()
            .filter_map(|c| c.id.as_deref())
            .find(|id| id.starts_with(crate::file_effects::BLOB_PREFIX) && !own(Some(id)))
        {
            return Err(EngineError::boundary(format!(
                "cannot make `{blob}`: `blob/` names the contents the engine keeps for rewinds"
            )));
        }
        let onto = decl
            .chunks
            .iter()
            .filter(|c| !own(c.id.as_deref()))
            .flat_map(|c| c.placements.iter().map(|p| (p.scope.as_str(), p.kind)))
            .chain(
                decl.placements
                    .iter()
                    .filter(|p| !own(Some(&p.chunk)))
                    .map(|p| (p.scope.as_str(), p.kind)),
            );
        for (scope, kind) in onto {
            if kind == PlacementType::Instance && engine_types.contains(&scope) {
                return Err(EngineError::boundary(format!(
                    "cannot place a chunk instance on `{scope}`: only the engine makes processes, \
                     engines' leases and the record of runs' file effects (start a run with `run`)"
                )));
            }
        }
        Ok(())
    }

    /// Chunks the declaration changes must be writable and unprotected (a
    /// process's body only merge-patched, and never the engine's fields);
    /// answers the ids it creates.
    fn changed_chunks(&mut self, decl: &Declaration) -> Result<HashSet<String>> {
        let mut new_ids = HashSet::new();
        for chunk in &decl.chunks {
            let Some(id) = chunk.id.as_deref() else {
                continue;
            };
            if id == protocol::origin::ORIGIN {
                return Err(EngineError::boundary(format!(
                    "cannot change `{id}`: only a host records where the substrate was made"
                )));
            }
            if self.reach.manages(id) && id.starts_with("program/") {
                managed_program(self.reach, id, chunk)?;
            }
            if !self.view.snap.exists(id)? {
                new_ids.insert(id.to_owned());
                continue;
            }
            if !self.writable(id)? {
                return Err(EngineError::boundary(format!(
                    "cannot change `{id}`: it is outside this process's write boundary"
                )));
            }
            match self.view.protection(id)? {
                Protected::No => {}
                Protected::Process => process_change(id, chunk)?,
                other => {
                    return Err(EngineError::boundary(format!(
                        "cannot change `{id}`: it is a {}",
                        describe(other)
                    )));
                }
            }
        }
        Ok(new_ids)
    }

    /// Each placement the declaration adds.
    fn added_placements(&mut self, decl: &Declaration, new_ids: &HashSet<String>) -> Result<()> {
        let declared: HashSet<&str> = decl.chunks.iter().filter_map(|c| c.id.as_deref()).collect();
        // Every placement added, with the chunks placed instance per chunk
        // (for the typing exemption).
        let mut adds: Vec<Add> = Vec::new();
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
            if self.engine_made.contains(&chunk.as_str()) {
                continue;
            }
            if self.reach.manages(chunk) && self.managed_scope(chunk, scope) {
                continue; // a program it manages, on `engine/program` (its input type on it)
            }
            if !(chunk.is_empty() || new_ids.contains(chunk)) {
                self.placed_chunk(chunk, scope, *kind)?;
            }
            if declared.contains(scope.as_str()) && new_ids.contains(scope) {
                continue; // a scope created in this declaration is judged by its own placements
            }
            if !self.view.snap.exists(scope)? {
                continue; // the substrate answers NOT_FOUND
            }
            let p = self.view.protection(scope)?;
            if matches!(p, Protected::Boundary | Protected::Argument) {
                return Err(EngineError::boundary(format!(
                    "cannot place anything on `{scope}`: it is a {}",
                    describe(p)
                )));
            }
            if self.reach.write.admits(self.view, scope)? {
                continue;
            }
            if *kind == PlacementType::Instance && self.is_typing(decl, &adds, i)? {
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
        Ok(())
    }

    /// Whether `id` is writable: inside the write boundary, or a program
    /// chunk (or input type) the caller manages.
    fn writable(&mut self, id: &str) -> Result<bool> {
        Ok(self.reach.manages(id) || self.reach.write.admits(self.view, id)?)
    }

    /// Where a managed chunk may be placed: a program on `engine/program`,
    /// an input type on the program it is the input of.
    fn managed_scope(&self, chunk: &str, scope: &str) -> bool {
        match chunk.strip_prefix("input/") {
            Some(name) => scope == format!("program/{name}"),
            None => scope == "engine/program",
        }
    }

    /// An existing chunk being placed: readable, writable when placed
    /// instance, unprotected.
    fn placed_chunk(&mut self, chunk: &str, scope: &str, kind: PlacementType) -> Result<()> {
        if !self.reach.read.admits(self.view, chunk)? {
            return Err(EngineError::boundary(format!(
                "cannot place `{chunk}`: it is outside this process's read boundary"
            )));
        }
        if kind == PlacementType::Instance && !self.reach.write.admits(self.view, chunk)? {
            return Err(EngineError::boundary(format!(
                "cannot place `{chunk}` instance on `{scope}`: an instance placement pulls the \
                 chunk into the scope's tree, and `{chunk}` is outside the write boundary"
            )));
        }
        let p = self.view.protection(chunk)?;
        if p != Protected::No {
            return Err(EngineError::boundary(format!(
                "cannot add placements of `{chunk}`: it is a {}",
                describe(p)
            )));
        }
        Ok(())
    }

    /// With a restricted write boundary, every new chunk is placed on a
    /// scope inside it.
    fn placed_somewhere(&self, decl: &Declaration, new_ids: &HashSet<String>) -> Result<()> {
        if self.reach.write.is_open() {
            return Ok(());
        }
        for chunk in &decl.chunks {
            if chunk
                .id
                .as_deref()
                .is_some_and(|id| self.engine_made.contains(&id) || self.reach.manages(id))
            {
                continue;
            }
            if chunk.placements.is_empty()
                && chunk.id.as_ref().is_none_or(|id| new_ids.contains(id))
                && !decl
                    .placements
                    .iter()
                    .any(|p| Some(&p.chunk) == chunk.id.as_ref())
            {
                return Err(EngineError::boundary(
                    "cannot create a chunk placed nowhere: with a restricted write boundary every new \
                     chunk must be placed on a scope inside it",
                ));
            }
        }
        Ok(())
    }

    /// Placements removed: both ends writable, neither protected.
    fn removed_placements(&mut self, decl: &Declaration) -> Result<()> {
        for key in &decl.remove.placements {
            if self.reach.manages(&key.chunk) && self.managed_scope(&key.chunk, &key.scope) {
                continue; // a tool gone from its server: off the live programs
            }
            for id in [&key.chunk, &key.scope] {
                if self.view.snap.exists(id)? && !self.reach.write.admits(self.view, id)? {
                    return Err(EngineError::boundary(format!(
                        "cannot remove the placement of `{}` on `{}`: `{id}` is outside the write boundary",
                        key.chunk, key.scope
                    )));
                }
            }
            let p = self.view.protection(&key.chunk)?;
            let q = self.view.protection(&key.scope)?;
            if p != Protected::No || matches!(q, Protected::Boundary | Protected::Argument) {
                return Err(EngineError::boundary(format!(
                    "cannot remove the placement of `{}` on `{}`: it belongs to a {}",
                    key.chunk,
                    key.scope,
                    describe(if p != Protected::No { p } else { q })
                )));
            }
        }
        Ok(())
    }

    /// Chunks removed: writable and unprotected.
    fn removed_chunks(&mut self, decl: &Declaration) -> Result<()> {
        for id in &decl.remove.chunks {
            if !self.view.snap.exists(id)? {
                continue;
            }
            if id == protocol::origin::ORIGIN {
                return Err(EngineError::boundary(format!(
                    "cannot remove `{id}`: only a host records where the substrate was made"
                )));
            }
            if !self.reach.write.admits(self.view, id)? {
                return Err(EngineError::boundary(format!(
                    "cannot remove `{id}`: it is outside this process's write boundary"
                )));
            }
            let p = self.view.protection(id)?;
            if p != Protected::No {
                return Err(EngineError::boundary(format!(
                    "cannot remove `{id}`: it is a {}",
                    describe(p)
                )));
            }
        }
        Ok(())
    }

    /// The typing exemption: the chunk of `adds[i]` is also placed
    /// instance, in this declaration, on a scope whose composed `accepts`
    /// names `adds[i]`'s scope.
    fn is_typing(&mut self, decl: &Declaration, adds: &[Add], i: usize) -> Result<bool> {
        let (chunk, ty, _) = &adds[i];
        for (j, (other_chunk, other_scope, kind)) in adds.iter().enumerate() {
            if j == i || other_chunk != chunk || *kind != PlacementType::Instance {
                continue;
            }
            let accepts = self.composed_accepts(decl, other_scope)?;
            if accepts.iter().any(|t| t == ty) {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// The composed `accepts` of `scope`: from the store when it exists,
    /// else from its declaration and the templates above the scopes it is
    /// declared on.
    fn composed_accepts(&mut self, decl: &Declaration, scope: &str) -> Result<Vec<String>> {
        let snap = self.view.snap;
        if snap.exists(scope)? {
            return Ok(snap.composed_spec(scope)?.accepts.unwrap_or_default());
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
            for ancestor in snap.instance_ancestors(&p.scope)? {
                if let Some(item) = snap.chunk(&ancestor)? {
                    specs.push(Spec::parse(&ancestor, &item.spec.to_value()).unwrap_or_default());
                }
            }
        }
        Ok(ComposedSpec::fold(&own, &specs).accepts.unwrap_or_default())
    }
}

/// A change to a process chunk: only its body, merge-patched, and never
/// the engine's fields.
fn process_change(id: &str, chunk: &ChunkDecl) -> Result<()> {
    if chunk.spec.is_some() {
        return Err(EngineError::boundary(format!(
            "cannot change the spec of process `{id}`: it is fixed by the engine"
        )));
    }
    let Some(body) = &chunk.body else {
        return Ok(());
    };
    if !chunk.merge {
        return Err(EngineError::boundary(format!(
            "cannot replace the body of process `{id}`: merge-patch it (\"merge\": true) \
             and leave the engine's fields alone"
        )));
    }
    let fields = body
        .as_object()
        .map(|m| m.keys().collect::<Vec<_>>())
        .unwrap_or_default();
    if let Some(f) = fields
        .iter()
        .find(|f| PROTECTED_FIELDS.contains(&f.as_str()))
    {
        return Err(EngineError::boundary(format!(
            "cannot set `{f}` on process `{id}`: only the engine writes {}",
            PROTECTED_FIELDS.join(", ")
        )));
    }
    Ok(())
}

/// A program chunk a service writes as one it manages: whole (not
/// merged), named after its id, a `vm` program served by that service
/// with the intrinsic boundary of its own tree — never a program that runs
/// an executable of the service's choosing, with capabilities, a boundary
/// or a name (another program's) of its choosing.
fn managed_program(reach: &Reach, id: &str, chunk: &ChunkDecl) -> Result<()> {
    let refuse = |why: &str| {
        Err(EngineError::boundary(format!(
            "cannot write `{id}` as a program this service manages: {why}"
        )))
    };
    let name = id.trim_start_matches("program/");
    if chunk.name.clone().flatten().as_deref() != Some(name) {
        return refuse(&format!("its name must be `{name}`"));
    }
    let (Some(body), false) = (&chunk.body, chunk.merge) else {
        return refuse("it is written whole, with a body");
    };
    let body = match protocol::program::ProgramBody::parse(name, body) {
        Ok(body) => body,
        Err(why) => return refuse(&why),
    };
    let service = reach.service.as_deref().unwrap_or_default();
    let served = body
        .served_by
        .as_deref()
        .is_some_and(|by| by == service || format!("program/{by}") == service);
    if !served || body.runtime != protocol::program::Runtime::Vm {
        return refuse(&format!(
            "it must be a `vm` program with `served_by` naming `{service}`"
        ));
    }
    if body.boundary != protocol::Boundary::Roots(Vec::new()) {
        return refuse("its boundary must be its own tree (`[]`)");
    }
    Ok(())
}
