//! What a run did to the project's files (`docs/guide/rewind.md`): the
//! state of the part of the tree a run may change, taken before it runs
//! and again when it ends, and the difference — each file, symlink or
//! directory it created, changed or deleted, with what it held before.
//!
//! A snapshot is stat data, cached between runs as git's index caches it
//! (`index.rs`): a file is read and hashed only when its size, times,
//! inode or mode changed since it was last seen, and its content is kept
//! then, once per distinct content, in a store of this machine's
//! (`store.rs`) — so that when a run changes it, what it held before is at
//! hand whatever program changed it. Files `.gitignore` names (build
//! output) are not looked at by a walk; files over a size cap are hashed,
//! not kept, and said not restorable. `restore.rs` puts paths back, never
//! following a symlink.
//!
//! **Never knows about:** the substrate, processes, sessions — a host or
//! the engine turns effects into chunks.

mod index;
mod live;
pub mod record;
pub mod restore;
mod store;
mod walk;

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

pub use store::{STORE_BYTES, hex, sha256_hex, unhex};

/// A regular file's type bits in a mode.
pub const FILE: u32 = 0o100_000;
/// A symlink's.
pub const LINK: u32 = 0o120_000;
/// A directory's.
pub const DIR: u32 = 0o040_000;
const TYPE_BITS: u32 = 0o170_000;

/// How much is kept.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// A file larger than this is hashed, not kept (not restorable).
    pub file_bytes: u64,
    /// At most this many bytes of before-images a run's record keeps.
    pub run_bytes: u64,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            file_bytes: 3 * 1024 * 1024,
            run_bytes: 64 * 1024 * 1024,
        }
    }
}

/// What a path held: its content's SHA-256 (a symlink's target; empty for
/// a directory), its mode with its type bits (`0o100644`, `0o120777`,
/// `0o40755`), its size.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct State {
    /// SHA-256 of the content, lowercase hex.
    pub hash: String,
    /// `st_mode`: type and permission bits.
    pub mode: u32,
    /// Bytes.
    pub size: u64,
}

impl State {
    /// A directory.
    pub fn is_dir(&self) -> bool {
        self.mode & TYPE_BITS == DIR
    }
}

/// One path a run changed (a body of the `engine/file-effects` chunk's
/// `effects`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Effect {
    /// Relative to the project root, `/`-separated.
    pub path: String,
    /// The content's hash before the run (absent: there was nothing).
    pub before: Option<String>,
    /// After it (absent: deleted).
    pub after: Option<String>,
    /// The mode to put back (the one before; absent: nothing before).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<u32>,
    /// The mode it was left with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after_mode: Option<u32>,
    /// Bytes before.
    #[serde(default)]
    pub size: u64,
    /// Why what it held before cannot be put back (over the size cap,
    /// over the run's cap).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unrestorable: Option<String>,
    /// Lines it gained and lost, for a text file whose both contents were
    /// at hand (none: a directory, binary, too large, or not known).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lines: Option<Lines>,
}

/// Lines added and removed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Lines {
    /// Added.
    pub added: u64,
    /// Removed.
    pub removed: u64,
}

impl Effect {
    /// Whether what it held before can be put back.
    pub fn restorable(&self) -> bool {
        self.unrestorable.is_none()
    }

    /// Whether it is a regular file on every side it exists on (not a
    /// directory or a symbolic link, before or after).
    pub fn is_file(&self) -> bool {
        [self.mode, self.after_mode]
            .iter()
            .flatten()
            .all(|m| m & TYPE_BITS == FILE)
    }

    /// Whether it was a directory (before, or after when new).
    pub fn is_dir(&self) -> bool {
        self.mode
            .or(self.after_mode)
            .is_some_and(|m| m & TYPE_BITS == DIR)
    }
}

/// Which part of the tree a run may change.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Scope {
    /// Everything under these directories (relative; `""` is the root),
    /// but what `.gitignore` names.
    Tree(Vec<String>),
    /// These paths only (a program that names the file it writes).
    Paths(Vec<String>),
}

/// One path as a snapshot saw it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Seen {
    pub state: State,
    /// Its content is in the store.
    pub kept: bool,
}

/// The state of a scope at one moment: walked (every path's state), or
/// the watched tree's journal of what changes from then on.
pub struct Snapshot {
    scope: Scope,
    files: BTreeMap<String, Seen>,
    journal: Option<live::Journal>,
}

impl Snapshot {
    /// What it saw at `path` (a walked snapshot's).
    pub fn state(&self, path: &str) -> Option<&State> {
        self.files.get(path).map(|s| &s.state)
    }
}

/// A project tree whose runs are recorded: its root, the store of
/// contents and the cached index (both under `dir`, this machine's).
pub struct Tree {
    root: PathBuf,
    store: store::Store,
    index: Mutex<index::Index>,
    index_file: PathBuf,
    /// The whole tree watched, once a run that may write anywhere asked.
    live: Mutex<Option<live::Live>>,
    /// Whether a whole-tree snapshot may watch (else it walks every time).
    watching: bool,
    /// inotify could not watch the tree.
    unwatchable: std::sync::atomic::AtomicBool,
    /// Watching was asked for ahead of a run.
    asked: std::sync::atomic::AtomicBool,
    /// Its caps.
    pub limits: Limits,
}

impl Tree {
    /// The tree rooted at `root`, keeping what it learns in `dir`
    /// (`.hermitcrab/effects`). Nothing is read until a snapshot.
    pub fn open(root: &Path, dir: &Path, limits: Limits) -> Tree {
        let index_file = dir.join(index_name(root));
        Tree {
            root: root.to_path_buf(),
            store: store::Store::new(dir.join("objects")),
            index: Mutex::new(index::Index::load(&index_file)),
            index_file,
            live: Mutex::new(None),
            watching: true,
            unwatchable: std::sync::atomic::AtomicBool::new(false),
            asked: std::sync::atomic::AtomicBool::new(false),
            limits,
        }
    }

    /// The tree, every whole-tree snapshot a walk (never watched): to
    /// measure against.
    pub fn walking(root: &Path, dir: &Path, limits: Limits) -> Tree {
        Tree {
            watching: false,
            ..Tree::open(root, dir, limits)
        }
    }

    /// The root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The scope of a run that may write under `roots` (absolute): the
    /// parts of the tree they reach, none when they reach none.
    pub fn scope_of(&self, roots: &[PathBuf]) -> Option<Scope> {
        let mut dirs = Vec::new();
        for root in roots {
            if self.root.starts_with(root) {
                return Some(Scope::Tree(vec![String::new()]));
            }
            if let Ok(inside) = root.strip_prefix(&self.root) {
                dirs.push(walk::slashed(inside));
            }
        }
        (!dirs.is_empty()).then_some(Scope::Tree(dirs))
    }

    /// The scope of a run that writes `paths` only (as a program was
    /// given them: relative to the root, or absolute inside it).
    /// Each path is looked at as named and, when it is a link, where it
    /// leads inside the tree; with the directories above it (a write makes
    /// those missing).
    pub fn scope_of_paths(&self, paths: &[String]) -> Scope {
        let mut inside: Vec<String> = Vec::new();
        for p in paths {
            let named = self.root.join(p);
            let real = std::fs::canonicalize(&named).ok();
            for p in std::iter::once(named).chain(real) {
                let Some(rel) = p.strip_prefix(&self.root).ok().and_then(walk::relative) else {
                    continue;
                };
                let mut at = String::new();
                for part in rel.split('/') {
                    if !at.is_empty() {
                        at.push('/');
                    }
                    at.push_str(part);
                    if !inside.contains(&at) {
                        inside.push(at.clone());
                    }
                }
            }
        }
        Scope::Paths(inside)
    }

    /// The state of `scope` now, what changed since it was last seen read
    /// and kept.
    pub fn snapshot(&self, scope: Scope) -> Snapshot {
        let mut index = self.index.lock().unwrap_or_else(|e| e.into_inner());
        if self.watching && scope == Scope::Tree(vec![String::new()]) {
            let mut live = self.live.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(live) = self.brought_up(&mut live, &mut index) {
                let journal = live.journal();
                return Snapshot {
                    scope,
                    files: BTreeMap::new(),
                    journal: Some(journal),
                };
            }
        }
        let files = walk::walk(self, &mut index, &scope);
        Snapshot {
            scope,
            files,
            journal: None,
        }
    }

    /// The watched tree, up to date (started when it is not yet; none when
    /// inotify cannot watch it).
    fn brought_up<'a>(
        &self,
        live: &'a mut Option<live::Live>,
        index: &mut index::Index,
    ) -> Option<&'a mut live::Live> {
        match live {
            Some(watched) => {
                watched.bring_up(self, index);
                // (a directory it could not watch: walked from now on)
                if watched.failed {
                    *live = None;
                    self.unwatchable
                        .store(true, std::sync::atomic::Ordering::Relaxed);
                }
            }
            // (tried once: a tree inotify cannot watch is walked from then on)
            None if !self
                .unwatchable
                .swap(true, std::sync::atomic::Ordering::Relaxed) =>
            {
                *live = live::Live::start(self, index);
                self.unwatchable
                    .store(live.is_none(), std::sync::atomic::Ordering::Relaxed);
            }
            None => {}
        }
        live.as_mut()
    }

    /// What changed in `before`'s scope since it was taken, path by path
    /// (directories before what they hold).
    pub fn effects(&self, before: &Snapshot) -> Vec<Effect> {
        if let Some(journal) = &before.journal {
            let mut index = self.index.lock().unwrap_or_else(|e| e.into_inner());
            let mut live = self.live.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(live) = self.brought_up(&mut live, &mut index) {
                let journal = journal.lock().unwrap_or_else(|e| e.into_inner());
                let mut paths: Vec<&String> = journal.keys().collect();
                paths.sort();
                return paths
                    .into_iter()
                    .filter_map(|p| effect(p, journal[p].as_ref(), live.now(p), &self.limits))
                    .collect();
            }
            // (the watch was lost while the run ran: what it did is not known)
            tracing::warn!(
                "the tree stopped being watched during a run: its file effects are not recorded"
            );
            return Vec::new();
        }
        let after = self.snapshot(before.scope.clone());
        diff(before, &after, &self.limits)
    }

    /// Whether watching the whole tree is still to be started (true once:
    /// the caller then starts it, with [`Tree::watch_now`]).
    pub fn watch_asked(&self) -> bool {
        !self.asked.swap(true, std::sync::atomic::Ordering::Relaxed)
    }

    /// Watches the whole tree now (its first walk), so that the first run
    /// that may write anywhere finds it watched.
    pub fn watch_now(&self) {
        drop(self.snapshot(Scope::Tree(vec![String::new()])));
    }

    /// A content the store keeps, by hash.
    pub fn kept(&self, hash: &str) -> Option<Vec<u8>> {
        self.store.get(hash)
    }

    /// Writes the index, for the next engine on this checkout (not while a
    /// first walk holds it: the next engine walks again).
    pub fn save(&self) {
        let Ok(index) = self.index.try_lock() else {
            return;
        };
        if let Err(e) = index.save(&self.index_file) {
            tracing::warn!(
                "cannot save the file index {}: {e}",
                self.index_file.display()
            );
        }
    }
}

/// An index file per root (a background run's worktree has its own).
fn index_name(root: &Path) -> String {
    let hash = sha256_hex(root.as_os_str().as_encoded_bytes());
    format!("index-{}", &hash[..16])
}

/// Each path whose state differs between `before` and `after`.
fn diff(before: &Snapshot, after: &Snapshot, limits: &Limits) -> Vec<Effect> {
    let mut paths: Vec<&String> = before.files.keys().chain(after.files.keys()).collect();
    paths.sort();
    paths.dedup();
    paths
        .into_iter()
        .filter_map(|p| effect(p, before.files.get(p), after.files.get(p), limits))
        .collect()
}

/// `path`'s effect, when what it held changed from `old` to `new`.
fn effect(path: &str, old: Option<&Seen>, new: Option<&Seen>, limits: &Limits) -> Option<Effect> {
    let same = match (old, new) {
        (Some(a), Some(b)) => a.state == b.state,
        (None, None) => true,
        _ => false,
    };
    if same {
        return None;
    }
    let unrestorable = old
        .filter(|o| !o.kept && !o.state.is_dir())
        .map(|o| match o.state.size > limits.file_bytes {
            true => format!(
                "{} bytes, over the {} MiB a file may keep",
                o.state.size,
                limits.file_bytes / (1024 * 1024)
            ),
            false => format!(
                "its content was not kept (over the {} GiB this machine's store takes in one run of hc)",
                STORE_BYTES >> 30
            ),
        });
    Some(Effect {
        path: path.to_owned(),
        before: old.map(|o| o.state.hash.clone()),
        after: new.map(|n| n.state.hash.clone()),
        mode: old.map(|o| o.state.mode),
        after_mode: new.map(|n| n.state.mode),
        size: old.map_or(0, |o| o.state.size),
        unrestorable,
        lines: None,
    })
}

#[cfg(test)]
mod tests;
