//! The two performance figures of the model client.
//!
//! * `stream_parse/1MB`: parsing and accumulating a 1 MB streamed response
//!   (server-sent-event bytes in memory, 16 KiB pieces, through the same
//!   decoder the client uses). Target: at least 200 MB/s.
//! * `client_overhead/stream`: a streamed reply from the local fake with
//!   zero delays, from the `stream` call with a built request to the last
//!   event and the whole message, less the fake's own time serving it.
//!   Target: median at most 1 ms. `client_overhead/stream_raw` is the same
//!   without subtracting the server's time.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use bytes::Bytes;
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use model::{
    AnthropicClient, AnthropicConfig, Message, MessageStream, MessagesRequest, WireFormat,
};
use serde_json::json;
use std::time::{Duration, Instant};
use testkit::{FakeModel, Pace, Reply, Script, Turn};

/// One event's bytes.
fn event(name: &str, data: &serde_json::Value) -> String {
    format!("event: {name}\ndata: {data}\n\n")
}

/// A `content_block_delta` laid out as the API sends it (keys in its order:
/// `type`, `index`, `delta`; inside, `type` then the payload), which
/// `json!` would not keep.
fn delta(index: usize, delta: serde_json::Value) -> String {
    let kind = delta["type"].as_str().unwrap().to_owned();
    let (key, payload) = delta
        .as_object()
        .unwrap()
        .iter()
        .find(|(k, _)| *k != "type")
        .unwrap();
    format!(
        "event: content_block_delta\ndata: {{\"type\":\"content_block_delta\",\"index\":{index},\"delta\":{{\"type\":\"{kind}\",\"{key}\":{payload}}}}}\n\n"
    )
}

/// About `size` bytes of a realistic stream: thinking, text and a tool
/// call, in deltas of the sizes the API sends (a few tokens each), with
/// escapes and non-ASCII text, and a ping now and then.
fn stream_body(size: usize) -> Vec<u8> {
    let words = [
        "the ",
        "substrate ",
        "keeps ",
        "every ",
        "chunk; ",
        "\"quoted\" ",
        "línea\n",
        "🦀 ",
        "agent ",
        "runs ",
        "tools ",
        "as ",
        "processes. ",
    ];
    let mut out = event(
        "message_start",
        &json!({"type": "message_start", "message": {"id": "msg_bench", "type": "message",
            "role": "assistant", "model": "claude-bench", "content": [], "stop_reason": null,
            "stop_sequence": null, "usage": {"input_tokens": 100, "output_tokens": 1}}}),
    );
    let piece = |i: usize| -> String { (0..4).map(|k| words[(i * 7 + k) % words.len()]).collect() };
    let blocks = [
        ("thinking", size / 10),
        ("text", size * 6 / 10),
        ("tool_use", size * 3 / 10),
    ];
    let mut n = 0;
    for (index, (kind, budget)) in blocks.into_iter().enumerate() {
        let start = match kind {
            "tool_use" => {
                json!({"type": "tool_use", "id": "toolu_b", "name": "filesystem", "input": {}})
            }
            other => json!({"type": other, other: ""}),
        };
        out.push_str(&event(
            "content_block_start",
            &json!({"type": "content_block_start", "index": index, "content_block": start}),
        ));
        let begin = out.len();
        if kind == "tool_use" {
            out.push_str(&delta(
                index,
                json!({"type": "input_json_delta", "partial_json": "{\"content\": \""}),
            ));
        }
        while out.len() - begin < budget {
            n += 1;
            let text = piece(n);
            out.push_str(&match kind {
                "thinking" => delta(index, json!({"type": "thinking_delta", "thinking": text})),
                "text" => delta(index, json!({"type": "text_delta", "text": text})),
                _ => {
                    let escaped = serde_json::to_string(&text).unwrap();
                    let inner = &escaped[1..escaped.len() - 1];
                    delta(
                        index,
                        json!({"type": "input_json_delta", "partial_json": inner}),
                    )
                }
            });
            if n % 50 == 0 {
                out.push_str(&event("ping", &json!({"type": "ping"})));
            }
        }
        match kind {
            "thinking" => out.push_str(&delta(
                index,
                json!({"type": "signature_delta", "signature": "EqQBCgIYAhIM"}),
            )),
            "tool_use" => out.push_str(&delta(
                index,
                json!({"type": "input_json_delta", "partial_json": "\"}"}),
            )),
            _ => {}
        }
        out.push_str(&event(
            "content_block_stop",
            &json!({"type": "content_block_stop", "index": index}),
        ));
    }
    out.push_str(&event("message_delta", &json!({"type": "message_delta", "delta": {"stop_reason": "tool_use", "stop_sequence": null}, "usage": {"output_tokens": 250000}})));
    out.push_str(&event("message_stop", &json!({"type": "message_stop"})));
    out.into_bytes()
}

fn stream_parse(c: &mut Criterion) {
    let body = stream_body(1 << 20);
    let chunks: Vec<Bytes> = body.chunks(16 * 1024).map(Bytes::copy_from_slice).collect();
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    // Check once that the stream is whole and well formed.
    let message = rt.block_on(decode(chunks.clone())).unwrap();
    assert_eq!(message.content.len(), 3);
    assert!(message.tool_uses().next().unwrap().input_value()["content"].is_string());

    let mut group = c.benchmark_group("stream_parse");
    group.throughput(Throughput::Bytes(body.len() as u64));
    group.bench_function("1MB", |b| {
        b.iter(|| rt.block_on(decode(chunks.clone())).unwrap());
    });
    group.finish();
}

/// Every delta read, then the message: what a streaming caller does.
async fn decode(chunks: Vec<Bytes>) -> Result<model::MessageResponse, model::ModelError> {
    let source = futures_util::stream::iter(chunks.into_iter().map(Ok::<_, std::io::Error>));
    let mut stream = MessageStream::from_sse_bytes(WireFormat::Anthropic, source);
    let mut deltas = 0usize;
    while stream.next_event().await?.is_some() {
        deltas += 1;
    }
    std::hint::black_box(deltas);
    stream.finish().await
}

fn client_overhead(c: &mut Criterion) {
    // The fake runs on its own thread, as a server would.
    let server = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let reply = Reply::new(
        vec![
            json!({"type": "text", "text": "I'll read the file and then summarise what it says about the substrate, its commits and its scope reads, step by step."}),
            json!({"type": "tool_use", "id": "toolu_1", "name": "filesystem", "input": {"operation": "read", "path": "crates/substrate/src/lib.rs"}}),
        ],
        "tool_use",
    );
    let mut script = Script::new(vec![Turn::reply(reply)]);
    script.cycle = true;
    script.pace = Pace {
        delay_ms: Some(0),
        ..Pace::default()
    };
    let fake = server.block_on(FakeModel::start(script)).unwrap();
    let config = AnthropicConfig {
        base_url: fake.base_url(),
        ..AnthropicConfig::default()
    };
    let client = AnthropicClient::new(config).unwrap();
    let request = MessagesRequest::new(
        "claude-sonnet-4-5",
        1024,
        vec![Message::user("summarise the substrate")],
    );
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let once = |subtract_server: bool| {
        let start = Instant::now();
        let message = rt.block_on(async {
            let mut stream = client.stream(&request).await.unwrap();
            while stream.next_event().await.unwrap().is_some() {}
            stream.finish().await.unwrap()
        });
        let total = start.elapsed();
        std::hint::black_box(message);
        let served = fake
            .requests()
            .last()
            .and_then(|r| r.served_in)
            .unwrap_or_default();
        fake.clear_requests();
        if subtract_server {
            total.saturating_sub(served)
        } else {
            total
        }
    };
    let mut group = c.benchmark_group("client_overhead");
    for (name, subtract) in [("stream", true), ("stream_raw", false)] {
        group.bench_function(name, |b| {
            b.iter_custom(|iters| (0..iters).map(|_| once(subtract)).sum::<Duration>());
        });
    }
    group.finish();
    drop(fake);
    server.shutdown_background();
}

criterion_group!(benches, stream_parse, client_overhead);
criterion_main!(benches);
