//! Memory (`design/knowledge.md`, "Memory" and "Recording rule"): the
//! project's and the person's, in every request under `# Memory`, kept by
//! the agent's `memory` tool, `hc memory` and `#` in chat; instruction
//! files committed as chunks (an unchanged file, no new chunk); pins the
//! model dropped not carried on; a sub-agent starting with its parent's
//! memory and instructions; every request rebuilt byte for byte.

use crate::common::*;
use serde_json::{Value, json};

/// The system prompt of request `n` the fake received, whole.
fn system(s: &Setup, n: usize) -> String {
    let body: Value = serde_json::from_slice(&s.sent()[n]).unwrap();
    body["system"].to_string()
}

/// The tool names of request `n`.
fn tools(s: &Setup, n: usize) -> Vec<String> {
    let body: Value = serde_json::from_slice(&s.sent()[n]).unwrap();
    body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect()
}

/// The ids of the chunks instance of `ty`.
fn ids_of(s: &Setup, ty: &str) -> Vec<String> {
    instances(s, ty).into_iter().map(|c| c.id).collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_memory_the_agent_keeps_is_in_the_next_sessions_request_and_rebuilt_exactly() {
    let s = Setup::new(json!({"turns": [
        reply(json!([call("m1", "memory", json!({"action": "add", "text": "Run the tests with `make check`."}))]), "tool_use"),
        reply(json!([text("noted")]), "end_turn"),
        reply(json!([text("I know")]), "end_turn"),
    ]}))
    .await;
    let first = s.run(&["remember how to test"]).await;
    assert_eq!(first.code, 0, "{first:#?}");
    assert!(
        tools(&s, 0).contains(&"memory".to_owned()),
        "{:?}",
        tools(&s, 0)
    );
    assert!(!system(&s, 0).contains("# Memory"), "nothing kept yet");
    // the same session's next call: its context event was read before the change
    assert!(!system(&s, 1).contains("make check"));
    let listed = s.out(&["memory", "list", "--json"]).await;
    let list: Value = serde_json::from_str(&listed.stdout).unwrap();
    assert_eq!(
        list[0]["text"], "Run the tests with `make check`.",
        "{list}"
    );
    assert_eq!(list[0]["scope"], "project");
    let id = list[0]["id"].as_str().unwrap().to_owned();
    assert!(list[0]["session"].is_string(), "the session that made it");
    let next = s.run(&["how do I test?"]).await;
    assert_eq!(next.code, 0, "{next:#?}");
    let text = system(&s, 2);
    assert!(text.contains("# Memory"), "{text}");
    assert!(
        text.contains(&format!("[{id}] Run the tests with `make check`.")),
        "{text}"
    );
    // exact, also once the memory changed after
    let rm = s.out(&["memory", "rm", &id[..8.min(id.len())]]).await;
    assert_eq!(rm.code, 0, "{rm:#?}");
    let session = s.sessions().pop().unwrap();
    assert_eq!(s.rebuilt(&session, 1).await, s.sent()[2]);
    // the trace shows the change the model made
    let first_session = s.sessions()[0].clone();
    let trace = s.out(&["trace", &first_session]).await;
    assert!(
        trace.stdout.contains("memory") && trace.stdout.contains("make check"),
        "{}",
        trace.stdout
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn the_persons_memory_asks_first_and_follows_them_into_another_project() {
    let script = json!({"turns": [
        reply(json!([call("u1", "memory", json!({"action": "add", "scope": "user", "text": "The person prefers British English."}))]), "tool_use"),
        reply(json!([text("tried")]), "end_turn"),
        reply(json!([call("u2", "memory", json!({"action": "add", "scope": "user", "text": "The person prefers British English."}))]), "tool_use"),
        reply(json!([text("kept")]), "end_turn"),
    ]});
    let s = Setup::new(script).await;
    // no one to ask: denied, with the rule that would allow it
    let denied = s.run(&["remember my spelling"]).await;
    assert_eq!(denied.code, 0, "{denied:#?}");
    let session = s.sessions().pop().unwrap();
    let result = &s.of_type(&session, "tool-result")[0];
    assert_eq!(result["denied"], true, "{result}");
    assert!(
        result["text"].as_str().unwrap().contains("--allow memory"),
        "{result}"
    );
    let allowed = s.run(&["--allow", "memory", "remember my spelling"]).await;
    assert_eq!(allowed.code, 0, "{allowed:#?}");
    let mine = s.out(&["memory", "list", "--json"]).await;
    let list: Value = serde_json::from_str(&mine.stdout).unwrap();
    assert_eq!(list.as_array().unwrap().len(), 1, "{list}");
    assert_eq!(list[0]["scope"], "user");
    // another project of the same person: their memory is in its request
    let other = Setup::new(json!({"turns": [reply(json!([text("hello")]), "end_turn")]})).await;
    let mut hc = other.hc(&["run", "hi"]);
    hc.env("XDG_DATA_HOME", s.root.join(".no-user-data"));
    let out = hc.output().await.unwrap();
    assert!(out.status.success(), "{out:?}");
    let body: Value = serde_json::from_slice(&other.sent()[0]).unwrap();
    let text = body["system"].to_string();
    assert!(
        text.contains("Your memory") && text.contains("British English"),
        "{text}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn hc_memory_and_a_hash_line_in_chat_keep_what_the_person_says() {
    let s = Setup::new(json!({"turns": [
        reply(json!([text("ok")]), "end_turn"),
        reply(json!([text("ok")]), "end_turn"),
    ]}))
    .await;
    let added = s
        .out(&["memory", "add", "Use", "tabs", "in", "Makefiles."])
        .await;
    assert_eq!(added.code, 0, "{added:#?}");
    let chat = s
        .piped(
            &["chat", "--permission-mode", "bypass"],
            b"# Never push to main.\nhello\n",
        )
        .await;
    assert!(chat.status.success(), "{chat:?}");
    let said = String::from_utf8_lossy(&chat.stderr);
    assert!(said.contains("kept in this project's memory"), "{said}");
    // the chat's message after the # line already sees it
    let text = system(&s, 0);
    assert!(
        text.contains("Use tabs in Makefiles.") && text.contains("Never push to main."),
        "{text}"
    );
    let at = |t: &str| text.find(t).unwrap();
    assert!(at("Never push") < at("Use tabs"), "newest first: {text}");
    // edit it all in an "editor": a script that rewrites the file
    let editor = s.file(
        "edit.sh",
        "#!/bin/sh\nsed -i -e 's/Use tabs/Use TABS/' -e '/Never push/d' \"$1\"\necho '- A new rule.' >> \"$1\"\n",
    );
    std::fs::set_permissions(&editor, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let mut hc = s.hc(&["memory", "edit"]);
    hc.env("EDITOR", &editor);
    let edited = hc.output().await.unwrap();
    assert!(edited.status.success(), "{edited:?}");
    let said = String::from_utf8_lossy(&edited.stdout);
    assert!(said.contains("1 added, 1 updated, 1 removed"), "{said}");
    let listed = s.out(&["memory"]).await;
    assert!(
        listed.stdout.contains("Use TABS in Makefiles.")
            && listed.stdout.contains("A new rule.")
            && !listed.stdout.contains("Never push"),
        "{}",
        listed.stdout
    );
    // bad input: nothing kept, a clear message
    let empty = s.out(&["memory", "add", " "]).await;
    assert_eq!(empty.code, 2, "{empty:#?}");
    let big = "x".repeat(5000);
    let too_big = s.out(&["memory", "add", &big]).await;
    assert_eq!(too_big.code, 2);
    assert!(too_big.stderr.contains("at most"), "{}", too_big.stderr);
    let nobody = s.out(&["memory", "rm", "m_nothing"]).await;
    assert_eq!(nobody.code, 2);
    assert!(
        nobody.stderr.contains("hc memory list"),
        "{}",
        nobody.stderr
    );
    assert_eq!(ids_of(&s, "memory").len(), 2);
}

#[tokio::test(flavor = "multi_thread")]
async fn past_25_kb_the_newest_memory_is_kept_with_a_note_and_memory_false_leaves_it_out() {
    let s = Setup::new(json!({"turns": [
        reply(json!([text("ok")]), "end_turn"),
        reply(json!([text("ok")]), "end_turn"),
    ]}))
    .await;
    let chunks: Vec<Value> = (0..500)
        .map(|i| {
            json!({"id": format!("m_{i:04}"), "body": {"text": format!("fact {i:04} {}", "y".repeat(80)), "created": "2026-11-25T00:00:00Z"},
                   "placements": [{"scope": "memory", "type": "instance"}]})
        })
        .collect();
    s.commit(json!({ "chunks": chunks })).await;
    let ran = s.run(&["hi"]).await;
    assert_eq!(ran.code, 0, "{ran:#?}");
    let text = system(&s, 0);
    assert!(text.contains("fact 0499"), "the newest is in");
    assert!(!text.contains("fact 0000"), "the oldest is not");
    assert!(
        text.contains("older entries of `memory` are not shown"),
        "{text}"
    );
    // memory = false in the project's configuration: neither list nor tool
    s.file(".hermitcrab/config.toml", "memory = false\n");
    let off = s.run(&["hi again"]).await;
    assert_eq!(off.code, 0, "{off:#?}");
    let n = s.sent().len() - 1;
    assert!(!system(&s, n).contains("# Memory"));
    assert!(!tools(&s, n).contains(&"memory".to_owned()));
}

#[tokio::test(flavor = "multi_thread")]
async fn an_instruction_file_is_a_chunk_made_once_and_anew_only_when_it_changes() {
    let s = Setup::new(json!({"turns": [
        reply(json!([text("one")]), "end_turn"),
        reply(json!([text("two")]), "end_turn"),
        reply(json!([text("three")]), "end_turn"),
    ]}))
    .await;
    s.file("AGENTS.md", "RULES v1");
    assert_eq!(s.run(&["a"]).await.code, 0);
    assert_eq!(ids_of(&s, "knowledge-file").len(), 1);
    assert_eq!(s.run(&["b"]).await.code, 0);
    assert_eq!(
        ids_of(&s, "knowledge-file").len(),
        1,
        "an unchanged file is the same chunk"
    );
    s.file("AGENTS.md", "RULES v2");
    assert_eq!(s.run(&["c"]).await.code, 0);
    assert_eq!(ids_of(&s, "knowledge-file").len(), 2);
    // the context event names the chunk, not the text
    let sessions = s.sessions();
    let context = &s.of_type(&sessions[0], "context")[1];
    let file = &context["instructions"][0];
    assert!(
        file["chunk"]
            .as_str()
            .unwrap()
            .starts_with("knowledge-file/"),
        "{context}"
    );
    assert!(file.get("text").is_none(), "{context}");
    // every request rebuilt from the chunks, the first after the file changed
    for (n, session) in sessions.iter().enumerate() {
        assert_eq!(s.rebuilt(session, 1).await, s.sent()[n]);
    }
    assert!(system(&s, 0).contains("RULES v1") && system(&s, 2).contains("RULES v2"));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_pin_the_model_drops_is_not_carried_on() {
    let s = Setup::new(json!({"turns": [
        reply(json!([call("p1", "scope", json!({"ids": ["engine/program"]}))]), "tool_use"),
        reply(json!([call("p2", "scope", json!({"unpin": ["engine/program"]}))]), "tool_use"),
        reply(json!([text("dropped")]), "end_turn"),
        reply(json!([text("next run")]), "end_turn"),
    ]}))
    .await;
    let first = s.run(&["pin and unpin"]).await;
    assert_eq!(first.code, 0, "{first:#?}");
    let knows = |n: usize| system(&s, n).contains("# engine/program");
    assert!(!knows(0) && knows(1) && !knows(2), "pinned, then dropped");
    let next = s.run(&["--continue", "and now?"]).await;
    assert_eq!(next.code, 0, "{next:#?}");
    assert!(!knows(3), "a dropped pin is not carried on");
    let session = s.sessions().pop().unwrap();
    for n in 1..=4 {
        assert_eq!(s.rebuilt(&session, n).await, s.sent()[n - 1], "call {n}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn the_model_cannot_unpin_culture_only_what_it_pinned() {
    let s = Setup::new(json!({"turns": [
        reply(json!([call("p1", "scope", json!({"ids": ["engine/program"]}))]), "tool_use"),
        reply(
            json!([call("p2", "scope", json!({"unpin": ["culture", "engine/program"]}))]),
            "tool_use"
        ),
        reply(json!([text("done")]), "end_turn"),
    ]}))
    .await;
    s.commit(json!({"chunks": [{"id": "culture", "body": {"text": "We write haiku."}}]}))
        .await;
    let ran = s.run(&["try to forget"]).await;
    assert_eq!(ran.code, 0, "{ran:#?}");
    let last = system(&s, 2);
    assert!(last.contains("We write haiku."), "culture stays: {last}");
    assert!(
        !last.contains("# engine/program"),
        "its own pin goes: {last}"
    );
    let said = String::from_utf8_lossy(&s.sent()[2]).into_owned();
    assert!(
        said.contains("culture is pinned by whoever started this run and cannot be unpinned"),
        "{said}"
    );
    let session = s.sessions().pop().unwrap();
    assert_eq!(s.rebuilt(&session, 3).await, s.sent()[2]);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_sub_agent_starts_with_its_parents_culture_memory_and_instructions() {
    let s = Setup::new(json!({"turns": [
        reply(json!([call("a", "agent", json!({"text": "CHILD task"}))]), "tool_use"),
        when("CHILD task", json!([text("child done")]), "end_turn"),
        reply(json!([text("parent done")]), "end_turn"),
    ]}))
    .await;
    s.commit(json!({"chunks": [{"id": "culture", "body": {"text": "We write haiku."}}]}))
        .await;
    assert_eq!(
        s.out(&["memory", "add", "The build is `make`."]).await.code,
        0
    );
    s.file("AGENTS.md", "PROJECT RULES");
    let ran = s.run(&["delegate"]).await;
    assert_eq!(ran.code, 0, "{ran:#?}");
    let child = requests_with(&s, "CHILD task");
    assert_eq!(child.len(), 1);
    let system = child[0]["system"].to_string();
    for known in ["We write haiku.", "The build is `make`.", "PROJECT RULES"] {
        assert!(system.contains(known), "{known} missing: {system}");
    }
    let tools = child[0]["tools"].to_string();
    assert!(
        !tools.contains("\"memory\""),
        "a sub-agent keeps no memory: {tools}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_commands_shell_line_not_allowed_is_asked_on_a_terminal() {
    let s = Setup::new(json!({"turns": [reply(json!([text("counted")]), "end_turn")]})).await;
    s.file(
        ".hermitcrab/commands/count.md",
        "Count:\n!`wc -l notes.txt`\n",
    );
    s.file("notes.txt", "a\nb\nc\n");
    let (code, shown) = crate::terminal::in_terminal(
        &s,
        "run /count",
        &[],
        vec![(crate::terminal::always(), b"y\n")],
    )
    .await;
    assert_eq!(code, 0, "{shown}");
    assert!(shown.contains("/count runs `wc -l notes.txt`"), "{shown}");
    let session = s.sessions().pop().unwrap();
    let prompt = s.of_type(&session, "prompt")[0]["text"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(prompt.contains("3 notes.txt"), "{prompt}");
    // refused: the command stops before any model call
    let (code, shown) = crate::terminal::in_terminal(
        &s,
        "run /count",
        &[],
        vec![(crate::terminal::always(), b"n\n")],
    )
    .await;
    assert_eq!(code, 1, "{shown}");
    assert!(
        shown.contains("you did not allow `wc -l notes.txt`"),
        "{shown}"
    );
    assert_eq!(s.sent().len(), 1);
}
