//! The reply: [`MessageResponse`], [`StopReason`] and [`Usage`].

use crate::content::ContentBlock;
use crate::raw::RawJson;
use crate::request::{Message, Role};
use serde::de::Deserializer;
use serde::{Deserialize, Serialize, Serializer};

/// Why the model stopped.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum StopReason {
    /// It finished its turn.
    EndTurn,
    /// It hit `max_tokens`; the agent may continue the same message.
    MaxTokens,
    /// It wrote one of the request's stop sequences.
    StopSequence,
    /// It called tools and waits for their results.
    ToolUse,
    /// A long server-tool turn was paused; send the reply back as is to
    /// let it continue.
    PauseTurn,
    /// It declined to answer.
    Refusal,
    /// The context window filled before `max_tokens`.
    ModelContextWindowExceeded,
    /// A value this crate does not know, kept as sent.
    Other(String),
}

impl StopReason {
    /// The wire string.
    pub fn as_str(&self) -> &str {
        match self {
            StopReason::EndTurn => "end_turn",
            StopReason::MaxTokens => "max_tokens",
            StopReason::StopSequence => "stop_sequence",
            StopReason::ToolUse => "tool_use",
            StopReason::PauseTurn => "pause_turn",
            StopReason::Refusal => "refusal",
            StopReason::ModelContextWindowExceeded => "model_context_window_exceeded",
            StopReason::Other(s) => s,
        }
    }

    /// From the wire string; unknown values are kept in [`StopReason::Other`].
    pub fn parse(s: &str) -> StopReason {
        match s {
            "end_turn" => StopReason::EndTurn,
            "max_tokens" => StopReason::MaxTokens,
            "stop_sequence" => StopReason::StopSequence,
            "tool_use" => StopReason::ToolUse,
            "pause_turn" => StopReason::PauseTurn,
            "refusal" => StopReason::Refusal,
            "model_context_window_exceeded" => StopReason::ModelContextWindowExceeded,
            other => StopReason::Other(other.to_owned()),
        }
    }
}

impl Serialize for StopReason {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for StopReason {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = std::borrow::Cow::<str>::deserialize(d)?;
        Ok(StopReason::parse(&s))
    }
}

/// Tokens a call used. Within one streamed reply the API's counts are
/// cumulative, so the client overwrites them; across calls, [`Usage::add`]
/// sums them.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Usage {
    /// Input tokens after the last cache breakpoint (not read from or
    /// written to the cache).
    #[serde(default, deserialize_with = "zero_if_null")]
    pub input_tokens: u64,
    /// Output tokens.
    #[serde(default, deserialize_with = "zero_if_null")]
    pub output_tokens: u64,
    /// Input tokens written to the cache (all lifetimes).
    #[serde(default, deserialize_with = "zero_if_null")]
    pub cache_creation_input_tokens: u64,
    /// Input tokens read from the cache.
    #[serde(default, deserialize_with = "zero_if_null")]
    pub cache_read_input_tokens: u64,
    /// Cache writes by lifetime, when the API breaks them down.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_creation: Option<CacheCreation>,
    /// Server tool requests (web searches, fetches) billed per use.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_tool_use: Option<ServerToolUsage>,
}

/// Cache writes by lifetime.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct CacheCreation {
    /// Tokens written with the five-minute lifetime.
    #[serde(default, deserialize_with = "zero_if_null")]
    pub ephemeral_5m_input_tokens: u64,
    /// Tokens written with the one-hour lifetime.
    #[serde(default, deserialize_with = "zero_if_null")]
    pub ephemeral_1h_input_tokens: u64,
}

/// Server tool uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ServerToolUsage {
    /// Web searches.
    #[serde(default, deserialize_with = "zero_if_null")]
    pub web_search_requests: u64,
    /// Web fetches.
    #[serde(default, deserialize_with = "zero_if_null")]
    pub web_fetch_requests: u64,
}

impl Usage {
    /// All input tokens: uncached, written to and read from the cache. The
    /// agent compares this with the context window.
    pub fn total_input_tokens(&self) -> u64 {
        self.input_tokens + self.cache_creation_input_tokens + self.cache_read_input_tokens
    }

    /// Adds another call's usage (for a run's totals).
    pub fn add(&mut self, other: &Usage) {
        self.input_tokens += other.input_tokens;
        self.output_tokens += other.output_tokens;
        self.cache_creation_input_tokens += other.cache_creation_input_tokens;
        self.cache_read_input_tokens += other.cache_read_input_tokens;
        if let Some(o) = other.cache_creation {
            let c = self.cache_creation.get_or_insert_with(Default::default);
            c.ephemeral_5m_input_tokens += o.ephemeral_5m_input_tokens;
            c.ephemeral_1h_input_tokens += o.ephemeral_1h_input_tokens;
        }
        if let Some(o) = other.server_tool_use {
            let s = self.server_tool_use.get_or_insert_with(Default::default);
            s.web_search_requests += o.web_search_requests;
            s.web_fetch_requests += o.web_fetch_requests;
        }
    }

    /// Overwrites each count the delta carries (`message_delta` counts are
    /// cumulative: never add them).
    pub(crate) fn overwrite(&mut self, delta: &UsageDelta) {
        let set = |slot: &mut u64, v: Option<u64>| {
            if let Some(v) = v {
                *slot = v;
            }
        };
        set(&mut self.input_tokens, delta.input_tokens);
        set(&mut self.output_tokens, delta.output_tokens);
        set(
            &mut self.cache_creation_input_tokens,
            delta.cache_creation_input_tokens,
        );
        set(
            &mut self.cache_read_input_tokens,
            delta.cache_read_input_tokens,
        );
        if delta.cache_creation.is_some() {
            self.cache_creation = delta.cache_creation;
        }
        if delta.server_tool_use.is_some() {
            self.server_tool_use = delta.server_tool_use;
        }
    }
}

/// The usage of a `message_delta`: only the counts it carries.
#[derive(Debug, Clone, Default, Deserialize)]
pub(crate) struct UsageDelta {
    #[serde(default)]
    pub input_tokens: Option<u64>,
    #[serde(default)]
    pub output_tokens: Option<u64>,
    #[serde(default)]
    pub cache_creation_input_tokens: Option<u64>,
    #[serde(default)]
    pub cache_read_input_tokens: Option<u64>,
    #[serde(default)]
    pub cache_creation: Option<CacheCreation>,
    #[serde(default)]
    pub server_tool_use: Option<ServerToolUsage>,
}

fn zero_if_null<'de, D: Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
    Ok(Option::<u64>::deserialize(d)?.unwrap_or(0))
}

/// A whole reply: what `POST /v1/messages` returns, or what a stream adds
/// up to.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MessageResponse {
    /// The message id (`msg_…`).
    pub id: String,
    /// The model that answered.
    pub model: String,
    /// Always `assistant`.
    pub role: Role,
    /// The blocks, in order; replay them as they are.
    pub content: Vec<ContentBlock>,
    /// Why it stopped.
    pub stop_reason: Option<StopReason>,
    /// Which stop sequence it wrote, for `stop_sequence`.
    #[serde(default)]
    pub stop_sequence: Option<String>,
    /// Tokens used.
    #[serde(default)]
    pub usage: Usage,
    /// The code-execution container, to reuse in the next call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub container: Option<RawJson>,
    /// What context management did, as sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_management: Option<RawJson>,
}

impl MessageResponse {
    /// The reply as a message to append to the conversation (all blocks,
    /// verbatim, including thinking and server-tool blocks).
    pub fn to_message(&self) -> Message {
        Message::assistant(self.content.clone())
    }

    /// The text blocks, joined.
    pub fn text(&self) -> String {
        self.content
            .iter()
            .filter_map(ContentBlock::as_text)
            .collect()
    }

    /// The `tool_use` blocks (calls the caller must run).
    pub fn tool_uses(&self) -> impl Iterator<Item = &crate::content::ToolUseBlock> {
        self.content.iter().filter_map(|b| match b {
            ContentBlock::ToolUse(t) => Some(t),
            _ => None,
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn unknown_stop_reasons_are_kept() {
        let r: StopReason = serde_json::from_str(r#""brand_new""#).unwrap();
        assert_eq!(r, StopReason::Other("brand_new".into()));
        assert_eq!(serde_json::to_string(&r).unwrap(), r#""brand_new""#);
        for s in [
            "end_turn",
            "max_tokens",
            "stop_sequence",
            "tool_use",
            "pause_turn",
            "refusal",
            "model_context_window_exceeded",
        ] {
            let r = StopReason::parse(s);
            assert!(!matches!(r, StopReason::Other(_)), "{s}");
            assert_eq!(r.as_str(), s);
        }
    }

    #[test]
    fn usage_reads_nulls_as_zero_and_overwrites_deltas() {
        let mut u: Usage = serde_json::from_str(
            r#"{"input_tokens":10,"output_tokens":1,"cache_creation_input_tokens":null,"cache_read_input_tokens":4}"#,
        )
        .unwrap();
        assert_eq!(u.cache_creation_input_tokens, 0);
        let delta: UsageDelta = serde_json::from_str(r#"{"output_tokens":15}"#).unwrap();
        u.overwrite(&delta);
        u.overwrite(&delta);
        assert_eq!((u.input_tokens, u.output_tokens), (10, 15));
        assert_eq!(u.total_input_tokens(), 14);
        let mut total = Usage::default();
        total.add(&u);
        total.add(&u);
        assert_eq!(total.output_tokens, 30);
    }
}
