//! The whole tree kept current by inotify: once walked, a directory is
//! watched, and what changes in it is looked at again when the next
//! snapshot (or a run's end) asks — so a run that may write anywhere costs
//! the paths that changed, not a walk of the tree. Each run open since its
//! start keeps a journal: what each path held when it first changed after
//! the run began. Lost events (the kernel's queue overflowed) or a limit on
//! watches fall back to a walk, compared with what was known.

use crate::index::Index;
use crate::walk::{look, walk_dir};
use crate::{Seen, Tree};
use nix::sys::inotify::{AddWatchFlags, InitFlags, Inotify, WatchDescriptor};
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, Weak};

/// What each path held when it first changed since a run began (none:
/// nothing was there).
pub(crate) type Journal = Arc<Mutex<Befores>>;

/// A journal's content: path → what it held before it first changed.
pub(crate) type Befores = HashMap<String, Option<Seen>>;

/// The watched tree.
pub(crate) struct Live {
    inotify: Inotify,
    /// Each watched directory, relative (`""`: the root).
    dirs: HashMap<WatchDescriptor, String>,
    /// Every path of the tree as last looked at.
    current: BTreeMap<String, Seen>,
    journals: Vec<Weak<Mutex<Befores>>>,
    /// What the tree's `.gitignore` files leave out.
    ignored: crate::walk::Ignored,
    /// A directory could not be watched: the tree is walked from now on.
    pub(crate) failed: bool,
}

fn mask() -> AddWatchFlags {
    AddWatchFlags::IN_CREATE
        | AddWatchFlags::IN_DELETE
        | AddWatchFlags::IN_MODIFY
        | AddWatchFlags::IN_ATTRIB
        | AddWatchFlags::IN_CLOSE_WRITE
        | AddWatchFlags::IN_MOVED_FROM
        | AddWatchFlags::IN_MOVED_TO
        | AddWatchFlags::IN_DONT_FOLLOW
        | AddWatchFlags::IN_ONLYDIR
}

impl Live {
    /// The tree walked whole and every directory of it watched (none:
    /// inotify refused — no instance, or too many watches).
    pub(crate) fn start(tree: &Tree, index: &mut Index) -> Option<Live> {
        let inotify = Inotify::init(InitFlags::IN_NONBLOCK | InitFlags::IN_CLOEXEC).ok()?;
        let mut live = Live {
            inotify,
            dirs: HashMap::new(),
            current: BTreeMap::new(),
            journals: Vec::new(),
            ignored: crate::walk::Ignored::default(),
            failed: false,
        };
        live.watch(tree, "").then_some(())?;
        let mut found = BTreeMap::new();
        // (each directory watched before it is read: nothing made in it
        // meanwhile goes unseen)
        let watched = walk_dir(tree, index, "", &mut found, &mut |rel| {
            live.watch(tree, rel)
        });
        if !watched {
            return None;
        }
        live.ignored = crate::walk::Ignored::of(tree, &found);
        live.current = found;
        Some(live)
    }

    fn watch(&mut self, tree: &Tree, rel: &str) -> bool {
        match self.inotify.add_watch(&tree.root.join(rel), mask()) {
            Ok(wd) => {
                self.dirs.insert(wd, rel.to_owned());
                true
            }
            // (gone already: its removal is an event to come)
            Err(nix::errno::Errno::ENOENT | nix::errno::Errno::ENOTDIR) => true,
            Err(_) => false,
        }
    }

    /// A new journal, kept until dropped.
    pub(crate) fn journal(&mut self) -> Journal {
        let journal = Journal::default();
        self.journals.retain(|j| j.strong_count() > 0);
        self.journals.push(Arc::downgrade(&journal));
        journal
    }

    /// What the path holds now, as last looked at.
    pub(crate) fn now(&self, path: &str) -> Option<&Seen> {
        self.current.get(path)
    }

    /// Up to date: the events queued, or a walk when they were lost.
    pub(crate) fn bring_up(&mut self, tree: &Tree, index: &mut Index) {
        if !self.refresh(tree, index) {
            self.rewalk(tree, index);
        }
    }

    /// Brings what is known up to date with the events queued; false when
    /// events were lost, a `.gitignore` changed or a watch could not be
    /// made (walk instead).
    fn refresh(&mut self, tree: &Tree, index: &mut Index) -> bool {
        loop {
            let events = match self.inotify.read_events() {
                Ok(events) => events,
                Err(nix::errno::Errno::EAGAIN) => return true,
                Err(_) => return false,
            };
            for event in events {
                if event.mask.contains(AddWatchFlags::IN_Q_OVERFLOW) {
                    return false;
                }
                if event.mask.contains(AddWatchFlags::IN_IGNORED) {
                    self.dirs.remove(&event.wd);
                    continue;
                }
                let (Some(dir), Some(name)) = (self.dirs.get(&event.wd), &event.name) else {
                    continue;
                };
                let name = name.to_string_lossy();
                if name == ".gitignore" {
                    return false;
                }
                let path = match dir.is_empty() {
                    true => name.into_owned(),
                    false => format!("{dir}/{name}"),
                };
                let moved = AddWatchFlags::IN_CREATE
                    | AddWatchFlags::IN_DELETE
                    | AddWatchFlags::IN_MOVED_FROM
                    | AddWatchFlags::IN_MOVED_TO;
                if !self.apply(tree, index, &path, event.mask.intersects(moved)) {
                    return false;
                }
            }
        }
    }

    /// `path` looked at again (`moved`: created, deleted or moved — a
    /// directory's contents walked again): set or gone, with what is under
    /// it. False when a watch could not be made.
    fn apply(&mut self, tree: &Tree, index: &mut Index, path: &str, moved: bool) -> bool {
        if crate::walk::protected(path) {
            return true;
        }
        // (what .gitignore leaves out is never read)
        let kind = std::fs::symlink_metadata(tree.root.join(path)).map(|m| m.is_dir());
        let now = match kind {
            Ok(is_dir) if !self.ignored.is_ignored(path, is_dir) => look(tree, index, path),
            _ => None,
        };
        let is_dir = now.as_ref().is_some_and(|s| s.state.is_dir());
        let was_dir = self.current.get(path).is_some_and(|s| s.state.is_dir());
        let mut found = BTreeMap::new();
        let again = is_dir && (moved || !was_dir);
        if again {
            // watched before it is read, its directories too: nothing made
            // meanwhile goes unseen
            if !walk_dir(tree, index, path, &mut found, &mut |rel| {
                self.watch(tree, rel)
            }) {
                return false;
            }
            // a .gitignore of its own: what is left out is known anew
            if found.keys().any(|k| k.ends_with("/.gitignore")) {
                return false;
            }
        }
        if was_dir && !is_dir {
            self.forget_under(path);
        }
        if (was_dir && !is_dir) || again {
            let prefix = format!("{path}/");
            let under: Vec<String> = (self.current.range(prefix.clone()..))
                .take_while(|(k, _)| k.starts_with(&prefix))
                .filter(|(k, _)| !found.contains_key(*k))
                .map(|(k, _)| k.clone())
                .collect();
            for k in under {
                self.set(&k, None);
            }
        }
        found.remove(path);
        for (k, seen) in found {
            self.set(&k, Some(seen));
        }
        // (a directory met again, its contents not: watched, as it may not be)
        if is_dir && !again && !self.watch(tree, path) {
            return false;
        }
        self.set(path, now);
        true
    }

    /// Watches of what was under `path` dropped (it moved or went: a watch
    /// follows its directory, and would name it wrongly).
    fn forget_under(&mut self, path: &str) {
        let prefix = format!("{path}/");
        let stale: Vec<WatchDescriptor> = (self.dirs.iter())
            .filter(|(_, d)| *d == path || d.starts_with(&prefix))
            .map(|(wd, _)| *wd)
            .collect();
        for wd in stale {
            let _ = self.inotify.rm_watch(wd);
            self.dirs.remove(&wd);
        }
    }

    /// Records `path`'s change in every open journal, then keeps it.
    fn set(&mut self, path: &str, seen: Option<Seen>) {
        let before = self.current.get(path).cloned();
        if before == seen {
            return;
        }
        for journal in self.journals.iter().filter_map(Weak::upgrade) {
            let mut journal = journal.lock().unwrap_or_else(|e| e.into_inner());
            journal
                .entry(path.to_owned())
                .or_insert_with(|| before.clone());
        }
        match seen {
            Some(seen) => self.current.insert(path.to_owned(), seen),
            None => self.current.remove(path),
        };
    }

    /// What was known compared with a walk of the whole tree (events were
    /// lost): every difference recorded as a change.
    fn rewalk(&mut self, tree: &Tree, index: &mut Index) {
        let mut found = BTreeMap::new();
        if !walk_dir(tree, index, "", &mut found, &mut |rel| {
            self.watch(tree, rel)
        }) {
            self.failed = true;
        }
        self.ignored = crate::walk::Ignored::of(tree, &found);
        let gone: Vec<String> = (self.current.keys())
            .filter(|k| !found.contains_key(*k))
            .cloned()
            .collect();
        for k in gone {
            self.set(&k, None);
        }
        for (k, seen) in found {
            self.set(&k, Some(seen));
        }
    }
}
