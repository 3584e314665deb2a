//! `scope(ids, opts)`: one scope, the intersection of several, or the whole
//! substrate; filtered, paged, with facets; at head or as of a commit.

use super::snapshot::{At, Snapshot, kind_from};
use crate::error::{Error, Result};
use crate::ids::{COMMITS_ROOT, check_id};
use crate::json::Json;
use crate::types::{ChunkItem, ScopeCount, ScopeOpts, ScopeResult};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

/// Members listed when a whole-substrate read gives no `limit`.
pub const DEFAULT_LIMIT: usize = 100;

/// Where a member falls in a read's order; the `next_after` cursor encodes
/// the last one returned.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct SortKey {
    seq: i64,
    began: i64,
    pos: i64,
    /// The member's stable key (one per life of a chunk).
    key: i64,
}

impl SortKey {
    fn cursor(&self) -> String {
        format!("{}.{}.{}.{}", self.seq, self.began, self.pos, self.key)
    }

    fn parse(cursor: &str) -> Result<SortKey> {
        let bad = || {
            Error::InvalidRequest(format!(
                "`after` cursor {cursor:?} is not one this substrate returned; pass the \
                 `next_after` of the previous page unchanged"
            ))
        };
        let mut parts = cursor.split('.');
        let mut number = || {
            parts
                .next()
                .and_then(|p| p.parse::<i64>().ok())
                .ok_or_else(bad)
        };
        let (seq, began, pos, key) = (number()?, number()?, number()?, number()?);
        Ok(SortKey {
            seq,
            began,
            pos,
            key,
        })
    }
}

/// A member's place by `seq`: in an ordered scope its `seq` (unsequenced
/// last); in a scope that is not ordered, none — a `seq` left from when it
/// was ordered does not count, and members go by the commit that placed them.
fn sequence(ordered: bool, seq: Option<i64>) -> i64 {
    match (ordered, seq) {
        (true, Some(seq)) => seq,
        (true, None) => i64::MAX,
        (false, _) => 0,
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
        if ids.len() == 1
            && opts.match_.is_none()
            && opts.exclude.is_empty()
            && opts.after.is_none()
            && opts.limit.is_none()
        {
            return self.whole_scope(&ids[0], scopes, opts);
        }
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
                dropped.extend(self.member_keys(x)?);
            }
            members.retain(|m| !dropped.contains(&m.key));
        }
        if let (Some(query), false) = (&opts.match_, ids.is_empty()) {
            let hits: HashSet<i64> = self.search(query)?.into_iter().collect();
            members.retain(|m| hits.contains(&m.key));
        }
        members.sort();
        let total = members.len() as u64;
        let dimensions = if opts.include.dimensions {
            let all: Vec<i64> = members.iter().map(|m| m.key).collect();
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
        let page: Vec<i64> = members[start..end].iter().map(|m| m.key).collect();
        Ok(ScopeResult {
            scopes,
            chunks: self.items_by_key(&page, opts.include.body)?,
            total,
            next_after,
            topology: Vec::new(),
            dimensions,
            as_of: self.commit_id(),
            foreign: Vec::new(),
        })
    }

    /// Every member of one scope in one pass over the scope's index, which
    /// yields each member's current version id without touching its row:
    /// the common read (a session, a process, a type), kept lean.
    fn whole_scope(
        &self,
        id: &str,
        scopes: Vec<Arc<ChunkItem>>,
        opts: &ScopeOpts,
    ) -> Result<ScopeResult> {
        let mut kinds = [false; 2];
        let keyed = match self.at {
            At::Head => {
                let (vids, sequenced) = self.members_in_index_order(id, opts, &mut kinds)?;
                // `seq`s left on a scope that is no longer ordered do not
                // order it: only then is the index's order not the read's.
                if sequenced && !self.composed_spec(id)?.ordered {
                    kinds = [false; 2];
                    self.members_sorted(id, opts, false, &mut kinds)?
                } else {
                    vids
                }
            }
            At::Commit(_) => {
                let ordered = self.composed_spec(id)?.ordered;
                self.members_sorted(id, opts, ordered, &mut kinds)?
            }
        };
        let vids: Vec<i64> = if kinds == [true, true] {
            // A chunk placed both instance and relates is listed once, first place.
            let mut seen = HashSet::with_capacity(keyed.len());
            keyed.into_iter().filter(|vid| seen.insert(*vid)).collect()
        } else {
            keyed
        };
        let chunks = self.versions(&vids, opts.include.body)?;
        let dimensions = if opts.include.dimensions {
            Some(self.tally(&chunks, std::slice::from_ref(&id.to_owned()))?)
        } else {
            None
        };
        Ok(ScopeResult {
            scopes,
            total: chunks.len() as u64,
            chunks,
            next_after: None,
            topology: Vec::new(),
            dimensions,
            as_of: self.commit_id(),
            foreign: Vec::new(),
        })
    }

    /// At head, a scope's members' version ids in the order reads return
    /// (by `seq`, then by placing commit and position), which is the index's
    /// own order: no sort, and only the columns the result needs.
    /// Unsequenced members (NULL `seq`, first in SQL's order) go after the
    /// sequenced ones. `kinds` notes which placement types were seen; the
    /// flag says whether any member carries a `seq` (with none, this is
    /// also the order of an unordered scope).
    fn members_in_index_order(
        &self,
        id: &str,
        opts: &ScopeOpts,
        kinds: &mut [bool; 2],
    ) -> Result<(Vec<i64>, bool)> {
        let (mut ordered, mut unordered) = (Vec::new(), Vec::new());
        for (kind, unsequenced, vid) in self.tx.members_in_order(self.at, id, opts.kind)? {
            let kind = kind_from(kind);
            if opts.kind.admits(kind) {
                kinds[kind as usize] = true;
                if unsequenced {
                    unordered.push(vid);
                } else {
                    ordered.push(vid);
                }
            }
        }
        let sequenced = !ordered.is_empty();
        ordered.append(&mut unordered);
        Ok((ordered, sequenced))
    }

    /// The same as of a past commit, where live rows are not contiguous in
    /// the index (or for a scope no longer ordered whose members still
    /// carry `seq`s): read the ordering columns and sort here, which is
    /// cheaper than SQLite's sorter. `seq` orders only an `ordered` scope.
    fn members_sorted(
        &self,
        id: &str,
        opts: &ScopeOpts,
        ordered: bool,
        kinds: &mut [bool; 2],
    ) -> Result<Vec<i64>> {
        let mut keyed: Vec<(i64, i64, i64, i64)> = Vec::new();
        for (kind, seq, began, pos, vid) in self.tx.members_with_vids(self.at, id, opts.kind)? {
            let kind = kind_from(kind);
            if opts.kind.admits(kind) {
                kinds[kind as usize] = true;
                keyed.push((sequence(ordered, seq), began, pos, vid));
            }
        }
        keyed.sort_unstable();
        Ok(keyed.into_iter().map(|(.., vid)| vid).collect())
    }

    /// The requested chunks, in request order; a missing one is `NOT_FOUND`.
    fn requested(&self, ids: &[String], with_body: bool) -> Result<Vec<Arc<ChunkItem>>> {
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
    /// among them (else by the commit that placed them on the first id).
    fn members(&self, ids: &[String], opts: &ScopeOpts) -> Result<Vec<SortKey>> {
        let (mut order, mut ordered) = (0, false);
        for (i, id) in ids.iter().enumerate() {
            if self.composed_spec(id)?.ordered {
                (order, ordered) = (i, true);
                break;
            }
        }
        let mut keyed: HashMap<i64, SortKey> = HashMap::new();
        for (key, kind, seq, began, pos) in self.tx.member_rows(self.at, &ids[order], opts.kind)? {
            if !opts.kind.admits(kind_from(kind)) {
                continue;
            }
            let key = SortKey {
                seq: sequence(ordered, seq),
                began,
                pos,
                key,
            };
            match keyed.get_mut(&key.key) {
                Some(old) if *old <= key => {}
                Some(old) => *old = key,
                None => {
                    keyed.insert(key.key, key);
                }
            }
        }
        for (i, id) in ids.iter().enumerate() {
            if i == order {
                continue;
            }
            let on: HashSet<i64> = self.member_keys_of_kind(id, opts)?;
            keyed.retain(|chunk, _| on.contains(chunk));
        }
        Ok(keyed.into_values().collect())
    }

    fn member_keys_of_kind(&self, scope: &str, opts: &ScopeOpts) -> Result<HashSet<i64>> {
        Ok(self
            .tx
            .member_keys(self.at, scope)?
            .into_iter()
            .filter(|(_, kind)| opts.kind.admits(kind_from(*kind)))
            .map(|(key, _)| key)
            .collect())
    }

    fn member_keys(&self, scope: &str) -> Result<Vec<i64>> {
        Ok(self
            .tx
            .member_keys(self.at, scope)?
            .into_iter()
            .map(|(key, _)| key)
            .collect())
    }

    /// Every chunk (or every match of `match_`), keyed by creation.
    fn every_chunk(&self, opts: &ScopeOpts) -> Result<Vec<SortKey>> {
        let found = match &opts.match_ {
            Some(query) => self.search(query)?,
            None => self.all_keys()?,
        };
        Ok(found
            .into_iter()
            .map(|key| SortKey {
                seq: key,
                began: 0,
                pos: 0,
                key,
            })
            .collect())
    }

    /// The whole substrate, paged in SQL (no full scan for a page).
    fn everything_paged(&self, opts: &ScopeOpts, after: Option<SortKey>) -> Result<ScopeResult> {
        let limit = opts.limit.unwrap_or(DEFAULT_LIMIT);
        let after_key = after.map_or(i64::MIN, |k| k.key);
        let page_size = limit.saturating_add(1).min(i64::MAX as usize) as i64;
        let mut page = self.tx.live_keys_page(self.at, after_key, page_size)?;
        let more = page.len() > limit;
        page.truncate(limit);
        let next_after = more
            .then(|| page.last())
            .flatten()
            .map(|key| format!("{key}.0.0.{key}"));
        let total = self.tx.live_count(self.at)?;
        let all = if opts.include.dimensions {
            Some(self.all_keys()?)
        } else {
            None
        };
        Ok(ScopeResult {
            scopes: Vec::new(),
            chunks: self.items_by_key(&page, opts.include.body)?,
            total,
            next_after,
            topology: Vec::new(),
            dimensions: all.map(|all| self.dimensions(&all, &[])).transpose()?,
            as_of: self.commit_id(),
            foreign: Vec::new(),
        })
    }

    fn all_keys(&self) -> Result<Vec<i64>> {
        self.tx.live_keys(self.at)
    }

    /// The keys of the live chunks whose name or body text matches
    /// `query` (the `match_` language, `words.rs`).
    fn search(&self, query: &str) -> Result<Vec<i64>> {
        if self.tx.text_behind()? {
            match self.behind {
                // A write transaction: index the queue here, then search.
                None => self.tx.index_text()?,
                // A read: the store indexes it and reads again.
                Some(flag) => {
                    flag.set(true);
                    return Ok(Vec::new());
                }
            }
        }
        let Some(query) = super::words::Query::read(query) else {
            return Err(Error::InvalidRequest(
                "`match_` is empty; give at least one word to search for".into(),
            ));
        };
        self.tx.text_matches(&query)
    }

    /// The scopes the given members sit on besides `requested`, with how
    /// many of the members sit on each, most populated first.
    fn dimensions(&self, members: &[i64], requested: &[String]) -> Result<Vec<ScopeCount>> {
        let items = self.items_by_key(members, false)?;
        self.tally(&items, requested)
    }

    /// The scopes `items` sit on besides `requested`, with how many of them
    /// sit on each, most populated first.
    fn tally(&self, items: &[Arc<ChunkItem>], requested: &[String]) -> Result<Vec<ScopeCount>> {
        let mut tally: HashMap<String, i64> = HashMap::new();
        for item in items {
            let mut scopes: Vec<&String> = item.placements.iter().map(|p| &p.scope).collect();
            scopes.sort();
            scopes.dedup();
            for scope in scopes {
                *tally.entry(scope.clone()).or_default() += 1;
            }
        }
        let mut counts: Vec<(String, i64)> = tally.into_iter().collect();
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
        let most = limit.saturating_add(1).min(i64::MAX as usize) as i64;
        let mut list = self.tx.commit_records(newest, before, most)?;
        let more = list.len() > limit;
        list.truncate(limit);
        let next_after = more
            .then(|| list.last())
            .flatten()
            .map(|(id, _)| format!("commit/{id}"));
        let empty = || Json::empty_object();
        Ok(ScopeResult {
            scopes: vec![Arc::new(ChunkItem {
                id: COMMITS_ROOT.to_owned(),
                name: Some("commits".to_owned()),
                spec: empty(),
                body: opts.include.body.then(empty),
                placements: Vec::new(),
            })],
            chunks: list
                .into_iter()
                .map(|(id, record)| {
                    Arc::new(ChunkItem {
                        id: format!("commit/{id}"),
                        name: None,
                        spec: empty(),
                        body: opts.include.body.then(|| Json::from_text_unchecked(record)),
                        placements: Vec::new(),
                    })
                })
                .collect(),
            total: newest as u64,
            next_after,
            topology: Vec::new(),
            dimensions: None,
            as_of: self.commit_id(),
            foreign: Vec::new(),
        })
    }
}
