//! What an MCP program's chunk holds beside its program fields, typed as
//! hosts read it: the `mcp` facts (the server; for a server's service
//! program, whether it is enabled, why it could not be configured, how
//! long it may take to start) and, on a server's hidden prompt program,
//! the prompts the server lists.

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;

/// An MCP program's body as a host reads it (every field optional: the
/// program fields are `protocol::program::ProgramBody`'s).
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct McpProgram {
    /// The MCP facts: absent on a program that is not an MCP server's.
    pub mcp: Option<McpFacts>,
    /// The service program that carries out its runs.
    pub served_by: Option<String>,
    /// On a server's prompt program: the prompts it lists.
    #[serde(deserialize_with = "null_as_empty")]
    pub prompts: Vec<Prompt>,
}

impl McpProgram {
    /// The body read as an MCP program's (one that is not reads as none
    /// of it: no facts, no prompts).
    pub fn parse(body: &Value) -> McpProgram {
        McpProgram::deserialize(body).unwrap_or_default()
    }
}

/// The `mcp` object of an MCP program's body.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct McpFacts {
    /// The server's name.
    pub server: String,
    /// A tool program's tool, as the server names it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    /// A service program's: whether the server is to be started (absent:
    /// yes).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
    /// A service program's: why its configuration could not be resolved.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// A service program's: how long the server may take to start.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub startup_timeout_ms: Option<u64>,
}

/// A prompt a server lists (`prompts/list`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Prompt {
    /// Its name.
    pub name: String,
    /// What it is for.
    pub description: Option<String>,
    /// Its arguments, in order.
    #[serde(deserialize_with = "null_as_empty")]
    pub arguments: Vec<PromptArgument>,
}

/// One argument of a prompt.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct PromptArgument {
    /// Its name.
    pub name: String,
    /// What it is.
    pub description: Option<String>,
    /// Whether the prompt needs it.
    pub required: bool,
}

/// A list the server left out or sent as `null`: empty.
fn null_as_empty<'de, D: Deserializer<'de>, T: Deserialize<'de>>(d: D) -> Result<Vec<T>, D::Error> {
    Ok(Option::<Vec<T>>::deserialize(d)?.unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_prompt_program_reads_with_its_prompts_and_a_service_with_its_facts() {
        let prompt = McpProgram::parse(&json!({
            "executable": "builtin:mcp", "served_by": "mcp/docs",
            "mcp": {"server": "docs"},
            "prompts": [{"name": "review", "description": null, "arguments": null},
                        {"name": "fix", "arguments": [{"name": "file", "required": true}]}],
        }));
        assert_eq!(prompt.served_by.as_deref(), Some("mcp/docs"));
        assert_eq!(prompt.prompts[0].arguments, []);
        assert!(prompt.prompts[1].arguments[0].required);
        let service = McpProgram::parse(&json!({"runtime": "service",
            "mcp": {"server": "docs", "enabled": false, "error": "no X"}}));
        let facts = service.mcp.unwrap();
        assert_eq!(
            (facts.enabled, facts.error.as_deref()),
            (Some(false), Some("no X"))
        );
        assert_eq!(
            McpProgram::parse(&json!({"executable": "builtin:read"})).mcp,
            None
        );
    }
}
