//! [`Substrate`]: the SQLite store — one writer connection, a pool of
//! readers, and a broadcast of every commit once it is durable.

mod cache;
mod checkpoint;
// (the PostgreSQL store answers as SQLite's under test; it is opened
// through `Substrate` once the backends are one enum: issue 34, next)
#[cfg(feature = "postgres")]
#[cfg_attr(not(test), allow(dead_code))]
mod pg;
mod read;
mod schema;
mod snapshot;
mod sqlite_tx;
mod text;
mod tx;
mod write;

pub use read::DEFAULT_LIMIT;
pub use schema::SCHEMA_VERSION;
pub use snapshot::Snapshot;
pub use write::MAX_BODY_BYTES;

use crate::error::{Error, Result};
use crate::types::{Commit, CommitId, Declaration, ScopeOpts, ScopeResult};
use rusqlite::{Connection, OpenFlags, TransactionBehavior};
use snapshot::At;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use tokio::sync::broadcast;

/// How hard a commit tries to survive.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Durability {
    /// `synchronous=NORMAL`: a commit survives a crash of any process.
    #[default]
    Normal,
    /// `synchronous=FULL`: a commit also survives power loss.
    Full,
}

/// Settings for [`Substrate::open_with`].
#[derive(Clone, Debug)]
pub struct Options {
    /// Durability of commits.
    pub durability: Durability,
    /// Commits a subscriber may fall behind before it gets `Lagged`.
    pub broadcast_capacity: usize,
    /// Idle reader connections kept open.
    pub max_idle_readers: usize,
    /// Bytes of assembled chunk versions kept in memory (0: none). Versions
    /// never change, so the cache is exact for every read.
    pub cache_bytes: usize,
    /// Whether a commit indexes its text for full-text search itself,
    /// before it returns, instead of leaving it to the indexing thread
    /// (`text.rs`). Searches find the same either way: a lever, only to
    /// measure the difference (the `bench` feature).
    #[cfg(feature = "bench")]
    pub index_text_inline: bool,
}

impl Options {
    /// Whether commits index their own text (a lever; never without the
    /// `bench` feature).
    fn index_text_inline(&self) -> bool {
        #[cfg(feature = "bench")]
        return self.index_text_inline;
        #[cfg(not(feature = "bench"))]
        false
    }
}

impl Default for Options {
    fn default() -> Self {
        Options {
            durability: Durability::Normal,
            broadcast_capacity: 4096,
            max_idle_readers: 8,
            cache_bytes: 64 * 1024 * 1024,
            #[cfg(feature = "bench")]
            index_text_inline: false,
        }
    }
}

/// The store. Cheap to share behind an `Arc`; every method takes `&self`.
pub struct Substrate {
    path: PathBuf,
    options: Options,
    writer: Arc<Mutex<Connection>>,
    readers: Mutex<Vec<Connection>>,
    events: broadcast::Sender<Arc<Commit>>,
    checkpointer: checkpoint::Checkpointer,
    indexer: text::Indexer,
    cache: cache::VersionCache,
    /// Every commit up to this one has been broadcast here (made here, or
    /// by another process and followed).
    broadcast_upto: std::sync::atomic::AtomicU64,
}

impl std::fmt::Debug for Substrate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Substrate")
            .field("path", &self.path)
            .finish()
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic while holding a connection leaves SQLite consistent (an open
    // transaction rolls back when reused), so poisoning is not fatal.
    m.lock().unwrap_or_else(PoisonError::into_inner)
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

/// A connection never opens the file through a symbolic link.
pub(crate) const NOFOLLOW: OpenFlags = OpenFlags::SQLITE_OPEN_NOFOLLOW;

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

/// How long a connection waits for another process's lock on the file.
pub(crate) const BUSY_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

impl Substrate {
    /// Opens (creating if needed) the substrate at `path` with default options.
    pub fn open(path: impl AsRef<Path>) -> Result<Substrate> {
        Substrate::open_with(path, Options::default())
    }

    /// Opens (creating if needed) the substrate at `path`, migrating its schema.
    pub fn open_with(path: impl AsRef<Path>, options: Options) -> Result<Substrate> {
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
        let (events, _) = broadcast::channel(options.broadcast_capacity.max(1));
        let checkpointer = checkpoint::Checkpointer::start(&path)?;
        // A log left long by short-lived processes (each exits before its
        // own checkpoint comes due) slows every read: fold it back now.
        let wal = path.with_extension("db-wal");
        if std::fs::metadata(&wal).is_ok_and(|m| m.len() > LONG_WAL_BYTES) {
            checkpointer.request();
        }
        let cache = cache::VersionCache::new(options.cache_bytes);
        let upto = head_of(&writer)?;
        let writer = Arc::new(Mutex::new(writer));
        let indexer = text::Indexer::start(Arc::downgrade(&writer))?;
        Ok(Substrate {
            path,
            options,
            writer,
            readers: Mutex::new(Vec::new()),
            events,
            checkpointer,
            indexer,
            cache,
            broadcast_upto: std::sync::atomic::AtomicU64::new(upto),
        })
    }

    /// Copies the write-ahead log back into the database and empties it
    /// when no other connection is reading (else copies what they allow);
    /// never waits. A short-lived host calls it before it exits: the next
    /// process to open the store would otherwise read the whole log to
    /// recover its index, and the log would grow across processes that
    /// each commit less than a checkpoint's worth.
    pub fn checkpoint(&self) -> Result<()> {
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
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// A receiver of every commit, in order, once durable. A receiver that
    /// falls more than `broadcast_capacity` behind gets `Lagged`; the writer
    /// never waits for it.
    pub fn subscribe(&self) -> broadcast::Receiver<Arc<Commit>> {
        self.events.subscribe()
    }

    /// Applies `decl` atomically and returns the commit record.
    /// `dispatch_id` is the process whose run caused it (`None` for the host).
    pub fn commit(&self, decl: Declaration, dispatch_id: Option<&str>) -> Result<Commit> {
        self.commit_with(decl, dispatch_id, |_| Ok::<(), Error>(()))
    }

    /// Like [`commit`](Self::commit), first running `guard` inside the
    /// write transaction on the state before the declaration. An error from
    /// the guard (the engine's boundary checks) aborts with nothing written.
    pub fn commit_with<E: From<Error>>(
        &self,
        decl: Declaration,
        dispatch_id: Option<&str>,
        guard: impl FnOnce(&Snapshot<'_>) -> Result<(), E>,
    ) -> Result<Commit, E> {
        write::check_shape(&decl)?;
        let mut conn = lock(&self.writer);
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(Error::from)?;
        let head = head_of(&tx)?;
        guard(&Snapshot::writing(&*tx, head))?;
        let n = head + 1;
        let timestamp = humantime::format_rfc3339_millis(std::time::SystemTime::now()).to_string();
        let (commit, text_queued) = write::Apply::new(&*tx, n)?.run(
            decl,
            (head > 0).then_some(head),
            timestamp,
            dispatch_id.map(str::to_owned),
        )?;
        let record = serde_json::to_string(&commit)
            .map_err(|e| Error::Storage(format!("cannot encode commit record: {e}")))?;
        tx::Tx::insert_commit(&*tx, &commit, &record)?;
        let inline = self.options.index_text_inline();
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
        if let Err(e) = self.broadcast_between(&conn, head) {
            tracing::warn!("commits other processes made could not be broadcast: {e}");
        }
        // No receivers is not an error: nobody is listening yet.
        let _ = self.events.send(Arc::clone(&commit));
        self.broadcast_upto
            .store(n, std::sync::atomic::Ordering::Release);
        drop(conn);
        Ok(Arc::unwrap_or_clone(commit))
    }

    /// Broadcasts the commits other processes made on this file since the
    /// last one broadcast here, in order, as if they were made here — so
    /// subscribers of one engine see another engine's work (a terminal's
    /// `hc run` beside `hc serve`). Cheap when there are none (one read of
    /// the head). Answers how many it broadcast.
    pub fn follow(&self) -> Result<usize> {
        let head = self.head()?;
        if head
            <= self
                .broadcast_upto
                .load(std::sync::atomic::Ordering::Acquire)
        {
            return Ok(0);
        }
        // Under the writer's lock: no commit of this process is between
        // its write and its broadcast meanwhile.
        let conn = lock(&self.writer);
        let sent = self.broadcast_between(&conn, head)?;
        self.broadcast_upto
            .fetch_max(head, std::sync::atomic::Ordering::AcqRel);
        Ok(sent)
    }

    /// Broadcasts the commit records after the last one broadcast, up to
    /// `head` (the writer's lock held by the caller).
    fn broadcast_between(&self, conn: &Connection, head: CommitId) -> Result<usize> {
        let upto = self
            .broadcast_upto
            .load(std::sync::atomic::Ordering::Acquire);
        if head <= upto {
            return Ok(0);
        }
        let records = tx::Tx::records_between(conn, upto as i64, head as i64)?;
        let mut sent = 0;
        for record in records {
            let commit: Commit = serde_json::from_str(&record)
                .map_err(|e| Error::Storage(format!("unreadable commit record: {e}")))?;
            let _ = self.events.send(Arc::new(commit));
            sent += 1;
        }
        self.broadcast_upto
            .fetch_max(head, std::sync::atomic::Ordering::AcqRel);
        Ok(sent)
    }

    /// Reads `ids` with `opts` (see the crate docs).
    pub fn scope<S: AsRef<str>>(&self, ids: &[S], opts: &ScopeOpts) -> Result<ScopeResult> {
        let ids: Vec<String> = ids.iter().map(|s| s.as_ref().to_owned()).collect();
        read::check_request(&ids, opts)?;
        self.read(|snap| snap.scope(&ids, opts))
    }

    /// Runs `f` on one consistent snapshot at head: several reads (and the
    /// checks that guard them) see the same state. A search in `f` that
    /// found the full-text index behind (text a commit queued, not yet
    /// indexed) has the queue indexed — a batch per transaction, so
    /// commits go on between — and `f` run again; should text have been
    /// queued again meanwhile, `f` runs inside a write transaction, where
    /// the search indexes it first. Either way it finds everything
    /// committed before it.
    pub fn read<T, E: From<Error>>(
        &self,
        mut f: impl FnMut(&Snapshot<'_>) -> Result<T, E>,
    ) -> Result<T, E> {
        for _ in 0..2 {
            let behind = std::cell::Cell::new(false);
            let result = self.read_once(&mut f, &behind);
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
                cache: Some(&self.cache),
                behind: Some(behind),
            })?;
            tx.finish().map_err(Error::from)?;
            Ok(out)
        })();
        self.give_back(conn);
        result
    }

    /// The latest commit id (0 when nothing was committed).
    pub fn head(&self) -> Result<CommitId> {
        self.read(|snap| Ok::<_, Error>(snap.head_id()))
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
        if idle.len() < self.options.max_idle_readers {
            idle.push(conn);
        }
    }
}

#[cfg(test)]
impl Substrate {
    /// Runs `f` in the write transaction (its head given), committing
    /// when it succeeds: the shared write logic, driven by a test.
    pub(crate) fn with_writer_for_test<R>(
        &self,
        f: impl FnOnce(&dyn tx::Tx, i64) -> Result<R>,
    ) -> Result<R> {
        let mut writer = lock(&self.writer);
        let tx = writer.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
        let head = tx::Tx::head(&*tx)?;
        let out = f(&*tx, head)?;
        tx.commit()?;
        Ok(out)
    }
}

fn head_of(conn: &Connection) -> Result<CommitId> {
    Ok(tx::Tx::head(conn)? as CommitId)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::{ChunkDecl, Include, NewPlacement};
    use serde_json::json;

    #[test]
    fn another_processs_commits_are_followed_in_order_once() {
        let dir = tempfile::tempdir().unwrap();
        let ours = Substrate::open(dir.path().join("p.db")).unwrap();
        let theirs = Substrate::open(dir.path().join("p.db")).unwrap();
        let mut events = ours.subscribe();
        let made = |db: &Substrate, id: &str| {
            db.commit(Declaration::of(vec![ChunkDecl::with_id(id)]), None)
                .unwrap()
                .id
        };
        let a = made(&theirs, "a");
        assert_eq!(ours.follow().unwrap(), 1);
        assert_eq!(ours.follow().unwrap(), 0, "once");
        let b = made(&theirs, "b");
        // our own commit after theirs: theirs is broadcast first
        let c = made(&ours, "c");
        assert_eq!(ours.follow().unwrap(), 0);
        let got: Vec<CommitId> = (0..3).map(|_| events.try_recv().unwrap().id).collect();
        assert_eq!(got, vec![a, b, c]);
        assert!(events.try_recv().is_err());
    }

    /// Every statement a realistic workload runs must find its rows through
    /// an index: no full scan of `chunks` or `placements` (reads of the
    /// whole substrate aside, which scan by definition).
    #[test]
    fn hot_statements_never_scan_a_table() {
        let dir = tempfile::tempdir().unwrap();
        let db = Substrate::open(dir.path().join("p.db")).unwrap();
        let session = json!({"propagate": true, "ordered": true, "accepts": ["prompt"]});
        db.init(vec![
            ChunkDecl::with_id("agent"),
            ChunkDecl::with_id("session")
                .spec(session)
                .on(NewPlacement::instance("agent")),
            ChunkDecl::with_id("prompt").on(NewPlacement::instance("agent")),
            ChunkDecl::with_id("answer").on(NewPlacement::instance("agent")),
        ])
        .unwrap();
        db.commit(
            Declaration::of(vec![
                ChunkDecl::with_id("s").on(NewPlacement::instance("session")),
                ChunkDecl::with_id("u").spec(json!({"unique": ["k"]})),
            ]),
            None,
        )
        .unwrap();
        for i in 0..3 {
            db.commit(
                Declaration::of(vec![
                    ChunkDecl::generated()
                        .body(json!({"text": format!("hello {i}")}))
                        .on(NewPlacement::instance("s"))
                        .on(NewPlacement::instance("prompt")),
                    ChunkDecl::generated()
                        .body(json!({"k": i}))
                        .on(NewPlacement::instance("u")),
                ]),
                None,
            )
            .unwrap();
        }
        let c = db
            .commit(
                Declaration::of(vec![
                    ChunkDecl::with_id("x").on(NewPlacement::instance("s").at(99)),
                ]),
                None,
            )
            .err();
        assert!(c.is_some());
        let head = db.head().unwrap();
        let x = db
            .commit(
                Declaration::of(vec![ChunkDecl::with_id("x").on(NewPlacement::relates("s"))]),
                None,
            )
            .unwrap();
        db.commit(
            Declaration {
                remove: crate::types::Removals {
                    chunks: vec!["x".into()],
                    ..Default::default()
                },
                ..Default::default()
            },
            None,
        )
        .unwrap();
        assert_eq!(x.created, vec!["x"]);
        for opts in [
            ScopeOpts::default(),
            ScopeOpts {
                as_of: Some(head),
                ..ScopeOpts::default()
            },
            ScopeOpts {
                match_: Some("hello".into()),
                limit: Some(2),
                ..ScopeOpts::default()
            },
            ScopeOpts {
                exclude: vec!["answer".into()],
                include: Include {
                    body: false,
                    dimensions: true,
                },
                ..ScopeOpts::default()
            },
        ] {
            db.scope(&["s"], &opts).unwrap();
            db.scope(&["s", "prompt"], &opts).unwrap();
        }
        db.scope(&["commits_root"], &ScopeOpts::default()).unwrap();
        db.read(|s| s.reaches_any("s", &["agent".to_owned()]))
            .unwrap();
        let seen = snapshot::plans::take();
        let conn = Connection::open(dir.path().join("p.db")).unwrap();
        rusqlite::vtab::array::load_module(&conn).unwrap();
        let mut checked = 0;
        for sql in &seen {
            if sql.contains("UPDATE") || sql.contains("chunk_text MATCH") {
                continue;
            }
            let sql_at = sql.replace("?20", "1");
            let mut stmt = conn
                .prepare(&format!("EXPLAIN QUERY PLAN {sql_at}"))
                .unwrap();
            let count = stmt.parameter_count();
            let params: Vec<rusqlite::types::Value> =
                (0..count).map(|_| rusqlite::types::Value::Null).collect();
            let plan: Vec<String> = stmt
                .query_map(rusqlite::params_from_iter(params), |r| {
                    r.get::<_, String>(3)
                })
                .unwrap()
                .map(|r| r.unwrap())
                .collect();
            for step in &plan {
                let scans_table = step.starts_with("SCAN")
                    && !step.contains("VIRTUAL TABLE")
                    && !step.starts_with("SCAN up")
                    && !step.contains("CONSTANT ROW");
                assert!(!scans_table, "{sql}\nplans a full scan: {plan:?}");
            }
            checked += 1;
        }
        assert!(checked >= 20, "only {checked} statements were checked");
    }
}
