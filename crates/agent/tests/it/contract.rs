//! The contract hosts read: each body's JSON shape, what a chunk on a
//! session is, the notices, a run's totals — and that a body the agent
//! writes reads back as the same item whether it is just written or read
//! from the substrate.

use agent::contract::*;
use serde_json::{Value, json};
use substrate::{ChunkItem, Json, Placement, PlacementType};

/// A chunk of type `ty` on session `s`, as a read returns it.
fn chunk(id: &str, ty: &str, body: &Value) -> ChunkItem {
    let on = |scope: &str| Placement {
        scope: scope.into(),
        kind: PlacementType::Instance,
        seq: None,
    };
    ChunkItem {
        id: id.into(),
        name: None,
        spec: Json::from_value(&json!({})),
        body: Some(Json::from_value(body)),
        placements: vec![on("s"), on(ty)],
    }
}

#[test]
fn each_body_is_the_json_hosts_have_always_read() {
    let result = ToolResult {
        program: "read".into(),
        process: Some("p_1".into()),
        tool_use_id: "toolu_1".into(),
        text: "ok".into(),
        is_error: false,
        data: None,
        denied: false,
    };
    assert_eq!(
        Entry::of(&result),
        Entry {
            kind: "tool-result",
            body: json!({"program": "read", "process": "p_1", "tool_use_id": "toolu_1",
                         "text": "ok", "is_error": false}),
        }
    );
    let denied = ToolResult {
        denied: true,
        is_error: true,
        process: None,
        ..result
    };
    assert_eq!(Entry::of(&denied).body["denied"], true);
    assert_eq!(Entry::of(&denied).body["process"], Value::Null);
    let decision = PermissionDecision {
        request: "c_1".into(),
        decision: Choice::Always,
        rule: Some("shell(cargo test:*)".into()),
        message: None,
        ..PermissionDecision::default()
    };
    assert_eq!(
        Entry::of(&decision).body,
        json!({"request": "c_1", "decision": "always", "rule": "shell(cargo test:*)"})
    );
    let todo = Todo::of(vec![
        TodoItem {
            content: "read".into(),
            status: TodoStatus::Completed,
            extra: Default::default(),
        },
        TodoItem {
            content: "fix".into(),
            status: TodoStatus::InProgress,
            extra: Default::default(),
        },
    ]);
    assert_eq!(
        Entry::of(&todo).body,
        json!({"items": [{"content": "read", "status": "completed"},
                         {"content": "fix", "status": "in_progress"}], "text": "1 of 2 done"})
    );
}

#[test]
fn an_item_reads_the_same_just_written_and_read_back() {
    let answer = Answer {
        text: "Let me look.".into(),
        content: serde_json::from_value(json!([
            {"type": "text", "text": "Let me look."},
            {"type": "tool_use", "id": "toolu_1", "name": "read", "input": {"file_path": "a"}},
            {"type": "server_tool_use_result_of_the_future", "x": {"b": 1, "a": 2}}
        ]))
        .unwrap(),
        model: "claude-sonnet-4-5".into(),
        stop_reason: Some(model::StopReason::ToolUse),
        call: Some(3),
        as_of: Some(17),
        process: "p_1".into(),
        ..Answer::default()
    };
    let entry = Entry::of(&answer);
    let written = entry.item();
    let read = SessionItem::of(&chunk("c_9", entry.kind, &entry.body));
    assert_eq!(written, read);
    let SessionItem::Answer(back) = read else {
        panic!("an answer reads as an answer")
    };
    assert_eq!(back.call_ids().collect::<Vec<_>>(), ["toolu_1"]);
    assert!(SessionItem::Answer(back).is_call());
}

#[test]
fn what_a_chunk_is_depends_on_its_type_and_a_wrong_body_is_said() {
    let prompt = chunk("c_1", "prompt", &json!({"text": "hi"}));
    assert_eq!(
        SessionItem::of(&prompt),
        SessionItem::Prompt(Prompt {
            text: "hi".into(),
            from: None,
            images: Vec::new(),
            message: None,
            uuid: None,
        })
    );
    // An older body without the newer fields still reads.
    let old = chunk(
        "c_2",
        "tool-result",
        &json!({"tool_use_id": "t", "text": "x"}),
    );
    assert!(matches!(SessionItem::of(&old), SessionItem::ToolResult(r) if !r.is_error));
    // A host's placeholder context event is not the agent's.
    let placeholder = chunk("c_3", "context", &json!({}));
    assert_eq!(SessionItem::of(&placeholder), SessionItem::Context(None));
    let wrong = chunk("c_4", "answer", &json!({"content": "not blocks"}));
    assert!(matches!(
        SessionItem::of(&wrong),
        SessionItem::Unreadable { kind: "answer", .. }
    ));
    let other = chunk("c_5", "note", &json!({"text": "x"}));
    assert_eq!(SessionItem::of(&other), SessionItem::Other);
    assert_eq!(SessionItem::of(&other).kind(), None);
}

#[test]
fn notices_are_tagged_by_kind() {
    let delta = Notice::TextDelta {
        index: 0,
        text: "Hel".into(),
    };
    assert_eq!(
        delta.to_value(),
        json!({"kind": "text_delta", "index": 0, "text": "Hel"})
    );
    assert_eq!(Notice::Discard.to_value(), json!({"kind": "discard"}));
    assert_eq!(
        Notice::parse(&json!({"kind": "output", "stream": "stdout", "text": "ok\n"})),
        Some(Notice::Output {
            stream: Some("stdout".into()),
            text: "ok\n".into()
        })
    );
    assert_eq!(Notice::parse(&json!({"kind": "progress", "pct": 5})), None);
    let end = json!({"kind": "tool_end", "tool_use_id": "t", "process": null, "is_error": true});
    assert_eq!(Notice::parse(&end).unwrap().to_value(), end);
}

#[test]
fn a_run_body_says_how_it_went() {
    let body = |process: Value, agent: Value| {
        let mut all = process;
        all.as_object_mut()
            .unwrap()
            .extend(agent.as_object().unwrap().clone());
        RunBody::parse(&all)
    };
    let done = body(
        json!({"status": "completed", "started": "2026-01-01T00:00:00.000Z", "ended": "2026-01-01T00:00:01.500Z"}),
        json!({"stop_reason": "end_turn", "turns": 2, "model": "m",
               "usage": {"input_tokens": 10, "output_tokens": 5, "cache_read_input_tokens": 90}}),
    );
    assert_eq!((done.status(), done.exit_code()), ("done".to_owned(), 0));
    assert_eq!(done.totals.usage.input(), 100);
    assert_eq!(done.process.duration_ms(), Some(1500));
    let gate = body(
        json!({"status": "failed"}),
        json!({"stop_reason": "max_turns"}),
    );
    assert_eq!((gate.status(), gate.exit_code()), ("stopped".to_owned(), 3));
    let cut = body(
        json!({"status": "failed"}),
        json!({"stop_reason": "interrupted"}),
    );
    assert_eq!(cut.exit_code(), 130);
    let crashed = body(
        json!({"status": "failed", "error": "exit code 101"}),
        json!({}),
    );
    assert_eq!(crashed.status(), "failed (exit code 101)");
    assert_eq!(crashed.exit_code(), 1);
    let running = body(json!({"status": "running"}), json!({"turns": 1}));
    assert_eq!(running.status(), "running");
    let future = body(
        json!({"status": "failed"}),
        json!({"stop_reason": "a_new_reason"}),
    );
    assert_eq!(
        (future.status(), future.exit_code()),
        ("failed".to_owned(), 1)
    );
}
