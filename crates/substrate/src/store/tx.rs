//! [`Tx`]: the statements a view of the substrate is read with, one
//! method each — the narrow interface a backend implements (SQLite in
//! `sqlite_tx.rs`). Everything else — what a read means, how a commit is
//! applied, the cache, the rules — is shared and sees only this.
//!
//! `at` selects the rows live in the view: at head (`ended` null), or as
//! of a commit (began ≤ N < ended).

use super::copy::{RawChunk, RawCommit, RawPlacement};
use super::snapshot::{At, ChunkRow};
use crate::error::Result;
use crate::types::{ChunkItem, Commit, Placement, TypeFilter};

/// The SQL that keeps only the placement type a read asks for (the type
/// is in the scope index, so rows of the other type never reach the join).
pub(crate) fn kind_clause(kind: TypeFilter) -> &'static str {
    match kind {
        TypeFilter::Both => "",
        TypeFilter::Instance => " AND p.kind = 0",
        TypeFilter::Relates => " AND p.kind = 1",
    }
}

/// A chunk on a walk up instance chains: its id, its spec text (none
/// when it does not exist), the scopes it is an instance of (bytewise).
pub(crate) type WalkNode = (String, Option<String>, Vec<String>);

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
    /// The store's clock, in milliseconds since the Unix epoch: on a
    /// server the server's (one clock for every host sharing it), in a
    /// file this machine's.
    fn now_ms(&self) -> Result<i64>;
    /// A chunk's version live in the view.
    fn chunk_row(&self, at: At, id: &str) -> Result<Option<ChunkRow>>;
    /// Whether a chunk is live in the view.
    fn exists(&self, at: At, id: &str) -> Result<bool>;
    /// Whether `chunk` is placed instance on `scope` now.
    fn is_instance_head(&self, chunk: &str, scope: &str) -> Result<bool>;
    /// The instance chains up from `id` now, breadth first, `id` first,
    /// each chunk's scopes in bytewise order: each chunk with its spec text
    /// (none when it does not exist) and the scopes it is an instance of
    /// (bytewise).
    fn walk_up_head(&self, id: &str) -> Result<Vec<WalkNode>>;
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
    fn members_with_vids(&self, at: At, scope: &str, kind: TypeFilter) -> Result<Vec<VersionRow>>;
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
    /// The keys of live chunks whose text matches `query` (`words.rs`),
    /// in no order.
    fn text_matches(&self, query: &super::words::Query) -> Result<Vec<i64>>;
    /// Commit records (id, record) with `id <= newest` and `id < before`,
    /// newest first, at most `limit`.
    fn commit_records(&self, newest: i64, before: i64, limit: i64) -> Result<Vec<(i64, String)>>;
    /// Who wrote the version of each of `ids` live at `at`, as the store
    /// stamped it (none on a file: its one person wrote it all).
    fn persons_by_id(&self, _at: At, _ids: &[String]) -> Result<Vec<(String, Option<String>)>> {
        Ok(Vec::new())
    }
    /// The first version of `id`: who wrote it, as the store stamped it
    /// (`None`: before authors were recorded), and its body's text. None on
    /// a file (its one person wrote everything), or when there is no such
    /// chunk.
    fn first_version(&self, _id: &str) -> Result<Option<(Option<String>, String)>> {
        Ok(None)
    }
    /// Everyone who wrote any version of any of `ids`, as the store
    /// stamped them (none on a file).
    fn writers(&self, _ids: &[String]) -> Result<Vec<Option<String>>> {
        Ok(Vec::new())
    }

    // ---- the write transaction's own (at head) ----
    /// The vid the next new version takes.
    fn next_vid(&self) -> Result<i64>;
    /// Ends a live placement; its `seq`, or none when there was none.
    fn end_placement(
        &self,
        chunk: &str,
        scope: &str,
        kind: i64,
        n: i64,
    ) -> Result<Option<Option<i64>>>;
    /// Ends a live chunk; its key, or none when there was none.
    fn end_chunk(&self, id: &str, n: i64) -> Result<Option<i64>>;
    /// Ends every live placement of or on `id`: (chunk, scope, type, seq).
    fn end_placements_touching(&self, id: &str, n: i64) -> Result<Vec<EndedPlacement>>;
    /// Rewrites a version made by this commit in place.
    fn rewrite_version(&self, vid: i64, v: &VersionText<'_>) -> Result<()>;
    /// Ends a version.
    fn end_version(&self, vid: i64, n: i64) -> Result<()>;
    /// Writes a new version.
    fn insert_version(
        &self,
        vid: i64,
        id: &str,
        key: i64,
        v: &VersionText<'_>,
        n: i64,
    ) -> Result<()>;
    /// Notes that `key`'s text changed (indexed later, or at once): `now`
    /// its new version, none when the chunk was removed.
    fn text_changed(&self, key: i64, now: Option<&VersionText<'_>>) -> Result<()>;
    /// A chunk's live placements, in the order they were made.
    fn live_placements(&self, chunk: &str) -> Result<Vec<Placement>>;
    /// The live placement's `seq`, or none when there is no such placement.
    fn placement_seq(&self, chunk: &str, scope: &str, kind: i64) -> Result<Option<Option<i64>>>;
    /// Places a chunk; the placement's row id.
    fn insert_placement(&self, p: &NewPlacementRow<'_>) -> Result<i64>;
    /// The chunks other than row `except` holding `seq` on `scope`.
    fn seq_holders(&self, scope: &str, seq: i64, except: i64) -> Result<Vec<String>>;
    /// The highest `seq` on `scope`.
    fn max_seq(&self, scope: &str) -> Result<Option<i64>>;
    /// Gives placement row `rid` its `seq`.
    fn set_seq(&self, rid: i64, seq: i64) -> Result<()>;
    /// The scopes `chunk` is an instance of.
    fn instance_scopes(&self, chunk: &str) -> Result<Vec<String>>;
    /// Another instance of `scope` whose body's `field` is `value` (JSON).
    fn unique_clash(
        &self,
        scope: &str,
        chunk: &str,
        field: &str,
        value: &serde_json::Value,
    ) -> Result<Option<String>>;
    /// The scopes `chunk` is placed on, either type.
    fn scopes_of(&self, chunk: &str) -> Result<Vec<String>>;
    /// Stores a commit's record (`record`: the commit as JSON).
    fn insert_commit(&self, commit: &Commit, record: &str) -> Result<()>;
    /// The records of the commits after `after` up to `upto`, in order.
    fn records_between(&self, after: i64, upto: i64) -> Result<Vec<String>>;
    // ---- a whole store, row by row (`copy.rs`) ----
    /// Commits after id `after`, ascending, at most `limit`.
    fn raw_commits(&self, after: i64, limit: i64) -> Result<Vec<RawCommit>>;
    /// Chunk versions after vid `after`, ascending, at most `limit`.
    fn raw_chunks(&self, after: i64, limit: i64) -> Result<Vec<RawChunk>>;
    /// Placements after rid `after`, ascending, at most `limit`.
    fn raw_placements(&self, after: i64, limit: i64) -> Result<Vec<RawPlacement>>;
    /// Writes a commit as it was stored.
    fn load_commit(&self, c: &RawCommit) -> Result<()>;
    /// Writes a chunk version as it was stored.
    fn load_chunk(&self, c: &RawChunk) -> Result<()>;
    /// Writes a placement as it was stored.
    fn load_placement(&self, p: &RawPlacement) -> Result<()>;
    /// Tells other engines commit `id` is made, once it is (nothing to do
    /// where they read the same file).
    fn announce(&self, _id: i64) -> Result<()> {
        Ok(())
    }
}

/// A placement ended by the removal of a chunk: chunk, scope, type, seq.
pub(crate) type EndedPlacement = (String, String, i64, Option<i64>);

/// The stored text of one chunk version.
pub(crate) struct VersionText<'a> {
    pub name: &'a Option<String>,
    pub spec: &'a str,
    pub body: &'a str,
    pub placements: &'a str,
}

/// A placement to write.
pub(crate) struct NewPlacementRow<'a> {
    pub chunk: &'a str,
    pub ckey: i64,
    pub scope: &'a str,
    pub kind: i64,
    pub seq: Option<i64>,
    pub began: i64,
    pub pos: i64,
}
