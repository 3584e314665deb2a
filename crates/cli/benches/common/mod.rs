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

/// Waits until the fake has received `n` requests whose first message is
/// one of the runs'.
#[allow(dead_code)] // not every benchmark waits for runs
pub fn until_requests(fake: &testkit::FakeModel, n: usize) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(600);
    while fake.requests_to("/v1/messages").len() < n {
        assert!(std::time::Instant::now() < deadline, "the runs did not end");
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
}

/// The mean gap between consecutive requests of one run, over every run.
#[allow(dead_code)] // not every benchmark measures gaps
pub fn mean_gap(fake: &testkit::FakeModel) -> std::time::Duration {
    let mut by_run: std::collections::HashMap<String, Vec<std::time::Instant>> =
        std::collections::HashMap::new();
    for r in fake.requests_to("/v1/messages") {
        let first = r.body["messages"][0]["content"][0]["text"]
            .as_str()
            .unwrap_or("")
            .to_owned();
        by_run.entry(first).or_default().push(r.received);
    }
    let gaps: Vec<std::time::Duration> = by_run
        .values_mut()
        .flat_map(|times| {
            times.sort();
            times.windows(2).map(|w| w[1] - w[0]).collect::<Vec<_>>()
        })
        .collect();
    gaps.iter().sum::<std::time::Duration>() / gaps.len().max(1) as u32
}

/// `hc ARGS…` in `root` against the fake at `base_url`, quiet, with no
/// person's configuration or store.
#[allow(dead_code)] // not every benchmark runs `hc` so
pub fn quiet(root: &std::path::Path, base_url: &str, args: &[&str]) -> std::process::Command {
    let mut command = std::process::Command::new(HC);
    command
        .args(args)
        .current_dir(root)
        .env("ANTHROPIC_BASE_URL", base_url)
        .env("XDG_CONFIG_HOME", root.join(".no-user-config"))
        .env("XDG_DATA_HOME", root.join(".no-user-data"))
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("HC_STORE")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    command
}

/// When the fake received the first request of the run of `prompt`.
#[allow(dead_code)] // not every benchmark waits for one
pub fn first_of(fake: &testkit::FakeModel, prompt: &str) -> std::time::Instant {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let found = fake
            .requests_to("/v1/messages")
            .into_iter()
            .find(|r| r.body["messages"][0]["content"][0]["text"].as_str() == Some(prompt));
        if let Some(r) = found {
            return r.received;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no request for {prompt}"
        );
        std::thread::sleep(std::time::Duration::from_micros(200));
    }
}

/// `iters` runs queued by `queue` (each prompt `first N`, `n` counting
/// them): the time from each queueing to the fake receiving its first
/// request, summed.
#[allow(dead_code)] // not every benchmark queues runs
pub fn queued_to_first(
    fake: &testkit::FakeModel,
    n: &mut usize,
    iters: u64,
    queue: impl Fn(&str),
) -> std::time::Duration {
    let mut total = std::time::Duration::ZERO;
    for _ in 0..iters {
        *n += 1;
        let prompt = format!("first {n}");
        let started = std::time::Instant::now();
        queue(&prompt);
        total += first_of(fake, &prompt) - started;
    }
    total
}
