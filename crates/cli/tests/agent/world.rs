//! The world as it is (issue 53): models named as people name them in
//! Claude Code, against a fake that refuses what the real API refuses; a
//! budget never silently unenforced; a fallback as quick as Claude Code's.

use crate::common::*;
use serde_json::{Value, json};

fn model_of(request: &[u8]) -> String {
    let body: Value = serde_json::from_slice(request).unwrap();
    body["model"].as_str().unwrap().to_owned()
}

#[tokio::test(flavor = "multi_thread")]
async fn aliases_name_todays_models_in_flags_config_and_the_environment() {
    let s =
        Setup::new(json!({"turns": [reply(json!([text("hi")]), "end_turn")], "cycle": true})).await;
    // the fake refuses an alias as the API does
    let raw = reqwest::Client::new()
        .post(format!("{}/v1/messages", s.fake.base_url()))
        .header("anthropic-version", "2023-06-01")
        .header("content-type", "application/json")
        .body(
            json!({"model": "opus", "max_tokens": 10, "messages": [{"role": "user", "content": "hi"}]})
                .to_string(),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(raw.status().as_u16(), 404);
    let said: Value = serde_json::from_str(&raw.text().await.unwrap()).unwrap();
    assert_eq!(said["error"]["type"], "not_found_error");
    let asked = s.fake.requests_to("/v1/messages").len();
    for (args, env, expected) in [
        (vec!["--model", "opus"], vec![], "claude-opus-5-5"),
        (vec!["--model", "haiku"], vec![], "claude-haiku-5-5"),
        (vec!["--model", "fable"], vec![], "claude-fable-5-2"),
        (vec!["--model", "best"], vec![], "claude-opus-5-5"),
        (
            vec![],
            vec![("ANTHROPIC_MODEL", "sonnet")],
            "claude-sonnet-5-5",
        ),
        (
            vec!["--model", "opus"],
            vec![("ANTHROPIC_DEFAULT_OPUS_MODEL", "claude-opus-4-6")],
            "claude-opus-4-6",
        ),
    ] {
        let mut all = vec!["run"];
        all.extend(args.iter().copied());
        all.push("hello");
        let ran = s.out_with(&env, &all).await;
        assert_eq!(ran.code, 0, "{all:?} {env:?}: {ran:#?}");
        let sent = s.sent();
        assert_eq!(model_of(sent.last().unwrap()), expected, "{all:?} {env:?}");
    }
    // the project's file, too; and `[1m]` asks a million tokens of context
    s.file(
        ".hermitcrab/config.toml",
        "model = \"sonnet-4-6-not-an-alias\"\n",
    );
    let typo = s.run(&["hello"]).await;
    assert_ne!(
        typo.code, 0,
        "an id the API does not serve fails as it would: {typo:#?}"
    );
    assert!(typo.stderr.contains("sonnet-4-6-not-an-alias"), "{typo:#?}");
    s.file(
        ".hermitcrab/config.toml",
        "model = \"claude-sonnet-4-6[1m]\"\n",
    );
    let wide = s.run(&["hello"]).await;
    assert_eq!(wide.code, 0, "{wide:#?}");
    let last = s.fake.requests_to("/v1/messages").pop().unwrap();
    assert_eq!(last.body["model"], "claude-sonnet-4-6");
    let betas = last
        .headers
        .get("anthropic-beta")
        .cloned()
        .unwrap_or_default();
    assert!(betas.contains("context-1m-2025-08-07"), "{betas}");
    assert!(s.fake.requests_to("/v1/messages").len() > asked);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_budget_on_a_model_with_no_price_is_kept_at_the_dearest_price() {
    let turn = json!({"reply": {"content": [call("t1", "read", json!({"file_path": "a.txt"}))], "stop_reason": "tool_use",
        "usage": {"input_tokens": 1000, "output_tokens": 50}}});
    let s = Setup::new(
        json!({"turns": [turn.clone(), turn.clone(), turn], "models": ["claude-nova-1"]}),
    )
    .await;
    s.file("a.txt", "a");
    let nova = [
        "--model",
        "claude-nova-1",
        "--max-budget-usd",
        "0.005",
        "go",
    ];
    let ran = s.run(&nova).await;
    assert_eq!(ran.code, 3, "{ran:#?}");
    assert!(ran.stderr.contains("dearest Claude model"), "{ran:#?}");
    assert!(ran.stderr.contains("budget of $0.01"), "{ran:#?}");
    assert_eq!(
        s.sent().len(),
        1,
        "one call spent it (at $15/$75 a million)"
    );
    // its own prices, named in the configuration, count instead
    let t = json!({"reply": {"content": [text("cheap")], "stop_reason": "end_turn",
        "usage": {"input_tokens": 1000, "output_tokens": 50}}});
    let cheap = Setup::new(json!({"turns": [t], "models": ["claude-nova-1"]})).await;
    cheap.file(
        ".no-user-config/hermitcrab/config.toml",
        "[models.\"claude-nova-1\"]\ninput = 1.0\noutput = 2.0\n",
    );
    let ran = cheap.run(&nova).await;
    assert_eq!(ran.code, 0, "{ran:#?}");
    assert!(ran.stderr.contains("$0.0011"), "{ran:#?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_fallback_comes_after_three_overloaded_answers_not_the_retry_budget() {
    let busy = json!({"error": {"status": 529, "message": "Overloaded", "headers": {"retry-after-ms": "1"}}});
    let s = Setup::new(json!({"turns": [
        busy, busy, busy,
        reply(json!([text("from the fallback")]), "end_turn"),
    ]}))
    .await;
    let ran = s
        .run(&["--model", "opus", "--fallback-model", "sonnet", "go"])
        .await;
    assert_eq!(ran.code, 0, "{ran:#?}");
    let models: Vec<String> = s.sent().iter().map(|r| model_of(r)).collect();
    assert_eq!(
        models,
        [
            "claude-opus-5-5",
            "claude-opus-5-5",
            "claude-opus-5-5",
            "claude-sonnet-5-5"
        ],
        "three overloaded answers, then the fallback (not ten retries)"
    );
    assert!(ran.stdout.contains("from the fallback"), "{ran:#?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn hc_models_lists_the_aliases_and_what_this_key_may_use() {
    let s = Setup::new(
        json!({"turns": [reply(json!([text("unused")]), "end_turn")], "models": ["claude-nova-1"]}),
    )
    .await;
    let listed = s.out(&["models", "--json"]).await;
    assert_eq!(listed.code, 0, "{listed:#?}");
    let out: Value = serde_json::from_str(&listed.stdout).unwrap();
    let opus = (out["models"].as_array().unwrap().iter())
        .find(|m| m["id"] == "claude-opus-5-5")
        .unwrap();
    assert_eq!(opus["aliases"], json!(["opus"]));
    assert_eq!(opus["available"], true);
    assert_eq!(out["listed_unknown"], json!(["claude-nova-1"]));
    assert!(out["not_asked"].is_null(), "{out}");
    // asked once; the answer kept (a second look asks nothing)
    let asked = s.fake.requests_to("/v1/models").len();
    assert_eq!(asked, 1);
    let again = s.out(&["models"]).await;
    assert!(again.stdout.contains("claude-nova-1"), "{again:#?}");
    assert_eq!(s.fake.requests_to("/v1/models").len(), 1);
}

/// The MCP fixture's configuration, named `py`.
fn python_mcp(s: &Setup) -> String {
    let (python, server) = crate::mcp::python_server();
    let marker = s.root.join("out/marker");
    std::fs::create_dir_all(marker.parent().unwrap()).unwrap();
    json!({"mcpServers": {"py": {
        "command": python, "args": [server],
        "env": {"FIXTURE_TOKEN": "t", "FIXTURE_MARKER": marker},
    }}})
    .to_string()
}

#[tokio::test(flavor = "multi_thread")]
async fn mcp_tools_wait_behind_a_tool_search_and_the_record_rebuilds_each_request() {
    let s = Setup::new(json!({"turns": [
        reply(json!([call("t1", "ToolSearch", json!({"query": "greet someone"}))]), "tool_use"),
        reply(json!([call("t2", "mcp__py__greet", json!({"name": "crab"}))]), "tool_use"),
        reply(json!([text("done")]), "end_turn"),
    ]}))
    .await;
    let config = python_mcp(&s);
    let mut hc = s.hc(&["run", "--allow", "mcp__py", "--mcp-config", &config, "go"]);
    hc.env("ENABLE_TOOL_SEARCH", "true");
    let out = hc.output().await.unwrap();
    assert!(out.status.success(), "{out:?}");
    let requests = s.fake.requests_to("/v1/messages");
    assert_eq!(requests.len(), 3);
    let first = &requests[0].body;
    let tools = first["tools"].as_array().unwrap();
    let greet = tools
        .iter()
        .find(|t| t["name"] == "mcp__py__greet")
        .unwrap();
    assert_eq!(greet["defer_loading"], true, "{greet}");
    assert!(greet.get("cache_control").is_none());
    let search = tools.iter().find(|t| t["name"] == "ToolSearch").unwrap();
    assert!(
        search.get("defer_loading").is_none(),
        "the search itself is sent whole"
    );
    let read = tools.iter().find(|t| t["name"] == "read").unwrap();
    assert!(
        read.get("defer_loading").is_none(),
        "hc's own tools are sent whole"
    );
    assert!(
        requests[0].headers["anthropic-beta"].contains("advanced-tool-use-2025-11-20"),
        "{:?}",
        requests[0].headers
    );
    let system = first["system"].to_string();
    assert!(system.contains("# Deferred tools") && system.contains("- mcp__py__greet"));
    // the search's result references the tool it loaded, and nothing else
    let second = &requests[1].body;
    let result = second["messages"].as_array().unwrap().last().unwrap()["content"][0].clone();
    assert_eq!(
        result["content"],
        json!([{"type": "tool_reference", "tool_name": "mcp__py__greet"}]),
        "{result}"
    );
    assert_eq!(
        second["tools"], first["tools"],
        "the tools (and the cache) stay as they were"
    );
    let session = s.sessions().pop().unwrap();
    let results = s.of_type(&session, "tool-result");
    assert_eq!(results[1]["text"], "hello crab; token=t");
    // every request rebuilds from the record, byte for byte
    for (n, sent) in s.sent().iter().enumerate() {
        assert_eq!(&s.rebuilt(&session, n + 1).await, sent, "request {}", n + 1);
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_few_mcp_tools_are_sent_whole_and_a_bad_setting_is_named() {
    let s =
        Setup::new(json!({"turns": [reply(json!([text("hi")]), "end_turn")], "cycle": true})).await;
    let config = python_mcp(&s);
    let out = s
        .hc(&["run", "--mcp-config", &config, "go"])
        .output()
        .await
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let first = &s.fake.requests_to("/v1/messages")[0].body;
    let tools = first["tools"].as_array().unwrap();
    assert!(tools.iter().any(|t| t["name"] == "mcp__py__greet"));
    assert!(
        tools
            .iter()
            .all(|t| t.get("defer_loading").is_none() && t["name"] != "ToolSearch")
    );
    // the fake refuses deferred tools as the API does: not without the
    // beta, never a reference to a tool the request does not defer
    let refused = |body: Value, beta: bool| {
        let mut post = reqwest::Client::new()
            .post(format!("{}/v1/messages", s.fake.base_url()))
            .header("anthropic-version", "2023-06-01")
            .header("content-type", "application/json");
        if beta {
            post = post.header("anthropic-beta", "advanced-tool-use-2025-11-20");
        }
        async move {
            let answer = post.body(body.to_string()).send().await.unwrap();
            (answer.status().as_u16(), answer.text().await.unwrap())
        }
    };
    let tool = |name: &str, deferred: bool| json!({"name": name, "input_schema": {"type": "object"}, "defer_loading": deferred});
    let model = "claude-sonnet-5-5";
    let ask = json!([{"role": "user", "content": "hi"}]);
    let body = json!({"model": model, "max_tokens": 9, "messages": ask,
        "tools": [tool("a", false), tool("b", true)]});
    let (status, said) = refused(body, false).await;
    assert_eq!(status, 400, "{said}");
    assert!(said.contains("tools.1.defer_loading"), "{said}");
    let referenced = json!([
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "u", "name": "a", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "u",
            "content": [{"type": "tool_reference", "tool_name": "a"}]}]},
    ]);
    let body = json!({"model": model, "max_tokens": 9, "messages": referenced,
        "tools": [tool("a", false), tool("b", true)]});
    let (status, said) = refused(body, true).await;
    assert_eq!(status, 400, "{said}");
    assert!(said.contains("Tool reference 'a' not found"), "{said}");
    let mut hc = s.hc(&["run", "--mcp-config", &config, "go"]);
    hc.env("ENABLE_TOOL_SEARCH", "sometimes");
    let out = hc.output().await.unwrap();
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("ENABLE_TOOL_SEARCH") && stderr.contains("auto:N"),
        "{stderr}"
    );
}
