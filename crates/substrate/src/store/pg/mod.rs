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
mod schema;
mod tx;

use crate::error::Result;
use conn::{Connections, PgLocation, wait};
use tx::PgTx;

/// A substrate's schema on a server.
pub(crate) struct PgStore {
    /// Where (shown in errors and `hc store info`).
    #[allow(dead_code)]
    pub location: PgLocation,
    conns: Connections,
}

impl PgStore {
    /// Connects to `location`, making or upgrading its schema.
    pub fn open(location: PgLocation, pool: usize) -> Result<PgStore> {
        let conns = Connections::new(&location, pool)?;
        let mut client = conns.get()?;
        schema::migrate(&mut client, &location.schema)?;
        drop(client);
        Ok(PgStore { location, conns })
    }

    /// Runs `f` in one read-only transaction that sees one state (its
    /// head given).
    pub fn with_read<R>(&self, f: impl FnOnce(&dyn super::tx::Tx, i64) -> Result<R>) -> Result<R> {
        let mut client = self.conns.get()?;
        let tx = wait(
            client
                .build_transaction()
                .isolation_level(tokio_postgres::IsolationLevel::RepeatableRead)
                .read_only(true)
                .start(),
        )?;
        let tx = PgTx { tx };
        let head = super::tx::Tx::head(&tx)?;
        let out = f(&tx, head)?;
        wait(tx.tx.commit())?;
        Ok(out)
    }

    /// Runs `f` in the one write transaction at a time (its head given);
    /// committed when `f` succeeds, rolled back when it fails.
    pub fn with_write<R, E: From<crate::error::Error>>(
        &self,
        f: impl FnOnce(&dyn super::tx::Tx, i64) -> Result<R, E>,
    ) -> Result<R, E> {
        let mut client = self.conns.get()?;
        let tx = wait(client.transaction()).map_err(crate::error::Error::from)?;
        wait(tx.batch_execute("LOCK TABLE commits IN EXCLUSIVE MODE"))
            .map_err(crate::error::Error::from)?;
        let tx = PgTx { tx };
        let head = super::tx::Tx::head(&tx)?;
        let out = f(&tx, head)?;
        wait(tx.tx.commit()).map_err(crate::error::Error::from)?;
        Ok(out)
    }
}

#[cfg(test)]
mod tests;
