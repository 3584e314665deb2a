//! Applying a declaration inside one write transaction: removals, then
//! chunks, then placements; then `seq`s; then the spec rules, judged on the
//! state the whole declaration produced. Any error rolls everything back.

use super::snapshot::{ChunkRow, Snapshot, kind_code, kind_from};
use super::tx::{NewPlacementRow, Tx, VersionText};
use crate::error::{Error, Result};
use crate::ids::{check_id, is_reserved, new_id};
use crate::spec::{ComposedSpec, Spec, kind_of};
use crate::types::{
    ChunkDecl, Commit, CommitId, Declaration, NewPlacement, Placement, PlacementChange,
    PlacementOp, PlacementType,
};
use serde_json::Value;
use std::collections::{HashMap, HashSet};

/// The largest serialized body a chunk may have.
pub const MAX_BODY_BYTES: usize = 8 * 1024 * 1024;

/// Checks what can be checked without the store, before taking the writer.
pub(crate) fn check_shape(decl: &Declaration) -> Result<()> {
    if decl.is_empty() {
        return Err(Error::InvalidRequest(
            "empty declaration: a commit must create, update, place or remove something".into(),
        ));
    }
    for (i, chunk) in decl.chunks.iter().enumerate() {
        let what = format!("chunks[{i}]");
        if let Some(id) = &chunk.id {
            check_id(id, &what)?;
            if is_reserved(id) {
                return Err(Error::InvalidRequest(format!(
                    "{what}: `{id}` is reserved for the commit log and cannot be declared"
                )));
            }
        }
        let label = chunk.id.as_deref().unwrap_or("(new)");
        if let Some(spec) = &chunk.spec {
            Spec::parse(label, spec)?;
        }
        if let Some(body) = &chunk.body
            && !body.is_object()
        {
            return Err(Error::Validation(format!(
                "body of chunk `{label}` must be a JSON object, got {}",
                kind_of(body)
            )));
        }
        for p in &chunk.placements {
            check_id(&p.scope, &format!("{what}.placements"))?;
        }
    }
    for (i, p) in decl.placements.iter().enumerate() {
        check_id(&p.chunk, &format!("placements[{i}].chunk"))?;
        check_id(&p.scope, &format!("placements[{i}].scope"))?;
    }
    for (i, p) in decl.remove.placements.iter().enumerate() {
        check_id(&p.chunk, &format!("remove.placements[{i}].chunk"))?;
        check_id(&p.scope, &format!("remove.placements[{i}].scope"))?;
    }
    for (i, id) in decl.remove.chunks.iter().enumerate() {
        check_id(id, &format!("remove.chunks[{i}]"))?;
    }
    Ok(())
}

/// Whom a commit is by: the process whose run caused it (`None`: the
/// host), and its author.
pub(crate) struct By<'a> {
    pub(crate) dispatch_id: Option<&'a str>,
    pub(crate) author: Option<crate::types::Author>,
}

/// A placement this commit inserted, awaiting its `seq` and its checks.
struct NewRow {
    rid: i64,
    chunk: String,
    scope: String,
    kind: PlacementType,
    seq: Option<i64>,
}

/// The running state of one commit.
pub(crate) struct Apply<'c> {
    tx: &'c dyn Tx,
    n: CommitId,
    pos: i64,
    modified: Vec<String>,
    modified_set: HashSet<String>,
    created: Vec<String>,
    removed: Vec<String>,
    changes: Vec<PlacementChange>,
    body_changed: Vec<String>,
    /// Chunks whose own placements changed: their versions need a new
    /// placements column.
    replaced: Vec<String>,
    replaced_set: HashSet<String>,
    new_rows: Vec<NewRow>,
    composed: HashMap<String, ComposedSpec>,
    next_vid: i64,
    /// The keys whose text it queued for the index.
    text_queued: Vec<i64>,
    /// What this commit knows without asking the store again (see
    /// [`Known`]).
    known: Known,
    /// The head's facts (`facts.rs`), true of the state before this
    /// commit: used for what it has not touched.
    facts: Option<&'c super::facts::HeadFacts>,
}

/// What a commit learnt or made, so that it asks the store only once: a
/// commit's statements are its cost (on a server, a round trip each).
/// Removals come first in a commit, so nothing here goes stale after.
#[derive(Default)]
struct Known {
    /// The version this commit wrote of each chunk it wrote.
    rows: HashMap<String, ChunkRow>,
    /// Chunk keys by id, and scopes known to exist.
    keys: HashMap<String, i64>,
    present: HashSet<String>,
    /// Chunks this commit created: their only placements are `added`.
    fresh: HashSet<String>,
    /// The placements this commit made, with the `seq` declared.
    added: HashMap<(String, String, i64), Option<i64>>,
}

impl<'c> Apply<'c> {
    pub(crate) fn new(tx: &'c dyn Tx, n: CommitId) -> Result<Apply<'c>> {
        let next_vid = tx.next_vid()?;
        Ok(Apply {
            tx,
            n,
            pos: 0,
            modified: Vec::new(),
            modified_set: HashSet::new(),
            created: Vec::new(),
            removed: Vec::new(),
            changes: Vec::new(),
            body_changed: Vec::new(),
            replaced: Vec::new(),
            replaced_set: HashSet::new(),
            new_rows: Vec::new(),
            composed: HashMap::new(),
            next_vid,
            text_queued: Vec::new(),
            known: Known::default(),
            facts: None,
        })
    }

    /// The same, told the facts of the head it follows.
    pub(crate) fn knowing(mut self, facts: &'c super::facts::HeadFacts) -> Apply<'c> {
        self.facts = Some(facts);
        self
    }

    /// Whether this commit has changed `id` so far (its version, its
    /// placements, its existence).
    fn touched(&self, id: &str) -> bool {
        self.modified_set.contains(id) || self.replaced_set.contains(id)
    }

    /// Whether `id` existed before this commit and it has not touched it.
    fn known_to_exist(&self, id: &str) -> bool {
        let before = self.n.saturating_sub(1);
        !self.touched(id) && self.facts.and_then(|f| f.exists(before, id)) == Some(true)
    }

    fn snapshot(&self) -> Snapshot<'c> {
        Snapshot::writing(self.tx, self.n)
    }

    /// Chunk `id`'s version now: the one this commit wrote, else stored.
    fn row(&self, id: &str) -> Result<Option<ChunkRow>> {
        match self.known.rows.get(id) {
            Some(row) => Ok(Some(row.clone())),
            None => self.snapshot().chunk_row(id),
        }
    }

    /// Applies the whole declaration and returns the commit record (not yet
    /// stored), the keys whose text it queued for the index, and the
    /// version it wrote of each chunk it wrote.
    pub(crate) fn run(
        mut self,
        decl: Declaration,
        parent: Option<CommitId>,
        timestamp: String,
        dispatch_id: Option<String>,
        author: Option<crate::types::Author>,
    ) -> Result<(Commit, Vec<i64>, super::facts::Written)> {
        for key in &decl.remove.placements {
            self.remove_placement(&key.chunk, &key.scope, key.kind)?;
        }
        for id in &decl.remove.chunks {
            self.remove_chunk(id)?;
        }
        let mut queued = Vec::new();
        for chunk in decl.chunks {
            let (id, placements) = self.put_chunk(chunk)?;
            for p in placements {
                queued.push((id.clone(), p.scope, p.kind, p.seq));
            }
        }
        for p in decl.placements {
            queued.push((p.chunk, p.scope, p.kind, p.seq));
        }
        for (chunk, scope, kind, seq) in queued {
            self.add_placement(chunk, scope, kind, seq)?;
        }
        self.assign_seqs()?;
        self.sync_placements()?;
        self.check_rules()?;
        let touched_scopes = self.touched_scopes()?;
        let commit = Commit {
            id: self.n,
            parent_id: parent,
            timestamp,
            dispatch_id,
            chunks_modified: self.modified,
            created: self.created,
            removed: self.removed,
            placements_modified: self.changes,
            touched_scopes,
            author,
        };
        Ok((commit, self.text_queued, self.known.rows))
    }

    fn mark_replaced(&mut self, id: &str) {
        if self.replaced_set.insert(id.to_owned()) {
            self.replaced.push(id.to_owned());
        }
    }

    fn mark_modified(&mut self, id: &str) {
        if self.modified_set.insert(id.to_owned()) {
            self.modified.push(id.to_owned());
        }
    }

    fn remove_placement(&mut self, chunk: &str, scope: &str, kind: PlacementType) -> Result<()> {
        let seq = self
            .tx
            .end_placement(chunk, scope, kind_code(kind), self.n as i64)?
            .ok_or_else(|| {
                Error::NotFound(format!(
                    "cannot remove the {} placement of `{chunk}` on `{scope}`: there is none",
                    kind.as_str()
                ))
            })?;
        self.changes.push(PlacementChange {
            chunk: chunk.to_owned(),
            scope: scope.to_owned(),
            kind,
            seq,
            op: PlacementOp::Removed,
        });
        self.mark_replaced(chunk);
        Ok(())
    }

    fn remove_chunk(&mut self, id: &str) -> Result<()> {
        let key = self.tx.end_chunk(id, self.n as i64)?.ok_or_else(|| {
            Error::NotFound(format!("cannot remove chunk `{id}`: it does not exist"))
        })?;
        self.queue_text(key, None)?;
        let ended: Vec<PlacementChange> = self
            .tx
            .end_placements_touching(id, self.n as i64)?
            .into_iter()
            .map(|(chunk, scope, kind, seq)| PlacementChange {
                chunk,
                scope,
                kind: kind_from(kind),
                seq,
                op: PlacementOp::Removed,
            })
            .collect();
        for change in &ended {
            if change.chunk != id {
                self.mark_replaced(&change.chunk);
            }
        }
        self.changes.extend(ended);
        self.mark_modified(id);
        self.removed.push(id.to_owned());
        Ok(())
    }

    /// Creates or updates one chunk; returns its id and its placements to add.
    fn put_chunk(&mut self, decl: ChunkDecl) -> Result<(String, Vec<NewPlacement>)> {
        // (an id made now names no chunk yet)
        let (id, current) = match decl.id {
            Some(id) => {
                let current = self.row(&id)?;
                (id, current)
            }
            None => (new_id("c"), None),
        };
        if decl.create && current.is_some() {
            return Err(Error::Validation(format!(
                "chunk `{id}` already exists; it was declared with `create: true`"
            )));
        }
        let (name, spec, body) = match &current {
            Some(row) => (row.name.clone(), row.spec.clone(), row.body.clone()),
            None => (None, "{}".to_owned(), "{}".to_owned()),
        };
        let new_name = decl.name.unwrap_or(name.clone());
        let new_spec = match &decl.spec {
            Some(spec) => spec.to_string(),
            None => spec.clone(),
        };
        let new_body = match decl.body {
            Some(patch) if decl.merge => {
                let mut doc: Value = serde_json::from_str(&body).unwrap_or_default();
                json_patch::merge(&mut doc, &patch);
                doc.to_string()
            }
            Some(replacement) => replacement.to_string(),
            None => body.clone(),
        };
        if new_body.len() > MAX_BODY_BYTES {
            return Err(Error::Validation(format!(
                "body of chunk `{id}` is {} bytes serialized; the limit is {MAX_BODY_BYTES} \
                 (8 MiB) — keep large content in a file and point to it from the chunk",
                new_body.len()
            )));
        }
        let unchanged =
            current.is_some() && new_name == name && new_spec == spec && new_body == body;
        if !unchanged {
            let text_changed = current.is_none() || new_name != name || new_body != body;
            let version = VersionText {
                name: &new_name,
                spec: &new_spec,
                body: &new_body,
                placements: current.as_ref().map_or("[]", |c| c.placements.as_str()),
            };
            self.write_version(&id, current.as_ref(), &version, text_changed)?;
            if current.is_none() {
                self.created.push(id.clone());
                self.known.fresh.insert(id.clone());
            }
            if current.is_none() || new_body != body {
                self.body_changed.push(id.clone());
            }
            self.mark_modified(&id);
        }
        Ok((id, decl.placements))
    }

    /// Writes a new version of chunk `id` (or rewrites this commit's own
    /// version in place), keeping the full-text index in step.
    fn write_version(
        &mut self,
        id: &str,
        current: Option<&ChunkRow>,
        v: &VersionText<'_>,
        text_changed: bool,
    ) -> Result<()> {
        let n = self.n as i64;
        if let Some(old) = current {
            let vid = if old.began == self.n {
                // A second change of the chunk in this commit: rewrite in place.
                self.tx.rewrite_version(old.vid, v)?;
                old.vid
            } else {
                self.tx.end_version(old.vid, n)?;
                self.insert_version(id, old.key, v)?
            };
            if text_changed {
                self.queue_text(old.key, Some(v))?;
            }
            self.remember(id, vid, old.key, v);
            return Ok(());
        }
        let key = self.next_vid;
        let vid = self.insert_version(id, key, v)?;
        self.remember(id, vid, key, v);
        self.queue_text(key, Some(v))
    }

    /// Notes the version of `id` this commit wrote.
    fn remember(&mut self, id: &str, vid: i64, key: i64, v: &VersionText<'_>) {
        let row = ChunkRow {
            vid,
            key,
            name: v.name.clone(),
            spec: v.spec.to_owned(),
            body: v.body.to_owned(),
            placements: v.placements.to_owned(),
            began: self.n,
        };
        self.known.keys.insert(id.to_owned(), key);
        self.known.rows.insert(id.to_owned(), row);
    }

    /// Writes a new version; its vid.
    fn insert_version(&mut self, id: &str, key: i64, v: &VersionText<'_>) -> Result<i64> {
        let vid = self.next_vid;
        self.next_vid += 1;
        self.tx.insert_version(vid, id, key, v, self.n as i64)?;
        Ok(vid)
    }

    /// Queues `key`'s text for the index (`text.rs`): indexed after the
    /// commit, off its path (`now`: its new version, none when removed).
    fn queue_text(&mut self, key: i64, now: Option<&VersionText<'_>>) -> Result<()> {
        self.text_queued.push(key);
        self.tx.text_changed(key, now)
    }

    /// Brings the placements column of every chunk whose placements changed
    /// up to date: in place for a version this commit wrote, else as a new
    /// version (a placement change is a change of the chunk).
    fn sync_placements(&mut self) -> Result<()> {
        for id in self.replaced.clone() {
            let Some(current) = self.row(&id)? else {
                continue; // removed in this commit
            };
            let placements: Vec<Placement> = if self.known.fresh.contains(&id) {
                // (all made by this commit, in the order they were made)
                self.new_rows
                    .iter()
                    .filter(|r| r.chunk == id)
                    .map(|r| Placement {
                        scope: r.scope.clone(),
                        kind: r.kind,
                        seq: r.seq,
                    })
                    .collect()
            } else {
                self.tx.live_placements(&id)?
            };
            let text = serde_json::to_string(&placements)
                .map_err(|e| Error::Storage(format!("cannot encode placements: {e}")))?;
            let version = VersionText {
                name: &current.name,
                spec: &current.spec,
                body: &current.body,
                placements: &text,
            };
            self.write_version(&id, Some(&current), &version, false)?;
        }
        Ok(())
    }

    fn add_placement(
        &mut self,
        chunk: String,
        scope: String,
        kind: PlacementType,
        seq: Option<i64>,
    ) -> Result<()> {
        if chunk == scope {
            return Err(Error::Validation(format!(
                "chunk `{chunk}` cannot be placed on itself"
            )));
        }
        let missing = |id: &str, role: &str| {
            Error::NotFound(format!(
                "cannot place `{chunk}` on `{scope}`: the {role} `{id}` does not exist \
                 (create it first, or in the same declaration)"
            ))
        };
        let ckey = match self.known.keys.get(&chunk) {
            Some(key) => *key,
            None => {
                let key = self
                    .snapshot()
                    .chunk_row(&chunk)?
                    .ok_or_else(|| missing(&chunk, "chunk"))?
                    .key;
                self.known.keys.insert(chunk.clone(), key);
                key
            }
        };
        if !self.known.keys.contains_key(&scope)
            && !self.known.present.contains(&scope)
            && !self.known_to_exist(&scope)
        {
            if !self.snapshot().exists(&scope)? {
                return Err(missing(&scope, "scope"));
            }
            self.known.present.insert(scope.clone());
        }
        let placed = (chunk.clone(), scope.clone(), kind_code(kind));
        let existing = if self.known.fresh.contains(&chunk) {
            self.known.added.get(&placed).copied()
        } else {
            self.tx.placement_seq(&chunk, &scope, kind_code(kind))?
        };
        if let Some(old_seq) = existing {
            return match seq {
                Some(s) if Some(s) != old_seq => Err(Error::Validation(format!(
                    "`{chunk}` is already placed {} on `{scope}` at seq {}; remove that placement \
                     to move it to seq {s}",
                    kind.as_str(),
                    old_seq.map_or("none".to_owned(), |v| v.to_string())
                ))),
                _ => Ok(()),
            };
        }
        self.pos += 1;
        let rid = self.tx.insert_placement(&NewPlacementRow {
            chunk: &chunk,
            ckey,
            scope: &scope,
            kind: kind_code(kind),
            seq,
            began: self.n as i64,
            pos: self.pos,
        })?;
        self.known.added.insert(placed, seq);
        self.mark_replaced(&chunk);
        self.new_rows.push(NewRow {
            rid,
            chunk,
            scope,
            kind,
            seq,
        });
        Ok(())
    }

    fn composed(&mut self, scope: &str) -> Result<ComposedSpec> {
        if let Some(c) = self.composed.get(scope) {
            return Ok(c.clone());
        }
        // (the walk the head knows, when this commit changed none of it)
        let before = self.n.saturating_sub(1);
        let known = self
            .facts
            .and_then(|f| f.walk(before, scope))
            .filter(|walk| !walk.iter().any(|(id, _)| self.touched(id)));
        let c = match known {
            Some(walk) => super::snapshot::compose(scope, &walk),
            None => self.snapshot().composed_spec(scope)?,
        };
        self.composed.insert(scope.to_owned(), c.clone());
        Ok(c)
    }

    /// Gives every new placement on an ordered scope its `seq`; refuses
    /// `seq` on unordered scopes and collisions on ordered ones.
    fn assign_seqs(&mut self) -> Result<()> {
        let new_rows = std::mem::take(&mut self.new_rows);
        // the highest seq given on a scope by this loop (no other placement
        // is made meanwhile)
        let mut last: HashMap<String, i64> = HashMap::new();
        for mut r in new_rows {
            let ordered = self.composed(&r.scope)?.ordered;
            match (ordered, r.seq) {
                (false, Some(s)) => {
                    return Err(Error::Validation(format!(
                        "placement of `{}` on `{}` gives seq {s}, but `{}` is not ordered \
                         (its composed spec has no `ordered: true`); omit seq",
                        r.chunk, r.scope, r.scope
                    )));
                }
                (true, Some(s)) => {
                    let holders = self.tx.seq_holders(&r.scope, s, r.rid)?;
                    if let Some(holder) = holders.first() {
                        return Err(Error::Validation(format!(
                            "seq {s} on ordered scope `{}` is already taken by `{holder}`; \
                             omit seq to append `{}`",
                            r.scope, r.chunk
                        )));
                    }
                }
                (true, None) => {
                    let max = match last.get(&r.scope) {
                        Some(given) => Some(*given),
                        None => self.tx.max_seq(&r.scope)?,
                    };
                    let seq = max.map_or(0, |m| m + 1);
                    self.tx.set_seq(r.rid, seq)?;
                    last.insert(r.scope.clone(), seq);
                    r.seq = Some(seq);
                }
                (false, None) => {}
            }
            self.changes.push(PlacementChange {
                chunk: r.chunk.clone(),
                scope: r.scope.clone(),
                kind: r.kind,
                seq: r.seq,
                op: PlacementOp::Added,
            });
            self.new_rows.push(r);
        }
        Ok(())
    }

    /// The spec rules on the state after the declaration: every new
    /// instance placement against its scope's composed spec, and every
    /// changed body against `required`/`unique` of every scope it is an
    /// instance member of.
    fn check_rules(&mut self) -> Result<()> {
        let mut checked: HashSet<(String, String)> = HashSet::new();
        let mut bodies: HashMap<String, Value> = HashMap::new();
        let pairs: Vec<(String, String)> = self
            .new_rows
            .iter()
            .filter(|r| r.kind == PlacementType::Instance)
            .map(|r| (r.chunk.clone(), r.scope.clone()))
            .collect();
        for (chunk, scope) in pairs {
            let spec = self.composed(&scope)?;
            if let Some(types) = &spec.accepts {
                self.check_accepts(&chunk, &scope, types)?;
            }
            self.check_fields(&chunk, &scope, &spec, &mut bodies)?;
            checked.insert((chunk, scope));
        }
        for chunk in std::mem::take(&mut self.body_changed) {
            if self.known.fresh.contains(&chunk) {
                continue; // its every placement is new: checked above
            }
            let scopes = self.tx.instance_scopes(&chunk)?;
            for scope in scopes {
                if checked.contains(&(chunk.clone(), scope.clone())) {
                    continue;
                }
                let spec = self.composed(&scope)?;
                self.check_fields(&chunk, &scope, &spec, &mut bodies)?;
            }
        }
        Ok(())
    }

    fn check_accepts(&self, chunk: &str, scope: &str, types: &[String]) -> Result<()> {
        let snap = self.snapshot();
        for t in types {
            let of = if self.known.fresh.contains(chunk) {
                let placed = (
                    chunk.to_owned(),
                    t.clone(),
                    kind_code(PlacementType::Instance),
                );
                self.known.added.contains_key(&placed)
            } else {
                snap.is_instance_of(chunk, t)?
            };
            if of {
                return Ok(());
            }
        }
        let own_types: Vec<String> = snap
            .placements_of(chunk)?
            .into_iter()
            .filter(|p| p.kind == PlacementType::Instance && p.scope != scope)
            .map(|p| p.scope)
            .collect();
        Err(Error::Validation(format!(
            "`{scope}` does not accept `{chunk}`: its rule `accepts` admits only instances of \
             [{}], and `{chunk}` is an instance of [{}]; place it instance on one of those types \
             in the same declaration",
            types.join(", "),
            own_types.join(", ")
        )))
    }

    fn check_fields(
        &self,
        chunk: &str,
        scope: &str,
        spec: &ComposedSpec,
        bodies: &mut HashMap<String, Value>,
    ) -> Result<()> {
        if spec.required.is_empty() && spec.unique.is_empty() {
            return Ok(());
        }
        if !bodies.contains_key(chunk) {
            let body = match self.known.rows.get(chunk) {
                Some(row) => serde_json::from_str(&row.body).unwrap_or_default(),
                None => self.snapshot().body(chunk)?.unwrap_or_default(),
            };
            bodies.insert(chunk.to_owned(), body);
        }
        let body = &bodies[chunk];
        for field in &spec.required {
            if body.get(field).is_none_or(Value::is_null) {
                return Err(Error::Validation(format!(
                    "`{chunk}` on scope `{scope}` breaks the rule `required`: its body lacks \
                     `{field}` (required: [{}])",
                    spec.required.join(", ")
                )));
            }
        }
        for field in &spec.unique {
            let Some(value) = body.get(field).filter(|v| !v.is_null()) else {
                continue;
            };
            let clash = self.tx.unique_clash(scope, chunk, field, value)?;
            if let Some(other) = clash {
                return Err(Error::Validation(format!(
                    "`{chunk}` on scope `{scope}` breaks the rule `unique`: `{other}` already has \
                     {field} = {value}"
                )));
            }
        }
        Ok(())
    }

    /// Every scope this commit touched: modified chunks, both ends of every
    /// placement change, and the scopes modified chunks sit on.
    fn touched_scopes(&self) -> Result<Vec<String>> {
        let mut seen = HashSet::new();
        let mut out = Vec::new();
        let mut add = |id: &str| {
            if seen.insert(id.to_owned()) {
                out.push(id.to_owned());
            }
        };
        for id in &self.modified {
            add(id);
        }
        for c in &self.changes {
            add(&c.chunk);
            add(&c.scope);
        }
        let removed: HashSet<&String> = self.removed.iter().collect();
        let mut asked = HashSet::new();
        let changed = self.modified.iter().chain(self.replaced.iter());
        // (a chunk made now sits only on scopes its placement changes
        // named above)
        let settled = changed.filter(|id| !removed.contains(id) && !self.known.fresh.contains(*id));
        for id in settled {
            if asked.insert(id) {
                for scope in self.tx.scopes_of(id)? {
                    add(&scope);
                }
            }
        }
        Ok(out)
    }
}
