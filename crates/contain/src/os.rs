//! What the engine needs of the operating system around a contained
//! process: its private temp dir, and ending its whole process group.

use std::os::unix::fs::{DirBuilderExt as _, MetadataExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};

/// The user's directory of temp dirs: `$TMPDIR/hermitcrab-UID`, made
/// private (0700). One that is not this user's alone — made first by
/// someone else, a link, open to others — is never used (whoever made it
/// could read what tools leave there, or make every contained program
/// fail): a fresh private one with a random name beside it is, for this
/// process. Decided once a process.
fn user_root() -> std::io::Result<PathBuf> {
    static ROOT: std::sync::Mutex<Option<PathBuf>> = std::sync::Mutex::new(None);
    let mut root = ROOT
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some(known) = root.as_ref() {
        return Ok(known.clone());
    }
    // (a failure is not kept: the next run tries again)
    let chosen = choose_root(&std::env::temp_dir())?;
    *root = Some(chosen.clone());
    Ok(chosen)
}

/// [`user_root`] under `base`.
fn choose_root(base: &Path) -> std::io::Result<PathBuf> {
    let uid = nix::unistd::getuid().as_raw();
    let plain = base.join(format!("hermitcrab-{uid}"));
    match std::fs::DirBuilder::new().mode(0o700).create(&plain) {
        Ok(()) => return Ok(plain),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(e),
    }
    match private(&plain, uid) {
        Ok(()) => Ok(plain),
        Err(why) => {
            tracing::warn!(
                "not using {} for the tools' temp files: {why}; using a private one of this \
                 process's instead",
                plain.display()
            );
            fresh_dir(base, &format!("hermitcrab-{uid}-"))
        }
    }
}

/// Whether `dir` is a directory only `uid` can reach (mode 0700, not a
/// link); one of its own left open to others is closed again.
fn private(dir: &Path, uid: u32) -> Result<(), String> {
    let meta = std::fs::symlink_metadata(dir).map_err(|e| e.to_string())?;
    if meta.file_type().is_symlink() || !meta.is_dir() {
        return Err("it is not a directory (a link, or a file)".into());
    }
    if meta.uid() != uid {
        return Err(format!(
            "it belongs to another user (uid {}), not this one (uid {uid})",
            meta.uid()
        ));
    }
    if meta.mode() & 0o077 != 0 {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
            .map_err(|e| format!("it is open to others and cannot be closed: {e}"))?;
    }
    Ok(())
}

/// A new directory under `base` named `prefix` and a random suffix, made
/// private; never one that was there.
fn fresh_dir(base: &Path, prefix: &str) -> std::io::Result<PathBuf> {
    for _ in 0..16 {
        let dir = base.join(format!("{prefix}{}", random_name()?));
        match std::fs::DirBuilder::new().mode(0o700).create(&dir) {
            Ok(()) => return Ok(dir),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
    Err(std::io::Error::other(format!(
        "cannot make a private directory in {}",
        base.display()
    )))
}

/// Sixteen random hex digits (the kernel's).
fn random_name() -> std::io::Result<String> {
    use std::io::Read as _;
    let mut bytes = [0u8; 8];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut bytes)?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// The plain name a process's temp dirs start with, whatever its id says:
/// a process id read from a store someone else made (`../../home/me`)
/// must never name a directory the engine would then remove.
fn plain_name(process: &str) -> String {
    process
        .chars()
        .map(|c| match c {
            'a'..='z' | 'A'..='Z' | '0'..='9' | '_' | '-' => c,
            _ => '_',
        })
        .collect()
}

/// Makes the process's own temp dir (writable when contained; the engine
/// removes it at the process's end): new, private, with a random name
/// under the user's directory ([`user_root`]), so no one can make it
/// first or guess it.
pub fn make_temp_dir(process: &str) -> std::io::Result<PathBuf> {
    let root = user_root()?;
    fresh_dir(&root, &format!("{}.", plain_name(process)))
}

/// Removes every temp dir [`make_temp_dir`] made for `process` (a process
/// taken over from an engine that died included).
pub fn remove_temp_dirs(process: &str) {
    let Ok(root) = user_root() else { return };
    let prefix = format!("{}.", plain_name(process));
    let Ok(entries) = std::fs::read_dir(&root) else {
        return;
    };
    for entry in entries.flatten() {
        if entry.file_name().to_string_lossy().starts_with(&prefix) {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
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
    use super::*;

    #[test]
    fn a_process_id_names_plain_dirs_under_the_users() {
        for hostile in ["../../home/me", "/etc", "..", "a/../../b"] {
            let name = plain_name(hostile);
            assert!(
                !name.contains('/') && !name.contains(".."),
                "{hostile}: {name}"
            );
        }
        let dir = make_temp_dir("../../p_01ABC").unwrap();
        assert_eq!(dir.parent(), Some(user_root().unwrap().as_path()));
        assert!(
            dir.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("______p_01ABC.")
        );
        let mode = std::fs::metadata(&dir).unwrap().mode() & 0o777;
        assert_eq!(mode, 0o700);
        let again = make_temp_dir("../../p_01ABC").unwrap();
        assert_ne!(dir, again, "each run's name is its own");
        remove_temp_dirs("../../p_01ABC");
        assert!(!dir.exists() && !again.exists());
    }

    #[test]
    fn a_directory_someone_else_could_reach_is_never_the_users() {
        let base = tempfile::tempdir().unwrap();
        let uid = nix::unistd::getuid().as_raw();
        // a link where the user's directory goes: not followed
        let elsewhere = base.path().join("elsewhere");
        std::fs::create_dir(&elsewhere).unwrap();
        std::os::unix::fs::symlink(&elsewhere, base.path().join(format!("hermitcrab-{uid}")))
            .unwrap();
        let chosen = choose_root(base.path()).unwrap();
        assert!(chosen.starts_with(base.path()));
        assert!(!chosen.starts_with(&elsewhere));
        assert_ne!(
            chosen.file_name().unwrap(),
            format!("hermitcrab-{uid}").as_str()
        );
        // one of its own left open is closed again, and used
        let open = tempfile::tempdir().unwrap();
        let plain = open.path().join(format!("hermitcrab-{uid}"));
        std::fs::create_dir(&plain).unwrap();
        std::fs::set_permissions(&plain, std::fs::Permissions::from_mode(0o777)).unwrap();
        assert_eq!(choose_root(open.path()).unwrap(), plain);
        assert_eq!(std::fs::metadata(&plain).unwrap().mode() & 0o777, 0o700);
    }
}
