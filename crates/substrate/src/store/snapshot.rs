//! [`Snapshot`]: one consistent view of the substrate — at head, or as it
//! stood after an earlier commit — and the state queries every other part
//! (reads, commit validation, the engine's boundary checks) is built from.

use super::cache::VersionCache;
use super::tx::Tx;
use crate::error::{Error, Result};
use crate::json::Json;
use crate::spec::{ComposedSpec, Spec};
use crate::types::{ChunkItem, CommitId, Placement, PlacementType};
use rusqlite::types::ToSql;
use rusqlite::{Connection, Row};
use std::collections::HashMap;
use std::sync::Arc;

/// Which state a query sees.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum At {
    /// The current state (rows not ended).
    Head,
    /// The state right after commit N (rows with began ≤ N < ended).
    Commit(CommitId),
}

impl At {
    /// `placements p`, pinned to the index that serves lookups by scope.
    /// (Without statistics SQLite's planner sometimes prefers a scan.)
    pub(crate) fn by_scope(self) -> &'static str {
        "placements p INDEXED BY placements_by_scope"
    }

    /// `chunks c`, pinned to the index that serves lookups by id.
    pub(crate) fn chunks(self) -> &'static str {
        "chunks c INDEXED BY chunks_by_id"
    }

    /// The SQL predicate selecting live rows of the table aliased `alias`.
    pub(crate) fn live(self, alias: &str) -> String {
        match self {
            At::Head => format!("{alias}.ended IS NULL"),
            At::Commit(_) => {
                format!(
                    "{alias}.began <= ?{AT_PARAM} AND ({alias}.ended IS NULL OR {alias}.ended > ?{AT_PARAM})"
                )
            }
        }
    }
}

/// The parameter index reserved for the `as_of` commit in historical
/// queries: fixed, so it can never share an index with a positional
/// parameter however the predicate and the `?N`s are ordered.
pub(crate) const AT_PARAM: usize = 20;

/// Encodes a placement type as stored.
pub(crate) fn kind_code(kind: PlacementType) -> i64 {
    match kind {
        PlacementType::Instance => 0,
        PlacementType::Relates => 1,
    }
}

/// Decodes a stored placement type.
pub(crate) fn kind_from(code: i64) -> PlacementType {
    if code == 0 {
        PlacementType::Instance
    } else {
        PlacementType::Relates
    }
}

/// Runs `sql` with positional `params` (and the `as_of` commit at
/// [`AT_PARAM`] when the query is historical), mapping each row with `f`.
pub(crate) fn rows<T>(
    conn: &Connection,
    sql: &str,
    params: &[&dyn ToSql],
    at: At,
    mut f: impl FnMut(&Row<'_>) -> rusqlite::Result<T>,
) -> Result<Vec<T>> {
    #[cfg(test)]
    plans::record(sql);
    let mut stmt = conn.prepare_cached(sql)?;
    for (i, p) in params.iter().enumerate() {
        stmt.raw_bind_parameter(i + 1, p)?;
    }
    if let At::Commit(n) = at {
        stmt.raw_bind_parameter(AT_PARAM, n as i64)?;
    }
    let mut out = Vec::new();
    let mut rows = stmt.raw_query();
    while let Some(row) = rows.next()? {
        out.push(f(row)?);
    }
    Ok(out)
}

/// Like [`rows`], for a query answering at most one row.
pub(crate) fn row<T>(
    conn: &Connection,
    sql: &str,
    params: &[&dyn ToSql],
    at: At,
    f: impl FnMut(&Row<'_>) -> rusqlite::Result<T>,
) -> Result<Option<T>> {
    Ok(rows(conn, sql, params, at, f)?.into_iter().next())
}

/// A chunk's stored version.
#[derive(Clone)]
pub(crate) struct ChunkRow {
    pub vid: i64,
    pub key: i64,
    pub name: Option<String>,
    pub spec: String,
    pub body: String,
    pub placements: String,
    pub began: CommitId,
}

impl ChunkRow {
    /// The version of chunk `id` as a read answers it.
    pub(crate) fn item(&self, id: &str) -> ChunkItem {
        ChunkItem {
            id: id.to_owned(),
            name: self.name.clone(),
            spec: Json::from_text_unchecked(self.spec.clone()),
            body: Some(Json::from_text_unchecked(self.body.clone())),
            placements: parse_placements(&self.placements),
        }
    }
}

/// Parses a version's placements column.
pub(crate) fn parse_placements(text: &str) -> Vec<Placement> {
    // Written only by this crate from `Vec<Placement>`; unreadable means none.
    serde_json::from_str(text).unwrap_or_default()
}

/// A consistent view of the substrate: at head inside a read or write
/// transaction, or as of an earlier commit.
///
/// The engine judges boundaries with it (`Substrate::read`,
/// `Substrate::commit_with`), so its checks and the read or write they
/// guard see the same state.
pub struct Snapshot<'c> {
    pub(crate) tx: &'c dyn Tx,
    pub(crate) at: At,
    pub(crate) head: CommitId,
    /// `None` inside a write transaction: versions written there are not
    /// committed yet and must not be remembered.
    pub(crate) cache: Option<&'c VersionCache>,
    /// Set when a search found the full-text index behind the queue: a
    /// read outside any write transaction cannot index, so
    /// [`Substrate::read`](super::Substrate::read) does, and reads again.
    /// `None` inside a write transaction, which indexes inline.
    pub(crate) behind: Option<&'c std::cell::Cell<bool>>,
    /// What the head says about the structure, remembered between
    /// commits (`facts.rs`): at head, outside a write's own changes.
    pub(crate) facts: Option<&'c super::facts::HeadFacts>,
}

impl<'c> Snapshot<'c> {
    /// The view inside a write transaction on `conn`, at `head`: nothing
    /// cached (what it reads may not be committed yet), and a search
    /// indexes queued text inline.
    pub(crate) fn writing(tx: &'c dyn Tx, head: CommitId) -> Snapshot<'c> {
        Snapshot {
            tx,
            at: At::Head,
            head,
            cache: None,
            behind: None,
            facts: None,
        }
    }

    /// The view a commit's guard judges in: the write transaction before
    /// it writes anything, so the head's facts hold and every version it
    /// reads is committed.
    pub(crate) fn guarding(
        tx: &'c dyn Tx,
        head: CommitId,
        shared: &'c super::Shared,
    ) -> Snapshot<'c> {
        Snapshot {
            facts: Some(&shared.out.facts),
            cache: Some(&shared.cache),
            ..Snapshot::writing(tx, head)
        }
    }

    /// The head's facts, when this view may use them.
    fn facts(&self) -> Option<&'c super::facts::HeadFacts> {
        self.facts.filter(|_| self.at == At::Head)
    }

    /// The commit this view reflects (0 on an empty substrate).
    pub fn commit_id(&self) -> CommitId {
        match self.at {
            At::Head => self.head,
            At::Commit(n) => n,
        }
    }

    /// The store's clock now, in milliseconds since the Unix epoch: a
    /// server's own on PostgreSQL, so hosts whose clocks differ agree on
    /// it (leases are judged by it).
    pub fn now_ms(&self) -> Result<u64> {
        Ok(self.tx.now_ms()?.max(0) as u64)
    }

    /// The latest commit, whatever the view's `as_of`.
    pub fn head_id(&self) -> CommitId {
        self.head
    }

    /// The same view moved to `as_of` (which must not be after head).
    pub fn as_of(&self, as_of: CommitId) -> Result<Snapshot<'c>> {
        if as_of > self.head {
            return Err(Error::InvalidRequest(format!(
                "as_of {as_of} is not a commit yet: the latest commit is {}",
                self.head
            )));
        }
        let at = if as_of == self.head {
            At::Head
        } else {
            At::Commit(as_of)
        };
        Ok(Snapshot {
            tx: self.tx,
            at,
            head: self.head,
            cache: self.cache,
            behind: self.behind,
            facts: self.facts,
        })
    }

    pub(crate) fn chunk_row(&self, id: &str) -> Result<Option<ChunkRow>> {
        self.tx.chunk_row(self.at, id)
    }

    /// Whether the chunk `id` exists in this view.
    pub fn exists(&self, id: &str) -> Result<bool> {
        let Some(facts) = self.facts() else {
            return self.tx.exists(self.at, id);
        };
        if let Some(known) = facts.exists(self.head, id) {
            return Ok(known);
        }
        let found = self.tx.exists(self.at, id)?;
        facts.keep_exists(self.head, id, found);
        Ok(found)
    }

    /// Who wrote the version of each of `ids` this view sees, as the store
    /// stamped it: on a shared store the database role that inserted it
    /// (`None`: written before authors were recorded). Empty on a file,
    /// whose one person wrote everything in it.
    pub fn authors(&self, ids: &[String]) -> Result<HashMap<String, Option<String>>> {
        if ids.is_empty() {
            return Ok(HashMap::new());
        }
        Ok(self.tx.persons_by_id(self.at, ids)?.into_iter().collect())
    }

    /// Who made the chunk `id` — wrote its first version — as the store
    /// stamped it, and that version's body: on a shared store the
    /// database role (`None`: before authors were recorded); nothing on a
    /// file, or when there is no such chunk.
    pub fn made_by(&self, id: &str) -> Result<Option<(Option<String>, serde_json::Value)>> {
        let first = self.tx.first_version(id)?;
        Ok(first.map(|(person, body)| (person, serde_json::from_str(&body).unwrap_or_default())))
    }

    /// Everyone who wrote any version of any of `ids`, as the store
    /// stamped them (`None`: before authors were recorded); empty on a
    /// file.
    pub fn writers(&self, ids: &[String]) -> Result<Vec<Option<String>>> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        self.tx.writers(ids)
    }

    /// The chunk `id` with all its placements, or `None`.
    pub fn chunk(&self, id: &str) -> Result<Option<Arc<ChunkItem>>> {
        Ok(self.items(&[id.to_owned()], true)?.pop())
    }

    /// The parsed body of chunk `id` (`None` when it does not exist).
    pub fn body(&self, id: &str) -> Result<Option<serde_json::Value>> {
        if self.facts().is_some() {
            // (its version known, and likely cached)
            return Ok(self.chunk(id)?.map(|c| {
                c.body
                    .as_ref()
                    .and_then(|b| serde_json::from_str(b.as_str()).ok())
                    .unwrap_or(serde_json::Value::Null)
            }));
        }
        Ok(self
            .chunk_row(id)?
            .map(|r| serde_json::from_str(&r.body).unwrap_or(serde_json::Value::Null)))
    }

    /// The chunk's own placements, in the order they were made (empty when
    /// the chunk does not exist).
    pub fn placements_of(&self, id: &str) -> Result<Vec<Placement>> {
        if self.facts().is_some() {
            return Ok(self
                .chunk(id)?
                .map(|c| c.placements.clone())
                .unwrap_or_default());
        }
        Ok(self
            .chunk_row(id)?
            .map(|r| parse_placements(&r.placements))
            .unwrap_or_default())
    }

    /// Whether `chunk` is placed instance directly on `scope`.
    pub fn is_instance_of(&self, chunk: &str, scope: &str) -> Result<bool> {
        if let At::Commit(_) = self.at {
            return Ok(self
                .placements_of(chunk)?
                .iter()
                .any(|p| p.scope == scope && p.kind == PlacementType::Instance));
        }
        let Some(facts) = self.facts() else {
            return self.tx.is_instance_head(chunk, scope);
        };
        if let Some(known) = facts.instance(self.head, chunk, scope) {
            return Ok(known);
        }
        let found = self.tx.is_instance_head(chunk, scope)?;
        facts.keep_instance(self.head, chunk, scope, found);
        Ok(found)
    }

    /// Every chunk `id` reaches up instance chains (`id` → a scope it is an
    /// instance of → …), `id` itself first. Cycles are harmless.
    pub fn instance_ancestors(&self, id: &str) -> Result<Vec<String>> {
        Ok(self.walk_up(id)?.into_iter().map(|(id, _)| id).collect())
    }

    /// The instance chains up from `id`, breadth first, each chunk with its
    /// spec text (`None` for a chunk that does not exist in this view).
    fn walk_up(&self, id: &str) -> Result<Vec<(String, Option<String>)>> {
        if self.at == At::Head {
            let Some(facts) = self.facts() else {
                let walk = self.tx.walk_up_head(id)?;
                return Ok(walk.into_iter().map(|(id, spec, _)| (id, spec)).collect());
            };
            if let Some(known) = facts.walk(self.head, id) {
                return Ok(known);
            }
            let walk = self.tx.walk_up_head(id)?;
            facts.keep_walk(self.head, &walk);
            return Ok(walk.into_iter().map(|(id, spec, _)| (id, spec)).collect());
        }
        let mut out: Vec<(String, Option<String>)> = vec![(id.to_owned(), None)];
        let mut i = 0;
        while i < out.len() {
            let current = out[i].0.clone();
            if let Some(row) = self.chunk_row(&current)? {
                out[i].1 = Some(row.spec);
                for p in parse_placements(&row.placements) {
                    if p.kind == PlacementType::Instance
                        && !out.iter().any(|(seen, _)| *seen == p.scope)
                    {
                        out.push((p.scope, None));
                    }
                }
            }
            i += 1;
        }
        Ok(out)
    }

    /// Whether `id` has an instance chain up to any of `roots` (or is one).
    pub fn reaches_any(&self, id: &str, roots: &[String]) -> Result<bool> {
        if roots.iter().any(|r| r == id) {
            return Ok(true);
        }
        Ok(self
            .instance_ancestors(id)?
            .iter()
            .any(|a| roots.contains(a)))
    }

    /// The rules in force on scope `id`: its own spec (unless a template)
    /// folded with every template up its instance chains.
    pub fn composed_spec(&self, id: &str) -> Result<ComposedSpec> {
        Ok(compose(id, &self.walk_up(id)?))
    }

    /// How many chunks are placed on `id` (either type, each counted once).
    pub fn member_count(&self, id: &str) -> Result<u64> {
        let Some(facts) = self.facts() else {
            return self.tx.member_count(self.at, id);
        };
        if let Some(known) = facts.count(self.head, id) {
            return Ok(known);
        }
        let found = self.tx.member_count(self.at, id)?;
        facts.keep_count(self.head, id, found);
        Ok(found)
    }

    /// Full items for `ids`, in the order given, skipping ids that do not
    /// exist in this view.
    pub(crate) fn items(&self, ids: &[String], with_body: bool) -> Result<Vec<Arc<ChunkItem>>> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let found = self.vids_of(ids)?;
        let vids: Vec<i64> = ids.iter().filter_map(|id| found.get(id).copied()).collect();
        self.versions(&vids, with_body)
    }

    /// The live versions of `ids` (those that exist).
    fn vids_of(&self, ids: &[String]) -> Result<HashMap<String, i64>> {
        let Some(facts) = self.facts() else {
            return Ok(self.tx.vids_by_id(self.at, ids)?.into_iter().collect());
        };
        let mut found = HashMap::new();
        let mut asked = Vec::new();
        for id in ids {
            match facts.vid(self.head, id) {
                Some(Some(vid)) => {
                    found.insert(id.clone(), vid);
                }
                Some(None) => {}
                None => asked.push(id.clone()),
            }
        }
        if asked.is_empty() {
            return Ok(found);
        }
        let read: HashMap<String, i64> = self.tx.vids_by_id(self.at, &asked)?.into_iter().collect();
        for id in &asked {
            let vid = read.get(id).copied();
            facts.keep_vid(self.head, id, vid);
            if let Some(vid) = vid {
                found.insert(id.clone(), vid);
            }
        }
        Ok(found)
    }

    /// Full items for the chunks with these keys, in the order given,
    /// skipping keys with no version in this view.
    pub(crate) fn items_by_key(
        &self,
        keys: &[i64],
        with_body: bool,
    ) -> Result<Vec<Arc<ChunkItem>>> {
        if keys.is_empty() {
            return Ok(Vec::new());
        }
        let found: HashMap<i64, i64> = self.tx.vids_by_key(self.at, keys)?.into_iter().collect();
        let vids: Vec<i64> = keys.iter().filter_map(|k| found.get(k).copied()).collect();
        self.versions(&vids, with_body)
    }

    /// The items of these chunk versions, in order: from the version cache,
    /// the rest read in one statement and remembered.
    pub(crate) fn versions(&self, vids: &[i64], with_body: bool) -> Result<Vec<Arc<ChunkItem>>> {
        let mut out = match self.cache {
            Some(cache) => cache.get_many(vids),
            None => vec![None; vids.len()],
        };
        let missing: Vec<i64> = vids
            .iter()
            .zip(&out)
            .filter(|(_, hit)| hit.is_none())
            .map(|(vid, _)| *vid)
            .collect();
        if !missing.is_empty() {
            let loaded: Vec<(i64, Arc<ChunkItem>)> = self
                .tx
                .versions(&missing)?
                .into_iter()
                .map(|(vid, item)| (vid, Arc::new(item)))
                .collect();
            if let Some(cache) = self.cache {
                cache.insert_many(&loaded);
            }
            let by_vid: HashMap<i64, Arc<ChunkItem>> = loaded.into_iter().collect();
            for (slot, vid) in out.iter_mut().zip(vids) {
                if slot.is_none() {
                    *slot = by_vid.get(vid).cloned();
                }
            }
        }
        Ok(out
            .into_iter()
            .flatten()
            .map(|item| {
                if with_body {
                    item
                } else {
                    Arc::new(without_body(&item))
                }
            })
            .collect())
    }
}

/// The item with its body left out (`include.body: false`).
fn without_body(item: &ChunkItem) -> ChunkItem {
    ChunkItem {
        id: item.id.clone(),
        name: item.name.clone(),
        spec: item.spec.clone(),
        body: None,
        placements: item.placements.clone(),
    }
}

/// A `ChunkItem` from columns `id, name, spec, body, placements` from `at`.
pub(crate) fn item_from_columns(r: &Row<'_>, at: usize) -> rusqlite::Result<ChunkItem> {
    Ok(ChunkItem {
        id: r.get(at)?,
        name: r.get(at + 1)?,
        spec: Json::from_text_unchecked(r.get(at + 2)?),
        body: r
            .get::<_, Option<String>>(at + 3)?
            .map(Json::from_text_unchecked),
        placements: parse_placements(r.get_ref(at + 4)?.as_str()?),
    })
}

/// The composed spec of `id` from its walk up instance chains (each chunk
/// with its spec text, `id` first).
pub(crate) fn compose(id: &str, walk: &[(String, Option<String>)]) -> ComposedSpec {
    let mut own = Spec::default();
    let mut ancestors = Vec::with_capacity(walk.len());
    for (chunk, text) in walk {
        let Some(text) = text else { continue };
        let value: serde_json::Value = serde_json::from_str(text).unwrap_or_default();
        // Stored specs were checked when written; a malformed one binds nothing.
        let spec = Spec::parse(chunk, &value).unwrap_or_default();
        if chunk == id {
            own = spec;
        } else {
            ancestors.push(spec);
        }
    }
    ComposedSpec::fold(&own, &ancestors)
}

/// Test support: every statement run through [`rows`] on this thread.
#[cfg(test)]
pub(crate) mod plans {
    use std::cell::RefCell;
    use std::collections::BTreeSet;

    thread_local! {
        static SEEN: RefCell<BTreeSet<String>> = const { RefCell::new(BTreeSet::new()) };
    }

    pub(crate) fn record(sql: &str) {
        SEEN.with(|s| s.borrow_mut().insert(sql.to_owned()));
    }

    pub(crate) fn take() -> BTreeSet<String> {
        SEEN.with(|s| std::mem::take(&mut *s.borrow_mut()))
    }
}
