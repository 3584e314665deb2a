//! Configuration files: the project's `.hermitcrab/config.toml` over the
//! user's `$XDG_CONFIG_HOME/hermitcrab/config.toml` (the user-wide
//! settings). Each value read from them remembers which file it came from.

use anyhow::{Context as _, Result, bail};
use contain::grant::Grant;
use protocol::ReadAccess;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

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

/// Sets each variable of the `.env` file at `path` that the environment
/// does not already have (the environment wins): settings (`HC_MODEL`, …)
/// and the API key may live there. Call before any thread starts.
pub fn load_dotenv(path: &Path) -> Result<()> {
    if DOTENV.get().is_some() || !path.is_file() {
        return Ok(());
    }
    let mut pairs = Vec::new();
    for pair in
        dotenvy::from_path_iter(path).with_context(|| format!("cannot read {}", path.display()))?
    {
        pairs.push(pair.with_context(|| {
            format!(
                "{}: a line is not NAME=value; fix or remove it",
                path.display()
            )
        })?);
    }
    let mut set = Vec::new();
    for (name, value) in &pairs {
        // An API address from a checkout's `.env` would receive the
        // person's own key: only with a key of its own beside it.
        if let Some(keys) = key_for_base_url(name)
            && !pairs.iter().any(|(n, _)| keys.contains(&n.as_str()))
        {
            eprintln!(
                "hc: {} sets {name} without a key of its own; ignored (set it in the environment to use it)",
                path.display()
            );
            continue;
        }
        if std::env::var_os(name).is_none() {
            // SAFETY: `hc` reads its configuration before it starts any
            // thread (the async runtime comes after).
            #[allow(unsafe_code)]
            unsafe {
                std::env::set_var(name, value);
            }
            set.push(name.clone());
        }
    }
    let _ = DOTENV.set(set);
    Ok(())
}

/// The key variables an API address variable must come with from `.env`.
fn key_for_base_url(name: &str) -> Option<&'static [&'static str]> {
    match name {
        "ANTHROPIC_BASE_URL" => Some(&["ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN"]),
        "OPENAI_BASE_URL" => Some(&["OPENAI_API_KEY"]),
        _ => None,
    }
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
}

/// The user's configuration file.
pub fn user_file() -> Option<PathBuf> {
    let base = std::env::var_os("XDG_CONFIG_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".config")))?;
    Some(base.join("hermitcrab").join("config.toml"))
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
            let table: toml::Table = text
                .parse()
                .with_context(|| format!("{} is not valid TOML", path.display()))?;
            files.push(File {
                path,
                table,
                project,
            });
        }
        Ok(Files { files })
    }

    /// The value of top-level `key`, from the file that wins (the
    /// project's over the user's), with its source.
    pub fn get(&self, key: &str) -> Option<(&toml::Value, Source)> {
        self.files
            .iter()
            .rev()
            .find_map(|f| f.table.get(key).map(|v| (v, f.source())))
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
            other => bail!(
                "{where_}: unknown setting `{other}`; a program may be given `read`, `write`, \
                 `network`, `env` and `timeout_ms`"
            ),
        }
    }
    Ok(grant)
}
