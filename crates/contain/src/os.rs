//! What the engine needs of the operating system around a contained
//! process: its private temp dir, and ending its whole process group.

use std::path::{Path, PathBuf};

/// The process's own temp dir (writable when contained; the engine removes
/// it at the process's end). One directory per user: a shared one would
/// belong to whoever made it first, and no one else could run a contained
/// program.
pub fn temp_dir(process: &str) -> PathBuf {
    let uid = nix::unistd::getuid();
    // One plain name under the user's directory, whatever the id says: a
    // process id read from a store someone else made (`../../home/me`)
    // must never name a directory the engine would then remove.
    let name: String = process
        .chars()
        .map(|c| match c {
            'a'..='z' | 'A'..='Z' | '0'..='9' | '_' | '-' => c,
            _ => '_',
        })
        .collect();
    std::env::temp_dir()
        .join(format!("hermitcrab-{uid}"))
        .join(name)
}

/// Makes a temp dir (and the user's directory above it) private.
pub fn make_temp_dir(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
}

/// Kills the process group `pid` leads (a program and what it forked).
/// One already gone is fine.
pub fn kill_group(pid: Option<u32>) {
    if let Some(pid) = pid.and_then(|p| i32::try_from(p).ok()) {
        let _ = nix::sys::signal::killpg(
            nix::unistd::Pid::from_raw(pid),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
}

#[cfg(test)]
mod temp_dir_tests {
    use super::temp_dir;

    #[test]
    fn a_process_id_names_one_directory_under_the_users() {
        let base = temp_dir("p_01ABC");
        let parent = base.parent().unwrap().to_path_buf();
        for hostile in ["../../home/me", "/etc", "..", "a/../../b"] {
            let dir = temp_dir(hostile);
            assert_eq!(dir.parent(), Some(parent.as_path()), "{hostile}: {dir:?}");
            assert!(
                !dir.components()
                    .any(|c| c == std::path::Component::ParentDir)
            );
        }
        assert!(base.ends_with("p_01ABC"));
    }
}
