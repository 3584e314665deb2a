//! The OpenAI-compatible provider against the fake's chat-completions
//! endpoint, and [`Provider`] driving both APIs the same way.

use crate::common;

use common::{fake, fast_retries, request};
use model::{
    ContentBlock, HttpConfig, Message, ModelError, OpenAiClient, OpenAiConfig, Provider,
    ProviderConfig, StopReason, StreamEvent, SystemBlock, Tool,
};
use serde_json::json;
use testkit::{FakeModel, Pace, Reply, Turn};

fn openai(fake: &FakeModel, key: Option<&str>) -> OpenAiClient {
    OpenAiClient::new(OpenAiConfig {
        base_url: fake.openai_base_url(),
        api_key: key.map(str::to_owned),
        http: HttpConfig {
            retry: fast_retries(),
            ..HttpConfig::default()
        },
    })
    .unwrap()
}

fn tool_reply() -> Reply {
    let mut reply = Reply::new(
        vec![
            json!({"type": "thinking", "thinking": "The user wants two files.", "signature": ""}),
            json!({"type": "text", "text": "Reading both files now."}),
            json!({"type": "tool_use", "id": "call_a", "name": "filesystem", "input": {"operation": "read", "path": "a.txt"}}),
            json!({"type": "tool_use", "id": "call_b", "name": "filesystem", "input": {"operation": "read", "path": "b \"quoted\".txt"}}),
        ],
        "tool_use",
    )
    .usage(json!({"input_tokens": 50, "cache_read_input_tokens": 30, "output_tokens": 21}));
    reply.id = Some("chatcmpl-1".into());
    reply
}

#[tokio::test]
async fn tool_calls_stream_into_the_same_types_and_match_the_whole_reply() {
    let turn = Turn::reply(tool_reply()).pace(Pace {
        text_chunk: Some(5),
        json_chunk: Some(4),
        ..Pace::default()
    });
    let fake = fake(vec![turn.clone(), turn]).await;
    let client = openai(&fake, None);
    let mut stream = client.stream(&request()).await.unwrap();
    let mut events = Vec::new();
    while let Some(e) = stream.next_event().await.unwrap() {
        events.push(e);
    }
    let streamed = stream.finish().await.unwrap();
    let whole = client.create(&request()).await.unwrap();
    assert_eq!(streamed, whole);
    assert_eq!(streamed.stop_reason, Some(StopReason::ToolUse));
    assert_eq!(streamed.text(), "Reading both files now.");
    let calls: Vec<_> = streamed.tool_uses().collect();
    assert_eq!(calls.len(), 2);
    assert_eq!(calls[1].id, "call_b");
    assert_eq!(
        calls[1].input_value(),
        json!({"operation": "read", "path": "b \"quoted\".txt"})
    );
    assert!(
        matches!(&streamed.content[0], ContentBlock::Thinking(t) if t.thinking == "The user wants two files.")
    );
    assert_eq!(streamed.usage.input_tokens, 50);
    assert_eq!(streamed.usage.cache_read_input_tokens, 30);
    assert_eq!(streamed.usage.output_tokens, 21);
    let text_deltas = events
        .iter()
        .filter(|e| matches!(e, StreamEvent::TextDelta { .. }))
        .count();
    assert_eq!(text_deltas, "Reading both files now.".len().div_ceil(5));
    assert!(
        events
            .iter()
            .any(|e| matches!(e, StreamEvent::InputJsonDelta { index: 3, .. }))
    );
}

#[tokio::test]
async fn the_request_is_mapped_to_chat_completions() {
    let fake = fake(vec![Turn::reply(Reply::text("ok"))]).await;
    let mut req = request();
    req.system = vec![SystemBlock::text("be brief")];
    req.messages
        .push(Message::assistant(vec![ContentBlock::tool_use(
            "call_1",
            "shell",
            &json!({"cmd": "ls"}),
        )]));
    req.messages.push(Message {
        role: model::Role::User,
        content: vec![ContentBlock::tool_result("call_1", "a.txt", false)],
    });
    req.tools = vec![Tool::custom(
        "shell",
        "Run a command",
        json!({"type": "object"}),
    )];
    req.stop_sequences = vec!["STOP".into()];
    openai(&fake, Some("sk-local"))
        .stream(&req)
        .await
        .unwrap()
        .finish()
        .await
        .unwrap();
    let sent = &fake.requests()[0];
    assert_eq!(sent.path, "/v1/chat/completions");
    assert_eq!(sent.header("authorization"), Some("Bearer sk-local"));
    assert_eq!(sent.header("anthropic-version"), None);
    assert_eq!(
        sent.body["messages"][0],
        json!({"role": "system", "content": "be brief"})
    );
    assert_eq!(
        sent.body["messages"][3],
        json!({"role": "tool", "tool_call_id": "call_1", "content": "a.txt"})
    );
    assert_eq!(sent.body["tools"][0]["function"]["name"], "shell");
    assert_eq!(sent.body["stop"], json!(["STOP"]));
    assert_eq!(sent.body["stream"], json!(true));
    assert_eq!(sent.body["stream_options"], json!({"include_usage": true}));
}

#[tokio::test]
async fn errors_and_retries_work_the_same_way() {
    let fake = fake(vec![
        Turn::error(429, "Rate limit reached").header("retry-after-ms", "30"),
        Turn::reply(Reply::text("after the wait")),
        Turn::error(404, "model 'llama9' not found"),
    ])
    .await;
    let client = openai(&fake, None);
    assert_eq!(
        client.create(&request()).await.unwrap().text(),
        "after the wait"
    );
    let r = fake.requests();
    assert!(r[1].received - r[0].received >= std::time::Duration::from_millis(30));
    let err = client.create(&request()).await.unwrap_err();
    let api = err.api().unwrap();
    assert_eq!(api.kind, model::ApiErrorKind::NotFound);
    assert_eq!(api.message, "model 'llama9' not found");
    assert!(err.to_string().contains("check the model name"), "{err}");
}

#[tokio::test]
async fn an_error_inside_the_stream_is_typed() {
    let fault = testkit::Fault::ErrorEvent {
        after_events: 2,
        error_type: "server_error".into(),
        message: "the model crashed".into(),
    };
    let fake = fake(vec![
        Turn::reply(Reply::text("partial answer here")).fault(fault),
    ])
    .await;
    let err = openai(&fake, None)
        .stream(&request())
        .await
        .unwrap()
        .finish()
        .await
        .unwrap_err();
    let api = err.api().expect("typed");
    assert_eq!(api.status, None);
    assert_eq!(api.message, "the model crashed");
}

const LOCAL_STREAM: &str = "data: {\"id\":\"c1\",\"model\":\"qwen\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":null,\"tool_calls\":[{\"index\":0,\"id\":\"call_9\",\"type\":\"function\",\"function\":{\"name\":\"shell\",\"arguments\":\"{\\\"cmd\\\": \"}}]},\"finish_reason\":null}]}\n\n\
data: {\"id\":\"c1\",\"model\":\"qwen\",\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"\\\"ls\\\"}\"}}]},\"finish_reason\":null}]}\n\n\
data: {\"id\":\"c1\",\"model\":\"qwen\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n";

#[tokio::test]
async fn a_local_server_that_says_stop_after_tool_calls_and_omits_done() {
    let fake = fake(vec![Turn::sse(LOCAL_STREAM)]).await;
    let message = openai(&fake, None)
        .stream(&request())
        .await
        .unwrap()
        .finish()
        .await
        .unwrap();
    assert_eq!(message.stop_reason, Some(StopReason::ToolUse));
    let call = message.tool_uses().next().unwrap();
    assert_eq!((call.id.as_str(), call.name.as_str()), ("call_9", "shell"));
    assert_eq!(call.input_value(), json!({"cmd": "ls"}));
}

#[tokio::test]
async fn broken_tool_arguments_are_a_clear_error() {
    let broken = LOCAL_STREAM.replace("\\\"ls\\\"}", "\\\"ls\\\"");
    assert_ne!(broken, LOCAL_STREAM);
    let fake = fake(vec![Turn::sse(broken)]).await;
    let err = openai(&fake, None)
        .stream(&request())
        .await
        .unwrap()
        .finish()
        .await
        .unwrap_err();
    assert!(
        matches!(err, ModelError::InvalidToolInput { ref tool, .. } if tool == "shell"),
        "{err:?}"
    );
}

#[tokio::test]
async fn server_tools_are_refused_before_sending() {
    let fake = fake(vec![Turn::reply(Reply::text("never"))]).await;
    let mut req = request();
    req.tools = vec![Tool::server("web_search_20250305", "web_search")];
    let err = openai(&fake, None).create(&req).await.unwrap_err();
    assert!(matches!(err, ModelError::Unsupported(_)), "{err:?}");
    assert!(fake.requests().is_empty());
}

/// What an agent does with a provider, whichever it is.
async fn one_turn(provider: &Provider) -> (String, Vec<String>) {
    let mut text = String::new();
    let reply = provider
        .stream(&request())
        .await
        .unwrap()
        .for_each(|e| {
            if let StreamEvent::TextDelta { text: t, .. } = e {
                text.push_str(t);
            }
        })
        .await
        .unwrap();
    assert_eq!(text, reply.text(), "the deltas add up to the message");
    let tools = reply
        .tool_uses()
        .map(|t| t.input_value().to_string())
        .collect();
    (text, tools)
}

#[tokio::test]
async fn both_providers_are_driven_the_same_way() {
    let fake = fake(vec![Turn::reply(tool_reply()), Turn::reply(tool_reply())]).await;
    let anthropic = Provider::new(ProviderConfig::Anthropic(common::config(&fake))).unwrap();
    let local = Provider::new(ProviderConfig::OpenAi(OpenAiConfig {
        http: HttpConfig {
            retry: fast_retries(),
            ..HttpConfig::default()
        },
        ..OpenAiConfig::local(fake.openai_base_url())
    }))
    .unwrap();
    assert_eq!(one_turn(&anthropic).await, one_turn(&local).await);
    let paths: Vec<String> = fake.requests().into_iter().map(|r| r.path).collect();
    assert_eq!(paths, ["/v1/messages", "/v1/chat/completions"]);
    let err = local.count_tokens(&request()).await.unwrap_err();
    assert!(
        err.to_string().contains("use the usage of the last reply"),
        "{err}"
    );
}
