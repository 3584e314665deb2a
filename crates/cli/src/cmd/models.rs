//! `hc models`: the models hc knows (the model crate's catalogue) — each
//! alias and what it names today (or what `ANTHROPIC_DEFAULT_*_MODEL`
//! names), prices, context windows — and which of them this key may use,
//! from the API's own list (`GET /v1/models`, or an OpenAI-compatible
//! server's `/models`), kept a day under the person's data directory.

use anyhow::Result;
use model::catalog::{self, ALIASES, MODELS};
use serde::{Deserialize, Serialize};
use serde_json::json;

/// How long the API's list is kept.
const KEPT: std::time::Duration = std::time::Duration::from_secs(24 * 3600);

/// What the API said, kept.
#[derive(Serialize, Deserialize)]
struct Listed {
    /// The API it came from and which key asked (a fingerprint of it,
    /// never the key: another key's list is not this one's).
    asker: String,
    /// When (seconds since the epoch).
    at: u64,
    /// The ids it listed.
    ids: Vec<String>,
}

/// `hc models [--json] [--refresh]`.
pub fn models(as_json: bool, refresh: bool) -> Result<()> {
    let api = std::env::var("HC_API").unwrap_or_default();
    let (config, asker) = match api.trim() {
        "openai" => {
            let c = model::OpenAiConfig::from_env();
            let asker = format!("{} {}", c.base_url, fingerprint(c.api_key.as_deref()));
            (model::ProviderConfig::OpenAi(c), asker)
        }
        _ => {
            let c = model::AnthropicConfig::from_env();
            let key = c.auth.api_key.as_deref().or(c.auth.auth_token.as_deref());
            let asker = format!("{} {}", c.base_url, fingerprint(key));
            (model::ProviderConfig::Anthropic(c), asker)
        }
    };
    let listed = match kept(&asker).filter(|_| !refresh) {
        Some(ids) => Ok(ids),
        None => ask(config, &asker),
    };
    let overrides = catalog::Overrides::from_env();
    match as_json {
        true => print_json(&listed, &overrides),
        false => print_table(&listed, &overrides),
    }
    Ok(())
}

/// A key's fingerprint, for telling one key's kept list from another's.
fn fingerprint(key: Option<&str>) -> String {
    use std::hash::{Hash as _, Hasher as _};
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    key.hash(&mut hasher);
    format!("{:016x}", hasher.finish())
}

/// The API's list, asked now (and kept).
fn ask(config: model::ProviderConfig, asker: &str) -> Result<Vec<String>> {
    let provider = model::Provider::new(config)?;
    let ids = crate::runtime()?.block_on(provider.models())?;
    keep(asker, &ids);
    Ok(ids)
}

/// Where the list is kept.
fn kept_file() -> Option<std::path::PathBuf> {
    Some(hc_host::config::xdg_dir("XDG_DATA_HOME", ".local/share")?.join("models.json"))
}

/// The list kept for `asker`, when it is less than a day old.
fn kept(asker: &str) -> Option<Vec<String>> {
    let text = std::fs::read_to_string(kept_file()?).ok()?;
    let listed: Listed = serde_json::from_str(&text).ok()?;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .ok()?
        .as_secs();
    (listed.asker == asker && now.saturating_sub(listed.at) < KEPT.as_secs()).then_some(listed.ids)
}

/// Keeps `ids` as `asker`'s list (best effort).
fn keep(asker: &str, ids: &[String]) {
    let Some(file) = kept_file() else { return };
    let at = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let listed = Listed {
        asker: asker.to_owned(),
        at,
        ids: ids.to_vec(),
    };
    if let Some(dir) = file.parent() {
        let _ = std::fs::create_dir_all(dir);
    }
    if let Ok(text) = serde_json::to_string(&listed) {
        let _ = std::fs::write(file, text);
    }
}

/// Whether the API listed `entry` (by id or dated id): `None` when it
/// was not asked.
fn available(listed: &Result<Vec<String>>, entry: &catalog::Entry) -> Option<bool> {
    let ids = listed.as_ref().ok()?;
    Some(
        ids.iter()
            .any(|id| id == entry.id || Some(id.as_str()) == entry.dated),
    )
}

/// The aliases naming `id` today.
fn aliases_of(id: &str, overrides: &catalog::Overrides) -> Vec<&'static str> {
    ALIASES
        .iter()
        .map(|(alias, _)| *alias)
        .filter(|alias| catalog::resolve(alias, overrides, false).id == id)
        .collect()
}

fn print_table(listed: &Result<Vec<String>>, overrides: &catalog::Overrides) {
    println!(
        "{:<28} {:<10} {:>9} {:>9} {:>10}  THIS KEY",
        "MODEL", "ALIAS", "$ IN/MTOK", "$ OUT/MTOK", "WINDOW"
    );
    for e in MODELS {
        let alias = aliases_of(e.id, overrides).join(",");
        let this = match available(listed, e) {
            Some(true) => "yes",
            Some(false) => "no",
            None => "?",
        };
        println!(
            "{:<28} {:<10} {:>9} {:>9} {:>10}  {this}",
            e.id, alias, e.price.input, e.price.output, e.window
        );
    }
    if let Ok(ids) = listed {
        for id in ids.iter().filter(|id| catalog::find(id).is_none()) {
            println!(
                "{id:<28} {:<10} {:>9} {:>9} {:>10}  yes (no price known)",
                "", "?", "?", "?"
            );
        }
    }
    match listed {
        Ok(_) => println!("\nthe default: {}", catalog::DEFAULT_MODEL),
        Err(why) => println!(
            "\nthe default: {}; the API was not asked which this key may use: {why:#}",
            catalog::DEFAULT_MODEL
        ),
    }
}

fn print_json(listed: &Result<Vec<String>>, overrides: &catalog::Overrides) {
    let models: Vec<serde_json::Value> = MODELS
        .iter()
        .map(|e| {
            json!({"id": e.id, "dated": e.dated, "display_name": e.display,
                "aliases": aliases_of(e.id, overrides), "price": e.price,
                "context_window": e.window, "max_output": e.max_output.1,
                "available": available(listed, e)})
        })
        .collect();
    let unknown: Vec<&String> = match listed {
        Ok(ids) => ids
            .iter()
            .filter(|id| catalog::find(id).is_none())
            .collect(),
        Err(_) => Vec::new(),
    };
    let out = json!({"default": catalog::DEFAULT_MODEL, "fast": catalog::FAST_MODEL,
        "models": models, "listed_unknown": unknown,
        "not_asked": listed.as_ref().err().map_or(serde_json::Value::Null, |why| json!(format!("{why:#}")))});
    println!("{}", serde_json::to_string_pretty(&out).unwrap_or_default());
}
