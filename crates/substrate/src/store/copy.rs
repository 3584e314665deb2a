//! Copying a whole substrate into an empty one, on either backend
//! (`hc store copy`): every row as it is stored — each chunk version,
//! placement and commit, their ids, commits and timestamps kept — read
//! in one consistent view and written in one transaction, then the text
//! of every live chunk indexed. Nothing is re-applied: the copy holds the
//! same history, not one like it.

use super::Substrate;
use super::tx::{Tx, VersionText};
use crate::error::{Error, Result};

/// Rows are read and written this many at a time.
const PAGE: i64 = 2000;

/// A chunk version as stored.
pub(crate) struct RawChunk {
    pub vid: i64,
    pub id: String,
    pub key: i64,
    pub name: Option<String>,
    pub spec: String,
    pub body: String,
    pub placements: String,
    pub began: i64,
    pub ended: Option<i64>,
}

/// A placement as stored.
pub(crate) struct RawPlacement {
    pub rid: i64,
    pub chunk: String,
    pub ckey: i64,
    pub scope: String,
    pub kind: i64,
    pub seq: Option<i64>,
    pub began: i64,
    pub pos: i64,
    pub ended: Option<i64>,
}

/// A commit as stored.
pub(crate) struct RawCommit {
    pub id: i64,
    pub parent_id: Option<i64>,
    pub branch: String,
    pub timestamp: String,
    pub dispatch_id: Option<String>,
    pub record: String,
}

impl Substrate {
    /// Copies every commit of this substrate, in order, into `to` — which
    /// must hold none — with every chunk version and placement, ids and
    /// timestamps kept. Answers how many commits were copied.
    ///
    /// # Errors
    /// `to` already holds commits; either store fails (nothing is then
    /// written to `to`).
    pub fn copy_to(&self, to: &Substrate) -> Result<u64> {
        let copied = self.read(|snap| {
            let from = snap.tx;
            let head = snap.head_id();
            to.load(|into, theirs| {
                if theirs != 0 {
                    return Err(Error::InvalidRequest(format!(
                        "the store copied to already holds {theirs} commits; copy only into an \
                         empty one (a new schema, ?schema=NAME, or a new file)"
                    )));
                }
                copy_rows(from, into)?;
                Ok(head)
            })
        })?;
        Ok(copied)
    }
}

/// Every row of `from` into `into`, page by page, then the text of the
/// chunks live at head queued for the index.
fn copy_rows(from: &dyn Tx, into: &dyn Tx) -> Result<()> {
    paged(
        |after| from.raw_commits(after, PAGE),
        |c| c.id,
        |c| into.load_commit(c),
    )?;
    paged(
        |after| from.raw_chunks(after, PAGE),
        |c| c.vid,
        |chunk| {
            into.load_chunk(chunk)?;
            if chunk.ended.is_some() {
                return Ok(());
            }
            let text = VersionText {
                name: &chunk.name,
                spec: &chunk.spec,
                body: &chunk.body,
                placements: &chunk.placements,
            };
            into.text_changed(chunk.key, Some(&text))
        },
    )?;
    paged(
        |after| from.raw_placements(after, PAGE),
        |p| p.rid,
        |p| into.load_placement(p),
    )
}

/// Reads pages of rows (`read` from after a row id), each row to `each`,
/// until a page is empty.
fn paged<T>(
    read: impl Fn(i64) -> Result<Vec<T>>,
    id: impl Fn(&T) -> i64,
    mut each: impl FnMut(&T) -> Result<()>,
) -> Result<()> {
    let mut after = 0;
    loop {
        let page = read(after)?;
        let Some(last) = page.last() else {
            return Ok(());
        };
        after = id(last);
        for row in &page {
            each(row)?;
        }
    }
}
