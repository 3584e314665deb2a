//! Configuration files: the project's `.hermitcrab/config.toml` over the
//! user's `$XDG_CONFIG_HOME/hermitcrab/config.toml` (the user-wide
//! settings). Each value read from them remembers which file it came from.

use anyhow::{Context as _, Result, bail};
use contain::grant::Grant;
use protocol::ReadAccess;
use serde::Deserialize;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// How many background runs a project runs at once, unless it says.
pub const MAX_BACKGROUND: usize = 4;

/// Where a setting's value came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Source {
    /// A command-line flag.
    Flag(String),
    /// An environment variable.
    Env(String),
    /// The project's file.
    Project(PathBuf),
    /// The user's file.
    User(PathBuf),
    /// Built in.
    Default,
}

impl std::fmt::Display for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Source::Flag(flag) => write!(f, "flag {flag}"),
            Source::Env(name) if from_dotenv(name) => write!(f, "environment {name} (from .env)"),
            Source::Env(name) => write!(f, "environment {name}"),
            Source::Project(path) => write!(f, "project file {}", path.display()),
            Source::User(path) => write!(f, "user file {}", path.display()),
            Source::Default => write!(f, "default"),
        }
    }
}

/// The variables `.env` set (those the environment did not have).
static DOTENV: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();

/// Whether `.env` gave the variable `name`.
pub fn from_dotenv(name: &str) -> bool {
    DOTENV
        .get()
        .is_some_and(|names| names.iter().any(|n| n == name))
}

/// What a project's `.env` may set: the model API keys (under the
/// environment, which wins).
const DOTENV_KEYS: &[&str] = &[
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_AUTH_TOKEN",
    "OPENAI_API_KEY",
];

/// A base URL `.env` may set too — only beside a key of its own that will
/// be the one sent (else the person's key would go to the checkout's
/// address), and only in a trusted project.
const DOTENV_URLS: &[(&str, &[&str])] = &[
    (
        "ANTHROPIC_BASE_URL",
        &["ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN"],
    ),
    ("OPENAI_BASE_URL", &["OPENAI_API_KEY"]),
];

/// A project's `.env`, read and not yet applied.
#[derive(Debug, Default)]
pub struct DotEnv {
    path: PathBuf,
    pairs: Vec<(String, String)>,
}

impl DotEnv {
    /// Reads `path` (none: an empty one); a line that is not `NAME=value`
    /// is an error naming the file.
    pub fn read(path: &Path) -> Result<DotEnv> {
        let mut env = DotEnv {
            path: path.to_path_buf(),
            pairs: Vec::new(),
        };
        if !path.is_file() {
            return Ok(env);
        }
        let pairs = dotenvy::from_path_iter(path)
            .with_context(|| format!("cannot read {}", path.display()))?;
        for pair in pairs {
            env.pairs.push(pair.with_context(|| {
                format!(
                    "{}: a line is not NAME=value; fix or remove it",
                    path.display()
                )
            })?);
        }
        Ok(env)
    }

    fn get(&self, name: &str) -> Option<&str> {
        self.pairs
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// Whether the key sent for `keys` would be this file's: the
    /// environment has none of them, and this file has one.
    fn sends_own_key(&self, keys: &[&str]) -> bool {
        !keys.iter().any(|k| set_in_env(k)) && keys.iter().any(|k| self.get(k).is_some())
    }

    /// The base URLs it would set (beside a key of its own, the
    /// environment not setting them already).
    pub fn base_urls(&self) -> impl Iterator<Item = (&str, &str)> {
        DOTENV_URLS.iter().filter_map(|(url, keys)| {
            let value = self.get(url)?;
            (!set_in_env(url) && self.sends_own_key(keys)).then_some((*url, value))
        })
    }

    /// Forgets the base URLs trust was asked for (the project is not
    /// trusted; they were named then). One that would never apply stays,
    /// for [`apply`](Self::apply) to name as ignored.
    pub fn drop_base_urls(&mut self) {
        let asked: Vec<String> = self.base_urls().map(|(n, _)| n.to_owned()).collect();
        self.pairs.retain(|(n, _)| !asked.contains(n));
    }

    /// Sets what it may set and the environment lacks; says what it
    /// ignored. Call before any thread starts.
    pub fn apply(self) {
        let urls: Vec<String> = self.base_urls().map(|(n, _)| n.to_owned()).collect();
        let mut set = Vec::new();
        let mut ignored = Vec::new();
        for (name, value) in &self.pairs {
            let allowed = DOTENV_KEYS.contains(&name.as_str()) || urls.contains(name);
            if !allowed {
                ignored.push(name.clone());
            } else if std::env::var_os(name).is_none() {
                // SAFETY: `hc` reads its configuration before it starts any
                // thread (the async runtime comes after).
                #[allow(unsafe_code)]
                unsafe {
                    std::env::set_var(name, value);
                }
                set.push(name.clone());
            }
        }
        if !ignored.is_empty() {
            eprintln!(
                "hc: {} sets {}; ignored (.env may set only {}, and a base URL beside a key of its own in a trusted project)",
                self.path.display(),
                crate::text::shown(&ignored.join(", ")),
                DOTENV_KEYS.join(", ")
            );
        }
        let _ = DOTENV.set(set);
    }
}

/// Whether the environment has `name`, not empty.
fn set_in_env(name: &str) -> bool {
    std::env::var_os(name).is_some_and(|v| !v.is_empty())
}

/// One parsed file.
pub struct File {
    /// Its path.
    pub path: PathBuf,
    /// Its contents.
    pub table: toml::Table,
    /// Whether it is the project's (else the user's).
    pub project: bool,
}

impl File {
    /// Where a value in this file comes from.
    pub fn source(&self) -> Source {
        if self.project {
            Source::Project(self.path.clone())
        } else {
            Source::User(self.path.clone())
        }
    }
}

/// The configuration files, the user's first (lower precedence).
pub struct Files {
    /// Present files, user's first.
    pub files: Vec<File>,
    /// Where the project stands on trust (what of its files applies).
    pub trust: Trust,
    /// The project's `.mcp.json` (dropped when the project is not trusted).
    pub mcp_json: Option<McpJson>,
}

/// The user's configuration file.
pub fn user_file() -> Option<PathBuf> {
    Some(xdg_dir("XDG_CONFIG_HOME", ".config")?.join("config.toml"))
}

/// The user's configuration file, as a person reads its path.
fn user_file_shown() -> String {
    user_file().map_or_else(
        || "~/.config/hermitcrab/config.toml".into(),
        |p| p.display().to_string(),
    )
}

/// hermitcrab's directory under the XDG base directory `var` (else
/// `~/{fallback}`).
pub fn xdg_dir(var: &str, fallback: &str) -> Option<PathBuf> {
    let base = std::env::var_os(var)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(fallback)))?;
    Some(base.join("hermitcrab"))
}

/// `safe_directories` is the person's alone (a project listing itself
/// would vouch for itself), and a list of paths.
fn check_safe_directories(table: &toml::Table, path: &Path, project: bool) -> Result<()> {
    if project && table.contains_key("projects") {
        return Err(crate::exit::exit(
            2,
            format!(
                "{}: `[projects]` belongs in your own configuration ({}), not a project's",
                path.display(),
                user_file_shown()
            ),
        ));
    }
    let Some(value) = table.get("safe_directories") else {
        return Ok(());
    };
    if project {
        return Err(crate::exit::exit(
            2,
            format!(
                "{}: `safe_directories` belongs in your own configuration ({}), not a project's",
                path.display(),
                user_file_shown()
            ),
        ));
    }
    let paths = value
        .as_array()
        .is_some_and(|list| list.iter().all(toml::Value::is_str));
    if !paths {
        return Err(crate::exit::exit(
            2,
            format!(
                "{}: `safe_directories` must be a list of paths, e.g. safe_directories = [\"/srv/shared/repo\"]",
                path.display()
            ),
        ));
    }
    Ok(())
}

/// Whether the person's own configuration lists `root` (or `*`) in
/// `safe_directories`: a project they use though another user controls it.
pub fn safe_directory(root: &Path) -> bool {
    let Some(text) = user_file().and_then(|p| std::fs::read_to_string(p).ok()) else {
        return false;
    };
    let Ok(table) = text.parse::<toml::Table>() else {
        return false;
    };
    let root = canonical(root);
    table
        .get("safe_directories")
        .and_then(toml::Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(toml::Value::as_str)
        .any(|d| d == "*" || canonical(Path::new(d)) == root)
}

impl Files {
    /// Reads the user's file and the project's (`project_file`), those
    /// that exist; a file that is not valid TOML is an error naming it.
    pub fn read(project_file: &Path) -> Result<Files> {
        let mut files = Vec::new();
        for (path, project) in [
            (user_file(), false),
            (Some(project_file.to_path_buf()), true),
        ] {
            let Some(path) = path else { continue };
            let text = match std::fs::read_to_string(&path) {
                Ok(text) => text,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => return Err(e).with_context(|| format!("cannot read {}", path.display())),
            };
            let table: toml::Table = text.parse().map_err(|e| {
                crate::exit::exit(2, format!("{} is not valid TOML: {e}", path.display()))
            })?;
            if let Some(unknown) = crate::keys::unknown(&table, &text) {
                return Err(crate::exit::exit(2, unknown.message(&path)));
            }
            check_safe_directories(&table, &path, project)?;
            if project && table.contains_key("person") {
                return Err(crate::exit::exit(
                    2,
                    format!(
                        "{}: `person` names who you are, and only your own configuration may \
                         say it ({}); take it out of the project's file",
                        path.display(),
                        user_file().map_or_else(
                            || "~/.config/hermitcrab/config.toml".to_owned(),
                            |p| p.display().to_string()
                        )
                    ),
                ));
            }
            files.push(File {
                path,
                table,
                project,
            });
        }
        Ok(Files {
            files,
            trust: Trust::NotNeeded,
            mcp_json: None,
        })
    }

    /// The person's own file's table, when there is one.
    pub fn user_table(&self) -> Option<toml::Table> {
        self.files
            .iter()
            .find(|f| !f.project)
            .map(|f| f.table.clone())
    }

    /// The project's file, when there is one.
    pub fn project_mut(&mut self) -> Option<&mut File> {
        self.files.iter_mut().find(|f| f.project)
    }

    /// The value of top-level `key`, from the file that wins (the
    /// project's over the user's), with its source.
    pub fn get(&self, key: &str) -> Option<(&toml::Value, Source)> {
        self.files
            .iter()
            .rev()
            .find_map(|f| f.table.get(key).map(|v| (v, f.source())))
    }

    /// `[telemetry]`: the person's table, and a trusted project's keys
    /// over it (an untrusted project's is gone by now).
    pub fn telemetry(&self) -> Result<Option<hc_telemetry::TelemetryFile>> {
        let mut merged = toml::Table::new();
        let mut source = None;
        for file in &self.files {
            if let Some(toml::Value::Table(t)) = file.table.get("telemetry") {
                merged.extend(t.clone());
                source = Some(file.source());
            } else if let Some(other) = file.table.get("telemetry") {
                bail!(
                    "{}: `telemetry` is a table ([telemetry]), not {other}",
                    file.source()
                );
            }
        }
        let Some(source) = source else {
            return Ok(None);
        };
        let file = hc_telemetry::TelemetryFile::deserialize(toml::Value::Table(merged))
            .map_err(|e| anyhow::anyhow!("{source}: [telemetry]: {}", e.message()))?;
        Ok(Some(file))
    }

    /// Telemetry as the environment and `[telemetry]` say (none: off).
    pub fn telemetry_settings(&self) -> Result<Option<hc_telemetry::Settings>> {
        let file = self.telemetry()?;
        hc_telemetry::Settings::resolve(file.as_ref(), &|k| std::env::var(k).ok())
            .map_err(|e| anyhow::anyhow!("telemetry: {e}"))
    }

    /// `containment = "on" | "off"`: whether it is off.
    pub fn containment_off(&self) -> Result<bool> {
        match self.get("containment") {
            None => Ok(false),
            Some((toml::Value::String(s), _)) if s == "on" => Ok(false),
            Some((toml::Value::String(s), _)) if s == "off" => Ok(true),
            Some((other, source)) => {
                bail!("{source}: `containment` is \"on\" or \"off\", not {other}")
            }
        }
    }

    /// `max_background`: how many background runs of the project run at
    /// once (a worker's `--max` unless it is given).
    pub fn max_background(&self) -> Result<usize> {
        match self.get("max_background") {
            None => Ok(MAX_BACKGROUND),
            Some((toml::Value::Integer(n), _)) if *n >= 1 => Ok(*n as usize),
            Some((other, source)) => {
                bail!(
                    "{source}: `max_background` is a whole number of runs, at least 1, not {other}"
                )
            }
        }
    }

    /// `lease_seconds`: how long this host's engines' leases on a shared
    /// store hold without renewal (renewed every fifth of it); past it,
    /// another host fails or re-queues their runs. Default 10.
    pub fn lease_ms(&self) -> Result<u64> {
        match self.get("lease_seconds") {
            None => Ok(engine::LEASE_MS),
            // (how soon other hosts take this machine's runs over is the
            // person's to say, never a checkout's)
            Some((_, source @ Source::Project(_))) => bail!(
                "{source}: `lease_seconds` is this machine's own setting: put it in your own \
                 configuration ({}), not the project's",
                user_file_shown()
            ),
            Some((toml::Value::Integer(n), _)) if (2..=3600).contains(n) => Ok(*n as u64 * 1000),
            Some((other, source)) => {
                bail!("{source}: `lease_seconds` is a whole number from 2 to 3600, not {other}")
            }
        }
    }

    /// `retry`: what becomes of a background run whose engine is lost —
    /// `"turn"`: queued again from its last whole turn; `"off"` (the
    /// default): it fails `engine lost`.
    pub fn retry(&self) -> Result<Option<String>> {
        match self.get("retry") {
            None => Ok(None),
            Some((toml::Value::String(s), _)) if s == "off" => Ok(None),
            Some((toml::Value::String(s), _)) if s == "turn" => Ok(Some(s.clone())),
            Some((other, source)) => {
                bail!("{source}: `retry` is \"turn\" or \"off\", not {other}")
            }
        }
    }

    /// `[programs.NAME]` tables: what each program is granted beyond its
    /// declaration. The user's and the project's grants add up (`network`
    /// from the project wins).
    pub fn grants(&self) -> Result<BTreeMap<String, Grant>> {
        let mut out: BTreeMap<String, Grant> = BTreeMap::new();
        for file in &self.files {
            let Some(programs) = file.table.get("programs") else {
                continue;
            };
            let Some(programs) = programs.as_table() else {
                bail!(
                    "{}: `programs` must be a table of [programs.NAME] sections",
                    file.path.display()
                );
            };
            for (name, section) in programs {
                let where_ = format!("{}: [programs.{name}]", file.path.display());
                let grant = parse_grant(section, &where_)?;
                let into = out.entry(name.clone()).or_default();
                merge(into, grant);
            }
        }
        Ok(out)
    }
}

fn merge(into: &mut Grant, more: Grant) {
    if more.read.is_some() {
        into.read = more.read;
    }
    for w in more.write {
        if !into.write.contains(&w) {
            into.write.push(w);
        }
    }
    if more.network.is_some() {
        into.network = more.network;
    }
    for e in more.env {
        if !into.env.contains(&e) {
            into.env.push(e);
        }
    }
    if more.timeout_ms.is_some() {
        into.timeout_ms = more.timeout_ms;
    }
    if more.processes.is_some() {
        into.processes = more.processes;
    }
    if more.memory.is_some() {
        into.memory = more.memory;
    }
}

fn strings(value: &toml::Value, key: &str, where_: &str) -> Result<Vec<String>> {
    let Some(items) = value.as_array() else {
        bail!("{where_}: `{key}` must be a list of strings");
    };
    items
        .iter()
        .map(|v| match v.as_str() {
            Some(s) => Ok(s.to_owned()),
            None => bail!("{where_}: `{key}` must be a list of strings, not {v}"),
        })
        .collect()
}

fn parse_grant(section: &toml::Value, where_: &str) -> Result<Grant> {
    let Some(table) = section.as_table() else {
        bail!("{where_} must be a table");
    };
    let mut grant = Grant::default();
    for (key, value) in table {
        match key.as_str() {
            "read" => {
                grant.read = Some(match value {
                    toml::Value::String(s) if s == "all" => ReadAccess::All,
                    other => ReadAccess::Paths(strings(other, "read", where_)?),
                })
            }
            "write" => grant.write = strings(value, "write", where_)?,
            "env" => grant.env = strings(value, "env", where_)?,
            "network" => match value.as_bool() {
                Some(b) => grant.network = Some(b),
                None => bail!("{where_}: `network` is true or false, not {value}"),
            },
            "timeout_ms" => match value.as_integer() {
                Some(ms) if ms > 0 => grant.timeout_ms = Some(ms as u64),
                _ => bail!("{where_}: `timeout_ms` is a number of milliseconds, not {value}"),
            },
            "processes" => match value.as_integer() {
                Some(n) if n > 0 => grant.processes = Some(n as u64),
                _ => bail!(
                    "{where_}: `processes` is how many processes a run may have at once (a \
                     number above 0), not {value}"
                ),
            },
            "memory" => {
                let parsed = match value {
                    toml::Value::String(text) => contain::bounds::parse_size(text),
                    toml::Value::Integer(n) if *n > 0 => Ok(*n as u64),
                    other => Err(format!("{other} is not a size")),
                };
                grant.memory = Some(parsed.map_err(|why| {
                    anyhow::anyhow!("{where_}: `memory`: {why} (e.g. memory = \"2GiB\")")
                })?);
            }
            other => bail!(
                "{where_}: unknown setting `{other}`; a program may be given `read`, `write`, \
                 `network`, `env`, `timeout_ms`, `processes` and `memory`"
            ),
        }
    }
    Ok(grant)
}

/// Where a project stands.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Trust {
    /// Its files ask for nothing that needs trust.
    NotNeeded,
    /// The person trusts it as its files are now (since when).
    Trusted(String),
    /// Its files ask for these, which are ignored; `changed` when it was
    /// trusted before its files changed.
    Ignored {
        /// What is ignored, in words.
        asked: Vec<String>,
        /// Trusted once, for other contents.
        changed: bool,
    },
}

/// A path made canonical (as it was given when it cannot be).
pub fn canonical(path: &Path) -> PathBuf {
    path.canonicalize().unwrap_or_else(|_| path.to_path_buf())
}

/// The project's file of MCP servers (Claude Code's).
pub const MCP_JSON: &str = ".mcp.json";

/// The project's `.mcp.json`, read.
#[derive(Clone, Debug)]
pub struct McpJson {
    /// Its path.
    pub path: PathBuf,
    /// Its `mcpServers`.
    pub servers: serde_json::Map<String, Value>,
}

impl McpJson {
    /// Reads `root/.mcp.json`, when there is one; one that is not a JSON
    /// object of `mcpServers` is an error naming it.
    pub fn read(root: &Path) -> Result<Option<McpJson>> {
        let path = root.join(MCP_JSON);
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e).with_context(|| format!("cannot read {}", path.display())),
        };
        let value: Value = serde_json::from_str(&text).map_err(|e| {
            crate::exit::exit(2, format!("{} is not valid JSON: {e}", path.display()))
        })?;
        let servers = match value.get("mcpServers") {
            None => serde_json::Map::new(),
            Some(Value::Object(servers)) => servers.clone(),
            Some(_) => bail!(
                "{}: `mcpServers` must be an object of servers by name",
                path.display()
            ),
        };
        Ok(Some(McpJson { path, servers }))
    }

    /// Its servers, in words, for a trust question.
    pub fn asked(&self) -> Vec<String> {
        self.servers
            .iter()
            .map(|(name, entry)| {
                format!(
                    "the MCP server `{name}` from .mcp.json ({}; {})",
                    what(entry),
                    grants(entry)
                )
            })
            .collect()
    }
}

/// What a server entry's process may do, in words: its `capabilities`, or
/// the default (read every file, write only its own cache, the network,
/// the variables of its `env`).
pub fn grants(entry: &Value) -> String {
    let Ok(entry) = mcp::config::ServerEntry::deserialize(entry) else {
        return "grants unknown".into();
    };
    if entry.transport_name() != "stdio" {
        return "runs nothing here".into();
    }
    let env: Vec<String> = entry.env.keys().cloned().collect();
    let caps = entry
        .capabilities
        .unwrap_or_else(|| protocol::Capabilities {
            network: true,
            env,
            ..protocol::Capabilities::default()
        });
    let read = match &caps.filesystem.read {
        protocol::ReadAccess::All => "reads every file".to_owned(),
        protocol::ReadAccess::Paths(paths) if paths.is_empty() => "reads no file".to_owned(),
        protocol::ReadAccess::Paths(paths) => format!("reads {}", paths.join(", ")),
    };
    let write = match caps.filesystem.write.as_slice() {
        [] => "writes only its own cache".to_owned(),
        paths => format!("writes {} and its own cache", paths.join(", ")),
    };
    let network = if caps.network {
        "the network"
    } else {
        "no network"
    };
    let env = match caps.env.as_slice() {
        [] => String::new(),
        keys => format!(", gets {}", keys.join(", ")),
    };
    format!("{read}, {write}, {network}{env}")
}

/// What a server entry starts or reaches, in words.
pub fn what(entry: &Value) -> String {
    let Ok(entry) = mcp::config::ServerEntry::deserialize(entry) else {
        return "an entry that does not read as a server's".into();
    };
    match (entry.command, entry.url) {
        (Some(command), _) => {
            let words = [vec![command], entry.args].concat();
            format!("runs `{}`", words.join(" "))
        }
        (None, Some(url)) => format!("connects to {url}"),
        (None, None) => "an entry with no command or url".into(),
    }
}
