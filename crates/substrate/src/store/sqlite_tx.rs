//! [`Tx`] on SQLite: each statement of a view, on a `rusqlite`
//! connection (a pooled reader's transaction, or the writer's).

use super::snapshot::{At, ChunkRow, item_from_columns, row, rows};
use super::tx::{MemberRow, Tx, VersionRow};
use crate::error::Result;
use crate::types::{ChunkItem, TypeFilter};
use rusqlite::Connection;
use rusqlite::types::Value as SqlValue;
use std::rc::Rc;

/// A list of values as an `rarray` parameter.
fn array<T: Clone>(values: &[T], f: impl Fn(T) -> SqlValue) -> Rc<Vec<SqlValue>> {
    Rc::new(values.iter().cloned().map(f).collect())
}

/// The SQL that keeps only the placement type a read asks for (the type
/// is in the scope index, so rows of the other type never reach the join).
fn kind_clause(kind: TypeFilter) -> &'static str {
    match kind {
        TypeFilter::Both => "",
        TypeFilter::Instance => " AND p.kind = 0",
        TypeFilter::Relates => " AND p.kind = 1",
    }
}

impl Tx for Connection {
    fn head(&self) -> Result<i64> {
        Ok(row(
            self,
            "SELECT coalesce(max(id), 0) FROM commits",
            &[],
            At::Head,
            |r| r.get(0),
        )?
        .unwrap_or(0))
    }

    fn chunk_row(&self, at: At, id: &str) -> Result<Option<ChunkRow>> {
        let sql = format!(
            "SELECT vid, key, name, spec, body, placements, began FROM {} WHERE c.id = ?1 AND {}",
            at.chunks(),
            at.live("c")
        );
        row(self, &sql, &[&id], at, |r| {
            Ok(ChunkRow {
                vid: r.get(0)?,
                key: r.get(1)?,
                name: r.get(2)?,
                spec: r.get(3)?,
                body: r.get(4)?,
                placements: r.get(5)?,
                began: r.get::<_, i64>(6)? as crate::types::CommitId,
            })
        })
    }

    fn exists(&self, at: At, id: &str) -> Result<bool> {
        let sql = format!(
            "SELECT 1 FROM chunks c WHERE c.id = ?1 AND {}",
            at.live("c")
        );
        Ok(row(self, &sql, &[&id], at, |_| Ok(()))?.is_some())
    }

    fn is_instance_head(&self, chunk: &str, scope: &str) -> Result<bool> {
        let sql = "SELECT 1 FROM placements p INDEXED BY placements_head \
                   WHERE p.chunk = ?1 AND p.scope = ?2 AND p.kind = 0 AND p.ended IS NULL";
        Ok(row(self, sql, &[&chunk, &scope], At::Head, |_| Ok(()))?.is_some())
    }

    fn walk_up_head(&self, id: &str) -> Result<Vec<(String, Option<String>)>> {
        // The placements table is current inside a write transaction,
        // before the versions' placement columns are brought up to date.
        let sql = "WITH RECURSIVE up(id) AS (SELECT ?1 UNION \
               SELECT p.scope FROM up JOIN placements p INDEXED BY placements_head \
               ON p.chunk = up.id WHERE p.kind = 0 AND p.ended IS NULL) \
             SELECT up.id, (SELECT c.spec FROM chunks c INDEXED BY chunks_by_id \
               WHERE c.id = up.id AND c.ended IS NULL) FROM up";
        rows(self, sql, &[&id], At::Head, |r| Ok((r.get(0)?, r.get(1)?)))
    }

    fn member_count(&self, at: At, scope: &str) -> Result<u64> {
        if let At::Head = at {
            let sql = "SELECT members FROM scope_counts WHERE scope = ?1";
            return Ok(row(self, sql, &[&scope], at, |r| r.get::<_, i64>(0))?
                .unwrap_or(0)
                .max(0) as u64);
        }
        let sql = format!(
            "SELECT count(DISTINCT p.ckey) FROM {} WHERE p.scope = ?1 AND {}",
            at.by_scope(),
            at.live("p")
        );
        Ok(row(self, &sql, &[&scope], at, |r| r.get::<_, i64>(0))?.unwrap_or(0) as u64)
    }

    fn vids_by_id(&self, at: At, ids: &[String]) -> Result<Vec<(String, i64)>> {
        let sql = format!(
            "SELECT c.id, c.vid FROM rarray(?1) a CROSS JOIN {} ON c.id = a.value WHERE {}",
            at.chunks(),
            at.live("c")
        );
        let ids = array(ids, SqlValue::Text);
        rows(self, &sql, &[&ids], at, |r| Ok((r.get(0)?, r.get(1)?)))
    }

    fn vids_by_key(&self, at: At, keys: &[i64]) -> Result<Vec<(i64, i64)>> {
        let sql = format!(
            "SELECT c.key, c.vid FROM rarray(?1) a CROSS JOIN chunks c INDEXED BY chunks_by_key \
             ON c.key = a.value WHERE {}",
            at.live("c")
        );
        let keys = array(keys, SqlValue::Integer);
        rows(self, &sql, &[&keys], at, |r| Ok((r.get(0)?, r.get(1)?)))
    }

    fn versions(&self, vids: &[i64]) -> Result<Vec<(i64, ChunkItem)>> {
        let vids = array(vids, SqlValue::Integer);
        rows(
            self,
            "SELECT c.vid, c.id, c.name, c.spec, c.body, c.placements FROM rarray(?1) a \
             CROSS JOIN chunks c ON c.vid = a.value",
            &[&vids],
            At::Head,
            |r| Ok((r.get::<_, i64>(0)?, item_from_columns(r, 1)?)),
        )
    }

    fn members_in_order(
        &self,
        at: At,
        scope: &str,
        kind: TypeFilter,
    ) -> Result<Vec<(i64, bool, i64)>> {
        let sql = format!(
            "SELECT p.kind, p.seq IS NULL, c.vid \
             FROM {} CROSS JOIN chunks c INDEXED BY chunks_by_key ON c.key = p.ckey AND {} \
             WHERE p.scope = ?1 AND {}{} ORDER BY p.seq, p.began, p.pos",
            at.by_scope(),
            at.live("c"),
            at.live("p"),
            kind_clause(kind)
        );
        rows(self, &sql, &[&scope], at, |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?))
        })
    }

    fn members_with_vids(
        &self,
        at: At,
        scope: &str,
        kind: TypeFilter,
    ) -> Result<Vec<VersionRow>> {
        let sql = format!(
            "SELECT p.kind, p.seq, p.began, p.pos, c.vid \
             FROM {} CROSS JOIN chunks c INDEXED BY chunks_by_key ON c.key = p.ckey AND {} \
             WHERE p.scope = ?1 AND {}{}",
            at.by_scope(),
            at.live("c"),
            at.live("p"),
            kind_clause(kind)
        );
        rows(self, &sql, &[&scope], at, |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
        })
    }

    fn member_rows(&self, at: At, scope: &str, kind: TypeFilter) -> Result<Vec<MemberRow>> {
        let sql = format!(
            "SELECT p.ckey, p.kind, p.seq, p.began, p.pos FROM {} WHERE p.scope = ?1 AND {}{}",
            at.by_scope(),
            at.live("p"),
            kind_clause(kind)
        );
        rows(self, &sql, &[&scope], at, |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
        })
    }

    fn member_keys(&self, at: At, scope: &str) -> Result<Vec<(i64, i64)>> {
        let sql = format!(
            "SELECT p.ckey, p.kind FROM {} WHERE p.scope = ?1 AND {}",
            at.by_scope(),
            at.live("p")
        );
        rows(self, &sql, &[&scope], at, |r| Ok((r.get(0)?, r.get(1)?)))
    }

    fn live_keys_page(&self, at: At, after: i64, limit: i64) -> Result<Vec<i64>> {
        let table = match at {
            At::Head => "chunks c INDEXED BY chunks_by_key",
            At::Commit(_) => "chunks c",
        };
        let sql = format!(
            "SELECT c.key FROM {table} WHERE {} AND c.key > ?1 ORDER BY c.key LIMIT ?2",
            at.live("c")
        );
        rows(self, &sql, &[&after, &limit], at, |r| r.get(0))
    }

    fn live_count(&self, at: At) -> Result<u64> {
        let sql = format!("SELECT count(*) FROM chunks c WHERE {}", at.live("c"));
        Ok(row(self, &sql, &[], at, |r| r.get::<_, i64>(0))?.unwrap_or(0) as u64)
    }

    fn live_keys(&self, at: At) -> Result<Vec<i64>> {
        let sql = format!("SELECT c.key FROM chunks c WHERE {}", at.live("c"));
        rows(self, &sql, &[], at, |r| r.get(0))
    }

    fn text_behind(&self) -> Result<bool> {
        super::text::behind(self)
    }

    fn index_text(&self) -> Result<()> {
        super::text::index_all(self)
    }

    fn text_matches(&self, query: &str) -> Result<Vec<i64>> {
        // The index holds current text only: every hit is a live chunk's key.
        let sql = "SELECT rowid FROM chunk_text WHERE chunk_text MATCH ?1";
        rows(self, sql, &[&query], At::Head, |r| r.get(0))
    }

    fn commit_records(&self, newest: i64, before: i64, limit: i64) -> Result<Vec<(i64, String)>> {
        rows(
            self,
            "SELECT id, record FROM commits WHERE id <= ?1 AND id < ?2 ORDER BY id DESC LIMIT ?3",
            &[&newest, &before, &limit],
            At::Head,
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
    }
}
