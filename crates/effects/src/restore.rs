//! Putting a path back as it was: a file's bytes and mode, a symlink, a
//! directory, or nothing. A path is only ever reached through real
//! directories of the tree: a symlink on the way is refused, never
//! followed (a planted `src -> /etc` cannot make a rewind write outside
//! the project); the last component is replaced, never followed.

use crate::{DIR, LINK, State, TYPE_BITS};
use std::io::{Read as _, Write as _};
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};

/// What to put at a path.
#[derive(Clone, Copy, Debug)]
pub enum Put<'a> {
    /// Nothing (a directory only when empty: what it still holds was not
    /// the run's to take).
    Absent,
    /// A directory with this mode.
    Dir(u32),
    /// A file with these bytes and mode.
    File(&'a [u8], u32),
    /// A symlink to this target.
    Link(&'a [u8]),
}

impl<'a> Put<'a> {
    /// What a recorded state says to put, with its content.
    pub fn of(mode: u32, content: &'a [u8]) -> Put<'a> {
        match mode & TYPE_BITS {
            DIR => Put::Dir(mode),
            LINK => Put::Link(content),
            _ => Put::File(content, mode),
        }
    }
}

/// `rel` under `root`, its parents checked to be real directories of the
/// tree (made, with `make`, when missing).
fn reach(root: &Path, rel: &str, make: bool) -> Result<PathBuf, String> {
    let plain = crate::walk::relative(Path::new(rel))
        .filter(|p| p == rel)
        .ok_or_else(|| format!("`{rel}` is not a plain path inside the project"))?;
    if crate::walk::protected(&plain) {
        return Err(format!(
            "`{rel}` is in .git or .hermitcrab, which nothing puts back (no tool may write there)"
        ));
    }
    let mut at = root.to_path_buf();
    let parts: Vec<&str> = plain.split('/').collect();
    for part in &parts[..parts.len() - 1] {
        at.push(part);
        match std::fs::symlink_metadata(&at) {
            Ok(m) if m.file_type().is_symlink() => {
                return Err(format!(
                    "{} is a symlink: never followed (nothing written through it)",
                    at.display()
                ));
            }
            Ok(m) if m.is_dir() => {}
            Ok(_) => return Err(format!("{} is not a directory", at.display())),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && make => {
                std::fs::create_dir(&at)
                    .map_err(|e| format!("cannot make {}: {e}", at.display()))?;
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(root.join(&plain)),
            Err(e) => return Err(format!("cannot look at {}: {e}", at.display())),
        }
    }
    Ok(root.join(plain))
}

/// What is at `rel` now (none: nothing), never followed.
pub fn current(root: &Path, rel: &str) -> Result<Option<State>, String> {
    let path = reach(root, rel, false)?;
    let meta = match std::fs::symlink_metadata(&path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("cannot look at {}: {e}", path.display())),
    };
    let mode = std::os::unix::fs::MetadataExt::mode(&meta);
    let shown = |e: std::io::Error| format!("cannot read {}: {e}", path.display());
    let (hash, size) = if meta.is_dir() || !(meta.is_file() || meta.file_type().is_symlink()) {
        // (a directory, a FIFO, a socket, a device: never opened)
        (String::new(), 0)
    } else if meta.file_type().is_symlink() {
        let target = std::fs::read_link(&path).map_err(shown)?;
        let bytes = target.as_os_str().as_encoded_bytes();
        (crate::sha256_hex(bytes), bytes.len() as u64)
    } else {
        let file = crate::store::open_regular(&path).map_err(shown)?;
        (crate::store::hash_of(file).map_err(shown)?, meta.len())
    };
    Ok(Some(State { hash, mode, size }))
}

/// Puts `what` at `rel`. A directory that still holds something is left
/// (`Ok(false)`).
pub fn put(root: &Path, rel: &str, what: Put<'_>) -> Result<bool, String> {
    let path = reach(root, rel, !matches!(what, Put::Absent))?;
    let shown = |e: std::io::Error| format!("cannot put back {}: {e}", path.display());
    let now = std::fs::symlink_metadata(&path).ok();
    let is_dir = now.as_ref().is_some_and(|m| m.is_dir());
    match what {
        Put::Absent => match now {
            None => {}
            Some(_) if is_dir => {
                let empty = std::fs::read_dir(&path).map_err(shown)?.next().is_none();
                if !empty {
                    return Ok(false);
                }
                std::fs::remove_dir(&path).map_err(shown)?;
            }
            Some(_) => std::fs::remove_file(&path).map_err(shown)?,
        },
        Put::Dir(mode) => {
            if now.is_some() && !is_dir {
                std::fs::remove_file(&path).map_err(shown)?;
            }
            if !is_dir {
                std::fs::create_dir(&path).map_err(shown)?;
            }
            let perms = std::fs::Permissions::from_mode(mode & 0o7777);
            std::fs::set_permissions(&path, perms).map_err(shown)?;
        }
        Put::File(bytes, mode) => {
            refuse_dir(&path, is_dir)?;
            let dir = path.parent().unwrap_or(root);
            let (mut file, tmp) = crate::store::tempfile_in(dir).map_err(shown)?;
            let written = file
                .write_all(bytes)
                .and_then(|()| file.set_permissions(std::fs::Permissions::from_mode(mode & 0o7777)))
                .and_then(|()| std::fs::rename(&tmp, &path));
            if let Err(e) = written {
                let _ = std::fs::remove_file(&tmp);
                return Err(shown(e));
            }
        }
        Put::Link(target) => {
            refuse_dir(&path, is_dir)?;
            let dir = path.parent().unwrap_or(root);
            let target: &std::ffi::OsStr = std::os::unix::ffi::OsStrExt::from_bytes(target);
            let (file, tmp) = crate::store::tempfile_in(dir).map_err(shown)?;
            drop(file);
            std::fs::remove_file(&tmp).map_err(shown)?;
            std::os::unix::fs::symlink(target, &tmp)
                .and_then(|()| std::fs::rename(&tmp, &path))
                .map_err(shown)?;
        }
    }
    Ok(true)
}

/// A file's bytes at `rel` (reached as `put` reaches it), when it is a
/// regular file of at most `cap` bytes.
pub fn read(root: &Path, rel: &str, cap: u64) -> Option<Vec<u8>> {
    let mut file = crate::store::open_regular(&reach(root, rel, false).ok()?).ok()?;
    if file.metadata().ok()?.len() > cap {
        return None;
    }
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes).ok()?;
    Some(bytes)
}

/// A directory where a file or a link goes back: taken away when it is
/// empty (what the run made there is gone already), else refused.
fn refuse_dir(path: &Path, is_dir: bool) -> Result<(), String> {
    if is_dir && std::fs::remove_dir(path).is_ok() {
        return Ok(());
    }
    if is_dir {
        return Err(format!(
            "{} is a directory now: it is not replaced by a file (move it away and rewind again)",
            path.display()
        ));
    }
    Ok(())
}
