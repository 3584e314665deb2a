//! Building the request of a long session (docs/performance.md):
//!
//! * `request/incremental_10k`: what the agent does per call in a session
//!   of 10,000 chunks — map the chunks committed since the last call (a
//!   tool result) and lay out the request (the open message, the cache
//!   breakpoint).
//! * `request/from_scratch_10k`: the same request rebuilt from all 10,000
//!   chunks, as `hc trace --request` does once it has read them.
//! * `request/serialize_10k`: the request's body as JSON bytes.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use agent::AgentConfig;
use agent::contract::{ContextBody, SessionItem};
use agent::request::{Conversation, Prefix, Request, ToolDef};
use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::{Value, json};
use substrate::{ChunkItem, Json, Placement, PlacementType};

/// A session chunk of type `ty` with `body`.
fn item(n: usize, ty: &str, body: Value) -> ChunkItem {
    ChunkItem {
        id: format!("c_{n}"),
        name: None,
        spec: Json::from_value(&json!({})),
        body: Some(Json::from_value(&body)),
        placements: vec![
            Placement {
                scope: "s".into(),
                kind: PlacementType::Instance,
                seq: Some(n as i64),
            },
            Placement {
                scope: ty.into(),
                kind: PlacementType::Instance,
                seq: None,
            },
        ],
    }
}

/// 10,000 chunks: a prompt, then turns of answer (with a tool call),
/// tool-call, tool-result.
fn session() -> Vec<ChunkItem> {
    let mut out = vec![item(0, "prompt", json!({"text": "fix the failing test"}))];
    let mut n = 1;
    while out.len() < 10_000 {
        let id = format!("toolu_{n}");
        out.push(item(n, "answer", json!({"text": "Let me look.", "content": [
            {"type": "text", "text": "Let me look at the next file."},
            {"type": "tool_use", "id": id, "name": "read", "input": {"file_path": format!("src/file_{n}.rs")}}
        ]})));
        out.push(item(
            n + 1,
            "tool-call",
            json!({"program": "read", "tool_use_id": id, "input": {}}),
        ));
        out.push(item(n + 2, "tool-result", json!({"program": "read", "tool_use_id": id,
            "text": "     1\tfn main() {\n     2\t    println!(\"hello\");\n     3\t}\n", "is_error": false})));
        n += 3;
    }
    out
}

fn prefix() -> Prefix {
    let config = AgentConfig {
        model: "claude-sonnet-4-5".into(),
        ..AgentConfig::default()
    };
    let context = ContextBody {
        system: agent::sources::context::BASE_INSTRUCTIONS.into(),
        model: "claude-sonnet-4-5".into(),
        max_tokens: 32_000,
        own_tools: agent::catalog::own_tools(),
        ..ContextBody::default()
    };
    let tools: Vec<ToolDef> = [
        "edit",
        "glob",
        "grep",
        "read",
        "shell",
        "web-fetch",
        "write",
    ]
    .iter()
    .map(|n| ToolDef {
        name: (*n).into(),
        description: "a tool".into(),
        schema: json!({"type": "object"}),
    })
    .collect();
    Prefix::new(&config, &context, &Default::default(), &tools)
}

fn bench(c: &mut Criterion) {
    let history = session();
    let prefix = prefix();
    // the agent's state: every chunk but the last mapped into its request
    let (last, before) = history.split_last().unwrap();
    let request = Request::of_session(prefix.clone(), before);
    let last = SessionItem::parse("tool-result", &last.body_value());
    c.bench_function("request/incremental_10k", |b| {
        b.iter_batched(
            || request.clone(),
            |mut request| {
                request.push(&last);
                let sent = request.next_call().messages.len();
                (request, sent)
            },
            criterion::BatchSize::LargeInput,
        )
    });
    c.bench_function("request/from_scratch_10k", |b| {
        b.iter(|| Request::of_session(prefix.clone(), &history).into_next_call())
    });
    let full =
        Request::new(prefix.clone(), Conversation::since_compaction(&history)).into_next_call();
    c.bench_function("request/serialize_10k", |b| {
        b.iter(|| model::AnthropicClient::body(&full, true).unwrap())
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
