//! The version cache: assembled chunk items keyed by version id.
//!
//! A version of a chunk — its name, spec, body *and* placements — never
//! changes once committed (a change makes a new version with a new id), so
//! a cached item is exact forever, at head and in every `as_of` read alike,
//! with nothing to invalidate. Version ids of committed rows are never
//! reused: a rolled-back commit's ids were never visible.

use crate::types::ChunkItem;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

/// Items by version id, bounded by an estimate of their size in bytes.
pub(crate) struct VersionCache {
    capacity: usize,
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    items: HashMap<i64, Arc<ChunkItem>>,
    bytes: usize,
}

/// A rough size of an item in memory.
pub(crate) fn weight(item: &ChunkItem) -> usize {
    let placements: usize = item.placements.iter().map(|p| p.scope.len() + 48).sum();
    128 + item.id.len()
        + item.name.as_ref().map_or(0, String::len)
        + item.spec.as_str().len()
        + item.body.as_ref().map_or(0, |b| b.as_str().len())
        + placements
}

impl VersionCache {
    /// A cache holding about `capacity` bytes; 0 disables it.
    pub(crate) fn new(capacity: usize) -> VersionCache {
        VersionCache {
            capacity,
            inner: Mutex::new(Inner::default()),
        }
    }

    /// The cached item for each version, `None` where it is not cached.
    pub(crate) fn get_many(&self, vids: &[i64]) -> Vec<Option<Arc<ChunkItem>>> {
        if self.capacity == 0 {
            return vec![None; vids.len()];
        }
        let inner = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        vids.iter().map(|v| inner.items.get(v).cloned()).collect()
    }

    /// Remembers items; when the budget is exceeded the cache starts over
    /// (simple, bounded, and the next reads refill what is hot).
    pub(crate) fn insert_many(&self, items: &[(i64, Arc<ChunkItem>)]) {
        if self.capacity == 0 {
            return;
        }
        let mut inner = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        for (vid, item) in items {
            let w = weight(item);
            if inner.bytes + w > self.capacity {
                inner.items.clear();
                inner.bytes = 0;
            }
            if inner.items.insert(*vid, Arc::clone(item)).is_none() {
                inner.bytes += w;
            }
        }
    }
}
