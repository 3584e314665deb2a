//! The request: built item by item as the agent goes, it is the request a
//! rebuild makes from the same session read back — byte for byte — and it
//! carries at most four cache breakpoints, where the cached prefix ends.

use agent::AgentConfig;
use agent::contract::*;
use agent::request::{Conversation, INTERRUPTED, Prefix, Request, ToolDef};
use proptest::prelude::*;
use serde_json::{Value, json};
use substrate::{ChunkItem, Json, Placement, PlacementType};

fn prefix() -> Prefix {
    let config = AgentConfig {
        model: "claude-sonnet-4-5".into(),
        system_append: Some("Be brief.".into()),
        ..AgentConfig::default()
    };
    let context = ContextBody {
        system: "You help.".into(),
        model: config.model.clone(),
        max_tokens: 4096,
        own_tools: agent::catalog::own_tools(),
        ..ContextBody::default()
    };
    let tools = vec![ToolDef {
        name: "read".into(),
        description: "Reads a file.".into(),
        schema: json!({"type": "object", "properties": {"file_path": {"type": "string"}}}),
    }];
    Prefix::new(&config, &context, &Default::default(), &tools)
}

fn chunk(n: usize, entry: &Entry) -> ChunkItem {
    let on = |scope: &str, seq| Placement {
        scope: scope.into(),
        kind: PlacementType::Instance,
        seq,
    };
    ChunkItem {
        id: format!("c_{n}"),
        name: None,
        spec: Json::from_value(&json!({})),
        body: Some(Json::from_value(&entry.body)),
        placements: vec![on("s", Some(n as i64)), on(entry.kind, None)],
    }
}

fn prompt(text: &str) -> Entry {
    Entry::of(&Prompt {
        text: text.into(),
        from: None,
        images: Vec::new(),
        message: None,
        uuid: None,
    })
}

fn answer(text: &str, calls: &[&str]) -> Entry {
    let mut content = vec![json!({"type": "text", "text": text})];
    for id in calls {
        content.push(
            json!({"type": "tool_use", "id": id, "name": "read", "input": {"file_path": id}}),
        );
    }
    Entry::of(&Answer {
        text: text.into(),
        content: serde_json::from_value(Value::Array(content)).unwrap(),
        ..Answer::default()
    })
}

fn result(id: &str) -> Entry {
    Entry::of(&ToolResult {
        program: "read".into(),
        tool_use_id: id.into(),
        text: format!("contents of {id}"),
        ..ToolResult::default()
    })
}

fn compaction(keep: usize) -> Entry {
    Entry::of(&Compaction {
        text: "[A summary]\n\nthe story so far".into(),
        keep_messages: keep,
        as_of: Some(1),
        ..Compaction::default()
    })
}

/// The request's body, as sent.
fn bytes(request: &model::MessagesRequest) -> Vec<u8> {
    model::AnthropicClient::body(request, true).unwrap()
}

/// The request the agent sends after `entries`, built one by one.
fn live(entries: &[Entry]) -> Vec<u8> {
    let mut request = Request::new(prefix(), Conversation::default());
    for entry in entries {
        request.push(&entry.item());
    }
    let first = bytes(&request.next_call());
    // Taking the request leaves it as it was.
    assert_eq!(bytes(&request.next_call()), first);
    first
}

/// The same session rebuilt from its chunks.
fn rebuilt(entries: &[Entry]) -> Vec<u8> {
    let chunks: Vec<ChunkItem> = entries
        .iter()
        .enumerate()
        .map(|(n, e)| chunk(n, e))
        .collect();
    bytes(&Request::of_session(prefix(), &chunks).into_next_call())
}

#[test]
fn a_session_built_as_it_goes_is_the_session_rebuilt() {
    let entries = vec![
        prompt("fix the test"),
        answer("Reading.", &["t1", "t2"]),
        result("t2"),
        result("t1"),
        answer("Done.", &[]),
        prompt("thanks"),
    ];
    assert_eq!(live(&entries), rebuilt(&entries));
    let sent: Value = serde_json::from_slice(&live(&entries)).unwrap();
    // Results answer their calls in the calls' order.
    let results = &sent["messages"][2]["content"];
    assert_eq!(results[0]["tool_use_id"], "t1");
    assert_eq!(results[1]["tool_use_id"], "t2");
}

#[test]
fn a_call_left_without_a_result_is_answered_interrupted() {
    let entries = vec![prompt("go"), answer("Reading.", &["t1"])];
    let sent: Value = serde_json::from_slice(&live(&entries)).unwrap();
    let last = &sent["messages"][2]["content"][0];
    assert_eq!(last["tool_use_id"], "t1");
    assert_eq!(last["content"], INTERRUPTED);
    assert_eq!(last["is_error"], true);
    assert_eq!(live(&entries), rebuilt(&entries));
}

#[test]
fn breakpoints_end_the_tools_the_system_and_the_last_block() {
    let entries = vec![prompt("go"), answer("Reading.", &["t1"]), result("t1")];
    let sent: Value = serde_json::from_slice(&live(&entries)).unwrap();
    let marks = sent.to_string().matches("\"cache_control\"").count();
    assert!(marks <= 4, "at most four breakpoints, got {marks}");
    let system = sent["system"].as_array().unwrap();
    assert!(system.last().unwrap()["cache_control"].is_object());
    assert!(
        system[..system.len() - 1]
            .iter()
            .all(|b| b["cache_control"].is_null())
    );
    let tools = sent["tools"].as_array().unwrap();
    assert!(tools.last().unwrap()["cache_control"].is_object());
    let messages = sent["messages"].as_array().unwrap();
    let last = messages.last().unwrap()["content"].as_array().unwrap();
    assert!(last.last().unwrap()["cache_control"].is_object());
    // Only the last message is marked: the earlier ones are the cached prefix.
    for message in &messages[..messages.len() - 1] {
        assert!(!message.to_string().contains("cache_control"));
    }
}

#[test]
fn a_compaction_starts_the_messages_over_with_the_turns_it_kept() {
    let entries = vec![
        prompt("first"),
        answer("one", &["t1"]),
        result("t1"),
        answer("two", &[]),
        compaction(1),
        prompt("next"),
    ];
    let sent: Value = serde_json::from_slice(&live(&entries)).unwrap();
    let messages = sent["messages"].as_array().unwrap();
    assert_eq!(
        messages[0]["content"][0]["text"],
        "[A summary]\n\nthe story so far"
    );
    assert_eq!(messages[1]["content"][0]["text"], "two");
    assert_eq!(messages[2]["content"][0]["text"], "next");
    assert_eq!(messages.len(), 3);
    assert_eq!(live(&entries), rebuilt(&entries));
}

#[test]
fn the_summary_call_asks_for_a_summary_with_no_tools() {
    let mut request = Request::new(prefix(), Conversation::default());
    for entry in [prompt("go"), answer("done", &[])] {
        request.push(&entry.item());
    }
    let summary = request.summary();
    let sent: Value =
        serde_json::from_slice(&model::AnthropicClient::body(&summary, false).unwrap()).unwrap();
    assert_eq!(sent["tool_choice"]["type"], "none");
    let last = sent["messages"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(last["role"], "user");
    assert!(
        last["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("summary")
    );
    assert!(
        !sent
            .to_string()
            .contains("\"cache_control\":{\"type\":\"ephemeral\"}}]}]")
    );
}

/// A random session: prompts, answers calling tools, their results (in
/// any order, some never), compactions.
fn session() -> impl Strategy<Value = Vec<Entry>> {
    let step = prop_oneof![Just(0u8), Just(1u8), Just(2u8), Just(3u8), Just(4u8)];
    proptest::collection::vec((step, 0usize..3, any::<bool>()), 1..30).prop_map(|steps| {
        let mut out = vec![prompt("start")];
        let mut open: Vec<String> = Vec::new();
        for (n, (step, calls, reverse)) in steps.into_iter().enumerate() {
            match step {
                0 => out.push(prompt(&format!("p{n}"))),
                1 | 2 => {
                    let ids: Vec<String> = (0..calls).map(|c| format!("t{n}_{c}")).collect();
                    let refs: Vec<&str> = ids.iter().map(String::as_str).collect();
                    out.push(answer(&format!("a{n}"), &refs));
                    open = ids;
                }
                3 => {
                    if reverse {
                        open.reverse();
                    }
                    for id in open.drain(..).skip(usize::from(reverse)) {
                        out.push(result(&id));
                    }
                }
                _ => out.push(compaction(calls)),
            }
        }
        out
    })
}

proptest! {
    #[test]
    fn any_session_built_as_it_goes_is_the_session_rebuilt(entries in session()) {
        prop_assert_eq!(live(&entries), rebuilt(&entries));
    }
}
