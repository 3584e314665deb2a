//! Trusted projects. A project's own files — `.hermitcrab/config.toml` and
//! `.env`, which come with a checkout — may not grant themselves power:
//! hooks, a permission mode that asks less (`bypass`, `accept-edits`),
//! allow rules, capability grants (`[programs.NAME]`), containment off and
//! an API base URL take effect only once the person trusts the project
//! (`hc trust`, or "yes" to the one question a terminal run asks). Trust
//! is recorded in the user's configuration directory (`trusted.toml`) by
//! the project's canonical path and a hash of those files: a change to
//! them asks again. Deny rules, ask rules and settings that only narrow
//! always apply.

use crate::config::{DotEnv, File, user_file};
pub use crate::config::{Trust, canonical};
use anyhow::{Context as _, Result};
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// How a run may settle trust it does not have yet.
#[derive(Clone, Copy)]
pub enum Ask<'a> {
    /// Ask the person, once (when they are there).
    Person(&'a dyn crate::confirm::Confirm),
    /// Ignore what needs trust, saying so on stderr.
    Never,
    /// Ignore it quietly (`hc config` reports it).
    Quietly,
}

/// The trusted projects, as the user's `trusted.toml` holds them.
#[derive(Debug, Default, Serialize, Deserialize)]
struct Store {
    #[serde(default, rename = "project")]
    projects: Vec<Entry>,
}

/// One trusted project.
#[derive(Clone, Debug, Serialize, Deserialize)]
struct Entry {
    path: String,
    hash: String,
    trusted: String,
}

/// The trust store's file.
fn store_path() -> Option<PathBuf> {
    user_file().map(|f| f.with_file_name("trusted.toml"))
}

impl Store {
    fn read() -> Result<Store> {
        let Some(path) = store_path() else {
            return Ok(Store::default());
        };
        match std::fs::read_to_string(&path) {
            Ok(text) => toml::from_str(&text).with_context(|| {
                format!(
                    "{} is not a list of trusted projects; fix it or remove it",
                    path.display()
                )
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Store::default()),
            Err(e) => Err(e).with_context(|| format!("cannot read {}", path.display())),
        }
    }

    fn write(&self) -> Result<()> {
        let path =
            store_path().context("no configuration directory: set HOME or XDG_CONFIG_HOME")?;
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)
                .with_context(|| format!("cannot create {}", dir.display()))?;
        }
        let text = format!(
            "# Projects whose own files may grant themselves power (`hc trust`).\n\n{}",
            toml::to_string(self).context("cannot write the trusted projects")?
        );
        std::fs::write(&path, text).with_context(|| format!("cannot write {}", path.display()))
    }

    fn find(&self, root: &str) -> Option<&Entry> {
        self.projects.iter().find(|e| e.path == root)
    }
}

/// A project's own files, read: what trust is judged on.
pub struct ProjectFiles<'a> {
    /// The project's root, canonical.
    pub root: PathBuf,
    /// Its `config.toml`, parsed (none when it has none).
    pub config: Option<&'a mut File>,
    /// The person's own configuration file's table (what a project's
    /// limits and mode may only tighten).
    pub user: Option<toml::Table>,
    /// Its `.env`.
    pub dotenv: &'a mut DotEnv,
    /// Its `.mcp.json` (servers it would start).
    pub mcp_json: &'a mut Option<crate::config::McpJson>,
    /// What its skills and command files allow without asking, in words
    /// ([`granting_files`]).
    pub granting: Vec<String>,
}

impl ProjectFiles<'_> {
    /// What the files ask for that needs trust, in words.
    pub fn asked(&self) -> Vec<String> {
        let mut asked = match &self.config {
            Some(file) => widening(&file.table, self.user.as_ref()),
            None => Vec::new(),
        };
        asked.extend(
            self.dotenv
                .base_urls()
                .map(|(name, value)| format!("{name}={value} from .env (requests go there)")),
        );
        asked.extend(self.mcp_json.iter().flat_map(crate::config::McpJson::asked));
        asked.extend(self.granting.iter().cloned());
        asked
    }

    /// The hash trust is recorded with (see [`hash_of`]).
    fn hash(&self) -> String {
        hash_of(&self.root, &self.granting)
    }

    /// Drops what needs trust from the files.
    fn strip(&mut self) {
        if let Some(file) = self.config.as_deref_mut() {
            strip(&mut file.table, self.user.as_ref());
        }
        self.dotenv.drop_base_urls();
        *self.mcp_json = None;
    }

    /// Settles trust as `ask` says: keeps what needs it when the project
    /// is trusted (or the person says so now), else drops it.
    pub fn settle(mut self, ask: Ask<'_>) -> Result<Trust> {
        let asked = self.asked();
        if asked.is_empty() {
            return Ok(Trust::NotNeeded);
        }
        let root = self.root.to_string_lossy().into_owned();
        let hash = self.hash();
        let store = Store::read()?;
        let known = store.find(&root).cloned();
        if let Some(entry) = known.as_ref().filter(|e| e.hash == hash) {
            return Ok(Trust::Trusted(entry.trusted.clone()));
        }
        let changed = known.is_some();
        if let Ask::Person(person) = ask
            && person.present()
            && ask_person(person, &root, &asked, changed)
        {
            record(&root, hash)?;
            return Ok(Trust::Trusted(now()));
        }
        if !matches!(ask, Ask::Quietly) {
            eprintln!(
                "hc: {} asks for what needs trust{}, ignored: {}. To allow it: hc trust",
                self.root.display(),
                if changed {
                    " (its files changed since you trusted it)"
                } else {
                    ""
                },
                crate::text::shown(&asked.join("; "))
            );
        }
        self.strip();
        Ok(Trust::Ignored { asked, changed })
    }
}

/// The hash trust is recorded with: the bytes of the project's files at
/// `root` (canonical), and what its skills and commands grant.
fn hash_of(root: &std::path::Path, granting: &[String]) -> String {
    let mut bytes = Vec::new();
    for name in [".hermitcrab/config.toml", ".env", crate::config::MCP_JSON] {
        bytes.extend_from_slice(name.as_bytes());
        bytes.push(0);
        match std::fs::read(root.join(name)) {
            Ok(content) => bytes.extend_from_slice(&content),
            Err(_) => bytes.extend_from_slice(b"\xffabsent"),
        }
        bytes.push(0);
    }
    for item in granting {
        bytes.extend_from_slice(item.as_bytes());
        bytes.push(0);
    }
    let digest = ring::digest::digest(&ring::digest::SHA256, &bytes);
    digest.as_ref().iter().map(|b| format!("{b:02x}")).collect()
}

/// Whether the project at `root` is trusted as its files are now (asking
/// no one).
pub fn trusted_now(root: &std::path::Path) -> Result<bool> {
    let root = canonical(root);
    let hash = hash_of(&root, &granting_files(&root));
    let store = Store::read()?;
    Ok(store
        .find(&root.to_string_lossy())
        .is_some_and(|e| e.hash == hash))
}

/// Asks once, listing what would be enabled.
fn ask_person(
    person: &dyn crate::confirm::Confirm,
    root: &str,
    asked: &[String],
    changed: bool,
) -> bool {
    let mut question = format!(
        "hc: the project {root} {}asks for more than a fresh checkout gets:\n",
        if changed {
            "changed since you trusted it and "
        } else {
            ""
        }
    );
    for item in asked {
        question.push_str(&format!("  · {}\n", crate::text::shown(item)));
    }
    question.push_str("Trust this project and enable them? [y/N] ");
    let answer = person.ask_now(&question).unwrap_or_default();
    matches!(answer.trim().to_lowercase().as_str(), "y" | "yes")
}

fn now() -> String {
    humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string()
}

/// Records that the project at `root` is trusted as its files hash now.
fn record(root: &str, hash: String) -> Result<()> {
    let mut store = Store::read()?;
    store.projects.retain(|e| e.path != root);
    store.projects.push(Entry {
        path: root.to_owned(),
        hash,
        trusted: now(),
    });
    store.write()
}

/// The project's skills and command files that allow tools without
/// asking (`allowed-tools`), in words: what they grant needs trust.
pub fn granting_files(root: &std::path::Path) -> Vec<String> {
    let (skills, _) = agent::sources::skills::find(root, None, None);
    let mut out: Vec<String> = skills
        .iter()
        .filter(|s| s.project && !s.allowed_tools.is_empty())
        .map(|s| {
            format!(
                "the skill `{}` allowing {} without asking",
                s.name,
                s.allowed_tools.join(", ")
            )
        })
        .collect();
    let (commands, _) = crate::commands::find(root);
    out.extend(
        commands
            .iter()
            .filter(|c| c.source == "project" && !c.allowed_tools.is_empty())
            .map(|c| {
                format!(
                    "the command `/{}` allowing {} without asking",
                    c.name,
                    c.allowed_tools.join(", ")
                )
            }),
    );
    out
}

/// What a project table asks for that needs trust, in words (`user`: the
/// person's own table, which a project may only tighten).
pub fn widening(table: &toml::Table, user: Option<&toml::Table>) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(toml::Value::Array(hooks)) = table.get("hooks") {
        for hook in hooks {
            let field = |k: &str| hook.get(k).and_then(toml::Value::as_str).unwrap_or("?");
            out.push(format!(
                "a {} hook running `{}`",
                field("event"),
                field("command")
            ));
        }
    }
    out.extend(loosened(table, user).into_iter().map(|(_, said)| said));
    if let Some(toml::Value::Table(agents)) = table.get("agents") {
        for (name, agent) in agents {
            if agent.get("server_tools").is_some() {
                out.push(format!(
                    "server tools for the `{name}` agent (the API fetches or runs code on its \
                     side, beyond your rules)"
                ));
            }
        }
    }
    if let Some(toml::Value::Array(tools)) = table.get("server_tools")
        && !tools.is_empty()
    {
        let names: Vec<String> = tools
            .iter()
            .map(|t| {
                t.get("name")
                    .and_then(toml::Value::as_str)
                    .unwrap_or("?")
                    .to_owned()
            })
            .collect();
        out.push(format!(
            "the server tools {} (the API fetches or runs code on its side, beyond your rules)",
            names.join(", ")
        ));
    }
    for rule in allow_rules(table) {
        out.push(format!("the allow rule `{rule}`"));
    }
    if let Some(toml::Value::Table(servers)) = table.get("mcp_servers") {
        for (name, entry) in servers {
            let entry = serde_json::to_value(entry).unwrap_or_default();
            out.push(format!(
                "the MCP server `{name}` ({}; {})",
                crate::config::what(&entry),
                crate::config::grants(&entry)
            ));
        }
    }
    if let Some(toml::Value::Table(programs)) = table.get("programs") {
        for (name, grant) in programs {
            out.push(format!("[programs.{name}] {}", inline(grant)));
        }
    }
    if table.get("containment").and_then(toml::Value::as_str) == Some("off") {
        out.push("containment = \"off\" (programs run with all your privileges)".into());
    }
    if let Some(url) = table.get("store").and_then(toml::Value::as_str) {
        out.push(format!(
            "store = \"{}\" (the project's record is kept on that server)",
            substrate::shown_store(url)
        ));
    }
    if let Some(telemetry) = table.get("telemetry") {
        out.push(format!(
            "[telemetry] {} (what every run does is sent where it says)",
            inline(telemetry)
        ));
    }
    if let Some(models) = table.get("models") {
        out.push(format!(
            "[models] {} (the prices a budget is counted at)",
            inline(models)
        ));
    }
    if let Some(team) = table.get("team") {
        out.push(format!(
            "[team] {} (their programs would run with your authority)",
            inline(team)
        ));
    }
    out
}

/// A table's entries on one line.
fn inline(value: &toml::Value) -> String {
    match value.as_table() {
        Some(t) => t
            .iter()
            .map(|(k, v)| format!("{k} = {v}"))
            .collect::<Vec<_>>()
            .join(", "),
        None => value.to_string(),
    }
}

/// The allow rules of a table: at its top, and under `[permissions]`.
fn allow_rules(table: &toml::Table) -> Vec<String> {
    let lists = [
        table.get("allow"),
        table.get("permissions").and_then(|p| p.get("allow")),
    ];
    lists
        .into_iter()
        .flatten()
        .filter_map(toml::Value::as_array)
        .flatten()
        .map(|r| r.as_str().map_or_else(|| r.to_string(), str::to_owned))
        .collect()
}

/// Limits and the permission mode a project sets looser than the person's
/// own configuration (or than the default mode): each key, in words.
fn loosened(table: &toml::Table, user: Option<&toml::Table>) -> Vec<(&'static str, String)> {
    let number = |t: Option<&toml::Table>, key: &str| {
        t.and_then(|t| t.get(key))
            .and_then(|v| v.as_float().or_else(|| v.as_integer().map(|i| i as f64)))
    };
    let mut out = Vec::new();
    for key in [
        "max_budget_usd",
        "max_turns",
        "max_depth",
        "max_parallel_agents",
        "max_background",
    ] {
        if let (Some(theirs), Some(yours)) = (number(Some(table), key), number(user, key))
            && theirs > yours
        {
            out.push((key, format!("{key} = {theirs} (over your {yours})")));
        }
    }
    let mode = |t: Option<&toml::Table>| {
        t.and_then(|t| t.get("permission_mode"))
            .and_then(toml::Value::as_str)
            .and_then(agent::PermissionMode::parse)
    };
    let strictness = |m: agent::PermissionMode| match m {
        agent::PermissionMode::Bypass => 0,
        agent::PermissionMode::AcceptEdits | agent::PermissionMode::Auto => 1,
        agent::PermissionMode::Default => 2,
        agent::PermissionMode::DontAsk => 3,
        agent::PermissionMode::Plan => 3,
    };
    let yours = mode(user).unwrap_or_default();
    if let Some(theirs) = mode(Some(table))
        && strictness(theirs) < strictness(yours)
    {
        let said = table
            .get("permission_mode")
            .and_then(toml::Value::as_str)
            .unwrap_or("?");
        out.push((
            "permission_mode",
            format!(
                "permission_mode = \"{said}\" (asks less than your \"{}\")",
                yours.as_str()
            ),
        ));
    }
    out
}

/// Drops what needs trust from a project table.
fn strip(table: &mut toml::Table, user: Option<&toml::Table>) {
    for (key, _) in loosened(table, user) {
        table.remove(key);
    }
    table.remove("server_tools");
    // A preset's server tools too (`[agents.hermitcrab] server_tools`).
    if let Some(toml::Value::Table(agents)) = table.get_mut("agents") {
        for (_, agent) in agents.iter_mut() {
            if let toml::Value::Table(agent) = agent {
                agent.remove("server_tools");
            }
        }
    }
    table.remove("hooks");
    table.remove("programs");
    table.remove("mcp_servers");
    table.remove("allow");
    if let Some(toml::Value::Table(permissions)) = table.get_mut("permissions") {
        permissions.remove("allow");
    }
    if table.get("containment").and_then(toml::Value::as_str) == Some("off") {
        table.remove("containment");
    }
    table.remove("store");
    table.remove("telemetry");
    table.remove("team");
    table.remove("models");
}

/// `hc trust --revoke` for the project at `root`.
pub fn revoke(root: &std::path::Path) -> Result<()> {
    let shown = canonical(root).to_string_lossy().into_owned();
    let mut store = Store::read()?;
    let before = store.projects.len();
    store.projects.retain(|e| e.path != shown);
    if store.projects.len() == before {
        println!("{shown} was not trusted");
        return Ok(());
    }
    store.write()?;
    println!(
        "{shown} is no longer trusted: its files' hooks, grants and wider permissions are ignored"
    );
    Ok(())
}

/// `hc trust` for the project at `root`, whose files are `files` and
/// `dotenv` as read.
pub fn trust(
    root: &std::path::Path,
    mut files: crate::config::Files,
    mut dotenv: DotEnv,
) -> Result<()> {
    let root = canonical(root);
    let shown = root.to_string_lossy().into_owned();
    let user = files.user_table();
    let mut mcp_json = files.mcp_json.take();
    let granting = granting_files(&root);
    let trusted = ProjectFiles {
        user,
        root,
        config: files.project_mut(),
        dotenv: &mut dotenv,
        mcp_json: &mut mcp_json,
        granting,
    };
    let asked = trusted.asked();
    record(&shown, trusted.hash())?;
    println!("trusted {shown}");
    for item in &asked {
        println!("  · {}", crate::text::shown(item));
    }
    if asked.is_empty() {
        println!("  (its files ask for nothing that needs trust yet; a change to them asks again)");
    }
    Ok(())
}

/// The trusted projects (`hc trust --list`): each one's path, and since
/// when.
pub fn trusted() -> Result<Vec<(String, String)>> {
    let store = Store::read()?;
    Ok(store
        .projects
        .into_iter()
        .map(|e| (e.path, e.trusted))
        .collect())
}
