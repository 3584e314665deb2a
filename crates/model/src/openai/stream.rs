//! The chat-completions stream: `data:` chunks of `choices[0].delta`
//! (`content`, `reasoning_content`, `tool_calls[{index, id,
//! function: {name, arguments}}]`), a `finish_reason`, an optional usage
//! chunk, then `data: [DONE]`. Folded into the same [`StreamEvent`]s and
//! [`MessageResponse`] as the Anthropic stream.

use crate::anthropic::stream::parse_input;
use crate::content::{ContentBlock, TextBlock, ThinkingBlock, ToolUseBlock};
use crate::error::{ApiError, ModelError};
use crate::event::StreamEvent;
use crate::openai::wire::{ChatUsage, stop_reason};
use crate::raw::RawJson;
use crate::request::Role;
use crate::response::{MessageResponse, Usage};
use crate::transport::excerpt;
use serde::Deserialize;
use std::collections::VecDeque;

#[derive(Deserialize)]
struct Chunk {
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    choices: Vec<ChunkChoice>,
    #[serde(default)]
    usage: Option<ChatUsage>,
    #[serde(default)]
    error: Option<serde_json::Value>,
}

#[derive(Deserialize)]
struct ChunkChoice {
    #[serde(default)]
    delta: Option<Delta>,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Deserialize)]
struct Delta {
    #[serde(default)]
    content: Option<String>,
    #[serde(default, alias = "reasoning")]
    reasoning_content: Option<String>,
    #[serde(default)]
    tool_calls: Vec<ToolCallDelta>,
}

#[derive(Deserialize)]
struct ToolCallDelta {
    #[serde(default)]
    index: Option<usize>,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    function: Option<FunctionDelta>,
}

#[derive(Deserialize)]
struct FunctionDelta {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    arguments: Option<String>,
}

enum Building {
    Thinking(ThinkingBlock),
    Text(TextBlock),
    Tool { block: ToolUseBlock, json: String },
    Done(ContentBlock),
}

/// Folds chat-completion chunks into a [`MessageResponse`].
pub(crate) struct ChunkAccumulator {
    request_id: Option<String>,
    id: String,
    model: String,
    blocks: Vec<Building>,
    /// Tool call index (the server's) → block index.
    tools: Vec<(usize, usize)>,
    finish_reason: Option<String>,
    usage: Usage,
    closed: bool,
}

impl ChunkAccumulator {
    pub fn new(request_id: Option<String>) -> ChunkAccumulator {
        ChunkAccumulator {
            request_id,
            id: String::new(),
            model: String::new(),
            blocks: Vec::new(),
            tools: Vec::new(),
            finish_reason: None,
            usage: Usage::default(),
            closed: false,
        }
    }

    /// The usage reported so far (servers send it last, if at all).
    pub fn usage(&self) -> Usage {
        self.usage.clone()
    }

    /// Whether the server has said why it stopped.
    pub fn finished(&self) -> bool {
        self.finish_reason.is_some()
    }

    /// Handles one `data:` payload; true at `[DONE]`.
    pub fn on_event(
        &mut self,
        data: &str,
        out: &mut VecDeque<StreamEvent>,
    ) -> Result<bool, ModelError> {
        if data.trim() == "[DONE]" {
            self.close(out)?;
            return Ok(true);
        }
        let chunk: Chunk = serde_json::from_str(data).map_err(|e| {
            ModelError::protocol(
                format!("a stream chunk is not JSON ({e}): {}", excerpt(data, 200)),
                self.request_id.as_deref(),
            )
        })?;
        if let Some(error) = chunk.error {
            return Err(self.error(&error));
        }
        if self.id.is_empty() {
            self.id = chunk.id.unwrap_or_default();
        }
        if self.model.is_empty() {
            self.model = chunk.model.unwrap_or_default();
        }
        if let Some(choice) = chunk.choices.into_iter().next() {
            if let Some(delta) = choice.delta {
                self.on_delta(delta, out)?;
            }
            if let Some(reason) = choice.finish_reason {
                self.finish_reason = Some(reason);
                self.close(out)?;
            }
        }
        if let Some(usage) = chunk.usage {
            self.usage = usage.to_usage();
            self.message_delta(out);
        }
        Ok(false)
    }

    /// At the end of a body without `[DONE]`: whole if a finish reason came.
    pub fn on_eof(&mut self, out: &mut VecDeque<StreamEvent>) -> bool {
        self.finished() && self.close(out).is_ok()
    }

    fn on_delta(
        &mut self,
        delta: Delta,
        out: &mut VecDeque<StreamEvent>,
    ) -> Result<(), ModelError> {
        if let Some(thinking) = delta.reasoning_content.filter(|s| !s.is_empty()) {
            let index = self.open_block(
                out,
                |b| matches!(b, Building::Thinking(_)),
                || Building::Thinking(ThinkingBlock::default()),
            );
            if let Some(Building::Thinking(t)) = self.blocks.get_mut(index) {
                t.thinking.push_str(&thinking);
            }
            out.push_back(StreamEvent::ThinkingDelta { index, thinking });
        }
        if let Some(text) = delta.content.filter(|s| !s.is_empty()) {
            let index = self.open_block(
                out,
                |b| matches!(b, Building::Text(_)),
                || Building::Text(TextBlock::default()),
            );
            if let Some(Building::Text(t)) = self.blocks.get_mut(index) {
                t.text.push_str(&text);
            }
            out.push_back(StreamEvent::TextDelta { index, text });
        }
        for (position, call) in delta.tool_calls.into_iter().enumerate() {
            self.on_tool_call(call, position, out)?;
        }
        Ok(())
    }

    fn on_tool_call(
        &mut self,
        call: ToolCallDelta,
        position: usize,
        out: &mut VecDeque<StreamEvent>,
    ) -> Result<(), ModelError> {
        let key = call.index.unwrap_or(position);
        let (name, arguments) = call
            .function
            .map(|f| (f.name, f.arguments))
            .unwrap_or_default();
        let index = match self.tools.iter().find(|(k, _)| *k == key) {
            Some(&(_, index)) => index,
            None => {
                self.stop_open_text(out)?;
                let block = ToolUseBlock {
                    id: call.id.unwrap_or_else(|| format!("call_{key}")),
                    name: name.unwrap_or_default(),
                    input: RawJson::empty_object(),
                    caller: None,
                    cache_control: None,
                };
                let index = self.blocks.len();
                out.push_back(StreamEvent::BlockStart {
                    index,
                    block: ContentBlock::ToolUse(block.clone()),
                });
                self.blocks.push(Building::Tool {
                    block,
                    json: String::new(),
                });
                self.tools.push((key, index));
                index
            }
        };
        if let Some(partial_json) = arguments.filter(|a| !a.is_empty()) {
            if let Some(Building::Tool { json, .. }) = self.blocks.get_mut(index) {
                json.push_str(&partial_json);
            }
            out.push_back(StreamEvent::InputJsonDelta {
                index,
                partial_json,
            });
        }
        Ok(())
    }

    /// The index of the last block if `is_kind` says it is the kind wanted
    /// and still open; otherwise closes open text and starts a new block.
    fn open_block(
        &mut self,
        out: &mut VecDeque<StreamEvent>,
        is_kind: impl Fn(&Building) -> bool,
        new: impl FnOnce() -> Building,
    ) -> usize {
        if let Some(last) = self.blocks.last()
            && is_kind(last)
        {
            return self.blocks.len() - 1;
        }
        // Text and thinking never fail to complete.
        let _ = self.stop_open_text(out);
        let building = new();
        let index = self.blocks.len();
        let block = match &building {
            Building::Thinking(t) => ContentBlock::Thinking(t.clone()),
            Building::Text(t) => ContentBlock::Text(t.clone()),
            Building::Tool { block, .. } => ContentBlock::ToolUse(block.clone()),
            Building::Done(b) => b.clone(),
        };
        out.push_back(StreamEvent::BlockStart { index, block });
        self.blocks.push(building);
        index
    }

    /// Stops the last block if it is text or thinking.
    fn stop_open_text(&mut self, out: &mut VecDeque<StreamEvent>) -> Result<(), ModelError> {
        let index = self.blocks.len().wrapping_sub(1);
        if matches!(
            self.blocks.last(),
            Some(Building::Text(_) | Building::Thinking(_))
        ) {
            self.stop(index, out)?;
        }
        Ok(())
    }

    fn stop(&mut self, index: usize, out: &mut VecDeque<StreamEvent>) -> Result<(), ModelError> {
        let Some(slot) = self.blocks.get_mut(index) else {
            return Ok(());
        };
        let building = std::mem::replace(slot, Building::Done(ContentBlock::text("")));
        let block = match building {
            Building::Thinking(t) => ContentBlock::Thinking(t),
            Building::Text(t) => ContentBlock::Text(t),
            Building::Tool { mut block, json } => {
                block.input = parse_input(index, &block.name, &json)?;
                ContentBlock::ToolUse(block)
            }
            Building::Done(block) => {
                *slot = Building::Done(block);
                return Ok(());
            }
        };
        out.push_back(StreamEvent::BlockStop {
            index,
            block: block.clone(),
        });
        *slot = Building::Done(block);
        Ok(())
    }

    /// Stops every open block and reports the stop reason (once).
    fn close(&mut self, out: &mut VecDeque<StreamEvent>) -> Result<(), ModelError> {
        if self.closed {
            return Ok(());
        }
        self.closed = true;
        for index in 0..self.blocks.len() {
            self.stop(index, out)?;
        }
        self.message_delta(out);
        Ok(())
    }

    fn message_delta(&self, out: &mut VecDeque<StreamEvent>) {
        out.push_back(StreamEvent::MessageDelta {
            stop_reason: self.stop_reason(),
            usage: self.usage.clone(),
        });
    }

    fn stop_reason(&self) -> Option<crate::response::StopReason> {
        stop_reason(self.finish_reason.as_deref(), !self.tools.is_empty())
    }

    fn error(&self, error: &serde_json::Value) -> ModelError {
        let field = |k: &str| error.get(k).and_then(|v| v.as_str()).map(str::to_owned);
        let error_type = field("type").or_else(|| field("code"));
        let message = field("message")
            .or_else(|| error.as_str().map(str::to_owned))
            .unwrap_or_else(|| error.to_string());
        ApiError::mid_stream(error_type, message, self.request_id.clone())
    }

    /// The message the chunks added up to.
    pub fn finish(mut self) -> Result<MessageResponse, ModelError> {
        let mut ignored = VecDeque::new();
        for index in 0..self.blocks.len() {
            self.stop(index, &mut ignored)?;
        }
        let stop_reason = self.stop_reason();
        let content = self
            .blocks
            .into_iter()
            .filter_map(|b| match b {
                Building::Done(block) => Some(block),
                _ => None,
            })
            .collect();
        Ok(MessageResponse {
            id: self.id,
            model: self.model,
            role: Role::Assistant,
            content,
            stop_reason,
            stop_sequence: None,
            usage: self.usage,
            container: None,
            context_management: None,
        })
    }
}
