//! What every SQLite connection of the store shares: how long it waits
//! for another process's lock, never a symbolic link, and a connection's
//! mutex taken even when poisoned.

use rusqlite::OpenFlags;
use std::sync::{Mutex, MutexGuard, PoisonError};

/// How long a connection waits for another process's lock on the file.
pub(crate) const BUSY_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

/// A connection never opens the file through a symbolic link.
pub(crate) const NOFOLLOW: OpenFlags = OpenFlags::SQLITE_OPEN_NOFOLLOW;

/// A connection's mutex, taken.
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic while holding a connection leaves SQLite consistent (an open
    // transaction rolls back when reused), so poisoning is not fatal.
    m.lock().unwrap_or_else(PoisonError::into_inner)
}
