//! The script: what the fake answers, turn by turn (format in the crate
//! docs).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use std::collections::BTreeMap;
use std::path::Path;

/// A whole script.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Script {
    /// The turns, one per request to `/v1/messages` or
    /// `/v1/chat/completions`, in order.
    pub turns: Vec<Turn>,
    /// Start again from the first turn after the last (default: the fake
    /// answers 400 once the script is exhausted).
    #[serde(default)]
    pub cycle: bool,
    /// Pacing for every turn (each turn may override fields).
    #[serde(default)]
    pub pace: Pace,
    /// When set, requests must carry this key (`x-api-key` or
    /// `Authorization: Bearer`) or get 401.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_key: Option<String>,
    /// Models served besides those the real API serves
    /// ([`crate::models::KNOWN`]): another provider's, or one a test
    /// makes up. On `/v1/chat/completions`, when given, the only ones
    /// served (a local server serves what it has).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub models: Vec<String>,
}

/// One answer. Exactly one of `reply`, `error` and `sse` is set.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Turn {
    /// A message, streamed or whole as the request asks, in the format of
    /// the endpoint it was asked on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reply: Option<Reply>,
    /// An HTTP error.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorReply>,
    /// A server-sent-event body sent exactly as written (for shapes and
    /// malformations a reply cannot express).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sse: Option<String>,
    /// Pacing for this turn, over the script's.
    #[serde(default)]
    pub pace: Pace,
    /// A fault in a streamed answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fault: Option<Fault>,
    /// Answer only a request whose last message holds this text (for
    /// agents calling at once: each takes the turn meant for it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub when: Option<String>,
}

/// A scripted message, in the Anthropic shape.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Reply {
    /// Content blocks, as the API would send them.
    pub content: Vec<Value>,
    /// The stop reason (default `end_turn`).
    #[serde(default = "end_turn")]
    pub stop_reason: Option<String>,
    /// The stop sequence, for `stop_sequence`.
    #[serde(default)]
    pub stop_sequence: Option<String>,
    /// Usage (default zero input, and output counted from the content).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Value>,
    /// The message id (default `msg_fake_N`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// The model (default: the request's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The code-execution container.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub container: Option<Value>,
}

fn end_turn() -> Option<String> {
    Some("end_turn".to_owned())
}

/// A scripted HTTP error.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ErrorReply {
    /// The status, e.g. 429.
    pub status: u16,
    /// `error.type` (default: the API's type for the status).
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub error_type: Option<String>,
    /// `error.message`.
    #[serde(default = "default_error_message")]
    pub message: String,
    /// Extra response headers, e.g. `retry-after-ms`, `x-should-retry`.
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
}

fn default_error_message() -> String {
    "scripted error".to_owned()
}

/// Pacing. Unset fields fall back to the script's, then to the defaults.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Pace {
    /// Wait before each piece of a streamed body after the first (default 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delay_ms: Option<u64>,
    /// Wait before the response headers (default 0): a slow first byte.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_byte_delay_ms: Option<u64>,
    /// Characters per text or thinking delta (default 16; 0: one delta).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text_chunk: Option<usize>,
    /// Characters per tool-input fragment (default 16; 0: one fragment).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub json_chunk: Option<usize>,
    /// A `ping` after every this many events, besides the one after
    /// `message_start` (default 0: none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ping_every: Option<usize>,
    /// Bytes per written piece; 0 writes each event whole (default 0).
    /// Pieces may split lines and UTF-8 characters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chunk_bytes: Option<usize>,
}

impl Pace {
    /// `self`'s fields, else `base`'s.
    pub fn over(self, base: Pace) -> Pace {
        Pace {
            delay_ms: self.delay_ms.or(base.delay_ms),
            first_byte_delay_ms: self.first_byte_delay_ms.or(base.first_byte_delay_ms),
            text_chunk: self.text_chunk.or(base.text_chunk),
            json_chunk: self.json_chunk.or(base.json_chunk),
            ping_every: self.ping_every.or(base.ping_every),
            chunk_bytes: self.chunk_bytes.or(base.chunk_bytes),
        }
    }

    pub(crate) fn text_chunk(&self) -> usize {
        self.text_chunk.unwrap_or(16)
    }

    pub(crate) fn json_chunk(&self) -> usize {
        self.json_chunk.unwrap_or(16)
    }
}

/// A fault in a streamed answer, after `after_events` events (pieces of
/// an `sse` turn) have been sent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum Fault {
    /// The connection is cut.
    Drop {
        /// Events sent first.
        after_events: usize,
    },
    /// An `error` event, and the end of the stream.
    ErrorEvent {
        /// Events sent first.
        after_events: usize,
        /// `error.type`, e.g. `overloaded_error`.
        #[serde(rename = "type")]
        error_type: String,
        /// `error.message`.
        message: String,
    },
    /// An event whose data is cut-off JSON; the stream then goes on.
    Malformed {
        /// Events sent first.
        after_events: usize,
    },
    /// Silence for `ms` milliseconds, then the rest of the stream.
    Stall {
        /// Events sent first.
        after_events: usize,
        /// How long.
        ms: u64,
    },
}

/// A script that cannot be used, with what to fix.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct ScriptError(pub String);

impl Script {
    /// A script with these turns and default pacing.
    pub fn new(turns: Vec<Turn>) -> Script {
        Script {
            turns,
            ..Script::default()
        }
    }

    /// Reads and checks a script file.
    ///
    /// # Errors
    /// An unreadable file, invalid JSON (with line and column), or a turn
    /// that is not exactly one of reply, error and sse.
    pub fn load(path: &Path) -> Result<Script, ScriptError> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| ScriptError(format!("cannot read the script {}: {e}", path.display())))?;
        Script::from_json(&text)
            .map_err(|ScriptError(e)| ScriptError(format!("{}: {e}", path.display())))
    }

    /// Parses and checks a script.
    ///
    /// # Errors
    /// As [`load`](Self::load).
    pub fn from_json(text: &str) -> Result<Script, ScriptError> {
        let script: Script = serde_json::from_str(text).map_err(|e| {
            ScriptError(format!(
                "not a valid script ({e}); see the testkit crate docs for the format"
            ))
        })?;
        script.validate()?;
        Ok(script)
    }

    /// Checks every turn.
    ///
    /// # Errors
    /// The first turn that is not exactly one of reply, error and sse.
    pub fn validate(&self) -> Result<(), ScriptError> {
        if self.turns.is_empty() {
            return Err(ScriptError(
                "the script has no turns; add at least one".into(),
            ));
        }
        for (i, turn) in self.turns.iter().enumerate() {
            let set = [
                turn.reply.is_some(),
                turn.error.is_some(),
                turn.sse.is_some(),
            ];
            if set.iter().filter(|s| **s).count() != 1 {
                return Err(ScriptError(format!(
                    "turn {} must have exactly one of \"reply\", \"error\" and \"sse\"",
                    i + 1
                )));
            }
            if let Some(r) = &turn.reply
                && let Some(bad) = r.content.iter().position(|b| !b["type"].is_string())
            {
                return Err(ScriptError(format!(
                    "turn {}: content block {} has no \"type\"",
                    i + 1,
                    bad + 1
                )));
            }
        }
        Ok(())
    }
}

impl Turn {
    /// A reply turn.
    pub fn reply(reply: Reply) -> Turn {
        Turn {
            reply: Some(reply),
            ..Turn::default()
        }
    }

    /// An error turn with the API's type for `status`.
    pub fn error(status: u16, message: impl Into<String>) -> Turn {
        Turn {
            error: Some(ErrorReply {
                status,
                error_type: None,
                message: message.into(),
                headers: BTreeMap::new(),
            }),
            ..Turn::default()
        }
    }

    /// A raw server-sent-event body.
    pub fn sse(body: impl Into<String>) -> Turn {
        Turn {
            sse: Some(body.into()),
            ..Turn::default()
        }
    }

    /// This turn with a response header (error turns).
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Turn {
        if let Some(e) = self.error.as_mut() {
            e.headers.insert(name.into(), value.into());
        }
        self
    }

    /// This turn with `error.type` set (error turns).
    pub fn error_type(mut self, error_type: impl Into<String>) -> Turn {
        if let Some(e) = self.error.as_mut() {
            e.error_type = Some(error_type.into());
        }
        self
    }

    /// This turn with pacing.
    pub fn pace(mut self, pace: Pace) -> Turn {
        self.pace = pace;
        self
    }

    /// This turn with a fault.
    pub fn fault(mut self, fault: Fault) -> Turn {
        self.fault = Some(fault);
        self
    }
}

impl Reply {
    /// A reply of these blocks, stopping for `stop_reason`.
    pub fn new(content: Vec<Value>, stop_reason: &str) -> Reply {
        Reply {
            content,
            stop_reason: Some(stop_reason.to_owned()),
            stop_sequence: None,
            usage: None,
            id: None,
            model: None,
            container: None,
        }
    }

    /// A reply of one text block.
    pub fn text(text: &str) -> Reply {
        Reply::new(vec![json!({"type": "text", "text": text})], "end_turn")
    }

    /// This reply with usage.
    pub fn usage(mut self, usage: Value) -> Reply {
        self.usage = Some(usage);
        self
    }

    /// The usage to report: the scripted one, or zero input and one output
    /// token per four characters of content.
    pub(crate) fn usage_or_default(&self) -> Map<String, Value> {
        if let Some(Value::Object(u)) = &self.usage {
            return u.clone();
        }
        let chars: usize = self.content.iter().map(|b| b.to_string().len()).sum();
        let mut u = Map::new();
        u.insert("input_tokens".into(), json!(0));
        u.insert("output_tokens".into(), json!(chars.div_ceil(4)));
        u
    }
}

/// The `error.type` the API uses for `status`.
pub fn error_type_for(status: u16) -> &'static str {
    match status {
        400 => "invalid_request_error",
        401 => "authentication_error",
        402 => "billing_error",
        403 => "permission_error",
        404 => "not_found_error",
        413 => "request_too_large",
        429 => "rate_limit_error",
        504 => "timeout_error",
        529 => "overloaded_error",
        _ => "api_error",
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn a_turn_must_be_exactly_one_thing() {
        let err = Script::from_json(r#"{"turns": [{"sse": "x", "error": {"status": 500}}]}"#)
            .unwrap_err();
        assert!(err.to_string().contains("exactly one"), "{err}");
        let err = Script::from_json(r#"{"turns": [{"replay": {}}]}"#).unwrap_err();
        assert!(err.to_string().contains("unknown field `replay`"), "{err}");
        let err = Script::from_json(r#"{"turns": []}"#).unwrap_err();
        assert!(err.to_string().contains("no turns"), "{err}");
    }

    #[test]
    fn turn_pacing_overrides_the_script_field_by_field() {
        let script = Script::from_json(
            r#"{"pace": {"delay_ms": 5, "text_chunk": 3},
                "turns": [{"reply": {"content": [{"type": "text", "text": "hi"}]}, "pace": {"delay_ms": 7}}]}"#,
        )
        .unwrap();
        let pace = script.turns[0].pace.over(script.pace);
        assert_eq!((pace.delay_ms, pace.text_chunk), (Some(7), Some(3)));
        let reply = script.turns[0].reply.as_ref().unwrap();
        assert_eq!(reply.stop_reason.as_deref(), Some("end_turn"));
    }
}
