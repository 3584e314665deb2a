//! Every key a configuration file may hold. A key `hc` does not know is an
//! error naming the file, the line and the closest known key — a mistyped
//! `[permisions]` would otherwise protect nothing, silently.

/// Settings that take one value, with their environment variable.
pub const SCALARS: &[(&str, &str)] = &[
    ("model", "HC_MODEL"),
    ("api", "HC_API"),
    ("max_turns", "HC_MAX_TURNS"),
    ("max_budget_usd", "HC_MAX_BUDGET_USD"),
    ("max_output_tokens", "HC_MAX_OUTPUT_TOKENS"),
    ("thinking", "HC_THINKING"),
    ("permission_mode", "HC_PERMISSION_MODE"),
    ("system_append", "HC_SYSTEM_APPEND"),
    ("context_window", "HC_CONTEXT_WINDOW"),
    ("compact_at", "HC_COMPACT_AT"),
    ("max_depth", "HC_MAX_DEPTH"),
    ("max_parallel_agents", "HC_MAX_PARALLEL_AGENTS"),
    ("memory", "HC_MEMORY"),
    ("blocks", "HC_BLOCKS"),
    ("fast_model", "HC_FAST_MODEL"),
];

/// Settings also read from a second variable, after the first (Claude
/// Code's names): `ANTHROPIC_MODEL`, `ANTHROPIC_SMALL_FAST_MODEL`.
pub const ALSO_ENV: &[(&str, &str)] = &[
    ("model", "ANTHROPIC_MODEL"),
    ("fast_model", "ANTHROPIC_SMALL_FAST_MODEL"),
];

/// Rule lists, under `[permissions]` or at the top of a file (lists from
/// every source add up).
pub const RULE_LISTS: &[&str] = &["allow", "deny", "ask"];

/// Keys of a file's top level that are not settings of their own.
const TABLES: &[&str] = &[
    "permissions",
    "hooks",
    "programs",
    "containment",
    "server_tools",
    "safe_directories",
    "mcp_servers",
    "betas",
    "agents",
    "store",
    "projects",
    "max_background",
    "retry",
    "lease_seconds",
    "telemetry",
    "team",
    "person",
    "models",
];

/// The keys of the `[team]` table: the people whose programs run with
/// the person's authority in the project (decision 19).
pub const TEAM_KEYS: &[&str] = &["trust"];

/// The keys of the `[telemetry]` table.
pub const TELEMETRY_KEYS: &[&str] = &[
    "enabled",
    "endpoint",
    "protocol",
    "headers",
    "resource_attributes",
    "log_user_prompts",
    "log_tool_details",
];

/// The keys of a `[projects."PATH"]` table (the person's file: what
/// applies to the project at that path).
pub const PROJECT_KEYS: &[&str] = &["store", "team"];

/// The keys of an `[agents.hermitcrab]` table (the preset's settings).
pub const PRESET_KEYS: &[&str] = &["model", "fast_model", "identity", "server_tools", "betas"];

/// The keys of a `[mcp_servers.NAME]` table (Claude Code's and Codex's
/// names).
pub const MCP_KEYS: &[&str] = &[
    "type",
    "command",
    "args",
    "env",
    "cwd",
    "url",
    "headers",
    "http_headers",
    "bearer_token_env_var",
    "enabled",
    "startup_timeout_ms",
    "startup_timeout_sec",
    "tool_timeout_ms",
    "tool_timeout_sec",
    "capabilities",
];

/// The keys of a `[[hooks]]` entry.
const HOOK_KEYS: &[&str] = &["event", "command", "matcher", "timeout_ms", "on_failure"];

/// The keys of a `[programs.NAME]` table.
const GRANT_KEYS: &[&str] = &[
    "read",
    "write",
    "network",
    "env",
    "timeout_ms",
    "processes",
    "memory",
];

/// A key a file may not hold: where, and what was probably meant.
#[derive(Debug, PartialEq, Eq)]
pub struct Unknown {
    /// The key's path (`permissions.alow`).
    pub path: String,
    /// The known key closest to it.
    pub closest: Option<&'static str>,
    /// The 1-based line it is on, when found.
    pub line: Option<usize>,
}

impl Unknown {
    /// The error message for `file`.
    pub fn message(&self, file: &std::path::Path) -> String {
        let at = self.line.map_or_else(
            || file.display().to_string(),
            |l| format!("{}:{l}", file.display()),
        );
        let hint = match self.closest {
            Some(known) => format!("; did you mean `{known}`?"),
            None => "; see `hc config` for every setting".to_owned(),
        };
        format!("{at}: unknown setting `{}`{hint}", self.path)
    }
}

/// The first unknown key of `table` (parsed from `text`), if any.
pub fn unknown(table: &toml::Table, text: &str) -> Option<Unknown> {
    let top: Vec<&'static str> = SCALARS
        .iter()
        .map(|(name, _)| *name)
        .chain(RULE_LISTS.iter().copied())
        .chain(TABLES.iter().copied())
        .collect();
    for (key, value) in table {
        if !top.contains(&key.as_str()) {
            return Some(found(&[key], &top, text));
        }
        let nested: Option<(&[&'static str], Vec<&toml::Table>)> = match (key.as_str(), value) {
            ("permissions", toml::Value::Table(t)) => Some((RULE_LISTS, vec![t])),
            ("telemetry", toml::Value::Table(t)) => Some((TELEMETRY_KEYS, vec![t])),
            ("team", toml::Value::Table(t)) => Some((TEAM_KEYS, vec![t])),
            ("hooks", toml::Value::Array(list)) => Some((
                HOOK_KEYS,
                list.iter().filter_map(toml::Value::as_table).collect(),
            )),
            _ => None,
        };
        if let Some((known, tables)) = nested {
            for inner in tables {
                if let Some(k) = inner.keys().find(|k| !known.contains(&k.as_str())) {
                    return Some(found(&[key, k], known, text));
                }
            }
        }
        let named = match key.as_str() {
            "programs" => Some(GRANT_KEYS),
            "mcp_servers" => Some(MCP_KEYS),
            "agents" => Some(PRESET_KEYS),
            "projects" => Some(PROJECT_KEYS),
            _ => None,
        };
        if let (Some(known), toml::Value::Table(entries)) = (named, value) {
            for (name, entry) in entries {
                let Some(entry) = entry.as_table() else {
                    continue;
                };
                if let Some(k) = entry.keys().find(|k| !known.contains(&k.as_str())) {
                    return Some(found(&[key, name, k], known, text));
                }
            }
        }
    }
    None
}

fn found(path: &[&str], known: &[&'static str], text: &str) -> Unknown {
    let last = path.last().copied().unwrap_or_default();
    let closest = known
        .iter()
        .map(|k| (strsim::jaro_winkler(last, k), *k))
        .filter(|(score, _)| *score > 0.7)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, k)| k);
    Unknown {
        path: path.join("."),
        closest,
        line: line_of(text, path),
    }
}

/// The line of the key at `path` in `text` (found by the parser's spans,
/// so quoted keys and inline tables are found too; in an array of tables,
/// the first entry that has it).
fn line_of(text: &str, path: &[&str]) -> Option<usize> {
    use toml::de::{DeTable, DeValue};
    let document = DeTable::parse(text).ok()?;
    let mut tables: Vec<&DeTable<'_>> = vec![document.get_ref()];
    let mut at = None;
    for name in path {
        let (key, value) = tables.iter().find_map(|t| t.get_key_value(*name))?;
        at = Some(key.span().start);
        tables = match value.get_ref() {
            DeValue::Table(t) => vec![t],
            DeValue::Array(items) => items
                .iter()
                .filter_map(|v| match v.get_ref() {
                    DeValue::Table(t) => Some(t),
                    _ => None,
                })
                .collect(),
            _ => Vec::new(),
        };
    }
    Some(text.get(..at?)?.matches('\n').count() + 1)
}
