//! Streams in the shapes the API documents, sent verbatim by the fake and
//! read by the real client.

use crate::common;

use common::{client, fake, request};
use model::{ContentBlock, MessageResponse, ModelError, StopReason, StreamEvent};
use testkit::{Pace, Turn};

/// Streams `sse` through the fake; the events the caller saw and the
/// message.
async fn run(sse: &str) -> (Vec<StreamEvent>, MessageResponse) {
    let fake = fake(vec![Turn::sse(sse)]).await;
    let mut stream = client(&fake).stream(&request()).await.unwrap();
    let mut events = Vec::new();
    while let Some(e) = stream.next_event().await.unwrap() {
        events.push(e);
    }
    (events, stream.finish().await.unwrap())
}

async fn run_err(sse: &str) -> ModelError {
    let fake = fake(vec![Turn::sse(sse)]).await;
    let stream = client(&fake).stream(&request()).await.unwrap();
    stream.finish().await.unwrap_err()
}

const TEXT: &str = r#"event: message_start
data: {"type": "message_start", "message": {"id": "msg_1nZdL29xx5MUA1yADyHTEsnR8uuvGzszyY", "type": "message", "role": "assistant", "content": [], "model": "claude-opus-4-6", "stop_reason": null, "stop_sequence": null, "usage": {"input_tokens": 25, "output_tokens": 1}}}

event: content_block_start
data: {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}

event: ping
data: {"type": "ping"}

event: content_block_delta
data: {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hello"}}

event: content_block_delta
data: {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "!"}}

event: content_block_stop
data: {"type": "content_block_stop", "index": 0}

event: message_delta
data: {"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence":null}, "usage": {"output_tokens": 15}}

event: message_stop
data: {"type": "message_stop"}

"#;

#[tokio::test]
async fn text_arrives_delta_by_delta_and_usage_is_overwritten_not_added() {
    let (events, message) = run(TEXT).await;
    let deltas: Vec<&str> = events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::TextDelta { text, .. } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(deltas, ["Hello", "!"]);
    assert!(matches!(
        events[0],
        StreamEvent::BlockStart { index: 0, .. }
    ));
    assert_eq!(message.id, "msg_1nZdL29xx5MUA1yADyHTEsnR8uuvGzszyY");
    assert_eq!(message.model, "claude-opus-4-6");
    assert_eq!(message.text(), "Hello!");
    assert_eq!(message.stop_reason, Some(StopReason::EndTurn));
    assert_eq!(message.usage.input_tokens, 25);
    assert_eq!(message.usage.output_tokens, 15, "1 then 15 is 15, not 16");
}

#[tokio::test]
async fn every_split_of_the_bytes_gives_the_same_message() {
    let (_, whole) = run(TEXT).await;
    for chunk_bytes in [1, 2, 3, 7, 64] {
        let turn = Turn::sse(TEXT).pace(Pace {
            chunk_bytes: Some(chunk_bytes),
            ..Pace::default()
        });
        let fake = fake(vec![turn]).await;
        let message = client(&fake)
            .stream(&request())
            .await
            .unwrap()
            .finish()
            .await
            .unwrap();
        assert_eq!(message, whole, "chunk_bytes {chunk_bytes}");
    }
}

const TOOL_USE: &str = r#"event: message_start
data: {"type":"message_start","message":{"id":"msg_014p7gG3wDgGV9EUtLvnow3U","type":"message","role":"assistant","model":"claude-opus-4-6","stop_sequence":null,"usage":{"input_tokens":472,"output_tokens":2},"content":[],"stop_reason":null}}

event: content_block_start
data: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}

event: ping
data: {"type": "ping"}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Okay, let's check the weather:"}}

event: content_block_stop
data: {"type":"content_block_stop","index":0}

event: content_block_start
data: {"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_01T1x1fJ34qAmk2tNTrN7Up6","name":"get_weather","input":{}}}

event: content_block_delta
data: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":""}}

event: content_block_delta
data: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"location\":"}}

event: content_block_delta
data: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":" \"San"}}

event: content_block_delta
data: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":" Francisc"}}

event: content_block_delta
data: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"o,"}}

event: content_block_delta
data: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":" CA\""}}

event: content_block_delta
data: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":", "}}

event: content_block_delta
data: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"\"unit\": \"fah"}}

event: content_block_delta
data: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"renheit\"}"}}

event: content_block_stop
data: {"type":"content_block_stop","index":1}

event: message_delta
data: {"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":89}}

event: message_stop
data: {"type":"message_stop"}

"#;

#[tokio::test]
async fn tool_input_fragments_are_joined_and_parsed_at_the_stop() {
    let (events, message) = run(TOOL_USE).await;
    let fragments: Vec<&str> = events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::InputJsonDelta { partial_json, .. } => Some(partial_json.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(fragments.len(), 9);
    assert_eq!(fragments[0], "");
    let stop = events.iter().find_map(|e| match e {
        StreamEvent::BlockStop {
            index: 1,
            block: ContentBlock::ToolUse(t),
        } => Some(t.clone()),
        _ => None,
    });
    let tool = stop.expect("the tool block stops whole");
    assert_eq!(tool.id, "toolu_01T1x1fJ34qAmk2tNTrN7Up6");
    assert_eq!(
        tool.input_value(),
        serde_json::json!({"location": "San Francisco, CA", "unit": "fahrenheit"})
    );
    assert_eq!(message.stop_reason, Some(StopReason::ToolUse));
    assert_eq!(message.tool_uses().count(), 1);
    assert_eq!(message.text(), "Okay, let's check the weather:");
}

#[tokio::test]
async fn invalid_final_tool_json_is_a_clear_error() {
    // The last fragment loses the closing brace of the input.
    let broken = TOOL_USE.replace(
        r#""partial_json":"renheit\"}""#,
        r#""partial_json":"renheit\"""#,
    );
    assert_ne!(broken, TOOL_USE);
    let err = run_err(&broken).await;
    let ModelError::InvalidToolInput { index, tool, .. } = &err else {
        panic!("expected InvalidToolInput, got {err:?}");
    };
    assert_eq!((*index, tool.as_str()), (1, "get_weather"));
    assert!(err.to_string().contains("not valid JSON"), "{err}");
}

#[tokio::test]
async fn a_tool_without_input_fragments_has_empty_input() {
    let sse = r#"event: message_start
data: {"type":"message_start","message":{"id":"m","type":"message","role":"assistant","model":"x","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":1,"output_tokens":1}}}

event: content_block_start
data: {"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_1","name":"now","input":{}}}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":""}}

event: content_block_stop
data: {"type":"content_block_stop","index":0}

event: message_delta
data: {"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":5}}

event: message_stop
data: {"type":"message_stop"}

"#;
    let (_, message) = run(sse).await;
    let tool = message.tool_uses().next().unwrap();
    assert_eq!(tool.input_value(), serde_json::json!({}));
}

const THINKING: &str = r#"event: message_start
data: {"type": "message_start", "message": {"id": "msg_01", "type": "message", "role": "assistant", "content": [], "model": "claude-sonnet-4-5", "stop_reason": null, "stop_sequence": null, "usage": {"input_tokens": 20, "output_tokens": 1}}}

event: content_block_start
data: {"type": "content_block_start", "index": 0, "content_block": {"type": "thinking", "thinking": ""}}

event: content_block_delta
data: {"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "I need to find the GCD of 1071 and 462 using the Euclidean algorithm.\n\n1071 = 2 × 462 + 147"}}

event: content_block_delta
data: {"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "\n462 = 3 × 147 + 21\n147 = 7 × 21 + 0\n\nSo the GCD is 21."}}

event: content_block_delta
data: {"type": "content_block_delta", "index": 0, "delta": {"type": "signature_delta", "signature": "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds"}}

event: content_block_stop
data: {"type": "content_block_stop", "index": 0}

event: content_block_start
data: {"type": "content_block_start", "index": 1, "content_block": {"type": "text", "text": ""}}

event: content_block_delta
data: {"type": "content_block_delta", "index": 1, "delta": {"type": "text_delta", "text": "The greatest common divisor of 1071 and 462 is **21**."}}

event: content_block_stop
data: {"type": "content_block_stop", "index": 1}

event: message_delta
data: {"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": null}, "usage": {"output_tokens": 120}}

event: message_stop
data: {"type": "message_stop"}

"#;

#[tokio::test]
async fn thinking_keeps_its_signature_for_replay() {
    let (events, message) = run(THINKING).await;
    assert!(
        events
            .iter()
            .any(|e| matches!(e, StreamEvent::SignatureDelta { index: 0, .. }))
    );
    let ContentBlock::Thinking(t) = &message.content[0] else {
        panic!("block 0 is {:?}", message.content[0]);
    };
    assert!(t.thinking.starts_with("I need to find the GCD"));
    assert!(t.thinking.ends_with("So the GCD is 21."));
    assert_eq!(
        t.signature,
        "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds"
    );
    let json = serde_json::to_string(&message.content[0]).unwrap();
    assert!(
        json.contains(r#""signature":"EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds""#)
    );
}

const WEB_SEARCH_RESULT: &str = r#"{"type": "web_search_tool_result", "tool_use_id": "srvtoolu_014hJH82Qum7Td6UV8gDXThB", "content": [{"type": "web_search_result", "title": "Weather in New York City in May 2025", "url": "https://example.org/nyc", "encrypted_content": "Ev0DCioIAxgCIiQ3NmU4ZmI4OC1k", "page_age": null}]}"#;

fn web_search_stream() -> String {
    format!(
        r#"event: message_start
data: {{"type": "message_start", "message": {{"id": "msg_01G", "type": "message", "role": "assistant", "model": "claude-opus-4-6", "content": [], "stop_reason": null, "stop_sequence": null, "usage": {{"input_tokens": 2679, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0, "output_tokens": 3}}}}}}

event: content_block_start
data: {{"type": "content_block_start", "index": 0, "content_block": {{"type": "text", "text": ""}}}}

event: content_block_delta
data: {{"type": "content_block_delta", "index": 0, "delta": {{"type": "text_delta", "text": "I'll check the current weather in New York City for you"}}}}

event: ping
data: {{"type": "ping"}}

event: content_block_stop
data: {{"type": "content_block_stop", "index": 0}}

event: content_block_start
data: {{"type": "content_block_start", "index": 1, "content_block": {{"type": "server_tool_use", "id": "srvtoolu_014hJH82Qum7Td6UV8gDXThB", "name": "web_search", "input": {{}}}}}}

event: content_block_delta
data: {{"type": "content_block_delta", "index": 1, "delta": {{"type": "input_json_delta", "partial_json": ""}}}}

event: content_block_delta
data: {{"type": "content_block_delta", "index": 1, "delta": {{"type": "input_json_delta", "partial_json": "{{\"query"}}}}

event: content_block_delta
data: {{"type": "content_block_delta", "index": 1, "delta": {{"type": "input_json_delta", "partial_json": "\": \"weather NYC today\"}}"}}}}

event: content_block_stop
data: {{"type": "content_block_stop", "index": 1 }}

event: content_block_start
data: {{"type": "content_block_start", "index": 2, "content_block": {WEB_SEARCH_RESULT}}}

event: content_block_stop
data: {{"type": "content_block_stop", "index": 2}}

event: message_delta
data: {{"type": "message_delta", "delta": {{"stop_reason": "pause_turn", "stop_sequence": null}}, "usage": {{"input_tokens": 10682, "output_tokens": 510, "server_tool_use": {{"web_search_requests": 1}}}}}}

event: message_stop
data: {{"type": "message_stop"}}

"#
    )
}

#[tokio::test]
async fn server_tool_blocks_pause_and_go_back_byte_for_byte() {
    let fake = fake(vec![Turn::sse(web_search_stream()), Turn::sse(TEXT)]).await;
    let client = client(&fake);
    let mut req = request();
    let message = client.stream(&req).await.unwrap().finish().await.unwrap();
    assert_eq!(message.stop_reason, Some(StopReason::PauseTurn));
    let ContentBlock::ServerToolUse(search) = &message.content[1] else {
        panic!("block 1 is {:?}", message.content[1]);
    };
    assert_eq!(search.input_value()["query"], "weather NYC today");
    assert_eq!(message.content[2].block_type(), "web_search_tool_result");
    assert_eq!(
        message.usage.input_tokens, 10682,
        "message_delta overwrites input too"
    );
    assert_eq!(
        message.usage.server_tool_use.unwrap().web_search_requests,
        1
    );

    // pause_turn: send the reply back as it is, and the API continues.
    req.messages.push(message.to_message());
    client.stream(&req).await.unwrap().finish().await.unwrap();
    let sent = &fake.requests()[1];
    let body = std::str::from_utf8(&sent.raw_body).unwrap();
    assert!(
        body.contains(WEB_SEARCH_RESULT),
        "the result block went back changed: {body}"
    );
}

#[tokio::test]
async fn a_refusal_stops_with_its_reason() {
    let sse = TEXT.replace(
        r#""stop_reason": "end_turn""#,
        r#""stop_reason": "refusal""#,
    );
    let (_, message) = run(&sse).await;
    assert_eq!(message.stop_reason, Some(StopReason::Refusal));
    assert_eq!(message.text(), "Hello!");
}

#[tokio::test]
async fn unknown_events_deltas_and_block_types_do_no_harm() {
    let unknown = r#"event: future_event
data: {"type": "future_event", "detail": {"x": 1}}

event: mystery
data: this is not JSON at all

event: content_block_start
data: {"type": "content_block_start", "index": 1, "content_block": {"zeta": 1, "type": "hologram", "payload": {"b": [1, 2], "a": null}}}

event: content_block_delta
data: {"type": "content_block_delta", "index": 0, "delta": {"type": "sparkle_delta", "sparkle": 3}}

event: content_block_stop
data: {"type": "content_block_stop", "index": 1}

"#;
    let sse = TEXT.replace(
        "event: message_delta\n",
        &format!("{unknown}event: message_delta\n"),
    );
    let sse = sse.replace(
        r#""stop_reason": "end_turn""#,
        r#""stop_reason": "brand_new_reason""#,
    );
    let (_, message) = run(&sse).await;
    assert_eq!(message.content.len(), 2);
    assert_eq!(message.text(), "Hello!");
    assert_eq!(
        serde_json::to_string(&message.content[1]).unwrap(),
        r#"{"zeta": 1, "type": "hologram", "payload": {"b": [1, 2], "a": null}}"#
    );
    assert_eq!(
        message.stop_reason,
        Some(StopReason::Other("brand_new_reason".into()))
    );
}

#[tokio::test]
async fn pings_anywhere_trailing_spaces_and_crlf_are_read() {
    let ping = "event: ping\ndata: {\"type\": \"ping\"}\n\n";
    let mut sse = String::from(ping);
    for part in TEXT.split_inclusive("\n\n") {
        sse.push_str(part);
        sse.push_str(ping);
    }
    let sse = sse.replace("}\n", "}   \n").replace('\n', "\r\n");
    let (_, message) = run(&sse).await;
    let (_, expected) = run(TEXT).await;
    assert_eq!(message, expected);
}

#[tokio::test]
async fn citations_arrive_as_deltas_and_stay_with_their_text() {
    let citation = r#"{"type": "web_search_result_location", "cited_text": "Sunny, 75F", "url": "https://example.org/nyc", "title": "NYC", "encrypted_index": "Eo8BCioIAhgB"}"#;
    let sse = TEXT.replace(
        "event: ping\n",
        &format!(
            "event: content_block_delta\ndata: {{\"type\": \"content_block_delta\", \"index\": 0, \"delta\": {{\"type\": \"citations_delta\", \"citation\": {citation}}}}}\n\nevent: ping\n"
        ),
    );
    let (events, message) = run(&sse).await;
    assert!(
        events
            .iter()
            .any(|e| matches!(e, StreamEvent::CitationDelta { index: 0, .. }))
    );
    let ContentBlock::Text(t) = &message.content[0] else {
        panic!("not text");
    };
    assert_eq!(t.citations.len(), 1);
    assert_eq!(t.citations[0].get(), citation);
}

#[tokio::test]
async fn an_error_event_after_the_200_is_a_typed_error() {
    let sse = TEXT.replace(
        "event: content_block_stop",
        "event: error\ndata: {\"type\": \"error\", \"error\": {\"type\": \"overloaded_error\", \"message\": \"Overloaded\"}}\n\nevent: content_block_stop",
    );
    let err = run_err(&sse).await;
    let api = err.api().expect("an API error");
    assert_eq!(api.kind, model::ApiErrorKind::Overloaded);
    assert_eq!(api.status, None);
    assert!(
        api.request_id
            .as_deref()
            .unwrap_or("")
            .starts_with("req_fake_")
    );
    assert!(err.to_string().contains("overloaded"), "{err}");
}

#[tokio::test]
async fn malformed_event_data_is_a_protocol_error_with_an_excerpt() {
    let sse = TEXT.replace(
        r#"data: {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "!"}}"#,
        r#"data: {"type": "content_block_delta", "index": 0, "delta": {"type": "text_del"#,
    );
    let err = run_err(&sse).await;
    assert!(matches!(err, ModelError::Protocol { .. }), "{err:?}");
    assert!(err.to_string().contains("text_del"), "{err}");
}

#[tokio::test]
async fn a_stream_without_message_stop_is_incomplete() {
    let cut = &TEXT[..TEXT.find("event: message_stop").unwrap()];
    let fake = fake(vec![Turn::sse(cut)]).await;
    let mut config = common::config(&fake);
    config.http.retry.max_retries = 0;
    let client = model::AnthropicClient::new(config).unwrap();
    let err = client
        .stream(&request())
        .await
        .unwrap()
        .finish()
        .await
        .unwrap_err();
    assert!(
        matches!(err, ModelError::Interrupted { .. }),
        "content had been delivered: {err:?}"
    );
    assert!(
        err.to_string()
            .contains("ended before the reply was complete"),
        "{err}"
    );
}
