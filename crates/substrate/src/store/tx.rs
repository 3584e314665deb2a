//! [`Tx`]: the statements a view of the substrate is read with, one
//! method each — the narrow interface a backend implements (SQLite in
//! `sqlite_tx.rs`). Everything else — what a read means, how a commit is
//! applied, the cache, the rules — is shared and sees only this.
//!
//! `at` selects the rows live in the view: at head (`ended` null), or as
//! of a commit (began ≤ N < ended).

use super::snapshot::{At, ChunkRow};
use crate::error::Result;
use crate::types::{ChunkItem, TypeFilter};

/// A member's placement row: its chunk's key, type (0 instance, 1
/// relates), `seq`, the commit that placed it and its position there.
pub(crate) type MemberRow = (i64, i64, Option<i64>, i64, i64);

/// A member with its version: type, `seq`, placing commit, position, vid.
pub(crate) type VersionRow = (i64, Option<i64>, i64, i64, i64);

/// The statements of one open transaction (a read snapshot, or the write
/// transaction).
pub(crate) trait Tx {
    /// The latest commit (0 when none).
    fn head(&self) -> Result<i64>;
    /// A chunk's version live in the view.
    fn chunk_row(&self, at: At, id: &str) -> Result<Option<ChunkRow>>;
    /// Whether a chunk is live in the view.
    fn exists(&self, at: At, id: &str) -> Result<bool>;
    /// Whether `chunk` is placed instance on `scope` now.
    fn is_instance_head(&self, chunk: &str, scope: &str) -> Result<bool>;
    /// The instance chains up from `id` now, breadth first, `id` first,
    /// each chunk with its spec text (none when it does not exist).
    fn walk_up_head(&self, id: &str) -> Result<Vec<(String, Option<String>)>>;
    /// How many chunks are placed on `scope` in the view.
    fn member_count(&self, at: At, scope: &str) -> Result<u64>;
    /// The live versions of these ids: (id, vid), in no order.
    fn vids_by_id(&self, at: At, ids: &[String]) -> Result<Vec<(String, i64)>>;
    /// The live versions of these chunk keys: (key, vid), in no order.
    fn vids_by_key(&self, at: At, keys: &[i64]) -> Result<Vec<(i64, i64)>>;
    /// These versions' items: (vid, item), in no order.
    fn versions(&self, vids: &[i64]) -> Result<Vec<(i64, ChunkItem)>>;
    /// A scope's members as (type, seq is null, vid), in index order: by
    /// `seq`, then placing commit and position.
    fn members_in_order(
        &self,
        at: At,
        scope: &str,
        kind: TypeFilter,
    ) -> Result<Vec<(i64, bool, i64)>>;
    /// A scope's members as (type, seq, began, pos, vid), in no order.
    fn members_with_vids(
        &self,
        at: At,
        scope: &str,
        kind: TypeFilter,
    ) -> Result<Vec<VersionRow>>;
    /// A scope's placements ([`MemberRow`]), in no order.
    fn member_rows(&self, at: At, scope: &str, kind: TypeFilter) -> Result<Vec<MemberRow>>;
    /// A scope's members' (key, type), in no order.
    fn member_keys(&self, at: At, scope: &str) -> Result<Vec<(i64, i64)>>;
    /// Live chunk keys after `after`, ascending, at most `limit`.
    fn live_keys_page(&self, at: At, after: i64, limit: i64) -> Result<Vec<i64>>;
    /// How many chunks are live in the view.
    fn live_count(&self, at: At) -> Result<u64>;
    /// Every live chunk key, in no order.
    fn live_keys(&self, at: At) -> Result<Vec<i64>>;
    /// Whether text waits to be indexed.
    fn text_behind(&self) -> Result<bool>;
    /// Indexes all the text that waits (inside the write transaction).
    fn index_text(&self) -> Result<()>;
    /// The keys of live chunks whose text matches the full-text `query`
    /// (as the index's language reads it; an error when it cannot).
    fn text_matches(&self, query: &str) -> Result<Vec<i64>>;
    /// Commit records (id, record) with `id <= newest` and `id < before`,
    /// newest first, at most `limit`.
    fn commit_records(&self, newest: i64, before: i64, limit: i64) -> Result<Vec<(i64, String)>>;
}
