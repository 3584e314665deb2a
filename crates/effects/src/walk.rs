//! One snapshot: each path of the scope `lstat`ed (never followed), read
//! and kept only when its stat data changed since the index last saw it.

use crate::index::{Entry, Index, Stat};
use crate::{Scope, Seen, State, Tree};
use std::collections::{BTreeMap, HashSet};
use std::io::Read as _;
use std::path::{Component, Path, PathBuf};

/// What no tool may write, never looked at (nested repositories' `.git`
/// too).
const PROTECTED: [&str; 2] = [".git", ".hermitcrab"];

/// The scope's paths as they are now.
pub(crate) fn walk(tree: &Tree, index: &mut Index, scope: &Scope) -> BTreeMap<String, Seen> {
    let mut out = BTreeMap::new();
    match scope {
        Scope::Paths(paths) => {
            for rel in paths {
                if let Some(seen) = look(tree, index, rel) {
                    out.insert(rel.clone(), seen);
                }
            }
        }
        Scope::Tree(dirs) => {
            for dir in dirs {
                walk_dir(tree, index, dir, &mut out, &mut |_| true);
            }
            // a whole walk forgets what is gone
            if dirs.iter().any(String::is_empty) {
                let seen: HashSet<&String> = out.keys().collect();
                let before = index.entries.len();
                index.entries.retain(|k, _| seen.contains(k));
                index.dirty |= index.entries.len() != before;
            }
        }
    }
    out
}

/// Everything under `dir` into `out`; `on_dir` is told each directory as
/// it is met, before what it holds is read (a watch made there misses
/// nothing), and a `false` from it is answered.
pub(crate) fn walk_dir(
    tree: &Tree,
    index: &mut Index,
    dir: &str,
    out: &mut BTreeMap<String, Seen>,
    on_dir: &mut dyn FnMut(&str) -> bool,
) -> bool {
    let mut all = true;
    let start = tree.root.join(dir);
    let walker = ignore::WalkBuilder::new(&start)
        .hidden(false)
        .ignore(false)
        .git_global(false)
        .git_ignore(true)
        .git_exclude(true)
        .require_git(false)
        .parents(!dir.is_empty())
        .follow_links(false)
        .filter_entry(|e| {
            !PROTECTED
                .iter()
                .any(|p| e.file_name() == std::ffi::OsStr::new(p))
        })
        .build();
    for entry in walker.flatten() {
        let Ok(rel) = entry.path().strip_prefix(&tree.root) else {
            continue;
        };
        if rel.as_os_str().is_empty() {
            continue;
        }
        let rel = slashed(rel);
        if let Some(seen) = look(tree, index, &rel) {
            if seen.state.is_dir() {
                all &= on_dir(&rel);
            }
            out.insert(rel, seen);
        }
    }
    all
}

/// What `rel` holds now: from the index when its stat data is the same,
/// else read, hashed and (under the cap) kept. Nothing for what is not a
/// file, a symlink or a directory, or cannot be read.
pub(crate) fn look(tree: &Tree, index: &mut Index, rel: &str) -> Option<Seen> {
    let path = tree.root.join(rel);
    let meta = std::fs::symlink_metadata(&path).ok()?;
    let stat = Stat::of(&meta);
    if let Some(entry) = index.entries.get(rel)
        && entry.stat == stat
    {
        return Some(Seen {
            state: entry.state.clone(),
            kept: entry.kept,
        });
    }
    let kind = meta.file_type();
    let (hash, kept) = if kind.is_dir() {
        (String::new(), true)
    } else if kind.is_symlink() {
        let target = std::fs::read_link(&path).ok()?;
        let bytes = target.as_os_str().as_encoded_bytes();
        let hash = crate::sha256_hex(bytes);
        let kept = tree.store.put(&hash, bytes);
        (hash, kept)
    } else if kind.is_file() {
        read_file(tree, &path, stat.size)?
    } else {
        return None;
    };
    let state = State {
        hash,
        mode: stat.mode,
        size: if kind.is_dir() { 0 } else { stat.size },
    };
    index.entries.insert(
        rel.to_owned(),
        Entry {
            stat,
            state: state.clone(),
            kept,
        },
    );
    index.dirty = true;
    Some(Seen { state, kept })
}

/// A file's hash, and whether its content is kept (not over the cap).
fn read_file(tree: &Tree, path: &Path, size: u64) -> Option<(String, bool)> {
    let mut file = crate::store::open_regular(path).ok()?;
    if size > tree.limits.file_bytes {
        return Some((crate::store::hash_of(file).ok()?, false));
    }
    let mut bytes = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
    file.read_to_end(&mut bytes).ok()?;
    let hash = crate::sha256_hex(&bytes);
    let kept = tree.store.put(&hash, &bytes);
    Some((hash, kept))
}

/// Whether `rel` is in `.git` or `.hermitcrab` (of the tree, or of a
/// repository nested in it).
pub(crate) fn protected(rel: &str) -> bool {
    rel.split('/').any(|part| PROTECTED.contains(&part))
}

/// What the tree's `.gitignore` files leave out, by the directory each
/// is in (the deepest that says anything about a path decides).
#[derive(Default)]
pub(crate) struct Ignored {
    root: PathBuf,
    by_dir: Vec<(String, ignore::gitignore::Gitignore)>,
}

impl Ignored {
    /// The `.gitignore` files among `found`.
    pub(crate) fn of(tree: &Tree, found: &BTreeMap<String, Seen>) -> Ignored {
        let mut by_dir = Vec::new();
        let files = std::iter::once(".gitignore").chain(
            found
                .keys()
                .map(String::as_str)
                .filter(|k| k.ends_with("/.gitignore")),
        );
        for file in files {
            let dir = file
                .strip_suffix(".gitignore")
                .unwrap_or("")
                .trim_end_matches('/');
            let mut builder = ignore::gitignore::GitignoreBuilder::new(tree.root.join(dir));
            if builder.add(tree.root.join(file)).is_some() {
                continue;
            }
            if let Ok(matcher) = builder.build() {
                by_dir.push((dir.to_owned(), matcher));
            }
        }
        // deepest first
        by_dir.sort_by_key(|d| std::cmp::Reverse(d.0.len()));
        Ignored {
            root: tree.root.clone(),
            by_dir,
        }
    }

    /// Whether `rel` (a directory when `is_dir`, or a directory it is in)
    /// is left out.
    pub(crate) fn is_ignored(&self, rel: &str, is_dir: bool) -> bool {
        let path = self.root.join(rel);
        for (dir, matcher) in &self.by_dir {
            if !(dir.is_empty() || rel.starts_with(&format!("{dir}/"))) {
                continue;
            }
            match matcher.matched_path_or_any_parents(&path, is_dir) {
                ignore::Match::Ignore(_) => return true,
                ignore::Match::Whitelist(_) => return false,
                ignore::Match::None => {}
            }
        }
        false
    }
}

/// A relative path, `/`-separated.
pub(crate) fn slashed(rel: &Path) -> String {
    rel.to_string_lossy().replace('\\', "/")
}

/// `p` as a plain relative path (`..` taken back, never above its start;
/// no root), `/`-separated.
pub(crate) fn relative(p: &Path) -> Option<String> {
    let mut out = PathBuf::new();
    for part in p.components() {
        match part {
            Component::Normal(n) => out.push(n),
            Component::CurDir => {}
            Component::ParentDir if out.pop() => {}
            _ => return None,
        }
    }
    (!out.as_os_str().is_empty()).then(|| slashed(&out))
}
