//! `mcp_list_resources` and `mcp_read_resource`: the agent's tools over
//! the resources of the MCP servers up for this run, each call a run of
//! the server's hidden `mcp/NAME/resources` program (read-only: no
//! permission asked).

use super::outcome::Outcome;
use crate::catalog::ProgramTool;
use crate::request::ToolDef;
use protocol::program::ProgramBody;
use serde_json::{Value, json};

/// The two tools' names.
pub const RESOURCE_TOOLS: [&str; 2] = ["mcp_list_resources", "mcp_read_resource"];

/// Their definitions, offered when a server is up.
pub fn definitions() -> Vec<Value> {
    vec![
        json!({
            "name": "mcp_list_resources",
            "description": "Lists the resources an MCP server offers (files, records, \
                documents it can hand over), by URI. `server` names the server; it may be \
                left out when only one is connected.",
            "input_schema": {"type": "object", "properties": {
                "server": {"type": "string", "description": "The MCP server's name."}}}
        }),
        json!({
            "name": "mcp_read_resource",
            "description": "Reads one resource of an MCP server by its URI (from \
                mcp_list_resources).",
            "input_schema": {"type": "object", "properties": {
                "server": {"type": "string", "description": "The MCP server's name."},
                "uri": {"type": "string", "description": "The resource's URI."}},
                "required": ["uri"]}
        }),
    ]
}

/// What a resource call comes to: the run to start (its program and
/// input), or the error result that says what is wrong.
#[allow(clippy::result_large_err)] // (the error is a call's result: not a hot path)
pub fn prepare(
    name: &str,
    input: &Value,
    servers: &[String],
) -> Result<(ProgramTool, Value), Outcome> {
    let server = match (input["server"].as_str(), servers) {
        (Some(server), _) => server,
        (None, [only]) => only.as_str(),
        (None, _) => {
            return Err(Outcome::error(format!(
                "name the MCP server in `server`: one of {}",
                servers.join(", ")
            )));
        }
    };
    if !servers.iter().any(|s| s == server) {
        return Err(Outcome::error(format!(
            "no MCP server `{server}` is connected; connected: {}",
            if servers.is_empty() {
                "none".to_owned()
            } else {
                servers.join(", ")
            }
        )));
    }
    let run_input = match (name, input["uri"].as_str()) {
        ("mcp_read_resource", Some(uri)) => json!({"op": "read", "uri": uri}),
        ("mcp_read_resource", None) => {
            return Err(Outcome::error(
                "invalid input for `mcp_read_resource`: `uri` is required",
            ));
        }
        _ => json!({"op": "list"}),
    };
    let program = format!("mcp/{server}/resources");
    let body = json!({"executable": "builtin:mcp", "input_type": format!("input/{program}"),
                      "read_only": true, "tool": false});
    let body = ProgramBody::parse(&program, &body).map_err(Outcome::error)?;
    let tool = ProgramTool {
        def: ToolDef {
            name: program,
            description: String::new(),
            schema: json!({"type": "object"}),
        },
        body,
        id: String::new(),
        untrusted: false,
    };
    Ok((tool, run_input))
}
