//! The substrate on PostgreSQL (`design/scale.md`, "The substrate on
//! PostgreSQL"): the same statements as SQLite's behind
//! [`Tx`](super::tx::Tx), in a schema of its own per substrate
//! (`schema.rs`), on pooled connections a runtime of the store's own
//! drives, waited for on the caller's thread (`conn.rs`).
//!
//! A commit is one transaction that first locks the `commits` table
//! against other writers (every engine on every host), so ids follow one
//! another with no gap and each commit's `parent_id` is the one before;
//! a read is one `REPEATABLE READ` transaction: one consistent state.

pub(crate) mod conn;
mod follow;
pub(crate) mod pipe;
mod schema;
mod tls;
mod tx;

use crate::error::Result;
use conn::{Connections, PgLocation, wait};
use pipe::Pipe;
use tx::PgTx;

/// A substrate's schema on a server.
pub(crate) struct PgStore {
    /// Where (its schema names the channel commits are announced on).
    pub location: PgLocation,
    conns: Connections,
    /// The role it connects as: the person the database stamps on every
    /// row this store writes.
    pub role: String,
}

impl PgStore {
    /// Connects to `location`, making or upgrading its schema.
    pub fn open(location: PgLocation, pool: usize) -> Result<PgStore> {
        let conns = Connections::new(&location, pool)?;
        let mut client = conns.get()?;
        let role = schema::migrate(&mut client, &location.schema)?;
        drop(client);
        Ok(PgStore {
            location,
            conns,
            role,
        })
    }

    /// Runs `f` in one read-only transaction that sees one state (its
    /// head given).
    pub fn with_read<R>(&self, f: impl FnOnce(&dyn super::tx::Tx, i64) -> Result<R>) -> Result<R> {
        let client = self.conns.get()?;
        let tx = PgTx {
            pipe: Pipe::begin(&client, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"),
            channel: &self.location.schema,
            next: std::cell::Cell::default(),
        };
        let head = super::tx::Tx::head(&tx)?;
        let out = f(&tx, head)?;
        if tx.pipe.detach() {
            // (a read's end waited for by no one: the connection goes back
            // to the pool once it is said)
            drop(tx);
            self.conns.end_later(client);
        } else {
            tx.pipe.finish(true)?;
        }
        Ok(out)
    }

    /// Runs `f` in the one write transaction at a time (its head given);
    /// committed when `f` succeeds, rolled back when it fails.
    /// When it fails as it ends (`COMMIT` and the writes sent with it),
    /// `ended` holds why and what `f` made: the transaction may have been
    /// made, or not.
    pub fn with_write<R, E: From<crate::error::Error>>(
        &self,
        f: impl FnOnce(&dyn super::tx::Tx, i64) -> Result<R, E>,
        ended: &std::cell::RefCell<Option<(String, R)>>,
    ) -> Result<R, E> {
        let client = self.conns.get()?;
        let tx = PgTx {
            pipe: Pipe::begin(&client, "BEGIN; LOCK TABLE commits IN EXCLUSIVE MODE"),
            channel: &self.location.schema,
            next: std::cell::Cell::default(),
        };
        let head = tx.start_writing()?;
        let out = f(&tx, head)?;
        let finished = {
            let tx = tx;
            tx.pipe.finish(true)
        };
        if let Err(e) = finished {
            let why = e.to_string();
            *ended.borrow_mut() = Some((why, out));
            // (a connection lost as it ended never goes back to the pool:
            // the next to take it would find it dead)
            drop(deadpool_postgres::Object::take(client));
            return Err(e.into());
        }
        Ok(out)
    }
}

/// The version of the tables this build makes.
pub(crate) fn schema_version() -> i64 {
    schema::VERSION
}

impl PgStore {
    /// The bytes the schema's tables and their indexes take.
    pub fn bytes(&self) -> Result<u64> {
        let client = self.conns.get()?;
        let row = wait(client.query_one(
            "SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0)::bigint FROM pg_class c \
             JOIN pg_namespace n ON n.oid = c.relnamespace \
             WHERE n.nspname = $1 AND c.relkind = 'r'",
            &[&self.location.schema],
        ))?;
        Ok(row.get::<_, i64>(0).max(0) as u64)
    }
}

/// The substrate on PostgreSQL, as `Substrate` holds it.
pub(crate) struct PgBackend {
    pub store: std::sync::Arc<PgStore>,
    /// This handle's commits and their broadcast, one at a time (so
    /// subscribers see commits in order); the follower takes it too.
    order: std::sync::Arc<std::sync::Mutex<()>>,
    /// Tells the follower thread to end.
    stop: std::sync::mpsc::Sender<follow::Wake>,
    /// The follower's wake channel, until it starts.
    pending: std::sync::Mutex<Option<std::sync::mpsc::Receiver<follow::Wake>>>,
    /// Stands for the database file: this machine's own state goes beside.
    pub beside: std::path::PathBuf,
}

impl Drop for PgBackend {
    fn drop(&mut self) {
        let _ = self.stop.send(follow::Wake::Stop);
    }
}

/// Runs `f` where it may wait on the network: on a tokio worker of a
/// multi-thread runtime, after handing the worker's other tasks away.
fn off_worker<R>(f: impl FnOnce() -> R) -> R {
    match tokio::runtime::Handle::try_current().map(|h| h.runtime_flavor()) {
        Ok(tokio::runtime::RuntimeFlavor::MultiThread) => tokio::task::block_in_place(f),
        _ => f(),
    }
}

impl PgBackend {
    /// Opens `location` (its follower started, broadcasting to `out`);
    /// answers its head.
    pub fn open(
        location: PgLocation,
        options: &super::Options,
    ) -> Result<(PgBackend, crate::types::CommitId)> {
        let store = std::sync::Arc::new(PgStore::open(location, options.max_idle_readers.max(2))?);
        let head = store.with_read(|_, head| Ok(head))? as crate::types::CommitId;
        let (stop, wake) = std::sync::mpsc::channel();
        Ok((
            PgBackend {
                store,
                order: std::sync::Arc::default(),
                stop,
                pending: std::sync::Mutex::new(Some(wake)),
                beside: std::path::PathBuf::new(),
            },
            head,
        ))
    }

    /// Starts the follower: commits other engines make reach `out`'s
    /// subscribers as they are announced, and every few seconds regardless.
    pub fn start_following(&self, out: super::Broadcaster) -> Result<()> {
        let pending = self
            .pending
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take();
        let Some(wake) = pending else {
            return Ok(());
        };
        follow::start(
            std::sync::Arc::clone(&self.store),
            std::sync::Arc::clone(&self.order),
            out,
            self.stop.clone(),
            wake,
        )
    }

    /// See `Substrate::commit_with`.
    pub fn commit_with<E: From<crate::error::Error>>(
        &self,
        shared: &super::Shared,
        decl: crate::types::Declaration,
        by: super::write::By<'_>,
        guard: impl FnOnce(&super::Snapshot<'_>) -> Result<(), E>,
    ) -> Result<crate::types::Commit, E> {
        super::write::check_shape(&decl)?;
        off_worker(|| {
            let _order = self
                .order
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            let ended = std::cell::RefCell::new(None);
            let outcome = self.store.with_write(
                |tx, head| {
                    let head = head as crate::types::CommitId;
                    guard(&super::Snapshot::guarding(tx, head, shared))?;
                    let n = head + 1;
                    let timestamp =
                        humantime::format_rfc3339_millis(std::time::SystemTime::now()).to_string();
                    let (commit, _, rows) = super::write::Apply::new(tx, n)?
                        .knowing(&shared.out.facts)
                        .run(
                            decl,
                            (head > 0).then_some(head),
                            timestamp,
                            by.dispatch_id.map(str::to_owned),
                            by.author,
                        )?;
                    let record = serde_json::to_string(&commit).map_err(|e| {
                        crate::error::Error::Storage(format!("cannot encode commit record: {e}"))
                    })?;
                    tx.insert_commit(&commit, &record)?;
                    // every engine listening hears of it once it is durable
                    tx.announce(n as i64)?;
                    Ok::<_, E>((commit, record, head, rows))
                },
                &ended,
            );
            let (commit, head, rows) = match (outcome, ended.into_inner()) {
                (Ok((commit, _, head, rows)), _) => (commit, head, rows),
                (Err(e), None) => return Err(e),
                // the transaction failed as it ended: the commit may have
                // been made; the log says which
                (Err(_), Some((why, (commit, record, head, rows)))) => {
                    self.settle(commit.id, &record, &why)?;
                    (commit, head, rows)
                }
            };
            // what other engines committed before this one goes out first
            if let Err(e) = follow::broadcast_upto(&self.store, &shared.out, head) {
                tracing::warn!("commits other engines made could not be broadcast: {e}");
            }
            shared.made(std::sync::Arc::new(commit.clone()), &rows);
            Ok(commit)
        })
    }

    /// After a commit's end failed (the connection lost as it said
    /// `COMMIT`): `Ok` when commit `n` is in the log as `record` (it was
    /// made), else an error saying it was not — or that it cannot be known
    /// yet. Nothing is made twice: no commit is tried again here.
    fn settle(&self, n: crate::types::CommitId, record: &str, why: &str) -> Result<()> {
        let read = || {
            self.store
                .with_read(|tx, _| tx.records_between(n as i64 - 1, n as i64))
        };
        // (once more: a pooled connection may have died with the other)
        let found = read().or_else(|_| read());
        match found {
            Ok(found) if found.first().is_some_and(|r| r == record) => Ok(()),
            Ok(_) => Err(crate::error::Error::Storage(format!(
                "commit {n} failed as it ended ({why}); it was not made: nothing was written"
            ))),
            Err(e) => Err(crate::error::Error::Storage(format!(
                "commit {n} failed as it ended ({why}), and whether it was made cannot be known \
                 until the server answers ({e}); read the log (hc log) before trying again"
            ))),
        }
    }

    /// See `Substrate::follow`.
    pub fn follow(&self, shared: &super::Shared) -> Result<usize> {
        off_worker(|| follow::once(&self.store, &self.order, &shared.out))
    }

    /// See `Substrate::read`.
    pub fn read<T, E: From<crate::error::Error>>(
        &self,
        shared: &super::Shared,
        mut f: impl FnMut(&super::Snapshot<'_>) -> Result<T, E>,
    ) -> Result<T, E> {
        off_worker(|| {
            let mut out = None;
            self.store.with_read(|tx, head| {
                let snap = super::Snapshot {
                    tx,
                    at: super::snapshot::At::Head,
                    head: head as crate::types::CommitId,
                    cache: Some(&shared.cache),
                    behind: None,
                    facts: Some(&shared.out.facts),
                };
                out = Some(f(&snap));
                Ok(())
            })?;
            out.unwrap_or_else(|| Err(crate::error::Error::Storage("no read".into()).into()))
        })
    }
}

#[cfg(test)]
mod tests;
