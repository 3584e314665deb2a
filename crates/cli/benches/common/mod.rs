//! What the command-line benchmarks share: the `hc` they time, and a
//! fresh project for it.

pub const HC: &str = env!("CARGO_BIN_EXE_hc");

/// A temporary directory with `hc init` run in it.
pub fn project() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let ok = std::process::Command::new(HC)
        .arg("init")
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(ok.status.success());
    dir
}
