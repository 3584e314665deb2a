//! `hc acp`: the Agent Client Protocol's agent side, so an editor (Zed, a
//! JetBrains IDE, a Neovim plugin) drives `hc` over stdin and stdout. One
//! process serves one project — the one the first `session/new` (or
//! `session/load`) names as its `cwd`, opened then, before any thread
//! runs — and any number of sessions on it, each an `hc` session (made
//! at its first prompt, so an editor's panel opened and left makes
//! nothing). Each `session/prompt` is a turn through the host core
//! (`hc_host::turn`), streamed back as `session/update`s (`sink.rs`); what
//! it asks goes to the editor as `session/request_permission`
//! (`answerer.rs`); `session/cancel` interrupts it. When stdin closes,
//! every running turn is interrupted, recorded, and `hc` exits.

mod answerer;
mod files;
mod history;
mod input;
mod link;
mod prompt;
mod session;
mod sink;
mod start;
mod tools;

use crate::exit::exit;
use crate::settings::Flags;
use anyhow::Result;
use hc_acp::rpc::{self, Incoming, RpcError};
use hc_acp::schema::InitializeRequest;
use link::fail;
use tokio::sync::mpsc::UnboundedReceiver;

/// The lines on stdin, read on a thread of their own (started before the
/// project is opened, it reads nothing of the environment).
fn stdin_lines() -> UnboundedReceiver<String> {
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let reader = std::thread::Builder::new()
        .name("acp-stdin".into())
        .spawn(move || {
            for line in std::io::stdin().lines() {
                let Ok(line) = line else { break };
                if !line.trim().is_empty() && tx.send(line).is_err() {
                    break;
                }
            }
        });
    if let Err(e) = reader {
        eprintln!("hc: cannot read stdin: {e}");
    }
    rx
}

/// Serves the editor until it closes stdin; answers the exit code (0, or
/// 1 when the project could not be opened).
pub fn serve(flags: Flags) -> Result<u8> {
    // (typed at a terminal, it would wait in silence for an editor's lines)
    if std::io::IsTerminal::is_terminal(&std::io::stdin()) {
        eprintln!(
            "hc acp: speaking the Agent Client Protocol (JSON-RPC, a message a line) on stdin \
             and stdout, for an editor to start — Zed, JetBrains, Neovim (see the editors \
             guide); Ctrl-D ends it"
        );
    }
    let mut lines = stdin_lines();
    let mut client = InitializeRequest::default();
    // Before a project: initialize, authenticate, and what needs a session
    // refused, until one names its project.
    let (opened, first) = loop {
        let Some(line) = lines.blocking_recv() else {
            return Ok(0);
        };
        let (id, method, params) = match Incoming::parse(&line) {
            Incoming::Request { id, method, params } => (id, method, params),
            Incoming::Invalid { id, error } => {
                fail(&id, &error);
                continue;
            }
            // (a notification needs a session; an answer, a request of ours)
            Incoming::Notification { .. } | Incoming::Response { .. } => continue,
        };
        if let Some(answered) = start::stateless(&method, &params, &mut client) {
            session::answer(&id, answered);
            continue;
        }
        match method.as_str() {
            "session/new" | "session/load" => match start::open(&params, &flags, &client) {
                Ok(opened) => break (opened, (id, method, params)),
                Err(error) => fail(&id, &error),
            },
            method if session::METHODS.contains(&method) => fail(
                &id,
                &RpcError::new(
                    rpc::RESOURCE_NOT_FOUND,
                    "no session yet: make one with session/new",
                ),
            ),
            method => fail(&id, &not_found(method)),
        }
    };
    crate::runtime()?.block_on(async move {
        let link = std::sync::Arc::new(link::Link::default());
        let (host, config, servers, bridge) = match opened.start(&link).await {
            Ok(started) => started,
            Err(e) => {
                let (id, _, _) = &first;
                fail(id, &RpcError::new(rpc::INTERNAL_ERROR, format!("{e:#}")));
                return Err(exit(1, format!("{e:#}")));
            }
        };
        let mut driver = session::Driver::new(host.engine.clone(), link, config, servers);
        driver.run(first, &mut lines, &mut client).await;
        host.close().await;
        if let Some(bridge) = bridge {
            bridge.abort();
        }
        Ok(0)
    })
}

/// The error for method `method`, which `hc` does not serve.
fn not_found(method: &str) -> RpcError {
    RpcError::new(
        rpc::METHOD_NOT_FOUND,
        format!("hc does not serve `{method}` (ACP v1's agent methods are served)"),
    )
}
