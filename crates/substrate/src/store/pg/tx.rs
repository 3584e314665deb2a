//! [`Tx`] on PostgreSQL: the same statements as SQLite's (`sqlite_tx.rs`),
//! on one transaction, each waited for on the caller's thread. Orders
//! SQLite gives by its indexes are asked for explicitly (`ORDER BY`, ids
//! in bytewise order), so both answer alike.

use super::pipe::{Owned, Params, Pipe, owned};
use crate::error::Result;
use crate::json::Json;
use crate::store::copy::{RawChunk, RawCommit, RawPlacement};
use crate::store::snapshot::{At, ChunkRow, kind_from, parse_placements};
use crate::store::tx::{
    EndedPlacement, MemberRow, NewPlacementRow, Tx, VersionRow, VersionText, WalkNode, kind_clause,
};
use crate::store::words::{self, Query};
use crate::types::{ChunkItem, Commit, Placement, TypeFilter};
use tokio_postgres::Row;
use tokio_postgres::types::ToSql;

/// One transaction on the server.
pub(crate) struct PgTx<'a> {
    pub pipe: Pipe<'a>,
    /// Where commits are announced (the schema's name).
    pub channel: &'a str,
    /// The write transaction's next version id and placement row id,
    /// read with its head (ids are given here: an insert waits for no
    /// answer, so it goes with the next statement that is waited for).
    pub next: std::cell::Cell<(i64, i64)>,
}

/// The predicate selecting rows of `alias` live in the view; as of a
/// commit it reads parameter `$n`.
fn live(at: At, alias: &str, n: usize) -> String {
    match at {
        At::Head => format!("{alias}.ended IS NULL"),
        At::Commit(_) => {
            format!("{alias}.began <= ${n} AND ({alias}.ended IS NULL OR {alias}.ended > ${n})")
        }
    }
}

/// The `as_of` commit as a parameter (unused at head).
fn at_value(at: At) -> i64 {
    match at {
        At::Head => 0,
        At::Commit(n) => n as i64,
    }
}

impl PgTx<'_> {
    /// `sql`'s rows; each statement is prepared once per connection (a
    /// query by text alone would be parsed again each time: a round trip
    /// more).
    fn rows(&self, sql: &str, params: &Params<'_>) -> Result<Vec<Row>> {
        self.pipe.rows(sql, params)
    }

    fn first(&self, sql: &str, params: &Params<'_>) -> Result<Option<Row>> {
        Ok(self.rows(sql, params)?.into_iter().next())
    }

    /// Queues `sql` (a write no answer is waited for).
    fn run(&self, sql: &str, params: Vec<Owned>) -> Result<()> {
        self.pipe.queue(sql, params)
    }

    /// The head, and the next version and placement row ids, of the write
    /// transaction (read once, under its lock).
    pub fn start_writing(&self) -> Result<i64> {
        let row = self.first(
            "SELECT (SELECT coalesce(max(id), 0) FROM commits)::bigint, \
             (SELECT coalesce(max(vid), 0) + 1 FROM chunks)::bigint, \
             (SELECT coalesce(max(rid), 0) + 1 FROM placements)::bigint",
            &vec![],
        )?;
        let (head, vid, rid) = row.map_or((0, 1, 1), |r| (r.get(0), r.get(1), r.get(2)));
        self.next.set((vid, rid));
        Ok(head)
    }

    /// `sql` with the view's parameter appended when it is as of a commit.
    fn rows_at<'p>(
        &self,
        at: At,
        sql: &str,
        mut params: Params<'p>,
        n: &'p i64,
    ) -> Result<Vec<Row>> {
        let n: &(dyn ToSql + Sync) = n;
        if let At::Commit(_) = at {
            params.push(n);
        }
        self.rows(sql, &params)
    }
}

impl Tx for PgTx<'_> {
    fn now_ms(&self) -> Result<i64> {
        let sql = "SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint";
        let row = self.first(sql, &vec![])?;
        Ok(row.map_or(0, |r| r.get(0)))
    }

    fn head(&self) -> Result<i64> {
        let row = self.first("SELECT coalesce(max(id), 0)::bigint FROM commits", &vec![])?;
        Ok(row.map_or(0, |r| r.get(0)))
    }

    fn chunk_row(&self, at: At, id: &str) -> Result<Option<ChunkRow>> {
        let sql = format!(
            "SELECT vid, key, name, spec, body, placements, began FROM chunks c \
             WHERE c.id = $1 AND {}",
            live(at, "c", 2)
        );
        let n = at_value(at);
        let found = self.rows_at(at, &sql, vec![&id], &n)?;
        Ok(found.into_iter().next().map(|r| ChunkRow {
            vid: r.get(0),
            key: r.get(1),
            name: r.get(2),
            spec: r.get(3),
            body: r.get(4),
            placements: r.get(5),
            began: r.get::<_, i64>(6) as crate::types::CommitId,
        }))
    }

    fn exists(&self, at: At, id: &str) -> Result<bool> {
        let sql = format!(
            "SELECT 1 FROM chunks c WHERE c.id = $1 AND {}",
            live(at, "c", 2)
        );
        let n = at_value(at);
        Ok(!self.rows_at(at, &sql, vec![&id], &n)?.is_empty())
    }

    fn is_instance_head(&self, chunk: &str, scope: &str) -> Result<bool> {
        let found = self.first(
            "SELECT 1 FROM placements p WHERE p.chunk = $1 AND p.scope = $2 AND p.kind = 0 \
             AND p.ended IS NULL",
            &vec![&chunk, &scope],
        )?;
        Ok(found.is_some())
    }

    fn walk_up_head(&self, id: &str) -> Result<Vec<WalkNode>> {
        // every instance edge reachable (pairs repeat no further: cycles
        // end), then breadth first here, each chunk's scopes in bytewise
        // order — the order SQLite's walk gives
        let found = self.rows(
            "WITH RECURSIVE up(chunk, scope) AS ( \
               SELECT chunk, scope FROM placements WHERE chunk = $1 AND kind = 0 AND ended IS NULL \
               UNION SELECT p.chunk, p.scope FROM up CROSS JOIN LATERAL ( \
                 SELECT chunk, scope FROM placements WHERE chunk = up.scope AND kind = 0 \
                   AND ended IS NULL OFFSET 0) p) \
             SELECT chunk, scope, NULL::text FROM up \
             UNION ALL SELECT id, NULL, spec FROM chunks \
               WHERE ended IS NULL AND id = ANY(array_append(ARRAY(SELECT scope FROM up), $1::text))",
            &vec![&id],
        )?;
        let mut edges: Vec<(String, String)> = Vec::new();
        let mut specs: std::collections::HashMap<String, String> = Default::default();
        for r in &found {
            match r.get::<_, Option<String>>(1) {
                Some(scope) => edges.push((r.get(0), scope)),
                None => {
                    specs.insert(r.get(0), r.get::<_, Option<String>>(2).unwrap_or_default());
                }
            }
        }
        // (bytewise, as the ids' collation orders them)
        edges.sort();
        let ups = |chunk: &str| -> Vec<String> {
            edges
                .iter()
                .filter(|(c, _)| c == chunk)
                .map(|(_, s)| s.clone())
                .collect()
        };
        let mut order: Vec<String> = vec![id.to_owned()];
        let mut i = 0;
        while i < order.len() {
            for scope in ups(&order[i]) {
                if !order.contains(&scope) {
                    order.push(scope);
                }
            }
            i += 1;
        }
        Ok(order
            .into_iter()
            .map(|id| {
                let spec = specs.get(&id).cloned();
                let up = ups(&id);
                (id, spec, up)
            })
            .collect())
    }

    fn member_count(&self, at: At, scope: &str) -> Result<u64> {
        let sql = format!(
            "SELECT count(DISTINCT p.ckey) FROM placements p WHERE p.scope = $1 AND {}",
            live(at, "p", 2)
        );
        let n = at_value(at);
        let found = self.rows_at(at, &sql, vec![&scope], &n)?;
        Ok(found.first().map_or(0, |r| r.get::<_, i64>(0)) as u64)
    }

    fn vids_by_id(&self, at: At, ids: &[String]) -> Result<Vec<(String, i64)>> {
        let sql = format!(
            "SELECT c.id, c.vid FROM chunks c WHERE c.id = ANY($1) AND {}",
            live(at, "c", 2)
        );
        let ids = ids.to_vec();
        let n = at_value(at);
        let found = self.rows_at(at, &sql, vec![&ids], &n)?;
        Ok(found.iter().map(|r| (r.get(0), r.get(1))).collect())
    }

    fn vids_by_key(&self, at: At, keys: &[i64]) -> Result<Vec<(i64, i64)>> {
        let sql = format!(
            "SELECT c.key, c.vid FROM chunks c WHERE c.key = ANY($1) AND {}",
            live(at, "c", 2)
        );
        let keys = keys.to_vec();
        let n = at_value(at);
        let found = self.rows_at(at, &sql, vec![&keys], &n)?;
        Ok(found.iter().map(|r| (r.get(0), r.get(1))).collect())
    }

    fn versions(&self, vids: &[i64]) -> Result<Vec<(i64, ChunkItem)>> {
        let vids = vids.to_vec();
        let found = self.rows(
            "SELECT vid, id, name, spec, body, placements FROM chunks WHERE vid = ANY($1)",
            &vec![&vids],
        )?;
        Ok(found
            .iter()
            .map(|r| {
                let item = ChunkItem {
                    id: r.get(1),
                    name: r.get(2),
                    spec: Json::from_text_unchecked(r.get(3)),
                    body: Some(Json::from_text_unchecked(r.get(4))),
                    placements: parse_placements(r.get(5)),
                };
                (r.get(0), item)
            })
            .collect())
    }

    fn members_in_order(
        &self,
        at: At,
        scope: &str,
        kind: TypeFilter,
    ) -> Result<Vec<(i64, bool, i64)>> {
        let sql = format!(
            "SELECT p.kind, p.seq IS NULL, c.vid FROM placements p \
             JOIN chunks c ON c.key = p.ckey AND {} \
             WHERE p.scope = $1 AND {}{} ORDER BY p.seq NULLS FIRST, p.began, p.pos",
            live(at, "c", 2),
            live(at, "p", 2),
            kind_clause(kind)
        );
        let n = at_value(at);
        let found = self.rows_at(at, &sql, vec![&scope], &n)?;
        Ok(found
            .iter()
            .map(|r| (r.get(0), r.get(1), r.get(2)))
            .collect())
    }

    fn members_with_vids(&self, at: At, scope: &str, kind: TypeFilter) -> Result<Vec<VersionRow>> {
        let sql = format!(
            "SELECT p.kind, p.seq, p.began, p.pos, c.vid FROM placements p \
             JOIN chunks c ON c.key = p.ckey AND {} WHERE p.scope = $1 AND {}{}",
            live(at, "c", 2),
            live(at, "p", 2),
            kind_clause(kind)
        );
        let n = at_value(at);
        let found = self.rows_at(at, &sql, vec![&scope], &n)?;
        Ok(found
            .iter()
            .map(|r| (r.get(0), r.get(1), r.get(2), r.get(3), r.get(4)))
            .collect())
    }

    fn member_rows(&self, at: At, scope: &str, kind: TypeFilter) -> Result<Vec<MemberRow>> {
        let sql = format!(
            "SELECT p.ckey, p.kind, p.seq, p.began, p.pos FROM placements p \
             WHERE p.scope = $1 AND {}{}",
            live(at, "p", 2),
            kind_clause(kind)
        );
        let n = at_value(at);
        let found = self.rows_at(at, &sql, vec![&scope], &n)?;
        Ok(found
            .iter()
            .map(|r| (r.get(0), r.get(1), r.get(2), r.get(3), r.get(4)))
            .collect())
    }

    fn member_keys(&self, at: At, scope: &str) -> Result<Vec<(i64, i64)>> {
        let sql = format!(
            "SELECT p.ckey, p.kind FROM placements p WHERE p.scope = $1 AND {}",
            live(at, "p", 2)
        );
        let n = at_value(at);
        let found = self.rows_at(at, &sql, vec![&scope], &n)?;
        Ok(found.iter().map(|r| (r.get(0), r.get(1))).collect())
    }

    fn live_keys_page(&self, at: At, after: i64, limit: i64) -> Result<Vec<i64>> {
        let sql = format!(
            "SELECT c.key FROM chunks c WHERE {} AND c.key > $1 ORDER BY c.key LIMIT $2",
            live(at, "c", 3)
        );
        let n = at_value(at);
        let found = self.rows_at(at, &sql, vec![&after, &limit], &n)?;
        Ok(found.iter().map(|r| r.get(0)).collect())
    }

    fn live_count(&self, at: At) -> Result<u64> {
        let sql = format!("SELECT count(*) FROM chunks c WHERE {}", live(at, "c", 1));
        let n = at_value(at);
        let found = self.rows_at(at, &sql, vec![], &n)?;
        Ok(found.first().map_or(0, |r| r.get::<_, i64>(0)) as u64)
    }

    fn live_keys(&self, at: At) -> Result<Vec<i64>> {
        let sql = format!("SELECT c.key FROM chunks c WHERE {}", live(at, "c", 1));
        let n = at_value(at);
        let found = self.rows_at(at, &sql, vec![], &n)?;
        Ok(found.iter().map(|r| r.get(0)).collect())
    }

    fn text_behind(&self) -> Result<bool> {
        // indexed in the commit itself
        Ok(false)
    }

    fn index_text(&self) -> Result<()> {
        Ok(())
    }

    fn text_matches(&self, query: &Query) -> Result<Vec<i64>> {
        let Some(asked) = query.tsquery() else {
            return Ok(Vec::new());
        };
        if !query.has_phrases() {
            let found = self.rows(
                "SELECT key FROM chunk_text WHERE words @@ $1::text::tsquery",
                &vec![&asked],
            )?;
            return Ok(found.iter().map(|r| r.get(0)).collect());
        }
        // the index finds every word; the order of a phrase's is checked here
        let found = self.rows(
            "SELECT key, text FROM chunk_text WHERE words @@ $1::text::tsquery",
            &vec![&asked],
        )?;
        Ok(found
            .iter()
            .filter(|r| query.matches(&words::words(r.get(1))))
            .map(|r| r.get(0))
            .collect())
    }

    fn commit_records(&self, newest: i64, before: i64, limit: i64) -> Result<Vec<(i64, String)>> {
        let found = self.rows(
            "SELECT id, record, person FROM commits WHERE id <= $1 AND id < $2 \
             ORDER BY id DESC LIMIT $3",
            &vec![&newest, &before, &limit],
        )?;
        Ok(found
            .iter()
            .map(|r| (r.get(0), stamped(r.get(1), r.get(2))))
            .collect())
    }

    fn first_version(&self, id: &str) -> Result<Option<(Option<String>, String)>> {
        let found = self.first(
            "SELECT person, body FROM chunks WHERE id = $1 ORDER BY began, vid LIMIT 1",
            &vec![&id],
        )?;
        Ok(found.map(|r| (r.get(0), r.get(1))))
    }

    fn writers(&self, ids: &[String]) -> Result<Vec<Option<String>>> {
        let ids = ids.to_vec();
        let found = self.rows(
            "SELECT DISTINCT person FROM chunks WHERE id = ANY($1)",
            &vec![&ids],
        )?;
        Ok(found.iter().map(|r| r.get(0)).collect())
    }

    fn persons_by_id(&self, at: At, ids: &[String]) -> Result<Vec<(String, Option<String>)>> {
        let sql = format!(
            "SELECT c.id, c.person FROM chunks c WHERE c.id = ANY($1) AND {}",
            live(at, "c", 2)
        );
        let ids = ids.to_vec();
        let n = at_value(at);
        let found = self.rows_at(at, &sql, vec![&ids], &n)?;
        Ok(found.iter().map(|r| (r.get(0), r.get(1))).collect())
    }

    fn next_vid(&self) -> Result<i64> {
        Ok(self.next.get().0)
    }

    fn end_placement(
        &self,
        chunk: &str,
        scope: &str,
        kind: i64,
        n: i64,
    ) -> Result<Option<Option<i64>>> {
        let found = self.first(
            "UPDATE placements SET ended = $4 WHERE chunk = $1 AND scope = $2 AND kind = $3 \
             AND ended IS NULL RETURNING seq",
            &vec![&chunk, &scope, &kind, &n],
        )?;
        Ok(found.map(|r| r.get(0)))
    }

    fn end_chunk(&self, id: &str, n: i64) -> Result<Option<i64>> {
        let found = self.first(
            "UPDATE chunks SET ended = $2 WHERE id = $1 AND ended IS NULL RETURNING key",
            &vec![&id, &n],
        )?;
        Ok(found.map(|r| r.get(0)))
    }

    fn end_placements_touching(&self, id: &str, n: i64) -> Result<Vec<EndedPlacement>> {
        let found = self.rows(
            "UPDATE placements SET ended = $2 WHERE (chunk = $1 OR scope = $1) AND ended IS NULL \
             RETURNING chunk, scope, kind, seq",
            &vec![&id, &n],
        )?;
        Ok(found
            .iter()
            .map(|r| (r.get(0), r.get(1), r.get(2), r.get(3)))
            .collect())
    }

    fn rewrite_version(&self, vid: i64, v: &VersionText<'_>) -> Result<()> {
        self.run(
            "UPDATE chunks SET name = $2, spec = $3, body = $4, placements = $5 WHERE vid = $1",
            owned![
                vid,
                v.name.clone(),
                v.spec.to_owned(),
                v.body.to_owned(),
                v.placements.to_owned()
            ],
        )?;
        Ok(())
    }

    fn end_version(&self, vid: i64, n: i64) -> Result<()> {
        self.run(
            "UPDATE chunks SET ended = $2 WHERE vid = $1",
            owned![vid, n],
        )?;
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
        self.run(
            "INSERT INTO chunks (vid, id, key, name, spec, body, placements, began) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
            owned![
                vid,
                id.to_owned(),
                key,
                v.name.clone(),
                v.spec.to_owned(),
                v.body.to_owned(),
                v.placements.to_owned(),
                n
            ],
        )?;
        Ok(())
    }

    fn text_changed(&self, key: i64, now: Option<&VersionText<'_>>) -> Result<()> {
        match now {
            Some(v) => {
                // (PostgreSQL's text holds no NUL)
                let text =
                    crate::store::text::text_for(v.name.as_deref(), v.body).replace('\0', " ");
                let words = words::tsvector(&words::words(&text));
                self.run(
                    "INSERT INTO chunk_text (key, text, words) VALUES ($1, $2, $3::text::tsvector) \
                     ON CONFLICT (key) DO UPDATE SET text = EXCLUDED.text, words = EXCLUDED.words",
                    owned![key, text, words],
                )?;
            }
            None => {
                self.run("DELETE FROM chunk_text WHERE key = $1", owned![key])?;
            }
        }
        Ok(())
    }

    fn live_placements(&self, chunk: &str) -> Result<Vec<Placement>> {
        let found = self.rows(
            "SELECT scope, kind, seq FROM placements WHERE chunk = $1 AND ended IS NULL \
             ORDER BY began, pos",
            &vec![&chunk],
        )?;
        Ok(found
            .iter()
            .map(|r| Placement {
                scope: r.get(0),
                kind: kind_from(r.get(1)),
                seq: r.get(2),
            })
            .collect())
    }

    fn placement_seq(&self, chunk: &str, scope: &str, kind: i64) -> Result<Option<Option<i64>>> {
        let found = self.first(
            "SELECT seq FROM placements WHERE chunk = $1 AND scope = $2 AND kind = $3 \
             AND ended IS NULL",
            &vec![&chunk, &scope, &kind],
        )?;
        Ok(found.map(|r| r.get(0)))
    }

    fn insert_placement(&self, p: &NewPlacementRow<'_>) -> Result<i64> {
        let (vid, rid) = self.next.get();
        self.next.set((vid, rid + 1));
        self.run(
            "INSERT INTO placements (rid, chunk, ckey, scope, kind, seq, began, pos) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
            owned![
                rid,
                p.chunk.to_owned(),
                p.ckey,
                p.scope.to_owned(),
                p.kind,
                p.seq,
                p.began,
                p.pos,
            ],
        )?;
        Ok(rid)
    }

    fn seq_holders(&self, scope: &str, seq: i64, except: i64) -> Result<Vec<String>> {
        let found = self.rows(
            "SELECT chunk FROM placements WHERE scope = $1 AND seq = $2 AND ended IS NULL \
             AND rid != $3 ORDER BY rid",
            &vec![&scope, &seq, &except],
        )?;
        Ok(found.iter().map(|r| r.get(0)).collect())
    }

    fn max_seq(&self, scope: &str) -> Result<Option<i64>> {
        let found = self.first(
            "SELECT seq FROM placements WHERE scope = $1 AND ended IS NULL AND seq IS NOT NULL \
             ORDER BY seq DESC LIMIT 1",
            &vec![&scope],
        )?;
        Ok(found.and_then(|r| r.get(0)))
    }

    fn set_seq(&self, rid: i64, seq: i64) -> Result<()> {
        self.run(
            "UPDATE placements SET seq = $2 WHERE rid = $1",
            owned![rid, seq],
        )?;
        Ok(())
    }

    fn instance_scopes(&self, chunk: &str) -> Result<Vec<String>> {
        let found = self.rows(
            "SELECT scope FROM placements WHERE chunk = $1 AND kind = 0 AND ended IS NULL \
             ORDER BY scope",
            &vec![&chunk],
        )?;
        Ok(found.iter().map(|r| r.get(0)).collect())
    }

    fn unique_clash(
        &self,
        scope: &str,
        chunk: &str,
        field: &str,
        value: &serde_json::Value,
    ) -> Result<Option<String>> {
        // compared as JSON values (SQLite compares minified texts: the same
        // for what this crate writes)
        let value = value.to_string();
        let found = self.first(
            "SELECT p.chunk FROM placements p WHERE p.scope = $1 AND p.kind = 0 \
             AND p.ended IS NULL AND p.chunk != $2 AND (SELECT c.body::jsonb -> $3 FROM chunks c \
             WHERE c.id = p.chunk AND c.ended IS NULL) = $4::text::jsonb ORDER BY p.rid LIMIT 1",
            &vec![&scope, &chunk, &field, &value],
        )?;
        Ok(found.map(|r| r.get(0)))
    }

    fn scopes_of(&self, chunk: &str) -> Result<Vec<String>> {
        let found = self.rows(
            "SELECT scope FROM placements WHERE chunk = $1 AND ended IS NULL ORDER BY scope, kind",
            &vec![&chunk],
        )?;
        Ok(found.iter().map(|r| r.get(0)).collect())
    }

    fn insert_commit(&self, commit: &Commit, record: &str) -> Result<()> {
        let id = commit.id as i64;
        let parent = commit.parent_id.map(|p| p as i64);
        self.run(
            "INSERT INTO commits (id, parent_id, timestamp, dispatch_id, record) \
             VALUES ($1, $2, $3, $4, $5)",
            owned![
                id,
                parent,
                commit.timestamp.clone(),
                commit.dispatch_id.clone(),
                record.to_owned(),
            ],
        )?;
        Ok(())
    }

    fn announce(&self, id: i64) -> Result<()> {
        self.run(
            "SELECT pg_notify($1, $2)",
            owned![self.channel.to_owned(), id.to_string()],
        )?;
        Ok(())
    }

    fn raw_commits(&self, after: i64, limit: i64) -> Result<Vec<RawCommit>> {
        let found = self.rows(
            "SELECT id, parent_id, branch, timestamp, dispatch_id, record FROM commits \
             WHERE id > $1 ORDER BY id LIMIT $2",
            &vec![&after, &limit],
        )?;
        Ok(found
            .iter()
            .map(|r| RawCommit {
                id: r.get(0),
                parent_id: r.get(1),
                branch: r.get(2),
                timestamp: r.get(3),
                dispatch_id: r.get(4),
                record: r.get(5),
            })
            .collect())
    }

    fn raw_chunks(&self, after: i64, limit: i64) -> Result<Vec<RawChunk>> {
        let found = self.rows(
            "SELECT vid, id, key, name, spec, body, placements, began, ended FROM chunks \
             WHERE vid > $1 ORDER BY vid LIMIT $2",
            &vec![&after, &limit],
        )?;
        Ok(found
            .iter()
            .map(|r| RawChunk {
                vid: r.get(0),
                id: r.get(1),
                key: r.get(2),
                name: r.get(3),
                spec: r.get(4),
                body: r.get(5),
                placements: r.get(6),
                began: r.get(7),
                ended: r.get(8),
            })
            .collect())
    }

    fn raw_placements(&self, after: i64, limit: i64) -> Result<Vec<RawPlacement>> {
        let found = self.rows(
            "SELECT rid, chunk, ckey, scope, kind, seq, began, pos, ended FROM placements \
             WHERE rid > $1 ORDER BY rid LIMIT $2",
            &vec![&after, &limit],
        )?;
        Ok(found
            .iter()
            .map(|r| RawPlacement {
                rid: r.get(0),
                chunk: r.get(1),
                ckey: r.get(2),
                scope: r.get(3),
                kind: r.get(4),
                seq: r.get(5),
                began: r.get(6),
                pos: r.get(7),
                ended: r.get(8),
            })
            .collect())
    }

    fn load_commit(&self, c: &RawCommit) -> Result<()> {
        self.run(
            "INSERT INTO commits (id, parent_id, branch, timestamp, dispatch_id, record) \
             VALUES ($1, $2, $3, $4, $5, $6)",
            owned![
                c.id,
                c.parent_id,
                c.branch.clone(),
                c.timestamp.clone(),
                c.dispatch_id.clone(),
                c.record.clone(),
            ],
        )
    }

    fn load_chunk(&self, c: &RawChunk) -> Result<()> {
        self.run(
            "INSERT INTO chunks (vid, id, key, name, spec, body, placements, began, ended) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
            owned![
                c.vid,
                c.id.clone(),
                c.key,
                c.name.clone(),
                c.spec.clone(),
                c.body.clone(),
                c.placements.clone(),
                c.began,
                c.ended,
            ],
        )
    }

    fn load_placement(&self, p: &RawPlacement) -> Result<()> {
        self.run(
            "INSERT INTO placements (rid, chunk, ckey, scope, kind, seq, began, pos, ended) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
            owned![
                p.rid,
                p.chunk.clone(),
                p.ckey,
                p.scope.clone(),
                p.kind,
                p.seq,
                p.began,
                p.pos,
                p.ended,
            ],
        )
    }

    fn records_between(&self, after: i64, upto: i64) -> Result<Vec<String>> {
        let found = self.rows(
            "SELECT record, person FROM commits WHERE id > $1 AND id <= $2 ORDER BY id",
            &vec![&after, &upto],
        )?;
        Ok(found.iter().map(|r| stamped(r.get(0), r.get(1))).collect())
    }
}

/// A commit `record` as the database stamped it: its author's person is
/// the role that wrote the row (`person`), whatever the record claims. A
/// record that already says so is returned as it was written (its text is
/// what a commit whose end was lost is matched against).
fn stamped(record: String, person: Option<String>) -> String {
    let Some(person) = person else {
        return record;
    };
    let Ok(mut commit) = serde_json::from_str::<Commit>(&record) else {
        return record;
    };
    let author = commit.author.get_or_insert_with(Default::default);
    if author.person == person {
        return record;
    }
    author.person = person;
    serde_json::to_string(&commit).unwrap_or(record)
}
