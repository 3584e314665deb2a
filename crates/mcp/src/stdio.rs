//! The stdio transport: the server a child of the service (so inside its
//! containment, its stderr passed on to the service's, which the host
//! logs, its last lines kept: `stderr.rs`), killed
//! when the connection is dropped, its stdout read through a
//! [`LineGuard`] — so every answer reaches the SDK, cut to size, and the
//! SDK's own line limit (which drops a line, leaving the call to wait for
//! its timeout) is never met — and read here, a line at a time, rather
//! than by the SDK: an answer the SDK cannot read (an error whose
//! `message` is not a string, say), which it would drop, leaving the call
//! to wait for its limit, is passed on as an error answering the same
//! request, saying what is wrong with it; the server's log messages
//! (`notifications/message`, which nothing here shows) are left out at
//! once, however many; other lines that are not MCP are left out, the
//! first few logged.

use crate::guard::{LineGuard, MALFORMED};
use rmcp::RoleClient;
use rmcp::model::{ErrorData, JsonRpcError, JsonRpcMessage, RequestId, ServerNotification};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use rmcp::transport::async_rw::AsyncRwTransport;
use serde_json::{Value, json};
use std::process::Stdio;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, BufReader, Empty};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

/// How long a server has to end once its stdin is closed, before it is
/// killed.
const GRACE: Duration = Duration::from_secs(3);

/// How many lines left out are logged (the rest are only counted).
const LOGGED: u64 = 3;

/// The capacity a line's buffer keeps between lines.
const LINE_KEEP: usize = 64 * 1024;

/// A server running as a child, and the transport to it.
pub(crate) struct ChildServer {
    child: Child,
    /// Writes to the server (what it says is read by `lines`).
    transport: AsyncRwTransport<RoleClient, Empty, ChildStdin>,
    lines: BufReader<LineGuard<ChildStdout>>,
    /// The line being read: kept whole across a read the SDK abandons.
    line: Vec<u8>,
    /// Lines left out so far.
    left_out: u64,
    /// The last lines of its stderr.
    tail: crate::stderr::Tail,
}

/// Starts `command` (its arguments, environment and directory set) as a
/// server.
pub(crate) fn spawn(mut command: Command) -> std::io::Result<ChildServer> {
    command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let mut child = command.spawn()?;
    let (Some(stdin), Some(stdout), Some(stderr)) =
        (child.stdin.take(), child.stdout.take(), child.stderr.take())
    else {
        return Err(std::io::Error::other(
            "the server's stdin, stdout and stderr were not piped",
        ));
    };
    Ok(ChildServer {
        child,
        transport: AsyncRwTransport::new_client(tokio::io::empty(), stdin),
        // the guard keeps every line within its own limit, cutting rather
        // than dropping
        lines: BufReader::new(LineGuard::new(stdout)),
        line: Vec::new(),
        left_out: 0,
        tail: crate::stderr::Tail::follow(stderr),
    })
}

impl ChildServer {
    /// The last lines of its stderr (kept after the server is gone).
    pub fn tail(&self) -> crate::stderr::Tail {
        self.tail.clone()
    }
}

/// What one line of the server's is.
#[derive(Debug)]
pub(crate) enum Read {
    /// A message for the SDK.
    Message(Box<RxJsonRpcMessage<RoleClient>>),
    /// Nothing to pass on or to say (an empty line, a log message).
    Quiet,
    /// Not MCP: left out, for this reason.
    LeftOut(String),
}

/// Reads one line of the server's (see the module's doc).
pub(crate) fn read(line: &[u8]) -> Read {
    let line = line
        .strip_prefix(b"\xEF\xBB\xBF")
        .unwrap_or(line)
        .trim_ascii();
    if line.is_empty() {
        return Read::Quiet;
    }
    let error = match serde_json::from_slice::<RxJsonRpcMessage<RoleClient>>(line) {
        Ok(JsonRpcMessage::Notification(n))
            if matches!(
                n.notification,
                ServerNotification::LoggingMessageNotification(_)
            ) =>
        {
            return Read::Quiet;
        }
        Ok(message) => return Read::Message(Box::new(message)),
        Err(e) => e,
    };
    let Ok(value) = serde_json::from_slice::<Value>(line) else {
        return Read::LeftOut("a line that is not JSON".into());
    };
    if let Some(method) = value.get("method") {
        return Read::LeftOut(format!(
            "a {} {method} that is not as MCP has it",
            match value.get("id") {
                Some(_) => "request",
                None => "notification",
            }
        ));
    }
    if value.get("result").is_none() && value.get("error").is_none() {
        return Read::LeftOut("a message that is no request, notification or answer".into());
    }
    let id = value
        .get("id")
        .and_then(|id| serde_json::from_value::<RequestId>(id.clone()).ok());
    let Some(id) = id else {
        return Read::LeftOut(format!(
            "an answer with no id it could be for (its id is {})",
            value.get("id").unwrap_or(&Value::Null)
        ));
    };
    let said = format!("what is not valid JSON-RPC ({})", flaw(&value, &error));
    let data = Some(json!({"hermitcrab": MALFORMED}));
    let answer = JsonRpcError::new(Some(id), ErrorData::internal_error(said, data));
    Read::Message(Box::new(JsonRpcMessage::Error(answer)))
}

/// What is wrong with `answer`, which did not read (`error`).
fn flaw(answer: &Value, error: &serde_json::Error) -> String {
    if answer.get("jsonrpc") != Some(&json!("2.0")) {
        return "its `jsonrpc` is not \"2.0\"".into();
    }
    if let Some(e) = answer.get("error") {
        let code = e.get("code").and_then(Value::as_i64);
        if !e.is_object() {
            return "its `error` is not an object".into();
        } else if code.is_none_or(|c| i32::try_from(c).is_err()) {
            return "its error's `code` is not an integer".into();
        } else if !e.get("message").is_some_and(Value::is_string) {
            return "its error's `message` is not a string".into();
        }
    }
    error.to_string().chars().take(200).collect()
}

impl Transport<RoleClient> for ChildServer {
    type Error = std::io::Error;

    fn name() -> std::borrow::Cow<'static, str> {
        "stdio".into()
    }

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.transport.send(item)
    }

    /// The server's next message. Abandoned (the SDK reads in a
    /// `select!`), a line read in part stays in `line` for the next call.
    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleClient>> {
        loop {
            match self.lines.read_until(b'\n', &mut self.line).await {
                Ok(0) if self.line.is_empty() => return None,
                Ok(_) => {}
                Err(e) => {
                    eprintln!("hermitcrab: cannot read what the server says: {e}");
                    return None;
                }
            }
            let read = read(&self.line);
            self.line.clear();
            self.line.shrink_to(LINE_KEEP);
            match read {
                Read::Message(message) => return Some(*message),
                Read::Quiet => {}
                Read::LeftOut(why) => {
                    self.left_out += 1;
                    if self.left_out <= LOGGED {
                        let why: String = why.chars().take(300).collect();
                        eprintln!("hermitcrab: the server sent {why}; it was left out");
                    }
                    if self.left_out == LOGGED {
                        eprintln!("hermitcrab: further lines left out are not logged");
                    }
                }
            }
        }
    }

    /// Closes the server's stdin and gives it [`GRACE`] to end, then kills
    /// it.
    async fn close(&mut self) -> Result<(), Self::Error> {
        self.transport.close().await?;
        if tokio::time::timeout(GRACE, self.child.wait())
            .await
            .is_err()
        {
            self.child.kill().await?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The error a line reads as.
    fn error_of(line: &str) -> ErrorData {
        match read(line.as_bytes()) {
            Read::Message(m) => match *m {
                JsonRpcMessage::Error(e) => e.error,
                other => panic!("{line}: not an error: {other:?}"),
            },
            other => panic!("{line}: {other:?}"),
        }
    }

    #[test]
    fn an_answer_the_sdk_cannot_read_is_an_error_answering_the_same_request() {
        for (line, flaw) in [
            (
                r#"{"jsonrpc":"2.0","id":7,"error":{"code":-1,"message":42}}"#,
                "its error's `message` is not a string",
            ),
            (
                r#"{"jsonrpc":"2.0","id":7,"error":{"code":"bad","message":"x"}}"#,
                "its error's `code` is not an integer",
            ),
            (
                r#"{"jsonrpc":"2.0","id":7,"error":{"code":-1}}"#,
                "its error's `message` is not a string",
            ),
            (
                r#"{"jsonrpc":"2.0","id":7,"error":"no"}"#,
                "its `error` is not an object",
            ),
            (
                r#"{"id":7,"result":{"content":[]}}"#,
                "its `jsonrpc` is not \"2.0\"",
            ),
        ] {
            let error = error_of(line);
            assert_eq!(
                error.message,
                format!("what is not valid JSON-RPC ({flaw})"),
                "{line}"
            );
            assert_eq!(error.data.unwrap()["hermitcrab"], MALFORMED);
        }
        // an answer to no id that could be ours, and what is not JSON, are
        // left out; a log message, quietly
        for line in [
            r#"{"jsonrpc":"2.0","id":null,"error":{"code":-1,"message":3}}"#,
            r#"{"jsonrpc":"2.0","id":1.5,"error":{"code":-1,"message":3}}"#,
            "this is not JSON-RPC",
        ] {
            assert!(matches!(read(line.as_bytes()), Read::LeftOut(_)), "{line}");
        }
        let log = r#"{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"x"}}"#;
        assert!(matches!(read(log.as_bytes()), Read::Quiet));
        assert!(matches!(read(b"  \r"), Read::Quiet));
        let fine = r#"{"jsonrpc":"2.0","id":"a","result":"not an object"}"#;
        assert!(
            matches!(read(fine.as_bytes()), Read::Message(_)),
            "the SDK reads it"
        );
    }

    #[tokio::test]
    async fn a_line_split_across_reads_and_an_unfinished_last_line_are_read() {
        let mut server = Command::new("sh");
        server.args([
            "-c",
            r#"printf '{"jsonrpc":"2.0",'; sleep 0.2; printf '"id":1,"result":{}}\n{"jsonrpc":"2.0","id":2,"result":{}}'"#,
        ]);
        let mut server = spawn(server).unwrap();
        for id in [1, 2] {
            let Some(JsonRpcMessage::Response(r)) = server.receive().await else {
                panic!("no answer {id}");
            };
            assert_eq!(r.id, RequestId::Number(id));
        }
        assert!(server.receive().await.is_none(), "then the end");
    }

    #[tokio::test]
    async fn a_server_that_ends_on_eof_is_waited_for_and_one_that_does_not_is_killed() {
        let started = std::time::Instant::now();
        let mut cat = spawn(Command::new("cat")).unwrap();
        cat.close().await.unwrap();
        assert!(started.elapsed() < GRACE, "cat ends when its stdin closes");
        let mut deaf = Command::new("sh");
        deaf.args(["-c", "exec sleep 30 < /dev/null"]);
        let mut deaf = spawn(deaf).unwrap();
        deaf.close().await.unwrap();
        assert!(deaf.child.try_wait().unwrap().is_some(), "killed");
    }
}
