//! A server's tools as program chunks: `program/mcp__NAME__TOOL` (served
//! by `mcp/NAME`) and its input type `input/mcp__NAME__TOOL`, whose schema
//! is the tool's `inputSchema`. Pure: the service commits what these say.

use crate::config::{Server, service_name, tool_name, tool_prefix};
use crate::error::ToolError;
use protocol::{ChunkDecl, Declaration, NewPlacement, PlacementType};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use substrate::PlacementKey;

/// One tool, as the server lists it (its JSON).
#[derive(Clone, Debug)]
pub struct Tool {
    /// Its program's name (`mcp__NAME__TOOL`).
    pub program: String,
    /// Its name on the server.
    pub name: String,
    /// Its program chunk's body.
    pub body: Value,
    /// Its input schema.
    pub schema: Value,
}

/// FNV-1a over `text`: a stable fingerprint of a tool's schema, so an
/// unchanged tool is not committed again.
fn digest(text: &str) -> String {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in text.bytes() {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{hash:016x}")
}

impl Tool {
    /// The tool `listed` (a `tools/list` entry) of `server`, or why it
    /// is skipped: a name that is empty or has spaces or control
    /// characters, or an input schema that is not an object schema.
    pub fn of(server: &Server, listed: &Value) -> Result<Tool, ToolError> {
        let name = listed["name"].as_str().unwrap_or_default().to_owned();
        if name.is_empty()
            || name.len() > 128
            || name.chars().any(|c| c.is_whitespace() || c.is_control())
        {
            return Err(ToolError::InvalidName {
                name: listed["name"].clone(),
            });
        }
        let program = tool_name(&server.name, &name);
        let schema = match &listed["inputSchema"] {
            Value::Object(o) if o.get("type").is_none_or(|t| t == "object") => {
                Value::Object(o.clone())
            }
            Value::Null => json!({"type": "object"}),
            other => {
                return Err(ToolError::Schema {
                    tool: name,
                    schema: other.clone(),
                });
            }
        };
        let read_only = listed["annotations"]["readOnlyHint"]
            .as_bool()
            .unwrap_or(false);
        let text = listed["description"]
            .as_str()
            .or(listed["title"].as_str())
            .unwrap_or_default();
        let body = json!({
            "executable": "builtin:mcp",
            "served_by": service_name(&server.name),
            "text": text,
            "input_type": format!("input/{program}"),
            "read_only": read_only,
            "concurrency_safe": read_only,
            "timeout_ms": server.tool_timeout_ms,
            "mcp": {
                "server": server.name,
                "tool": name,
                "annotations": listed["annotations"],
                "digest": digest(&schema.to_string()),
            },
        });
        Ok(Tool {
            program,
            name,
            body,
            schema,
        })
    }

    /// Its two chunks: the program (on `engine/program`) and its input type
    /// (relates on it).
    pub fn chunks(&self) -> Vec<ChunkDecl> {
        let (program, input) = (format!("program/{}", self.program), self.input());
        let required = self.schema.get("required").cloned().unwrap_or(json!([]));
        vec![
            ChunkDecl::with_id(&program)
                .name(self.program.clone())
                // a server's question during a call, and its answer, are
                // placed on the call's run
                .spec(
                    json!({"propagate": true, "accepts": [input, "user-question", "user-answer"]}),
                )
                .body(self.body.clone())
                .on(NewPlacement::instance("engine/program")),
            ChunkDecl::with_id(&input)
                .name(input.clone())
                .spec(json!({"required": required}))
                .body(json!({
                    "text": format!("The input of {}.", self.program),
                    "schema": self.schema,
                }))
                .on(NewPlacement::relates(&program)),
        ]
    }

    /// Its input type's id.
    pub fn input(&self) -> String {
        format!("input/{}", self.program)
    }
}

/// What to commit so the live tools of `server` are `tools`, given the
/// bodies of its tool programs now on `engine/program` (`live`, by program
/// name): new and changed tools, and the placements of tools gone (their
/// chunks and runs stay). `None`: nothing changed.
pub fn sync(
    server: &Server,
    tools: &[Tool],
    live: &BTreeMap<String, Value>,
) -> Option<Declaration> {
    let mut decl = Declaration::default();
    for tool in tools {
        if live.get(&tool.program) != Some(&tool.body) {
            decl.chunks.extend(tool.chunks());
        }
    }
    let prefix = tool_prefix(&server.name);
    for name in live.keys() {
        if name.starts_with(&prefix) && !tools.iter().any(|t| t.program == *name) {
            decl.remove.placements.push(PlacementKey {
                chunk: format!("program/{name}"),
                scope: "engine/program".into(),
                kind: PlacementType::Instance,
            });
        }
    }
    (!decl.chunks.is_empty() || !decl.remove.placements.is_empty()).then_some(decl)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Transport;

    fn server() -> Server {
        Server {
            name: "everything".into(),
            transport: Transport::Http {
                url: "http://x".into(),
                headers: BTreeMap::new(),
            },
            startup_timeout_ms: 10_000,
            tool_timeout_ms: 60_000,
            interactive: false,
            oauth_store: None,
        }
    }

    #[test]
    fn a_tool_is_a_served_program_with_its_schema_and_hints() {
        let tool = Tool::of(
            &server(),
            &json!({"name": "echo", "description": "Echoes", "annotations": {"readOnlyHint": true},
                    "inputSchema": {"type": "object", "required": ["message"]}}),
        )
        .unwrap();
        for bad in [
            json!({"name": "two words"}),
            json!({"name": ""}),
            json!({"name": "x", "inputSchema": {"type": "string"}}),
        ] {
            assert!(Tool::of(&server(), &bad).is_err(), "{bad}");
        }
        assert_eq!(tool.program, "mcp__everything__echo");
        assert_eq!(tool.body["served_by"], "mcp/everything");
        assert_eq!(tool.body["read_only"], true);
        assert_eq!(tool.body["timeout_ms"], 60_000);
        let chunks = tool.chunks();
        assert_eq!(
            chunks[1].body.as_ref().unwrap()["schema"]["required"],
            json!(["message"])
        );
    }

    #[test]
    fn sync_commits_only_what_changed_and_unplaces_what_went() {
        let s = server();
        let echo = Tool::of(&s, &json!({"name": "echo"})).unwrap();
        let add = Tool::of(&s, &json!({"name": "add"})).unwrap();
        let mut live = BTreeMap::new();
        live.insert(echo.program.clone(), echo.body.clone());
        live.insert("mcp__everything__gone".into(), json!({}));
        live.insert("mcp__other__x".into(), json!({}));
        let decl = sync(&s, &[echo.clone(), add], &live).unwrap();
        let ids: Vec<_> = decl.chunks.iter().filter_map(|c| c.id.clone()).collect();
        assert_eq!(
            ids,
            vec!["program/mcp__everything__add", "input/mcp__everything__add"]
        );
        let gone: Vec<_> = decl
            .remove
            .placements
            .iter()
            .map(|k| k.chunk.clone())
            .collect();
        assert_eq!(gone, vec!["program/mcp__everything__gone"]);
        live.remove("mcp__everything__gone");
        assert!(sync(&s, &[echo], &live).is_none());
    }
}
