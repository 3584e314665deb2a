//! The request: [`MessagesRequest`] and what goes in it.

use crate::content::{CacheControl, ContentBlock};
use serde::de::{Deserializer, Error as _};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// Who speaks a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// The person, or tool results.
    User,
    /// The model.
    Assistant,
}

/// One message of the conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    /// Who speaks.
    pub role: Role,
    /// What is said, as blocks.
    pub content: Vec<ContentBlock>,
}

impl Message {
    /// A user message with one text block.
    pub fn user(text: impl Into<String>) -> Message {
        Message {
            role: Role::User,
            content: vec![ContentBlock::text(text)],
        }
    }

    /// An assistant message with these blocks (a reply being replayed).
    pub fn assistant(content: Vec<ContentBlock>) -> Message {
        Message {
            role: Role::Assistant,
            content,
        }
    }
}

/// A block of the system prompt.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SystemBlock {
    #[serde(rename = "type")]
    kind: SystemKind,
    /// The text.
    pub text: String,
    /// A cache breakpoint after this block.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_control: Option<CacheControl>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
enum SystemKind {
    Text,
}

impl SystemBlock {
    /// A text block of the system prompt.
    pub fn text(text: impl Into<String>) -> SystemBlock {
        SystemBlock {
            kind: SystemKind::Text,
            text: text.into(),
            cache_control: None,
        }
    }

    /// This block with a cache breakpoint after it.
    pub fn cached(mut self, cache: CacheControl) -> SystemBlock {
        self.cache_control = Some(cache);
        self
    }
}

/// A tool the model may use.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Tool {
    /// A tool the caller runs (for hermitcrab, a program).
    Custom(CustomTool),
    /// A tool the API runs, passed through by its versioned type string:
    /// `web_search_20250305`, `web_fetch_20250910`,
    /// `code_execution_20250825`, and any newer one.
    Server(ServerTool),
}

/// A custom tool: name, description and a JSON Schema for its input.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CustomTool {
    /// The name the model calls it by.
    pub name: String,
    /// What it does, for the model.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    /// The JSON Schema of its input (an object schema).
    pub input_schema: Value,
    /// Who else may call it: code the API runs (`code_execution_…`),
    /// programmatic tool calling.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allowed_callers: Vec<String>,
    /// Its definition is loaded only when a tool result references it
    /// (tool search; the `advanced-tool-use-2025-11-20` beta).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub defer_loading: bool,
    /// A cache breakpoint after this tool (the end of the tool list).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_control: Option<CacheControl>,
}

/// A server tool: its type string, its name, and its options as given.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ServerTool {
    /// The versioned type, e.g. `web_search_20250305`.
    #[serde(rename = "type")]
    pub tool_type: String,
    /// The name, e.g. `web_search`.
    pub name: String,
    /// Every other field (`max_uses`, `allowed_domains`, …), sent as given.
    #[serde(flatten)]
    pub options: Map<String, Value>,
}

impl<'de> Deserialize<'de> for Tool {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Tool, D::Error> {
        let value = Value::deserialize(d)?;
        let server = match value.get("type") {
            Some(Value::String(t)) => t != "custom",
            Some(_) => return Err(D::Error::custom("a tool's `type` must be a string")),
            None => false,
        };
        if server {
            serde_json::from_value(value).map(Tool::Server)
        } else {
            serde_json::from_value(value).map(Tool::Custom)
        }
        .map_err(D::Error::custom)
    }
}

impl Tool {
    /// A custom tool.
    pub fn custom(
        name: impl Into<String>,
        description: impl Into<String>,
        input_schema: Value,
    ) -> Tool {
        Tool::Custom(CustomTool {
            name: name.into(),
            description: description.into(),
            input_schema,
            allowed_callers: Vec::new(),
            defer_loading: false,
            cache_control: None,
        })
    }

    /// A server tool with no options, e.g.
    /// `Tool::server("web_search_20250305", "web_search")`.
    pub fn server(tool_type: impl Into<String>, name: impl Into<String>) -> Tool {
        Tool::Server(ServerTool {
            tool_type: tool_type.into(),
            name: name.into(),
            options: Map::new(),
        })
    }

    /// The tool's name.
    pub fn name(&self) -> &str {
        match self {
            Tool::Custom(t) => &t.name,
            Tool::Server(t) => &t.name,
        }
    }

    fn has_cache_control(&self) -> bool {
        match self {
            Tool::Custom(t) => t.cache_control.is_some(),
            Tool::Server(t) => t.options.get("cache_control").is_some_and(|c| !c.is_null()),
        }
    }
}

/// How the model must use tools.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ToolChoice {
    /// The model decides.
    Auto {
        /// At most one tool call per reply.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        disable_parallel_tool_use: bool,
    },
    /// The model must call some tool.
    Any {
        /// Exactly one tool call.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        disable_parallel_tool_use: bool,
    },
    /// The model must call this tool.
    Tool {
        /// The tool.
        name: String,
        /// Exactly one tool call.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        disable_parallel_tool_use: bool,
    },
    /// The model must not call tools.
    None,
}

/// Extended thinking.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Thinking {
    /// Think with at most `budget_tokens` (at least 1024, below
    /// `max_tokens`).
    Enabled {
        /// The thinking budget.
        budget_tokens: u32,
    },
    /// The model decides how much to think (recent models).
    Adaptive,
    /// No thinking.
    Disabled,
}

/// Request metadata.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Metadata {
    /// An opaque id for the end user, for abuse detection.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_id: Option<String>,
}

/// A request to `POST /v1/messages` (and, mapped, to an OpenAI-compatible
/// server).
///
/// Optional fields are sent only when set; sampling parameters in
/// particular are omitted unless given, so the API's defaults apply.
/// Serializing the same request twice gives the same bytes, so a cached
/// prefix stays a prefix.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct MessagesRequest {
    /// The model id, e.g. `claude-sonnet-4-5`.
    pub model: String,
    /// The most tokens the reply may have.
    pub max_tokens: u32,
    /// The system prompt, as blocks (each may carry a cache breakpoint).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub system: Vec<SystemBlock>,
    /// The conversation so far.
    pub messages: Vec<Message>,
    /// Tools the model may use.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<Tool>,
    /// How it must use them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_choice: Option<ToolChoice>,
    /// Extended thinking.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thinking: Option<Thinking>,
    /// Custom strings that end the reply.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stop_sequences: Vec<String>,
    /// Metadata.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Metadata>,
    /// Context management (context editing), passed through as given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub context_management: Option<Value>,
    /// Sampling temperature.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
    /// Nucleus sampling.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub top_p: Option<f64>,
    /// Top-k sampling.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub top_k: Option<u32>,
    /// Any other top-level field (`container`, `service_tier`, …), sent as
    /// given.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
    /// Beta features for this request, added to the configured ones in the
    /// `anthropic-beta` header (not sent in the body).
    #[serde(skip)]
    pub betas: Vec<String>,
}

/// The most cache breakpoints one request may carry.
pub const MAX_CACHE_BREAKPOINTS: usize = 4;

impl MessagesRequest {
    /// A request for `model` with `max_tokens` and these messages.
    pub fn new(model: impl Into<String>, max_tokens: u32, messages: Vec<Message>) -> Self {
        MessagesRequest {
            model: model.into(),
            max_tokens,
            messages,
            ..MessagesRequest::default()
        }
    }

    /// How many cache breakpoints (`cache_control`) the request carries:
    /// on tools, system blocks and message blocks.
    pub fn cache_breakpoints(&self) -> usize {
        let tools = self.tools.iter().filter(|t| t.has_cache_control()).count();
        let system = self
            .system
            .iter()
            .filter(|b| b.cache_control.is_some())
            .count();
        let blocks = self
            .messages
            .iter()
            .flat_map(|m| &m.content)
            .filter(|b| b.cache_control().is_some())
            .count();
        tools + system + blocks
    }

    /// Checks what the API would refuse, so the mistake is named before a
    /// request is sent.
    ///
    /// # Errors
    /// A message saying what is wrong and what to do.
    pub fn validate(&self) -> Result<(), String> {
        if self.model.trim().is_empty() {
            return Err("the request names no model; set one (e.g. `claude-sonnet-4-5`) in the agent's configuration".into());
        }
        if self.max_tokens == 0 {
            return Err("max_tokens is 0; give the reply room (e.g. 8192)".into());
        }
        if self.messages.is_empty() {
            return Err("the request has no messages; start with a user message".into());
        }
        let breakpoints = self.cache_breakpoints();
        if breakpoints > MAX_CACHE_BREAKPOINTS {
            return Err(format!(
                "the request carries {breakpoints} cache breakpoints (cache_control); the API allows at most {MAX_CACHE_BREAKPOINTS}: keep the end of tools, the end of system and the last block"
            ));
        }
        if let Some(Thinking::Enabled { budget_tokens }) = self.thinking
            && budget_tokens >= self.max_tokens
        {
            return Err(format!(
                "the thinking budget ({budget_tokens}) must be below max_tokens ({}); raise max_tokens or lower the budget",
                self.max_tokens
            ));
        }
        Ok(())
    }
}

/// The body of `POST /v1/messages/count_tokens`: the request without the
/// fields that do not count.
#[derive(Serialize)]
pub(crate) struct CountTokensBody<'a> {
    pub model: &'a str,
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    pub system: &'a [SystemBlock],
    pub messages: &'a [Message],
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    pub tools: &'a [Tool],
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_choice: Option<&'a ToolChoice>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub thinking: Option<&'a Thinking>,
}

impl<'a> From<&'a MessagesRequest> for CountTokensBody<'a> {
    fn from(r: &'a MessagesRequest) -> Self {
        CountTokensBody {
            model: &r.model,
            system: &r.system,
            messages: &r.messages,
            tools: &r.tools,
            tool_choice: r.tool_choice.as_ref(),
            thinking: r.thinking.as_ref(),
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    #[test]
    fn only_set_fields_are_sent() {
        let r = MessagesRequest::new("m", 100, vec![Message::user("hi")]);
        assert_eq!(
            serde_json::to_value(&r).unwrap(),
            json!({"model": "m", "max_tokens": 100,
                   "messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]})
        );
    }

    #[test]
    fn tools_choice_and_thinking_have_the_api_shapes() {
        let mut search = Tool::server("web_search_20250305", "web_search");
        if let Tool::Server(s) = &mut search {
            s.options.insert("max_uses".into(), json!(3));
        }
        let mut r = MessagesRequest::new("m", 2048, vec![Message::user("hi")]);
        r.tools = vec![
            Tool::custom("echo", "Echo", json!({"type": "object"})),
            search,
        ];
        r.tool_choice = Some(ToolChoice::Auto {
            disable_parallel_tool_use: true,
        });
        r.thinking = Some(Thinking::Enabled {
            budget_tokens: 1024,
        });
        let v = serde_json::to_value(&r).unwrap();
        assert_eq!(
            v["tools"],
            json!([{"name": "echo", "description": "Echo", "input_schema": {"type": "object"}},
                   {"type": "web_search_20250305", "name": "web_search", "max_uses": 3}])
        );
        assert_eq!(
            v["tool_choice"],
            json!({"type": "auto", "disable_parallel_tool_use": true})
        );
        assert_eq!(
            v["thinking"],
            json!({"type": "enabled", "budget_tokens": 1024})
        );
        let tools: Vec<Tool> = serde_json::from_value(v["tools"].clone()).unwrap();
        assert_eq!(tools, r.tools);
        assert_eq!(
            serde_json::to_value(Thinking::Adaptive).unwrap(),
            json!({"type": "adaptive"})
        );
    }

    #[test]
    fn more_than_four_breakpoints_is_refused_with_advice() {
        let mut r = MessagesRequest::new("m", 100, vec![Message::user("hi")]);
        r.system = (0..5)
            .map(|i| SystemBlock::text(format!("s{i}")).cached(CacheControl::ephemeral()))
            .collect();
        assert_eq!(r.cache_breakpoints(), 5);
        let err = r.validate().unwrap_err();
        assert!(err.contains("at most 4"), "{err}");
        r.system.truncate(4);
        assert!(r.validate().is_ok());
    }
}
