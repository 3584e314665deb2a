// Included by `build.rs` too (as `include!`), so no inner doc comment here:
// the crate docs describe it at `pub mod build_id`.

/// FNV-1a of `bytes`, continuing from `hash`.
pub fn fnv1a(mut hash: u64, bytes: &[u8]) -> u64 {
    for b in bytes {
        hash ^= u64::from(*b);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    hash
}

/// The FNV-1a offset basis.
pub const FNV_START: u64 = 0xcbf2_9ce4_8422_2325;

/// The build id of the crate whose sources are under `src` at `version`:
/// a hash of every `.rs` file's path (relative to `src`) and bytes, in
/// path order, and of the version. Any change to any of them — the
/// policy's format, the sandbox, the zygote's wire format — changes it.
pub fn of_sources(src: &std::path::Path, version: &str) -> std::io::Result<u64> {
    let mut files = Vec::new();
    let mut dirs = vec![src.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir)? {
            let path = entry?.path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                files.push(path);
            }
        }
    }
    files.sort();
    let mut hash = fnv1a(FNV_START, version.as_bytes());
    for file in files {
        let name = file.strip_prefix(src).unwrap_or(&file);
        hash = fnv1a(hash, name.to_string_lossy().as_bytes());
        hash = fnv1a(hash, &[0]);
        hash = fnv1a(hash, &std::fs::read(&file)?);
        hash = fnv1a(hash, &[0]);
    }
    Ok(hash)
}
