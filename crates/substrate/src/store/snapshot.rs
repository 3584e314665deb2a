//! [`Snapshot`]: one consistent view of the substrate — at head, or as it
//! stood after an earlier commit — and the state queries every other part
//! (reads, commit validation, the engine's boundary checks) is built from.

use crate::error::{Error, Result};
use crate::json::Json;
use crate::spec::{ComposedSpec, Spec};
use crate::types::{ChunkItem, CommitId, Placement, PlacementType};
use rusqlite::types::{ToSql, Value as SqlValue};
use rusqlite::{Connection, Row};
use std::collections::HashMap;
use std::rc::Rc;

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
        match self {
            At::Head => "placements p INDEXED BY placements_members",
            At::Commit(_) => "placements p INDEXED BY placements_members_history",
        }
    }

    /// `placements p`, pinned to the index that serves lookups by chunk.
    pub(crate) fn by_chunk(self) -> &'static str {
        match self {
            At::Head => "placements p INDEXED BY placements_head",
            At::Commit(_) => "placements p INDEXED BY placements_chunk_history",
        }
    }

    /// The SQL predicate selecting live rows of the table aliased `alias`.
    pub(crate) fn live(self, alias: &str) -> String {
        match self {
            At::Head => format!("{alias}.ended IS NULL"),
            At::Commit(_) => {
                format!("{alias}.began <= ?{AT_PARAM} AND ({alias}.ended IS NULL OR {alias}.ended > ?{AT_PARAM})")
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

/// A list of ids as an `rarray` parameter.
pub(crate) fn id_array(ids: &[String]) -> Rc<Vec<SqlValue>> {
    Rc::new(ids.iter().map(|s| SqlValue::Text(s.clone())).collect())
}

/// A chunk's stored version.
pub(crate) struct ChunkRow {
    pub vid: i64,
    pub name: Option<String>,
    pub spec: String,
    pub body: String,
    pub created: CommitId,
    pub began: CommitId,
}

/// A consistent view of the substrate: at head inside a read or write
/// transaction, or as of an earlier commit.
///
/// The engine judges boundaries with it (`Substrate::read`,
/// `Substrate::commit_with`), so its checks and the read or write they
/// guard see the same state.
pub struct Snapshot<'c> {
    pub(crate) conn: &'c Connection,
    pub(crate) at: At,
    pub(crate) head: CommitId,
}

impl<'c> Snapshot<'c> {
    /// The commit this view reflects (0 on an empty substrate).
    pub fn commit_id(&self) -> CommitId {
        match self.at {
            At::Head => self.head,
            At::Commit(n) => n,
        }
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
            conn: self.conn,
            at,
            head: self.head,
        })
    }

    pub(crate) fn chunk_row(&self, id: &str) -> Result<Option<ChunkRow>> {
        let sql = format!(
            "SELECT vid, name, spec, body, created, began FROM chunks c WHERE c.id = ?1 AND {}",
            self.at.live("c")
        );
        row(self.conn, &sql, &[&id], self.at, |r| {
            Ok(ChunkRow {
                vid: r.get(0)?,
                name: r.get(1)?,
                spec: r.get(2)?,
                body: r.get(3)?,
                created: r.get::<_, i64>(4)? as CommitId,
                began: r.get::<_, i64>(5)? as CommitId,
            })
        })
    }

    /// Whether the chunk `id` exists in this view.
    pub fn exists(&self, id: &str) -> Result<bool> {
        let sql = format!(
            "SELECT 1 FROM chunks c WHERE c.id = ?1 AND {}",
            self.at.live("c")
        );
        Ok(row(self.conn, &sql, &[&id], self.at, |_| Ok(()))?.is_some())
    }

    /// The chunk `id` with all its placements, or `None`.
    pub fn chunk(&self, id: &str) -> Result<Option<ChunkItem>> {
        Ok(self.items(&[id.to_owned()], true)?.pop())
    }

    /// The parsed body of chunk `id` (`None` when it does not exist).
    pub fn body(&self, id: &str) -> Result<Option<serde_json::Value>> {
        Ok(self
            .chunk_row(id)?
            .map(|r| serde_json::from_str(&r.body).unwrap_or(serde_json::Value::Null)))
    }

    /// The chunk's own placements, in the order they were made.
    pub fn placements_of(&self, id: &str) -> Result<Vec<Placement>> {
        let sql = format!(
            "SELECT scope, kind, seq FROM {} WHERE p.chunk = ?1 AND {} ORDER BY p.began, p.pos",
            self.at.by_chunk(),
            self.at.live("p")
        );
        rows(self.conn, &sql, &[&id], self.at, |r| {
            Ok(Placement {
                scope: r.get(0)?,
                kind: kind_from(r.get(1)?),
                seq: r.get(2)?,
            })
        })
    }

    /// Whether `chunk` is placed instance directly on `scope`.
    pub fn is_instance_of(&self, chunk: &str, scope: &str) -> Result<bool> {
        let sql = format!(
            "SELECT 1 FROM {} WHERE p.chunk = ?1 AND p.scope = ?2 AND p.kind = 0 AND {}",
            self.at.by_chunk(),
            self.at.live("p")
        );
        Ok(row(self.conn, &sql, &[&chunk, &scope], self.at, |_| Ok(()))?.is_some())
    }

    /// Every chunk `id` reaches up instance chains (`id` → a scope it is an
    /// instance of → …), `id` itself first. Cycles are harmless.
    pub fn instance_ancestors(&self, id: &str) -> Result<Vec<String>> {
        let sql = format!(
            "WITH RECURSIVE up(id) AS (SELECT ?1 UNION \
               SELECT p.scope FROM up JOIN {} ON p.chunk = up.id \
               WHERE p.kind = 0 AND {}) SELECT id FROM up",
            self.at.by_chunk(),
            self.at.live("p")
        );
        rows(self.conn, &sql, &[&id], self.at, |r| r.get(0))
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
        let sql = format!(
            "WITH RECURSIVE up(id) AS (SELECT ?1 UNION \
               SELECT p.scope FROM up JOIN {} ON p.chunk = up.id \
               WHERE p.kind = 0 AND {}) \
             SELECT up.id, (SELECT c.spec FROM chunks c WHERE c.id = up.id AND {}) FROM up",
            self.at.by_chunk(),
            self.at.live("p"),
            self.at.live("c")
        );
        let specs = rows(self.conn, &sql, &[&id], self.at, |r| {
            Ok((r.get::<_, String>(0)?, r.get::<_, Option<String>>(1)?))
        })?;
        let mut own = Spec::default();
        let mut ancestors = Vec::with_capacity(specs.len());
        for (chunk, text) in specs {
            let Some(text) = text else { continue };
            let value: serde_json::Value = serde_json::from_str(&text).unwrap_or_default();
            // Stored specs were checked when written; a malformed one binds nothing.
            let spec = Spec::parse(&chunk, &value).unwrap_or_default();
            if chunk == id {
                own = spec;
            } else {
                ancestors.push(spec);
            }
        }
        Ok(ComposedSpec::fold(&own, &ancestors))
    }

    /// How many chunks are placed on `id` (either type, each counted once).
    pub fn member_count(&self, id: &str) -> Result<u64> {
        let sql = format!(
            "SELECT count(DISTINCT p.chunk) FROM {} WHERE p.scope = ?1 AND {}",
            self.at.by_scope(),
            self.at.live("p")
        );
        Ok(row(self.conn, &sql, &[&id], self.at, |r| r.get::<_, i64>(0))?.unwrap_or(0) as u64)
    }

    /// Full items for `ids`, in the order given, skipping ids that do not
    /// exist in this view.
    pub(crate) fn items(&self, ids: &[String], with_body: bool) -> Result<Vec<ChunkItem>> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let array = id_array(ids);
        let sql = format!(
            "SELECT c.id, c.name, c.spec, {} FROM chunks c WHERE c.id IN rarray(?1) AND {}",
            if with_body { "c.body" } else { "NULL" },
            self.at.live("c")
        );
        let mut found: HashMap<String, ChunkItem> = HashMap::with_capacity(ids.len());
        for item in rows(self.conn, &sql, &[&array], self.at, |r| {
            Ok(ChunkItem {
                id: r.get(0)?,
                name: r.get(1)?,
                spec: Json::from_text_unchecked(r.get(2)?),
                body: r
                    .get::<_, Option<String>>(3)?
                    .map(Json::from_text_unchecked),
                placements: Vec::new(),
            })
        })? {
            found.insert(item.id.clone(), item);
        }
        let sql = format!(
            "SELECT p.chunk, p.scope, p.kind, p.seq, p.began, p.pos FROM {} \
             WHERE p.chunk IN rarray(?1) AND {}",
            self.at.by_chunk(),
            self.at.live("p")
        );
        let mut placed: HashMap<String, Vec<(i64, i64, Placement)>> = HashMap::new();
        rows(self.conn, &sql, &[&array], self.at, |r| {
            let chunk: String = r.get(0)?;
            let placement = Placement {
                scope: r.get(1)?,
                kind: kind_from(r.get(2)?),
                seq: r.get(3)?,
            };
            placed
                .entry(chunk)
                .or_default()
                .push((r.get(4)?, r.get(5)?, placement));
            Ok(())
        })?;
        let mut out = Vec::with_capacity(ids.len());
        for id in ids {
            if let Some(mut item) = found.remove(id) {
                if let Some(mut list) = placed.remove(id) {
                    list.sort_by_key(|(began, pos, _)| (*began, *pos));
                    item.placements = list.into_iter().map(|(_, _, p)| p).collect();
                }
                out.push(item);
            }
        }
        Ok(out)
    }
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
