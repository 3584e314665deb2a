//! Signing in to an HTTP MCP server (the MCP spec's OAuth 2.1, as Claude
//! Code does it): the authorization server found from the server's
//! protected-resource metadata, the client registered dynamically (or one
//! the person configured), the code obtained in the browser with PKCE
//! (S256) and the `resource` the server is, through a loopback redirect
//! `http://localhost:PORT/callback`. The protocol is the SDK's (`rmcp`'s
//! `auth`); what is here is where the tokens live and how a person is led
//! through it.
//!
//! Tokens are the person's, never the substrate's: one file per server
//! under hermitcrab's configuration directory (`mcp-auth/NAME-HASH.json`,
//! the hash of the server's URL, so a server renamed or moved is signed in
//! again), 0600 in a 0700 directory, locked while a token is refreshed (so
//! processes sharing it do not spend one refresh token twice). A service
//! may rewrite its own file and nothing else of the directory (what a
//! contained program may read is its capabilities' business: by default
//! everything, this directory among it).

use async_trait::async_trait;
use rmcp::transport::auth::{
    AuthError, AuthorizationManager, AuthorizationRequest, AuthorizationSession,
    CredentialRefreshGuard, CredentialStore, StoredCredentials,
};
use sha2::{Digest, Sha256};
use std::io::Write as _;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The name hermitcrab registers itself under.
pub const CLIENT_NAME: &str = "hermitcrab";

/// How long a sign-in waits for the browser to come back.
pub const LOGIN_WAIT: Duration = Duration::from_secs(300);

/// Where the tokens of server `name` at `url` are kept, under `dir`
/// (hermitcrab's configuration directory).
pub fn store_path(dir: &Path, name: &str, url: &str) -> PathBuf {
    let hash = Sha256::digest(url.as_bytes());
    let hex: String = hash.iter().take(8).map(|b| format!("{b:02x}")).collect();
    dir.join("mcp-auth").join(format!("{name}-{hex}.json"))
}

/// One server's tokens in one file. An empty file is no tokens (so a
/// service whose containment lets it write the file, and not remove it,
/// can clear it).
#[derive(Clone, Debug)]
pub struct FileStore {
    path: PathBuf,
}

impl FileStore {
    /// The store at `path`.
    pub fn new(path: PathBuf) -> FileStore {
        FileStore { path }
    }

    /// Whether tokens are kept there.
    pub fn has_tokens(&self) -> bool {
        std::fs::metadata(&self.path).is_ok_and(|m| m.len() > 0)
    }

    /// The tokens kept, if any.
    pub fn read(&self) -> Result<Option<StoredCredentials>, String> {
        let text = match std::fs::read_to_string(&self.path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(format!("cannot read {}: {e}", self.path.display())),
        };
        if text.trim().is_empty() {
            return Ok(None);
        }
        serde_json::from_str(&text).map(Some).map_err(|e| {
            format!(
                "{} is not a sign-in hermitcrab wrote ({e}): sign in again",
                self.path.display()
            )
        })
    }

    /// Writes `text` over the file (made 0600, its directory 0700).
    fn write(&self, text: &[u8]) -> Result<(), String> {
        let cannot = |e: std::io::Error| format!("cannot write {}: {e}", self.path.display());
        if let Some(dir) = self.path.parent() {
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(dir)
                .map_err(cannot)?;
        }
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&self.path)
            .map_err(cannot)?;
        // (made before by someone else: made the person's alone now)
        file.set_permissions(std::fs::Permissions::from_mode(0o600))
            .map_err(cannot)?;
        file.write_all(text).map_err(cannot)?;
        file.sync_all().map_err(cannot)
    }

    /// Forgets the tokens: the file emptied, not removed (a service's
    /// containment grants it this file, as it is, to rewrite).
    pub fn forget(&self) -> Result<(), String> {
        match self.path.exists() {
            true => self.write(b""),
            false => Ok(()),
        }
    }

    /// Makes the file (empty: no tokens) if there is none, so a service
    /// started before a sign-in may keep the tokens it refreshes.
    pub fn ensure(&self) -> Result<(), String> {
        match self.path.exists() {
            true => Ok(()),
            false => self.write(b""),
        }
    }

    /// The tokens kept, as secrets to keep out of what a service says.
    pub fn secrets(&self) -> Vec<String> {
        use oauth2::TokenResponse as _;
        let Ok(Some(kept)) = self.read() else {
            return Vec::new();
        };
        let Some(tokens) = kept.token_response else {
            return Vec::new();
        };
        let mut out = vec![tokens.access_token().secret().clone()];
        out.extend(tokens.refresh_token().map(|r| r.secret().clone()));
        out
    }
}

fn store_error(why: String) -> AuthError {
    AuthError::CredentialStoreError(why)
}

#[async_trait]
impl CredentialStore for FileStore {
    async fn load(&self) -> Result<Option<StoredCredentials>, AuthError> {
        self.read().map_err(store_error)
    }

    async fn save(&self, credentials: StoredCredentials) -> Result<(), AuthError> {
        let text = serde_json::to_vec_pretty(&credentials)
            .map_err(|e| store_error(format!("cannot encode the tokens: {e}")))?;
        self.write(&text).map_err(store_error)
    }

    async fn clear(&self) -> Result<(), AuthError> {
        self.write(b"").map_err(store_error)
    }

    async fn acquire_refresh_guard(&self) -> Result<Option<CredentialRefreshGuard>, AuthError> {
        let path = self.path.clone();
        let locked = tokio::task::spawn_blocking(move || {
            let file = std::fs::File::open(&path)?;
            file.lock()?;
            Ok::<_, std::io::Error>(file)
        })
        .await
        .map_err(|e| store_error(format!("the refresh lock was lost: {e}")))?;
        // no file, no tokens to refresh: nothing to hold
        Ok(locked.ok().map(CredentialRefreshGuard::new))
    }
}

/// What a sign-in is given.
#[derive(Clone, Debug, Default)]
pub struct Login {
    /// The server's name (as configured).
    pub name: String,
    /// Its URL.
    pub url: String,
    /// Where its tokens go ([`store_path`]).
    pub store: PathBuf,
    /// A client registered beforehand (else one is registered now).
    pub client_id: Option<String>,
    /// That client's secret, if it has one.
    pub client_secret: Option<String>,
    /// The scopes to ask for (else those the server names).
    pub scopes: Vec<String>,
    /// The loopback port the browser comes back to (else any free one).
    pub callback_port: Option<u16>,
}

/// A sign-in under way: the address the person opens, and the wait for
/// the browser to come back.
pub struct Pending {
    session: AuthorizationSession,
    listener: tokio::net::TcpListener,
    /// The address to open in a browser.
    pub url: String,
}

/// Starts signing in to `login`'s server: discovery, registration, the
/// address to open. Nothing is kept until [`Pending::finish`].
pub async fn start(login: &Login) -> Result<Pending, String> {
    crypto();
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", login.callback_port.unwrap_or(0)))
        .await
        .map_err(|e| match login.callback_port {
            Some(port) => format!(
                "cannot listen on 127.0.0.1:{port} for the browser to come back ({e}): free \
                 the port, or choose another with --callback-port"
            ),
            None => format!("cannot listen on 127.0.0.1 for the browser to come back: {e}"),
        })?;
    let port = listener
        .local_addr()
        .map_err(|e| format!("cannot read the loopback port: {e}"))?
        .port();
    let redirect = format!("http://localhost:{port}/callback");
    let said = |e: AuthError| said(&login.name, &login.url, &e);
    let mut manager = AuthorizationManager::new(login.url.as_str())
        .await
        .map_err(said)?;
    manager.set_credential_store(FileStore::new(login.store.clone()));
    let found = manager.resolve_metadata().await.map_err(said)?;
    manager.set_metadata(found.metadata);
    let mut request = AuthorizationRequest::new(&redirect).with_client_name(CLIENT_NAME);
    if let Some(id) = &login.client_id {
        request = request.with_preregistered_client(id);
        if let Some(secret) = &login.client_secret {
            request = request.with_client_secret(secret);
        }
    }
    if !login.scopes.is_empty() {
        request = request.with_scopes(login.scopes.iter().map(String::as_str));
    }
    let session = AuthorizationSession::new(manager, request)
        .await
        .map_err(|(_, e)| said(e))?;
    let url = session.get_authorization_url().to_owned();
    Ok(Pending {
        session,
        listener,
        url,
    })
}

impl Pending {
    /// Waits (at most [`LOGIN_WAIT`]) for the browser to come back to the
    /// loopback address — or for `pasted`, the address it came back to,
    /// given by hand — then trades the code for tokens and keeps them.
    pub async fn finish(
        self,
        pasted: impl std::future::Future<Output = Option<String>>,
    ) -> Result<(), String> {
        let Pending {
            session, listener, ..
        } = self;
        let came_back = async {
            tokio::select! {
                back = callback(&listener) => back,
                Some(url) = pasted => Ok(url),
            }
        };
        let back = tokio::time::timeout(LOGIN_WAIT, came_back)
            .await
            .map_err(|_| {
                format!(
                    "the browser did not come back within {} s: run the sign-in again",
                    LOGIN_WAIT.as_secs()
                )
            })??;
        session
            .handle_callback_url(&back)
            .await
            .map(drop)
            .map_err(|e| format!("the sign-in failed: {}", e))
    }
}

/// Answers requests on `listener` until one comes to `/callback`: the
/// address it came to, whole.
async fn callback(listener: &tokio::net::TcpListener) -> Result<String, String> {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    loop {
        let (mut stream, _) = listener
            .accept()
            .await
            .map_err(|e| format!("the loopback listener failed: {e}"))?;
        let mut head = Vec::with_capacity(1024);
        let mut buf = [0u8; 1024];
        // (a connection that says nothing — a browser's preconnect — holds
        // the wait up for a moment at most)
        while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < 16 * 1024 {
            let read = tokio::time::timeout(Duration::from_secs(2), stream.read(&mut buf)).await;
            match read {
                Ok(Ok(0) | Err(_)) | Err(_) => break,
                Ok(Ok(n)) => head.extend_from_slice(&buf[..n]),
            }
        }
        let text = String::from_utf8_lossy(&head);
        let target = text
            .lines()
            .next()
            .and_then(|line| line.strip_prefix("GET "))
            .and_then(|rest| rest.split(' ').next())
            .unwrap_or("")
            .to_owned();
        let (path, query) = target.split_once('?').unwrap_or((&target, ""));
        let has = |key: &str| query.split('&').any(|p| p.starts_with(key));
        let ours = path == "/callback" && ((has("code=") && has("state=")) || has("error="));
        let (status, page) = if !ours {
            ("404 Not Found", "Not the sign-in address.")
        } else if has("error=") {
            (
                "200 OK",
                "Sign-in refused (hermitcrab says why). You may close this window.",
            )
        } else {
            (
                "200 OK",
                "Back at hermitcrab, which finishes signing in. You may close this window.",
            )
        };
        let answer = format!(
            "HTTP/1.1 {status}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: \
             {}\r\nConnection: close\r\n\r\n{page}",
            page.len()
        );
        let _ = stream.write_all(answer.as_bytes()).await;
        let _ = stream.shutdown().await;
        if ours {
            return Ok(format!("http://localhost{target}"));
        }
    }
}

/// Signs out of the server whose tokens are at `store`: each token
/// revoked where the authorization server offers revocation (RFC 7009),
/// then forgotten. Answers whether there were tokens.
pub async fn logout(url: &str, store: &Path) -> Result<bool, String> {
    crypto();
    let file = FileStore::new(store.to_owned());
    let kept = file.read();
    file.forget()?;
    let Ok(Some(kept)) = kept else {
        return Ok(false);
    };
    if let Some(tokens) = &kept.token_response {
        let _ = revoke(url, &kept, tokens).await;
    }
    Ok(true)
}

/// Revokes `tokens` at the authorization server of `url`, where it says
/// where (best effort: forgetting them is what signs out).
async fn revoke(
    url: &str,
    kept: &StoredCredentials,
    tokens: &rmcp::transport::auth::OAuthTokenResponse,
) -> Result<(), String> {
    let client_id = kept.client_id.as_str();
    use oauth2::TokenResponse as _;
    let manager = AuthorizationManager::new(url)
        .await
        .map_err(|e| e.to_string())?;
    let found = manager
        .resolve_metadata()
        .await
        .map_err(|e| e.to_string())?;
    let Some(endpoint) = found
        .metadata
        .additional_fields
        .get("revocation_endpoint")
        .and_then(|v| v.as_str())
    else {
        return Ok(());
    };
    // only to the server that issued them (one that changed since gets
    // nothing), over HTTPS unless it is this machine, never redirected
    let issuer = found.metadata.issuer.as_deref();
    if kept.issuer.is_some() && kept.issuer.as_deref() != issuer {
        return Ok(());
    }
    let endpoint_url = url::Url::parse(endpoint).map_err(|e| e.to_string())?;
    let loopback = matches!(
        endpoint_url.host_str(),
        Some("localhost" | "127.0.0.1" | "[::1]")
    );
    if endpoint_url.scheme() != "https" && !loopback {
        return Ok(());
    }
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .map_err(|e| e.to_string())?;
    let mut each = vec![(tokens.access_token().secret(), "access_token")];
    if let Some(refresh) = tokens.refresh_token() {
        each.push((refresh.secret(), "refresh_token"));
    }
    for (token, hint) in each {
        let form = url::form_urlencoded::Serializer::new(String::new())
            .append_pair("token", token)
            .append_pair("token_type_hint", hint)
            .append_pair("client_id", client_id)
            .finish();
        let _ = client
            .post(endpoint)
            .header("content-type", "application/x-www-form-urlencoded")
            .body(form)
            .timeout(Duration::from_secs(10))
            .send()
            .await;
    }
    Ok(())
}

/// HTTPS through rustls with ring, as every other client of `hc` (the
/// SDK's client is built without a provider of its own).
fn crypto() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}

/// What a failed sign-in step says, for server `name` at `url`.
fn said(name: &str, url: &str, error: &AuthError) -> String {
    match error {
        AuthError::NoAuthorizationSupport => format!(
            "the MCP server `{name}` ({url}) does not offer sign-in (OAuth): give it a token \
             with `bearer_token_env_var` or a header instead"
        ),
        AuthError::RegistrationFailed(why) => format!(
            "the authorization server of `{name}` would not register hermitcrab ({why}): \
             register a client there and give its id with `oauth.clientId` in the server's entry"
        ),
        other => format!("cannot sign in to `{name}` ({url}): {}", other),
    }
}
