//! What the command-line benchmarks share: the `hc` they time, and a
//! fresh project for it.

pub const HC: &str = env!("CARGO_BIN_EXE_hc");

/// A temporary directory with `hc init` run in it.
#[allow(dead_code)] // not every benchmark makes one
pub fn project() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    init(dir.path());
    dir
}

/// `hc init` in `root`.
pub fn init(root: &std::path::Path) {
    let ok = std::process::Command::new(HC)
        .arg("init")
        .current_dir(root)
        .output()
        .unwrap();
    assert!(ok.status.success());
}
