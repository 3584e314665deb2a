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

/// `hc commit` in `root` with these chunks, as a script would.
#[allow(dead_code)] // not every benchmark commits
pub fn commit_chunks(root: &std::path::Path, chunks: &[serde_json::Value]) {
    use std::io::Write;
    let mut commit = std::process::Command::new(HC)
        .arg("commit")
        .current_dir(root)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let body = serde_json::json!({ "chunks": chunks }).to_string();
    commit
        .stdin
        .take()
        .unwrap()
        .write_all(body.as_bytes())
        .unwrap();
    assert!(commit.wait().unwrap().success());
}

/// `hc run --permission-mode bypass go` in `dir` of the project at `root`,
/// against the model at `base_url`, quiet, with a user directory of its
/// own.
#[allow(dead_code)] // not every benchmark runs the agent this way
pub fn run_go(
    root: &std::path::Path,
    dir: &std::path::Path,
    base_url: &str,
) -> std::process::Command {
    let mut command = std::process::Command::new(HC);
    command
        .args(["run", "--permission-mode", "bypass", "go"])
        .current_dir(dir)
        .env("ANTHROPIC_BASE_URL", base_url)
        .env("XDG_CONFIG_HOME", root.join(".no-user-config"))
        .env("XDG_DATA_HOME", root.join(".no-user-data"))
        .env_remove("ANTHROPIC_API_KEY")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    command
}
