//! `scope(ids, opts)`: one scope, the intersection of several, or the whole
//! substrate; filtered, paged, with facets; at head or as of a commit.

use super::snapshot::{At, Snapshot, id_array, kind_from, row, rows};
use crate::error::{Error, Result};
use crate::ids::{COMMITS_ROOT, check_id};
use crate::json::Json;
use crate::types::{ChunkItem, ScopeCount, ScopeOpts, ScopeResult};
use std::collections::{HashMap, HashSet};

/// Members listed when a whole-substrate read gives no `limit`.
pub const DEFAULT_LIMIT: usize = 100;

/// Where a member falls in a read's order; the `next_after` cursor encodes
/// the last one returned.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct SortKey {
    seq: i64,
    began: i64,
    pos: i64,
    id: String,
}

impl SortKey {
    fn cursor(&self) -> String {
        format!("{}.{}.{}.{}", self.seq, self.began, self.pos, self.id)
    }

    fn parse(cursor: &str) -> Result<SortKey> {
        let bad = || {
            Error::InvalidRequest(format!(
                "`after` cursor {cursor:?} is not one this substrate returned; pass the \
                 `next_after` of the previous page unchanged"
            ))
        };
        let mut parts = cursor.splitn(4, '.');
        let mut number = || {
            parts
                .next()
                .and_then(|p| p.parse::<i64>().ok())
                .ok_or_else(bad)
        };
        let (seq, began, pos) = (number()?, number()?, number()?);
        let id = parts.next().ok_or_else(bad)?.to_owned();
        Ok(SortKey {
            seq,
            began,
            pos,
            id,
        })
    }
}

/// Checks a read's arguments before any storage is touched.
pub(crate) fn check_request(ids: &[String], opts: &ScopeOpts) -> Result<()> {
    for id in ids {
        check_id(id, "scope")?;
    }
    if ids.iter().any(|id| id == COMMITS_ROOT) && ids.len() > 1 {
        return Err(Error::InvalidRequest(
            "`commits_root` is a virtual scope and cannot be intersected with real scopes; \
             read it in a call of its own"
                .into(),
        ));
    }
    if opts.as_of.is_some() && opts.match_.is_some() {
        return Err(Error::InvalidRequest(
            "`match_` searches the current text and cannot be combined with `as_of`; \
             drop one of them"
                .into(),
        ));
    }
    if opts.limit == Some(0) {
        return Err(Error::InvalidRequest(
            "`limit` must be at least 1 (omit it for no limit)".into(),
        ));
    }
    Ok(())
}

impl Snapshot<'_> {
    /// Reads `ids` (see the crate docs for the rules), in this view.
    pub fn scope(&self, ids: &[String], opts: &ScopeOpts) -> Result<ScopeResult> {
        check_request(ids, opts)?;
        let view = match opts.as_of {
            Some(n) => self.as_of(n)?,
            None => self.as_of(self.head)?,
        };
        if ids.first().is_some_and(|id| id == COMMITS_ROOT) {
            return view.commits(opts);
        }
        view.read(ids, opts)
    }

    fn read(&self, ids: &[String], opts: &ScopeOpts) -> Result<ScopeResult> {
        let scopes = self.requested(ids, opts.include.body)?;
        let after = opts.after.as_deref().map(SortKey::parse).transpose()?;
        let mut members = if ids.is_empty() {
            if opts.match_.is_none() && opts.exclude.is_empty() {
                return self.everything_paged(opts, after);
            }
            self.every_chunk(opts)?
        } else {
            self.members(ids, opts)?
        };
        if !opts.exclude.is_empty() {
            let mut dropped = HashSet::new();
            for x in &opts.exclude {
                check_id(x, "exclude")?;
                dropped.extend(self.member_ids(x)?);
            }
            members.retain(|m| !dropped.contains(&m.id));
        }
        if let (Some(query), false) = (&opts.match_, ids.is_empty()) {
            let hits: HashSet<String> = self.search(query)?.into_iter().map(|(id, _)| id).collect();
            members.retain(|m| hits.contains(&m.id));
        }
        members.sort();
        let total = members.len() as u64;
        let dimensions = if opts.include.dimensions {
            let all: Vec<String> = members.iter().map(|m| m.id.clone()).collect();
            Some(self.dimensions(&all, ids)?)
        } else {
            None
        };
        let start = match &after {
            Some(cursor) => members.partition_point(|m| m <= cursor),
            None => 0,
        };
        let limit = opts
            .limit
            .or(ids.is_empty().then_some(DEFAULT_LIMIT))
            .unwrap_or(usize::MAX);
        let end = start.saturating_add(limit).min(members.len());
        let next_after = (end < members.len() && end > start).then(|| members[end - 1].cursor());
        let page: Vec<String> = members[start..end].iter().map(|m| m.id.clone()).collect();
        Ok(ScopeResult {
            scopes,
            chunks: self.items(&page, opts.include.body)?,
            total,
            next_after,
            topology: Vec::new(),
            dimensions,
            as_of: self.commit_id(),
        })
    }

    /// The requested chunks, in request order; a missing one is `NOT_FOUND`.
    fn requested(&self, ids: &[String], with_body: bool) -> Result<Vec<ChunkItem>> {
        let mut unique: Vec<String> = Vec::with_capacity(ids.len());
        for id in ids {
            if !unique.contains(id) {
                unique.push(id.clone());
            }
        }
        let found = self.items(&unique, with_body)?;
        ids.iter()
            .map(|id| {
                found
                    .iter()
                    .find(|item| &item.id == id)
                    .cloned()
                    .ok_or_else(|| {
                        Error::NotFound(match self.at {
                            At::Head => format!("no chunk `{id}` in the substrate"),
                            At::Commit(n) => format!("no chunk `{id}` as of commit {n}"),
                        })
                    })
            })
            .collect()
    }

    /// Members of every id, keyed by the order of the first ordered scope
    /// among them (else of the first id).
    fn members(&self, ids: &[String], opts: &ScopeOpts) -> Result<Vec<SortKey>> {
        let mut order = 0;
        if ids.len() > 1 {
            for (i, id) in ids.iter().enumerate() {
                if self.composed_spec(id)?.ordered {
                    order = i;
                    break;
                }
            }
        }
        let mut keyed: HashMap<String, SortKey> = HashMap::new();
        let sql = format!(
            "SELECT p.chunk, p.kind, p.seq, p.began, p.pos FROM {} WHERE p.scope = ?1 AND {}",
            self.at.by_scope(),
            self.at.live("p")
        );
        rows(self.conn, &sql, &[&ids[order]], self.at, |r| {
            if !opts.kind.admits(kind_from(r.get(1)?)) {
                return Ok(());
            }
            let key = SortKey {
                seq: r.get::<_, Option<i64>>(2)?.unwrap_or(i64::MAX),
                began: r.get(3)?,
                pos: r.get(4)?,
                id: r.get(0)?,
            };
            match keyed.get_mut(&key.id) {
                Some(old) if *old <= key => {}
                Some(old) => *old = key,
                None => {
                    keyed.insert(key.id.clone(), key);
                }
            }
            Ok(())
        })?;
        for (i, id) in ids.iter().enumerate() {
            if i == order {
                continue;
            }
            let on: HashSet<String> = self.member_ids_of_kind(id, opts)?;
            keyed.retain(|chunk, _| on.contains(chunk));
        }
        Ok(keyed.into_values().collect())
    }

    fn member_ids_of_kind(&self, scope: &str, opts: &ScopeOpts) -> Result<HashSet<String>> {
        let sql = format!(
            "SELECT p.chunk, p.kind FROM {} WHERE p.scope = ?1 AND {}",
            self.at.by_scope(),
            self.at.live("p")
        );
        let list = rows(self.conn, &sql, &[&scope], self.at, |r| {
            Ok((r.get::<_, String>(0)?, kind_from(r.get(1)?)))
        })?;
        Ok(list
            .into_iter()
            .filter(|(_, kind)| opts.kind.admits(*kind))
            .map(|(id, _)| id)
            .collect())
    }

    fn member_ids(&self, scope: &str) -> Result<Vec<String>> {
        let sql = format!(
            "SELECT p.chunk FROM {} WHERE p.scope = ?1 AND {}",
            self.at.by_scope(),
            self.at.live("p")
        );
        rows(self.conn, &sql, &[&scope], self.at, |r| r.get(0))
    }

    /// Every chunk (or every match of `match_`), keyed by creation.
    fn every_chunk(&self, opts: &ScopeOpts) -> Result<Vec<SortKey>> {
        let found = match &opts.match_ {
            Some(query) => self.search(query)?,
            None => {
                let sql = format!(
                    "SELECT c.id, c.created FROM chunks c WHERE {}",
                    self.at.live("c")
                );
                rows(self.conn, &sql, &[], self.at, |r| {
                    Ok((r.get(0)?, r.get(1)?))
                })?
            }
        };
        Ok(found
            .into_iter()
            .map(|(id, created)| SortKey {
                seq: created,
                began: 0,
                pos: 0,
                id,
            })
            .collect())
    }

    /// The whole substrate, paged in SQL (no full scan for a page).
    fn everything_paged(&self, opts: &ScopeOpts, after: Option<SortKey>) -> Result<ScopeResult> {
        let limit = opts.limit.unwrap_or(DEFAULT_LIMIT);
        let (seq, id) = after.map_or((i64::MIN, String::new()), |k| (k.seq, k.id));
        let live = self.at.live("c");
        let sql = format!(
            "SELECT c.id, c.created FROM chunks c WHERE {live} \
             AND (c.created > ?1 OR (c.created = ?1 AND c.id > ?2)) \
             ORDER BY c.created, c.id LIMIT ?3"
        );
        let mut page: Vec<(String, i64)> = rows(
            self.conn,
            &sql,
            &[
                &seq,
                &id,
                &(limit.saturating_add(1).min(i64::MAX as usize) as i64),
            ],
            self.at,
            |r| Ok((r.get(0)?, r.get(1)?)),
        )?;
        let more = page.len() > limit;
        page.truncate(limit);
        let next_after = more
            .then(|| page.last())
            .flatten()
            .map(|(id, created)| format!("{created}.0.0.{id}"));
        let total = row(
            self.conn,
            &format!("SELECT count(*) FROM chunks c WHERE {live}"),
            &[],
            self.at,
            |r| r.get::<_, i64>(0),
        )?
        .unwrap_or(0) as u64;
        let ids: Vec<String> = page.into_iter().map(|(id, _)| id).collect();
        let all_ids = if opts.include.dimensions {
            Some(self.all_ids()?)
        } else {
            None
        };
        Ok(ScopeResult {
            scopes: Vec::new(),
            chunks: self.items(&ids, opts.include.body)?,
            total,
            next_after,
            topology: Vec::new(),
            dimensions: all_ids.map(|all| self.dimensions(&all, &[])).transpose()?,
            as_of: self.commit_id(),
        })
    }

    fn all_ids(&self) -> Result<Vec<String>> {
        let sql = format!("SELECT c.id FROM chunks c WHERE {}", self.at.live("c"));
        rows(self.conn, &sql, &[], self.at, |r| r.get(0))
    }

    /// Chunks whose current name or body text matches the FTS5 `query`,
    /// with their creation commits. A query that is not valid FTS5 syntax is
    /// searched as plain words.
    fn search(&self, query: &str) -> Result<Vec<(String, i64)>> {
        let sql = "SELECT c.id, c.created FROM chunk_text JOIN chunks c ON c.vid = chunk_text.rowid \
                   WHERE chunk_text MATCH ?1";
        let run = |q: &str| {
            rows(self.conn, sql, &[&q], At::Head, |r| {
                Ok((r.get(0)?, r.get(1)?))
            })
        };
        match run(query) {
            Ok(found) => Ok(found),
            Err(Error::Storage(_)) => {
                let words: Vec<String> = query
                    .split_whitespace()
                    .map(|w| format!("\"{}\"", w.replace('"', "\"\"")))
                    .collect();
                if words.is_empty() {
                    return Err(Error::InvalidRequest(
                        "`match_` is empty; give at least one word to search for".into(),
                    ));
                }
                run(&words.join(" "))
            }
            Err(e) => Err(e),
        }
    }

    /// The scopes the given members sit on besides `requested`, with how
    /// many of the members sit on each, most populated first.
    fn dimensions(&self, members: &[String], requested: &[String]) -> Result<Vec<ScopeCount>> {
        let array = id_array(members);
        let sql = format!(
            "SELECT p.scope, count(DISTINCT p.chunk) FROM {} \
             WHERE p.chunk IN rarray(?1) AND {} GROUP BY p.scope",
            self.at.by_chunk(),
            self.at.live("p")
        );
        let mut counts: Vec<(String, i64)> = rows(self.conn, &sql, &[&array], self.at, |r| {
            Ok((r.get(0)?, r.get(1)?))
        })?;
        counts.retain(|(scope, _)| !requested.contains(scope));
        counts.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        let names: Vec<String> = counts.iter().map(|(s, _)| s.clone()).collect();
        let items = self.items(&names, false)?;
        Ok(counts
            .into_iter()
            .map(|(id, count)| ScopeCount {
                name: items
                    .iter()
                    .find(|i| i.id == id)
                    .and_then(|i| i.name.clone()),
                id,
                count: count as u64,
            })
            .collect())
    }

    /// `commits_root`: commits as chunks `commit/N`, newest first.
    fn commits(&self, opts: &ScopeOpts) -> Result<ScopeResult> {
        if opts.match_.is_some() {
            return Err(Error::InvalidRequest(
                "`match_` is not supported on `commits_root`".into(),
            ));
        }
        let newest = self.commit_id() as i64;
        let before = match &opts.after {
            Some(cursor) => cursor
                .strip_prefix("commit/")
                .and_then(|n| n.parse::<i64>().ok())
                .ok_or_else(|| {
                    Error::InvalidRequest(format!(
                        "`after` cursor {cursor:?} on `commits_root` must be a `commit/N` id"
                    ))
                })?,
            None => newest + 1,
        };
        let limit = opts.limit.unwrap_or(DEFAULT_LIMIT);
        let mut list: Vec<(i64, String)> = rows(
            self.conn,
            "SELECT id, record FROM commits WHERE id <= ?1 AND id < ?2 ORDER BY id DESC LIMIT ?3",
            &[
                &newest,
                &before,
                &(limit.saturating_add(1).min(i64::MAX as usize) as i64),
            ],
            At::Head,
            |r| Ok((r.get(0)?, r.get(1)?)),
        )?;
        let more = list.len() > limit;
        list.truncate(limit);
        let next_after = more
            .then(|| list.last())
            .flatten()
            .map(|(id, _)| format!("commit/{id}"));
        let empty = || Json::empty_object();
        Ok(ScopeResult {
            scopes: vec![ChunkItem {
                id: COMMITS_ROOT.to_owned(),
                name: Some("commits".to_owned()),
                spec: empty(),
                body: opts.include.body.then(empty),
                placements: Vec::new(),
            }],
            chunks: list
                .into_iter()
                .map(|(id, record)| ChunkItem {
                    id: format!("commit/{id}"),
                    name: None,
                    spec: empty(),
                    body: opts.include.body.then(|| Json::from_text_unchecked(record)),
                    placements: Vec::new(),
                })
                .collect(),
            total: newest as u64,
            next_after,
            topology: Vec::new(),
            dimensions: None,
            as_of: self.commit_id(),
        })
    }
}
