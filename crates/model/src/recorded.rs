//! Answers served from a record instead of an API (`hc replay`): each
//! call takes the next recorded reply, streamed as the Messages API
//! streams it, so everything above the client — the decoder, the
//! notices, the agent — runs as it does against a server. The record is
//! the caller's to read (the model crate knows no substrate); nothing
//! goes over a network.

use crate::error::ModelError;
use crate::response::MessageResponse;
use crate::stream::{MessageStream, WireFormat};
use bytes::Bytes;
use serde_json::{Value, json};
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

/// Recorded replies, served in order.
#[derive(Debug, Clone, Default)]
pub struct RecordedClient {
    answers: Arc<Mutex<VecDeque<MessageResponse>>>,
}

impl RecordedClient {
    /// A client that serves `answers`, one a call, in order.
    pub fn new(answers: Vec<MessageResponse>) -> RecordedClient {
        RecordedClient {
            answers: Arc::new(Mutex::new(answers.into())),
        }
    }

    fn next(&self) -> Result<MessageResponse, ModelError> {
        let mut answers = self.answers.lock().unwrap_or_else(|e| e.into_inner());
        answers.pop_front().ok_or_else(|| {
            ModelError::Unsupported(
                "the record has no more answers: this call was not made when the session was \
                 recorded"
                    .to_owned(),
            )
        })
    }

    /// The next recorded reply, whole.
    pub fn create(&self) -> Result<MessageResponse, ModelError> {
        self.next()
    }

    /// The next recorded reply, streamed.
    pub fn stream(&self) -> Result<MessageStream, ModelError> {
        let sse = sse_of(&self.next()?);
        let body = futures_util::stream::iter([Ok::<Bytes, std::io::Error>(Bytes::from(sse))]);
        Ok(MessageStream::from_sse_bytes(WireFormat::Anthropic, body))
    }
}

/// `reply` as the Messages API streams it.
fn sse_of(reply: &MessageResponse) -> String {
    let mut out = String::new();
    let mut event = |name: &str, data: Value| {
        out.push_str(&format!("event: {name}\ndata: {data}\n\n"));
    };
    let usage = serde_json::to_value(&reply.usage).unwrap_or(json!({}));
    event(
        "message_start",
        json!({"type": "message_start", "message": {
            "id": reply.id, "type": "message", "role": "assistant", "model": reply.model,
            "content": [], "stop_reason": null, "stop_sequence": null, "usage": usage}}),
    );
    for (index, block) in reply.content.iter().enumerate() {
        let block = serde_json::to_value(block).unwrap_or(json!({}));
        let (start, delta) = split(&block);
        event(
            "content_block_start",
            json!({"type": "content_block_start", "index": index, "content_block": start}),
        );
        for d in delta {
            event(
                "content_block_delta",
                json!({"type": "content_block_delta", "index": index, "delta": d}),
            );
        }
        event(
            "content_block_stop",
            json!({"type": "content_block_stop", "index": index}),
        );
    }
    event(
        "message_delta",
        json!({"type": "message_delta",
               "delta": {"stop_reason": reply.stop_reason, "stop_sequence": reply.stop_sequence},
               "usage": usage}),
    );
    event("message_stop", json!({"type": "message_stop"}));
    out
}

/// A block's start and its deltas (whole, one each).
fn split(block: &Value) -> (Value, Vec<Value>) {
    match block["type"].as_str().unwrap_or_default() {
        "text" => (
            json!({"type": "text", "text": ""}),
            vec![json!({"type": "text_delta", "text": block["text"]})],
        ),
        "thinking" => (
            json!({"type": "thinking", "thinking": ""}),
            vec![
                json!({"type": "thinking_delta", "thinking": block["thinking"]}),
                json!({"type": "signature_delta", "signature": block["signature"]}),
            ],
        ),
        "tool_use" | "server_tool_use" => {
            let mut start = block.clone();
            start["input"] = json!({});
            let input = block
                .get("input")
                .map_or_else(|| "{}".to_owned(), Value::to_string);
            (
                start,
                vec![json!({"type": "input_json_delta", "partial_json": input})],
            )
        }
        _ => (block.clone(), Vec::new()),
    }
}
