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
    #[serde(deserialize_with = "facts")]
    pub mcp: Option<McpFacts>,
    /// The service program that carries out its runs.
    #[serde(deserialize_with = "string_or_none")]
    pub served_by: Option<String>,
    /// On a server's prompt program: the prompts it lists (each read on
    /// its own: one the server wrote wrong reads as what it can).
    #[serde(deserialize_with = "each")]
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
    #[serde(deserialize_with = "string_or_empty")]
    pub server: String,
    /// A tool program's tool, as the server names it.
    #[serde(
        skip_serializing_if = "Option::is_none",
        deserialize_with = "string_or_none"
    )]
    pub tool: Option<String>,
    /// A service program's: whether the server is to be started (absent:
    /// yes).
    #[serde(
        skip_serializing_if = "Option::is_none",
        deserialize_with = "bool_or_none"
    )]
    pub enabled: Option<bool>,
    /// A service program's: why its configuration could not be resolved.
    #[serde(
        skip_serializing_if = "Option::is_none",
        deserialize_with = "string_or_none"
    )]
    pub error: Option<String>,
    /// A service program's: how long the server may take to start.
    #[serde(
        skip_serializing_if = "Option::is_none",
        deserialize_with = "u64_or_none"
    )]
    pub startup_timeout_ms: Option<u64>,
}

/// A prompt a server lists (`prompts/list`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Prompt {
    /// Its name.
    #[serde(deserialize_with = "string_or_empty")]
    pub name: String,
    /// What it is for.
    #[serde(deserialize_with = "string_or_none")]
    pub description: Option<String>,
    /// Its arguments, in order.
    #[serde(deserialize_with = "each")]
    pub arguments: Vec<PromptArgument>,
}

/// One argument of a prompt.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct PromptArgument {
    /// Its name.
    #[serde(deserialize_with = "string_or_empty")]
    pub name: String,
    /// What it is.
    #[serde(deserialize_with = "string_or_none")]
    pub description: Option<String>,
    /// Whether the prompt needs it (`true`, nothing else).
    #[serde(deserialize_with = "true_only")]
    pub required: bool,
}

// What a server writes is read a field at a time: a value of the wrong
// type reads as absent, and the rest of the body still counts.

/// A list's entries, each read on its own (not a list: none).
fn each<'de, D: Deserializer<'de>, T: for<'a> Deserialize<'a> + Default>(
    d: D,
) -> Result<Vec<T>, D::Error> {
    let value = Value::deserialize(d)?;
    let list = value.as_array().into_iter().flatten();
    Ok(list
        .map(|v| T::deserialize(v).unwrap_or_default())
        .collect())
}

/// The `mcp` object, when it is one.
fn facts<'de, D: Deserializer<'de>>(d: D) -> Result<Option<McpFacts>, D::Error> {
    let value = Value::deserialize(d)?;
    Ok(value
        .is_object()
        .then(|| McpFacts::deserialize(&value).unwrap_or_default()))
}

fn string_or_empty<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    Ok(string_or_none(d)?.unwrap_or_default())
}

fn string_or_none<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    Ok(Value::deserialize(d)?.as_str().map(str::to_owned))
}

fn bool_or_none<'de, D: Deserializer<'de>>(d: D) -> Result<Option<bool>, D::Error> {
    Ok(Value::deserialize(d)?.as_bool())
}

fn u64_or_none<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    Ok(Value::deserialize(d)?.as_u64())
}

fn true_only<'de, D: Deserializer<'de>>(d: D) -> Result<bool, D::Error> {
    Ok(Value::deserialize(d)? == Value::Bool(true))
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
