//! The token gate: the token printed at start opens the page once (in the
//! address: `/?token=…`), which sets it as an HttpOnly SameSite=Strict
//! cookie and sends the browser on to `/` without it; every other request
//! needs that cookie — but a tile's files (their own key in the path) and
//! a tile's socket (its one-time slot token), which a sandboxed frame has
//! no cookie for.

use super::App;
use anyhow::{Context as _, Result};
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use std::path::Path;

/// The cookie's name.
const COOKIE: &str = "hc_token";

/// Random bytes as lowercase hex; an error when the OS gives none (never
/// a token of zeros).
pub fn random_hex(bytes: usize) -> Result<String> {
    use ring::rand::SecureRandom as _;
    let mut b = vec![0u8; bytes];
    ring::rand::SystemRandom::new()
        .fill(&mut b)
        .map_err(|_| anyhow::anyhow!("the OS gave no random bytes for a token"))?;
    Ok(b.iter().map(|x| format!("{x:02x}")).collect())
}

/// What a page user may do (decision 19): each role may do what the one
/// before it may, and more.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Role {
    /// Reads: the sessions, their traces and requests, live.
    Viewer,
    /// Also answers a run's questions (a permission, the agent's own).
    Answerer,
    /// Also starts runs (queued as theirs, run under the server person's
    /// settings), interrupts and stops them, sends a session a message.
    Operator,
    /// The server's own person: also runs programs directly (through the
    /// permission rules), declares programs, opens tiles, rewinds files.
    Owner,
}

impl Role {
    /// Its name (`--token-file FILE:ROLE`).
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Viewer => "viewer",
            Role::Answerer => "answerer",
            Role::Operator => "operator",
            Role::Owner => "owner",
        }
    }

    /// The role called `name`.
    fn parse(name: &str) -> Option<Role> {
        [Role::Viewer, Role::Answerer, Role::Operator, Role::Owner]
            .into_iter()
            .find(|r| r.as_str() == name)
    }
}

/// A person the page knows by a token of theirs.
#[derive(Clone, Debug)]
pub struct Person {
    /// What names them on what they do (`answered by alice (the page)`).
    pub name: String,
    /// Their token.
    pub token: String,
    /// What they may do.
    pub role: Role,
}

/// The people the page lets in: one per token file (`FILE` or
/// `FILE:ROLE`, named by the file's name without its extension:
/// `alice.token` is alice), or — with none — the person who started it
/// (`person`), with a fresh token. A file's role is what it says; else
/// `owner` for the server's own person (or the one file there is: the
/// person keeping their own token), `operator` for anyone else.
pub fn people(files: &[std::path::PathBuf], person: String) -> Result<Vec<Person>> {
    if files.is_empty() {
        return Ok(vec![Person {
            name: person,
            token: token(None)?,
            role: Role::Owner,
        }]);
    }
    let mut out: Vec<Person> = Vec::new();
    for given in files {
        let (file, role) = with_role(given)?;
        let name = file
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .filter(|s| !s.is_empty())
            .unwrap_or_else(|| person.clone());
        let sole = files.len() == 1;
        let role = role.unwrap_or(match name == person || sole {
            true => Role::Owner,
            false => Role::Operator,
        });
        let one = Person {
            name,
            token: token(Some(&file))?,
            role,
        };
        if out.iter().any(|p| p.token == one.token) {
            anyhow::bail!(
                "{} holds the same token as another --token-file: each person needs their own",
                file.display()
            );
        }
        out.push(one);
    }
    Ok(out)
}

/// A `--token-file` value as a file and the role it gives, when it says
/// one (`alice.token:viewer`).
fn with_role(given: &Path) -> Result<(std::path::PathBuf, Option<Role>)> {
    let text = given.to_string_lossy();
    if let Some((file, role)) = text.rsplit_once(':')
        && !role.contains('/')
    {
        return match Role::parse(role) {
            Some(role) => Ok((file.into(), Some(role))),
            None => anyhow::bail!(
                "--token-file {text}: `{role}` is not a role; give viewer, answerer, operator or \
                 owner (FILE:ROLE)"
            ),
        };
    }
    Ok((given.to_path_buf(), None))
}

/// The token: kept in `file` when given (made there, private, when
/// missing), else fresh.
pub fn token(file: Option<&Path>) -> Result<String> {
    let Some(file) = file else {
        return random_hex(24);
    };
    if let Ok(text) = std::fs::read_to_string(file) {
        let kept = text.trim().to_owned();
        if kept.len() >= 16 {
            return Ok(kept);
        }
    }
    let fresh = random_hex(24)?;
    use std::os::unix::fs::OpenOptionsExt as _;
    let mut out = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(file)
        .with_context(|| format!("cannot write the token to {}", file.display()))?;
    std::io::Write::write_all(&mut out, fresh.as_bytes())?;
    Ok(fresh)
}

/// Equal, in time that does not depend on where they differ.
fn same(a: &str, b: &str) -> bool {
    a.len() == b.len()
        && a.bytes()
            .zip(b.bytes())
            .fold(0u8, |acc, (x, y)| acc | (x ^ y))
            == 0
}

/// The person whose token `given` is.
fn holder<'a>(app: &'a App, given: &str) -> Option<&'a Person> {
    app.people.iter().find(|p| same(given, &p.token))
}

/// The person whose token the request carries as its cookie.
pub fn person_of<'a>(app: &'a App, headers: &HeaderMap) -> Option<&'a Person> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .filter(|(name, _)| *name == COOKIE)
        .find_map(|(_, value)| holder(app, value))
}

/// The engine's context for what the request's person asks: the host,
/// acting for them (what it commits records them).
pub fn context_of(app: &App, headers: &HeaderMap) -> engine::Context {
    match person_of(app, headers) {
        Some(person) => engine::Context::host_for(person.name.clone()),
        None => engine::Context::host(),
    }
}

/// Whether the request carries a token as its cookie.
pub fn has_cookie(app: &App, headers: &HeaderMap) -> bool {
    person_of(app, headers).is_some()
}

/// Whether the request names this server in its `Host`: an IP address,
/// `localhost` (served on loopback), this machine's name or one given
/// with `--allow-host`. Any other name is a page that had its own name
/// resolve to this server (DNS rebinding): refused, cookie or not.
fn host_allowed(app: &App, headers: &HeaderMap) -> bool {
    let Some(host) = headers.get(header::HOST).and_then(|h| h.to_str().ok()) else {
        return false;
    };
    let name = match host.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or(""),
        None => host.rsplit_once(':').map_or(host, |(name, _)| name),
    };
    let name = name.trim_end_matches('.').to_ascii_lowercase();
    name.parse::<std::net::IpAddr>().is_ok()
        || (name == "localhost" && app.loopback)
        || app.hosts.iter().any(|h| h.eq_ignore_ascii_case(&name))
}

/// The gate every request passes.
pub async fn gate(State(app): State<App>, request: Request, next: Next) -> Response {
    if !host_allowed(&app, request.headers()) {
        return (
            StatusCode::FORBIDDEN,
            [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
            "403: this server is not known by that name; open the address `hc serve --http` \
             printed (or give the name with --allow-host)\n",
        )
            .into_response();
    }
    let path = request.uri().path().to_owned();
    let query = request.uri().query().unwrap_or_default().to_owned();
    // a tile's files and socket carry their own proof, checked where served
    if path.starts_with("/tile/") || (path == "/ws" && query.starts_with("slot=")) {
        return next.run(request).await;
    }
    let given = query
        .split('&')
        .filter_map(|p| p.split_once('='))
        .find(|(k, _)| *k == "token")
        .map(|(_, v)| v.to_owned());
    let known = given.as_deref().and_then(|t| holder(&app, t));
    match given {
        // the address works once, whatever cookie comes with it: later,
        // only the browser holding the cookie it set gets in (a copied or
        // logged address opens nothing; someone else's cookie beside it
        // does not make it open again)
        Some(_)
            if path == "/"
                && known.is_some()
                && !app.open_once(known.map(|p| p.token.as_str()).unwrap_or_default()) =>
        {
            let theirs = person_of(&app, request.headers()).map(|p| p.token.as_str());
            if theirs == known.map(|p| p.token.as_str()) {
                // (their own browser, come back by the address: in, as it was)
                return (StatusCode::SEE_OTHER, [(header::LOCATION, "/")]).into_response();
            }
            (
                StatusCode::UNAUTHORIZED,
                [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
                "401: this address was opened once already; use the browser that opened it, or \
                 restart `hc serve --http` for a new one\n",
            )
                .into_response()
        }
        Some(token) if path == "/" && known.is_some() => {
            let cookie = format!("{COOKIE}={token}; HttpOnly; SameSite=Strict; Path=/");
            let mut response = (StatusCode::SEE_OTHER, [(header::LOCATION, "/")]).into_response();
            if let Ok(value) = HeaderValue::from_str(&cookie) {
                response.headers_mut().insert(header::SET_COOKIE, value);
            }
            response
        }
        // a token anywhere but the page's address, or a wrong one
        Some(_) => refused(),
        None if !has_cookie(&app, request.headers()) => refused(),
        None if !same_origin(&app, &request) => (
            StatusCode::FORBIDDEN,
            [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
            "403: a change asked from another origin\n",
        )
            .into_response(),
        None => match refusal(&app, &request) {
            None => next.run(request).await,
            Some(refusal) => refusal,
        },
    }
}

/// What a request needs its person's role to be: reading is a viewer's;
/// starting a run, or closing a tile, an operator's; anything else that
/// changes something (a program run directly, a tile opened, files
/// rewound) the owner's.
fn needed(request: &Request) -> (Role, &'static str) {
    use axum::http::Method;
    let path = request.uri().path();
    if matches!(*request.method(), Method::GET | Method::HEAD) {
        return (Role::Viewer, "reading");
    }
    match path {
        "/api/run" => (Role::Operator, "starting a run"),
        p if p.starts_with("/api/tile/") && p.ends_with("/close") => {
            (Role::Operator, "closing a tile")
        }
        "/api/program-run" => (Role::Owner, "running a program directly"),
        "/api/rewind" => (Role::Owner, "rewinding the project's files"),
        p if p.starts_with("/api/tile/") => (Role::Owner, "opening a tile"),
        _ => (Role::Owner, "this"),
    }
}

/// Why the request's person may not ask it, if so: the refusal (403,
/// saying whose role does).
fn refusal(app: &App, request: &Request) -> Option<Response> {
    let Some(person) = person_of(app, request.headers()) else {
        return Some(refused());
    };
    let (role, what) = needed(request);
    (person.role < role).then(|| forbidden(person, role, what))
}

/// 403: `person`'s role does not reach `role`, which `what` needs.
pub fn forbidden(person: &Person, role: Role, what: &str) -> Response {
    let text = format!(
        "403: {} signed in as {}; {what} needs {} (the server's owner gives a token its role: \
         --token-file FILE:ROLE)\n",
        person.name,
        article(person.role),
        article(role)
    );
    (
        StatusCode::FORBIDDEN,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        text,
    )
        .into_response()
}

/// `a viewer`, `an operator`, `the owner`.
pub fn article(role: Role) -> String {
    match role {
        Role::Owner => "the owner".into(),
        Role::Answerer | Role::Operator => format!("an {}", role.as_str()),
        Role::Viewer => format!("a {}", role.as_str()),
    }
}

/// Whether a request that changes something (anything but GET and HEAD)
/// comes from the page's own origin, when the browser says (`Origin`):
/// the cookie is `SameSite=Strict` already; this holds even where a
/// browser would send it.
fn same_origin(app: &App, request: &Request) -> bool {
    use axum::http::Method;
    if matches!(*request.method(), Method::GET | Method::HEAD) {
        return true;
    }
    let Some(origin) = request.headers().get(header::ORIGIN) else {
        return true; // not a browser's request
    };
    let origin = origin.to_str().unwrap_or_default();
    let host = request
        .headers()
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .map(|h| format!("http://{h}"));
    app.origins.iter().any(|o| o == origin) || host.as_deref() == Some(origin)
}

/// 401, saying what to do, nothing else served.
pub fn refused() -> Response {
    (
        StatusCode::UNAUTHORIZED,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        "401: open the address `hc serve --http` printed, with its ?token=…\n",
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_compare_whole() {
        assert!(same("abc", "abc"));
        assert!(!same("abc", "abd"));
        assert!(!same("abc", "abcd"));
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("token");
        let made = token(Some(&file)).unwrap();
        assert_eq!(token(Some(&file)).unwrap(), made, "kept");
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(&file).unwrap().permissions().mode();
        assert_eq!(mode & 0o077, 0);
        assert_ne!(token(None).unwrap(), token(None).unwrap());
    }
}
