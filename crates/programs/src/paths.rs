//! Paths as the tool programs take them: absolute, or relative to the
//! project root; checked against what this run may read and write
//! (`HC_CAPABILITIES`, which the engine sets) before anything is touched,
//! so a refusal is a clear error result rather than a bare `EACCES` from
//! containment (which refuses it anyway).

use std::path::{Component, Path, PathBuf};

/// Directories no tool writes into, even inside a writable root.
pub(crate) const PROTECTED: &[&str] = &[".git", ".hermitcrab"];

/// The project root and what this run may touch.
pub(crate) struct Paths {
    root: PathBuf,
    /// `None`: everything.
    read: Option<Vec<PathBuf>>,
    /// `None`: not told (run outside the engine's capabilities).
    write: Option<Vec<PathBuf>>,
}

impl Paths {
    /// From the environment the engine gives a program.
    pub fn from_env(root: &Path) -> Paths {
        let granted: serde_json::Value = std::env::var(protocol::env::CAPABILITIES)
            .ok()
            .and_then(|s| serde_json::from_str(&s).ok())
            .unwrap_or_default();
        let list = |v: &serde_json::Value| -> Option<Vec<PathBuf>> {
            v.as_array().map(|a| {
                a.iter()
                    .filter_map(|p| p.as_str().map(PathBuf::from))
                    .collect()
            })
        };
        Paths {
            root: root.to_path_buf(),
            read: list(&granted["read"]),
            write: list(&granted["write"]),
        }
    }

    /// The project root, and what may be read (`None`: everything) and
    /// written (`None`: not told).
    pub fn new(root: &Path, read: Option<Vec<PathBuf>>, write: Option<Vec<PathBuf>>) -> Paths {
        Paths {
            root: root.to_path_buf(),
            read,
            write,
        }
    }

    /// The project root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// `path` made absolute (relative to the project root), `.` and `..`
    /// resolved by their text, `~` expanded.
    pub fn absolute(&self, path: &str) -> PathBuf {
        protocol::paths::absolute(&self.root, path)
    }

    /// How a path is shown: relative to the project root when inside it.
    pub fn show(&self, path: &Path) -> String {
        match path.strip_prefix(&self.root) {
            Ok(rel) if rel.as_os_str().is_empty() => ".".to_owned(),
            Ok(rel) => rel.to_string_lossy().into_owned(),
            Err(_) => path.to_string_lossy().into_owned(),
        }
    }

    /// Whether this run may read `path`: an error that says so if not.
    pub fn check_read(&self, path: &Path) -> Result<(), String> {
        let Some(allowed) = &self.read else {
            return Ok(());
        };
        let real = real_path(path);
        if allowed.iter().any(|a| real.starts_with(a)) {
            return Ok(());
        }
        Err(format!(
            "cannot read {}: it is outside what this program may read ({})",
            path.display(),
            shown_list(allowed)
        ))
    }

    /// Whether this run may write `path` (a file, existing or not): not in
    /// `.git` or `.hermitcrab`, and inside a writable root.
    pub fn check_write(&self, path: &Path) -> Result<(), String> {
        let real = real_path(path);
        for candidate in [path, real.as_path()] {
            // (what is above the root is not the project's: a background
            // run's root is a worktree under the project's `.hermitcrab/`)
            let inside = candidate.strip_prefix(&self.root).unwrap_or(candidate);
            if let Some(name) = protected_part(inside) {
                return Err(format!(
                    "cannot write {}: `{name}` is read-only for every tool (hermitcrab keeps \
                     {} out of reach of tools); write elsewhere",
                    path.display(),
                    PROTECTED.join(" and ")
                ));
            }
        }
        let Some(allowed) = &self.write else {
            return Ok(());
        };
        if allowed.iter().any(|a| real.starts_with(a)) {
            return Ok(());
        }
        Err(format!(
            "cannot write {}: it is outside what this program may change ({}); \
             the project root is {}",
            path.display(),
            shown_list(allowed),
            self.root.display()
        ))
    }
}

fn shown_list(paths: &[PathBuf]) -> String {
    if paths.is_empty() {
        return "nothing".to_owned();
    }
    paths
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join(", ")
}

/// The first protected component of `path`, if any.
fn protected_part(path: &Path) -> Option<&'static str> {
    path.components().find_map(|c| match c {
        Component::Normal(name) => PROTECTED.iter().copied().find(|p| name == *p),
        _ => None,
    })
}

/// `path` with symlinks resolved as far as it exists: the deepest existing
/// ancestor canonicalized, the rest appended. A symlink cannot lead a
/// write out of bounds unseen.
pub(crate) fn real_path(path: &Path) -> PathBuf {
    let mut missing = Vec::new();
    let mut current = path.to_path_buf();
    loop {
        if let Ok(real) = current.canonicalize() {
            let mut out = real;
            for part in missing.iter().rev() {
                out.push(part);
            }
            return out;
        }
        match (current.file_name().map(|n| n.to_owned()), current.parent()) {
            (Some(name), Some(parent)) => {
                missing.push(name);
                current = parent.to_path_buf();
            }
            _ => return path.to_path_buf(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn paths(root: &Path, write: &[&Path]) -> Paths {
        Paths {
            root: root.to_path_buf(),
            read: None,
            write: Some(write.iter().map(|p| p.to_path_buf()).collect()),
        }
    }

    #[test]
    fn writes_stay_inside_their_roots_and_out_of_git() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir(root.join(".git")).unwrap();
        let p = paths(&root, &[&root]);
        assert!(p.check_write(&p.absolute("src/new.rs")).is_ok());
        assert!(p.check_write(&p.absolute("../outside")).is_err());
        let git = p.check_write(&p.absolute(".git/config")).unwrap_err();
        assert!(git.contains("`.git` is read-only"), "{git}");
        std::os::unix::fs::symlink("/tmp", root.join("escape")).unwrap();
        assert!(p.check_write(&p.absolute("escape/x")).is_err());
        assert_eq!(p.show(&root.join("a/b")), "a/b");
        assert_eq!(p.show(Path::new("/etc/hosts")), "/etc/hosts");
    }
}
