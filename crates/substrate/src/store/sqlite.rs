//! The substrate in a SQLite file: one writer connection, a pool of
//! readers, WAL checkpoints and full-text indexing on threads of their
//! own (`checkpoint.rs`, `text.rs`), its statements in `sqlite_tx.rs`.

use super::conn::{BUSY_WAIT, NOFOLLOW, lock};
use super::snapshot::{At, Snapshot};
use super::{Durability, Options, Shared, checkpoint, schema, text, tx, write};
use crate::error::{Error, Result};
use crate::types::{Commit, CommitId, Declaration};
use rusqlite::{Connection, OpenFlags, TransactionBehavior};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// A substrate's SQLite file and its connections.
pub(crate) struct SqliteStore {
    path: PathBuf,
    max_idle_readers: usize,
    writer: Arc<Mutex<Connection>>,
    readers: Mutex<Vec<Connection>>,
    checkpointer: checkpoint::Checkpointer,
    indexer: text::Indexer,
}

/// A write-ahead log longer than this at open is checkpointed at once.
const LONG_WAL_BYTES: u64 = 8 << 20;

/// Makes the file at `path`, when there is none, readable by its owner
/// only (SQLite gives its log and index files the same mode): the store
/// holds everything every tool read.
fn private_file(path: &Path) -> Result<()> {
    use std::os::unix::fs::OpenOptionsExt as _;
    match std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
    {
        Err(e) if e.kind() != std::io::ErrorKind::AlreadyExists => Err(Error::Storage(format!(
            "cannot create the substrate at {}: {e}",
            path.display()
        ))),
        _ => Ok(()),
    }
}

/// Refuses a store whose file, or a file SQLite keeps beside it (the
/// write-ahead log, the shared memory, the journal), is a symbolic link:
/// SQLite would write through it — a checkout shipping
/// `substrate.db-wal -> ~/.bashrc` would have it overwritten.
fn refuse_links(path: &Path) -> Result<()> {
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned());
    let name = name.unwrap_or_default();
    for suffix in ["", "-wal", "-shm", "-journal"] {
        let file = path.with_file_name(format!("{name}{suffix}"));
        if std::fs::symlink_metadata(&file).is_ok_and(|m| m.file_type().is_symlink()) {
            let target = std::fs::read_link(&file)
                .map(|t| format!(" (to {})", t.display()))
                .unwrap_or_default();
            return Err(Error::Storage(format!(
                "{} is a symbolic link{target}: the store never writes through a link, which \
                 could point at any of your files; remove it (rm {}) and open again",
                file.display(),
                file.display()
            )));
        }
    }
    Ok(())
}

impl SqliteStore {
    /// Opens (creating if needed) the substrate at `path`, migrating its schema.
    pub(crate) fn open(
        path: impl AsRef<Path>,
        options: &Options,
    ) -> Result<(SqliteStore, CommitId)> {
        let path = path.as_ref().to_path_buf();
        refuse_links(&path)?;
        private_file(&path)?;
        let mut writer = Connection::open_with_flags(&path, OpenFlags::default() | NOFOLLOW)
            .map_err(|e| {
                Error::Storage(format!(
                    "cannot open the substrate at {}: {e}",
                    path.display()
                ))
            })?;
        // Switching a new file to WAL can be refused at once (no busy
        // wait) while another process opening it holds its lock: try again
        // until the busy wait has passed.
        let deadline = std::time::Instant::now() + BUSY_WAIT;
        loop {
            let opened = schema::configure(&writer, options.durability == Durability::Full)
                .and_then(|()| schema::migrate(&mut writer));
            match opened {
                Err(e)
                    if e.to_string().contains("locked") && std::time::Instant::now() < deadline =>
                {
                    std::thread::sleep(std::time::Duration::from_millis(20));
                }
                other => break other?,
            }
        }
        let checkpointer = checkpoint::Checkpointer::start(&path)?;
        // A log left long by short-lived processes (each exits before its
        // own checkpoint comes due) slows every read: fold it back now.
        let wal = path.with_extension("db-wal");
        if std::fs::metadata(&wal).is_ok_and(|m| m.len() > LONG_WAL_BYTES) {
            checkpointer.request();
        }
        let upto = head_of(&writer)?;
        let writer = Arc::new(Mutex::new(writer));
        let indexer = text::Indexer::start(Arc::downgrade(&writer))?;
        let store = SqliteStore {
            path,
            max_idle_readers: options.max_idle_readers,
            writer,
            readers: Mutex::new(Vec::new()),
            checkpointer,
            indexer,
        };
        Ok((store, upto))
    }

    /// Copies the write-ahead log back into the database and empties it
    /// when no other connection is reading (else copies what they allow);
    /// never waits. A short-lived host calls it before it exits: the next
    /// process to open the store would otherwise read the whole log to
    /// recover its index, and the log would grow across processes that
    /// each commit less than a checkpoint's worth.
    pub(crate) fn checkpoint(&self) -> Result<()> {
        // Text still queued for the index goes in first: the next process
        // would otherwise index it on its first search or commit.
        text::catch_up(&self.writer)?;
        let writer = self
            .writer
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        // Truncate the log when no one else is reading it — the next
        // process to open the store then has no log to recover — but never
        // wait for another process to let go: then a passive checkpoint.
        writer.busy_timeout(std::time::Duration::ZERO)?;
        let truncated = writer.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |r| {
            r.get::<_, i64>(0)
        });
        writer.busy_timeout(BUSY_WAIT)?;
        if !matches!(truncated, Ok(0)) {
            writer.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(()))?;
        }
        Ok(())
    }

    /// The database file.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// Like [`commit`](Self::commit), first running `guard` inside the
    /// write transaction on the state before the declaration. An error from
    /// the guard (the engine's boundary checks) aborts with nothing written.
    pub(crate) fn commit_with<E: From<Error>>(
        &self,
        shared: &Shared,
        decl: Declaration,
        by: write::By<'_>,
        guard: impl FnOnce(&Snapshot<'_>) -> Result<(), E>,
    ) -> Result<Commit, E> {
        write::check_shape(&decl)?;
        let mut conn = lock(&self.writer);
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(Error::from)?;
        let head = head_of(&tx)?;
        guard(&Snapshot::guarding(&*tx, head, shared))?;
        let n = head + 1;
        let timestamp = humantime::format_rfc3339_millis(std::time::SystemTime::now()).to_string();
        let (commit, text_queued, rows) =
            write::Apply::new(&*tx, n)?.knowing(&shared.out.facts).run(
                decl,
                (head > 0).then_some(head),
                timestamp,
                by.dispatch_id.map(str::to_owned),
                by.author,
            )?;
        let record = serde_json::to_string(&commit)
            .map_err(|e| Error::Storage(format!("cannot encode commit record: {e}")))?;
        tx::Tx::insert_commit(&*tx, &commit, &record)?;
        let inline = shared.options.index_text_inline();
        if inline {
            for key in &text_queued {
                text::index_key(&tx, *key)?;
            }
        }
        tx.commit().map_err(Error::from)?;
        self.checkpointer.committed();
        if !text_queued.is_empty() && !inline {
            self.indexer.wake();
        }
        let commit = Arc::new(commit);
        // What another process committed before this one, not yet followed,
        // goes out first: subscribers see commits in order. This commit has
        // landed whatever happens here: a record of another's that cannot
        // be read is said, never this commit's failure (its caller would
        // take it for not made, and make it again).
        if let Err(e) = self.broadcast_between(shared, &conn, head) {
            tracing::warn!("commits other processes made could not be broadcast: {e}");
        }
        shared.made(Arc::clone(&commit), &rows);
        drop(conn);
        Ok(Arc::unwrap_or_clone(commit))
    }

    /// Broadcasts the commits other processes made on this file since the
    /// last one broadcast here, in order, as if they were made here — so
    /// subscribers of one engine see another engine's work (a terminal's
    /// `hc run` beside `hc serve`). Cheap when there are none (one read of
    /// the head). Answers how many it broadcast.
    pub(crate) fn follow(&self, shared: &Shared) -> Result<usize> {
        let head = self.head(shared)?;
        if head <= shared.out.upto() {
            return Ok(0);
        }
        // Under the writer's lock: no commit of this process is between
        // its write and its broadcast meanwhile.
        let conn = lock(&self.writer);
        self.broadcast_between(shared, &conn, head)
    }

    /// Broadcasts the commit records after the last one broadcast, up to
    /// `head` (the writer's lock held by the caller).
    fn broadcast_between(
        &self,
        shared: &Shared,
        conn: &Connection,
        head: CommitId,
    ) -> Result<usize> {
        let upto = shared.out.upto();
        if head <= upto {
            return Ok(0);
        }
        let records = tx::Tx::records_between(conn, upto as i64, head as i64)?;
        shared.out.broadcast(&records, head)
    }

    /// Runs `f` on one consistent snapshot at head: several reads (and the
    /// checks that guard them) see the same state. A search in `f` that
    /// found the full-text index behind (text a commit queued, not yet
    /// indexed) has the queue indexed — a batch per transaction, so
    /// commits go on between — and `f` run again; should text have been
    /// queued again meanwhile, `f` runs inside a write transaction, where
    /// the search indexes it first. Either way it finds everything
    /// committed before it.
    pub(crate) fn read<T, E: From<Error>>(
        &self,
        shared: &Shared,
        mut f: impl FnMut(&Snapshot<'_>) -> Result<T, E>,
    ) -> Result<T, E> {
        for _ in 0..2 {
            let behind = std::cell::Cell::new(false);
            let result = self.read_once(shared, &mut f, &behind);
            if !behind.get() {
                return result;
            }
            text::catch_up(&self.writer)?;
        }
        let mut conn = lock(&self.writer);
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(Error::from)?;
        let head = head_of(&tx)?;
        let out = f(&Snapshot::writing(&*tx, head))?;
        tx.commit().map_err(Error::from)?;
        Ok(out)
    }

    /// `f` on a reader's snapshot at head; `behind` set when a search in
    /// it found the index behind.
    fn read_once<T, E: From<Error>>(
        &self,
        shared: &Shared,
        f: &mut impl FnMut(&Snapshot<'_>) -> Result<T, E>,
        behind: &std::cell::Cell<bool>,
    ) -> Result<T, E> {
        let conn = self.reader()?;
        let result = (|| {
            let tx = conn.unchecked_transaction().map_err(Error::from)?;
            let head = head_of(&tx)?;
            let out = f(&Snapshot {
                tx: &*tx,
                at: At::Head,
                head,
                cache: Some(&shared.cache),
                behind: Some(behind),
                facts: Some(&shared.out.facts),
            })?;
            tx.finish().map_err(Error::from)?;
            Ok(out)
        })();
        self.give_back(conn);
        result
    }

    /// The latest commit id (0 when nothing was committed).
    pub(crate) fn head(&self, shared: &Shared) -> Result<CommitId> {
        self.read(shared, |snap| Ok::<_, Error>(snap.head_id()))
    }

    fn reader(&self) -> Result<Connection> {
        if let Some(conn) = lock(&self.readers).pop() {
            return Ok(conn);
        }
        let conn = Connection::open_with_flags(
            &self.path,
            OpenFlags::SQLITE_OPEN_READ_ONLY
                | OpenFlags::SQLITE_OPEN_NO_MUTEX
                | OpenFlags::SQLITE_OPEN_URI
                | NOFOLLOW,
        )?;
        schema::configure_reader(&conn)?;
        Ok(conn)
    }

    fn give_back(&self, conn: Connection) {
        let mut idle = lock(&self.readers);
        if idle.len() < self.max_idle_readers {
            idle.push(conn);
        }
    }
}

impl SqliteStore {
    /// See `Substrate::load`: the text it queued indexed after.
    pub(crate) fn load<R>(&self, f: impl FnOnce(&dyn tx::Tx, i64) -> Result<R>) -> Result<R> {
        let out = {
            let mut writer = lock(&self.writer);
            let tx = writer.transaction_with_behavior(TransactionBehavior::Immediate)?;
            let head = tx::Tx::head(&*tx)?;
            let out = f(&*tx, head)?;
            tx.commit()?;
            out
        };
        self.indexer.wake();
        Ok(out)
    }
}

#[cfg(test)]
impl SqliteStore {
    /// See `Substrate::with_writer_for_test`.
    pub(crate) fn with_writer_for_test<R>(
        &self,
        f: impl FnOnce(&dyn tx::Tx, i64) -> Result<R>,
    ) -> Result<R> {
        let mut writer = lock(&self.writer);
        let tx = writer.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let head = tx::Tx::head(&*tx)?;
        let out = f(&*tx, head)?;
        tx.commit()?;
        Ok(out)
    }
}

fn head_of(conn: &Connection) -> Result<CommitId> {
    Ok(tx::Tx::head(conn)? as CommitId)
}
