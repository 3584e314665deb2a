//! MCP servers as `hc` configures them: gathered from the person's file
//! (`[mcp_servers.NAME]`), the project's `.mcp.json` and its
//! `config.toml` (both only when the project is trusted), and
//! `--mcp-config` (repeatable; `--strict-mcp-config` uses only those), a
//! later name replacing an earlier; then registered — one service program
//! `program/mcp/NAME` each (what it is, its env keys and header names,
//! never their values), and its resolved configuration handed to the
//! engine for its environment only.

use crate::config::{Files, what};
use anyhow::{Context as _, Result, bail};
use mcp::body::McpProgram;
use mcp::config::{ServerEntry, service_name, tool_prefix};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use substrate::{ChunkDecl, Declaration, NewPlacement, PlacementKey, PlacementType, Substrate};

/// One configured server.
#[derive(Clone, Debug)]
pub struct Configured {
    /// Its name.
    pub name: String,
    /// As written.
    pub entry: ServerEntry,
    /// Where it was written.
    pub source: String,
}

/// A server's name: letters, digits, `-` and `_` (it is part of program
/// names and of the globs its service manages), never `__` nor a last
/// `_` — `__` ends the server's part of `mcp__NAME__TOOL`: a server
/// `gh__x` (or `gh_`) would have its tools (`mcp__gh__x__TOOL`,
/// `mcp__gh___TOOL`) covered by a rule for `gh` (`mcp__gh`), and could
/// name its tools as `gh`'s.
pub fn check_name(name: &str) -> Result<()> {
    let fine = !name.is_empty()
        && name.len() <= 48
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    if fine && !name.contains("__") && !name.ends_with('_') {
        return Ok(());
    }
    Err(crate::exit::exit(
        2,
        format!(
            "MCP server name `{}`: use letters, digits, `-` and `_` (at most 48), never `__` \
             nor a last `_` (`__` ends the server's part of `mcp__NAME__TOOL`)",
            crate::text::shown(name)
        ),
    ))
}

fn entry_of(name: &str, value: Value, source: &str) -> Result<Configured> {
    check_name(name).map_err(|e| crate::exit::exit(2, format!("{source}: {e:#}")))?;
    let entry: ServerEntry = serde_json::from_value(value)
        .map_err(|e| crate::exit::exit(2, format!("{source}: MCP server `{name}`: {e}")))?;
    Ok(Configured {
        name: name.to_owned(),
        entry,
        source: source.to_owned(),
    })
}

fn from_toml(table: &toml::Table, source: &str) -> Result<Vec<Configured>> {
    let Some(servers) = table.get("mcp_servers") else {
        return Ok(Vec::new());
    };
    let Some(servers) = servers.as_table() else {
        bail!("{source}: `mcp_servers` must be a table of [mcp_servers.NAME] sections");
    };
    servers
        .iter()
        .map(|(name, entry)| {
            let value = serde_json::to_value(entry).unwrap_or(Value::Null);
            entry_of(name, value, source)
        })
        .collect()
}

fn from_json(servers: &serde_json::Map<String, Value>, source: &str) -> Result<Vec<Configured>> {
    servers
        .iter()
        .map(|(name, entry)| entry_of(name, entry.clone(), source))
        .collect()
}

/// One `--mcp-config`: a file, or the JSON itself.
fn from_flag(given: &str) -> Result<Vec<Configured>> {
    let (text, source) = if given.trim_start().starts_with('{') {
        (given.to_owned(), "--mcp-config".to_owned())
    } else {
        let text = std::fs::read_to_string(given)
            .map_err(|e| crate::exit::exit(2, format!("--mcp-config {given}: {e}")))?;
        (text, given.to_owned())
    };
    let value: Value = serde_json::from_str(&text)
        .map_err(|e| crate::exit::exit(2, format!("{source} is not valid JSON: {e}")))?;
    match value.get("mcpServers") {
        Some(Value::Object(servers)) => from_json(servers, &source),
        _ => Err(crate::exit::exit(
            2,
            format!("{source}: expected {{\"mcpServers\": {{NAME: {{\"command\": …}}}}}}"),
        )),
    }
}

/// Every configured server, merged in order (a later name replaces an
/// earlier), sorted by name.
pub fn servers(files: &Files, flags: &[String], strict: bool) -> Result<Vec<Configured>> {
    let mut merged: BTreeMap<String, Configured> = BTreeMap::new();
    let mut add = |list: Vec<Configured>| {
        for server in list {
            merged.insert(server.name.clone(), server);
        }
    };
    if !strict {
        if let Some(user) = files.files.iter().find(|f| !f.project) {
            add(from_toml(&user.table, &user.path.display().to_string())?);
        }
        if let Some(json) = &files.mcp_json {
            add(from_json(&json.servers, &json.path.display().to_string())?);
        }
        if let Some(project) = files.files.iter().find(|f| f.project) {
            add(from_toml(
                &project.table,
                &project.path.display().to_string(),
            )?);
        }
    }
    for given in flags {
        add(from_flag(given)?);
    }
    Ok(merged.into_values().collect())
}

/// The capabilities of a server's process: as configured, else read all,
/// write nothing, network on, env = the keys of its `env`; always the
/// programs of its tools, and `writes` (its own cache, its own tokens).
fn capabilities(server: &Configured, writes: &[&std::path::Path]) -> protocol::Capabilities {
    let mut caps = server
        .entry
        .capabilities
        .clone()
        .unwrap_or_else(|| protocol::Capabilities {
            filesystem: protocol::FilesystemAccess {
                read: protocol::ReadAccess::All,
                write: Vec::new(),
            },
            network: true,
            env: server.entry.env.keys().cloned().collect(),
            programs: Vec::new(),
        });
    caps.programs = vec![
        format!("{}*", tool_prefix(&server.name)),
        format!("{}/*", service_name(&server.name)),
    ];
    for path in writes {
        caps.filesystem
            .write
            .push(path.to_string_lossy().into_owned());
    }
    caps
}

/// Where the tokens of `entry`, resolved as `server`, are kept when it is
/// a server one signs in to (`hc mcp login NAME`).
pub fn sign_in_store(
    entry: &mcp::config::ServerEntry,
    server: &mcp::config::Server,
) -> Option<std::path::PathBuf> {
    let mcp::config::Transport::Http { url, .. } = &server.transport else {
        return None;
    };
    if !entry.signs_in() {
        return None;
    }
    let dir = crate::config::xdg_dir("XDG_CONFIG_HOME", ".config")?;
    Some(mcp::oauth::store_path(&dir, &server.name, url))
}

/// The variables that point a package runner's caches (npx, uvx, pipx
/// run, bunx — and anything that follows XDG) at `dir`, a directory of
/// the server's own: under containment it cannot write the person's
/// `~/.npm` or `~/.cache`, so `npx -y @scope/server` would fail.
fn cache_env(dir: &std::path::Path) -> Vec<(String, String)> {
    let at = |sub: &str| dir.join(sub).to_string_lossy().into_owned();
    vec![
        ("npm_config_cache".into(), at("npm")),
        ("npm_config_update_notifier".into(), "false".into()),
        ("UV_CACHE_DIR".into(), at("uv")),
        ("PIPX_HOME".into(), at("pipx")),
        ("PIP_CACHE_DIR".into(), at("pip")),
        ("BUN_INSTALL_CACHE_DIR".into(), at("bun")),
        ("XDG_CACHE_HOME".into(), at("xdg")),
    ]
}

/// The cache directory of server `name` of the project at `root`:
/// `$XDG_CACHE_HOME/hermitcrab/mcp/PROJECT-HASH/NAME` (the person's, as
/// the package runners' own caches are; not in the project, which a
/// contained process may not write, and one per project, so no project's
/// server fills another's cache). Made when missing.
pub fn cache_dir(root: &std::path::Path, name: &str) -> Result<std::path::PathBuf> {
    let base = crate::config::xdg_dir("XDG_CACHE_HOME", ".cache")
        .context("cannot find your cache directory: set HOME or XDG_CACHE_HOME")?;
    let (project, hash) = crate::project::named_key(root, 6);
    let dir = base
        .join("mcp")
        .join(format!("{project}-{hash}"))
        .join(name);
    std::fs::create_dir_all(&dir)
        .with_context(|| format!("cannot make {} for the MCP server `{name}`", dir.display()))?;
    Ok(dir)
}

/// The service program's body: what it is, with no secret in it.
fn service_body(server: &Configured, error: Option<&str>, writes: &[&std::path::Path]) -> Value {
    let entry = &server.entry;
    let transport = entry.transport_name();
    let raw = serde_json::to_value(entry).unwrap_or_default();
    json!({
        "executable": "builtin:mcp",
        "runtime": "service",
        // it reads the programs (its own tools among them); it writes only
        // its own tree and the tool programs it manages
        "boundary": "open",
        "text": format!("The MCP server `{}` ({transport}: {}).", server.name, what(&raw)),
        "capabilities": capabilities(server, writes),
        "mcp": {
            "server": server.name,
            "transport": transport,
            "command": entry.command,
            "args": entry.args,
            "url": entry.url,
            "env_keys": entry.env.keys().collect::<Vec<_>>(),
            "header_names": entry.headers.keys().collect::<Vec<_>>(),
            "enabled": entry.enabled,
            "error": error,
            "startup_timeout_ms": entry.startup_timeout(),
            "tool_timeout_ms": entry.tool_timeout(),
            "source": server.source,
        },
    })
}

/// Registers `servers`: commits each one's service program where it
/// changed, takes servers no longer configured off `engine/program`, and
/// answers what the engine puts in each service's environment.
pub fn register(
    db: &Substrate,
    root: &std::path::Path,
    servers: &[Configured],
    interactive: bool,
) -> Result<Registered> {
    let mut values = BTreeMap::new();
    let mut declared = BTreeMap::new();
    let mut decl = Declaration::default();
    let lookup = |var: &str| std::env::var(var).ok();
    for server in servers {
        let program = service_name(&server.name);
        let cache = match server.entry.transport_name() {
            "stdio" => Some(cache_dir(root, &server.name)?),
            _ => None,
        };
        let mut store = None;
        let error = match server.entry.resolve(&server.name, &lookup) {
            Ok(mut resolved) => {
                resolved.interactive = interactive;
                resolved.oauth_store = sign_in_store(&server.entry, &resolved);
                store.clone_from(&resolved.oauth_store);
                // there already (empty: no tokens), so the service's
                // containment grants it to rewrite whenever a sign-in
                // fills it (a home that cannot be written: none granted)
                if let Some(path) = &store {
                    let _ = mcp::oauth::FileStore::new(path.clone()).ensure();
                }
                // the service shows each secret as written, never its value
                let handed = mcp::config::Handed {
                    server: resolved,
                    redact: server.entry.redactions(&lookup),
                };
                let config = serde_json::to_string(&handed).context("cannot encode a server")?;
                let id = format!("program/{program}");
                let mut env = vec![(mcp::SERVER_ENV.to_owned(), config)];
                // (the server's own entry wins: it may name a cache of its own)
                env.extend(
                    cache
                        .as_deref()
                        .map(cache_env)
                        .unwrap_or_default()
                        .into_iter()
                        .filter(|(k, _)| !server.entry.env.contains_key(k)),
                );
                values.insert(id, env);
                None
            }
            Err(why) => Some(why.to_string()),
        };
        // a server signed in to refreshes its own tokens, and writes
        // nothing else of the person's
        let writes: Vec<&std::path::Path> = cache
            .as_deref()
            .into_iter()
            .chain(store.as_deref().filter(|p| p.is_file()))
            .collect();
        let body = service_body(server, error.as_deref(), &writes);
        let id = format!("program/{program}");
        declared.insert(id.clone(), (program.clone(), body.clone()));
        let live = db.read(|snap| {
            Ok::<_, substrate::Error>(
                snap.is_instance_of(&id, "engine/program")?
                    && snap.body(&id)?.as_ref() == Some(&body),
            )
        })?;
        if !live {
            decl.chunks.push(
                ChunkDecl::with_id(&id)
                    .name(program)
                    .body(body)
                    .on(NewPlacement::instance("engine/program")),
            );
        }
    }
    for gone in registered(db)? {
        if !servers.iter().any(|s| service_name(&s.name) == gone) {
            decl.remove.placements.push(PlacementKey {
                chunk: format!("program/{gone}"),
                scope: "engine/program".into(),
                kind: PlacementType::Instance,
            });
        }
    }
    if !decl.chunks.is_empty() || !decl.remove.placements.is_empty() {
        db.commit(decl, None)
            .context("cannot record the MCP servers")?;
    }
    // the person's own configuration names these: theirs, wherever the
    // chunk came from
    let ids: Vec<String> = servers
        .iter()
        .map(|s| format!("program/{}", service_name(&s.name)))
        .collect();
    crate::origin::vouch(db, &ids)?;
    Ok(Registered { values, declared })
}

/// What registering the servers gave the engine.
pub struct Registered {
    /// Each server program's environment (by program id).
    pub values: BTreeMap<String, Vec<(String, String)>>,
    /// Each server program as the person's configuration declares it (id
    /// → name and body): theirs whoever committed the same before them.
    pub declared: BTreeMap<String, (String, serde_json::Value)>,
}

/// The service programs of MCP servers on `engine/program` now.
fn registered(db: &Substrate) -> Result<Vec<String>> {
    let programs = programs(db)?;
    Ok(programs
        .chunks
        .iter()
        .filter(|c| McpProgram::parse(&c.body_value()).mcp.is_some())
        .filter_map(|c| c.name.clone())
        .collect())
}

/// Every program on `engine/program` now, bodies included.
fn programs(db: &Substrate) -> Result<substrate::ScopeResult> {
    let opts = substrate::ScopeOpts {
        kind: substrate::TypeFilter::Instance,
        limit: Some(usize::MAX),
        ..substrate::ScopeOpts::default()
    };
    Ok(db.read(|snap| snap.scope(&["engine/program".to_owned()], &opts))?)
}

/// The tool programs each server has on `engine/program` now, by service.
pub fn tools_by_server(db: &Substrate) -> Result<BTreeMap<String, Vec<String>>> {
    let programs = programs(db)?;
    let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for chunk in &programs.chunks {
        if let (Some(name), Some(by)) = (
            &chunk.name,
            McpProgram::parse(&chunk.body_value()).served_by,
        ) {
            out.entry(by).or_default().push(name.clone());
        }
    }
    Ok(out)
}

/// Each registered server as stream-json's `system/init` lists it before
/// the agent starts them: `pending`, `disabled`, or `failed` (its
/// configuration could not be resolved).
pub fn statuses(db: &Substrate) -> Result<Vec<Value>> {
    let programs = programs(db)?;
    Ok(programs
        .chunks
        .iter()
        .filter(|c| {
            c.id.strip_prefix("program/mcp/")
                .is_some_and(|n| !n.contains('/'))
        })
        .filter_map(|c| {
            let mcp = McpProgram::parse(&c.body_value()).mcp?;
            let status = match (mcp.enabled, mcp.error.is_some()) {
                (Some(false), _) => "disabled",
                (_, true) => "failed",
                _ if serving(db, &c.id) => "connected",
                _ if needs_auth(db, &c.id) => "needs-auth",
                _ => "pending",
            };
            Some(json!({"name": mcp.server, "status": status}))
        })
        .collect())
}

/// Whether service program `id` has a process running now.
fn serving(db: &Substrate, id: &str) -> bool {
    processes(db, id)
        .iter()
        .any(|p| p.status == protocol::process::ProcessStatus::Running)
}

/// Whether the last process of service program `id` ended because its
/// server wants the person to sign in
/// ([`protocol::process::EXIT_NEEDS_AUTH`]).
pub fn needs_auth(db: &Substrate, id: &str) -> bool {
    protocol::process::last_needs_auth(processes(db, id))
}

/// The processes of program `id`.
fn processes(db: &Substrate, id: &str) -> Vec<protocol::process::ProcessBody> {
    let opts = substrate::ScopeOpts {
        kind: substrate::TypeFilter::Instance,
        limit: Some(usize::MAX),
        ..substrate::ScopeOpts::default()
    };
    let Ok(read) = db.read(|snap| snap.scope(&[id.to_owned()], &opts)) else {
        return Vec::new();
    };
    read.chunks
        .iter()
        .filter(|c| c.is_on("engine/process", substrate::PlacementType::Instance))
        .map(|c| protocol::process::ProcessBody::parse(&c.body_value()))
        .collect()
}

/// Every configured server started — together, each within its start-up
/// limit — as Claude Code's print mode does before its `system/init`
/// line: each server's name and status (`connected`, `failed`,
/// `needs-auth`, `disabled`). The agent's run finds them started.
pub async fn connect(engine: &engine::Engine) -> Result<Vec<Value>> {
    let programs = programs(engine.db())?;
    let origin = crate::origin::recorded(engine.db())?.unwrap_or_default();
    let servers: Vec<(String, mcp::body::McpFacts)> = programs
        .chunks
        .iter()
        .filter(|c| {
            c.id.strip_prefix("program/mcp/")
                .is_some_and(|n| !n.contains('/'))
        })
        .filter_map(|c| Some((c.id.clone(), McpProgram::parse(&c.body_value()).mcp?)))
        .collect();
    let host = engine::Context::host();
    let started = servers.iter().map(|(id, facts)| async {
        let status = match (facts.enabled, &facts.error) {
            (Some(false), _) => "disabled",
            (_, Some(_)) => "failed",
            _ if origin.distrusts(id) => "failed",
            _ => match engine.service(&host, id, facts.startup_timeout_ms).await {
                Ok(_) => "connected",
                Err(_) if needs_auth(engine.db(), id) => "needs-auth",
                Err(_) => "failed",
            },
        };
        json!({"name": facts.server, "status": status})
    });
    Ok(futures_util::future::join_all(started).await)
}

/// The MCP prompts as slash commands (`mcp__SERVER__PROMPT`), of the
/// servers registered.
pub fn prompt_commands(db: &Substrate) -> Result<Vec<String>> {
    let programs = programs(db)?;
    let mut out = Vec::new();
    for chunk in &programs.chunks {
        let body = McpProgram::parse(&chunk.body_value());
        let Some(facts) = body.mcp else {
            continue;
        };
        for prompt in body.prompts {
            out.push(mcp::config::tool_name(&facts.server, &prompt.name));
        }
    }
    Ok(out)
}

/// The servers of the project's `.mcp.json` at `root` that do not start
/// because the project is not trusted (those not among `kept`, the ones
/// configured).
pub fn untrusted(root: &std::path::Path, kept: &[Configured]) -> Result<Vec<Configured>> {
    let Some(json) = crate::config::McpJson::read(root)? else {
        return Ok(Vec::new());
    };
    Ok(json
        .servers
        .into_iter()
        .filter(|(name, _)| !kept.iter().any(|k| k.name == *name))
        .map(|(name, value)| Configured {
            name,
            entry: serde_json::from_value(value).unwrap_or_default(),
            source: json.path.display().to_string(),
        })
        .collect())
}

/// What a server that is not started because the project is not trusted
/// shows.
pub const UNTRUSTED: &str = "not started: untrusted (`hc trust` lets the project's servers start)";
