//! `hc config`: every resolved setting with its value and where it came
//! from (flag, environment, project file, user file, default); secrets
//! shown as set or not, never printed. `--edit` opens the project's file.

use crate::config::Source;
use crate::settings::{self, Flags, SCALARS};
use crate::style::{bold, dim};
use anyhow::{Context as _, Result, bail};
use serde_json::{Value, json};

/// Variables shown as set or not, never their value.
const SECRETS: &[&str] = &[
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_AUTH_TOKEN",
    "OPENAI_API_KEY",
];
/// Variables shown with their value.
const PLAIN: &[&str] = &["ANTHROPIC_BASE_URL", "OPENAI_BASE_URL"];

/// `hc config [--json] [--edit]`.
pub fn config(as_json: bool, edit: bool, flags: Flags) -> Result<()> {
    let here = std::env::current_dir().context("cannot read the working directory")?;
    let project = crate::project::Project::find(&here)?;
    let path = project.root.join(crate::project::DIR).join("config.toml");
    if edit {
        open_editor(&path)?;
    }
    let mut rows = rows(&project.config(crate::trust::Ask::Quietly)?, &flags)?;
    rows.push(store_row(&project)?);
    if as_json {
        let list: Vec<Value> = rows
            .iter()
            .map(|(n, v, s)| json!({"name": n, "value": v, "source": s}))
            .collect();
        println!("{}", serde_json::to_string_pretty(&list)?);
        return Ok(());
    }
    println!("{}", dim(&format!("project file {}", path.display())));
    for (name, value, source) in rows {
        let shown = match &value {
            Value::Null => "—".to_owned(),
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        println!(
            "{}  {:<28}  {}",
            bold(&format!("{name:<22}")),
            crate::style::shown(&shown),
            dim(&crate::style::shown(&source))
        );
    }
    Ok(())
}

/// Opens `path` in `$VISUAL` or `$EDITOR` (else `vi`) and waits for it.
pub(crate) fn open_editor(path: &std::path::Path) -> Result<()> {
    let editor = std::env::var("VISUAL")
        .or_else(|_| std::env::var("EDITOR"))
        .unwrap_or_else(|_| "vi".into());
    let status = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!("{editor} \"$1\""))
        .arg("hc-config")
        .arg(path)
        .status()
        .with_context(|| format!("cannot start the editor `{editor}` (set EDITOR)"))?;
    if !status.success() {
        bail!("the editor `{editor}` exited {status}");
    }
    Ok(())
}

/// Where the substrate is kept, as a row (a server without its password).
fn store_row(project: &crate::project::Project) -> Result<(String, Value, String)> {
    let (url, source) = project.store()?;
    let value = match url {
        Some(url) => json!(substrate::shown_store(&url)),
        None => json!(project.database().display().to_string()),
    };
    Ok(("store".into(), value, source.to_string()))
}

/// The project's trust state, as a row.
fn trust_row(trust: &crate::trust::Trust) -> (String, Value, String) {
    use crate::trust::Trust;
    let (value, source) = match trust {
        Trust::NotNeeded => (
            json!("not needed"),
            "its files ask for nothing that needs trust".to_owned(),
        ),
        Trust::Trusted(since) => (
            json!("trusted"),
            format!("since {since} (`hc trust --revoke` to stop)"),
        ),
        Trust::Ignored { asked, changed } => (
            json!({"trusted": false, "ignored": asked}),
            if *changed {
                "its files changed since it was trusted; `hc trust` to allow them".to_owned()
            } else {
                "`hc trust` to allow what its files ask for".to_owned()
            },
        ),
    };
    ("trust".into(), value, source)
}

/// Every setting as (name, value, where it came from).
fn rows(files: &crate::config::Files, flags: &Flags) -> Result<Vec<(String, Value, String)>> {
    let (resolved, config) = settings::resolve(files, flags, false)?;
    let mut rows: Vec<(String, Value, String)> = Vec::new();
    for (name, _) in SCALARS {
        match resolved.iter().find(|r| r.name == *name) {
            Some(r) => rows.push((r.name.clone(), r.value.clone(), r.source.to_string())),
            None => rows.push(((*name).to_owned(), Value::Null, "not set".into())),
        }
    }
    for r in resolved
        .iter()
        .filter(|r| settings::RULE_LISTS.contains(&r.name.as_str()))
    {
        rows.push((
            format!("permissions.{}", r.name),
            r.value.clone(),
            r.source.to_string(),
        ));
    }
    for hook in &config.hooks {
        rows.push((
            "hooks".into(),
            serde_json::to_value(hook)?,
            "config files".into(),
        ));
    }
    for dir in &config.add_dirs {
        rows.push(("add_dirs".into(), json!(dir), "--add-dir".into()));
    }
    if let Some(name) = &flags.agent {
        // (the preset's settings are over the others: its model among them)
        rows.push(("agent".into(), json!(name), "--agent".into()));
        rows.push(("agent.model".into(), json!(config.model), "--agent".into()));
    }
    if let Some((_, source)) = files.get("server_tools") {
        rows.push((
            "server_tools".into(),
            json!(config.server_tools),
            source.to_string(),
        ));
    }
    let containment = if files.containment_off()? {
        "off"
    } else {
        "on"
    };
    let source = files.get("containment").map_or(Source::Default, |(_, s)| s);
    rows.push(("containment".into(), json!(containment), source.to_string()));
    let cgroups = contain::bounds::Cgroups::detect();
    rows.push((
        "bounds".into(),
        json!({
            "processes": contain::bounds::DEFAULT_PROCESSES,
            "memory": contain::bounds::show_size(contain::bounds::default_memory()),
            "by": contain::bounds::Cgroups::describe(cgroups.as_ref()),
        }),
        "default (per program: processes, memory under [programs.NAME])".into(),
    ));
    for (program, grant) in &files.grants()? {
        let read = grant
            .read
            .as_ref()
            .map(|r| serde_json::to_value(r).unwrap_or_default());
        let memory = grant.memory.map(contain::bounds::show_size);
        let value = json!({"read": read, "write": grant.write, "network": grant.network,
            "env": grant.env, "timeout_ms": grant.timeout_ms, "processes": grant.processes,
            "memory": memory});
        rows.push((format!("programs.{program}"), value, "config files".into()));
    }
    for server in crate::mcp_config::servers(files, &flags.mcp_config, flags.strict_mcp_config)? {
        let e = &server.entry;
        let raw = serde_json::to_value(e).unwrap_or_default();
        let value = json!({"transport": e.transport_name(), "command": e.command, "args": e.args,
            "url": e.url, "env": e.env.keys().collect::<Vec<_>>(),
            "headers": e.headers.keys().collect::<Vec<_>>(), "enabled": e.enabled,
            "grants": crate::config::grants(&raw)});
        rows.push((format!("mcp_servers.{}", server.name), value, server.source));
    }
    rows.extend(knowledge_rows(&config)?);
    rows.push(trust_row(&files.trust));
    for var in SECRETS {
        let set = std::env::var(var).is_ok_and(|v| !v.trim().is_empty());
        rows.push((
            (*var).to_owned(),
            json!(if set { "set" } else { "not set" }),
            env_source(var),
        ));
    }
    for var in PLAIN {
        if let Ok(value) = std::env::var(var) {
            rows.push(((*var).to_owned(), json!(value), env_source(var)));
        }
    }
    Ok(rows)
}

/// Where a variable came from: the project's `.env`, or the environment.
fn env_source(var: &str) -> String {
    match crate::config::from_dotenv(var) {
        true => ".env".into(),
        false => "environment".into(),
    }
}

/// The instruction files, skills, custom agents and command files a run
/// here would find,
/// each with where it is.
fn knowledge_rows(config: &agent::AgentConfig) -> Result<Vec<(String, Value, String)>> {
    let here = std::env::current_dir().context("cannot read the working directory")?;
    let root = crate::project::Project::find(&here).map_or(here.clone(), |p| p.root);
    let home = std::env::var_os("HOME").map(std::path::PathBuf::from);
    let user = config.user_config_dir.as_deref().map(std::path::Path::new);
    let mut rows = Vec::new();
    let places = agent::sources::context::Places {
        root: &root,
        working: Some(&here),
        user_dir: user,
        home: home.as_deref(),
    };
    for file in agent::sources::context::read_instructions(&places) {
        let size = json!(format!("{} bytes", file.text.len()));
        rows.push(("instructions".to_owned(), size, file.path));
    }
    let (skills, skipped) = agent::sources::skills::find(&root, user, home.as_deref());
    for skill in skills {
        rows.push((
            format!("skills.{}", skill.name),
            json!(skill.description),
            skill.path,
        ));
    }
    let (agents, odd) = agent::sources::agents::find(&root, user, home.as_deref());
    for def in agents {
        rows.push((
            format!("agents.{}", def.name),
            json!(def.description),
            def.path.display().to_string(),
        ));
    }
    let (commands, broken) = crate::commands::find(&root);
    for command in commands {
        let from = command.path.display().to_string();
        rows.push((
            format!("commands.{}", command.name),
            json!(command.description),
            from,
        ));
    }
    for why in skipped.into_iter().chain(odd).chain(broken) {
        rows.push(("skipped".to_owned(), json!(why), "files".to_owned()));
    }
    Ok(rows)
}

/// `hc trust [--revoke | --list]`, in the project here.
pub fn trust(revoke: bool, list: bool) -> Result<()> {
    if list {
        return list_trusted();
    }
    let here = std::env::current_dir().context("cannot read the working directory")?;
    let project = crate::project::Project::find(&here)?;
    if revoke {
        return crate::trust::revoke(&project.root);
    }
    let (files, dotenv) = project.read_files()?;
    crate::trust::trust(&project.root, files, dotenv)?;
    let (db, _) = project.open()?;
    if let Some(was) = crate::origin::trust(&db, &project.database())? {
        println!("  · its substrate, made elsewhere, is yours now:");
        for item in crate::origin::ignored(&was) {
            println!("    {}", crate::style::shown(&item));
        }
        println!("    and its memory from then on is carried into yours");
    }
    Ok(())
}

/// `hc trust --list`.
fn list_trusted() -> Result<()> {
    let trusted = crate::trust::trusted()?;
    if trusted.is_empty() {
        println!("no project is trusted; `hc trust` in a project trusts it");
        return Ok(());
    }
    for (path, since) in &trusted {
        println!("{path}  {}", crate::style::dim(&format!("since {since}")));
    }
    Ok(())
}
