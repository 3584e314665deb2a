//! A project, the fake model on 127.0.0.1, and `hc` as a person or a
//! script runs it: `hc run` as a process, or `hc serve --stdio` driven as
//! a host (for answering the agent's questions through the substrate).

use protocol::{Client, Events};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use substrate::{PlacementType, ScopeOpts, Substrate};
use testkit::{FakeModel, Script};

pub const HC: &str = env!("CARGO_BIN_EXE_hc");

/// Variables of the test's own environment that must not reach `hc`.
pub const SCRUB: &[&str] = &[
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_AUTH_TOKEN",
    "ANTHROPIC_BASE_URL",
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "HC_MODEL",
    "HC_FAST_MODEL",
    "ANTHROPIC_MODEL",
    "ANTHROPIC_SMALL_FAST_MODEL",
    "ANTHROPIC_DEFAULT_OPUS_MODEL",
    "ANTHROPIC_DEFAULT_SONNET_MODEL",
    "ANTHROPIC_DEFAULT_HAIKU_MODEL",
    "ENABLE_TOOL_SEARCH",
    "ANTHROPIC_DEFAULT_FABLE_MODEL",
    "CLAUDE_CODE_SUBAGENT_MODEL",
    "HC_MAX_TURNS",
    "HC_PERMISSION_MODE",
    "HC_API",
    "HC_MAX_RETRIES",
    "CLAUDE_CODE_MAX_RETRIES",
    "API_TIMEOUT_MS",
    "HC_STREAM_IDLE_TIMEOUT_MS",
    "HC_STORE",
    "HC_PROJECT",
    "HC_HOST",
    "HC_PERSON",
    "TRACEPARENT",
    "OTEL_SDK_DISABLED",
    "OTEL_EXPORTER_OTLP_ENDPOINT",
    "OTEL_EXPORTER_OTLP_PROTOCOL",
    "OTEL_EXPORTER_OTLP_HEADERS",
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
    "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
    "OTEL_EXPORTER_OTLP_LOGS_ENDPOINT",
    "OTEL_TRACES_EXPORTER",
    "OTEL_METRICS_EXPORTER",
    "OTEL_LOGS_EXPORTER",
    "OTEL_LOG_USER_PROMPTS",
    "OTEL_LOG_TOOL_DETAILS",
    "OTEL_RESOURCE_ATTRIBUTES",
    "OTEL_SERVICE_NAME",
];

/// The tests' own `HOME` — a fresh machine's: empty but for a git
/// identity (`hc agents merge` makes a commit, and a machine with no
/// identity is the machine the suite must pass on) — as the environment
/// every `hc` the tests start gets, through [`home_env`].
pub fn home() -> PathBuf {
    static HOME: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    HOME.get_or_init(|| {
        let home = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("test-home");
        std::fs::create_dir_all(&home).unwrap();
        let config = "[user]\n\tname = hc tests\n\temail = tests@hermitcrab.invalid\n";
        std::fs::write(home.join(".gitconfig"), config).unwrap();
        home
    })
    .clone()
}

/// `HOME` and git's configuration as the tests' own ([`home`]): none of
/// the machine's person's.
pub fn home_env() -> [(&'static str, PathBuf); 3] {
    let home = home();
    [
        ("GIT_CONFIG_GLOBAL", home.join(".gitconfig")),
        ("GIT_CONFIG_NOSYSTEM", PathBuf::from("1")),
        ("HOME", home),
    ]
}

pub struct Setup {
    pub dir: tempfile::TempDir,
    pub root: PathBuf,
    pub fake: FakeModel,
}

/// What `hc run` did.
#[derive(Debug)]
pub struct Ran {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

/// The bodies `fake` received at `/v1/messages`, raw.
pub fn sent_to(fake: &FakeModel) -> Vec<Vec<u8>> {
    fake.requests_to("/v1/messages")
        .into_iter()
        .map(|r| r.raw_body.to_vec())
        .collect()
}

impl Ran {
    /// `command` run to its end (at most 120 s).
    pub async fn of(mut command: tokio::process::Command) -> Ran {
        let out = tokio::time::timeout(std::time::Duration::from_secs(120), command.output())
            .await
            .expect("hc did not end within 120 s")
            .unwrap();
        Ran {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }
}

impl Setup {
    /// A project (`hc init`) and a fake model serving `script` (JSON).
    pub async fn new(script: Value) -> Setup {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let out = std::process::Command::new(HC)
            .arg("init")
            .current_dir(&root)
            .envs(home_env())
            .env("XDG_CONFIG_HOME", root.join(".no-user-config"))
            .env("XDG_DATA_HOME", root.join(".no-user-data"))
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        let fake = FakeModel::start(Script::from_json(&script.to_string()).unwrap())
            .await
            .unwrap();
        Setup { dir, root, fake }
    }

    /// A directory with no project yet, and a fake model serving `script`.
    pub async fn bare(script: Value) -> Setup {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let fake = FakeModel::start(Script::from_json(&script.to_string()).unwrap())
            .await
            .unwrap();
        Setup { dir, root, fake }
    }

    pub fn file(&self, rel: &str, content: &str) -> PathBuf {
        let path = self.root.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, content).unwrap();
        path
    }

    /// A command for `hc` in the project, talking to the fake.
    pub fn hc(&self, args: &[&str]) -> tokio::process::Command {
        let mut command = tokio::process::Command::new(HC);
        command.args(args);
        self.in_project(command)
    }

    /// `command` in the project, with `hc`'s environment there (talking to
    /// the fake, no person's configuration).
    pub fn in_project(&self, mut command: tokio::process::Command) -> tokio::process::Command {
        command.current_dir(&self.root);
        for var in SCRUB {
            command.env_remove(var);
        }
        command
            .env("ANTHROPIC_BASE_URL", self.fake.base_url())
            .envs(home_env())
            .env("XDG_CONFIG_HOME", self.root.join(".no-user-config"))
            .env("XDG_DATA_HOME", self.root.join(".no-user-data"))
            .stdin(Stdio::null())
            .kill_on_drop(true);
        command
    }

    /// `hc trust`: the project's own files may grant themselves power (as
    /// they are now).
    pub fn trust(&self) {
        let out = std::process::Command::new(HC)
            .arg("trust")
            .current_dir(&self.root)
            .envs(home_env())
            .env("XDG_CONFIG_HOME", self.root.join(".no-user-config"))
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
    }

    /// `hc run ARGS…` to its end.
    pub async fn run(&self, args: &[&str]) -> Ran {
        let mut all = vec!["run"];
        all.extend_from_slice(args);
        self.out(&all).await
    }

    /// `hc ARGS…` to its end.
    pub async fn out(&self, args: &[&str]) -> Ran {
        Ran::of(self.hc(args)).await
    }

    /// `hc ARGS…` to its end, with `env` set.
    pub async fn out_with(&self, env: &[(&str, &str)], args: &[&str]) -> Ran {
        let mut command = self.hc(args);
        command.envs(env.iter().copied());
        Ran::of(command).await
    }

    /// The substrate, opened beside whatever `hc` left.
    pub fn db(&self) -> Arc<Substrate> {
        Arc::new(Substrate::open(self.root.join(".hermitcrab/substrate.db")).unwrap())
    }

    /// The project's sessions, oldest first.
    pub fn sessions(&self) -> Vec<String> {
        let read = self
            .db()
            .scope(
                &["session"],
                &ScopeOpts {
                    kind: substrate::TypeFilter::Instance,
                    ..ScopeOpts::default()
                },
            )
            .unwrap();
        read.chunks.iter().map(|c| c.id.clone()).collect()
    }

    /// A session's chunks of type `ty`, bodies in order.
    pub fn of_type(&self, session: &str, ty: &str) -> Vec<Value> {
        self.db()
            .scope(&[session, ty], &ScopeOpts::default())
            .unwrap()
            .chunks
            .iter()
            .map(|c| c.body_value())
            .collect()
    }

    /// The bodies the fake received at `/v1/messages`, raw.
    pub fn sent(&self) -> Vec<Vec<u8>> {
        sent_to(&self.fake)
    }

    /// `hc trace SESSION --request N`'s output.
    pub async fn rebuilt(&self, session: &str, n: usize) -> Vec<u8> {
        let out = self
            .hc(&["trace", session, "--request", &n.to_string()])
            .output()
            .await
            .unwrap();
        assert!(
            out.status.success(),
            "hc trace: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        // Piped, the output is exactly the body: no newline added.
        out.stdout
    }

    /// The agent processes of a session (their final bodies).
    pub fn processes(&self, session: &str) -> Vec<Value> {
        self.of_type(session, "engine/process")
    }

    /// `hc ARGS…` with `input` on its stdin (then closed), to its end
    /// (within 60 s).
    pub async fn piped(&self, args: &[&str], input: &[u8]) -> std::process::Output {
        use tokio::io::AsyncWriteExt;
        let mut command = self.hc(args);
        command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = command.spawn().unwrap();
        let mut stdin = child.stdin.take().unwrap();
        stdin.write_all(input).await.unwrap();
        drop(stdin);
        tokio::time::timeout(std::time::Duration::from_secs(60), child.wait_with_output())
            .await
            .expect("hc did not end within 60 s")
            .unwrap()
    }

    /// `declaration` committed through `hc commit`: the commit's record.
    pub async fn commit(&self, declaration: Value) -> Value {
        let done = self
            .piped(&["commit"], declaration.to_string().as_bytes())
            .await;
        assert!(done.status.success(), "{done:?}");
        serde_json::from_slice(&done.stdout).unwrap()
    }

    /// `hc serve --stdio` as a host.
    pub fn serve(&self) -> (tokio::process::Child, Client, Events) {
        let mut command = self.hc(&["serve", "--stdio"]);
        command.stdin(Stdio::piped()).stdout(Stdio::piped());
        let mut child = command.spawn().unwrap();
        let (client, events) =
            Client::connect(child.stdout.take().unwrap(), child.stdin.take().unwrap());
        (child, client, events)
    }
}

/// A reply turn: `content` blocks, a stop reason, usage.
pub fn reply(content: Value, stop: &str) -> Value {
    json!({"reply": {"content": content, "stop_reason": stop,
        "usage": {"input_tokens": 1000, "output_tokens": 50, "cache_read_input_tokens": 0}}})
}

/// A `tool_use` block.
pub fn call(id: &str, name: &str, input: Value) -> Value {
    json!({"type": "tool_use", "id": id, "name": name, "input": input})
}

pub fn text(t: &str) -> Value {
    json!({"type": "text", "text": t})
}

/// A session's processes that ran `program`: (started, ended) times.
pub fn spans(
    db: &Substrate,
    program: &str,
) -> Vec<(std::time::SystemTime, std::time::SystemTime, Value)> {
    let read = db
        .scope(
            &[format!("program/{program}")],
            &ScopeOpts {
                kind: substrate::TypeFilter::Instance,
                ..ScopeOpts::default()
            },
        )
        .unwrap();
    read.chunks
        .iter()
        .filter(|c| c.is_on("engine/process", PlacementType::Instance))
        .map(|c| {
            let b = c.body_value();
            let t = |k: &str| humantime::parse_rfc3339(b[k].as_str().unwrap()).unwrap();
            (t("started"), t("ended"), b)
        })
        .collect()
}

/// The host's run of the agent on `session`, as `hc run` makes it (the
/// agent crate's own launch; nothing pinned).
pub fn run_args(session: &str, prompt: &str, config: Value) -> protocol::RunArgs {
    let config = agent::AgentConfig::parse(&config).unwrap();
    let launch = agent::launch::Launch {
        session,
        prompt,
        images: &[],
        config: &config,
        pins: &[],
        uuid: None,
    };
    let (before, args) = launch.plan();
    assert!(
        before.is_none(),
        "nothing is pinned: nothing to commit first"
    );
    args
}

pub fn root_of(path: &Path) -> String {
    path.to_string_lossy().into_owned()
}

/// A reply turn taken only by the request whose last message holds `w`.
pub fn when(w: &str, content: Value, stop: &str) -> Value {
    let mut turn = reply(content, stop);
    turn["when"] = json!(w);
    turn
}

/// The chunks placed instance on `scope` in `s`'s store.
pub fn instances(s: &Setup, scope: &str) -> Vec<substrate::ChunkItem> {
    s.db()
        .scope(
            &[scope],
            &ScopeOpts {
                kind: substrate::TypeFilter::Instance,
                ..ScopeOpts::default()
            },
        )
        .unwrap()
        .chunks
        .iter()
        .map(|c| (**c).clone())
        .collect()
}

/// Bodies of the processes of `program` in `s`'s store.
pub fn processes_of(s: &Setup, program: &str) -> Vec<Value> {
    instances(s, &format!("program/{program}"))
        .iter()
        .filter(|c| c.is_on("engine/process", PlacementType::Instance))
        .map(|c| c.body_value())
        .collect()
}

/// The requests the fake received whose first message holds `marker`
/// (a sub-agent's, by its task), parsed.
pub fn requests_with(s: &Setup, marker: &str) -> Vec<Value> {
    s.sent()
        .iter()
        .map(|b| serde_json::from_slice::<Value>(b).unwrap())
        .filter(|b| b["messages"][0].to_string().contains(marker))
        .collect()
}

/// Waits (30 s at most, else fails naming `what`) until `ready`.
pub async fn wait_for(what: &str, mut ready: impl FnMut() -> bool) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while !ready() {
        assert!(
            std::time::Instant::now() < deadline,
            "waited 30 s for {what}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(25)).await;
    }
}

/// Whether `pid` is gone (or a zombie nobody has reaped yet).
pub fn gone(pid: i64) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
    }
}

/// A session with a sub-agent, a denied call, and — on a second run
/// (`--continue --compact`) — a compaction: the model's turns.
pub fn eventful_script() -> Value {
    json!({"turns": [
        {"reply": {"content": [text("Asking a helper."), call("a1", "agent", json!({"text": "CHILD count files", "description": "count"}))], "stop_reason": "tool_use"}},
        {"reply": {"content": [text("There are 2.")], "stop_reason": "end_turn"}},
        {"reply": {"content": [call("s1", "shell", json!({"command": "rm -rf build"}))], "stop_reason": "tool_use"}},
        {"reply": {"content": [text("I may not delete; done.")], "stop_reason": "end_turn"}},
        {"reply": {"content": [text("SUMMARY: counted files, could not delete.")], "stop_reason": "end_turn"}},
        {"reply": {"content": [text("Going on from the summary.")], "stop_reason": "end_turn"}},
    ]})
}

/// npm packages `packages` installed (pinned, from the registry, once per
/// build tree) under `target/`'s test directory `name`, unless `marker`
/// (a path in it) shows they are; answers the directory.
pub fn npm_installed(name: &str, packages: &[&str], marker: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(name);
    // (installed for these very pins: a bumped pin installs again)
    let stamp = dir.join(".installed");
    let wanted = packages.join(" ");
    let installed = std::fs::read_to_string(&stamp).is_ok_and(|s| s == wanted);
    if !installed || !dir.join(marker).exists() {
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("package.json"),
            r#"{"private": true, "type": "module"}"#,
        )
        .unwrap();
        let out = std::process::Command::new("npm")
            .args([
                "install",
                "--omit=optional",
                "--no-audit",
                "--no-fund",
                "--prefix",
            ])
            .arg(&dir)
            .args(packages)
            .output()
            .expect("npm is needed for the TypeScript client tests (Debian: apt-get install npm)");
        assert!(out.status.success(), "npm install failed: {out:?}");
        std::fs::write(&stamp, wanted).unwrap();
    }
    dir
}
