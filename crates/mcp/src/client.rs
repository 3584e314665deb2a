//! The MCP client side: the handler the server talks to (progress,
//! `list_changed`; sampling refused as a method not found, elicitation
//! declined) and connecting
//! over stdio (the server a child inside the service's containment, its
//! stderr the service's) or streamable HTTP.

use crate::config::{Server, Transport};
use rmcp::model::{ClientCapabilities, ClientConfig, Implementation, ProgressNotificationParam};
use rmcp::service::{NotificationContext, RoleClient, RunningService};
use rmcp::transport::{
    StreamableHttpClientTransport, TokioChildProcess,
    streamable_http_client::StreamableHttpClientTransportConfig,
};
use rmcp::{ClientHandler, ServiceExt};
use std::collections::HashMap;
use std::path::Path;
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
}

/// Which run each call's progress token belongs to.
pub(crate) type Tokens = Arc<Mutex<HashMap<String, String>>>;

/// The client's side of one connection.
pub(crate) struct Handler {
    notes: mpsc::UnboundedSender<Note>,
    pub tokens: Tokens,
}

impl Handler {
    pub(crate) fn new(notes: mpsc::UnboundedSender<Note>, tokens: Tokens) -> Handler {
        Handler { notes, tokens }
    }
}

/// A token's key in [`Tokens`].
pub(crate) fn token_key(token: &rmcp::model::ProgressToken) -> String {
    serde_json::to_string(token).unwrap_or_default()
}

impl ClientHandler for Handler {
    fn get_info(&self) -> ClientConfig {
        let capabilities = ClientCapabilities::default();
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

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
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
                .map_err(|e| format!("`{command}` did not initialize: {e}"))
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
            handler
                .serve(transport)
                .await
                .map_err(|e| format!("{url} did not initialize: {e}"))
        }
    }
}
