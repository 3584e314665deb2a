//! The chat-completions wire format: requests mapped from
//! [`MessagesRequest`], replies mapped back to [`MessageResponse`].
//!
//! What maps: system blocks become one system message; text, `tool_use`
//! (as `tool_calls`) and `tool_result` (as `tool` messages) blocks;
//! custom tools (as functions); `tool_choice` and
//! `disable_parallel_tool_use` (as `parallel_tool_calls: false`);
//! `max_tokens`, `stop_sequences`, `temperature`, `top_p`, `top_k`.
//! Thinking blocks are not sent (the servers have no way to take them
//! back); reasoning a server streams (`reasoning_content` or `reasoning`)
//! comes back as a thinking block without a signature. Server tools and
//! blocks other than these are refused with a clear error.

use crate::anthropic::stream::parse_input;
use crate::content::{ContentBlock, ThinkingBlock, ToolResultContent, ToolUseBlock};
use crate::error::ModelError;
use crate::request::{MessagesRequest, Role, Tool, ToolChoice};
use crate::response::{MessageResponse, StopReason, Usage};
use serde::Deserialize;
use serde_json::{Map, Value, json};

/// The request body for `POST {base}/chat/completions`.
pub(crate) fn chat_request(request: &MessagesRequest, stream: bool) -> Result<Value, ModelError> {
    let mut body = Map::new();
    body.insert("model".into(), json!(request.model));
    body.insert("max_tokens".into(), json!(request.max_tokens));
    body.insert("messages".into(), Value::Array(messages(request)?));
    if !request.tools.is_empty() {
        let tools = request
            .tools
            .iter()
            .map(function)
            .collect::<Result<_, _>>()?;
        body.insert("tools".into(), Value::Array(tools));
    }
    if let Some(choice) = &request.tool_choice {
        let (value, parallel) = tool_choice(choice);
        body.insert("tool_choice".into(), value);
        if !parallel && !request.tools.is_empty() {
            body.insert("parallel_tool_calls".into(), json!(false));
        }
    }
    if !request.stop_sequences.is_empty() {
        body.insert("stop".into(), json!(request.stop_sequences));
    }
    for (key, value) in [
        ("temperature", request.temperature.map(|v| json!(v))),
        ("top_p", request.top_p.map(|v| json!(v))),
        ("top_k", request.top_k.map(|v| json!(v))),
    ] {
        if let Some(v) = value {
            body.insert(key.into(), v);
        }
    }
    if stream {
        body.insert("stream".into(), json!(true));
        body.insert("stream_options".into(), json!({"include_usage": true}));
    }
    Ok(Value::Object(body))
}

fn messages(request: &MessagesRequest) -> Result<Vec<Value>, ModelError> {
    let mut out = Vec::new();
    if !request.system.is_empty() {
        let text: Vec<&str> = request.system.iter().map(|b| b.text.as_str()).collect();
        out.push(json!({"role": "system", "content": text.join("\n\n")}));
    }
    for message in &request.messages {
        match message.role {
            Role::User => user_message(&message.content, &mut out)?,
            Role::Assistant => out.push(assistant_message(&message.content)?),
        }
    }
    Ok(out)
}

fn user_message(blocks: &[ContentBlock], out: &mut Vec<Value>) -> Result<(), ModelError> {
    let mut text = Vec::new();
    for block in blocks {
        match block {
            ContentBlock::Text(t) => text.push(t.text.as_str()),
            ContentBlock::ToolResult(r) => {
                let mut content = result_text(&r.content)?;
                if r.is_error {
                    content.insert_str(0, "[tool error] ");
                }
                out.push(
                    json!({"role": "tool", "tool_call_id": r.tool_use_id, "content": content}),
                );
            }
            ContentBlock::Thinking(_) | ContentBlock::RedactedThinking(_) => {}
            other => return Err(unsupported_block(other)),
        }
    }
    if !text.is_empty() {
        out.push(json!({"role": "user", "content": text.join("\n\n")}));
    }
    Ok(())
}

fn assistant_message(blocks: &[ContentBlock]) -> Result<Value, ModelError> {
    let mut text = String::new();
    let mut calls = Vec::new();
    for block in blocks {
        match block {
            ContentBlock::Text(t) => text.push_str(&t.text),
            ContentBlock::ToolUse(t) => calls.push(json!({
                "id": t.id,
                "type": "function",
                "function": {"name": t.name, "arguments": t.input.get()},
            })),
            ContentBlock::Thinking(_) | ContentBlock::RedactedThinking(_) => {}
            other => return Err(unsupported_block(other)),
        }
    }
    let mut message = json!({"role": "assistant", "content": if text.is_empty() { Value::Null } else { json!(text) }});
    if !calls.is_empty() {
        message["tool_calls"] = Value::Array(calls);
    }
    Ok(message)
}

fn result_text(content: &ToolResultContent) -> Result<String, ModelError> {
    match content {
        ToolResultContent::Text(s) => Ok(s.clone()),
        ToolResultContent::Blocks(blocks) => blocks
            .iter()
            .map(|b| b.as_text().ok_or_else(|| unsupported_block(b)))
            .collect::<Result<Vec<_>, _>>()
            .map(|parts| parts.join("\n\n")),
    }
}

fn unsupported_block(block: &ContentBlock) -> ModelError {
    ModelError::Unsupported(format!(
        "a {} block cannot be sent to an OpenAI-compatible server (only text, tool calls and tool results map); use the Anthropic provider for this conversation",
        block.block_type()
    ))
}

fn function(tool: &Tool) -> Result<Value, ModelError> {
    match tool {
        Tool::Custom(t) => Ok(json!({
            "type": "function",
            "function": {"name": t.name, "description": t.description, "parameters": t.input_schema},
        })),
        Tool::Server(t) => Err(ModelError::Unsupported(format!(
            "the server tool `{}` ({}) runs only on the Anthropic API; remove it from server_tools to use an OpenAI-compatible model",
            t.name, t.tool_type
        ))),
    }
}

/// The `tool_choice` value, and whether parallel calls stay allowed.
fn tool_choice(choice: &ToolChoice) -> (Value, bool) {
    match choice {
        ToolChoice::Auto {
            disable_parallel_tool_use,
        } => (json!("auto"), !disable_parallel_tool_use),
        ToolChoice::Any {
            disable_parallel_tool_use,
        } => (json!("required"), !disable_parallel_tool_use),
        ToolChoice::Tool {
            name,
            disable_parallel_tool_use,
        } => (
            json!({"type": "function", "function": {"name": name}}),
            !disable_parallel_tool_use,
        ),
        ToolChoice::None => (json!("none"), true),
    }
}

/// `usage` of a chat completion.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct ChatUsage {
    #[serde(default)]
    prompt_tokens: Option<u64>,
    #[serde(default)]
    completion_tokens: Option<u64>,
    #[serde(default)]
    prompt_tokens_details: Option<PromptDetails>,
}

#[derive(Debug, Default, Deserialize)]
struct PromptDetails {
    #[serde(default)]
    cached_tokens: Option<u64>,
}

impl ChatUsage {
    /// As [`Usage`]: cached prompt tokens are cache reads, not input.
    pub fn to_usage(&self) -> Usage {
        let cached = self
            .prompt_tokens_details
            .as_ref()
            .and_then(|d| d.cached_tokens)
            .unwrap_or(0);
        let prompt = self.prompt_tokens.unwrap_or(0);
        Usage {
            input_tokens: prompt.saturating_sub(cached),
            output_tokens: self.completion_tokens.unwrap_or(0),
            cache_read_input_tokens: cached,
            ..Usage::default()
        }
    }
}

/// `finish_reason` as a stop reason. Servers that say `stop` after tool
/// calls (some local ones do) mean `tool_use`.
pub(crate) fn stop_reason(finish_reason: Option<&str>, has_tool_calls: bool) -> Option<StopReason> {
    Some(match finish_reason? {
        "tool_calls" | "function_call" => StopReason::ToolUse,
        "stop" if has_tool_calls => StopReason::ToolUse,
        "stop" => StopReason::EndTurn,
        "length" => StopReason::MaxTokens,
        "content_filter" => StopReason::Refusal,
        other => StopReason::Other(other.to_owned()),
    })
}

#[derive(Deserialize)]
struct ChatCompletion {
    #[serde(default)]
    id: String,
    #[serde(default)]
    model: String,
    #[serde(default)]
    choices: Vec<Choice>,
    #[serde(default)]
    usage: Option<ChatUsage>,
}

#[derive(Deserialize)]
struct Choice {
    message: ChoiceMessage,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Deserialize)]
struct ChoiceMessage {
    #[serde(default)]
    content: Option<String>,
    #[serde(default, alias = "reasoning")]
    reasoning_content: Option<String>,
    #[serde(default)]
    tool_calls: Vec<ToolCall>,
}

#[derive(Deserialize)]
struct ToolCall {
    #[serde(default)]
    id: Option<String>,
    function: FunctionCall,
}

#[derive(Deserialize)]
struct FunctionCall {
    #[serde(default)]
    name: String,
    #[serde(default)]
    arguments: String,
}

/// A whole chat completion as a message: reasoning, text, then tool calls.
pub(crate) fn parse_completion(body: &[u8]) -> Result<MessageResponse, String> {
    let completion: ChatCompletion = serde_json::from_slice(body)
        .map_err(|e| format!("the reply is not a chat completion ({e})"))?;
    let choice = completion
        .choices
        .into_iter()
        .next()
        .ok_or("the chat completion has no choices")?;
    let mut content = Vec::new();
    if let Some(thinking) = choice.message.reasoning_content.filter(|s| !s.is_empty()) {
        content.push(ContentBlock::Thinking(ThinkingBlock {
            thinking,
            signature: String::new(),
        }));
    }
    if let Some(text) = choice.message.content.filter(|s| !s.is_empty()) {
        content.push(ContentBlock::text(text));
    }
    let has_calls = !choice.message.tool_calls.is_empty();
    for (n, call) in choice.message.tool_calls.into_iter().enumerate() {
        let index = content.len();
        let input = parse_input(index, &call.function.name, &call.function.arguments)
            .map_err(|e| e.to_string())?;
        content.push(ContentBlock::ToolUse(ToolUseBlock {
            id: call.id.unwrap_or_else(|| format!("call_{n}")),
            name: call.function.name,
            input,
            caller: None,
            cache_control: None,
        }));
    }
    Ok(MessageResponse {
        id: completion.id,
        model: completion.model,
        role: Role::Assistant,
        content,
        stop_reason: stop_reason(choice.finish_reason.as_deref(), has_calls),
        stop_sequence: None,
        usage: completion.usage.map(|u| u.to_usage()).unwrap_or_default(),
        container: None,
        context_management: None,
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::request::{Message, SystemBlock};

    #[test]
    fn a_tool_conversation_maps_to_chat_messages() {
        let mut r = MessagesRequest::new(
            "llama",
            512,
            vec![
                Message::user("list files"),
                Message::assistant(vec![
                    ContentBlock::text("Looking."),
                    ContentBlock::tool_use("call_1", "shell", &json!({"cmd": "ls"})),
                ]),
                Message {
                    role: Role::User,
                    content: vec![ContentBlock::tool_result("call_1", "a.txt", false)],
                },
            ],
        );
        r.system = vec![SystemBlock::text("be brief")];
        r.tools = vec![Tool::custom("shell", "Run", json!({"type": "object"}))];
        r.tool_choice = Some(ToolChoice::Any {
            disable_parallel_tool_use: true,
        });
        let body = chat_request(&r, true).unwrap();
        assert_eq!(
            body["messages"],
            json!([
                {"role": "system", "content": "be brief"},
                {"role": "user", "content": "list files"},
                {"role": "assistant", "content": "Looking.", "tool_calls": [
                    {"id": "call_1", "type": "function", "function": {"name": "shell", "arguments": "{\"cmd\":\"ls\"}"}}]},
                {"role": "tool", "tool_call_id": "call_1", "content": "a.txt"},
            ])
        );
        assert_eq!(body["tool_choice"], json!("required"));
        assert_eq!(body["parallel_tool_calls"], json!(false));
        assert_eq!(body["stream_options"], json!({"include_usage": true}));
        assert_eq!(
            body["tools"][0]["function"]["parameters"],
            json!({"type": "object"})
        );
    }

    #[test]
    fn server_tools_are_refused_with_advice() {
        let mut r = MessagesRequest::new("llama", 512, vec![Message::user("hi")]);
        r.tools = vec![Tool::server("web_search_20250305", "web_search")];
        let err = chat_request(&r, false).unwrap_err().to_string();
        assert!(err.contains("remove it from server_tools"), "{err}");
    }
}
