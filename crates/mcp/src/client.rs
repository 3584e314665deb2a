//! The MCP client side: the handler the server talks to (progress,
//! `list_changed`, elicitation — asked of the person when someone can
//! answer, else declined; sampling refused as a method not found) and connecting
//! over stdio (the server a child inside the service's containment, its
//! stderr the service's) or streamable HTTP.

use crate::config::{Server, Transport};
use rmcp::model::{
    ClientCapabilities, ClientConfig, ElicitRequestParams, ElicitResult, Implementation,
    ProgressNotificationParam,
};
use rmcp::service::{NotificationContext, RequestContext, RoleClient, RunningService};
use rmcp::transport::{
    StreamableHttpClientTransport, TokioChildProcess,
    streamable_http_client::StreamableHttpClientTransportConfig,
};
use rmcp::{ClientHandler, ErrorData, ServiceExt};
use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use tokio::sync::mpsc;

/// What the server said that the service acts on.
#[derive(Debug)]
pub(crate) enum Note {
    /// Progress of the call made for run `process`.
    Progress {
        process: String,
        param: ProgressNotificationParam,
    },
    /// Its tools changed: list them again.
    ToolsChanged,
    /// It asks the person something (a form request's JSON) during the
    /// call made for run `process`; the reply goes back on `reply`.
    Elicit {
        process: String,
        request: serde_json::Value,
        reply: tokio::sync::oneshot::Sender<serde_json::Value>,
    },
}

/// Which run each call's progress token belongs to.
pub(crate) type Tokens = Arc<Mutex<HashMap<String, String>>>;

/// The client's side of one connection.
pub(crate) struct Handler {
    notes: mpsc::UnboundedSender<Note>,
    pub tokens: Tokens,
    /// Set when the server says its tools changed, until they are listed.
    changed: Arc<AtomicBool>,
    /// Whether someone can answer the server's questions.
    interactive: bool,
}

impl Handler {
    pub(crate) fn new(
        notes: mpsc::UnboundedSender<Note>,
        tokens: Tokens,
        changed: Arc<AtomicBool>,
        interactive: bool,
    ) -> Handler {
        Handler {
            notes,
            tokens,
            changed,
            interactive,
        }
    }

    /// The run a server's request belongs to: the one call in flight (with
    /// several, it cannot be told, and nobody is asked).
    fn only_call(&self) -> Option<String> {
        let tokens = self.tokens.lock().unwrap_or_else(PoisonError::into_inner);
        let mut runs: Vec<&String> = tokens.values().collect();
        runs.sort();
        runs.dedup();
        match runs.as_slice() {
            [one] => Some((*one).clone()),
            _ => None,
        }
    }
}

/// A token's key in [`Tokens`].
pub(crate) fn token_key(token: &rmcp::model::ProgressToken) -> String {
    serde_json::to_string(token).unwrap_or_default()
}

impl ClientHandler for Handler {
    fn get_info(&self) -> ClientConfig {
        let capabilities: ClientCapabilities =
            serde_json::from_value(serde_json::json!({"elicitation": {"form": {}}}))
                .unwrap_or_default();
        let mut info = Implementation::new("hermitcrab", env!("CARGO_PKG_VERSION"));
        info.title = Some("hermitcrab".into());
        ClientConfig::new(capabilities, info)
    }

    async fn on_progress(
        &self,
        param: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let tokens = self.tokens.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(process) = tokens.get(&token_key(&param.progress_token)) {
            let process = process.clone();
            let _ = self.notes.send(Note::Progress { process, param });
        }
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        let declined = || serde_json::json!({"action": "decline"});
        let request = serde_json::to_value(&request).unwrap_or_default();
        let reply = match (self.interactive, self.only_call(), request["mode"].as_str()) {
            (true, Some(process), Some("form") | None) => {
                let (reply, answered) = tokio::sync::oneshot::channel();
                let note = Note::Elicit {
                    process,
                    request,
                    reply,
                };
                match self.notes.send(note) {
                    Ok(()) => answered.await.unwrap_or_else(|_| declined()),
                    Err(_) => declined(),
                }
            }
            _ => declined(),
        };
        serde_json::from_value(reply).map_err(|e| ErrorData::internal_error(e.to_string(), None))
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.changed.store(true, Ordering::SeqCst);
        let _ = self.notes.send(Note::ToolsChanged);
    }
}

/// A live connection.
pub(crate) type Connection = RunningService<RoleClient, Handler>;

/// Connects to `server` (initialize included).
pub(crate) async fn connect(
    server: &Server,
    handler: Handler,
    root: &Path,
) -> Result<Connection, String> {
    match &server.transport {
        Transport::Stdio {
            command,
            args,
            env,
            cwd,
        } => {
            let mut cmd = tokio::process::Command::new(command);
            cmd.args(args)
                .envs(env)
                .env_remove(crate::SERVER_ENV)
                .current_dir(cwd.as_deref().map_or(root.to_owned(), |c| root.join(c)));
            let (transport, _) = TokioChildProcess::builder(cmd)
                .stderr(std::process::Stdio::inherit())
                .spawn()
                .map_err(|e| format!("cannot start `{command}`: {e}"))?;
            handler
                .serve(transport)
                .await
                .map_err(|e| format!("`{command}` did not initialize: {}", plain(&e.to_string())))
        }
        Transport::Http { url, headers } => {
            let mut config = StreamableHttpClientTransportConfig::with_uri(url.as_str());
            for (name, value) in headers {
                let name = name
                    .parse()
                    .map_err(|e| format!("header `{name}` is not a header name: {e}"))?;
                let value = value
                    .parse()
                    .map_err(|e| format!("header `{name}` has a value that cannot be sent: {e}"))?;
                config.custom_headers.insert(name, value);
            }
            let transport = StreamableHttpClientTransport::from_config(config);
            handler.serve(transport).await.map_err(|e| {
                let said = plain(&e.to_string());
                let hint = if said.contains("401") || said.contains("403") {
                    " (it wants credentials: set `bearer_token_env_var` or a header)"
                } else {
                    ""
                };
                format!("{url} did not initialize: {said}{hint}")
            })
        }
    }
}

/// An SDK error as a person reads it: the transport's type names (`[rmcp::…]`)
/// left out.
fn plain(error: &str) -> String {
    let mut out = String::with_capacity(error.len());
    let mut rest = error;
    while let Some(start) = rest.find(" [rmcp::") {
        out.push_str(&rest[..start]);
        let mut depth = 0usize;
        let mut end = rest.len();
        for (i, c) in rest[start + 1..].char_indices() {
            match c {
                '[' => depth += 1,
                ']' => {
                    depth -= 1;
                    if depth == 0 {
                        end = start + 1 + i + 1;
                        break;
                    }
                }
                _ => {}
            }
        }
        rest = &rest[end..];
    }
    out.push_str(rest);
    out.replace("Send message error Transport error: ", "")
}

#[cfg(test)]
mod tests {
    #[test]
    fn sdk_errors_lose_their_type_names() {
        let said = "Send message error Transport [rmcp::transport::worker::WorkerTransport<a::B<c::D>>] error: HTTP 500, when send initialize request";
        assert_eq!(super::plain(said), "HTTP 500, when send initialize request");
    }
}
