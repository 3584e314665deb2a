//! `shell`: a command run by `bash -c`, its output streamed as progress
//! and answered head and tail, killed whole on a timeout, and the
//! directory it ended in reported so `cd` carries to the next call.

pub(crate) mod capture;
pub(crate) mod reap;

use crate::paths::Paths;
use capture::{Capture, Utf8Carry};
use protocol::Capabilities;
use protocol::program::{Output, ProgramDef, ProgramFuture, serve};
use serde::Deserialize;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};
use tokio::io::AsyncReadExt;
use tokio::sync::mpsc;

/// A command's timeout when the call gives none.
const DEFAULT_TIMEOUT_MS: u64 = 120_000;
/// The longest timeout a call may ask for.
const MAX_TIMEOUT_MS: u64 = 600_000;
/// Progress is sent this often, while there is some…
const PROGRESS_EVERY: Duration = Duration::from_millis(50);
/// …at most this much of each stream's latest output (it is for display:
/// what came before in the same moment is left out of it, never out of
/// the answer).
const PROGRESS_KEEP: usize = 8 * 1024;
/// Reads of the command's output waiting to be taken.
const READS_IN_FLIGHT: usize = 8;
/// The size of one read.
const READ_BYTES: usize = 64 * 1024;

/// Variables a shell command gets from the host besides the base ones.
const DEFAULT_ENV: &[&str] = &[
    "CARGO_HOME",
    "RUSTUP_HOME",
    "GOPATH",
    "GOCACHE",
    "npm_config_cache",
    "PIP_CACHE_DIR",
    "VIRTUAL_ENV",
    "JAVA_HOME",
];

fn schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "command": {"type": "string", "description": "The command, run by `bash -c`."},
            "timeout": {"type": "integer", "minimum": 1, "maximum": MAX_TIMEOUT_MS, "description": "Milliseconds before the command and everything it started are killed (default 120000, at most 600000)."},
            "description": {"type": "string", "description": "What the command does, in five to ten words, for the person watching."},
            "cwd": {"type": "string", "description": "The directory to run in (default: where the previous command of this session ended, else the project root)."}
        },
        "required": ["command"]
    })
}

fn definition() -> ProgramDef {
    ProgramDef {
        name: "shell",
        text: "Runs a bash command in the project and returns its output (stdout and stderr \
               together) and exit code. `cd` carries over to the next call. stdin is empty, so \
               interactive commands fail: pass flags such as `-y` or `--no-pager`. The command \
               is killed after `timeout` ms (default 2 minutes, at most 10), with everything it \
               started; background jobs do not outlive it. Output over 30000 characters keeps \
               its head and tail. A non-zero exit is an error result. No network unless \
               configured. Prefer read, edit, glob and grep over cat, sed, find and grep.",
        schema: schema(),
        capabilities: Capabilities {
            env: DEFAULT_ENV.iter().map(|s| (*s).to_owned()).collect(),
            ..Capabilities::project_writer()
        },
        // Longer than any command's own timeout: the program reports it.
        timeout_ms: MAX_TIMEOUT_MS + 60_000,
        concurrency_safe: false,
        read_only: false,
        tool: true,
    }
}

pub(crate) fn chunks() -> Vec<substrate::ChunkDecl> {
    definition().chunks()
}

#[derive(Deserialize)]
struct Input {
    command: String,
    timeout: Option<u64>,
    cwd: Option<String>,
}

pub(crate) fn main() -> ProgramFuture {
    Box::pin(serve("input/shell", async |program, input: Input| {
        let paths = Paths::from_env(program.root());
        match prepare(&paths, &input) {
            Err(why) => Output::error(why),
            Ok(run) => run.execute(program).await,
        }
    }))
}

/// A command ready to run.
struct Run {
    script: String,
    cwd: PathBuf,
    cwd_file: tempfile::TempPath,
    timeout: Duration,
}

fn prepare(paths: &Paths, input: &Input) -> Result<Run, String> {
    let timeout = input.timeout.unwrap_or(DEFAULT_TIMEOUT_MS);
    if timeout == 0 {
        return Err("timeout is in milliseconds and must be at least 1".into());
    }
    if timeout > MAX_TIMEOUT_MS {
        return Err(format!(
            "timeout {timeout} ms is above the maximum of {MAX_TIMEOUT_MS} ms (10 minutes); \
             ask for less, or run the work in smaller steps"
        ));
    }
    let cwd = paths.absolute(input.cwd.as_deref().unwrap_or("."));
    if !cwd.is_dir() {
        return Err(format!(
            "the working directory {} does not exist (or is not a directory); give an \
             existing `cwd`, or none to run in the project root",
            paths.show(&cwd)
        ));
    }
    let cwd_file = tempfile::Builder::new()
        .prefix("hc-shell-cwd-")
        .tempfile()
        .map_err(|e| format!("cannot make a temporary file: {e}"))?
        .into_temp_path();
    // Where the command ends: bash writes it at exit, unless the command
    // replaces the shell (`exec`) or sets its own exit trap.
    let script = format!(
        "trap 'builtin pwd > {}' EXIT; {}",
        quote(&cwd_file.to_string_lossy()),
        input.command
    );
    Ok(Run {
        script,
        cwd,
        cwd_file,
        timeout: Duration::from_millis(timeout),
    })
}

/// `text` as one single-quoted bash word.
fn quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

/// A chunk of output from one of the command's streams.
struct Chunk {
    stream: &'static str,
    bytes: Vec<u8>,
}

impl Run {
    async fn execute(self, program: &protocol::program::Program) -> Output {
        reap::become_subreaper();
        let started = Instant::now();
        let mut child = match tokio::process::Command::new("bash")
            .arg("-c")
            .arg(&self.script)
            .current_dir(&self.cwd)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            // In this program's process group, so an engine that ends the
            // program ends the command with it.
            .kill_on_drop(true)
            .spawn()
        {
            Ok(child) => child,
            Err(e) => return Output::error(format!("cannot start bash: {e}")),
        };
        // Bounded: a command printing faster than it is read waits on its
        // pipe, so memory is what is kept, not what is printed.
        let (tx, mut rx) = mpsc::channel(READS_IN_FLIGHT);
        let readers = [
            tokio::spawn(pipe(child.stdout.take(), "stdout", tx.clone())),
            tokio::spawn(pipe(child.stderr.take(), "stderr", tx)),
        ];
        let mut capture = Capture::default();
        let mut progress = Progress::default();
        let deadline = tokio::time::sleep(self.timeout);
        tokio::pin!(deadline);
        let mut ticker = tokio::time::interval(PROGRESS_EVERY);
        let status = loop {
            tokio::select! {
                Some(chunk) = rx.recv() => {
                    capture.push(&chunk.bytes);
                    progress.push(&chunk);
                }
                _ = ticker.tick() => {
                    // The engine is gone (its `hc` killed): nobody will read
                    // the answer, so the command ends now, not on its own.
                    if program.client().is_closed() {
                        break None;
                    }
                    progress.send(program);
                }
                status = child.wait() => break status.ok(),
                () = &mut deadline => break None,
            }
        };
        // Whatever it left running — in its group or not — ends with it.
        reap::kill_all();
        let _ = child.wait().await;
        let drained = tokio::time::timeout(Duration::from_secs(2), async {
            while let Some(chunk) = rx.recv().await {
                capture.push(&chunk.bytes);
                progress.push(&chunk);
            }
        });
        let _ = drained.await;
        for reader in readers {
            reader.abort();
        }
        progress.send(program);
        let ended_in = std::fs::read_to_string(&self.cwd_file)
            .ok()
            .map(|s| s.trim_end_matches('\n').to_owned())
            .filter(|s| !s.is_empty())
            .map_or(self.cwd.clone(), PathBuf::from);
        let outcome = Outcome {
            status,
            timeout: self.timeout,
            elapsed: started.elapsed(),
            cwd: ended_in,
        };
        outcome.answer(capture)
    }
}

/// Reads one of the command's pipes to its end.
async fn pipe(
    stream: Option<impl tokio::io::AsyncRead + Unpin>,
    name: &'static str,
    tx: mpsc::Sender<Chunk>,
) {
    let Some(mut stream) = stream else { return };
    let mut buf = vec![0u8; READ_BYTES];
    while let Ok(n) = stream.read(&mut buf).await {
        if n == 0
            || tx
                .send(Chunk {
                    stream: name,
                    bytes: buf[..n].to_vec(),
                })
                .await
                .is_err()
        {
            break;
        }
    }
}

/// Output waiting to be sent as progress, per stream: its latest
/// [`PROGRESS_KEEP`] bytes.
#[derive(Default)]
struct Progress {
    stdout: (Utf8Carry, String),
    stderr: (Utf8Carry, String),
}

impl Progress {
    fn push(&mut self, chunk: &Chunk) {
        let (carry, text) = match chunk.stream {
            "stdout" => &mut self.stdout,
            _ => &mut self.stderr,
        };
        text.push_str(&carry.text(&chunk.bytes));
        if text.len() > PROGRESS_KEEP {
            let mut cut = text.len() - PROGRESS_KEEP;
            while !text.is_char_boundary(cut) {
                cut += 1;
            }
            text.drain(..cut);
        }
    }

    /// Sends what is waiting (never stored: live display only).
    fn send(&mut self, program: &protocol::program::Program) {
        for (name, (_, text)) in [("stdout", &mut self.stdout), ("stderr", &mut self.stderr)] {
            if !text.is_empty() {
                let data = json!({"kind": "output", "stream": name, "text": std::mem::take(text)});
                program.progress(data);
            }
        }
    }
}

/// How the command ended.
struct Outcome {
    /// `None`: timed out.
    status: Option<std::process::ExitStatus>,
    timeout: Duration,
    elapsed: Duration,
    cwd: PathBuf,
}

impl Outcome {
    fn answer(self, capture: Capture) -> Output {
        use std::os::unix::process::ExitStatusExt;
        let (mut text, truncated) = capture.finish();
        if text.is_empty() {
            text.push_str("(no output)");
        }
        let code = self.status.and_then(|s| s.code());
        let signal = self.status.and_then(|s| s.signal());
        let note = match (self.status, code, signal) {
            (None, ..) => Some(format!(
                "[timed out after {} ms: the command and everything it started were killed]",
                self.timeout.as_millis()
            )),
            (Some(_), Some(0), _) => None,
            (Some(_), Some(code), _) => Some(format!("[exit code {code}]")),
            (Some(_), None, Some(signal)) => Some(format!("[killed by signal {signal}]")),
            (Some(_), None, None) => Some("[ended without an exit code]".to_owned()),
        };
        let is_error = note.is_some();
        if let Some(note) = note {
            text = format!("{}\n{note}", text.trim_end_matches('\n'));
        }
        if is_error && looks_offline(&text) && !has_network() {
            text.push_str(NO_NETWORK);
        }
        let data = json!({
            "exit_code": code,
            "cwd": cwd_string(&self.cwd),
            "duration_ms": self.elapsed.as_millis() as u64,
            "truncated": truncated,
            "timed_out": self.status.is_none(),
        });
        Output {
            text,
            data,
            is_error,
        }
    }
}

/// Said when a command failed as a download does without network, and
/// this run has none.
const NO_NETWORK: &str = "\n[no network: this shell runs without network access. To allow it, \
    set `network = true` under [programs.shell] in .hermitcrab/config.toml (applies once the \
    project is trusted: `hc trust`) or in ~/.config/hermitcrab/config.toml]";

/// Whether the output reads like a connection that could not be made.
fn looks_offline(text: &str) -> bool {
    const SIGNS: &[&str] = &[
        "resolve host",
        "name resolution",
        "name or service not known",
        "network is unreachable",
        "couldn't connect",
        "could not connect",
        "failed to connect",
        "failed to establish a new connection",
        "getaddrinfo",
        "eai_again",
        "enotfound",
        "no address associated",
        "dial tcp",
        "unable to access 'http",
        "socket: operation not permitted",
    ];
    let lower = text.to_lowercase();
    SIGNS.iter().any(|s| lower.contains(s))
}

/// Whether this process may open an internet socket (contained without
/// network, it may not: every socket but a Unix one is refused).
fn has_network() -> bool {
    std::net::UdpSocket::bind("0.0.0.0:0").is_ok()
}

fn cwd_string(path: &Path) -> String {
    path.to_string_lossy().into_owned()
}
