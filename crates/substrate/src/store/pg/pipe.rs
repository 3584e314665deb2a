//! One transaction on one connection, its writes pipelined: a statement
//! whose answer nothing waits for (an insert, an update, `BEGIN`, the
//! announcement) is queued, and sent with the next statement that is
//! waited for — or with `COMMIT` — in one round trip. A commit of a tool
//! turn is a handful of round trips, not one per statement.
//!
//! Statements reach the server in the order they were asked for; the
//! first failure among those sent together is the one answered (the
//! rest fail as the transaction is then aborted).

use super::conn::wait;
use crate::error::{Error, Result};
use deadpool_postgres::ClientWrapper;
use std::cell::{Cell, RefCell};
use std::future::Future;
use std::pin::Pin;
use tokio_postgres::types::ToSql;
use tokio_postgres::{Row, Statement};

/// A parameter a queued statement owns until it is sent.
pub(crate) type Owned = Box<dyn ToSql + Sync + Send>;

/// Parameters borrowed for a statement sent at once.
pub(crate) type Params<'p> = Vec<&'p (dyn ToSql + Sync)>;

/// Owned parameters: `owned![a, b]`.
macro_rules! owned {
    ($($value:expr),* $(,)?) => {
        vec![$(Box::new($value) as $crate::store::pg::pipe::Owned),*]
    };
}
pub(crate) use owned;

/// A statement waiting to be sent.
enum Queued {
    /// Text sent as it is (no parameters; may hold several statements).
    Simple(&'static str),
    /// A prepared statement and its parameters.
    Prepared(Statement, Vec<Owned>),
}

type Sent<'a> = Pin<Box<dyn Future<Output = Result<(), tokio_postgres::Error>> + 'a>>;

impl Queued {
    fn send<'a>(&'a self, client: &'a ClientWrapper) -> Sent<'a> {
        match self {
            Queued::Simple(sql) => Box::pin(client.batch_execute(sql)),
            Queued::Prepared(statement, params) => Box::pin(async move {
                let params: Params<'_> = params.iter().map(|p| &**p as _).collect();
                client.execute(statement, &params).await.map(|_| ())
            }),
        }
    }
}

/// An open transaction (rolled back when dropped unfinished).
pub(crate) struct Pipe<'a> {
    client: &'a ClientWrapper,
    queued: RefCell<Vec<Queued>>,
    open: Cell<bool>,
}

impl<'a> Pipe<'a> {
    /// Begins a transaction with `begin` (sent with the first statement
    /// waited for).
    pub fn begin(client: &'a ClientWrapper, begin: &'static str) -> Pipe<'a> {
        Pipe {
            client,
            queued: RefCell::new(vec![Queued::Simple(begin)]),
            open: Cell::new(true),
        }
    }

    /// The statement `sql`, prepared once per connection.
    fn prepared(&self, sql: &str) -> Result<Statement> {
        Ok(wait(self.client.prepare_cached(sql))?)
    }

    /// Queues `sql` with `params`: sent with the next statement waited for.
    pub fn queue(&self, sql: &str, params: Vec<Owned>) -> Result<()> {
        let statement = self.prepared(sql)?;
        self.queued
            .borrow_mut()
            .push(Queued::Prepared(statement, params));
        Ok(())
    }

    /// `sql`'s rows, after everything queued (sent together).
    pub fn rows(&self, sql: &str, params: &Params<'_>) -> Result<Vec<Row>> {
        let statement = self.prepared(sql)?;
        let queued = self.queued.take();
        let (before, rows) = wait(futures_util::future::join(
            futures_util::future::join_all(queued.iter().map(|q| q.send(self.client))),
            self.client.query(&statement, params),
        ));
        first_failure(before)?;
        Ok(rows?)
    }

    /// Ends here, nothing sent, when nothing is queued (the caller ends
    /// the transaction another way); else keeps it open.
    pub fn detach(&self) -> bool {
        let idle = self.queued.borrow().is_empty();
        if idle {
            self.open.set(false);
        }
        idle
    }

    /// Sends what is queued, then `COMMIT` (or `ROLLBACK`), waiting for all.
    pub fn finish(self, commit: bool) -> Result<()> {
        self.open.set(false);
        let mut queued = self.queued.take();
        if !commit {
            queued.clear();
        }
        queued.push(Queued::Simple(if commit { "COMMIT" } else { "ROLLBACK" }));
        let sent = wait(futures_util::future::join_all(
            queued.iter().map(|q| q.send(self.client)),
        ));
        first_failure(sent)
    }
}

/// The first of these that failed, if any did.
fn first_failure(sent: Vec<Result<(), tokio_postgres::Error>>) -> Result<()> {
    match sent.into_iter().find_map(Result::err) {
        Some(e) => Err(Error::from(e)),
        None => Ok(()),
    }
}

impl Drop for Pipe<'_> {
    fn drop(&mut self) {
        if self.open.get() {
            // (a connection goes back to the pool only outside a
            // transaction; one that cannot say so is closed, and the pool
            // makes a new one)
            let _ = wait(self.client.batch_execute("ROLLBACK"));
        }
    }
}
