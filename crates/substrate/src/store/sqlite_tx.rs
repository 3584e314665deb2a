//! [`Tx`] on SQLite: each statement of a view, on a `rusqlite`
//! connection (a pooled reader's transaction, or the writer's).

use super::copy::{RawChunk, RawCommit, RawPlacement};
use super::snapshot::{At, ChunkRow, item_from_columns, kind_from, row, rows};
use super::tx::{
    EndedPlacement, MemberRow, NewPlacementRow, Tx, VersionRow, VersionText, WalkNode, kind_clause,
};
use crate::error::Result;
use crate::types::{ChunkItem, Commit, Placement, TypeFilter};
use rusqlite::Connection;
use rusqlite::types::Value as SqlValue;
use std::rc::Rc;

/// A list of values as an `rarray` parameter.
fn array<T: Clone>(values: &[T], f: impl Fn(T) -> SqlValue) -> Rc<Vec<SqlValue>> {
    Rc::new(values.iter().cloned().map(f).collect())
}

impl Tx for Connection {
    fn now_ms(&self) -> Result<i64> {
        Ok(std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as i64))
    }

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

    fn walk_up_head(&self, id: &str) -> Result<Vec<WalkNode>> {
        // The placements table is current inside a write transaction,
        // before the versions' placement columns are brought up to date.
        // (each chunk's scopes joined by a unit separator, which no id holds)
        let sql = "WITH RECURSIVE up(id) AS (SELECT ?1 UNION \
               SELECT p.scope FROM up JOIN placements p INDEXED BY placements_head \
               ON p.chunk = up.id WHERE p.kind = 0 AND p.ended IS NULL) \
             SELECT up.id, (SELECT c.spec FROM chunks c INDEXED BY chunks_by_id \
               WHERE c.id = up.id AND c.ended IS NULL), \
             (SELECT group_concat(p.scope, char(31) ORDER BY p.scope) \
               FROM placements p INDEXED BY placements_head \
               WHERE p.chunk = up.id AND p.kind = 0 AND p.ended IS NULL) FROM up";
        rows(self, sql, &[&id], At::Head, |r| {
            let ups: Option<String> = r.get(2)?;
            let ups = ups
                .map(|u| u.split('\u{1f}').map(str::to_owned).collect())
                .unwrap_or_default();
            Ok((r.get(0)?, r.get(1)?, ups))
        })
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

    fn members_with_vids(&self, at: At, scope: &str, kind: TypeFilter) -> Result<Vec<VersionRow>> {
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

    fn text_matches(&self, query: &super::words::Query) -> Result<Vec<i64>> {
        let Some(asked) = query.fts5() else {
            return Ok(Vec::new());
        };
        // The index holds current text only: every hit is a live chunk's key.
        let sql = "SELECT rowid FROM chunk_text WHERE chunk_text MATCH ?1";
        rows(self, sql, &[&asked], At::Head, |r| r.get(0))
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

    fn next_vid(&self) -> Result<i64> {
        Ok(row(
            self,
            "SELECT coalesce(max(vid), 0) + 1 FROM chunks",
            &[],
            At::Head,
            |r| r.get(0),
        )?
        .unwrap_or(1))
    }

    fn end_placement(
        &self,
        chunk: &str,
        scope: &str,
        kind: i64,
        n: i64,
    ) -> Result<Option<Option<i64>>> {
        row(
            self,
            "UPDATE placements INDEXED BY placements_head SET ended = ?4 WHERE chunk = ?1 \
             AND scope = ?2 AND kind = ?3 AND ended IS NULL RETURNING seq",
            &[&chunk, &scope, &kind, &n],
            At::Head,
            |r| r.get::<_, Option<i64>>(0),
        )
    }

    fn end_chunk(&self, id: &str, n: i64) -> Result<Option<i64>> {
        row(
            self,
            "UPDATE chunks INDEXED BY chunks_by_id SET ended = ?2 WHERE id = ?1 AND ended IS NULL \
             RETURNING key",
            &[&id, &n],
            At::Head,
            |r| r.get::<_, i64>(0),
        )
    }

    fn end_placements_touching(&self, id: &str, n: i64) -> Result<Vec<EndedPlacement>> {
        rows(
            self,
            "UPDATE placements SET ended = ?2 WHERE (chunk = ?1 OR scope = ?1) AND ended IS NULL \
             RETURNING chunk, scope, kind, seq",
            &[&id, &n],
            At::Head,
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
        )
    }

    fn rewrite_version(&self, vid: i64, v: &VersionText<'_>) -> Result<()> {
        self.prepare_cached(
            "UPDATE chunks SET name = ?2, spec = ?3, body = ?4, placements = ?5 WHERE vid = ?1",
        )?
        .execute(rusqlite::params![vid, v.name, v.spec, v.body, v.placements])?;
        Ok(())
    }

    fn end_version(&self, vid: i64, n: i64) -> Result<()> {
        self.prepare_cached("UPDATE chunks SET ended = ?2 WHERE vid = ?1")?
            .execute([vid, n])?;
        Ok(())
    }

    fn insert_version(
        &self,
        vid: i64,
        id: &str,
        key: i64,
        v: &VersionText<'_>,
        n: i64,
    ) -> Result<()> {
        self.prepare_cached(
            "INSERT INTO chunks (vid, id, key, name, spec, body, placements, began) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
        )?
        .execute(rusqlite::params![
            vid,
            id,
            key,
            v.name,
            v.spec,
            v.body,
            v.placements,
            n
        ])?;
        Ok(())
    }

    fn text_changed(&self, key: i64, _now: Option<&VersionText<'_>>) -> Result<()> {
        super::text::queue(self, key)
    }

    fn live_placements(&self, chunk: &str) -> Result<Vec<Placement>> {
        rows(
            self,
            "SELECT scope, kind, seq FROM placements INDEXED BY placements_head \
             WHERE chunk = ?1 AND ended IS NULL ORDER BY began, pos",
            &[&chunk],
            At::Head,
            |r| {
                Ok(Placement {
                    scope: r.get(0)?,
                    kind: kind_from(r.get(1)?),
                    seq: r.get(2)?,
                })
            },
        )
    }

    fn placement_seq(&self, chunk: &str, scope: &str, kind: i64) -> Result<Option<Option<i64>>> {
        row(
            self,
            "SELECT seq FROM placements INDEXED BY placements_head WHERE chunk = ?1 AND scope = ?2 \
             AND kind = ?3 AND ended IS NULL",
            &[&chunk, &scope, &kind],
            At::Head,
            |r| r.get::<_, Option<i64>>(0),
        )
    }

    fn insert_placement(&self, p: &NewPlacementRow<'_>) -> Result<i64> {
        self.prepare_cached(
            "INSERT INTO placements (chunk, ckey, scope, kind, seq, began, pos) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
        )?
        .execute(rusqlite::params![
            p.chunk, p.ckey, p.scope, p.kind, p.seq, p.began, p.pos
        ])?;
        Ok(self.last_insert_rowid())
    }

    fn seq_holders(&self, scope: &str, seq: i64, except: i64) -> Result<Vec<String>> {
        rows(
            self,
            "SELECT chunk FROM placements INDEXED BY placements_by_scope WHERE scope = ?1 \
             AND seq = ?2 AND ended IS NULL AND rid != ?3",
            &[&scope, &seq, &except],
            At::Head,
            |r| r.get::<_, String>(0),
        )
    }

    fn max_seq(&self, scope: &str) -> Result<Option<i64>> {
        row(
            self,
            "SELECT seq FROM placements INDEXED BY placements_by_scope WHERE scope = ?1 \
             AND ended IS NULL AND seq IS NOT NULL ORDER BY seq DESC LIMIT 1",
            &[&scope],
            At::Head,
            |r| r.get::<_, i64>(0),
        )
    }

    fn set_seq(&self, rid: i64, seq: i64) -> Result<()> {
        self.prepare_cached("UPDATE placements SET seq = ?2 WHERE rid = ?1")?
            .execute([rid, seq])?;
        Ok(())
    }

    fn instance_scopes(&self, chunk: &str) -> Result<Vec<String>> {
        rows(
            self,
            "SELECT scope FROM placements INDEXED BY placements_head WHERE chunk = ?1 \
             AND kind = 0 AND ended IS NULL",
            &[&chunk],
            At::Head,
            |r| r.get::<_, String>(0),
        )
    }

    fn unique_clash(
        &self,
        scope: &str,
        chunk: &str,
        field: &str,
        value: &serde_json::Value,
    ) -> Result<Option<String>> {
        // a JSON path naming one object key, quoted so any key works
        let path = format!("$.{}", serde_json::Value::String(field.to_owned()));
        row(
            self,
            "SELECT p.chunk FROM placements p INDEXED BY placements_by_scope \
             WHERE p.scope = ?1 AND p.kind = 0 AND p.ended IS NULL AND p.chunk != ?2 \
             AND (SELECT c.body -> ?3 FROM chunks c WHERE c.id = p.chunk AND c.ended IS NULL) \
             = json(?4) LIMIT 1",
            &[&scope, &chunk, &path, &value.to_string()],
            At::Head,
            |r| r.get::<_, String>(0),
        )
    }

    fn scopes_of(&self, chunk: &str) -> Result<Vec<String>> {
        rows(
            self,
            "SELECT scope FROM placements INDEXED BY placements_head WHERE chunk = ?1 \
             AND ended IS NULL",
            &[&chunk],
            At::Head,
            |r| r.get::<_, String>(0),
        )
    }

    fn insert_commit(&self, commit: &Commit, record: &str) -> Result<()> {
        self.prepare_cached(
            "INSERT INTO commits (id, parent_id, timestamp, dispatch_id, record) \
             VALUES (?1, ?2, ?3, ?4, ?5)",
        )?
        .execute(rusqlite::params![
            commit.id as i64,
            commit.parent_id.map(|p| p as i64),
            commit.timestamp,
            commit.dispatch_id,
            record
        ])?;
        Ok(())
    }

    fn raw_commits(&self, after: i64, limit: i64) -> Result<Vec<RawCommit>> {
        rows(
            self,
            "SELECT id, parent_id, branch, timestamp, dispatch_id, record FROM commits \
             WHERE id > ?1 ORDER BY id LIMIT ?2",
            &[&after, &limit],
            At::Head,
            |r| {
                Ok(RawCommit {
                    id: r.get(0)?,
                    parent_id: r.get(1)?,
                    branch: r.get(2)?,
                    timestamp: r.get(3)?,
                    dispatch_id: r.get(4)?,
                    record: r.get(5)?,
                })
            },
        )
    }

    fn raw_chunks(&self, after: i64, limit: i64) -> Result<Vec<RawChunk>> {
        rows(
            self,
            "SELECT vid, id, key, name, spec, body, placements, began, ended FROM chunks \
             WHERE vid > ?1 ORDER BY vid LIMIT ?2",
            &[&after, &limit],
            At::Head,
            |r| {
                Ok(RawChunk {
                    vid: r.get(0)?,
                    id: r.get(1)?,
                    key: r.get(2)?,
                    name: r.get(3)?,
                    spec: r.get(4)?,
                    body: r.get(5)?,
                    placements: r.get(6)?,
                    began: r.get(7)?,
                    ended: r.get(8)?,
                })
            },
        )
    }

    fn raw_placements(&self, after: i64, limit: i64) -> Result<Vec<RawPlacement>> {
        rows(
            self,
            "SELECT rid, chunk, ckey, scope, kind, seq, began, pos, ended FROM placements \
             WHERE rid > ?1 ORDER BY rid LIMIT ?2",
            &[&after, &limit],
            At::Head,
            |r| {
                Ok(RawPlacement {
                    rid: r.get(0)?,
                    chunk: r.get(1)?,
                    ckey: r.get(2)?,
                    scope: r.get(3)?,
                    kind: r.get(4)?,
                    seq: r.get(5)?,
                    began: r.get(6)?,
                    pos: r.get(7)?,
                    ended: r.get(8)?,
                })
            },
        )
    }

    fn load_commit(&self, c: &RawCommit) -> Result<()> {
        self.prepare_cached(
            "INSERT INTO commits (id, parent_id, branch, timestamp, dispatch_id, record) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        )?
        .execute(rusqlite::params![
            c.id,
            c.parent_id,
            c.branch,
            c.timestamp,
            c.dispatch_id,
            c.record
        ])?;
        Ok(())
    }

    fn load_chunk(&self, c: &RawChunk) -> Result<()> {
        self.prepare_cached(
            "INSERT INTO chunks (vid, id, key, name, spec, body, placements, began, ended) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
        )?
        .execute(rusqlite::params![
            c.vid,
            c.id,
            c.key,
            c.name,
            c.spec,
            c.body,
            c.placements,
            c.began,
            c.ended
        ])?;
        Ok(())
    }

    fn load_placement(&self, p: &RawPlacement) -> Result<()> {
        self.prepare_cached(
            "INSERT INTO placements (rid, chunk, ckey, scope, kind, seq, began, pos, ended) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
        )?
        .execute(rusqlite::params![
            p.rid, p.chunk, p.ckey, p.scope, p.kind, p.seq, p.began, p.pos, p.ended
        ])?;
        Ok(())
    }

    fn records_between(&self, after: i64, upto: i64) -> Result<Vec<String>> {
        rows(
            self,
            "SELECT record FROM commits WHERE id > ?1 AND id <= ?2 ORDER BY id",
            &[&after, &upto],
            At::Head,
            |r| r.get::<_, String>(0),
        )
    }
}
