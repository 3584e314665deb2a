//! Content blocks: what messages are made of, in requests and in replies.

use crate::raw::RawJson;
use serde::de::{Deserializer, Error as _};
use serde::{Deserialize, Serialize, Serializer};
use serde_json::value::RawValue;
use std::borrow::Cow;

/// A cache breakpoint: `{"type": "ephemeral", "ttl": "5m" | "1h"}`.
///
/// The API allows at most four in one request; the client refuses more with
/// a clear error before sending.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct CacheControl {
    #[serde(rename = "type")]
    kind: CacheKind,
    /// How long the cached prefix lives; the API's default (unset) is five
    /// minutes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl: Option<CacheTtl>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum CacheKind {
    Ephemeral,
}

/// The lifetime of a cache entry. One-hour writes cost more than
/// five-minute ones (see [`Price`](crate::Price)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum CacheTtl {
    /// `"5m"`.
    #[serde(rename = "5m")]
    FiveMinutes,
    /// `"1h"`.
    #[serde(rename = "1h")]
    OneHour,
}

impl CacheControl {
    /// An ephemeral breakpoint with the API's default lifetime (five minutes).
    pub fn ephemeral() -> CacheControl {
        CacheControl {
            kind: CacheKind::Ephemeral,
            ttl: None,
        }
    }

    /// An ephemeral breakpoint with an explicit lifetime.
    pub fn with_ttl(ttl: CacheTtl) -> CacheControl {
        CacheControl {
            kind: CacheKind::Ephemeral,
            ttl: Some(ttl),
        }
    }
}

/// One block of a message's content.
///
/// The blocks an agent reads are typed; every other block — each
/// `*_tool_result` (`web_search_tool_result`, `web_fetch_tool_result`,
/// `code_execution_tool_result`, …), images, documents, and types this
/// crate has never heard of — is [`ContentBlock::Raw`], kept as the exact
/// JSON the API sent, so replaying it sends the same bytes. Nothing is
/// dropped.
#[derive(Debug, Clone, PartialEq)]
pub enum ContentBlock {
    /// `text`, with any citations.
    Text(TextBlock),
    /// `thinking`, with the signature the API checks when it is replayed.
    Thinking(ThinkingBlock),
    /// `redacted_thinking`: encrypted reasoning, replayed as is.
    RedactedThinking(RedactedThinkingBlock),
    /// `tool_use`: the model calls one of the request's custom tools.
    ToolUse(ToolUseBlock),
    /// `server_tool_use`: the API runs a server tool (web search, web fetch,
    /// code execution) itself; its result follows as a raw block.
    ServerToolUse(ToolUseBlock),
    /// `tool_result`: the answer to a `tool_use`, sent in a user message.
    ToolResult(ToolResultBlock),
    /// Any other block, kept verbatim.
    Raw(RawBlock),
}

/// A `text` block.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct TextBlock {
    /// The text.
    pub text: String,
    /// Citations, each kept as the API sent it.
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub citations: Vec<RawJson>,
    /// A cache breakpoint after this block.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_control: Option<CacheControl>,
}

/// A `thinking` block.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ThinkingBlock {
    /// The model's reasoning (summarized by the API on recent models).
    pub thinking: String,
    /// The signature that must come back unchanged when the block is
    /// replayed.
    #[serde(default)]
    pub signature: String,
}

/// A `redacted_thinking` block.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct RedactedThinkingBlock {
    /// Encrypted reasoning.
    pub data: String,
}

/// A `tool_use` or `server_tool_use` block.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolUseBlock {
    /// The call's id (`toolu_…` or `srvtoolu_…`), echoed by its result.
    pub id: String,
    /// The tool's name.
    pub name: String,
    /// The input, exactly as the model wrote it (always a JSON value;
    /// `{}` when the model sent nothing).
    pub input: RawJson,
    /// Who made the call when it came from code the API ran (programmatic
    /// tool calling), kept as sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub caller: Option<RawJson>,
    /// A cache breakpoint after this block.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_control: Option<CacheControl>,
}

impl ToolUseBlock {
    /// The input, parsed.
    pub fn input_value(&self) -> serde_json::Value {
        self.input.to_value()
    }
}

/// A `tool_result` block.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolResultBlock {
    /// The `tool_use` this answers.
    pub tool_use_id: String,
    /// What the tool returned.
    pub content: ToolResultContent,
    /// Whether the tool failed.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub is_error: bool,
    /// A cache breakpoint after this block.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_control: Option<CacheControl>,
}

/// A tool result's content: a string, or blocks (text, images, …).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum ToolResultContent {
    /// Plain text.
    Text(String),
    /// Content blocks.
    Blocks(Vec<ContentBlock>),
}

impl<'de> Deserialize<'de> for ToolResultContent {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let raw = Box::<RawValue>::deserialize(d)?;
        if raw.get().starts_with('"') {
            serde_json::from_str(raw.get()).map(ToolResultContent::Text)
        } else {
            serde_json::from_str(raw.get()).map(ToolResultContent::Blocks)
        }
        .map_err(D::Error::custom)
    }
}

/// A block kept verbatim.
#[derive(Debug, Clone, PartialEq)]
pub struct RawBlock {
    /// Its `type`.
    pub block_type: String,
    /// The whole block, as sent.
    pub json: RawJson,
}

impl ContentBlock {
    /// A text block.
    pub fn text(text: impl Into<String>) -> ContentBlock {
        ContentBlock::Text(TextBlock {
            text: text.into(),
            ..TextBlock::default()
        })
    }

    /// A `tool_use` block (for replaying a call from history).
    pub fn tool_use(
        id: impl Into<String>,
        name: impl Into<String>,
        input: &serde_json::Value,
    ) -> ContentBlock {
        ContentBlock::ToolUse(ToolUseBlock {
            id: id.into(),
            name: name.into(),
            input: RawJson::from_value(input),
            caller: None,
            cache_control: None,
        })
    }

    /// A `tool_result` block with text content.
    pub fn tool_result(
        tool_use_id: impl Into<String>,
        text: impl Into<String>,
        is_error: bool,
    ) -> ContentBlock {
        ContentBlock::ToolResult(ToolResultBlock {
            tool_use_id: tool_use_id.into(),
            content: ToolResultContent::Text(text.into()),
            is_error,
            cache_control: None,
        })
    }

    /// A block from its JSON (any type; known types become typed blocks).
    ///
    /// # Errors
    /// When `json` is not a content block (an object with a string `type`).
    pub fn from_json(json: &str) -> Result<ContentBlock, serde_json::Error> {
        serde_json::from_str(json)
    }

    /// The block's `type`.
    pub fn block_type(&self) -> &str {
        match self {
            ContentBlock::Text(_) => "text",
            ContentBlock::Thinking(_) => "thinking",
            ContentBlock::RedactedThinking(_) => "redacted_thinking",
            ContentBlock::ToolUse(_) => "tool_use",
            ContentBlock::ServerToolUse(_) => "server_tool_use",
            ContentBlock::ToolResult(_) => "tool_result",
            ContentBlock::Raw(raw) => &raw.block_type,
        }
    }

    /// The block's text, when it is a text block.
    pub fn as_text(&self) -> Option<&str> {
        match self {
            ContentBlock::Text(t) => Some(&t.text),
            _ => None,
        }
    }

    /// The block's cache breakpoint, if any.
    pub fn cache_control(&self) -> Option<CacheControl> {
        match self {
            ContentBlock::Text(b) => b.cache_control,
            ContentBlock::ToolUse(b) | ContentBlock::ServerToolUse(b) => b.cache_control,
            ContentBlock::ToolResult(b) => b.cache_control,
            ContentBlock::Raw(b) => b.json.field("cache_control").and_then(|c| {
                serde_json::from_str::<Option<CacheControl>>(c.get())
                    .ok()
                    .flatten()
            }),
            ContentBlock::Thinking(_) | ContentBlock::RedactedThinking(_) => None,
        }
    }

    /// Puts a cache breakpoint after this block (or removes it with `None`).
    /// A raw block keeps every other field in place and exact.
    ///
    /// # Errors
    /// Thinking blocks cannot carry a breakpoint (the API refuses it).
    pub fn set_cache_control(&mut self, cache: Option<CacheControl>) -> Result<(), String> {
        match self {
            ContentBlock::Text(b) => b.cache_control = cache,
            ContentBlock::ToolUse(b) | ContentBlock::ServerToolUse(b) => b.cache_control = cache,
            ContentBlock::ToolResult(b) => b.cache_control = cache,
            ContentBlock::Raw(b) => {
                let value = cache
                    .map(|c| serde_json::to_string(&c).and_then(|s| RawJson::parse(&s)))
                    .transpose()
                    .map_err(|e| e.to_string())?;
                b.json = b
                    .json
                    .with_field("cache_control", value.as_ref())
                    .map_err(|e| {
                        format!("cannot set cache_control on {} block: {e}", b.block_type)
                    })?;
            }
            ContentBlock::Thinking(_) | ContentBlock::RedactedThinking(_) => {
                return Err(format!(
                    "a {} block cannot carry cache_control; put the breakpoint on another block",
                    self.block_type()
                ));
            }
        }
        Ok(())
    }
}

/// The typed blocks, serialized with their `type` tag.
#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Tagged<'a> {
    Text(&'a TextBlock),
    Thinking(&'a ThinkingBlock),
    RedactedThinking(&'a RedactedThinkingBlock),
    ToolUse(&'a ToolUseBlock),
    ServerToolUse(&'a ToolUseBlock),
    ToolResult(&'a ToolResultBlock),
}

impl Serialize for ContentBlock {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            ContentBlock::Text(b) => Tagged::Text(b).serialize(s),
            ContentBlock::Thinking(b) => Tagged::Thinking(b).serialize(s),
            ContentBlock::RedactedThinking(b) => Tagged::RedactedThinking(b).serialize(s),
            ContentBlock::ToolUse(b) => Tagged::ToolUse(b).serialize(s),
            ContentBlock::ServerToolUse(b) => Tagged::ServerToolUse(b).serialize(s),
            ContentBlock::ToolResult(b) => Tagged::ToolResult(b).serialize(s),
            ContentBlock::Raw(b) => b.json.serialize(s),
        }
    }
}

#[derive(Deserialize)]
struct TypeTag<'a> {
    #[serde(rename = "type", borrow)]
    block_type: Cow<'a, str>,
}

impl<'de> Deserialize<'de> for ContentBlock {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let raw = RawJson::deserialize(d)?;
        ContentBlock::from_raw(raw).map_err(D::Error::custom)
    }
}

impl ContentBlock {
    /// Types a block kept as raw JSON (known types become typed blocks).
    pub(crate) fn from_raw(raw: RawJson) -> Result<ContentBlock, serde_json::Error> {
        let text = raw.get();
        let tag: TypeTag = serde_json::from_str(text)?;
        Ok(match &*tag.block_type {
            "text" => ContentBlock::Text(serde_json::from_str(text)?),
            "thinking" => ContentBlock::Thinking(serde_json::from_str(text)?),
            "redacted_thinking" => ContentBlock::RedactedThinking(serde_json::from_str(text)?),
            "tool_use" => ContentBlock::ToolUse(serde_json::from_str(text)?),
            "server_tool_use" => ContentBlock::ServerToolUse(serde_json::from_str(text)?),
            "tool_result" => ContentBlock::ToolResult(serde_json::from_str(text)?),
            other => ContentBlock::Raw(RawBlock {
                block_type: other.to_owned(),
                json: raw,
            }),
        })
    }
}

/// `null` reads as the type's default (the API sends `"citations": null`).
fn null_as_default<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Default + Deserialize<'de>,
{
    Ok(Option::<T>::deserialize(d)?.unwrap_or_default())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn raw_blocks_round_trip_byte_for_byte() {
        let json = r#"{"type":"web_search_tool_result","tool_use_id":"srvtoolu_1","content":[{"type":"web_search_result","url":"https://e.org","title":"E","encrypted_content":"abc","page_age":null}]}"#;
        let block = ContentBlock::from_json(json).unwrap();
        assert_eq!(block.block_type(), "web_search_tool_result");
        assert_eq!(serde_json::to_string(&block).unwrap(), json);
        let unknown = r#"{"zeta":1,"type":"brand_new_block","alpha":{"x":[1, 2]}}"#;
        let block = ContentBlock::from_json(unknown).unwrap();
        assert_eq!(serde_json::to_string(&block).unwrap(), unknown);
    }

    #[test]
    fn typed_blocks_serialize_as_the_api_writes_them() {
        let json = r#"{"type":"tool_use","id":"toolu_1","name":"filesystem","input":{"path":"/a","operation":"read"}}"#;
        let block = ContentBlock::from_json(json).unwrap();
        assert!(matches!(block, ContentBlock::ToolUse(_)));
        assert_eq!(serde_json::to_string(&block).unwrap(), json);
        let json = r#"{"type":"thinking","thinking":"hmm","signature":"sig"}"#;
        let block = ContentBlock::from_json(json).unwrap();
        assert_eq!(serde_json::to_string(&block).unwrap(), json);
        let text = r#"{"type":"text","text":"hi","citations":null}"#;
        let block = ContentBlock::from_json(text).unwrap();
        assert_eq!(
            serde_json::to_string(&block).unwrap(),
            r#"{"type":"text","text":"hi"}"#
        );
    }

    #[test]
    fn blocks_read_from_a_json_value_too() {
        let value = serde_json::json!({"type": "tool_result", "tool_use_id": "t", "content": "ok"});
        let block: ContentBlock = serde_json::from_value(value).unwrap();
        assert_eq!(block, ContentBlock::tool_result("t", "ok", false));
        let value = serde_json::json!({"type": "image", "source": {"type": "base64"}});
        let block: ContentBlock = serde_json::from_value(value).unwrap();
        assert_eq!(block.block_type(), "image");
    }

    #[test]
    fn cache_control_on_raw_blocks_keeps_the_rest_exact() {
        let json = r#"{"type":"web_fetch_tool_result","tool_use_id":"s","content":{"b":1,"a":2}}"#;
        let mut block = ContentBlock::from_json(json).unwrap();
        block
            .set_cache_control(Some(CacheControl::with_ttl(CacheTtl::OneHour)))
            .unwrap();
        assert_eq!(
            serde_json::to_string(&block).unwrap(),
            r#"{"type":"web_fetch_tool_result","tool_use_id":"s","content":{"b":1,"a":2},"cache_control":{"type":"ephemeral","ttl":"1h"}}"#
        );
        assert_eq!(
            block.cache_control(),
            Some(CacheControl::with_ttl(CacheTtl::OneHour))
        );
        block.set_cache_control(None).unwrap();
        assert_eq!(serde_json::to_string(&block).unwrap(), json);
        let mut thinking = ContentBlock::Thinking(ThinkingBlock::default());
        let err = thinking
            .set_cache_control(Some(CacheControl::ephemeral()))
            .unwrap_err();
        assert!(err.contains("another block"), "{err}");
    }

    #[test]
    fn a_block_without_type_is_an_error() {
        let err = ContentBlock::from_json(r#"{"text":"x"}"#).unwrap_err();
        assert!(err.to_string().contains("type"), "{err}");
    }
}
