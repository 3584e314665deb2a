//! Paths as programs and hosts are given them: relative to the project
//! root, absolute, or under `~` — one reading for the engine's
//! capabilities, the tools' bounds and the agent's permission rules.

use std::path::{Component, Path, PathBuf};

/// `~` or `~/…` with `$HOME` in its place; any other path as it is.
pub fn expand_home(path: &str) -> PathBuf {
    let home = || std::env::var_os("HOME").map(PathBuf::from);
    match (path.strip_prefix('~'), home()) {
        (Some(""), Some(home)) => home,
        (Some(rest), Some(home)) if rest.starts_with('/') => home.join(&rest[1..]),
        _ => PathBuf::from(path),
    }
}

/// `.` and `..` resolved by text (no symlink followed).
pub fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

/// `path` (relative to `root`, absolute, or under `~`) made absolute, by
/// text.
pub fn absolute(root: &Path, path: &str) -> PathBuf {
    normalize(&root.join(expand_home(path)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tilde_is_home() {
        let home = std::env::var("HOME").unwrap();
        assert_eq!(expand_home("~/x"), Path::new(&home).join("x"));
        assert_eq!(expand_home("~"), Path::new(&home));
        assert_eq!(expand_home("a/~"), Path::new("a/~"));
    }

    #[test]
    fn relative_paths_join_the_root_and_lose_their_dots() {
        let root = Path::new("/p");
        assert_eq!(absolute(root, "src/./a/../b.rs"), Path::new("/p/src/b.rs"));
        assert_eq!(absolute(root, "/etc/x"), Path::new("/etc/x"));
        assert_eq!(absolute(root, "../up"), Path::new("/up"));
    }
}
