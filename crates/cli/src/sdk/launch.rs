//! `--await-initialize`: the newest Agent SDKs send what flags used to
//! carry — MCP servers above all, and `settings`, `disallowedTools`,
//! `additionalDirectories` when `--initialize-fields` names them — in
//! their first line, the `initialize` control request, and end the
//! session unless its answer says each applied. That line is read before
//! anything starts, so all of it applies as the flags would have; it is
//! then answered as any `initialize`.

use super::RunRequest;
use crate::exit::exit;
use anyhow::Result;
use serde_json::{Value, json};
use std::io::BufRead as _;

/// The Claude Code version whose protocol hc speaks (the SDKs name it in
/// what they say).
pub const SPOKEN_VERSION: &str = "2.1.337";

/// What an `initialize` may carry that only a launch applies, and the
/// key its answer says so under.
pub const DELIVERED: &[(&str, &str)] = &[
    ("mcpServers", "mcp_servers_applied"),
    ("settings", "settings_applied"),
    ("disallowedTools", "disallowed_tools_applied"),
    ("additionalDirectories", "additional_directories_applied"),
    ("managedSettings", "managed_settings_applied"),
];

/// What the `initialize` read at launch applied: its fields.
#[derive(Clone, Debug, Default)]
pub struct Launched {
    /// The fields it carried that applied (`mcpServers`, …).
    pub fields: Vec<String>,
}

/// With `--await-initialize`: the program's first line, read now and
/// applied to `request` (its MCP servers, and what `--initialize-fields`
/// names); the line, to answer, and what applied. Refused (exit 2) when
/// the first line is not an `initialize` request.
pub fn read_first(request: &mut RunRequest) -> Result<Option<(Value, Launched)>> {
    if !request.sdk.await_initialize {
        return Ok(None);
    }
    let mut line = String::new();
    std::io::stdin().lock().read_line(&mut line).map_err(|e| {
        exit(
            2,
            format!("--await-initialize: cannot read the first line: {e}"),
        )
    })?;
    let first: Value = serde_json::from_str(line.trim()).unwrap_or(Value::Null);
    if first["type"] != "control_request" || first["request"]["subtype"] != "initialize" {
        return Err(exit(
            2,
            "--await-initialize: the first line must be the initialize control request \
             (initialize_not_first)",
        ));
    }
    let named: Vec<String> = (request.sdk.initialize_fields.iter())
        .flat_map(|f| f.split(','))
        .map(|f| f.trim().to_owned())
        .filter(|f| !f.is_empty())
        .collect();
    let asked = &first["request"];
    let mut launched = Launched::default();
    if let Some(servers) = asked.get("mcpServers").filter(|s| s.is_object()) {
        let config = json!({ "mcpServers": servers });
        request.flags.mcp_config.push(config.to_string());
        launched.fields.push("mcpServers".into());
    }
    let wanted = |field: &str| named.iter().any(|n| n == field);
    if let Some(settings) = asked.get("settings").filter(|_| wanted("settings")) {
        request.sdk.settings = Some(match settings {
            Value::String(text) => text.clone(),
            other => other.to_string(),
        });
        launched.fields.push("settings".into());
    }
    if let Some(tools) = (asked.get("disallowedTools").and_then(Value::as_array))
        .filter(|_| wanted("disallowedTools"))
    {
        let tools = tools.iter().filter_map(|t| t.as_str().map(str::to_owned));
        request.sdk.disallowed_tools.extend(tools);
        launched.fields.push("disallowedTools".into());
    }
    if let Some(dirs) = (asked.get("additionalDirectories").and_then(Value::as_array))
        .filter(|_| wanted("additionalDirectories"))
    {
        let dirs = dirs.iter().filter_map(|d| d.as_str().map(str::to_owned));
        request.flags.add_dirs.extend(dirs);
        launched.fields.push("additionalDirectories".into());
    }
    Ok(Some((first, launched)))
}
