//! Contents by their SHA-256, one file each (`objects/ab/cdef…`), written
//! once: what a file held when a snapshot last read it, so that a run that
//! changes it leaves its before-image at hand.

use std::io::Write as _;
use std::path::PathBuf;

/// The SHA-256 of `bytes`, lowercase hex.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex(ring::digest::digest(&ring::digest::SHA256, bytes).as_ref())
}

/// Bytes as lowercase hex.
pub fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        out.push(char::from(DIGITS[usize::from(b >> 4)]));
        out.push(char::from(DIGITS[usize::from(b & 0xf)]));
    }
    out
}

/// A regular file opened to read — never through a link at its last
/// component, never blocking (what was a file when looked at may have been
/// swapped for a FIFO since: it is refused, not waited on).
pub(crate) fn open_regular(path: &std::path::Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt as _;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)?;
    if !file.metadata()?.is_file() {
        return Err(std::io::Error::other("not a regular file"));
    }
    Ok(file)
}

/// The SHA-256 of what `file` holds, read in pieces, lowercase hex.
pub(crate) fn hash_of(mut file: std::fs::File) -> std::io::Result<String> {
    use std::io::Read as _;
    let mut digest = ring::digest::Context::new(&ring::digest::SHA256);
    let mut buf = vec![0u8; 256 * 1024];
    loop {
        let n = file.read(&mut buf)?;
        if n == 0 {
            return Ok(hex(digest.finish().as_ref()));
        }
        digest.update(&buf[..n]);
    }
}

/// Hex back to bytes (none: not hex).
pub fn unhex(hex: &str) -> Option<Vec<u8>> {
    if !hex.len().is_multiple_of(2) {
        return None;
    }
    (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(hex.get(i..i + 2)?, 16).ok())
        .collect()
}

/// At most this many bytes a store writes in one process's life: a tree
/// seen for the first time is copied once, and a huge one (a home
/// directory) must not fill the disk — past it, what changes is hashed,
/// not kept (not restorable).
pub const STORE_BYTES: u64 = 2 * 1024 * 1024 * 1024;

/// The store: a directory of contents.
pub(crate) struct Store {
    dir: PathBuf,
    written: std::sync::atomic::AtomicU64,
}

impl Store {
    pub(crate) fn new(dir: PathBuf) -> Store {
        Store {
            dir,
            written: std::sync::atomic::AtomicU64::new(0),
        }
    }

    fn path(&self, hash: &str) -> Option<PathBuf> {
        let ok = hash.len() == 64 && hash.bytes().all(|b| b.is_ascii_hexdigit());
        ok.then(|| self.dir.join(&hash[..2]).join(&hash[2..]))
    }

    /// Keeps `bytes` (whose hash is `hash`) unless kept already; false
    /// when it could not be written.
    pub(crate) fn put(&self, hash: &str, bytes: &[u8]) -> bool {
        let Some(path) = self.path(hash) else {
            return false;
        };
        if path.exists() {
            return true;
        }
        let size = bytes.len() as u64;
        let before = self
            .written
            .fetch_add(size, std::sync::atomic::Ordering::Relaxed);
        if before + size > STORE_BYTES {
            return false;
        }
        let written = (|| -> std::io::Result<()> {
            let parent = path.parent().unwrap_or(&self.dir);
            std::fs::create_dir_all(parent)?;
            let mut file = tempfile_in(parent)?;
            file.0.write_all(bytes)?;
            std::fs::rename(&file.1, &path)
        })();
        if let Err(e) = &written {
            tracing::warn!(
                "cannot keep a file's content in {}: {e}",
                self.dir.display()
            );
        }
        written.is_ok()
    }

    /// A content kept, checked against its hash.
    pub(crate) fn get(&self, hash: &str) -> Option<Vec<u8>> {
        let bytes = std::fs::read(self.path(hash)?).ok()?;
        (sha256_hex(&bytes) == hash).then_some(bytes)
    }
}

/// A new file beside where it will be renamed to.
pub(crate) fn tempfile_in(dir: &std::path::Path) -> std::io::Result<(std::fs::File, PathBuf)> {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    for _ in 0..100 {
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let path = dir.join(format!(".tmp-{}-{n}", std::process::id()));
        match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&path)
        {
            Ok(file) => return Ok((file, path)),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
    Err(std::io::Error::other("no free temporary name"))
}
