//! [`Substrate`]: the store — in a SQLite file (`sqlite.rs`) or a schema
//! on a PostgreSQL server (`pg/`), the same statements behind `Tx`, the
//! same logic — and a broadcast of every commit once it is durable.

mod cache;
mod checkpoint;
mod conn;
mod copy;
mod facts;
#[cfg(feature = "postgres")]
mod pg;
mod read;
mod schema;
mod snapshot;
mod sqlite;
mod sqlite_tx;
mod text;
mod tx;
mod words;
mod write;

#[cfg(feature = "postgres")]
pub(crate) use pg::conn::shown_store;
pub use read::DEFAULT_LIMIT;
pub use schema::SCHEMA_VERSION;
pub use snapshot::Snapshot;
pub use write::MAX_BODY_BYTES;

use crate::error::{Error, Result};
use crate::types::{Commit, CommitId, Declaration, ScopeOpts, ScopeResult};
use std::path::Path;
use std::sync::Arc;
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
    /// Whether the head's facts are left unused (`facts.rs`): every read
    /// asks the store, as before they were kept. A lever, only to measure
    /// the difference (the `bench` feature).
    #[cfg(feature = "bench")]
    pub without_facts: bool,
}

impl Options {
    /// Whether the head's facts are kept and used (always, but for the
    /// `bench` feature's lever).
    fn facts_kept(&self) -> bool {
        #[cfg(feature = "bench")]
        return !self.without_facts;
        #[cfg(not(feature = "bench"))]
        true
    }

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
            #[cfg(feature = "bench")]
            without_facts: false,
        }
    }
}

/// The store. Cheap to share behind an `Arc`; every method takes `&self`.
pub struct Substrate {
    backend: Backend,
    shared: Shared,
}

/// Where the substrate lives.
enum Backend {
    /// A SQLite file.
    Sqlite(sqlite::SqliteStore),
    /// A schema on a PostgreSQL server.
    #[cfg(feature = "postgres")]
    Postgres(pg::PgBackend),
}

/// What [`Substrate::info`] says.
#[derive(Clone, Debug, serde::Serialize)]
#[non_exhaustive]
pub struct StoreInfo {
    /// `sqlite` or `postgres`.
    pub backend: String,
    /// The file, or the server (no password) and schema.
    pub location: String,
    /// The version of its tables.
    pub schema_version: i64,
    /// The latest commit.
    pub head: CommitId,
    /// Bytes it takes (the file and its log; the schema's tables and
    /// indexes).
    pub bytes: u64,
}

/// What every backend shares: the options, the broadcast of commits, the
/// version cache.
pub(crate) struct Shared {
    /// Who this handle's commits are by (set by its host; see
    /// [`Substrate::sign`]).
    signer: std::sync::RwLock<Signer>,
    pub(crate) options: Options,
    pub(crate) cache: cache::VersionCache,
    pub(crate) out: Broadcaster,
}

/// The broadcast of commits to subscribers, and how far it has gone (a
/// follower thread holds one too).
#[derive(Clone)]
pub(crate) struct Broadcaster {
    pub(crate) events: broadcast::Sender<Arc<Commit>>,
    /// Every commit up to this one has been broadcast here (made here, or
    /// by another process and followed).
    pub(crate) upto: Arc<std::sync::atomic::AtomicU64>,
    /// What the head says about the structure, brought along with each
    /// commit broadcast.
    pub(crate) facts: Arc<facts::HeadFacts>,
}

impl Shared {
    fn new(options: Options, head: CommitId) -> Shared {
        let (events, _) = broadcast::channel(options.broadcast_capacity.max(1));
        let facts = Arc::new(facts::HeadFacts::new(head, options.facts_kept()));
        Shared {
            signer: std::sync::RwLock::default(),
            cache: cache::VersionCache::new(options.cache_bytes),
            options,
            out: Broadcaster {
                events,
                upto: Arc::new(std::sync::atomic::AtomicU64::new(head)),
                facts,
            },
        }
    }
}

/// Who a handle's commits are by: its host's person, host and front end
/// ([`Substrate::sign`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Signer {
    /// The person (on a shared store the database's role stands instead).
    pub person: String,
    /// The host.
    pub host: String,
    /// The front end: `terminal`, `page`, `sdk`, `acp`, `worker`, `serve`.
    pub via: String,
}

impl Shared {
    /// The author of a commit `dispatch_id` (a process) or the host
    /// makes, for `on_behalf` when given; `role` is the database's person
    /// on a shared store. `None` when nobody signed this handle (and no
    /// database says who).
    fn author(
        &self,
        role: Option<&str>,
        dispatch_id: Option<&str>,
        on_behalf: Option<&str>,
    ) -> Option<crate::types::Author> {
        let signer = self
            .signer
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if signer.person.is_empty() && signer.via.is_empty() && role.is_none() {
            return None;
        }
        Some(crate::types::Author {
            person: role.map_or_else(|| signer.person.clone(), str::to_owned),
            host: signer.host.clone(),
            via: match dispatch_id {
                Some(process) => format!("program:{process}"),
                None => signer.via.clone(),
            },
            on_behalf: on_behalf.map(str::to_owned),
        })
    }
}

impl Shared {
    /// A commit made here, durable: the versions it wrote kept in the
    /// version cache (a version never changes once committed, so a read
    /// of them right after asks the store nothing; large bodies are left to
    /// be read), then broadcast.
    pub(crate) fn made(&self, commit: Arc<Commit>, written: &facts::Written) {
        const LARGEST: usize = 64 * 1024;
        let items: Vec<(i64, Arc<crate::types::ChunkItem>)> = written
            .iter()
            .filter(|(_, row)| row.body.len() <= LARGEST)
            .map(|(id, row)| (row.vid, Arc::new(row.item(id))))
            .collect();
        self.cache.insert_many(&items);
        self.out.made(commit, written);
    }
}

impl Broadcaster {
    /// The last commit broadcast.
    pub(crate) fn upto(&self) -> CommitId {
        self.upto.load(std::sync::atomic::Ordering::Acquire)
    }

    /// Broadcasts the commit `records` (those after the last broadcast, up
    /// to `head`, in order); answers how many.
    pub(crate) fn broadcast(&self, records: &[String], head: CommitId) -> Result<usize> {
        let mut sent = 0;
        for record in records {
            // one record that cannot be read is said and passed over:
            // the rest go out, and none twice
            match serde_json::from_str::<Commit>(record) {
                Ok(commit) => {
                    self.facts.advance(&commit, None);
                    let _ = self.events.send(Arc::new(commit));
                    sent += 1;
                }
                Err(e) => tracing::warn!("a commit record that cannot be read is skipped: {e}"),
            }
        }
        self.upto
            .fetch_max(head, std::sync::atomic::Ordering::AcqRel);
        // (a record passed over, or none given: brought to head blind)
        self.facts.reset(head);
        Ok(sent)
    }

    /// Broadcasts a commit made here (`written`: the version it wrote of
    /// each chunk it wrote).
    pub(crate) fn made(&self, commit: Arc<Commit>, written: &facts::Written) {
        let n = commit.id;
        self.facts.advance(&commit, Some(written));
        // No receivers is not an error: nobody is listening yet.
        let _ = self.events.send(commit);
        self.upto.store(n, std::sync::atomic::Ordering::Release);
    }
}

impl std::fmt::Debug for Substrate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.backend {
            Backend::Sqlite(s) => f
                .debug_struct("Substrate")
                .field("path", &s.path())
                .finish(),
            #[cfg(feature = "postgres")]
            Backend::Postgres(p) => f
                .debug_struct("Substrate")
                .field("postgres", &p.store.location)
                .finish(),
        }
    }
}

impl Substrate {
    /// Opens (creating if needed) the substrate at `path` with default options.
    pub fn open(path: impl AsRef<Path>) -> Result<Substrate> {
        Substrate::open_with(path, Options::default())
    }

    /// Opens (creating if needed) the substrate at `path`, migrating its schema.
    pub fn open_with(path: impl AsRef<Path>, options: Options) -> Result<Substrate> {
        let (store, head) = sqlite::SqliteStore::open(path, &options)?;
        Ok(Substrate {
            backend: Backend::Sqlite(store),
            shared: Shared::new(options, head),
        })
    }

    /// Opens (creating if needed) the substrate in schema `schema` (unless
    /// the URL names one: `?schema=NAME`) of the PostgreSQL server at
    /// `url`, migrating it. `beside` stands for the database file in
    /// [`path`](Self::path): what this machine keeps of its own beside the
    /// store (its engines' leases) goes beside it.
    #[cfg(feature = "postgres")]
    pub fn open_postgres(
        url: &str,
        schema: &str,
        options: Options,
        beside: &Path,
    ) -> Result<Substrate> {
        let location = pg::conn::PgLocation::parse(url, schema)?;
        let (mut backend, head) = pg::PgBackend::open(location, &options)?;
        backend.beside = beside.to_path_buf();
        let shared = Shared::new(options, head);
        backend.start_following(shared.out.clone())?;
        Ok(Substrate {
            backend: Backend::Postgres(backend),
            shared,
        })
    }

    /// Copies the write-ahead log back into the database and empties it
    /// when no other connection is reading (else copies what they allow);
    /// never waits. A short-lived host calls it before it exits: the next
    /// process to open the store would otherwise read the whole log to
    /// recover its index, and the log would grow across processes that
    /// each commit less than a checkpoint's worth. (Nothing to do on
    /// PostgreSQL.)
    pub fn checkpoint(&self) -> Result<()> {
        match &self.backend {
            Backend::Sqlite(s) => s.checkpoint(),
            #[cfg(feature = "postgres")]
            Backend::Postgres(_) => Ok(()),
        }
    }

    /// Whether the store is a server many hosts may share (PostgreSQL),
    /// not a file on this machine.
    pub fn is_shared(&self) -> bool {
        !matches!(self.backend, Backend::Sqlite(_))
    }

    /// The database file (on PostgreSQL, where the host said the file
    /// would be: this machine's own state goes beside it).
    pub fn path(&self) -> &Path {
        match &self.backend {
            Backend::Sqlite(s) => s.path(),
            #[cfg(feature = "postgres")]
            Backend::Postgres(p) => &p.beside,
        }
    }

    /// What and where the store is, how big, its schema version.
    pub fn info(&self) -> Result<StoreInfo> {
        let head = self.head()?;
        match &self.backend {
            Backend::Sqlite(s) => {
                let bytes = ["", "-wal"]
                    .iter()
                    .filter_map(|suffix| {
                        let mut name = s.path().as_os_str().to_owned();
                        name.push(suffix);
                        std::fs::metadata(name).ok().map(|m| m.len())
                    })
                    .sum();
                Ok(StoreInfo {
                    backend: "sqlite".into(),
                    location: s.path().display().to_string(),
                    schema_version: SCHEMA_VERSION as i64,
                    head,
                    bytes,
                })
            }
            #[cfg(feature = "postgres")]
            Backend::Postgres(p) => Ok(StoreInfo {
                backend: "postgres".into(),
                location: format!("{:?}", p.store.location),
                schema_version: pg::schema_version(),
                head,
                bytes: p.store.bytes()?,
            }),
        }
    }

    /// A receiver of every commit, in order, once durable. A receiver that
    /// falls more than `broadcast_capacity` behind gets `Lagged`; the writer
    /// never waits for it.
    pub fn subscribe(&self) -> broadcast::Receiver<Arc<Commit>> {
        self.shared.out.events.subscribe()
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
        self.commit_for(decl, dispatch_id, None, guard)
    }

    /// Like [`commit_with`](Self::commit_with), made by this handle's host
    /// for `on_behalf` (a page user the host vouches for), who is recorded
    /// beside the host's own person.
    pub fn commit_for<E: From<Error>>(
        &self,
        decl: Declaration,
        dispatch_id: Option<&str>,
        on_behalf: Option<&str>,
        guard: impl FnOnce(&Snapshot<'_>) -> Result<(), E>,
    ) -> Result<Commit, E> {
        let author = self.shared.author(self.role(), dispatch_id, on_behalf);
        let by = write::By {
            dispatch_id,
            author,
        };
        match &self.backend {
            Backend::Sqlite(s) => s.commit_with(&self.shared, decl, by, guard),
            #[cfg(feature = "postgres")]
            Backend::Postgres(p) => p.commit_with(&self.shared, decl, by, guard),
        }
    }

    /// Signs this handle's commits from now on: the person, host and front
    /// end its host runs for (decision 19). On a shared store the person
    /// recorded is the database's role, whatever is signed here.
    pub fn sign(&self, signer: Signer) {
        *self
            .shared
            .signer
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = signer;
    }

    /// The person this handle's commits are by: on a shared store the
    /// database's role it connects as (the one authority there is: each
    /// person connects as their own), else whom its host signed for.
    pub fn person(&self) -> String {
        match self.role() {
            Some(role) => role.to_owned(),
            None => (self.shared.signer.read())
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .person
                .clone(),
        }
    }

    /// Whom this handle's commits are by: its signer, the person as
    /// [`person`](Self::person) says.
    pub fn signer(&self) -> Signer {
        let mut signer = (self.shared.signer.read())
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone();
        signer.person = self.person();
        signer
    }

    /// The database role this handle connects as, on a shared store.
    fn role(&self) -> Option<&str> {
        match &self.backend {
            Backend::Sqlite(_) => None,
            #[cfg(feature = "postgres")]
            Backend::Postgres(p) => Some(&p.store.role),
        }
    }

    /// Broadcasts the commits other processes made on this store since the
    /// last one broadcast here, in order, as if they were made here — so
    /// subscribers of one engine see another engine's work (a terminal's
    /// `hc run` beside `hc serve`). Cheap when there are none (one read of
    /// the head). Answers how many it broadcast.
    pub fn follow(&self) -> Result<usize> {
        match &self.backend {
            Backend::Sqlite(s) => s.follow(&self.shared),
            #[cfg(feature = "postgres")]
            Backend::Postgres(p) => p.follow(&self.shared),
        }
    }

    /// Reads `ids` with `opts` (see the crate docs).
    pub fn scope<S: AsRef<str>>(&self, ids: &[S], opts: &ScopeOpts) -> Result<ScopeResult> {
        let ids: Vec<String> = ids.iter().map(|s| s.as_ref().to_owned()).collect();
        read::check_request(&ids, opts)?;
        self.read(|snap| snap.scope(&ids, opts))
    }

    /// Runs `f` on one consistent snapshot at head: several reads (and the
    /// checks that guard them) see the same state, and everything
    /// committed before it is found (on SQLite, a search that finds the
    /// full-text index behind has it indexed and `f` run again).
    pub fn read<T, E: From<Error>>(
        &self,
        f: impl FnMut(&Snapshot<'_>) -> Result<T, E>,
    ) -> Result<T, E> {
        match &self.backend {
            Backend::Sqlite(s) => s.read(&self.shared, f),
            #[cfg(feature = "postgres")]
            Backend::Postgres(p) => p.read(&self.shared, f),
        }
    }

    /// The latest commit id (0 when nothing was committed).
    pub fn head(&self) -> Result<CommitId> {
        self.read(|snap| Ok::<_, Error>(snap.head_id()))
    }

    /// Runs `f` in the write transaction (its head given), committing
    /// when it succeeds, to write rows as they were stored elsewhere
    /// (`copy.rs`); what it wrote counts as broadcast.
    pub(crate) fn load<R>(&self, f: impl FnOnce(&dyn tx::Tx, i64) -> Result<R>) -> Result<R> {
        let out = match &self.backend {
            Backend::Sqlite(s) => s.load(f)?,
            #[cfg(feature = "postgres")]
            Backend::Postgres(p) => p.store.with_write(f, &std::cell::RefCell::new(None))?,
        };
        let head = self.read(|snap| Ok::<_, Error>(snap.head_id()))?;
        self.shared.out.broadcast(&[], head)?;
        Ok(out)
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
        match &self.backend {
            Backend::Sqlite(s) => s.with_writer_for_test(f),
            #[cfg(feature = "postgres")]
            Backend::Postgres(_) => Err(Error::InvalidRequest("SQLite only".into())),
        }
    }
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
        // a handle that knows nothing yet asks the store what `db` knew
        // from its own commits (the head's facts)
        let cold = Substrate::open(dir.path().join("p.db")).unwrap();
        cold.scope(&["s", "prompt"], &ScopeOpts::default()).unwrap();
        cold.read(|s| s.reaches_any("s", &["agent".to_owned()]))
            .unwrap();
        cold.read(|s| s.member_count("s")).unwrap();
        let seen = snapshot::plans::take();
        let conn = rusqlite::Connection::open(dir.path().join("p.db")).unwrap();
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
