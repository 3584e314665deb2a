//! `--await-initialize`: the newest Agent SDKs send what flags used to
//! carry — MCP servers above all, and `settings`, `disallowedTools`,
//! `additionalDirectories` when `--initialize-fields` names them — in
//! their first line, the `initialize` control request, and end the
//! session unless its answer says each applied. That line is read before
//! anything starts, so all of it applies as the flags would have; it is
//! then answered as any `initialize`.

use super::{RunRequest, wire};
use crate::exit::exit;
use anyhow::Result;
use serde_json::{Value, json};

/// The Claude Code version whose protocol hc speaks (the SDKs name it in
/// what they say).
pub const SPOKEN_VERSION: &str = "2.1.337";

/// What the `initialize` read at launch applied: its fields.
#[derive(Clone, Debug, Default)]
pub struct Launched {
    /// The fields it carried that applied (`mcpServers`, …).
    pub fields: Vec<String>,
}

/// What an `initialize` request may deliver in place of flags.
#[derive(Debug, Default, serde::Deserialize)]
#[serde(default)]
struct Delivered {
    #[serde(rename = "mcpServers")]
    mcp_servers: Option<serde_json::Map<String, Value>>,
    settings: Option<Value>,
    #[serde(rename = "disallowedTools")]
    disallowed_tools: Option<Vec<String>>,
    #[serde(rename = "additionalDirectories")]
    additional_directories: Option<Vec<String>>,
}

/// With `--await-initialize`: the program's first line, taken from
/// `lines` (the one reader of stdin: nothing read ahead is lost) and
/// applied to `request` (its MCP servers, and what `--initialize-fields`
/// names); the line, to answer, and what applied. Refused (exit 2) when
/// the first line is not an `initialize` request.
pub fn read_first(
    request: &mut RunRequest,
    lines: &mut tokio::sync::mpsc::UnboundedReceiver<super::Line>,
) -> Result<Option<(Value, Launched)>> {
    if !request.sdk.await_initialize {
        return Ok(None);
    }
    let refused = |why: &str| {
        exit(
            2,
            format!(
                "--await-initialize: the first line must be the initialize control request \
                 (initialize_not_first): {why}"
            ),
        )
    };
    let first = match lines.blocking_recv() {
        Some(super::Line::Json(value)) => value,
        Some(super::Line::Bad(why)) => return Err(refused(&why)),
        None => return Err(refused("stdin ended")),
    };
    let line = wire::Line::of(&first);
    let asked: wire::Request = wire::read(&line.request).unwrap_or_default();
    if line.kind != "control_request" || asked.subtype != "initialize" {
        return Err(refused(&format!("it is a `{}` line", line.kind)));
    }
    let delivered: Delivered =
        wire::read(&line.request).map_err(|why| refused(&format!("it does not read: {why}")))?;
    Ok(Some((first, apply(delivered, request))))
}

/// What `delivered` carries applied to `request` as flags would be: its
/// MCP servers always, the rest as `--initialize-fields` names; what
/// applied.
fn apply(delivered: Delivered, request: &mut RunRequest) -> Launched {
    let named: Vec<String> = (request.sdk.initialize_fields.iter())
        .flat_map(|f| f.split(','))
        .map(|f| f.trim().to_owned())
        .filter(|f| !f.is_empty())
        .collect();
    let wanted = |field: &str| named.iter().any(|n| n == field);
    let mut launched = Launched::default();
    if let Some(servers) = delivered.mcp_servers {
        let config = json!({ "mcpServers": servers });
        request.flags.mcp_config.push(config.to_string());
        launched.fields.push("mcpServers".into());
    }
    if let Some(settings) = delivered.settings.filter(|_| wanted("settings")) {
        request.sdk.settings = Some(match settings {
            Value::String(text) => text,
            other => other.to_string(),
        });
        launched.fields.push("settings".into());
    }
    if let Some(tools) = delivered
        .disallowed_tools
        .filter(|_| wanted("disallowedTools"))
    {
        request.sdk.disallowed_tools.extend(tools);
        launched.fields.push("disallowedTools".into());
    }
    if let Some(dirs) =
        (delivered.additional_directories).filter(|_| wanted("additionalDirectories"))
    {
        request.flags.add_dirs.extend(dirs);
        launched.fields.push("additionalDirectories".into());
    }
    launched
}
