//! The hermitcrab layer (`design/blocks.md`) through `hc run --agent
//! hermitcrab` against the fake: its six blocks seeded, the constitution,
//! keystone, aperture (one line per block) and focus in the system prompt,
//! history saved after every exchange and compressed at the tenth by a
//! summary call the fake answers, the block tools and their refusals,
//! server tool blocks passed back verbatim across a `pause_turn`, and
//! every request — compression calls included — rebuilt byte for byte.

use crate::common::*;
use serde_json::{Value, json};

const PRESET: &str = "--agent=hermitcrab";

fn body(s: &Setup, n: usize) -> Value {
    serde_json::from_slice(&s.sent()[n]).unwrap()
}

/// The hermitcrab's part of request `n`'s system prompt.
fn shell_text(s: &Setup, n: usize) -> String {
    body(s, n)["system"][0]["text"].as_str().unwrap().to_owned()
}

/// The aperture's lines of a system prompt.
fn aperture(system: &str) -> Vec<String> {
    let after = system.split("# Aperture\n\n").nth(1).unwrap();
    after
        .split("\n\n")
        .next()
        .unwrap()
        .lines()
        .skip(1)
        .map(str::to_owned)
        .collect()
}

/// A block as stored now.
fn block(s: &Setup, name: &str) -> Value {
    let id = format!("block/hermitcrab/{name}");
    let read = s
        .db()
        .scope(&[id.as_str()], &substrate::ScopeOpts::default())
        .unwrap();
    read.scopes[0].body_value()
}

/// `message N` as a hermitcrab run on the one session (the first starts it).
async fn message(s: &Setup, n: usize) -> Ran {
    let prompt = format!("message {n}");
    let mut args = vec![PRESET, prompt.as_str()];
    if n > 1 {
        args.insert(1, "--continue");
    }
    let ran = s.run(&args).await;
    assert_eq!(ran.code, 0, "{ran:#?}");
    ran
}

/// Every request of the session is what its rebuild gives.
async fn all_rebuilt(s: &Setup, session: &str) {
    let sent = s.sent();
    for (n, want) in sent.iter().enumerate() {
        let got = s.rebuilt(session, n + 1).await;
        assert_eq!(
            String::from_utf8_lossy(&got),
            String::from_utf8_lossy(want),
            "request {} rebuilt",
            n + 1
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_hermitcrab_seeds_its_blocks_and_sees_them_in_every_request_exactly() {
    let s = Setup::new(json!({"turns": [
        reply(json!([text("Hello; I have read the keystone.")]), "end_turn"),
        reply(json!([text("Still here.")]), "end_turn"),
    ]}))
    .await;
    let first = s.run(&[PRESET, "wake up"]).await;
    assert_eq!(first.code, 0, "{first:#?}");
    let listed = s.out(&["blocks", "--json"]).await;
    let names: Vec<String> = serde_json::from_str::<Value>(&listed.stdout)
        .unwrap()
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["name"].as_str().unwrap().to_owned())
        .collect();
    for name in [
        "keystone",
        "capabilities",
        "history",
        "purpose",
        "stash",
        "relationships",
    ] {
        assert!(names.contains(&name.to_owned()), "{name} in {names:?}");
    }
    // the first call: the constitution (from its chunk), the keystone whole, the focus
    let boot = shell_text(&s, 0);
    assert!(boot.starts_with("You are a hermitcrab"), "{boot}");
    assert!(boot.contains("# Keystone") && boot.contains("\"decimal\": 0"));
    assert!(boot.contains("# Focus") && boot.contains("[capabilities — depth 1]"));
    let lines = aperture(&boot);
    assert_eq!(lines.len(), 5, "one line per block: {lines:#?}");
    for (line, name) in lines.iter().zip([
        "capabilities",
        "history",
        "purpose",
        "stash",
        "relationships",
    ]) {
        assert!(line.starts_with(&format!("[{name}] ")), "{line}");
    }
    // the server tools, with the beta header they need
    let first_body = body(&s, 0);
    let tools = first_body["tools"].as_array().unwrap();
    let server = |name: &str| tools.iter().find(|t| t["name"] == name).cloned().unwrap();
    assert_eq!(server("web_search")["max_uses"], 5);
    assert_eq!(server("web_fetch")["max_uses"], 10);
    assert!(
        server("code_execution")["type"]
            .as_str()
            .unwrap()
            .starts_with("code_execution")
    );
    for own in [
        "block_list",
        "block_read",
        "block_write",
        "block_create",
        "write_entry",
        "call_llm",
        "get_datetime",
    ] {
        assert!(tools.iter().any(|t| t["name"] == own), "{own}");
    }
    let beta = &s.fake.requests_to("/v1/messages")[0].headers["anthropic-beta"];
    assert!(
        beta.contains("code-execution-web-tools-2026-02-09"),
        "{beta}"
    );
    // capabilities were written from the tools this run has
    let caps = block(&s, "capabilities");
    let native = caps["tree"]["1"]["1"].as_str().unwrap();
    assert!(native.starts_with("web_search"), "{caps}");
    // the exchange is in history
    let history = block(&s, "history");
    let entry = history["tree"]["0"]["1"].as_str().unwrap();
    assert!(
        entry.contains("wake up → Hello; I have read the keystone."),
        "{entry}"
    );

    // a person edits the constitution; the next run reads it (and only the pscale 0 of the keystone)
    s.commit(json!({"chunks": [{"id": "constitution", "body": {"text": "Be a careful crab."}}]}))
        .await;
    let second = s.run(&[PRESET, "--continue", "again"]).await;
    assert_eq!(second.code, 0, "{second:#?}");
    let later = shell_text(&s, 1);
    assert!(later.starts_with("Be a careful crab."), "{later}");
    assert!(
        !later.contains("\"decimal\"") && !later.contains("# Focus"),
        "{later}"
    );
    assert!(later.contains("# Keystone\n\nHow to read a pscale block."));
    assert_eq!(aperture(&later).len(), 5);
    let session = &s.sessions()[0];
    all_rebuilt(&s, session).await;
    // the trace shows the saves
    let trace = s.out(&["trace", session]).await;
    assert!(trace.stdout.contains("▤ history 0.2 ←"), "{}", trace.stdout);
}

#[tokio::test(flavor = "multi_thread")]
async fn history_is_saved_after_each_exchange_and_compressed_at_the_tenth() {
    let mut turns = vec![when(
        "stands for all of them",
        json!([text("Nine greetings, answered.")]),
        "end_turn",
    )];
    turns.extend((0..10).map(|_| reply(json!([text("ok")]), "end_turn")));
    let s = Setup::new(json!({ "turns": turns })).await;
    for n in 1..=10 {
        message(&s, n).await;
        if n == 9 {
            let history = block(&s, "history");
            assert_eq!(
                history["tree"]["0"].as_object().unwrap().len(),
                10,
                "its text and nine: {history}"
            );
            assert!(history["tree"].get("1").is_none());
        }
    }
    let history = block(&s, "history");
    assert_eq!(
        history["tree"]["0"]["_"], "Nine greetings, answered.",
        "{history}"
    );
    assert!(
        history["tree"]["0"]["9"]
            .as_str()
            .unwrap()
            .contains("message 9 → ok"),
        "entries stay"
    );
    assert!(
        history["tree"]["1"]["1"]
            .as_str()
            .unwrap()
            .contains("message 10 → ok"),
        "{history}"
    );
    let session = &s.sessions()[0];
    let calls = s.of_type(session, "llm-call");
    assert_eq!(calls.len(), 1, "{calls:#?}");
    assert_eq!(calls[0]["purpose"], "compression");
    assert_eq!(
        calls[0]["model"],
        model::catalog::FAST_MODEL,
        "the fast model"
    );
    let saves = s.of_type(session, "block-save");
    assert_eq!(saves.len(), 10);
    assert_eq!(saves[9]["compressed"], json!(["0"]));
    assert_eq!(saves[9]["path"], "1.1");
    // counted in the run's cost: its usage is in the last run's totals
    let last = s.processes(session).pop().unwrap();
    assert_eq!(last["turns"], 1);
    assert_eq!(
        last["usage"]["output_tokens"], 100,
        "the answer's and the summary's: {last}"
    );
    // the summary call is a numbered call of the session, rebuilt exactly
    all_rebuilt(&s, session).await;
    let trace = s.out(&["trace", session]).await;
    assert!(
        trace.stdout.contains("◆ compression #11 of history 0"),
        "{}",
        trace.stdout
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_failed_compression_keeps_the_entries_and_is_tried_at_the_next_save() {
    let summary_fails = json!({"when": "stands for all of them",
        "error": {"status": 400, "message": "no summaries today"}});
    let mut turns: Vec<Value> = vec![summary_fails];
    turns.push(when(
        "stands for all of them",
        json!([text("The first nine.")]),
        "end_turn",
    ));
    for _ in 0..11 {
        turns.push(reply(json!([text("ok")]), "end_turn"));
    }
    let s = Setup::new(json!({"turns": turns})).await;
    for n in 1..=11 {
        let ran = message(&s, n).await;
        if n == 10 {
            assert!(ran.stderr.contains("kept uncompressed"), "{ran:#?}");
            let history = block(&s, "history");
            assert_eq!(history["pending"], json!(["0"]), "{history}");
            assert!(
                history["tree"]["0"]["_"]
                    .as_str()
                    .unwrap()
                    .starts_with("What happened")
            );
            assert!(
                history["tree"]["1"]["1"]
                    .as_str()
                    .unwrap()
                    .contains("message 10"),
                "the entry is kept"
            );
        }
    }
    let history = block(&s, "history");
    assert_eq!(history["tree"]["0"]["_"], "The first nine.");
    assert!(history.get("pending").is_none(), "{history}");
    assert!(
        history["tree"]["1"]["2"]
            .as_str()
            .unwrap()
            .contains("message 11")
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn the_block_tools_answer_and_refuse_bad_input_as_error_results() {
    let long = "x".repeat(10_001);
    let s = Setup::new(json!({"turns": [
        reply(json!([
            call("c1", "block_create", json!({"name": "notes", "pscale0": "Things noticed."})),
            call("c2", "block_create", json!({"name": "notes", "pscale0": "again"})),
            call("c3", "block_write", json!({"name": "notes", "path": "0.2.3", "content": "a deep note"})),
            call("c4", "block_read", json!({"name": "notes", "path": "0.2.9"})),
            call("c5", "block_read", json!({"name": "notes", "path": "0.x"})),
            call("c6", "block_write", json!({"name": "keystone", "path": "", "content": "mine now"})),
            call("c7", "block_write", json!({"name": "notes", "path": "0.4", "content": long})),
            call("c8", "write_entry", json!({"name": "notes", "content": "first entry"})),
            call("c9", "block_read", json!({"name": "notes", "path": "0.2"})),
            call("c10", "get_datetime", json!({})),
            call("c11", "call_llm", json!({"prompt": "ping the fast one", "model": "fast"})),
            call("c12", "block_list", json!({})),
        ]), "tool_use"),
        when("ping the fast one", json!([text("pong")]), "end_turn"),
        reply(json!([text("done")]), "end_turn"),
    ]}))
    .await;
    let ran = s.run(&[PRESET, "use your blocks"]).await;
    assert_eq!(ran.code, 0, "{ran:#?}");
    let session = &s.sessions()[0];
    let results: std::collections::HashMap<String, Value> = s
        .of_type(session, "tool-result")
        .into_iter()
        .map(|r| (r["tool_use_id"].as_str().unwrap().to_owned(), r))
        .collect();
    let ok = |id: &str| {
        let r = &results[id];
        assert_eq!(r["is_error"], false, "{id}: {r}");
        serde_json::from_str::<Value>(r["text"].as_str().unwrap()).unwrap_or(json!(r["text"]))
    };
    let refused = |id: &str| {
        let r = &results[id];
        assert_eq!(r["is_error"], true, "{id}: {r}");
        let said: Value = serde_json::from_str(r["text"].as_str().unwrap()).unwrap();
        said["error"].as_str().unwrap().to_owned()
    };
    assert_eq!(ok("c1")["created"], "notes");
    assert!(refused("c2").contains("exists already"));
    assert_eq!(ok("c3")["path"], "0.2.3");
    let missing = refused("c4");
    assert!(
        missing.contains("the deepest node there is `0.2`"),
        "{missing}"
    );
    assert!(refused("c5").contains("`x`, which is not a digit"));
    assert!(refused("c6").contains("root of a rendition block"));
    assert!(refused("c7").contains("10001 characters; a node holds at most 10000"));
    assert_eq!(
        ok("c8")["path"],
        "0.1",
        "the next free digit under pscale 0"
    );
    let read = ok("c9");
    assert_eq!(read["children"]["3"], "a deep note");
    assert_eq!(read["spindle"][0]["pscale"], 0);
    assert_eq!(read["spindle"][0]["text"], "Things noticed.");
    assert_eq!(read["spindle"][1]["pscale"], -1);
    assert!(ok("c10")["iso"].as_str().unwrap().starts_with("20"));
    assert_eq!(results["c11"]["text"], "pong");
    assert_eq!(ok("c12").as_array().unwrap().len(), 7);
    // call_llm went to the fast model, no tools, recorded and counted
    let side = s
        .fake
        .requests_to("/v1/messages")
        .into_iter()
        .find(|r| r.body.to_string().contains("ping the fast one"))
        .unwrap();
    assert_eq!(side.body["model"], model::catalog::FAST_MODEL);
    assert!(side.body.get("tools").is_none());
    let calls = s.of_type(session, "llm-call");
    assert_eq!(calls[0]["purpose"], "call-llm");
    assert_eq!(calls[0]["tool_use_id"], "c11");
    all_rebuilt(&s, session).await;

    // a block edited by hand into an invalid tree
    s.commit(json!({"chunks": [{"id": "block/hermitcrab/notes",
        "body": {"name": "notes", "decimal": 1, "tree": {"0": {"_": "x", "q": "bad"}}}}]}))
        .await;
    let shown = s.out(&["blocks", "show", "notes"]).await;
    assert_eq!(shown.code, 1);
    assert!(
        shown
            .stderr
            .contains("node `0`: its key `q` is not a digit"),
        "{shown:#?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn an_invalid_block_is_an_error_result_not_a_crash() {
    let s = Setup::new(json!({"turns": [
        reply(json!([text("first")]), "end_turn"),
        reply(json!([call("r1", "block_read", json!({"name": "stash", "path": "0"}))]), "tool_use"),
        reply(json!([text("I could not read it")]), "end_turn"),
    ]}))
    .await;
    assert_eq!(s.run(&[PRESET, "seed"]).await.code, 0);
    s.commit(json!({"chunks": [{"id": "block/hermitcrab/stash",
        "body": {"name": "stash", "decimal": 1, "tree": {"0": 42}}}]}))
        .await;
    let ran = s.run(&[PRESET, "--continue", "read your stash"]).await;
    assert_eq!(ran.code, 0, "{ran:#?}");
    let session = &s.sessions()[0];
    let result = s.of_type(session, "tool-result").pop().unwrap();
    assert_eq!(result["is_error"], true);
    assert!(
        result["text"]
            .as_str()
            .unwrap()
            .contains("is not a valid block (node `0`: a node is text"),
        "{result}"
    );
    // the invalid block is left out of the aperture, the others still there
    let lines = aperture(&shell_text(&s, 1));
    assert_eq!(lines.len(), 4, "{lines:#?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn server_tool_blocks_pass_back_verbatim_across_a_pause_turn() {
    let paused = json!([
        {"type": "server_tool_use", "id": "srvtoolu_01", "name": "web_search", "input": {"query": "hermit crabs"}},
        {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_01", "content": [
            {"type": "web_search_result", "url": "https://example.org/crabs", "title": "Crabs",
             "encrypted_content": "EqQBCkgIARABGAIiQ", "page_age": null}]},
        {"type": "text", "text": "Searching"}
    ]);
    let s = Setup::new(json!({"turns": [
        reply(paused.clone(), "pause_turn"),
        reply(json!([text("Hermit crabs borrow shells.")]), "end_turn"),
    ]}))
    .await;
    let ran = s.run(&[PRESET, "what do hermit crabs do?"]).await;
    assert_eq!(ran.code, 0, "{ran:#?}");
    assert!(ran.stdout.contains("Hermit crabs borrow shells."));
    let second = body(&s, 1);
    let messages = second["messages"].as_array().unwrap();
    let assistant = &messages[messages.len() - 1];
    assert_eq!(
        assistant["role"], "assistant",
        "the paused turn is continued as it was"
    );
    let mut sent = assistant["content"].clone();
    // the last block carries the cache mark; the blocks are otherwise as they came
    if let Some(last) = sent.as_array_mut().and_then(|b| b.last_mut()) {
        last.as_object_mut().unwrap().remove("cache_control");
    }
    assert_eq!(sent, paused);
    let session = &s.sessions()[0];
    all_rebuilt(&s, session).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn the_preset_is_configured_under_agents_hermitcrab_and_any_agent_may_keep_blocks() {
    let s = Setup::new(json!({"turns": [
        reply(json!([text("untrusted")]), "end_turn"),
        reply(json!([text("configured")]), "end_turn"),
        reply(json!([call("w1", "block_create", json!({"name": "notes", "pscale0": "a plain agent's notes"}))]), "tool_use"),
        reply(json!([text("kept")]), "end_turn"),
    ]}))
    .await;
    s.file(
        ".hermitcrab/config.toml",
        "[agents.hermitcrab]\nidentity = \"crab2\"\nfast_model = \"claude-haiku-4-5\"\n\
         betas = [\"a-beta-2026\"]\nserver_tools = [{type = \"web_search_20260209\", name = \"web_search\", max_uses = 2}]\n",
    );
    // A checkout's own file may not give the API's server tools to its
    // agent until the person trusts it: the preset's own list runs.
    let untrusted = s.run(&[PRESET, "who are you?"]).await;
    assert_eq!(untrusted.code, 0, "{untrusted:#?}");
    let sent = body(&s, 0);
    let search = (sent["tools"].as_array().unwrap().iter()).find(|t| t["name"] == "web_search");
    assert_eq!(
        search.unwrap()["max_uses"],
        5,
        "the preset's, not the file's"
    );
    s.trust();
    let ran = s.run(&[PRESET, "who are you?"]).await;
    assert_eq!(ran.code, 0, "{ran:#?}");
    let first = body(&s, 1);
    let tools = first["tools"].as_array().unwrap();
    let search = tools.iter().find(|t| t["name"] == "web_search").unwrap();
    assert_eq!(search["max_uses"], 2);
    assert!(
        !tools.iter().any(|t| t["name"] == "code_execution"),
        "the configured list only"
    );
    assert_eq!(
        s.fake.requests_to("/v1/messages")[0].headers["anthropic-beta"],
        "a-beta-2026"
    );
    let crab2 = s.out(&["blocks", "--identity", "crab2", "--json"]).await;
    assert_eq!(
        serde_json::from_str::<Value>(&crab2.stdout)
            .unwrap()
            .as_array()
            .unwrap()
            .len(),
        6
    );
    let default = s.out(&["blocks", "--json"]).await;
    assert_eq!(
        default.stdout.trim(),
        "[]",
        "nothing under the default identity"
    );

    // a plain agent with `blocks = true`: the tools, no shell, no auto-save
    s.file(".hermitcrab/config.toml", "blocks = true\n");
    let plain = s.run(&["keep a note"]).await;
    assert_eq!(plain.code, 0, "{plain:#?}");
    let second = body(&s, 2);
    assert!(
        second["tools"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["name"] == "write_entry")
    );
    assert!(!second["system"].to_string().contains("# Aperture"));
    let session = s.sessions().pop().unwrap();
    assert!(s.of_type(&session, "block-save").is_empty());
    let result = s.of_type(&session, "tool-result").pop().unwrap();
    assert_eq!(result["is_error"], false, "{result}");
    let notes = s.out(&["blocks", "show", "notes"]).await;
    assert!(notes.stdout.contains("a plain agent's notes"), "{notes:#?}");

    // bad configuration is a usage error naming what to fix
    s.file(
        ".hermitcrab/config.toml",
        "[agents.hermitcrab]\nidentiy = \"x\"\n",
    );
    let typo = s.run(&[PRESET, "hi"]).await;
    assert_eq!(typo.code, 2, "{typo:#?}");
    assert!(
        typo.stderr.contains("did you mean `identity`"),
        "{}",
        typo.stderr
    );
    s.file(".hermitcrab/config.toml", "");
    let unknown = s.run(&["--agent", "lobster", "hi"]).await;
    assert_eq!(unknown.code, 2, "{unknown:#?}");
    assert!(
        unknown.stderr.contains("the one preset is `hermitcrab`"),
        "{}",
        unknown.stderr
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn code_the_api_runs_may_call_the_block_tools_and_its_container_is_kept() {
    let caller = json!({"type": "code_execution_20250825", "tool_id": "srvtoolu_1"});
    let mut from_code = call("b1", "block_list", json!({}));
    from_code["caller"] = caller.clone();
    let container = json!({"id": "container_011", "expires_at": "2026-12-28T00:00:00Z"});
    let s = Setup::new(json!({"turns": [
        {"reply": {"content": [from_code], "stop_reason": "tool_use", "container": container}},
        reply(json!([text("listed")]), "end_turn"),
        reply(json!([text("again")]), "end_turn"),
    ]}))
    .await;
    message(&s, 1).await;
    let first = body(&s, 0);
    let tools = first["tools"].as_array().unwrap();
    let callers =
        |name: &str| tools.iter().find(|t| t["name"] == name).unwrap()["allowed_callers"].clone();
    for name in ["block_list", "block_read", "block_write", "block_create"] {
        assert_eq!(callers(name), json!(["code_execution_20250825"]), "{name}");
    }
    assert!(callers("call_llm").is_null(), "only the block tools");
    let second = body(&s, 1);
    assert_eq!(second["container"], "container_011", "the container reused");
    let asked = &second["messages"][1]["content"][0];
    assert_eq!(asked["caller"], caller, "the call kept as sent: {asked}");
    let answered = &second["messages"][2]["content"][0];
    assert_eq!(answered["tool_use_id"], "b1", "{answered}");
    message(&s, 2).await;
    assert_eq!(body(&s, 2)["container"], "container_011", "across runs too");
    let session = s.sessions().pop().unwrap();
    all_rebuilt(&s, &session).await;
}
