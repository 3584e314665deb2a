//! `hc mcp list|get|add|remove` (`login|logout`: [`super::mcp_auth`]),
//! in the shape of `claude mcp`: `list` and
//! `get` start the servers (as a run would) to say whether each connects
//! and what tools it has; `add` and `remove` edit `.mcp.json` (`--scope
//! project`, the default) or the person's `config.toml` (`--scope user`).

use crate::config::{MCP_JSON, what};
use crate::mcp_config::{self, Configured};
use crate::project::Project;
use anyhow::{Context as _, Result, bail};
use engine::{Context, Engine};
use hc_host::open::{Find, Staged};
use mcp::config::{ServerEntry, service_name};
use serde_json::{Value, json};
use std::collections::BTreeMap;

/// Where `add` writes and `remove` looks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Scope {
    /// The project's `.mcp.json` (shared with everyone who clones it).
    Project,
    /// Your own `config.toml` (every project of yours).
    User,
}

/// What `hc mcp add` was given.
#[derive(clap::Args)]
pub struct Add {
    /// The server's name (its tools are `mcp__NAME__TOOL`).
    pub name: String,
    /// project (.mcp.json) or user (your config.toml).
    #[arg(long, short = 's', value_enum, default_value = "project")]
    pub scope: Scope,
    /// stdio, http or sse.
    #[arg(long, short = 't', default_value = "stdio")]
    pub transport: String,
    /// A header for an HTTP server, `KEY: VALUE` (repeatable).
    #[arg(long = "header", short = 'H', value_name = "HEADER")]
    pub headers: Vec<String>,
    /// A variable for a stdio server, `KEY=VALUE` (repeatable).
    #[arg(long = "env", short = 'e', value_name = "KEY=VALUE")]
    pub env: Vec<String>,
    /// The command and its arguments, or the URL.
    #[arg(trailing_var_arg = true, allow_hyphen_values = true, required = true)]
    pub target: Vec<String>,
}

/// One server, started or not, and its tools.
struct Checked {
    server: Configured,
    status: String,
    error: Option<String>,
    tools: Vec<String>,
}

impl Checked {
    fn json(&self) -> Value {
        let e = &self.server.entry;
        json!({
            "name": self.server.name, "transport": e.transport_name(), "status": self.status,
            "error": self.error, "tools": self.tools, "source": self.server.source,
            "command": e.command, "args": e.args, "url": e.url,
            "env": e.env.keys().collect::<Vec<_>>(), "headers": e.headers.keys().collect::<Vec<_>>(),
            "grants": crate::config::grants(&serde_json::to_value(e).unwrap_or_default()),
        })
    }
}

/// Starts every configured server (each within its startup limit) and
/// answers where each stands. Where there is no project, none is made:
/// the servers are listed, not started.
fn check(only: Option<&str>) -> Result<Vec<Checked>> {
    let here = std::env::current_dir().context("cannot read the working directory")?;
    if !here
        .ancestors()
        .any(|d| d.join(crate::project::DIR).is_dir())
    {
        return unstarted(&here, only);
    }
    let prepared = Staged::here(Find::Existing, crate::trust::Ask::Never)?.prepare(false)?;
    let mut servers = mcp_config::servers(&prepared.files, &[], false)?;
    if let Some(name) = only {
        servers.retain(|s| s.name == name);
    }
    let prepared = prepared.register(&crate::settings::Flags::default(), false)?;
    let untrusted = untrusted(&prepared.project, &servers, only)?;
    crate::runtime()?.block_on(async move {
        let host = prepared.open()?;
        let engine = &host.engine;
        let checks = servers.iter().map(|s| start(engine, s));
        let statuses = futures_util::future::join_all(checks).await;
        let tools = mcp_config::tools_by_server(engine.db())?;
        host.close().await;
        let mut all: Vec<Checked> = servers
            .into_iter()
            .zip(statuses)
            .map(|(server, (status, error))| Checked {
                tools: tools
                    .get(&service_name(&server.name))
                    .cloned()
                    .unwrap_or_default(),
                server,
                status: status.to_owned(),
                error,
            })
            .collect();
        all.extend(untrusted);
        Ok(all)
    })
}

/// The servers configured for `dir`, where there is no project: listed,
/// not started (starting one takes a project's engine).
fn unstarted(dir: &std::path::Path, only: Option<&str>) -> Result<Vec<Checked>> {
    let files = crate::config::Files::read(&dir.join(crate::project::DIR).join("config.toml"))?;
    let mut servers = mcp_config::servers(&files, &[], false)?;
    servers.retain(|s| only.is_none_or(|o| o == s.name));
    let project = Project {
        root: dir.to_owned(),
    };
    let untrusted = untrusted(&project, &servers, only)?;
    let mut all: Vec<Checked> = servers
        .into_iter()
        .map(|server| Checked {
            server,
            status: "not started".into(),
            error: None,
            tools: Vec::new(),
        })
        .collect();
    all.extend(untrusted);
    Ok(all)
}

/// The servers of the project's `.mcp.json` that do not start because the
/// project is not trusted.
fn untrusted(project: &Project, kept: &[Configured], only: Option<&str>) -> Result<Vec<Checked>> {
    Ok(mcp_config::untrusted(&project.root, kept)?
        .into_iter()
        .filter(|s| only.is_none_or(|o| o == s.name))
        .map(|server| Checked {
            server,
            status: "untrusted".into(),
            error: None,
            tools: Vec::new(),
        })
        .collect())
}

async fn start(engine: &Engine, server: &Configured) -> (&'static str, Option<String>) {
    if !server.entry.enabled {
        return ("disabled", None);
    }
    let lookup = |var: &str| std::env::var(var).ok();
    if let Err(why) = server.entry.resolve(&server.name, &lookup) {
        return ("failed", Some(why.to_string()));
    }
    let program = service_name(&server.name);
    let wait = Some(server.entry.startup_timeout());
    match engine.service(&Context::host(), &program, wait).await {
        Ok(_) => ("connected", None),
        Err(e) if mcp_config::needs_auth(engine.db(), &format!("program/{program}")) => {
            ("needs-auth", Some(e.message))
        }
        Err(e) => ("failed", Some(e.message)),
    }
}

/// `hc mcp list`.
pub fn list(as_json: bool) -> Result<()> {
    let checked = check(None)?;
    if as_json {
        let list: Vec<Value> = checked.iter().map(Checked::json).collect();
        println!("{}", serde_json::to_string_pretty(&list)?);
        return Ok(());
    }
    if checked.is_empty() {
        println!("no MCP servers: add one with `hc mcp add NAME -- COMMAND ARGS…`");
    }
    for c in &checked {
        let raw = serde_json::to_value(&c.server.entry).unwrap_or_default();
        let state = match (&c.error, c.status.as_str()) {
            (_, "needs-auth") => format!(
                "! needs authentication: sign in with `hc mcp login {}`",
                c.server.name
            ),
            (Some(error), _) => format!("✗ failed: {error}"),
            (None, "connected") => format!("✓ connected · {} tools", c.tools.len()),
            (None, "untrusted") => mcp_config::UNTRUSTED.to_owned(),
            (None, "not started") => {
                "not started: there is no project here (run hc in one to start it)".to_owned()
            }
            (None, status) => status.to_owned(),
        };
        println!(
            "{}: {} ({}) - {}",
            c.server.name,
            crate::style::shown(&what(&raw)),
            c.server.entry.transport_name(),
            crate::style::shown(&state)
        );
    }
    Ok(())
}

/// `hc mcp get NAME`.
pub fn get(name: &str, as_json: bool) -> Result<()> {
    let checked = check(Some(name))?;
    let Some(c) = checked.first() else {
        return Err(crate::exit::exit(
            1,
            format!("no MCP server `{name}`: `hc mcp list` shows those configured"),
        ));
    };
    if as_json {
        println!("{}", serde_json::to_string_pretty(&c.json())?);
        return Ok(());
    }
    let view = c.json();
    println!("{name}:");
    if c.status == "untrusted" {
        println!("  {}", mcp_config::UNTRUSTED);
    }
    for key in [
        "status",
        "error",
        "transport",
        "command",
        "args",
        "url",
        "env",
        "headers",
        "grants",
        "source",
    ] {
        match &view[key] {
            Value::Null => {}
            Value::Array(items) if items.is_empty() => {}
            Value::String(s) => println!("  {key}: {}", crate::style::shown(s)),
            other => println!("  {key}: {}", crate::style::shown(&other.to_string())),
        }
    }
    println!("  tools: {}", c.tools.len());
    for tool in &c.tools {
        println!("    {tool}");
    }
    Ok(())
}

/// `hc mcp add`'s words after the name: for an HTTP server the URL, with
/// `--header`/`-H` and `-e` options written after it taken out (they are
/// options, as `claude mcp add` reads them).
fn split_options(add: &mut Add) -> Result<()> {
    if add.transport == "stdio" {
        return Ok(());
    }
    let mut words = std::mem::take(&mut add.target).into_iter();
    while let Some(word) = words.next() {
        let list = match word.as_str() {
            "--header" | "-H" => &mut add.headers,
            "--env" | "-e" => &mut add.env,
            _ => {
                add.target.push(word);
                continue;
            }
        };
        match words.next() {
            Some(value) => list.push(value),
            None => bail!("{word} needs a value"),
        }
    }
    Ok(())
}

/// The entry `hc mcp add` writes.
fn entry_of(add: &Add) -> Result<Value> {
    let mut entry = serde_json::Map::new();
    match add.transport.as_str() {
        "stdio" => {
            let Some((command, args)) = add.target.split_first() else {
                bail!("say what to run: hc mcp add {} -- COMMAND ARGS…", add.name);
            };
            entry.insert("command".into(), json!(command));
            entry.insert("args".into(), json!(args));
        }
        "http" | "sse" => {
            let [url] = add.target.as_slice() else {
                bail!(
                    "say where: hc mcp add --transport {} {} URL",
                    add.transport,
                    add.name
                );
            };
            entry.insert("type".into(), json!(add.transport));
            entry.insert("url".into(), json!(url));
        }
        other => bail!("--transport is stdio, http or sse, not `{other}`"),
    }
    let pairs = |list: &[String], sep: char, what: &str| -> Result<BTreeMap<String, String>> {
        list.iter()
            .map(|item| match item.split_once(sep) {
                Some((k, v)) => Ok((k.trim().to_owned(), v.trim().to_owned())),
                None => bail!("{what} `{item}` must be KEY{sep}VALUE"),
            })
            .collect()
    };
    let env = pairs(&add.env, '=', "-e")?;
    let headers = pairs(&add.headers, ':', "--header")?;
    let stdio = add.transport == "stdio";
    if stdio && !headers.is_empty() {
        bail!("--header is sent with HTTP requests: a stdio server takes -e KEY=VALUE instead");
    }
    if !stdio && !env.is_empty() {
        bail!(
            "-e sets a stdio server's environment: an {} server takes --header 'KEY: VALUE' instead",
            add.transport
        );
    }
    if !env.is_empty() {
        entry.insert("env".into(), json!(env));
    }
    if !headers.is_empty() {
        entry.insert("headers".into(), json!(headers));
    }
    // it must read back as a server entry
    serde_json::from_value::<ServerEntry>(Value::Object(entry.clone()))
        .map_err(|e| anyhow::anyhow!("not a server entry: {e}"))?;
    Ok(Value::Object(entry))
}

/// `hc mcp add`.
pub fn add(mut add: Add) -> Result<()> {
    mcp_config::check_name(&add.name)?;
    split_options(&mut add)?;
    let entry = entry_of(&add)?;
    let path = match add.scope {
        Scope::Project => edit_json(|servers| {
            servers.insert(add.name.clone(), entry.clone());
            true
        })?,
        Scope::User => edit_toml(|servers| {
            let table = toml_of(&entry)?;
            servers.insert(&add.name, toml_edit::Item::Table(table));
            Ok(true)
        })?,
    };
    println!("added MCP server `{}` to {}", add.name, path.display());
    if add.scope == Scope::Project {
        println!("(a project's servers start once you trust it: `hc trust`)");
    }
    Ok(())
}

/// `hc mcp remove`.
pub fn remove(name: &str, scope: Option<Scope>) -> Result<()> {
    let scopes = match scope {
        Some(s) => vec![s],
        None => vec![Scope::Project, Scope::User],
    };
    for scope in scopes {
        let removed = match scope {
            Scope::Project => edit_json(|servers| servers.remove(name).is_some()),
            Scope::User => edit_toml(|servers| Ok(servers.remove(name).is_some())),
        };
        match removed {
            Ok(path) => {
                println!("removed MCP server `{name}` from {}", path.display());
                return Ok(());
            }
            Err(e) if e.downcast_ref::<NotThere>().is_some() => continue,
            Err(e) => return Err(e),
        }
    }
    Err(crate::exit::exit(
        1,
        format!(
            "no MCP server `{name}` in {MCP_JSON} or your config.toml: `hc mcp list` shows them"
        ),
    ))
}

/// The server was not in the file looked at.
#[derive(Debug)]
struct NotThere;

impl std::fmt::Display for NotThere {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("not there")
    }
}

impl std::error::Error for NotThere {}

/// Changes the project's `.mcp.json` servers with `change` (false: it
/// changed nothing, and nothing is written) — made when there is none.
fn edit_json(
    change: impl FnOnce(&mut serde_json::Map<String, Value>) -> bool,
) -> Result<std::path::PathBuf> {
    let here = std::env::current_dir().context("cannot read the working directory")?;
    let project = Project::find_or_init(&here, &hc_host::trust::Ask::Never)?;
    let path = project.root.join(MCP_JSON);
    let mut doc: Value = match std::fs::read_to_string(&path) {
        Ok(text) => serde_json::from_str(&text)
            .map_err(|e| anyhow::anyhow!("{} is not valid JSON: {e}", path.display()))?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => json!({}),
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", path.display())),
    };
    let Some(root) = doc.as_object_mut() else {
        bail!("{} must be a JSON object", path.display());
    };
    let servers = root.entry("mcpServers").or_insert_with(|| json!({}));
    let Some(servers) = servers.as_object_mut() else {
        bail!("{}: `mcpServers` must be an object", path.display());
    };
    if !change(servers) {
        return Err(NotThere.into());
    }
    let text = serde_json::to_string_pretty(&doc)? + "\n";
    std::fs::write(&path, text).with_context(|| format!("cannot write {}", path.display()))?;
    Ok(path)
}

/// Changes the person's `[mcp_servers]` with `change`, keeping the rest of
/// their file as they wrote it.
fn edit_toml(
    change: impl FnOnce(&mut toml_edit::Table) -> Result<bool>,
) -> Result<std::path::PathBuf> {
    let Some(path) = crate::config::user_file() else {
        bail!("no user configuration directory: set HOME or XDG_CONFIG_HOME");
    };
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", path.display())),
    };
    let mut doc: toml_edit::DocumentMut = text
        .parse()
        .map_err(|e| anyhow::anyhow!("{} is not valid TOML: {e}", path.display()))?;
    let servers = doc
        .entry("mcp_servers")
        .or_insert_with(|| {
            let mut table = toml_edit::Table::new();
            table.set_implicit(true);
            toml_edit::Item::Table(table)
        })
        .as_table_mut()
        .ok_or_else(|| anyhow::anyhow!("{}: `mcp_servers` must be a table", path.display()))?;
    if !change(servers)? {
        return Err(NotThere.into());
    }
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    std::fs::write(&path, doc.to_string())
        .with_context(|| format!("cannot write {}", path.display()))?;
    Ok(path)
}

/// A server entry (JSON) as a TOML table.
fn toml_of(entry: &Value) -> Result<toml_edit::Table> {
    let text = toml::to_string(entry).context("cannot write the entry as TOML")?;
    let doc: toml_edit::DocumentMut = text.parse().context("cannot read the entry back")?;
    Ok(doc.as_table().clone())
}
