//! The MCP client side: the handler the server talks to (progress,
//! `list_changed`, elicitation — asked of the person when someone can
//! answer, else declined; sampling refused as a method not found) and connecting
//! over stdio (the server a child inside the service's containment, its
//! stderr the service's, its answers read through [`crate::guard`]: see
//! [`crate::stdio`]) or streamable HTTP (an answer over
//! [`MESSAGE_BYTES`] refused).

use crate::config::{Server, Transport};
use crate::guard::MESSAGE_BYTES;
use rmcp::model::{
    ClientCapabilities, ClientConfig, ElicitRequestParams, ElicitResult, Implementation,
    ProgressNotificationParam,
};
use rmcp::service::{NotificationContext, RequestContext, RoleClient, RunningService};
use rmcp::transport::auth::{AuthClient, AuthError, AuthorizationManager};
use rmcp::transport::{
    StreamableHttpClientTransport, streamable_http_client::StreamableHttpClientTransportConfig,
};
use rmcp::{ClientHandler, ErrorData, ServiceExt};
use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use tokio::sync::mpsc;

/// How many notes may wait for the service: the server's questions (each
/// waits for its turn), and one word that its tools changed.
pub(crate) const NOTES: usize = 16;

/// What the server said that the service acts on (its progress aside:
/// [`Progress`]).
#[derive(Debug)]
pub(crate) enum Note {
    /// Its tools changed: list them again (said once until they are
    /// listed, however often the server says it).
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

/// The newest progress of each call not passed on yet. Progress is for
/// display, so a notice not passed on yet is replaced by a newer one: what
/// waits is bounded by the calls in flight, however fast the server
/// speaks.
#[derive(Default)]
pub(crate) struct Progress {
    newest: Mutex<HashMap<String, ProgressNotificationParam>>,
    /// Woken when there is progress to pass on.
    pub wake: tokio::sync::Notify,
}

impl Progress {
    /// Keeps `param` as run `process`'s newest progress.
    pub(crate) fn put(&self, process: String, param: ProgressNotificationParam) {
        self.newest
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(process, param);
        self.wake.notify_one();
    }

    /// The progress waiting, taken.
    pub(crate) fn take(&self) -> Vec<(String, ProgressNotificationParam)> {
        let mut newest = self.newest.lock().unwrap_or_else(PoisonError::into_inner);
        newest.drain().collect()
    }
}

/// The client's side of one connection.
pub(crate) struct Handler {
    notes: mpsc::Sender<Note>,
    progress: Arc<Progress>,
    pub tokens: Tokens,
    /// Set when the server says its tools changed, until they are listed.
    changed: Arc<AtomicBool>,
    /// Whether someone can answer the server's questions.
    interactive: bool,
}

impl Handler {
    pub(crate) fn new(
        notes: mpsc::Sender<Note>,
        progress: Arc<Progress>,
        tokens: Tokens,
        changed: Arc<AtomicBool>,
        interactive: bool,
    ) -> Handler {
        Handler {
            notes,
            progress,
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
        let process = {
            let tokens = self.tokens.lock().unwrap_or_else(PoisonError::into_inner);
            tokens.get(&token_key(&param.progress_token)).cloned()
        };
        if let Some(process) = process {
            self.progress.put(process, param);
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
                match self.notes.send(note).await {
                    Ok(()) => answered.await.unwrap_or_else(|_| declined()),
                    Err(_) => declined(),
                }
            }
            _ => declined(),
        };
        serde_json::from_value(reply).map_err(|e| ErrorData::internal_error(e.to_string(), None))
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        // said once until they are listed: a flood of these is one listing
        // (and should the notes be full, the next call's end lists them)
        if !self.changed.swap(true, Ordering::SeqCst) {
            let _ = self.notes.try_send(Note::ToolsChanged);
        }
    }
}

/// How long a server that did not start is given to finish saying why.
const STDERR_SETTLE: std::time::Duration = std::time::Duration::from_millis(500);

/// A live connection.
pub(crate) type Connection = RunningService<RoleClient, Handler>;

/// Connects to `server` (initialize included).
pub(crate) async fn connect(
    server: &Server,
    handler: Handler,
    root: &Path,
) -> Result<Connection, Refused> {
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
            let transport =
                crate::stdio::spawn(cmd).map_err(|e| format!("cannot start `{command}`: {e}"))?;
            let tail = transport.tail();
            match handler.serve(transport).await {
                Ok(connection) => Ok(connection),
                Err(e) => {
                    // what it said before it went is in flight still
                    let said = tail.settled(STDERR_SETTLE).await;
                    Err(format!(
                        "`{command}` did not initialize: {}{}",
                        plain(&e.to_string()),
                        crate::stderr::explain(&server.name, &said)
                    )
                    .into())
                }
            }
        }
        Transport::Http { url, headers } => {
            // An answer over the limit is refused at once (not cut: the
            // SDK reads it whole), and the call says why.
            let mut config = StreamableHttpClientTransportConfig::with_uri(url.as_str())
                .max_json_response_size(MESSAGE_BYTES)
                .max_sse_event_size(MESSAGE_BYTES);
            for (name, value) in headers {
                let name = name
                    .parse()
                    .map_err(|e| format!("header `{name}` is not a header name: {e}"))?;
                let value = value
                    .parse()
                    .map_err(|e| format!("header `{name}` has a value that cannot be sent: {e}"))?;
                config.custom_headers.insert(name, value);
            }
            let store = server
                .oauth_store
                .as_ref()
                .map(|p| crate::oauth::FileStore::new(p.clone()));
            let served = match store.filter(crate::oauth::FileStore::has_tokens) {
                Some(store) => {
                    let client = signed_in(url, store).await.map_err(|e| match e {
                        // only a sign-in that is over asks for another: the
                        // authorization server away, or the file unreadable,
                        // is a failure that says why
                        AuthError::AuthorizationRequired | AuthError::TokenRefreshRejected(_) => {
                            Refused::needs_auth(&server.name, format!("{url}: {e}"))
                        }
                        other => Refused::from(format!(
                            "{url}: the sign-in kept for it could not be used: {other}"
                        )),
                    })?;
                    let transport = StreamableHttpClientTransport::with_client(client, config);
                    handler.serve(transport).await
                }
                None => {
                    let transport = StreamableHttpClientTransport::from_config(config);
                    handler.serve(transport).await
                }
            };
            served.map_err(|e| {
                let said = plain(&e.to_string());
                let wants = e.auth_challenge().is_some()
                    || e.is_authorization_required()
                    || said.contains("HTTP 401")
                    || said.contains("HTTP 403");
                match (wants, server.oauth_store.is_some()) {
                    (true, true) => Refused::needs_auth(&server.name, format!("{url} answered {said}")),
                    (true, false) => Refused::from(format!(
                        "{url} did not initialize: {said} (the credentials it was given were refused: check the `Authorization` header or `bearer_token_env_var`)"
                    )),
                    (false, _) => Refused::from(format!("{url} did not initialize: {said}")),
                }
            })
        }
    }
}

/// Why a server could not be connected to.
#[derive(Debug)]
pub(crate) struct Refused {
    /// What went wrong, as a person reads it.
    pub why: String,
    /// It wants the person to sign in (`hc mcp login NAME`).
    pub needs_auth: bool,
}

impl Refused {
    fn needs_auth(name: &str, why: String) -> Refused {
        Refused {
            why: format!("{why}: it needs you to sign in: run `hc mcp login {name}`"),
            needs_auth: true,
        }
    }
}

impl From<String> for Refused {
    fn from(why: String) -> Refused {
        Refused {
            why,
            needs_auth: false,
        }
    }
}

/// A client that sends the tokens kept in `store` for the server at
/// `url`, refreshing them (and keeping the new ones) as they near their
/// end or are refused.
async fn signed_in(
    url: &str,
    store: crate::oauth::FileStore,
) -> Result<AuthClient<reqwest::Client>, AuthError> {
    let mut manager = AuthorizationManager::new(url).await?;
    manager.set_credential_store(store);
    if !manager.initialize_from_store().await? {
        return Err(AuthError::AuthorizationRequired);
    }
    let http = reqwest::Client::builder()
        .build()
        .map_err(|e| AuthError::InternalError(e.to_string()))?;
    Ok(AuthClient::new(http, manager))
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
    out.replace(" [stdio]", "")
        .replace("Send message error Transport error: ", "")
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_flood_of_progress_keeps_only_the_newest_of_each_call() {
        let progress = super::Progress::default();
        for n in 0..100_000u32 {
            let param = rmcp::model::ProgressNotificationParam::new(
                rmcp::model::ProgressToken(rmcp::model::NumberOrString::Number(1)),
                f64::from(n),
            );
            progress.put(format!("p{}", n % 2), param);
        }
        let mut waiting = progress.take();
        waiting.sort_by(|a, b| a.0.cmp(&b.0));
        let newest: Vec<(&str, f64)> = waiting
            .iter()
            .map(|(p, param)| (p.as_str(), param.progress))
            .collect();
        assert_eq!(newest, [("p0", 99_998.0), ("p1", 99_999.0)]);
        assert!(progress.take().is_empty(), "taken");
    }

    #[test]
    fn sdk_errors_lose_their_type_names() {
        let said = "Send message error Transport [rmcp::transport::worker::WorkerTransport<a::B<c::D>>] error: HTTP 500, when send initialize request";
        assert_eq!(super::plain(said), "HTTP 500, when send initialize request");
    }
}
