//! The Anthropic stream: server-sent events folded into a message.
//!
//! `message_start` opens the message; `content_block_start`, `_delta` and
//! `_stop` build each block (text, thinking and signature, citations, tool
//! input as JSON fragments parsed at the stop); `message_delta` sets the
//! stop reason and overwrites the cumulative usage; `message_stop` ends it.
//! `ping` and unknown events are ignored; `error` is a typed error.

use crate::anthropic::delta::parse_content_delta;
use crate::content::{ContentBlock, RawBlock, TextBlock, ThinkingBlock, ToolUseBlock};
use crate::error::{ApiError, ModelError};
use crate::event::StreamEvent;
use crate::raw::RawJson;
use crate::response::{MessageResponse, StopReason, Usage, UsageDelta};
use crate::transport::excerpt;
use serde::Deserialize;
use serde::de::{Deserializer, Visitor};
use serde_json::value::RawValue;
use std::borrow::Cow;
use std::collections::VecDeque;
use std::fmt;

/// The event names this format defines; any other is ignored.
const KNOWN_EVENTS: [&str; 8] = [
    "message_start",
    "content_block_start",
    "content_block_delta",
    "content_block_stop",
    "message_delta",
    "message_stop",
    "ping",
    "error",
];

/// A string that borrows from the event's text when it has no escapes.
struct Str<'a>(Cow<'a, str>);

impl<'de: 'a, 'a> Deserialize<'de> for Str<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Str<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Str<'de>, E> {
                Ok(Str(Cow::Borrowed(v)))
            }
            fn visit_str<E>(self, v: &str) -> Result<Str<'de>, E> {
                Ok(Str(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E>(self, v: String) -> Result<Str<'de>, E> {
                Ok(Str(Cow::Owned(v)))
            }
        }
        d.deserialize_str(V)
    }
}

/// One event's data: its type and index, the delta parsed (it is what
/// most events carry), everything else kept as raw text for the rare events
/// that need it. Small on purpose: it is built for every event.
#[derive(Deserialize)]
struct WireEvent<'a> {
    #[serde(rename = "type", borrow)]
    kind: Str<'a>,
    #[serde(default)]
    index: Option<usize>,
    #[serde(default, borrow)]
    delta: Option<WireDelta<'a>>,
    #[serde(default, borrow)]
    content_block: Option<&'a RawValue>,
    #[serde(default, borrow)]
    message: Option<&'a RawValue>,
    #[serde(default, borrow)]
    usage: Option<&'a RawValue>,
    #[serde(default, borrow)]
    error: Option<&'a RawValue>,
    #[serde(default, borrow)]
    context_management: Option<&'a RawValue>,
}

/// A `content_block_delta`'s or `message_delta`'s delta. A content delta
/// carries exactly one payload, named after its type (`text`,
/// `partial_json`, `thinking`, `signature`), so one field takes them all.
#[derive(Deserialize)]
struct WireDelta<'a> {
    #[serde(rename = "type", default, borrow)]
    kind: Option<Str<'a>>,
    #[serde(
        default,
        borrow,
        alias = "partial_json",
        alias = "thinking",
        alias = "signature"
    )]
    text: Option<Str<'a>>,
    #[serde(default, borrow)]
    citation: Option<&'a RawValue>,
    #[serde(default, borrow)]
    stop_reason: Option<Str<'a>>,
    #[serde(default, borrow)]
    stop_sequence: Option<Str<'a>>,
    #[serde(default, borrow)]
    container: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct WireError<'a> {
    #[serde(rename = "type", default, borrow)]
    kind: Option<Str<'a>>,
    #[serde(default, borrow)]
    message: Option<Str<'a>>,
}

/// A block being built.
enum Building {
    Text(TextBlock),
    Thinking(ThinkingBlock),
    Tool {
        server: bool,
        block: ToolUseBlock,
        json: Option<String>,
    },
    Raw {
        raw: RawBlock,
        json: Option<String>,
    },
    Done(ContentBlock),
}

/// Folds Anthropic stream events into a [`MessageResponse`].
pub(crate) struct Accumulator {
    request_id: Option<String>,
    message: Option<MessageResponse>,
    blocks: Vec<Option<Building>>,
}

impl Accumulator {
    pub fn new(request_id: Option<String>) -> Accumulator {
        Accumulator {
            request_id,
            message: None,
            blocks: Vec::new(),
        }
    }

    /// Handles one event; true at `message_stop`.
    pub fn on_event(
        &mut self,
        name: Option<&str>,
        data: &str,
        out: &mut VecDeque<StreamEvent>,
    ) -> Result<bool, ModelError> {
        if let Some(d) = parse_content_delta(data) {
            self.apply_delta(d.index, d.kind, Some(d.payload), None, out)?;
            return Ok(false);
        }
        let event: WireEvent = match serde_json::from_str(data) {
            Ok(e) => e,
            Err(e) => {
                let name = name.map(str::trim);
                if name.is_some_and(|n| !KNOWN_EVENTS.contains(&n)) {
                    tracing::debug!(?name, "ignoring an unknown event");
                    return Ok(false);
                }
                return Err(self.malformed(name, data, &e));
            }
        };
        match &*event.kind.0 {
            "content_block_delta" => self.on_delta(&event, out)?,
            "message_start" => self.on_start(&event)?,
            "content_block_start" => self.on_block_start(&event, out)?,
            "content_block_stop" => self.on_block_stop(&event, out)?,
            "message_delta" => self.on_message_delta(&event, out)?,
            "message_stop" => return Ok(true),
            "error" => return Err(self.error_event(&event)),
            "ping" => {}
            other => tracing::debug!(event = other, "ignoring an unknown event"),
        }
        Ok(false)
    }

    fn on_start(&mut self, event: &WireEvent) -> Result<(), ModelError> {
        let raw = event
            .message
            .ok_or_else(|| self.bad("message_start without a message"))?;
        let message: MessageResponse = serde_json::from_str(raw.get())
            .map_err(|e| self.bad(&format!("message_start's message does not parse: {e}")))?;
        self.blocks = message
            .content
            .iter()
            .map(|b| Some(Building::Done(b.clone())))
            .collect();
        self.message = Some(message);
        Ok(())
    }

    fn on_block_start(
        &mut self,
        event: &WireEvent,
        out: &mut VecDeque<StreamEvent>,
    ) -> Result<(), ModelError> {
        self.started("content_block_start")?;
        let index = self.index(event, "content_block_start")?;
        let raw = event
            .content_block
            .ok_or_else(|| self.bad("content_block_start without a content_block"))?;
        let block = RawJson::parse(raw.get())
            .and_then(ContentBlock::from_raw)
            .map_err(|e| self.bad(&format!("content_block_start's block does not parse: {e}")))?;
        out.push_back(StreamEvent::BlockStart {
            index,
            block: block.clone(),
        });
        let building = match block {
            ContentBlock::Text(t) => Building::Text(t),
            ContentBlock::Thinking(t) => Building::Thinking(t),
            ContentBlock::ToolUse(block) => Building::Tool {
                server: false,
                block,
                json: None,
            },
            ContentBlock::ServerToolUse(block) => Building::Tool {
                server: true,
                block,
                json: None,
            },
            ContentBlock::Raw(raw) => Building::Raw { raw, json: None },
            other => Building::Done(other),
        };
        if self.blocks.len() <= index {
            self.blocks.resize_with(index + 1, || None);
        }
        self.blocks[index] = Some(building);
        Ok(())
    }

    fn on_delta(
        &mut self,
        event: &WireEvent,
        out: &mut VecDeque<StreamEvent>,
    ) -> Result<(), ModelError> {
        let index = self.index(event, "content_block_delta")?;
        let delta = event
            .delta
            .as_ref()
            .ok_or_else(|| self.bad("content_block_delta without a delta"))?;
        let kind = delta.kind.as_ref().map_or("", |k| &k.0);
        let payload = delta.text.as_ref().map(|t| Cow::Borrowed(&*t.0));
        self.apply_delta(index, kind, payload, delta.citation, out)
    }

    /// Adds a delta to its block and tells the caller.
    fn apply_delta(
        &mut self,
        index: usize,
        kind: &str,
        payload: Option<Cow<str>>,
        citation: Option<&RawValue>,
        out: &mut VecDeque<StreamEvent>,
    ) -> Result<(), ModelError> {
        let request_id = self.request_id.as_deref();
        let Some(Some(block)) = self.blocks.get_mut(index) else {
            return Err(ModelError::protocol(
                format!("{kind} for block {index}, which has not started"),
                request_id,
            ));
        };
        let mismatch = |what: &str| {
            ModelError::protocol(
                format!("{kind} for block {index}, which is not {what}"),
                request_id,
            )
        };
        let payload = || payload.map_or_else(String::new, Cow::into_owned);
        let emitted = match (kind, block) {
            ("text_delta", Building::Text(t)) => {
                let text = payload();
                t.text.push_str(&text);
                StreamEvent::TextDelta { index, text }
            }
            ("input_json_delta", Building::Tool { json, .. } | Building::Raw { json, .. }) => {
                let partial_json = payload();
                json.get_or_insert_with(String::new).push_str(&partial_json);
                StreamEvent::InputJsonDelta {
                    index,
                    partial_json,
                }
            }
            ("thinking_delta", Building::Thinking(t)) => {
                let thinking = payload();
                t.thinking.push_str(&thinking);
                StreamEvent::ThinkingDelta { index, thinking }
            }
            ("signature_delta", Building::Thinking(t)) => {
                let signature = payload();
                t.signature.push_str(&signature);
                StreamEvent::SignatureDelta { index, signature }
            }
            ("citations_delta", Building::Text(t)) => {
                let citation = citation
                    .and_then(|c| RawJson::parse(c.get()).ok())
                    .ok_or_else(|| mismatch("given a citation"))?;
                t.citations.push(citation.clone());
                StreamEvent::CitationDelta { index, citation }
            }
            ("text_delta" | "citations_delta", _) => return Err(mismatch("a text block")),
            ("thinking_delta" | "signature_delta", _) => return Err(mismatch("a thinking block")),
            ("input_json_delta", _) => return Err(mismatch("a tool call")),
            (other, _) => {
                tracing::debug!(delta = other, "ignoring an unknown delta");
                return Ok(());
            }
        };
        out.push_back(emitted);
        Ok(())
    }

    fn on_block_stop(
        &mut self,
        event: &WireEvent,
        out: &mut VecDeque<StreamEvent>,
    ) -> Result<(), ModelError> {
        let index = self.index(event, "content_block_stop")?;
        let building = self
            .blocks
            .get_mut(index)
            .and_then(Option::take)
            .ok_or_else(|| {
                self.bad(&format!(
                    "content_block_stop for block {index}, which has not started"
                ))
            })?;
        let block = self.complete(index, building)?;
        out.push_back(StreamEvent::BlockStop {
            index,
            block: block.clone(),
        });
        self.blocks[index] = Some(Building::Done(block));
        Ok(())
    }

    /// A block's final form: tool input parsed from its fragments.
    fn complete(&self, index: usize, building: Building) -> Result<ContentBlock, ModelError> {
        Ok(match building {
            Building::Text(t) => ContentBlock::Text(t),
            Building::Thinking(t) => ContentBlock::Thinking(t),
            Building::Tool {
                server,
                mut block,
                json,
            } => {
                if let Some(json) = json {
                    block.input = parse_input(index, &block.name, &json)?;
                }
                if server {
                    ContentBlock::ServerToolUse(block)
                } else {
                    ContentBlock::ToolUse(block)
                }
            }
            Building::Raw { mut raw, json } => {
                if let Some(json) = json {
                    let input = parse_input(index, &raw.block_type, &json)?;
                    raw.json = raw.json.with_field("input", Some(&input)).map_err(|e| {
                        self.bad(&format!("cannot set the input of block {index}: {e}"))
                    })?;
                }
                ContentBlock::Raw(raw)
            }
            Building::Done(block) => block,
        })
    }

    fn on_message_delta(
        &mut self,
        event: &WireEvent,
        out: &mut VecDeque<StreamEvent>,
    ) -> Result<(), ModelError> {
        self.started("message_delta")?;
        let Some(message) = self.message.as_mut() else {
            return Ok(());
        };
        if let Some(delta) = &event.delta {
            if let Some(reason) = &delta.stop_reason {
                message.stop_reason = Some(StopReason::parse(&reason.0));
            }
            if let Some(seq) = &delta.stop_sequence {
                message.stop_sequence = Some(seq.0.to_string());
            }
            if let Some(c) = delta.container.and_then(|c| RawJson::parse(c.get()).ok()) {
                message.container = Some(c);
            }
        }
        if let Some(cm) = event.context_management {
            message.context_management = RawJson::parse(cm.get()).ok();
        }
        if let Some(usage) = event.usage {
            let usage: UsageDelta = serde_json::from_str(usage.get()).map_err(|e| {
                ModelError::protocol(
                    format!("message_delta's usage does not parse: {e}"),
                    self.request_id.as_deref(),
                )
            })?;
            message.usage.overwrite(&usage);
        }
        out.push_back(StreamEvent::MessageDelta {
            stop_reason: message.stop_reason.clone(),
            usage: message.usage.clone(),
        });
        Ok(())
    }

    /// The usage reported so far (none before `message_start`).
    pub fn usage(&self) -> Usage {
        self.message
            .as_ref()
            .map(|m| m.usage.clone())
            .unwrap_or_default()
    }

    /// The message the events added up to.
    pub fn finish(mut self) -> Result<MessageResponse, ModelError> {
        let mut message = self
            .message
            .take()
            .ok_or_else(|| self.bad("the stream ended without message_start"))?;
        let blocks = std::mem::take(&mut self.blocks);
        message.content = Vec::with_capacity(blocks.len());
        for (index, building) in blocks.into_iter().enumerate() {
            if let Some(building) = building {
                message.content.push(self.complete(index, building)?);
            }
        }
        Ok(message)
    }

    fn error_event(&self, event: &WireEvent) -> ModelError {
        let error: Option<WireError> = event.error.and_then(|e| serde_json::from_str(e.get()).ok());
        let error_type = error
            .as_ref()
            .and_then(|e| e.kind.as_ref())
            .map(|k| k.0.to_string());
        let message = error
            .as_ref()
            .and_then(|e| e.message.as_ref())
            .map_or_else(|| "(no message)".to_owned(), |m| m.0.to_string());
        ApiError::mid_stream(error_type, message, self.request_id.clone())
    }

    fn started(&self, what: &str) -> Result<(), ModelError> {
        match self.message {
            Some(_) => Ok(()),
            None => Err(self.bad(&format!("{what} before message_start"))),
        }
    }

    fn index(&self, event: &WireEvent, what: &str) -> Result<usize, ModelError> {
        event
            .index
            .ok_or_else(|| self.bad(&format!("{what} without an index")))
    }

    fn bad(&self, message: &str) -> ModelError {
        ModelError::protocol(message, self.request_id.as_deref())
    }

    fn malformed(&self, name: Option<&str>, data: &str, e: &serde_json::Error) -> ModelError {
        self.bad(&format!(
            "event {} carries data that is not the expected JSON ({e}): {}",
            name.unwrap_or("(unnamed)"),
            excerpt(data, 200)
        ))
    }
}

/// A tool's input from its concatenated fragments: none at all means `{}`.
pub(crate) fn parse_input(index: usize, tool: &str, json: &str) -> Result<RawJson, ModelError> {
    if json.trim().is_empty() {
        return Ok(RawJson::empty_object());
    }
    RawJson::parse(json).map_err(|e| ModelError::InvalidToolInput {
        index,
        tool: tool.to_owned(),
        message: e.to_string(),
        excerpt: excerpt(json, 200),
    })
}
