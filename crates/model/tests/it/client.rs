//! The Anthropic client through its public surface, against the fake:
//! what it sends, what it makes of what comes back, and its errors.

use crate::common;

use common::{client, config, fake, request};
use model::{
    AnthropicClient, ApiErrorKind, CacheControl, CacheTtl, ContentBlock, Message, MessagesRequest,
    Metadata, ModelError, SystemBlock, Thinking, Tool, ToolChoice,
};
use serde_json::{Value, json};
use testkit::{FakeModel, Pace, Reply, Script, Turn};

fn rich_reply() -> Reply {
    let mut reply = Reply::new(
        vec![
            json!({"type": "thinking", "thinking": "Let me think… about “quotes” and \n newlines.", "signature": "EqQBCgIYAhIM1gbcDa9GJwZA2b3h"}),
            json!({"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix/LafPsn4a"}),
            json!({"type": "text", "text": "According to the source, it is sunny. ☀️",
                   "citations": [{"type": "web_search_result_location", "cited_text": "Sunny", "url": "https://example.org", "title": "Weather", "encrypted_index": "Eo8B"}]}),
            json!({"type": "server_tool_use", "id": "srvtoolu_01", "name": "web_search", "input": {"query": "weather"}}),
            json!({"type": "web_search_tool_result", "tool_use_id": "srvtoolu_01",
                   "content": [{"type": "web_search_result", "url": "https://example.org", "title": "Weather", "encrypted_content": "Ev0D", "page_age": null}]}),
            json!({"type": "tool_use", "id": "toolu_01", "name": "filesystem",
                   "input": {"operation": "write", "path": "/tmp/a b.txt", "content": "line 1\nline \"2\"\n", "mode": 420, "tags": ["x", {"y": null}]},
                   "caller": {"type": "direct"}}),
            json!({"type": "brand_new_block", "payload": {"k": [1, 2, 3]}}),
        ],
        "tool_use",
    )
    .usage(json!({"input_tokens": 1200, "output_tokens": 340, "cache_creation_input_tokens": 100,
                  "cache_read_input_tokens": 900,
                  "cache_creation": {"ephemeral_5m_input_tokens": 40, "ephemeral_1h_input_tokens": 60},
                  "server_tool_use": {"web_search_requests": 1}}));
    reply.id = Some("msg_01XFDUDYJgAACzvnptvVoYEL".into());
    reply
}

#[tokio::test]
async fn streamed_and_whole_replies_are_the_same_message() {
    for (text_chunk, json_chunk) in [(1, 1), (3, 7), (16, 16), (0, 0)] {
        let pace = Pace {
            text_chunk: Some(text_chunk),
            json_chunk: Some(json_chunk),
            ping_every: Some(3),
            ..Pace::default()
        };
        let turn = Turn::reply(rich_reply()).pace(pace);
        let fake = fake(vec![turn.clone(), turn]).await;
        let client = client(&fake);
        let whole = client.create(&request()).await.unwrap();
        let streamed = client
            .stream(&request())
            .await
            .unwrap()
            .finish()
            .await
            .unwrap();
        assert_eq!(streamed, whole, "chunks {text_chunk}/{json_chunk}");
        assert_eq!(whole.content.len(), 7);
        assert_eq!(whole.content[6].block_type(), "brand_new_block");
        assert_eq!(whole.usage.cache_read_input_tokens, 900);
        assert_eq!(
            whole.model, "claude-sonnet-4-5",
            "the fake answers as the model asked"
        );
    }
}

#[tokio::test]
async fn the_request_carries_the_api_headers_and_only_set_fields() {
    let fake = fake(vec![
        Turn::reply(Reply::text("ok")),
        Turn::reply(Reply::text("ok")),
    ])
    .await;
    let mut c = config(&fake);
    c.betas = vec!["context-management-2025-06-27".into()];
    let client = AnthropicClient::new(c).unwrap();
    let mut req = request();
    req.betas = vec![
        "web-fetch-2025-09-10".into(),
        "context-management-2025-06-27".into(),
    ];
    client.create(&req).await.unwrap();
    client.stream(&req).await.unwrap().finish().await.unwrap();
    let sent = fake.requests();
    let first = &sent[0];
    assert_eq!(first.path, "/v1/messages");
    assert_eq!(first.header("x-api-key"), Some("sk-test"));
    assert_eq!(first.header("anthropic-version"), Some("2023-06-01"));
    assert_eq!(
        first.header("anthropic-beta"),
        Some("context-management-2025-06-27,web-fetch-2025-09-10")
    );
    assert_eq!(first.header("authorization"), None);
    assert_eq!(
        first.body,
        json!({"model": "claude-sonnet-4-5", "max_tokens": 1024,
               "messages": [{"role": "user", "content": [{"type": "text", "text": "hello"}]}]})
    );
    assert_eq!(sent[1].body["stream"], json!(true));
}

#[tokio::test]
async fn an_agent_request_has_the_api_shapes() {
    let fake = fake(vec![Turn::reply(Reply::text("ok"))]).await;
    let mut req = MessagesRequest::new(
        "claude-sonnet-4-5",
        4096,
        vec![
            Message::user("read the file"),
            Message::assistant(vec![ContentBlock::tool_use(
                "toolu_1",
                "filesystem",
                &json!({"path": "a"}),
            )]),
            Message {
                role: model::Role::User,
                content: vec![ContentBlock::tool_result("toolu_1", "contents", false)],
            },
        ],
    );
    let mut last = ContentBlock::tool_result("toolu_2", "failed", true);
    last.set_cache_control(Some(CacheControl::ephemeral()))
        .unwrap();
    req.messages[2].content.push(last);
    req.system = vec![
        SystemBlock::text("base"),
        SystemBlock::text("knowledge").cached(CacheControl::with_ttl(CacheTtl::OneHour)),
    ];
    let mut tool = Tool::custom(
        "filesystem",
        "Read and write files",
        json!({"type": "object"}),
    );
    if let Tool::Custom(t) = &mut tool {
        t.cache_control = Some(CacheControl::ephemeral());
    }
    req.tools = vec![tool, Tool::server("web_search_20250305", "web_search")];
    req.tool_choice = Some(ToolChoice::Auto {
        disable_parallel_tool_use: true,
    });
    req.thinking = Some(Thinking::Enabled {
        budget_tokens: 2048,
    });
    req.stop_sequences = vec!["END".into()];
    req.metadata = Some(Metadata {
        user_id: Some("u1".into()),
    });
    req.context_management = Some(json!({"edits": [{"type": "clear_tool_uses_20250919"}]}));
    req.temperature = Some(1.0);
    assert_eq!(req.cache_breakpoints(), 3);
    client(&fake).create(&req).await.unwrap();
    let body = &fake.requests()[0].body;
    assert_eq!(
        body["system"][1],
        json!({"type": "text", "text": "knowledge", "cache_control": {"type": "ephemeral", "ttl": "1h"}})
    );
    assert_eq!(
        body["tools"][0]["cache_control"],
        json!({"type": "ephemeral"})
    );
    assert_eq!(
        body["tools"][1],
        json!({"type": "web_search_20250305", "name": "web_search"})
    );
    assert_eq!(
        body["tool_choice"],
        json!({"type": "auto", "disable_parallel_tool_use": true})
    );
    assert_eq!(
        body["thinking"],
        json!({"type": "enabled", "budget_tokens": 2048})
    );
    assert_eq!(
        body["messages"][1]["content"][0],
        json!({"type": "tool_use", "id": "toolu_1", "name": "filesystem", "input": {"path": "a"}})
    );
    assert_eq!(
        body["messages"][2]["content"][1],
        json!({"type": "tool_result", "tool_use_id": "toolu_2", "content": "failed", "is_error": true, "cache_control": {"type": "ephemeral"}})
    );
    assert_eq!(body["stop_sequences"], json!(["END"]));
    assert_eq!(body["metadata"], json!({"user_id": "u1"}));
    assert_eq!(
        body["context_management"]["edits"][0]["type"],
        "clear_tool_uses_20250919"
    );
    assert_eq!(body["temperature"], json!(1.0));
    assert!(body.get("top_p").is_none() && body.get("top_k").is_none());
}

#[tokio::test]
async fn the_same_request_serializes_to_the_same_bytes() {
    let fake = fake(vec![
        Turn::reply(rich_reply()),
        Turn::reply(Reply::text("a")),
        Turn::reply(Reply::text("b")),
    ])
    .await;
    let client = client(&fake);
    let mut req = request();
    let reply = client.stream(&req).await.unwrap().finish().await.unwrap();
    req.messages.push(reply.to_message());
    req.messages.push(Message::user("go on"));
    client.create(&req).await.unwrap();
    client.create(&req).await.unwrap();
    let sent = fake.requests();
    assert_eq!(sent[1].raw_body, sent[2].raw_body);
    let replayed = &sent[1].body["messages"][1]["content"];
    let scripted: Vec<Value> = rich_reply().content;
    assert_eq!(replayed, &json!(scripted), "the reply went back as it came");
}

#[tokio::test]
async fn a_bearer_token_is_sent_as_authorization() {
    let fake = FakeModel::start(Script {
        api_key: Some("tok-1".into()),
        ..Script::new(vec![Turn::reply(Reply::text("ok"))])
    })
    .await
    .unwrap();
    let mut c = config(&fake);
    c.auth.api_key = None;
    c.auth.auth_token = Some("tok-1".into());
    AnthropicClient::new(c)
        .unwrap()
        .create(&request())
        .await
        .unwrap();
    assert_eq!(
        fake.requests()[0].header("authorization"),
        Some("Bearer tok-1")
    );
    assert_eq!(fake.requests()[0].header("x-api-key"), None);
}

#[tokio::test]
async fn a_wrong_key_is_a_401_that_says_which_variable_to_check() {
    let fake = FakeModel::start(Script {
        api_key: Some("the-right-one".into()),
        ..Script::new(vec![Turn::reply(Reply::text("ok"))])
    })
    .await
    .unwrap();
    let err = client(&fake).create(&request()).await.unwrap_err();
    let api = err.api().unwrap();
    assert_eq!(
        (api.status, &api.kind),
        (Some(401), &ApiErrorKind::Authentication)
    );
    assert!(err.to_string().contains("ANTHROPIC_API_KEY"), "{err}");
    assert_eq!(fake.requests().len(), 1, "401 is not retried");
}

#[tokio::test]
async fn errors_are_typed_by_status_and_type_with_the_request_id() {
    let cases = [
        (
            400,
            "prompt is too long: 212000 tokens > 200000 maximum",
            ApiErrorKind::InvalidRequest,
        ),
        (403, "not allowed", ApiErrorKind::Permission),
        (404, "model: claude-nope", ApiErrorKind::NotFound),
        (
            413,
            "Request exceeds the maximum allowed number of bytes.",
            ApiErrorKind::RequestTooLarge,
        ),
        (429, "rate limited", ApiErrorKind::RateLimit),
        (500, "Internal server error", ApiErrorKind::Server),
        (504, "timed out", ApiErrorKind::Timeout),
        (529, "Overloaded", ApiErrorKind::Overloaded),
    ];
    for (status, message, kind) in cases {
        let fake = fake(vec![
            Turn::error(status, message).header("x-should-retry", "false"),
        ])
        .await;
        let err = client(&fake).create(&request()).await.unwrap_err();
        let api = err.api().unwrap();
        assert_eq!(api.kind, kind, "{status}");
        assert_eq!(api.message, message);
        assert_eq!(api.error_type, testkit::error_type_for(status));
        let id = api.request_id.clone().expect("request-id");
        assert!(err.to_string().contains(&id), "{err}");
        assert_eq!(
            err.is_prompt_too_long(),
            message.starts_with("prompt is too long")
        );
    }
    let fake = fake(vec![Turn::error(400, "prompt is too long: 1 > 0")]).await;
    let err = client(&fake).create(&request()).await.unwrap_err();
    assert!(err.to_string().contains("compact it and retry"), "{err}");
}

#[tokio::test]
async fn count_tokens_sends_what_counts_and_returns_the_count() {
    let fake = fake(vec![]).await;
    let mut req = request();
    req.system = vec![SystemBlock::text("be brief")];
    req.tools = vec![Tool::custom("echo", "Echo", json!({"type": "object"}))];
    req.temperature = Some(0.5);
    let n = client(&fake).count_tokens(&req).await.unwrap();
    let sent = &fake.requests()[0];
    assert_eq!(sent.path, "/v1/messages/count_tokens");
    assert_eq!(n, testkit::estimate_tokens(&sent.body));
    assert!(n > 0);
    assert!(sent.body.get("max_tokens").is_none() && sent.body.get("temperature").is_none());
    assert_eq!(sent.body["system"][0]["text"], "be brief");
    assert_eq!(sent.body["tools"][0]["name"], "echo");
}

#[tokio::test]
async fn bad_requests_are_refused_before_sending() {
    let fake = fake(vec![Turn::reply(Reply::text("never"))]).await;
    let client = client(&fake);
    let mut too_many = request();
    too_many.system = (0..5)
        .map(|i| SystemBlock::text(format!("part {i}")).cached(CacheControl::ephemeral()))
        .collect();
    let mut no_model = request();
    no_model.model = String::new();
    let mut budget = request();
    budget.thinking = Some(Thinking::Enabled {
        budget_tokens: 4096,
    });
    for (req, says) in [
        (too_many, "at most 4"),
        (no_model, "names no model"),
        (budget, "below max_tokens"),
    ] {
        let err = client.create(&req).await.unwrap_err();
        assert!(matches!(err, ModelError::InvalidRequest(_)), "{err:?}");
        assert!(err.to_string().contains(says), "{err}");
    }
    assert!(fake.requests().is_empty());
}

#[tokio::test]
async fn an_exhausted_script_says_so() {
    let fake = fake(vec![Turn::reply(Reply::text("only one"))]).await;
    let client = client(&fake);
    client.create(&request()).await.unwrap();
    let err = client.create(&request()).await.unwrap_err();
    assert!(err.to_string().contains("no turn left"), "{err}");
}

#[tokio::test]
async fn a_message_without_credentials_for_the_real_api_is_refused() {
    let err = AnthropicClient::new(model::AnthropicConfig::from_lookup(|_| None)).unwrap_err();
    assert!(err.to_string().contains("hc-fake-model"), "{err}");
}
