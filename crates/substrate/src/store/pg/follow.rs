//! Following other engines on the same server: each commit is announced
//! (`NOTIFY`, the commit id only) inside its transaction; a dedicated
//! connection `LISTEN`s (never one of the pool's), and a thread of the
//! store's reads the commit log after the last commit broadcast here —
//! when woken, after the listening connection comes back, and every few
//! seconds regardless — so a dropped connection or a restarted server
//! loses nothing a subscriber should have had.

use super::PgStore;
use crate::error::Result;
use crate::store::Broadcaster;
use crate::types::CommitId;
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The log is read this often even when nothing was announced.
const EVERY: Duration = Duration::from_secs(2);

/// What wakes the follower.
pub(crate) enum Wake {
    /// A commit was announced (or the listening connection came back).
    Commit,
    /// The store is closing.
    Stop,
}

/// Broadcasts the commits after the last broadcast up to `head`.
pub(crate) fn broadcast_upto(store: &PgStore, out: &Broadcaster, head: CommitId) -> Result<usize> {
    let upto = out.upto();
    if head <= upto {
        return Ok(0);
    }
    let records = store.with_read(|tx, _| tx.records_between(upto as i64, head as i64))?;
    out.broadcast(&records, head)
}

/// Broadcasts what other engines committed since the last broadcast.
pub(crate) fn once(store: &PgStore, order: &Mutex<()>, out: &Broadcaster) -> Result<usize> {
    let head = store.with_read(|_, head| Ok(head))? as CommitId;
    if head <= out.upto() {
        return Ok(0);
    }
    let _order = order
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    broadcast_upto(store, out, head)
}

/// Starts the listening connection and the follower thread.
pub(crate) fn start(
    store: Arc<PgStore>,
    order: Arc<Mutex<()>>,
    out: Broadcaster,
    wake_tx: Sender<Wake>,
    wake: Receiver<Wake>,
) -> Result<()> {
    store.conns.listen(store.location.schema.clone(), wake_tx)?;
    std::thread::Builder::new()
        .name("substrate-follow".into())
        .spawn(move || {
            loop {
                match wake.recv_timeout(EVERY) {
                    Ok(Wake::Stop) | Err(RecvTimeoutError::Disconnected) => return,
                    Ok(Wake::Commit) | Err(RecvTimeoutError::Timeout) => {}
                }
                // (several announcements at once: one read of the log)
                while let Ok(next) = wake.try_recv() {
                    if matches!(next, Wake::Stop) {
                        return;
                    }
                }
                if let Err(e) = once(&store, &order, &out) {
                    tracing::debug!("following other engines failed (tried again): {e}");
                }
            }
        })
        .map_err(|e| {
            crate::error::Error::Storage(format!("cannot start the follower thread: {e}"))
        })?;
    Ok(())
}

/// `LISTEN`s on `channel` over connections of its own made by `config`
/// on `runtime`, waking `wake` at each announcement and after each
/// reconnection; ends when `wake`'s receiver is gone.
pub(crate) async fn listen(
    config: tokio_postgres::Config,
    tls: Option<tokio_postgres_rustls::MakeRustlsConnect>,
    channel: String,
    wake: Sender<Wake>,
) {
    let mut pause = Duration::from_millis(500);
    loop {
        let heard = match &tls {
            Some(tls) => match config.connect(tls.clone()).await {
                Ok((client, connection)) => hear(client, connection, &channel, &wake).await,
                Err(e) => Err(e),
            },
            None => match config.connect(tokio_postgres::NoTls).await {
                Ok((client, connection)) => hear(client, connection, &channel, &wake).await,
                Err(e) => Err(e),
            },
        };
        match heard {
            Ok(Heard::Closing) => return,
            Ok(Heard::Lost) => pause = Duration::from_millis(500),
            Err(e) => {
                tracing::debug!("cannot listen for other engines' commits (tried again): {e}")
            }
        }
        // (a server that stays away is asked less and less often; the log
        // is read every few seconds meanwhile)
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(Duration::from_secs(30));
    }
}

/// How a listening connection ended.
enum Heard {
    /// The store is closing.
    Closing,
    /// The connection was lost (or refused the `LISTEN`).
    Lost,
}

/// Listens on one connection until it is lost or the store closes.
async fn hear<S, T>(
    client: tokio_postgres::Client,
    mut connection: tokio_postgres::Connection<S, T>,
    channel: &str,
    wake: &Sender<Wake>,
) -> Result<Heard, tokio_postgres::Error>
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
    T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let (heard_tx, mut heard) = tokio::sync::mpsc::unbounded_channel::<()>();
    let driver = tokio::spawn(async move {
        loop {
            match std::future::poll_fn(|cx| connection.poll_message(cx)).await {
                Some(Ok(tokio_postgres::AsyncMessage::Notification(_))) => {
                    if heard_tx.send(()).is_err() {
                        return;
                    }
                }
                Some(Ok(_)) => {}
                Some(Err(_)) | None => return,
            }
        }
    });
    let mut ended = Heard::Lost;
    if client
        .batch_execute(&format!("LISTEN \"{channel}\""))
        .await
        .is_ok()
    {
        // what was committed while not listening is read now
        if wake.send(Wake::Commit).is_err() {
            ended = Heard::Closing;
        }
        while matches!(ended, Heard::Lost) && heard.recv().await.is_some() {
            if wake.send(Wake::Commit).is_err() {
                ended = Heard::Closing;
            }
        }
    }
    driver.abort();
    Ok(ended)
}
