//! What `write` and `edit` share: the rule that a file is replaced only
//! as it was last read (`expect_sha256`), and replacing a file atomically,
//! so a crash or a refusal leaves it as it was.

use crate::text;
use std::io::Write as _;
use std::path::Path;

/// Checks that `current` (the file's bytes now) is what the agent last
/// read: `expect` is the `sha256` of that read.
pub(crate) fn check_unchanged(
    shown: &str,
    current: &[u8],
    expect: Option<&str>,
) -> Result<(), String> {
    let Some(expect) = expect else {
        return Err(format!(
            "{shown} exists and has not been read in this session; read it first \
             (a file is changed only as it was read, so nothing is overwritten unseen)"
        ));
    };
    let now = text::sha256_hex(current);
    if now != expect.to_ascii_lowercase() {
        return Err(format!(
            "{shown} has changed since it was last read (sha256 {} then, {} now); \
             read it again, then make the change",
            short(expect),
            short(&now)
        ));
    }
    Ok(())
}

fn short(hash: &str) -> &str {
    hash.get(..12).unwrap_or(hash)
}

/// Writes `bytes` to `path` through a temporary file in the same directory
/// and a rename: readers see the old file or the new one, never half of
/// either. An existing file keeps its permissions; a new one gets what the
/// umask leaves of `rw-rw-rw-`, as any editor's would. A symlink is
/// followed: its target is what changes.
pub(crate) fn replace(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt as _;
    let target = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    let dir = target.parent().unwrap_or(Path::new("."));
    let mut temp = tempfile::Builder::new()
        .prefix(".hc-write-")
        .permissions(std::fs::Permissions::from_mode(0o666))
        .tempfile_in(dir)?;
    temp.write_all(bytes)?;
    if let Ok(meta) = std::fs::metadata(&target) {
        temp.as_file().set_permissions(meta.permissions())?;
    }
    temp.persist(&target).map_err(|e| e.error)?;
    Ok(())
}
