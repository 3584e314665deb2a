//! The cycle: tools as runs, the request as a function of the substrate,
//! continuation, pause, retries, history.

use crate::common::*;
use serde_json::{Value, json};

#[tokio::test(flavor = "multi_thread")]
async fn a_session_is_rebuilt_byte_for_byte_from_the_substrate() {
    let s = Setup::new(json!({"turns": [
        reply(json!([text("Looking at the notes."), call("toolu_1", "read", json!({"file_path": "notes.txt"}))]), "tool_use"),
        reply(json!([call("toolu_2", "edit", json!({"file_path": "notes.txt", "old_string": "hello", "new_string": "goodbye"}))]), "tool_use"),
        reply(json!([call("toolu_3", "shell", json!({"command": "cat notes.txt && cd sub && pwd"}))]), "tool_use"),
        reply(json!([call("toolu_4", "shell", json!({"command": "pwd"}))]), "tool_use"),
        reply(json!([text("Done: the notes now say goodbye.")]), "end_turn"),
    ]})).await;
    s.file("notes.txt", "hello from notes\n");
    std::fs::create_dir(s.root.join("sub")).unwrap();
    let ran = s
        .run(&["--permission-mode", "bypass", "update the notes"])
        .await;
    assert_eq!(ran.code, 0, "{ran:#?}");
    assert!(
        ran.stdout.contains("Looking at the notes.")
            && ran.stdout.contains("Done: the notes now say goodbye."),
        "{}",
        ran.stdout
    );
    assert!(
        ran.stderr.contains("✓ read notes.txt") && ran.stderr.contains("✓ edit notes.txt"),
        "{}",
        ran.stderr
    );
    assert_eq!(
        std::fs::read_to_string(s.root.join("notes.txt")).unwrap(),
        "goodbye from notes\n"
    );
    let session = s.sessions().pop().unwrap();
    let results = s.of_type(&session, "tool-result");
    assert_eq!(results.len(), 4);
    assert!(
        results.iter().all(|r| r["is_error"] == false),
        "{results:#?}"
    );
    assert!(
        results[2]["text"]
            .as_str()
            .unwrap()
            .contains("goodbye from notes")
    );
    // `cd` carried over: the last command ran where the one before ended
    assert_eq!(
        results[3]["text"].as_str().unwrap().trim(),
        root_of(&s.root.join("sub"))
    );
    let sent = s.sent();
    assert_eq!(sent.len(), 5);
    for (n, body) in sent.iter().enumerate() {
        let rebuilt = s.rebuilt(&session, n + 1).await;
        assert!(
            rebuilt == *body,
            "call {}: rebuilt\n{}\nsent\n{}",
            n + 1,
            String::from_utf8_lossy(&rebuilt),
            String::from_utf8_lossy(body)
        );
    }
    // the cached prefix — tools and system — is the same bytes every call
    let parsed: Vec<Value> = sent
        .iter()
        .map(|b| serde_json::from_slice(b).unwrap())
        .collect();
    for p in &parsed[1..] {
        assert_eq!(p["tools"], parsed[0]["tools"]);
        assert_eq!(p["system"], parsed[0]["system"]);
    }
    let names: Vec<&str> = parsed[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "agent",
            "edit",
            "glob",
            "grep",
            "read",
            "shell",
            "web-fetch",
            "write",
            "ask_user",
            "scope",
            "todo",
            "memory"
        ]
    );
    let breakpoints = sent[4]
        .windows(13)
        .filter(|w| w == b"cache_control")
        .count();
    assert!(
        (3..=4).contains(&breakpoints),
        "{breakpoints} cache breakpoints"
    );
    // every call's usage is on its answer; the run's totals on its process
    let answers = s.of_type(&session, "answer");
    assert_eq!(answers.len(), 5);
    assert!(answers.iter().all(|a| a["usage"]["input_tokens"] == 1000));
    let agent = s
        .processes(&session)
        .into_iter()
        .find(|p| p["program"] == "program/agent")
        .unwrap();
    assert_eq!(agent["stop_reason"], "end_turn");
    assert_eq!(agent["turns"], 5);
    assert_eq!(agent["usage"]["input_tokens"], 5000);
    assert!(agent["cost_usd"].as_f64().unwrap() > 0.0);
    assert!(agent["context_percent"].as_f64().unwrap() > 0.0);
}

#[tokio::test(flavor = "multi_thread")]
async fn reads_run_together_and_edits_in_order() {
    let s = Setup::new(json!({"turns": [
        reply(json!([
            call("ra", "read", json!({"file_path": "a.txt"})),
            call("rb", "read", json!({"file_path": "b.txt"})),
            call("r1", "read", json!({"file_path": "big.txt"})),
            call("r2", "grep", json!({"pattern": "nowhere[0-9]+", "path": "tree"})),
            call("r3", "grep", json!({"pattern": "never[0-9]+", "path": "tree"})),
        ]), "tool_use"),
        reply(json!([
            call("e1", "edit", json!({"file_path": "a.txt", "old_string": "a", "new_string": "A"})),
            call("e2", "edit", json!({"file_path": "b.txt", "old_string": "b", "new_string": "B"})),
        ]), "tool_use"),
        reply(json!([text("ok")]), "end_turn"),
    ]}))
    .await;
    s.file("a.txt", "a\n");
    s.file("b.txt", "b\n");
    // Work that takes each read-only run long enough that "at once" shows,
    // however loaded the machine is.
    s.file("big.txt", &"lorem ipsum dolor sit amet\n".repeat(200_000));
    for i in 0..1500 {
        s.file(
            &format!("tree/{}/f{i}.txt", i % 20),
            &"some text here\n".repeat(200),
        );
    }
    let ran = s.run(&["--permission-mode", "accept-edits", "go"]).await;
    assert_eq!(ran.code, 0, "{ran:#?}");
    let db = s.db();
    let mut reads = spans(&db, "read");
    reads.extend(spans(&db, "grep"));
    assert_eq!(reads.len(), 5, "{reads:?}");
    // the three that had real work to do: the big file and the two searches
    reads.sort_by_key(|r| std::cmp::Reverse(r.1.duration_since(r.0).unwrap()));
    reads.truncate(3);
    let last_start = reads.iter().map(|r| r.0).max().unwrap();
    let first_end = reads.iter().map(|r| r.1).min().unwrap();
    assert!(
        last_start < first_end,
        "the three read-only runs overlapped: {reads:?}"
    );
    let mut edits = spans(&db, "edit");
    edits.sort_by_key(|e| e.0);
    assert_eq!(edits.len(), 2);
    assert!(edits[1].0 >= edits[0].1, "edits ran one after the other");
    assert_eq!(
        std::fs::read_to_string(s.root.join("a.txt")).unwrap(),
        "A\n"
    );
    assert_eq!(
        std::fs::read_to_string(s.root.join("b.txt")).unwrap(),
        "B\n"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn an_edit_of_a_file_changed_since_it_was_read_is_refused() {
    let s = Setup::new(json!({"turns": [
        reply(json!([call("t1", "read", json!({"file_path": "f.txt"}))]), "tool_use"),
        reply(json!([call("t2", "shell", json!({"command": "echo more >> f.txt"}))]), "tool_use"),
        reply(json!([call("t3", "edit", json!({"file_path": "f.txt", "old_string": "line", "new_string": "LINE"}))]), "tool_use"),
        reply(json!([text("noted")]), "end_turn"),
    ]})).await;
    s.file("f.txt", "line\n");
    let ran = s.run(&["--permission-mode", "bypass", "go"]).await;
    assert_eq!(ran.code, 0, "{ran:#?}");
    let session = s.sessions().pop().unwrap();
    let results = s.of_type(&session, "tool-result");
    assert_eq!(results[2]["is_error"], true);
    assert!(
        results[2]["text"]
            .as_str()
            .unwrap()
            .contains("changed since it was last read"),
        "{results:#?}"
    );
    assert_eq!(
        std::fs::read_to_string(s.root.join("f.txt")).unwrap(),
        "line\nmore\n"
    );
    assert!(ran.stderr.contains("✗ edit f.txt"), "{}", ran.stderr);
}

#[tokio::test(flavor = "multi_thread")]
async fn max_tokens_continues_the_same_message() {
    let s = Setup::new(json!({"turns": [
        reply(json!([text("Hello wor")]), "max_tokens"),
        reply(json!([text("ld!")]), "end_turn"),
    ]}))
    .await;
    let ran = s.run(&["say hello"]).await;
    assert_eq!(ran.code, 0, "{ran:#?}");
    assert!(ran.stdout.contains("Hello world!"), "{}", ran.stdout);
    let second: Value = serde_json::from_slice(&s.sent()[1]).unwrap();
    let last = second["messages"].as_array().unwrap().last().unwrap();
    assert_eq!(last["role"], "assistant");
    assert_eq!(last["content"][0]["text"], "Hello wor");
    let session = s.sessions().pop().unwrap();
    assert!(s.rebuilt(&session, 2).await == s.sent()[1]);
}

#[tokio::test(flavor = "multi_thread")]
async fn pause_turn_is_sent_again_with_the_same_tools() {
    let s = Setup::new(json!({"turns": [
        reply(json!([{"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {"query": "rust"}}]), "pause_turn"),
        reply(json!([text("Found it.")]), "end_turn"),
    ]})).await;
    let ran = s.run(&["search"]).await;
    assert_eq!(ran.code, 0, "{ran:#?}");
    let sent: Vec<Value> = s
        .sent()
        .iter()
        .map(|b| serde_json::from_slice(b).unwrap())
        .collect();
    assert_eq!(sent.len(), 2);
    assert_eq!(sent[1]["tools"], sent[0]["tools"]);
    let last = sent[1]["messages"].as_array().unwrap().last().unwrap();
    assert_eq!(last["role"], "assistant");
    assert_eq!(last["content"][0]["type"], "server_tool_use");
}

#[tokio::test(flavor = "multi_thread")]
async fn an_overloaded_api_is_retried_and_shown() {
    let s = Setup::new(json!({"turns": [
        {"error": {"status": 529, "message": "Overloaded", "headers": {"retry-after-ms": "20"}}},
        {"error": {"status": 529, "message": "Overloaded", "headers": {"retry-after-ms": "20"}}},
        reply(json!([text("made it")]), "end_turn"),
    ]}))
    .await;
    let ran = s.run(&["hi"]).await;
    assert_eq!(ran.code, 0, "{ran:#?}");
    assert!(ran.stdout.contains("made it"));
    assert!(
        ran.stderr.contains("retrying in 20 ms · attempt 1/10"),
        "{}",
        ran.stderr
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_second_run_on_a_session_replays_the_first() {
    let s = Setup::new(json!({"turns": [
        reply(json!([text("First answer.")]), "end_turn"),
        reply(json!([text("Second answer.")]), "end_turn"),
    ]}))
    .await;
    let (_server, client, _events) = s.serve();
    use substrate::{ChunkDecl, Declaration, NewPlacement};
    client
        .commit(Declaration::of(vec![
            ChunkDecl::with_id("s_two").on(NewPlacement::instance("session")),
        ]))
        .await
        .unwrap();
    let config = json!({"model": "claude-sonnet-4-5"});
    for prompt in ["one", "two"] {
        let p = client
            .run("agent", run_args("s_two", prompt, config.clone()))
            .await
            .unwrap();
        let done = client.await_processes(&[p.as_str()]).await.unwrap();
        assert_eq!(
            done[&p].scopes[0].body_value()["stop_reason"],
            "end_turn",
            "{:?}",
            done[&p].scopes[0].body_value()
        );
    }
    let second: Value = serde_json::from_slice(&s.sent()[1]).unwrap();
    let texts: Vec<String> = second["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            m["content"][0]["text"]
                .as_str()
                .unwrap_or_default()
                .to_owned()
        })
        .collect();
    assert_eq!(texts, ["one", "First answer.", "two"]);
    for n in 1..=2 {
        assert!(s.rebuilt("s_two", n).await == s.sent()[n - 1], "call {n}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn the_prompt_may_come_from_stdin() {
    let s = Setup::new(json!({"turns": [
        reply(json!([text("read it")]), "end_turn"),
        reply(json!([text("reviewed")]), "end_turn"),
    ]}))
    .await;
    let piped = |args: &'static [&'static str], input: &'static [u8]| {
        let s = &s;
        async move {
            let out = s.piped(args, input).await;
            assert!(out.status.success(), "{out:?}");
        }
    };
    piped(&["run"], b"a prompt from a pipe\n").await;
    let sent: Value = serde_json::from_slice(&s.sent()[0]).unwrap();
    assert_eq!(
        sent["messages"][0]["content"][0]["text"],
        "a prompt from a pipe\n"
    );
    // A prompt and piped input: both, the prompt first.
    // (Bytes that are not UTF-8, as in a diff of a Latin-1 file, are
    // replaced, not refused.)
    piped(&["run", "review this change"], b"-old\xe9\n+new\n").await;
    let sent: Value = serde_json::from_slice(&s.sent()[1]).unwrap();
    assert_eq!(
        sent["messages"][0]["content"][0]["text"],
        "review this change\n\n-old\u{fffd}\n+new\n"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn the_scope_tool_searches_the_session_and_reads_as_of() {
    let s = Setup::new(json!({"turns": [reply(
        json!([
            call("s1", "scope", json!({"match": "groceries"})),
            call("s2", "scope", json!({"ids": ["notes"]})),
            call("s4", "scope", json!({"ids": ["elsewhere"]})),
        ]),
        "tool_use",
    )]}))
    .await;
    let before = s
        .commit(
            json!({"chunks": [{"id": "notes", "name": "notes", "body": {"text": "the notes"}},
                              {"id": "elsewhere", "body": {"text": "not given to the run"}}]}),
        )
        .await["id"]
        .as_u64()
        .unwrap();
    s.commit(
        json!({"chunks": [{"id": "n1", "body": {"text": "remember the milk"},
                                "placements": [{"scope": "notes", "type": "instance"}]}]}),
    )
    .await;
    // The second call reads `notes` as it was before its member came.
    for turn in [
        reply(
            json!([call(
                "s3",
                "scope",
                json!({"ids": ["notes"], "as_of": before})
            )]),
            "tool_use",
        ),
        reply(json!([text("Noted.")]), "end_turn"),
    ] {
        s.fake.push_turn(serde_json::from_value(turn).unwrap());
    }
    let ran = s
        .run(&[
            "--permission-mode",
            "bypass",
            "--context",
            "notes",
            "list my groceries",
        ])
        .await;
    assert_eq!(ran.code, 0, "{ran:#?}");
    let session = s.sessions().pop().unwrap();
    let results = s.of_type(&session, "tool-result");
    let text = |id: &str| {
        results
            .iter()
            .find(|r| r["tool_use_id"] == id)
            .map(|r| r["text"].as_str().unwrap().to_owned())
            .unwrap()
    };
    assert!(
        text("s1").contains("list my groceries"),
        "the session searched: {}",
        text("s1")
    );
    assert!(text("s2").contains("1 of 1 members"), "{}", text("s2"));
    assert!(text("s2").contains("remember the milk"), "{}", text("s2"));
    assert!(
        text("s3").contains("0 of 0 members"),
        "as of before: {}",
        text("s3")
    );
    assert!(
        text("s4").contains("BOUNDARY"),
        "outside the run's reads: {}",
        text("s4")
    );
}
