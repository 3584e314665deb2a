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

/// A person the page knows by a token of theirs.
#[derive(Clone, Debug)]
pub struct Person {
    /// What names them on what they do (`answered by alice (the page)`).
    pub name: String,
    /// Their token.
    pub token: String,
}

/// The people the page lets in: one per token file (named by the file's
/// name without its extension: `alice.token` is alice), or — with none —
/// the person who started it (`person`), with a fresh token.
pub fn people(files: &[std::path::PathBuf], person: String) -> Result<Vec<Person>> {
    if files.is_empty() {
        return Ok(vec![Person {
            name: person,
            token: token(None)?,
        }]);
    }
    let mut out: Vec<Person> = Vec::new();
    for file in files {
        let name = file
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .filter(|s| !s.is_empty())
            .unwrap_or_else(|| person.clone());
        let person = Person {
            name,
            token: token(Some(file))?,
        };
        if out.iter().any(|p| p.token == person.token) {
            anyhow::bail!(
                "{} holds the same token as another --token-file: each person needs their own",
                file.display()
            );
        }
        out.push(person);
    }
    Ok(out)
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
        // the address works once: later, only the browser holding the
        // cookie it set gets in (a copied or logged address opens nothing)
        Some(_)
            if path == "/"
                && known.is_some()
                && !has_cookie(&app, request.headers())
                && !app.open_once(known.map(|p| p.token.as_str()).unwrap_or_default()) =>
        {
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
        None => next.run(request).await,
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
