//! Checkpoints off the commit path. In WAL mode a commit appends to the
//! log; copying the log back into the database (a checkpoint, with its
//! fsyncs) is work no commit should wait for. A thread with its own
//! connection runs passive checkpoints every few hundred commits.

use crate::error::Result;
use rusqlite::Connection;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, SyncSender, TrySendError};
use std::thread::JoinHandle;

/// Commits between checkpoint requests.
const EVERY: u64 = 256;

/// The checkpoint thread and the commit counter that wakes it.
pub(crate) struct Checkpointer {
    commits: AtomicU64,
    wake: Option<SyncSender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl Checkpointer {
    /// Starts the thread on its own connection to `path`.
    pub(crate) fn start(path: &Path) -> Result<Checkpointer> {
        let conn = Connection::open_with_flags(
            path,
            rusqlite::OpenFlags::default() | super::conn::NOFOLLOW,
        )?;
        conn.busy_timeout(super::conn::BUSY_WAIT)?;
        let (wake, requests) = mpsc::sync_channel::<()>(1);
        let thread = std::thread::Builder::new()
            .name("substrate-checkpoint".into())
            .spawn(move || {
                while requests.recv().is_ok() {
                    // PASSIVE never blocks writers or readers; a checkpoint
                    // that cannot finish now finishes on a later request.
                    if let Err(e) = conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(()))
                    {
                        // Harmless: the log is checkpointed on a later request.
                        tracing::debug!("passive checkpoint failed: {e}");
                    }
                }
            })
            .map_err(|e| {
                crate::Error::Storage(format!("cannot start the checkpoint thread: {e}"))
            })?;
        Ok(Checkpointer {
            commits: AtomicU64::new(0),
            wake: Some(wake),
            thread: Some(thread),
        })
    }

    /// Asks for a checkpoint now, without waiting.
    pub(crate) fn request(&self) {
        if let Some(wake) = &self.wake {
            let _ = wake.try_send(());
        }
    }

    /// Counts a commit; every [`EVERY`] commits, asks for a checkpoint
    /// without waiting (a request already pending is enough).
    pub(crate) fn committed(&self) {
        let n = self.commits.fetch_add(1, Ordering::Relaxed) + 1;
        if n.is_multiple_of(EVERY)
            && let Some(wake) = &self.wake
            && let Err(TrySendError::Disconnected(())) = wake.try_send(())
        {
            // The thread is gone; SQLite's own auto-checkpoint still runs.
        }
    }
}

impl Drop for Checkpointer {
    fn drop(&mut self) {
        self.wake.take();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
