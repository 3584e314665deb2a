//! `hook`: runs a configured hook command (`bash -c`) with the event as
//! JSON on its stdin, and answers with its exit code, stdout and stderr.
//! The agent runs it before and after tool calls, on a prompt and at the
//! end of a turn; what the exit code means is the agent's to decide, so
//! the answer is never an error result unless the command could not run.

use crate::shell::reap;
use protocol::Capabilities;
use protocol::program::{Output, ProgramDef, ProgramFuture, serve};
use serde::Deserialize;
use serde_json::{Value, json};
use std::process::Stdio;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// A hook's timeout when its configuration gives none.
const DEFAULT_TIMEOUT_MS: u64 = 60_000;
/// The longest a hook may be given.
const MAX_TIMEOUT_MS: u64 = 600_000;

fn schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "command": {"type": "string"},
            "event": {"type": "object"},
            "timeout_ms": {"type": "integer", "minimum": 1}
        },
        "required": ["command", "event"]
    })
}

fn definition() -> ProgramDef {
    ProgramDef {
        name: "hook",
        text: "Runs a configured hook command with an event on its stdin; the agent's, not a tool.",
        schema: schema(),
        capabilities: Capabilities::project_writer(),
        timeout_ms: MAX_TIMEOUT_MS + 30_000,
        concurrency_safe: false,
        read_only: false,
        tool: false,
    }
}

pub(crate) fn chunks() -> Vec<substrate::ChunkDecl> {
    definition().chunks()
}

#[derive(Deserialize)]
struct Input {
    command: String,
    event: Value,
    timeout_ms: Option<u64>,
}

pub(crate) fn main() -> ProgramFuture {
    Box::pin(serve("input/hook", async |program, input: Input| {
        run(program.root(), &input)
            .await
            .unwrap_or_else(Output::error)
    }))
}

async fn run(root: &std::path::Path, input: &Input) -> Result<Output, String> {
    let timeout = Duration::from_millis(
        input
            .timeout_ms
            .unwrap_or(DEFAULT_TIMEOUT_MS)
            .min(MAX_TIMEOUT_MS),
    );
    reap::become_subreaper();
    let mut child = tokio::process::Command::new("bash")
        .arg("-c")
        .arg(&input.command)
        .current_dir(root)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| format!("cannot start bash for the hook: {e}"))?;
    let event = input.event.to_string();
    let mut stdin = child.stdin.take();
    let feeding = async move {
        if let Some(stdin) = stdin.as_mut() {
            // A hook that does not read its stdin is fine.
            let _ = stdin.write_all(event.as_bytes()).await;
        }
    };
    let out = read_bounded(child.stdout.take());
    let err = read_bounded(child.stderr.take());
    let waited = tokio::time::timeout(timeout, async {
        let ((), stdout, stderr, status) = tokio::join!(feeding, out, err, child.wait());
        (stdout, stderr, status)
    })
    .await;
    reap::kill_all();
    let (stdout, stderr, code, timed_out) = match waited {
        Ok((stdout, stderr, status)) => (stdout, stderr, status.ok().and_then(|s| s.code()), false),
        Err(_) => (String::new(), String::new(), None, true),
    };
    let text = match (code, timed_out) {
        (_, true) => format!("the hook timed out after {} ms", timeout.as_millis()),
        (Some(c), _) => format!("the hook exited {c}"),
        (None, _) => "the hook was killed by a signal".to_owned(),
    };
    Ok(Output::ok(
        text,
        json!({"exit_code": code, "stdout": stdout, "stderr": stderr, "timed_out": timed_out}),
    ))
}

/// A stream's text as the shell program keeps a command's output: head
/// and tail (what a failing hook says last is what the model needs), in
/// bounded memory.
async fn read_bounded(stream: Option<impl tokio::io::AsyncRead + Unpin>) -> String {
    let Some(mut stream) = stream else {
        return String::new();
    };
    let mut kept = crate::shell::capture::Capture::default();
    let mut buf = vec![0u8; 8192];
    while let Ok(n) = stream.read(&mut buf).await {
        if n == 0 {
            break;
        }
        kept.push(&buf[..n]);
    }
    kept.finish().0
}
