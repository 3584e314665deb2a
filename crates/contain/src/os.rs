//! What the engine needs of the operating system around a contained
//! process: its private temp dir, and ending its whole process group.

use std::path::{Path, PathBuf};

/// The process's own temp dir (writable when contained; the engine removes
/// it at the process's end). One directory per user: a shared one would
/// belong to whoever made it first, and no one else could run a contained
/// program.
pub fn temp_dir(process: &str) -> PathBuf {
    let uid = nix::unistd::getuid();
    std::env::temp_dir()
        .join(format!("hermitcrab-{uid}"))
        .join(process)
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
