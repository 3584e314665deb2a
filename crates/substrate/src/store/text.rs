//! Full-text indexing off the commit path. Tokenizing a chunk's text into
//! the FTS5 index is the dearest part of a commit that carries a large
//! body (a 190 KB tool output: about 2 ms), and no commit's caller needs
//! it done: a commit only queues the keys whose text changed
//! (`text_queue`, in its own transaction), and a thread indexes them soon
//! after, under the writer's lock, in transactions of its own. A search
//! never reads an index that is behind: one that finds the queue non-empty
//! has it indexed first (inline in a write transaction; else
//! [`Substrate::read`](super::Substrate::read) indexes it and runs the read
//! again), so a search right after a commit finds what it committed. The
//! queue is in the file: keys a process queued and never indexed (it was
//! killed) are indexed by the next one to search or commit.

use crate::error::{Error, Result};
use rusqlite::Connection;
use serde_json::Value;
use std::sync::mpsc::{self, SyncSender};
use std::sync::{Mutex, Weak};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Keys indexed per transaction, so a commit waits at most one batch.
const BATCH: usize = 32;
/// Text indexed per transaction (a batch ends once past it).
const BATCH_BYTES: usize = 256 * 1024;

/// Queues `key` for indexing (inside a commit's transaction).
pub(crate) fn queue(conn: &Connection, key: i64) -> Result<()> {
    conn.prepare_cached("INSERT OR IGNORE INTO text_queue (key) VALUES (?1)")?
        .execute([key])?;
    Ok(())
}

/// Whether any key waits to be indexed.
pub(crate) fn behind(conn: &Connection) -> Result<bool> {
    Ok(conn
        .prepare_cached("SELECT EXISTS (SELECT 1 FROM text_queue)")?
        .query_row([], |r| r.get::<_, bool>(0))?)
}

/// Indexes one batch of queued keys inside the caller's write transaction:
/// each key's old text out of the index, its current text (if it is still
/// live) in. Answers how many keys it took.
pub(crate) fn index_batch(conn: &Connection) -> Result<usize> {
    let keys: Vec<i64> = conn
        .prepare_cached("SELECT key FROM text_queue ORDER BY key LIMIT ?1")?
        .query_map([BATCH as i64], |r| r.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    let mut bytes = 0;
    for (n, key) in keys.iter().enumerate() {
        bytes += index_key(conn, *key)?;
        if bytes > BATCH_BYTES {
            return Ok(n + 1);
        }
    }
    Ok(keys.len())
}

/// Indexes `key`'s current text and takes it off the queue; the text's
/// size.
pub(crate) fn index_key(conn: &Connection, key: i64) -> Result<usize> {
    conn.prepare_cached("DELETE FROM chunk_text WHERE rowid = ?1")?
        .execute([key])?;
    let current = conn
        .prepare_cached(
            "SELECT name, body FROM chunks INDEXED BY chunks_by_key \
             WHERE key = ?1 AND ended IS NULL",
        )?
        .query_row([key], |r| {
            Ok((r.get::<_, Option<String>>(0)?, r.get::<_, String>(1)?))
        });
    let bytes = match current {
        Ok((name, body)) => index(conn, key, name, &body)?,
        Err(rusqlite::Error::QueryReturnedNoRows) => 0, // removed since
        Err(e) => return Err(e.into()),
    };
    conn.prepare_cached("DELETE FROM text_queue WHERE key = ?1")?
        .execute([key])?;
    Ok(bytes)
}

/// Indexes every queued key inside the caller's write transaction.
pub(crate) fn index_all(conn: &Connection) -> Result<()> {
    while index_batch(conn)? > 0 {}
    Ok(())
}

/// Indexes every queued key, a batch per transaction, on the writer
/// connection `writer` (taken for each batch, so commits go between).
pub(crate) fn catch_up(writer: &Mutex<Connection>) -> Result<()> {
    loop {
        let mut conn = super::conn::lock(writer);
        let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
        let n = index_batch(&tx)?;
        tx.commit()?;
        if n == 0 {
            return Ok(());
        }
    }
}

/// The text of a chunk the index keeps: its name and every string in its
/// body; its size.
fn index(conn: &Connection, key: i64, name: Option<String>, body: &str) -> Result<usize> {
    // (the words `match_` reads, as both backends index them)
    let text = super::words::words(&text_for(name.as_deref(), body)).join(" ");
    if text.is_empty() {
        return Ok(0);
    }
    conn.prepare_cached("INSERT INTO chunk_text (rowid, text) VALUES (?1, ?2)")?
        .execute(rusqlite::params![key, text])?;
    Ok(text.len())
}

/// The text the full-text index keeps of a chunk: its name, then every
/// string of its body.
pub(crate) fn text_for(name: Option<&str>, body: &str) -> String {
    let mut text = name.unwrap_or_default().to_owned();
    let value: Value = serde_json::from_str(body).unwrap_or_default();
    collect_strings(&value, &mut text);
    text
}

/// Appends every string in `value` to `out`, space-separated.
pub(crate) fn collect_strings(value: &Value, out: &mut String) {
    match value {
        Value::String(s) => {
            if !out.is_empty() {
                out.push('\n');
            }
            out.push_str(s);
        }
        Value::Array(items) => items.iter().for_each(|v| collect_strings(v, out)),
        Value::Object(map) => map.values().for_each(|v| collect_strings(v, out)),
        _ => {}
    }
}

/// How long the store must go without a commit that queued text before
/// the thread indexes: commits come in bursts (a turn's), and FTS5 takes a
/// batch of texts in one transaction for much less than each in its own.
const QUIET: Duration = Duration::from_millis(10);
/// The longest the thread waits for quiet once text is queued.
const MAX_WAIT: Duration = Duration::from_millis(200);

/// After a first wake: waits until no wake has come for [`QUIET`], or
/// [`MAX_WAIT`] has passed. False when the store is closing.
fn wait_for_quiet(requests: &mpsc::Receiver<()>) -> bool {
    let since = Instant::now();
    while since.elapsed() < MAX_WAIT {
        match requests.recv_timeout(QUIET) {
            Ok(()) => {}
            Err(mpsc::RecvTimeoutError::Timeout) => return true,
            Err(mpsc::RecvTimeoutError::Disconnected) => return false,
        }
    }
    true
}

/// The indexing thread, woken after each commit that queued text.
pub(crate) struct Indexer {
    wake: Option<SyncSender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl Indexer {
    /// Starts the thread on the writer connection (held weakly: it ends
    /// with the store); it indexes whatever is queued at once.
    pub(crate) fn start(writer: Weak<Mutex<Connection>>) -> Result<Indexer> {
        let (wake, requests) = mpsc::sync_channel::<()>(1);
        let _ = wake.try_send(());
        let thread = std::thread::Builder::new()
            .name("substrate-text".into())
            .spawn(move || {
                while requests.recv().is_ok() {
                    let open = wait_for_quiet(&requests);
                    let Some(writer) = writer.upgrade() else {
                        return;
                    };
                    if let Err(e) = catch_up(&writer) {
                        // Harmless: the next search or wake indexes it.
                        tracing::debug!("text indexing failed: {e}");
                    }
                    if !open {
                        return;
                    }
                }
            })
            .map_err(|e| Error::Storage(format!("cannot start the text indexing thread: {e}")))?;
        Ok(Indexer {
            wake: Some(wake),
            thread: Some(thread),
        })
    }

    /// Asks for the queue to be indexed, without waiting (a request already
    /// pending is enough).
    pub(crate) fn wake(&self) {
        if let Some(wake) = &self.wake {
            let _ = wake.try_send(());
        }
    }
}

impl Drop for Indexer {
    fn drop(&mut self) {
        self.wake.take();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
