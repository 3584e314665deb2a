//! Who this host acts for (decision 19, principals): the person, the
//! host, the front end its commits come through — signed on the store it
//! opens, so every commit it makes records them — and whom the person
//! trusts for the project (`[team] trust`), whose programs the engine
//! takes as the person's own.
//!
//! The person is `person = "…"` in the person's own configuration, else
//! `HC_PERSON`, else the user `hc` runs as. On a shared store the
//! database's role stands instead: each person connects as their own, and
//! the database stamps every row with it.

use crate::config::Files;
use anyhow::{Result, bail};
use std::sync::OnceLock;
use substrate::Substrate;

/// The front end this process is, set once at its start.
static FRONT_END: OnceLock<&'static str> = OnceLock::new();

/// Names the front end this process is (`terminal`, `print`, `sdk`,
/// `acp`, `page`, `worker`, `serve`), before it opens a project.
pub fn front_end(name: &'static str) {
    let _ = FRONT_END.set(name);
}

/// The front end this process is (`terminal` unless said).
pub fn via() -> &'static str {
    FRONT_END.get().copied().unwrap_or("terminal")
}

/// The person this host acts for on a file (see the module's docs).
pub fn person() -> String {
    static PERSON: OnceLock<String> = OnceLock::new();
    PERSON
        .get_or_init(|| {
            configured_person()
                .or_else(|| {
                    ["HC_PERSON", "USER", "LOGNAME"].iter().find_map(|v| {
                        std::env::var(v)
                            .ok()
                            .map(|s| s.trim().to_owned())
                            .filter(|s| !s.is_empty())
                    })
                })
                .unwrap_or_else(|| "someone".into())
        })
        .clone()
}

/// `person` in the person's own configuration file (a project's file
/// may not say who you are).
fn configured_person() -> Option<String> {
    let text = std::fs::read_to_string(crate::config::user_file()?).ok()?;
    let table: toml::Table = text.parse().ok()?;
    let person = table.get("person")?.as_str()?.trim();
    (!person.is_empty()).then(|| person.to_owned())
}

/// Signs `db`'s commits as this host's: its person, the host, the front
/// end.
pub fn sign(db: &Substrate) {
    db.sign(substrate::Signer {
        person: person(),
        host: engine::host_name(),
        via: via().to_owned(),
    });
}

/// The people the person trusts for the project at `root`: `[team] trust`
/// of their own file (every project) and its `[projects."PATH".team]
/// trust` (this one), and the project's own `[team] trust` (which applies
/// only once the project is trusted: a checkout cannot name whom you
/// trust).
pub fn trusted(files: &Files, root: &std::path::Path) -> Result<Vec<String>> {
    let root = crate::trust::canonical(root);
    let mut out = Vec::new();
    for file in &files.files {
        let this_project = (!file.project)
            .then(|| {
                file.table
                    .get("projects")?
                    .get(root.to_string_lossy().as_ref())?
                    .get("team")
            })
            .flatten();
        for team in file.table.get("team").into_iter().chain(this_project) {
            out.extend(names_in(team, &file.path)?);
        }
    }
    out.sort();
    out.dedup();
    Ok(out)
}

/// The names a `[team]` table's `trust` lists (`file`: where it is).
fn names_in(team: &toml::Value, file: &std::path::Path) -> Result<Vec<String>> {
    let list = team.get("trust").and_then(toml::Value::as_array);
    let names = match (team.as_table(), list) {
        (Some(t), Some(list)) if t.keys().all(|k| k == "trust") => list,
        _ => bail!(
            "{}: [team] takes one key, trust = [\"NAME\", …] (the people whose programs run \
             with your authority in this project)",
            file.display()
        ),
    };
    let mut out = Vec::new();
    for name in names {
        match name.as_str().map(str::trim) {
            Some(n) if !n.is_empty() => out.push(n.to_owned()),
            _ => bail!(
                "{}: [team] trust lists people by name, e.g. trust = [\"bob\"]",
                file.display()
            ),
        }
    }
    Ok(out)
}

/// What the engine takes as the person's own besides their programs:
/// the people they trust, and hc's own declarations.
pub fn principal(files: &Files, root: &std::path::Path) -> Result<engine::Principal> {
    Ok(engine::Principal::new(
        trusted(files, root)?,
        own_programs(),
    ))
}

/// hc's own program declarations: the bootstrap's programs, by id, with
/// their names.
fn own_programs() -> std::collections::BTreeMap<String, (String, serde_json::Value)> {
    crate::builtins::vocabulary()
        .into_iter()
        .filter(|c| c.placements.iter().any(|p| p.scope == "engine/program"))
        .filter_map(|c| Some((c.id?, (c.name.flatten()?, c.body?))))
        .collect()
}
