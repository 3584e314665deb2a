//! What the head says about the structure, remembered between commits:
//! whether a chunk exists, its version, whether it is an instance of a
//! scope, the instance chains up from it with their specs, how many
//! members a scope has. The engine judges every call with these (a few
//! dozen a turn); on a server each is a round trip.
//!
//! A fact holds for the head it was read at, and for every later head
//! whose commits did not touch what it depends on: each commit, as it is
//! broadcast (in order, made here or followed from another engine),
//! drops the facts about the chunks it modified or (re)placed and about
//! the scopes whose members changed. A fact is used and kept only by a
//! view at exactly the head the facts have been brought to, so a view
//! never sees one from another state.

use crate::types::{Commit, CommitId};
use std::collections::{HashMap, HashSet};
use std::sync::{Mutex, PoisonError};

/// The version a commit made here wrote of each chunk it wrote.
pub(crate) type Written = HashMap<String, super::snapshot::ChunkRow>;

/// What the head says of a chunk on instance chains: its spec text (none
/// when it does not exist) and the scopes it is an instance of (bytewise).
#[derive(Clone)]
struct Node {
    spec: Option<String>,
    up: Vec<String>,
}

/// Facts are dropped wholesale beyond this many (a bound, not a policy).
const MOST: usize = 50_000;

/// The facts at one head.
pub(crate) struct HeadFacts {
    inner: Mutex<Inner>,
    /// Whether facts are kept at all (a lever of the `bench` feature).
    kept: bool,
}

#[derive(Default)]
struct Inner {
    head: CommitId,
    exists: HashMap<String, bool>,
    vids: HashMap<String, Option<i64>>,
    instance: HashMap<(String, String), bool>,
    nodes: HashMap<String, Node>,
    counts: HashMap<String, u64>,
}

impl Inner {
    fn len(&self) -> usize {
        self.exists.len()
            + self.vids.len()
            + self.instance.len()
            + self.nodes.len()
            + self.counts.len()
    }

    fn clear(&mut self, head: CommitId) {
        *self = Inner {
            head,
            ..Inner::default()
        };
    }
}

impl HeadFacts {
    /// No facts yet, at `head` (none ever, unless `kept`).
    pub(crate) fn new(head: CommitId, kept: bool) -> HeadFacts {
        HeadFacts {
            inner: Mutex::new(Inner {
                head,
                ..Inner::default()
            }),
            kept,
        }
    }

    fn at<T>(&self, head: CommitId, f: impl FnOnce(&mut Inner) -> T) -> Option<T> {
        if !self.kept {
            return None;
        }
        let mut inner = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        (inner.head == head).then(|| f(&mut inner))
    }

    /// Brings the facts to `commit` (the next one broadcast): those it
    /// touched are dropped — or, for a commit made here (`written`: the
    /// version it wrote of each chunk it wrote), set to what it made; a gap
    /// in the order drops them all.
    pub(crate) fn advance(&self, commit: &Commit, written: Option<&Written>) {
        if !self.kept {
            return;
        }
        let mut inner = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        if commit.id != inner.head + 1 || inner.len() > MOST {
            inner.clear(commit.id);
            return;
        }
        inner.head = commit.id;
        let mut chunks: HashSet<&str> = commit.chunks_modified.iter().map(String::as_str).collect();
        let mut scopes: HashSet<&str> = HashSet::new();
        for change in &commit.placements_modified {
            chunks.insert(&change.chunk);
            scopes.insert(&change.scope);
        }
        inner.exists.retain(|id, _| !chunks.contains(id.as_str()));
        inner.vids.retain(|id, _| !chunks.contains(id.as_str()));
        inner
            .instance
            .retain(|(chunk, _), _| !chunks.contains(chunk.as_str()));
        inner.nodes.retain(|id, _| !chunks.contains(id.as_str()));
        inner
            .counts
            .retain(|scope, _| !scopes.contains(scope.as_str()));
        let Some(written) = written else {
            return;
        };
        for (id, row) in written {
            let mut up: Vec<String> = super::snapshot::parse_placements(&row.placements)
                .into_iter()
                .filter(|p| p.kind == crate::types::PlacementType::Instance)
                .map(|p| p.scope)
                .collect();
            up.sort();
            up.dedup();
            let node = Node {
                spec: Some(row.spec.clone()),
                up,
            };
            inner.nodes.insert(id.clone(), node);
            inner.exists.insert(id.clone(), true);
            inner.vids.insert(id.clone(), Some(row.vid));
        }
        for id in &commit.removed {
            if !written.contains_key(id) {
                let gone = Node {
                    spec: None,
                    up: Vec::new(),
                };
                inner.nodes.insert(id.clone(), gone);
                inner.exists.insert(id.clone(), false);
                inner.vids.insert(id.clone(), None);
            }
        }
    }

    /// Forgets everything; the facts are at `head` (after commits arrived
    /// by another way than one by one).
    pub(crate) fn reset(&self, head: CommitId) {
        let mut inner = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        if inner.head != head {
            inner.clear(head);
        }
    }

    pub(crate) fn exists(&self, head: CommitId, id: &str) -> Option<bool> {
        self.at(head, |i| i.exists.get(id).copied()).flatten()
    }

    pub(crate) fn keep_exists(&self, head: CommitId, id: &str, yes: bool) {
        self.at(head, |i| i.exists.insert(id.to_owned(), yes));
    }

    pub(crate) fn vid(&self, head: CommitId, id: &str) -> Option<Option<i64>> {
        self.at(head, |i| i.vids.get(id).copied()).flatten()
    }

    pub(crate) fn keep_vid(&self, head: CommitId, id: &str, vid: Option<i64>) {
        self.at(head, |i| i.vids.insert(id.to_owned(), vid));
    }

    pub(crate) fn instance(&self, head: CommitId, chunk: &str, scope: &str) -> Option<bool> {
        self.at(head, |i| {
            i.instance
                .get(&(chunk.to_owned(), scope.to_owned()))
                .copied()
        })
        .flatten()
    }

    pub(crate) fn keep_instance(&self, head: CommitId, chunk: &str, scope: &str, yes: bool) {
        self.at(head, |i| {
            i.instance.insert((chunk.to_owned(), scope.to_owned()), yes)
        });
    }

    /// The instance chains up from `id` (as `Tx::walk_up_head` orders
    /// them), when every chunk on them is known.
    pub(crate) fn walk(&self, head: CommitId, id: &str) -> Option<Vec<(String, Option<String>)>> {
        self.at(head, |inner| {
            let mut out: Vec<(String, Option<String>)> = Vec::new();
            let mut order = vec![id.to_owned()];
            let mut i = 0;
            while i < order.len() {
                let node = inner.nodes.get(&order[i])?;
                for scope in &node.up {
                    if !order.contains(scope) {
                        order.push(scope.clone());
                    }
                }
                out.push((order[i].clone(), node.spec.clone()));
                i += 1;
            }
            Some(out)
        })
        .flatten()
    }

    /// Keeps what a walk read of each chunk on it.
    pub(crate) fn keep_walk(&self, head: CommitId, walk: &[super::tx::WalkNode]) {
        self.at(head, |inner| {
            for (id, spec, up) in walk {
                let node = Node {
                    spec: spec.clone(),
                    up: up.clone(),
                };
                inner.nodes.insert(id.clone(), node);
            }
        });
    }

    pub(crate) fn count(&self, head: CommitId, scope: &str) -> Option<u64> {
        self.at(head, |i| i.counts.get(scope).copied()).flatten()
    }

    pub(crate) fn keep_count(&self, head: CommitId, scope: &str, n: u64) {
        self.at(head, |i| i.counts.insert(scope.to_owned(), n));
    }
}
