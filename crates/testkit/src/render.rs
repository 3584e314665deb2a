//! Turning a scripted [`Reply`] into what the real APIs send: Anthropic
//! server-sent events or a whole message, OpenAI chat-completion chunks or
//! a whole completion.

use crate::script::{Pace, Reply};
use bytes::Bytes;
use serde_json::{Map, Value, json};

/// What the reply is called and who made it.
pub(crate) struct Names<'a> {
    pub id: &'a str,
    pub model: &'a str,
}

/// One server-sent event.
pub(crate) fn event(name: &str, data: &Value) -> Bytes {
    Bytes::from(format!("event: {name}\ndata: {data}\n\n"))
}

/// The whole message, as `POST /v1/messages` returns it.
pub(crate) fn anthropic_message(reply: &Reply, names: &Names) -> Value {
    let mut m = json!({
        "id": names.id,
        "type": "message",
        "role": "assistant",
        "model": names.model,
        "content": reply.content,
        "stop_reason": reply.stop_reason,
        "stop_sequence": reply.stop_sequence,
        "usage": reply.usage_or_default(),
    });
    if let Some(c) = &reply.container {
        m["container"] = c.clone();
    }
    m
}

/// The stream of events the API sends for `reply`, in its documented
/// order: `message_start`, a `ping`, each block's start, deltas and stop,
/// `message_delta`, `message_stop`.
pub(crate) fn anthropic_events(reply: &Reply, names: &Names, pace: &Pace) -> Vec<Bytes> {
    let usage = reply.usage_or_default();
    let mut start_usage = usage.clone();
    let output = usage
        .get("output_tokens")
        .and_then(Value::as_u64)
        .unwrap_or(0);
    start_usage.insert("output_tokens".into(), json!(output.min(1)));
    start_usage.remove("server_tool_use");
    let mut message = anthropic_message(reply, names);
    message["content"] = json!([]);
    message["stop_reason"] = Value::Null;
    message["stop_sequence"] = Value::Null;
    message["usage"] = Value::Object(start_usage);
    let mut events = vec![
        event(
            "message_start",
            &json!({"type": "message_start", "message": message}),
        ),
        event("ping", &json!({"type": "ping"})),
    ];
    for (index, block) in reply.content.iter().enumerate() {
        block_events(index, block, pace, &mut events);
    }
    events.push(event(
        "message_delta",
        &json!({"type": "message_delta",
                "delta": {"stop_reason": reply.stop_reason, "stop_sequence": reply.stop_sequence},
                "usage": usage}),
    ));
    events.push(event("message_stop", &json!({"type": "message_stop"})));
    with_pings(events, pace.ping_every.unwrap_or(0))
}

fn block_events(index: usize, block: &Value, pace: &Pace, out: &mut Vec<Bytes>) {
    let kind = block["type"].as_str().unwrap_or_default();
    let delta = |delta: Value| {
        event(
            "content_block_delta",
            &json!({"type": "content_block_delta", "index": index, "delta": delta}),
        )
    };
    let mut start = block.clone();
    let mut deltas = Vec::new();
    match kind {
        "text" => {
            start = json!({"type": "text", "text": ""});
            for citation in block["citations"].as_array().into_iter().flatten() {
                deltas.push(delta(
                    json!({"type": "citations_delta", "citation": citation}),
                ));
            }
            for piece in split_chars(
                block["text"].as_str().unwrap_or_default(),
                pace.text_chunk(),
            ) {
                deltas.push(delta(json!({"type": "text_delta", "text": piece})));
            }
        }
        "thinking" => {
            start = json!({"type": "thinking", "thinking": ""});
            let text = block["thinking"].as_str().unwrap_or_default();
            for piece in split_chars(text, pace.text_chunk()) {
                deltas.push(delta(json!({"type": "thinking_delta", "thinking": piece})));
            }
            let signature = block["signature"].as_str().unwrap_or_default();
            deltas.push(delta(
                json!({"type": "signature_delta", "signature": signature}),
            ));
        }
        "tool_use" | "server_tool_use" => {
            start["input"] = json!({});
            let input = block
                .get("input")
                .map_or_else(|| "{}".to_owned(), Value::to_string);
            // The API's first fragment is empty.
            deltas.push(delta(
                json!({"type": "input_json_delta", "partial_json": ""}),
            ));
            for piece in split_chars(&input, pace.json_chunk()) {
                deltas.push(delta(
                    json!({"type": "input_json_delta", "partial_json": piece}),
                ));
            }
        }
        _ => {}
    }
    out.push(event(
        "content_block_start",
        &json!({"type": "content_block_start", "index": index, "content_block": start}),
    ));
    out.extend(deltas);
    out.push(event(
        "content_block_stop",
        &json!({"type": "content_block_stop", "index": index}),
    ));
}

/// A `ping` after every `every` events (after the first two, which
/// already include one).
fn with_pings(events: Vec<Bytes>, every: usize) -> Vec<Bytes> {
    if every == 0 {
        return events;
    }
    let ping = event("ping", &json!({"type": "ping"}));
    let mut out = Vec::with_capacity(events.len() + events.len() / every);
    let last = events.len().saturating_sub(1);
    for (i, e) in events.into_iter().enumerate() {
        out.push(e);
        if i >= 2 && i < last && (i - 1) % every == 0 {
            out.push(ping.clone());
        }
    }
    out
}

/// The API's `error` event.
pub(crate) fn anthropic_error_event(error_type: &str, message: &str) -> Bytes {
    event(
        "error",
        &json!({"type": "error", "error": {"type": error_type, "message": message}}),
    )
}

/// `text` in pieces of at most `n` characters (whole when `n` is 0).
pub(crate) fn split_chars(text: &str, n: usize) -> Vec<String> {
    if n == 0 || text.is_empty() {
        return vec![text.to_owned()];
    }
    let chars: Vec<char> = text.chars().collect();
    chars.chunks(n).map(|c| c.iter().collect()).collect()
}

/// The chat-completion usage for an Anthropic-shaped usage.
fn openai_usage(usage: &Map<String, Value>) -> Value {
    let n = |k: &str| usage.get(k).and_then(Value::as_u64).unwrap_or(0);
    let cached = n("cache_read_input_tokens");
    let prompt = n("input_tokens") + cached + n("cache_creation_input_tokens");
    let completion = n("output_tokens");
    json!({"prompt_tokens": prompt, "completion_tokens": completion,
           "total_tokens": prompt + completion,
           "prompt_tokens_details": {"cached_tokens": cached}})
}

fn finish_reason(stop_reason: Option<&str>) -> &str {
    match stop_reason {
        Some("tool_use") => "tool_calls",
        Some("max_tokens") | Some("model_context_window_exceeded") => "length",
        Some("refusal") => "content_filter",
        _ => "stop",
    }
}

fn texts<'a>(reply: &'a Reply, kind: &str, field: &str) -> String {
    reply
        .content
        .iter()
        .filter(|b| b["type"] == kind)
        .filter_map(|b| b[field].as_str())
        .collect::<Vec<&'a str>>()
        .concat()
}

fn tool_calls(reply: &Reply) -> Vec<(&str, &str, String)> {
    reply
        .content
        .iter()
        .filter(|b| b["type"] == "tool_use")
        .map(|b| {
            let args = b
                .get("input")
                .map_or_else(|| "{}".to_owned(), Value::to_string);
            (
                b["id"].as_str().unwrap_or_default(),
                b["name"].as_str().unwrap_or_default(),
                args,
            )
        })
        .collect()
}

/// The whole chat completion: reasoning, text and tool calls of `reply`
/// (other blocks have no chat-completions form and are left out).
pub(crate) fn openai_completion(reply: &Reply, names: &Names) -> Value {
    let text = texts(reply, "text", "text");
    let mut message = json!({"role": "assistant", "content": if text.is_empty() { Value::Null } else { json!(text) }});
    let reasoning = texts(reply, "thinking", "thinking");
    if !reasoning.is_empty() {
        message["reasoning_content"] = json!(reasoning);
    }
    let calls: Vec<Value> = tool_calls(reply)
        .into_iter()
        .map(|(id, name, args)| json!({"id": id, "type": "function", "function": {"name": name, "arguments": args}}))
        .collect();
    if !calls.is_empty() {
        message["tool_calls"] = Value::Array(calls);
    }
    json!({
        "id": names.id, "object": "chat.completion", "created": 0, "model": names.model,
        "choices": [{"index": 0, "message": message,
                     "finish_reason": finish_reason(reply.stop_reason.as_deref())}],
        "usage": openai_usage(&reply.usage_or_default()),
    })
}

/// The chat-completion chunks for `reply`, ending with `data: [DONE]`.
pub(crate) fn openai_chunks(reply: &Reply, names: &Names, pace: &Pace, usage: bool) -> Vec<Bytes> {
    let chunk = |choices: Value| {
        let c = json!({"id": names.id, "object": "chat.completion.chunk", "created": 0,
                       "model": names.model, "choices": choices});
        Bytes::from(format!("data: {c}\n\n"))
    };
    let delta = |d: Value| chunk(json!([{"index": 0, "delta": d, "finish_reason": null}]));
    let mut out = vec![delta(json!({"role": "assistant", "content": ""}))];
    for piece in split_chars(&texts(reply, "thinking", "thinking"), pace.text_chunk()) {
        if !piece.is_empty() {
            out.push(delta(json!({"reasoning_content": piece})));
        }
    }
    for piece in split_chars(&texts(reply, "text", "text"), pace.text_chunk()) {
        if !piece.is_empty() {
            out.push(delta(json!({"content": piece})));
        }
    }
    for (k, (id, name, args)) in tool_calls(reply).into_iter().enumerate() {
        out.push(delta(
            json!({"tool_calls": [{"index": k, "id": id, "type": "function",
                                               "function": {"name": name, "arguments": ""}}]}),
        ));
        for piece in split_chars(&args, pace.json_chunk()) {
            out.push(delta(
                json!({"tool_calls": [{"index": k, "function": {"arguments": piece}}]}),
            ));
        }
    }
    let reason = finish_reason(reply.stop_reason.as_deref());
    out.push(chunk(
        json!([{"index": 0, "delta": {}, "finish_reason": reason}]),
    ));
    if usage {
        let c = json!({"id": names.id, "object": "chat.completion.chunk", "created": 0,
                       "model": names.model, "choices": [],
                       "usage": openai_usage(&reply.usage_or_default())});
        out.push(Bytes::from(format!("data: {c}\n\n")));
    }
    out.push(Bytes::from_static(b"data: [DONE]\n\n"));
    out
}

/// An error inside a chat-completions stream.
pub(crate) fn openai_error_event(error_type: &str, message: &str) -> Bytes {
    let e = json!({"error": {"message": message, "type": error_type}});
    Bytes::from(format!("data: {e}\n\n"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_on_characters_not_bytes() {
        assert_eq!(split_chars("héllo", 2), vec!["hé", "ll", "o"]);
        assert_eq!(split_chars("", 2), vec![""]);
        assert_eq!(split_chars("abc", 0), vec!["abc"]);
    }

    #[test]
    fn tool_input_starts_with_an_empty_fragment_and_adds_up() {
        let input = json!({"path": "/a/b", "lines": [1, 2, 3]});
        let reply = Reply::new(
            vec![json!({"type": "tool_use", "id": "t", "name": "n", "input": input})],
            "tool_use",
        );
        let names = Names {
            id: "m",
            model: "x",
        };
        let pace = Pace {
            json_chunk: Some(5),
            ..Pace::default()
        };
        let fragments: Vec<String> = anthropic_events(&reply, &names, &pace)
            .iter()
            .filter_map(|b| {
                let text = String::from_utf8_lossy(b).into_owned();
                let data = text
                    .lines()
                    .find_map(|l| l.strip_prefix("data: "))?
                    .to_owned();
                let v: Value = serde_json::from_str(&data).ok()?;
                v["delta"]["partial_json"].as_str().map(str::to_owned)
            })
            .collect();
        assert_eq!(fragments[0], "");
        assert!(fragments.len() > 3);
        let joined: Value = serde_json::from_str(&fragments.concat()).unwrap_or_default();
        assert_eq!(joined, input);
    }
}
