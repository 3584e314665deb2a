//! A stdio server's stderr: passed on to the service's own (which the host
//! keeps as `.hermitcrab/logs/mcp-NAME.log`) as it comes, its last lines
//! kept so that a server that fails to start says why in its message —
//! and, when containment refused it something, which `capabilities` to
//! grant.

use std::collections::VecDeque;
use std::io::Write as _;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::ChildStderr;
use tokio::sync::watch;

/// Lines kept.
const KEPT: usize = 12;
/// The most of one line kept (the log has it whole).
const LINE_BYTES: usize = 400;

/// The last lines a server wrote on stderr.
#[derive(Clone)]
pub(crate) struct Tail {
    lines: Arc<Mutex<VecDeque<String>>>,
    /// True once its stderr is closed.
    ended: watch::Receiver<bool>,
}

impl Tail {
    /// Follows `stderr` until it closes.
    pub fn follow(stderr: ChildStderr) -> Tail {
        let lines = Arc::new(Mutex::new(VecDeque::new()));
        let (ended_tx, ended) = watch::channel(false);
        let kept = Arc::clone(&lines);
        tokio::spawn(async move {
            pass_on(stderr, &kept).await;
            let _ = ended_tx.send(true);
        });
        Tail { lines, ended }
    }

    /// The lines kept once stderr closed, or `within` passed.
    pub async fn settled(&self, within: Duration) -> Vec<String> {
        let mut ended = self.ended.clone();
        let _ = tokio::time::timeout(within, ended.wait_for(|e| *e)).await;
        let lines = self.lines.lock().unwrap_or_else(|e| e.into_inner());
        lines.iter().cloned().collect()
    }
}

/// Copies `stderr` to the service's, keeping its last lines in `kept`; a
/// line of any length costs at most [`LINE_BYTES`] here.
async fn pass_on(stderr: ChildStderr, kept: &Mutex<VecDeque<String>>) {
    let mut reader = BufReader::new(stderr);
    let mut line: Vec<u8> = Vec::new();
    loop {
        let chunk = match reader.fill_buf().await {
            Ok([]) | Err(_) => break,
            Ok(chunk) => chunk,
        };
        let _ = std::io::stderr().write_all(chunk);
        let mut used = 0;
        for &byte in chunk {
            used += 1;
            if byte == b'\n' {
                keep(kept, &line);
                line.clear();
            } else if line.len() < LINE_BYTES {
                line.push(byte);
            }
        }
        reader.consume(used);
    }
    if !line.is_empty() {
        keep(kept, &line);
    }
}

fn keep(kept: &Mutex<VecDeque<String>>, line: &[u8]) {
    let text = String::from_utf8_lossy(line).trim_end().to_owned();
    if text.is_empty() {
        return;
    }
    let mut kept = kept.lock().unwrap_or_else(|e| e.into_inner());
    if kept.len() == KEPT {
        kept.pop_front();
    }
    kept.push_back(text);
}

/// What a server that did not start last said, where its log is, and —
/// when what it said is containment refusing it something — what to
/// grant. One line (the engine shows a service's last line).
pub(crate) fn explain(server: &str, lines: &[String]) -> String {
    let log = format!(".hermitcrab/logs/mcp-{server}.log");
    if lines.is_empty() {
        return format!(" (it wrote nothing on stderr; its log is {log})");
    }
    let mut out = format!(
        "; the last it wrote (its log is {log}): {}",
        lines.join(" ⏎ ")
    );
    if let Some(hint) = refused(lines) {
        out.push_str(" — ");
        out.push_str(hint);
    }
    out
}

/// What containment refusing a server looks like, and what to grant.
fn refused(lines: &[String]) -> Option<&'static str> {
    let said = lines.join("\n").to_lowercase();
    let any = |signs: &[&str]| signs.iter().any(|s| said.contains(s));
    if any(&[
        "eacces",
        "eperm",
        "erofs",
        "permission denied",
        "operation not permitted",
        "read-only file system",
    ]) {
        return Some(
            "hermitcrab's containment refused it (a file it may not write, or a call it may \
             not make): grant what it needs in its entry, e.g. \"capabilities\": \
             {\"filesystem\": {\"read\": \"all\", \"write\": [\"/path/it/writes\"]}, \
             \"network\": true}",
        );
    }
    if any(&[
        "enotfound",
        "eai_again",
        "econnrefused",
        "enetunreach",
        "network is unreachable",
        "name resolution",
        "failed to connect",
        "could not connect",
    ]) {
        return Some(
            "it could not reach the network: if its entry sets \"capabilities\", add \
             \"network\": true; otherwise check this machine's connection (a package runner \
             such as npx downloads the server on first use)",
        );
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refusal_names_the_capabilities_to_grant() {
        let lines = vec!["npm error code EACCES".to_owned()];
        let said = explain("fs", &lines);
        assert!(said.contains(".hermitcrab/logs/mcp-fs.log"), "{said}");
        assert!(said.contains("npm error code EACCES"), "{said}");
        assert!(said.contains("\"capabilities\""), "{said}");
        let offline = explain(
            "fs",
            &["getaddrinfo EAI_AGAIN registry.npmjs.org".to_owned()],
        );
        assert!(offline.contains("\"network\": true"), "{offline}");
        let quiet = explain("fs", &[]);
        assert!(quiet.contains("wrote nothing"), "{quiet}");
        assert!(!explain("fs", &["boom".to_owned()]).contains("capabilities"));
    }
}
