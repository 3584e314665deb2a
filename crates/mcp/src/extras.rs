//! What a server offers besides tools, as two hidden programs (`tool:
//! false`) its service carries out: `mcp/NAME/resources` (`{"op": "list"}`
//! or `{"op": "read", "uri": …}`; the agent's `mcp_list_resources` and
//! `mcp_read_resource`) and `mcp/NAME/prompt` (`{"name": …, "arguments":
//! {…}}`; a `/mcp__NAME__PROMPT` slash command), whose body lists the
//! server's prompts so a host can offer them without a call.

use crate::config::{Server, service_name};
use crate::output::cut;
use crate::tools::Tool;
use protocol::program::Output;
use serde_json::{Value, json};

/// The resources program's name.
pub fn resources_program(server: &str) -> String {
    format!("mcp/{server}/resources")
}

/// The prompt program's name.
pub fn prompt_program(server: &str) -> String {
    format!("mcp/{server}/prompt")
}

fn hidden(server: &Server, program: String, text: &str, schema: Value, extra: Value) -> Tool {
    let mut body = json!({
        "executable": "builtin:mcp",
        "served_by": service_name(&server.name),
        "text": text,
        "input_type": format!("input/{program}"),
        "read_only": true,
        "concurrency_safe": true,
        "tool": false,
        "timeout_ms": server.tool_timeout_ms,
        "mcp": {"server": server.name},
    });
    if let (Some(body), Value::Object(extra)) = (body.as_object_mut(), extra) {
        body.extend(extra);
    }
    Tool {
        name: String::new(),
        program,
        body,
        schema,
    }
}

/// The two hidden programs of `server`, given its prompts (`prompts/list`
/// entries).
pub fn programs(server: &Server, prompts: &[Value]) -> Vec<Tool> {
    let resources = hidden(
        server,
        resources_program(&server.name),
        "Lists the server's resources, or reads one.",
        json!({"type": "object", "properties": {
            "op": {"type": "string", "enum": ["list", "read"]},
            "uri": {"type": "string"}}, "required": ["op"]}),
        json!({}),
    );
    let listed: Vec<Value> = prompts
        .iter()
        .map(|p| json!({"name": p["name"], "description": p["description"], "arguments": p["arguments"]}))
        .collect();
    let prompt = hidden(
        server,
        prompt_program(&server.name),
        "Gets one of the server's prompts, its arguments filled.",
        json!({"type": "object", "properties": {
            "name": {"type": "string"}, "arguments": {"type": "object"}}, "required": ["name"]}),
        json!({"prompts": listed}),
    );
    vec![resources, prompt]
}

/// A `resources/list` answer (its JSON entries) as an output.
pub fn listed_resources(server: &str, resources: &[Value]) -> Output {
    if resources.is_empty() {
        return Output::ok(
            format!("the MCP server `{server}` lists no resources"),
            json!([]),
        );
    }
    let lines: Vec<String> = resources
        .iter()
        .map(|r| {
            let mut line = format!(
                "{} — {}",
                r["uri"].as_str().unwrap_or("?"),
                r["name"].as_str().unwrap_or("")
            );
            if let Some(mime) = r["mimeType"].as_str() {
                line.push_str(&format!(" ({mime})"));
            }
            if let Some(description) = r["description"].as_str() {
                line.push_str(&format!(": {description}"));
            }
            line
        })
        .collect();
    Output::ok(cut(&lines.join("\n")), Value::Array(resources.to_vec()))
}

/// A `resources/read` answer (its JSON) as an output: text contents as
/// they are, a blob as its size.
pub fn read_resource(result: &Value) -> Output {
    let parts: Vec<String> = result["contents"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| match (c["text"].as_str(), c["blob"].as_str()) {
            (Some(text), _) => text.to_owned(),
            (None, Some(blob)) => format!(
                "[{} — binary, {} bytes base64]",
                c["mimeType"].as_str().unwrap_or("?"),
                blob.len()
            ),
            (None, None) => String::new(),
        })
        .collect();
    Output::ok(cut(&parts.join("\n")), Value::Null)
}

/// A `prompts/get` answer (its JSON) as an output: each message's text,
/// the whole prompt a person would have typed.
pub fn got_prompt(result: &Value) -> Output {
    let parts: Vec<String> = result["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|m| match m["content"]["type"].as_str() {
            Some("text") => m["content"]["text"].as_str().map(str::to_owned),
            Some("resource") => m["content"]["resource"]["text"].as_str().map(str::to_owned),
            _ => None,
        })
        .collect();
    Output::ok(parts.join("\n\n"), result.clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resources_and_prompts_read_as_text() {
        let listed = listed_resources(
            "s",
            &[
                json!({"uri": "mem://a", "name": "A", "mimeType": "text/plain", "description": "first"}),
            ],
        );
        assert_eq!(listed.text, "mem://a — A (text/plain): first");
        let read = read_resource(&json!({"contents": [{"uri": "mem://a", "text": "hello"},
            {"uri": "mem://b", "mimeType": "image/png", "blob": "AAAA"}]}));
        assert_eq!(read.text, "hello\n[image/png — binary, 4 bytes base64]");
        let prompt = got_prompt(&json!({"messages": [
            {"role": "user", "content": {"type": "text", "text": "Review this"}}]}));
        assert_eq!(prompt.text, "Review this");
    }
}
