//! A server's configuration: as a person writes it (Claude Code's
//! `.mcp.json` entry or Codex's `[mcp_servers.NAME]` table), and resolved —
//! `${VAR}` expanded, secrets read — as the service gets it in
//! [`SERVER_ENV`](crate::SERVER_ENV), never in the substrate.

use crate::error::ConfigError;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The default wait for a server to start and list its tools.
pub const STARTUP_TIMEOUT_MS: u64 = 10_000;

/// The default limit on one tool call.
pub const TOOL_TIMEOUT_MS: u64 = 60_000;

fn yes() -> bool {
    true
}

/// One server entry as written, in either syntax; resolved (its
/// variables read) into the [`Server`] the service connects to.
///
/// ```
/// use mcp::config::{ServerEntry, Transport};
///
/// let entry: ServerEntry = serde_json::from_value(serde_json::json!({
///     "command": "npx", "args": ["-y", "docs-server"],
///     "env": {"TOKEN": "${DOCS_TOKEN}"},
/// })).unwrap();
/// let lookup = |var: &str| (var == "DOCS_TOKEN").then(|| "t0ps3cret".to_owned());
/// let server = entry.resolve("docs", &lookup).unwrap();
/// let Transport::Stdio { env, .. } = &server.transport else { unreachable!() };
/// assert_eq!(env["TOKEN"], "t0ps3cret");
/// // what must never be shown of it, and how it is shown instead
/// assert_eq!(entry.redactions(&lookup)[0], ("t0ps3cret".into(), "${DOCS_TOKEN}".into()));
/// // a variable that is not set says what to do
/// let err = entry.resolve("docs", &|_: &str| None).unwrap_err();
/// assert!(err.to_string().starts_with("${DOCS_TOKEN} is not set"));
/// ```
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ServerEntry {
    /// `stdio` (a command), `http` (streamable HTTP) or `sse` (old servers).
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub transport: Option<String>,
    /// The command a stdio server is started with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// Its arguments.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
    /// Variables set for it.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
    /// Where it starts (relative to the project root).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// An HTTP server's address.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// Headers sent to an HTTP server (`http_headers` in Codex's table).
    #[serde(
        default,
        alias = "http_headers",
        skip_serializing_if = "BTreeMap::is_empty"
    )]
    pub headers: BTreeMap<String, String>,
    /// `Authorization: Bearer $VAR`, read when connecting.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bearer_token_env_var: Option<String>,
    /// `false`: listed, not started.
    #[serde(default = "yes")]
    pub enabled: bool,
    /// How long it may take to start and list its tools.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub startup_timeout_ms: Option<u64>,
    /// The same in seconds (Codex's name).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub startup_timeout_sec: Option<f64>,
    /// The limit on one tool call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_timeout_ms: Option<u64>,
    /// The same in seconds (Codex's name).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_timeout_sec: Option<f64>,
    /// What its process may touch (default: read all, write nothing,
    /// network on, env = the keys of `env`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capabilities: Option<protocol::Capabilities>,
    /// How an HTTP server is signed in to (Claude Code's `oauth`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub oauth: Option<OAuthEntry>,
}

/// An HTTP server's sign-in settings, in Claude Code's shape (`hc mcp
/// login NAME` signs in; without them a client is registered there and
/// then, and the scopes are those the server names).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct OAuthEntry {
    /// A client registered beforehand at the authorization server (its
    /// secret, if it has one, is given in `MCP_CLIENT_SECRET` at sign-in).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_id: Option<String>,
    /// The loopback port the browser comes back to (a client registered
    /// beforehand names one redirect address).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub callback_port: Option<u16>,
    /// The scopes asked for, space-separated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scopes: Option<String>,
}

/// How a resolved server is reached.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "transport", rename_all = "lowercase")]
pub enum Transport {
    /// A command started as a child of the service, inside its containment.
    Stdio {
        /// The command.
        command: String,
        /// Its arguments.
        args: Vec<String>,
        /// Its variables (values: secrets among them).
        env: BTreeMap<String, String>,
        /// Where it starts.
        cwd: Option<String>,
    },
    /// Streamable HTTP (`sse`: an old server, tried the same way).
    Http {
        /// Its address.
        url: String,
        /// Headers (values: secrets among them).
        headers: BTreeMap<String, String>,
    },
}

/// A server as its service gets it: expanded, secrets read.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Server {
    /// Its name (`mcp__NAME__TOOL`).
    pub name: String,
    /// How it is reached.
    #[serde(flatten)]
    pub transport: Transport,
    /// How long it may take to start.
    pub startup_timeout_ms: u64,
    /// The limit on one call.
    pub tool_timeout_ms: u64,
    /// Whether the host has someone to answer a server's questions
    /// (elicitation); when not, they are declined.
    #[serde(default)]
    pub interactive: bool,
    /// Where the tokens of a server one signs in to are kept (the host
    /// names the file: [`crate::oauth::store_path`]); `None` for a server
    /// given its credentials otherwise (a header, a token variable).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub oauth_store: Option<std::path::PathBuf>,
}

/// A server as the host hands it to its service in
/// [`SERVER_ENV`](crate::SERVER_ENV): the server, and what stands in for
/// each of its secrets in whatever the service says.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Handed {
    /// The server.
    #[serde(flatten)]
    pub server: Server,
    /// Each secret and its stand-in ([`ServerEntry::redactions`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub redact: Vec<(String, String)>,
}

/// The shortest value taken for a secret: a shorter one (`1`, `on`) would
/// blot out ordinary words, and is no secret.
pub const SECRET_MIN_CHARS: usize = 4;

impl ServerEntry {
    /// `stdio`, `http` or `sse`, as written or as implied.
    pub fn transport_name(&self) -> &str {
        match self.transport.as_deref() {
            Some(t) => t,
            None if self.url.is_some() && self.command.is_none() => "http",
            None => "stdio",
        }
    }

    /// Its startup limit.
    pub fn startup_timeout(&self) -> u64 {
        self.startup_timeout_ms
            .or(self.startup_timeout_sec.map(|s| (s * 1000.0) as u64))
            .unwrap_or(STARTUP_TIMEOUT_MS)
    }

    /// Its call limit.
    pub fn tool_timeout(&self) -> u64 {
        self.tool_timeout_ms
            .or(self.tool_timeout_sec.map(|s| (s * 1000.0) as u64))
            .unwrap_or(TOOL_TIMEOUT_MS)
    }

    /// Resolves the entry named `name`: `${VAR}` and `${VAR:-default}`
    /// expanded through `lookup` in the command, arguments, env, URL and
    /// headers; the bearer token read. The error says what to set.
    pub fn resolve(
        &self,
        name: &str,
        lookup: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Server, ConfigError> {
        let ex = |s: &str| expand(s, lookup);
        let map = |m: &BTreeMap<String, String>| -> Result<BTreeMap<String, String>, ConfigError> {
            m.iter().map(|(k, v)| Ok((k.clone(), ex(v)?))).collect()
        };
        let transport = match self.transport_name() {
            "stdio" => {
                let Some(command) = &self.command else {
                    return Err(ConfigError::NoCommand {
                        server: name.to_owned(),
                    });
                };
                Transport::Stdio {
                    command: ex(command)?,
                    args: self.args.iter().map(|a| ex(a)).collect::<Result<_, _>>()?,
                    env: map(&self.env)?,
                    cwd: self.cwd.as_deref().map(ex).transpose()?,
                }
            }
            "http" | "sse" | "streamable-http" => {
                let Some(url) = &self.url else {
                    return Err(ConfigError::NoUrl {
                        server: name.to_owned(),
                        transport: self.transport_name().to_owned(),
                    });
                };
                let mut headers = map(&self.headers)?;
                if let Some(var) = &self.bearer_token_env_var {
                    let token = lookup(var).ok_or_else(|| ConfigError::TokenUnset {
                        server: name.to_owned(),
                        var: var.clone(),
                    })?;
                    headers.insert("Authorization".into(), format!("Bearer {token}"));
                }
                Transport::Http {
                    url: ex(url)?,
                    headers,
                }
            }
            other => {
                return Err(ConfigError::Transport {
                    server: name.to_owned(),
                    kind: other.to_owned(),
                });
            }
        };
        Ok(Server {
            name: name.to_owned(),
            transport,
            startup_timeout_ms: self.startup_timeout(),
            tool_timeout_ms: self.tool_timeout(),
            interactive: false,
            oauth_store: None,
        })
    }

    /// Whether the server is one a person signs in to: an HTTP server not
    /// given an `Authorization` header or a token variable.
    pub fn signs_in(&self) -> bool {
        self.url.is_some()
            && self.transport_name() != "stdio"
            && self.bearer_token_env_var.is_none()
            && !self
                .headers
                .keys()
                .any(|k| k.eq_ignore_ascii_case("authorization"))
    }
}

impl ServerEntry {
    /// What must never be shown of the entry once resolved through
    /// `lookup`, each with its stand-in: every value a `${VAR}` reads
    /// (`${VAR}`, as written), every env and header value whole (`<env
    /// KEY>`, `<header NAME>`) and the bearer token — longest first, each
    /// once, none shorter than [`SECRET_MIN_CHARS`]. Messages that quote
    /// the command or the URL (an error's, a transport's) show them as
    /// written.
    pub fn redactions(&self, lookup: &dyn Fn(&str) -> Option<String>) -> Vec<(String, String)> {
        let mut out: Vec<(String, String)> = Vec::new();
        let read = |text: &str, out: &mut Vec<(String, String)>| {
            for var in variables(text) {
                if let Some(value) = lookup(var) {
                    out.push((value, format!("${{{var}}}")));
                }
            }
        };
        let texts = self.command.iter().chain(&self.args).chain(&self.cwd);
        for text in texts.chain(&self.url) {
            read(text, &mut out);
        }
        let whole =
            |kind: &str, map: &BTreeMap<String, String>, out: &mut Vec<(String, String)>| {
                for (key, value) in map {
                    read(value, out);
                    if let Ok(value) = expand(value, lookup) {
                        out.push((value, format!("<{kind} {key}>")));
                    }
                }
            };
        whole("env", &self.env, &mut out);
        whole("header", &self.headers, &mut out);
        if let Some(var) = &self.bearer_token_env_var
            && let Some(token) = lookup(var)
        {
            out.push((format!("Bearer {token}"), "<header Authorization>".into()));
            out.push((token, format!("${{{var}}}")));
        }
        out.retain(|(secret, _)| secret.chars().count() >= SECRET_MIN_CHARS);
        out.sort_by(|a, b| b.0.len().cmp(&a.0.len()).then_with(|| a.cmp(b)));
        out.dedup_by(|a, b| a.0 == b.0);
        out
    }
}

/// The variables `${VAR}` and `${VAR:-default}` in `text` names.
fn variables(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        let after = &rest[start + 2..];
        let Some(end) = after.find('}') else {
            break;
        };
        let inner = &after[..end];
        out.push(inner.split_once(":-").map_or(inner, |(var, _)| var));
        rest = &after[end + 1..];
    }
    out
}

/// `text` with each secret of `redactions` (longest first, as
/// [`ServerEntry::redactions`] orders them) replaced by its stand-in.
pub fn redact(text: &str, redactions: &[(String, String)]) -> String {
    let mut out = text.to_owned();
    for (secret, shown) in redactions {
        if !secret.is_empty() && out.contains(secret.as_str()) {
            out = out.replace(secret.as_str(), shown);
        }
    }
    out
}

/// Expands `${VAR}` and `${VAR:-default}` in `text` (Claude Code's
/// syntax); a variable that is not set and has no default is an error
/// naming it.
pub fn expand(text: &str, lookup: &dyn Fn(&str) -> Option<String>) -> Result<String, ConfigError> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let Some(end) = after.find('}') else {
            out.push_str(&rest[start..]);
            return Ok(out);
        };
        let inner = &after[..end];
        let (var, default) = match inner.split_once(":-") {
            Some((var, default)) => (var, Some(default)),
            None => (inner, None),
        };
        match (lookup(var), default) {
            (Some(value), _) => out.push_str(&value),
            (None, Some(default)) => out.push_str(default),
            (None, None) => {
                return Err(ConfigError::Unset {
                    var: var.to_owned(),
                });
            }
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

/// The program name of tool `tool` of server `server`: Claude Code's
/// `mcp__SERVER__TOOL`, every character outside `[A-Za-z0-9_-]` made `_`,
/// cut to 64 characters.
pub fn tool_name(server: &str, tool: &str) -> String {
    let clean = |s: &str| -> String {
        s.chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                    c
                } else {
                    '_'
                }
            })
            .collect()
    };
    let mut name = format!("mcp__{}__{}", clean(server), clean(tool));
    name.truncate(64);
    name
}

/// The prefix of every tool program of server `server` (`mcp__NAME__`).
pub fn tool_prefix(server: &str) -> String {
    let mut name = tool_name(server, "");
    if name.len() == 64 {
        name.pop();
    }
    name
}

/// The service program's name for server `server`: `mcp/NAME`.
pub fn service_name(server: &str) -> String {
    format!("mcp/{server}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(var: &str) -> Option<String> {
        match var {
            "TOKEN" => Some("t0k".into()),
            "HOME" => Some("/home/me".into()),
            _ => None,
        }
    }

    #[test]
    fn variables_expand_with_defaults_and_a_missing_one_is_named() {
        assert_eq!(expand("${HOME}/x", &env).unwrap(), "/home/me/x");
        assert_eq!(expand("a${NOPE:-b}c", &env).unwrap(), "abc");
        assert_eq!(expand("${TOKEN:-x}", &env).unwrap(), "t0k");
        assert_eq!(expand("no vars", &env).unwrap(), "no vars");
        let err = expand("${NOPE}", &env).unwrap_err();
        assert!(err.to_string().contains("${NOPE} is not set"), "{err}");
    }

    #[test]
    fn secrets_are_found_wherever_a_variable_is_read_and_stand_in_as_written() {
        let entry: ServerEntry = serde_json::from_value(serde_json::json!({
            "type": "http", "url": "https://x/${NOPE:-mcp}?key=${TOKEN}",
            "headers": {"X-Key": "k-${TOKEN}", "X-Plain": "plain-value", "X-Short": "1"},
            "env": {"A": "${HOME}"}, "bearer_token_env_var": "TOKEN"
        }))
        .unwrap();
        let redactions = entry.redactions(&env);
        assert_eq!(
            redactions,
            vec![
                ("plain-value".to_owned(), "<header X-Plain>".to_owned()),
                ("Bearer t0k".into(), "<header Authorization>".into()),
                ("/home/me".into(), "${HOME}".into()),
                ("k-t0k".into(), "<header X-Key>".into()),
            ],
            "`t0k` is too short to be taken for a secret"
        );
        let server = entry.resolve("x", &env).unwrap();
        let Transport::Http { url, .. } = &server.transport else {
            panic!("not http");
        };
        let said = format!("{url} refused Bearer t0k, plain-value and k-t0k");
        assert_eq!(
            redact(&said, &redactions),
            "https://x/mcp?key=t0k refused <header Authorization>, <header X-Plain> and \
             <header X-Key>"
        );
        let handed = Handed {
            server,
            redact: redactions,
        };
        let text = serde_json::to_string(&handed).unwrap();
        assert_eq!(serde_json::from_str::<Handed>(&text).unwrap(), handed);
        // a server handed without stand-ins (an older host) reads too
        let plain = serde_json::to_string(&handed.server).unwrap();
        assert!(
            serde_json::from_str::<Handed>(&plain)
                .unwrap()
                .redact
                .is_empty()
        );
    }

    #[test]
    fn a_long_secret_is_redacted_wherever_it_is_read() {
        let lookup = |var: &str| (var == "SECRET").then(|| "s3cret-value".to_owned());
        let entry: ServerEntry = serde_json::from_value(serde_json::json!({
            "command": "srv-${SECRET}", "args": ["--token=${SECRET}"],
            "env": {"API_TOKEN": "${SECRET}"}
        }))
        .unwrap();
        let redactions = entry.redactions(&lookup);
        assert_eq!(
            redact("cannot start `srv-s3cret-value`", &redactions),
            "cannot start `srv-${SECRET}`"
        );
    }

    #[test]
    fn tool_names_are_claude_codes() {
        assert_eq!(
            tool_name("github", "create_issue"),
            "mcp__github__create_issue"
        );
        assert_eq!(tool_name("my server", "a.b/c"), "mcp__my_server__a_b_c");
        assert_eq!(tool_name("s", &"x".repeat(100)).len(), 64);
    }

    #[test]
    fn an_http_entry_reads_its_bearer_token_and_headers() {
        let entry: ServerEntry = serde_json::from_value(serde_json::json!({
            "type": "http", "url": "https://x/${NOPE:-mcp}",
            "headers": {"X-Key": "${TOKEN}"}, "bearer_token_env_var": "TOKEN"
        }))
        .unwrap();
        let server = entry.resolve("x", &env).unwrap();
        let Transport::Http { url, headers } = server.transport else {
            panic!("not http");
        };
        assert_eq!(url, "https://x/mcp");
        assert_eq!(headers["X-Key"], "t0k");
        assert_eq!(headers["Authorization"], "Bearer t0k");
    }
}
