//! An engine's lease: a lock file, `engines/<id>.lock` beside the
//! substrate, locked for as long as the engine lives. Every process an
//! engine runs carries its id (`engine` in the body), so an engine that
//! opens later fails only the processes of engines whose lease nobody
//! holds — engines that are really gone — and never those of an engine
//! running beside it on the same project.
//!
//! The lock is `flock`'s: the kernel lets go of it when its holder dies
//! however it dies, and it is not inherited across `exec` (std opens files
//! close-on-exec), so a program left running cannot keep a dead engine's
//! lease.

use std::fs::{File, OpenOptions, TryLockError};
use std::os::unix::fs::OpenOptionsExt as _;
use std::path::{Path, PathBuf};

/// A lease held: the lock stays until this is dropped.
pub(crate) struct Lease {
    path: PathBuf,
    _file: File,
}

impl Lease {
    /// Takes a new lease in `dir`. The file is locked before it has its
    /// name, so a lease file another engine can see is always either held
    /// or its holder's gone.
    pub fn take(dir: &Path, id: &str) -> std::io::Result<Lease> {
        std::fs::create_dir_all(dir)?;
        let hidden = dir.join(format!(".{id}.new"));
        let file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&hidden)?;
        file.lock()?;
        let path = dir.join(format!("{id}.lock"));
        std::fs::rename(&hidden, &path)?;
        Ok(Lease { path, _file: file })
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        // Removed while still held: whoever opened it first finds it held.
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Whether the engine `id`, whose lease would be in `dir`, is gone: its
/// lease file is missing, or nobody holds it (then the file is removed).
pub(crate) fn gone(dir: &Path, id: &str) -> bool {
    // An engine's id is letters, digits, `_` and `-`; anything else (a
    // store from elsewhere naming `../../x`) names no lease here, and no
    // file outside `dir` is opened or removed for it.
    let plain =
        !id.is_empty() && (id.bytes()).all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    if !plain {
        return true;
    }
    let path = dir.join(format!("{id}.lock"));
    let opened = OpenOptions::new()
        .write(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(&path);
    let Ok(file) = opened else {
        return true;
    };
    match file.try_lock() {
        Ok(()) => {
            let _ = std::fs::remove_file(&path);
            true
        }
        Err(TryLockError::WouldBlock) => false,
        // A lock that cannot be tried says nothing: assume it lives.
        Err(TryLockError::Error(_)) => false,
    }
}

/// Where the leases of the engines on the substrate at `db` live.
pub(crate) fn dir_of(db: &Path) -> PathBuf {
    db.parent()
        .map_or_else(|| PathBuf::from("engines"), |p| p.join("engines"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_held_lease_is_alive_and_a_dropped_or_missing_one_is_gone() {
        let dir = tempfile::tempdir().unwrap();
        let lease = Lease::take(dir.path(), "e1").unwrap();
        assert!(!gone(dir.path(), "e1"));
        drop(lease);
        assert!(gone(dir.path(), "e1"));
        assert!(gone(dir.path(), "never-was"));
    }

    #[test]
    fn an_id_that_is_not_an_engines_touches_no_file() {
        let dir = tempfile::tempdir().unwrap();
        let leases = dir.path().join("engines");
        std::fs::create_dir_all(&leases).unwrap();
        let outside = dir.path().join("Cargo.lock");
        std::fs::write(&outside, "kept").unwrap();
        assert!(gone(&leases, "../Cargo"));
        assert!(
            outside.exists(),
            "a lease name never reaches outside its directory"
        );
    }

    #[test]
    fn a_lease_file_left_unheld_is_gone_and_cleared() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("e2.lock"), "").unwrap();
        assert!(gone(dir.path(), "e2"));
        assert!(!dir.path().join("e2.lock").exists());
    }
}
