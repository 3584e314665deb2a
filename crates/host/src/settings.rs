//! The agent's configuration, resolved once by the host into the
//! `agent-config` chunk (`agent::AgentConfig`): command-line flags over the
//! environment (`HC_MODEL`, …) over the project's file over the user's over
//! the built-in defaults. Every value remembers where it came from, for
//! `hc config`. Model names come from the model crate's catalogue: the
//! default here, an alias (`sonnet`, `opus[1m]`, `opusplan`) resolved
//! once every layer is read ([`resolve_models`]).

use crate::config::{Files, Source};
pub use crate::keys::{RULE_LISTS, SCALARS};
use agent::{AgentConfig, ApiKind, PermissionMode};
use anyhow::{Context, Result, bail};
use serde_json::{Value, json};

/// Built-in defaults: setting name → value.
pub const DEFAULTS: &[(&str, &str)] = &[
    ("model", model::catalog::DEFAULT_MODEL),
    ("api", "anthropic"),
    ("permission_mode", "default"),
];

/// What flags say (each `None` or empty when not given).
#[derive(Clone, Debug, Default)]
pub struct Flags {
    /// `--model` etc., by setting name.
    pub scalars: Vec<(&'static str, String)>,
    /// `--allow`, `--deny`, `--ask`.
    pub rules: Vec<(&'static str, String)>,
    /// `--mcp-config`, each a file or the JSON itself.
    pub mcp_config: Vec<String>,
    /// `--strict-mcp-config`.
    pub strict_mcp_config: bool,
    /// `--agent NAME`: a preset.
    pub agent: Option<String>,
    /// `--add-dir DIR`: more directories the tools may read and write.
    pub add_dirs: Vec<String>,
    /// Hooks given by flag (`--settings`): the person's, as theirs in
    /// their own config file.
    pub hooks: Vec<agent::HookConfig>,
}

/// One resolved setting.
#[derive(Clone, Debug)]
pub struct Resolved {
    /// Its name.
    pub name: String,
    /// Its value (JSON).
    pub value: Value,
    /// Where it came from.
    pub source: Source,
}

/// Resolves every setting; answers them (for `hc config`) and the
/// `agent-config` body they make.
pub fn resolve(
    files: &Files,
    flags: &Flags,
    interactive: bool,
) -> Result<(Vec<Resolved>, AgentConfig)> {
    let mut resolved = Vec::new();
    for (name, var) in SCALARS {
        let found = flags
            .scalars
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| {
                (
                    scalar(v),
                    Source::Flag(format!("--{}", name.replace('_', "-"))),
                )
            })
            .or_else(|| {
                let also = crate::keys::ALSO_ENV.iter().filter(|(n, _)| n == name);
                std::iter::once(*var)
                    .chain(also.map(|(_, v)| *v))
                    .find_map(|var| {
                        std::env::var(var)
                            .ok()
                            .filter(|v| !v.is_empty())
                            .map(|v| (scalar(&v), Source::Env(var.to_owned())))
                    })
            })
            .or_else(|| files.get(name).map(|(v, source)| (toml_to_json(v), source)))
            .or_else(|| {
                DEFAULTS
                    .iter()
                    .find(|(n, _)| n == name)
                    .map(|(_, v)| (json!(v), Source::Default))
            });
        if let Some((value, source)) = found {
            resolved.push(Resolved {
                name: (*name).to_owned(),
                value,
                source,
            });
        }
    }
    for list in RULE_LISTS {
        for file in &files.files {
            // Under `[permissions]`, or at the top of the file.
            let lists = [
                file.table.get("permissions").and_then(|p| p.get(list)),
                file.table.get(*list),
            ];
            for rules in lists.into_iter().flatten() {
                let Some(rules) = rules.as_array() else {
                    bail!(
                        "{}: {list} must be a list of rules, e.g. {list} = [\"shell(git status)\"]",
                        file.path.display()
                    );
                };
                for rule in rules {
                    resolved.push(Resolved {
                        name: (*list).to_owned(),
                        value: toml_to_json(rule),
                        source: file.source(),
                    });
                }
            }
        }
        for (name, rule) in flags.rules.iter().filter(|(n, _)| n == list) {
            resolved.push(Resolved {
                name: (*name).to_owned(),
                value: json!(rule),
                source: Source::Flag(format!("--{name}")),
            });
        }
    }
    let mut config = agent_config(&resolved, files, interactive)?;
    config.hooks.extend(flags.hooks.iter().cloned());
    for dir in &flags.add_dirs {
        add_dir(&mut config, dir).map_err(|e| anyhow::anyhow!("--add-dir {e}"))?;
    }
    if let Some(name) = &flags.agent {
        let model_flag = flags.scalars.iter().any(|(n, _)| *n == "model");
        preset(&mut config, name, files, model_flag)?;
    }
    resolve_models(&mut config, &model::catalog::Overrides::from_env());
    if let Ok(text) = std::env::var("ENABLE_TOOL_SEARCH") {
        config.tool_search = agent::ToolSearch::parse(&text)
            .map_err(|e| anyhow::anyhow!("ENABLE_TOOL_SEARCH: {e}"))?;
    }
    Ok((resolved, config))
}

/// Every model the configuration names, resolved: an alias (`sonnet`,
/// `opus[1m]`, `best`, `opusplan`) to today's model — or the one the
/// person's environment names for its family (`ANTHROPIC_DEFAULT_*_MODEL`,
/// kept for the aliases sub-agents name too); `[1m]` asks for a million
/// tokens of context (the beta, where the model's own window is smaller).
/// `CLAUDE_CODE_SUBAGENT_MODEL` names sub-agents' model.
pub fn resolve_models(config: &mut AgentConfig, overrides: &model::catalog::Overrides) {
    use model::catalog;
    let planning = config.permission_mode == PermissionMode::Plan;
    let main = catalog::resolve(&config.model, overrides, planning);
    config.model = main.id;
    if main.one_m {
        let entry = catalog::find(&config.model);
        if entry.is_none_or(|e| e.beta_1m) && !config.betas.iter().any(|b| b == catalog::BETA_1M) {
            config.betas.push(catalog::BETA_1M.to_owned());
        }
        config.context_window = Some(1_000_000);
    }
    if let Some(fast) = &config.fast_model {
        config.fast_model = Some(catalog::resolve(fast, overrides, false).id);
    }
    for fallback in &mut config.fallback_models {
        *fallback = catalog::resolve(fallback, overrides, planning).id;
    }
    config.model_aliases = overrides.families.iter().cloned().collect();
    config.subagent_model = std::env::var("CLAUDE_CODE_SUBAGENT_MODEL")
        .ok()
        .map(|m| m.trim().to_owned())
        .filter(|m| !m.is_empty());
}

/// Adds `dir` (relative to the working directory, or absolute, or
/// under `~`) to the directories the tools may read and write beside
/// the project: it must be an existing directory (an error names it).
pub fn add_dir(config: &mut AgentConfig, dir: &str) -> Result<std::path::PathBuf> {
    let here = std::env::current_dir().context("cannot read the working directory")?;
    let path = here.join(protocol::paths::expand_home(dir));
    let real = path
        .canonicalize()
        .ok()
        .filter(|p| p.is_dir())
        .ok_or_else(|| {
            anyhow::anyhow!(
                "{dir}: {} is not an existing directory; give a directory that exists",
                path.display()
            )
        })?;
    let text = real.to_string_lossy().into_owned();
    if !config.add_dirs.contains(&text) {
        config.add_dirs.push(text);
    }
    Ok(real)
}

/// The server tools the hermitcrab preset turns on (`design/blocks.md`).
pub fn hermitcrab_server_tools() -> Vec<Value> {
    vec![
        json!({"type": "web_search_20260209", "name": "web_search", "max_uses": 5}),
        json!({"type": "web_fetch_20260209", "name": "web_fetch", "max_uses": 10}),
        json!({"type": "code_execution_20250825", "name": "code_execution"}),
    ]
}

/// The `anthropic-beta` features those server tools need.
pub const HERMITCRAB_BETAS: &[&str] = &["code-execution-web-tools-2026-02-09"];

/// `--agent NAME`: the preset's settings over the resolved ones —
/// `[agents.hermitcrab]` in a config file changes them (a `--model` flag
/// still wins).
fn preset(config: &mut AgentConfig, name: &str, files: &Files, model_flag: bool) -> Result<()> {
    if name != "hermitcrab" {
        bail!(
            "there is no agent preset `{name}`: the one preset is `hermitcrab` (--agent hermitcrab)"
        );
    }
    config.hermitcrab = true;
    config.blocks = true;
    let table = files.files.iter().rev().find_map(|f| {
        let t = f.table.get("agents")?.get("hermitcrab")?.as_table()?;
        Some((t.clone(), f.source()))
    });
    let anthropic = config.api == ApiKind::Anthropic;
    let (mut tools, mut betas) = match anthropic {
        true => (
            hermitcrab_server_tools(),
            HERMITCRAB_BETAS.iter().map(|b| (*b).to_owned()).collect(),
        ),
        false => (Vec::new(), Vec::new()),
    };
    if let Some((table, source)) = table {
        let text = |key: &str| table.get(key).and_then(|v| v.as_str()).map(str::to_owned);
        if let Some(model) = text("model").filter(|_| !model_flag) {
            config.model = model;
        }
        if let Some(fast) = text("fast_model") {
            config.fast_model = Some(fast);
        }
        if let Some(identity) = text("identity") {
            agent::blocks::store::valid_name(&identity)
                .map_err(|e| anyhow::anyhow!("{source}: `agents.hermitcrab.identity`: {e}"))?;
            config.identity = Some(identity);
        }
        if let Some(list) = table.get("server_tools") {
            tools = server_tools(list, &source, "agents.hermitcrab.server_tools")?;
        }
        if let Some(list) = table.get("betas") {
            betas = beta_list(list, &source, "agents.hermitcrab.betas")?;
        }
    }
    if config.server_tools.is_empty() {
        config.server_tools = tools;
    }
    for beta in betas {
        if !config.betas.contains(&beta) {
            config.betas.push(beta);
        }
    }
    Ok(())
}

/// `[models."ID"]` of every file (the project's over the person's, model
/// by model): prices, context windows and reply limits over the
/// catalogue's.
fn models(
    files: &Files,
) -> Result<std::collections::BTreeMap<String, model::catalog::ModelSettings>> {
    let mut out = std::collections::BTreeMap::new();
    for file in &files.files {
        let Some(table) = file.table.get("models") else {
            continue;
        };
        let Some(table) = table.as_table() else {
            bail!(
                "{}: `models` is a table of models, e.g. [models.\"claude-opus-5-5\"] input = 4.0",
                file.path.display()
            );
        };
        for (id, settings) in table {
            let settings = serde_json::to_value(settings)
                .ok()
                .and_then(|v| serde_json::from_value(v).ok())
                .ok_or_else(|| {
                    anyhow::anyhow!(
                        "{}: [models.\"{id}\"] takes input, output, cache_write_5m, \
                         cache_write_1h, cache_read (USD per million tokens), context_window and \
                         max_output (tokens), each a number",
                        file.path.display()
                    )
                })?;
            out.insert(id.clone(), settings);
        }
    }
    Ok(out)
}

/// A value given as text (a flag, a variable): a number or a boolean
/// when it reads as one, else the text — as a config file would type it.
fn scalar(text: &str) -> Value {
    match serde_json::from_str::<Value>(text.trim()) {
        Ok(v @ (Value::Number(_) | Value::Bool(_))) => v,
        _ => json!(text),
    }
}

/// The `agent-config` body of resolved settings; a value of the wrong kind
/// is an error naming where it came from.
fn agent_config(resolved: &[Resolved], files: &Files, interactive: bool) -> Result<AgentConfig> {
    let mut config = AgentConfig {
        interactive,
        user_config_dir: crate::config::user_file()
            .and_then(|p| p.parent().map(|d| d.to_string_lossy().into_owned())),
        working_dir: std::env::current_dir()
            .ok()
            .map(|d| d.to_string_lossy().into_owned()),
        project_trusted: matches!(files.trust, crate::config::Trust::Trusted(_)),
        ..AgentConfig::default()
    };
    for r in resolved {
        apply(&mut config, r)?;
    }
    for rule in config.allow.iter().chain(&config.deny).chain(&config.ask) {
        agent::permissions::Rule::parse(rule).map_err(anyhow::Error::msg)?;
    }
    config.hooks = hooks(files)?;
    if let Some((tools, source)) = files.get("server_tools") {
        config.server_tools = server_tools(tools, &source, "server_tools")?;
    }
    config.betas = betas(files)?;
    config.models = models(files)?;
    // (a lever, `bench` only: no call starts while the reply streams, to
    // measure what starting them early gains)
    #[cfg(feature = "bench")]
    if std::env::var_os("HC_NO_EARLY_TOOLS").is_some() {
        config.early_tools = Some(false);
    }
    Ok(config)
}

/// A `server_tools` list, each entry checked.
fn server_tools(tools: &toml::Value, source: &Source, key: &str) -> Result<Vec<Value>> {
    let Value::Array(list) = toml_to_json(tools) else {
        bail!("{source}: `{key}` must be a list of tables");
    };
    for (n, tool) in list.iter().enumerate() {
        let named = |k: &str| {
            tool.get(k)
                .and_then(Value::as_str)
                .is_some_and(|v| !v.is_empty())
        };
        if !(named("type") && named("name")) {
            bail!(
                "{source}: `{key}` entry {} needs a `type` and a `name`, e.g. \
                 {{type = \"web_search_20250305\", name = \"web_search\"}} (its other keys go to the API as they are)",
                n + 1
            );
        }
    }
    Ok(list)
}

/// The `anthropic-beta` features: `HC_BETAS` (comma separated), else the
/// config files' `betas` list.
fn betas(files: &Files) -> Result<Vec<String>> {
    if let Ok(list) = std::env::var("HC_BETAS") {
        return Ok(split_list(&list));
    }
    match files.get("betas") {
        None => Ok(Vec::new()),
        Some((value, source)) => beta_list(value, &source, "betas"),
    }
}

fn split_list(text: &str) -> Vec<String> {
    text.split([',', ' '])
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect()
}

fn beta_list(value: &toml::Value, source: &Source, key: &str) -> Result<Vec<String>> {
    let list = value.as_array().map(|items| {
        items
            .iter()
            .map(|v| v.as_str().map(str::to_owned))
            .collect::<Option<Vec<_>>>()
    });
    match list.flatten() {
        Some(list) => Ok(list),
        None => bail!(
            "{source}: `{key}` must be a list of beta names, e.g. {key} = [\"code-execution-web-tools-2026-02-09\"]"
        ),
    }
}

/// One resolved setting into `config`; a value of the wrong kind is an
/// error naming where it came from.
fn apply(config: &mut AgentConfig, r: &Resolved) -> Result<()> {
    let text = match &r.value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    let bad = |what: &str| anyhow::anyhow!("{}: `{}` must be {what}, not {text}", r.source, r.name);
    match r.name.as_str() {
        "model" => config.model = text,
        "api" => {
            config.api = match text.as_str() {
                "anthropic" => ApiKind::Anthropic,
                "openai" => ApiKind::Openai,
                _ => return Err(bad("\"anthropic\" or \"openai\"")),
            }
        }
        "max_turns" => config.max_turns = Some(text.parse().map_err(|_| bad("a whole number"))?),
        "max_budget_usd" => {
            let usd: f64 = text.parse().map_err(|_| bad("a number of dollars"))?;
            if usd.is_nan() || usd <= 0.0 {
                return Err(bad("a positive number of dollars"));
            }
            config.max_budget_usd = Some(usd);
        }
        "max_output_tokens" => {
            config.max_output_tokens = Some(text.parse().map_err(|_| bad("a whole number"))?)
        }
        "thinking" => {
            config.thinking = Some(
                text.parse()
                    .map_err(|_| bad("a token budget (a whole number)"))?,
            )
        }
        "context_window" => {
            config.context_window = Some(text.parse().map_err(|_| bad("a whole number"))?)
        }
        "permission_mode" => {
            config.permission_mode = PermissionMode::parse(&text)
                .ok_or_else(|| bad("one of default, accept-edits, plan, auto, bypass, dont-ask (or acceptEdits, bypassPermissions, dontAsk)"))?
        }
        "system_append" => config.system_append = Some(text),
        "compact_at" => {
            let at: f64 = text
                .parse()
                .map_err(|_| bad("a share of the window, e.g. 0.7"))?;
            if !(0.05..=1.0).contains(&at) {
                return Err(bad("a share between 0.05 and 1"));
            }
            config.compact_at = Some(at);
        }
        "max_depth" => config.max_depth = Some(text.parse().map_err(|_| bad("a whole number"))?),
        "max_parallel_agents" => {
            let n: u32 = text.parse().map_err(|_| bad("a whole number, at least 1"))?;
            if n == 0 {
                return Err(bad("a whole number, at least 1"));
            }
            config.max_parallel_agents = Some(n);
        }
        "memory" => config.memory = text.parse().map_err(|_| bad("true or false"))?,
        "blocks" => config.blocks = text.parse().map_err(|_| bad("true or false"))?,
        "fast_model" => config.fast_model = Some(text),
        "allow" => config.allow.push(text),
        "deny" => config.deny.push(text),
        "ask" => config.ask.push(text),
        _ => {}
    }
    Ok(())
}

/// The `[[hooks]]` of every config file, each checked.
fn hooks(files: &Files) -> Result<Vec<agent::HookConfig>> {
    let mut all = Vec::new();
    for file in &files.files {
        let Some(hooks) = file.table.get("hooks") else {
            continue;
        };
        let where_ = file.path.display();
        let Value::Array(list) = toml_to_json(hooks) else {
            bail!(
                "{where_}: `hooks` is a list: write each as [[hooks]] with event, command, matcher, timeout_ms"
            );
        };
        for hook in list {
            let hook: agent::HookConfig = serde_json::from_value(hook.clone())
                .map_err(|e| anyhow::anyhow!("{where_}: a [[hooks]] entry {hook} is not valid: {e} (it takes event, command, matcher, timeout_ms, on_failure)"))?;
            let Some(event) = agent::hook_event(&hook.event) else {
                bail!(
                    "{where_}: hook event `{}` is not one of {} (or Claude Code's {})",
                    hook.event,
                    agent::HOOK_EVENTS.join(", "),
                    agent::CLAUDE_HOOK_EVENTS
                        .iter()
                        .map(|(_, c)| *c)
                        .collect::<Vec<_>>()
                        .join(", ")
                );
            };
            let mut hook = hook;
            hook.event = event.to_owned();
            if hook.callback.is_some() || hook.command.trim().is_empty() {
                bail!("{where_}: a [[hooks]] entry needs a `command`");
            }
            if let Some(m) = hook
                .matcher
                .as_deref()
                .filter(|m| *m != "*" && !m.contains('|'))
            {
                agent::permissions::Rule::parse(m).map_err(anyhow::Error::msg)?;
            }
            all.push(hook);
        }
    }
    Ok(all)
}

/// A TOML value as JSON.
pub fn toml_to_json(value: &toml::Value) -> Value {
    match value {
        toml::Value::String(s) => json!(s),
        toml::Value::Integer(i) => json!(i),
        toml::Value::Float(f) => json!(f),
        toml::Value::Boolean(b) => json!(b),
        toml::Value::Datetime(d) => json!(d.to_string()),
        toml::Value::Array(a) => Value::Array(a.iter().map(toml_to_json).collect()),
        toml::Value::Table(t) => Value::Object(
            t.iter()
                .map(|(k, v)| (k.clone(), toml_to_json(v)))
                .collect(),
        ),
    }
}
