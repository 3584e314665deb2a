//! Sub-agents: a tree of agents, siblings at once, depth refused, totals
//! rolled up, cancellation reaching every descendant.

use crate::common::*;
use serde_json::{Value, json};

#[tokio::test(flavor = "multi_thread")]
async fn a_tree_of_sub_agents_runs_siblings_at_once_and_stops_at_depth_three() {
    let s = Setup::new(json!({"turns": [
        when("ROOT go", json!([text("Splitting the work."),
            call("a", "agent", json!({"text": "SIB-A task", "description": "part a"})),
            call("b", "agent", json!({"text": "SIB-B task"}))]), "tool_use"),
        when("SIB-A task", json!([call("a1", "agent", json!({"text": "DEEP-A task"}))]), "tool_use"),
        when("SIB-B task", json!([text("B done")]), "end_turn"),
        when("DEEP-A task", json!([call("d1", "agent", json!({"text": "TOO DEEP"}))]), "tool_use"),
        when("nest at most", json!([text("deep done")]), "end_turn"),
        when("deep done", json!([text("A done")]), "end_turn"),
        when("A done", json!([text("all done")]), "end_turn"),
    ]})).await;
    let ran = s.run(&["--permission-mode", "bypass", "ROOT go"]).await;
    assert_eq!(ran.code, 0, "{ran:#?}");
    assert!(
        ran.stdout.contains("all done") && !ran.stdout.contains("B done"),
        "only the root streams: {}",
        ran.stdout
    );
    let all = processes_of(&s, "agent");
    assert_eq!(
        all.len(),
        4,
        "root, two siblings, one grandchild; the fourth level never ran"
    );
    let session = s.sessions().pop().unwrap();
    let results = s.of_type(&session, "tool-result");
    assert_eq!(results.len(), 2);
    assert!(
        results[0]["text"].as_str().unwrap().contains("A done"),
        "{results:#?}"
    );
    assert!(results[1]["text"].as_str().unwrap().contains("B done"));
    // the siblings overlapped
    let t = |b: &Value, k: &str| humantime::parse_rfc3339(b[k].as_str().unwrap()).unwrap();
    let mut spans: Vec<_> = all
        .iter()
        .map(|b| (t(b, "started"), t(b, "ended")))
        .collect();
    spans.sort();
    // spans[0] is the root; the next two started before either ended
    assert!(
        spans[1].0 < spans[2].1 && spans[2].0 < spans[1].1,
        "siblings ran at once: {spans:?}"
    );
    // the refusal reached the grandchild as an error result, not a run
    let refusal = s.fake.requests().iter().any(|r| {
        r.body
            .to_string()
            .contains("sub-agents nest at most 3 deep")
    });
    assert!(refusal);
    // the root's totals hold its children's, listed one by one
    let root = all
        .iter()
        .find(|b| b["children"].as_array().is_some_and(|c| c.len() == 2))
        .unwrap();
    let calls = s.sent().len() as u64;
    assert_eq!(calls, 7);
    assert_eq!(
        root["usage"]["input_tokens"],
        1000 * calls,
        "every call of the tree counts in the root's totals ({root:#})"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn cancelling_the_root_ends_every_descendant() {
    let slow = json!({"reply": {"content": [text("never")], "stop_reason": "end_turn"}, "pace": {"first_byte_delay_ms": 60000}, "when": "DEEP"});
    let s = Setup::new(json!({"turns": [
        when("ROOT", json!([call("a", "agent", json!({"text": "MID task"}))]), "tool_use"),
        when("MID task", json!([call("b", "agent", json!({"text": "DEEP task"}))]), "tool_use"),
        slow,
    ]}))
    .await;
    let (_server, client, _events) = s.serve();
    use substrate::{ChunkDecl, Declaration, NewPlacement};
    client
        .commit(Declaration::of(vec![
            ChunkDecl::with_id("s_c").on(NewPlacement::instance("session")),
        ]))
        .await
        .unwrap();
    let root = client
        .run(
            "agent",
            run_args(
                "s_c",
                "ROOT",
                json!({"model": "claude-sonnet-4-5", "permission_mode": "bypass"}),
            ),
        )
        .await
        .unwrap();
    wait_for("three agents running", || {
        processes_of(&s, "agent")
            .iter()
            .filter(|b| b["status"] == "running")
            .count()
            >= 3
    })
    .await;
    let pids: Vec<i64> = processes_of(&s, "agent")
        .iter()
        .filter_map(|b| b["pid"].as_i64())
        .collect();
    assert_eq!(pids.len(), 3, "three agents running");
    client.cancel(&root).await.unwrap();
    let done = client.await_processes(&[root.as_str()]).await.unwrap();
    assert_eq!(done[&root].scopes[0].body_value()["error"], "cancelled");
    wait_for("every agent of the tree to end", || {
        pids.iter().all(|p| gone(*p))
    })
    .await;
    let bodies = processes_of(&s, "agent");
    assert!(
        bodies.iter().all(|b| b["status"] == "failed"),
        "{bodies:#?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_sub_agent_needs_no_permission_but_its_tools_do() {
    // No one attached, the default mode: the spawn runs; the sub-agent's
    // own shell call is decided by the same rules, and denied.
    let s = Setup::new(json!({"turns": [
        when("ROOT go", json!([call("a", "agent", json!({"text": "SUB task"}))]), "tool_use"),
        when("SUB task", json!([call("s1", "shell", json!({"command": "touch made"}))]), "tool_use"),
        when("needs permission", json!([text("could not")]), "end_turn"),
        when("could not", json!([text("the sub-agent was refused")]), "end_turn"),
    ]}))
    .await;
    let ran = s.run(&["ROOT go"]).await;
    assert_eq!(ran.code, 0, "{ran:#?}");
    assert_eq!(processes_of(&s, "agent").len(), 2, "the sub-agent ran");
    assert!(!s.root.join("made").exists(), "its shell call was denied");
    let session = s.sessions().pop().unwrap();
    let spawn = s
        .of_type(&session, "tool-result")
        .into_iter()
        .find(|r| r["tool_use_id"] == "a")
        .unwrap();
    assert_eq!(spawn["is_error"], false, "{spawn:#}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_sub_agent_in_the_background_answers_at_once_and_its_result_comes_as_a_message() {
    let s = Setup::new(json!({"turns": [
        when("ROOT delegate", json!([call("tu_bg", "agent",
            json!({"text": "CHILD task", "description": "the child", "run_in_background": true}))]), "tool_use"),
        // the child answers slowly: the parent goes on meanwhile
        {"reply": {"content": [text("CHILD result 4711")], "stop_reason": "end_turn"},
         "when": "CHILD task", "pace": {"first_byte_delay_ms": 1500}},
        when("tu_bg", json!([text("meanwhile, nothing else to do")]), "end_turn"),
        when("CHILD result 4711", json!([text("all done with 4711")]), "end_turn"),
    ]}))
    .await;
    let ran = s
        .run(&["--permission-mode", "bypass", "ROOT delegate"])
        .await;
    assert_eq!(ran.code, 0, "{ran:#?}");
    assert!(ran.stdout.contains("all done with 4711"), "{}", ran.stdout);
    let session = s.sessions().pop().unwrap();
    // the call answered at once, with the child's process
    let results = s.of_type(&session, "tool-result");
    assert_eq!(results.len(), 1, "{results:#?}");
    let started = results[0]["text"].as_str().unwrap();
    assert!(started.contains("in the background"), "{started}");
    let children: Vec<Value> = processes_of(&s, "agent")
        .into_iter()
        .filter(|p| p["status"] == "completed")
        .collect();
    assert_eq!(children.len(), 2, "the root and its child both ended");
    // its result, a prompt from `agent` the model read next
    let prompts = s.of_type(&session, "prompt");
    let from_child: Vec<&Value> = prompts.iter().filter(|p| p["from"] == "agent").collect();
    assert_eq!(from_child.len(), 1, "{prompts:#?}");
    let text = from_child[0]["text"].as_str().unwrap();
    assert!(
        text.contains("CHILD result 4711") && text.contains("the child"),
        "{text}"
    );
    // the parent's calls (its request after the child's result included)
    // rebuild exactly
    let sent = s.sent();
    assert_eq!(sent.len(), 4, "three calls of the root, one of the child");
    for n in 1..=3 {
        let body = s.rebuilt(&session, n).await;
        assert!(sent.contains(&body), "request {n} rebuilt as sent");
    }
    let last = String::from_utf8(s.rebuilt(&session, 3).await).unwrap();
    assert!(last.contains("CHILD result 4711"));
}

#[tokio::test(flavor = "multi_thread")]
async fn sub_agents_past_max_parallel_agents_are_refused_saying_so() {
    let bg = |t: &str| json!({"text": t, "run_in_background": true});
    let s = Setup::new(json!({"turns": [
        when("ROOT two", json!([call("tu_1", "agent", bg("FIRST task")),
            call("tu_2", "agent", bg("SECOND task"))]), "tool_use"),
        when("FIRST task", json!([text("first done")]), "end_turn"),
        when("tu_2", json!([text("one started, one refused")]), "end_turn"),
        when("first done", json!([text("finished")]), "end_turn"),
    ]}))
    .await;
    let mut command = s.hc(&["run", "--permission-mode", "bypass", "ROOT two"]);
    command.env("HC_MAX_PARALLEL_AGENTS", "1");
    let out = command.output().await.unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let session = s.sessions().pop().unwrap();
    let results = s.of_type(&session, "tool-result");
    assert_eq!(results.len(), 2, "{results:#?}");
    assert!(
        results[0]["text"]
            .as_str()
            .unwrap()
            .contains("in the background")
    );
    let refused = results[1]["text"].as_str().unwrap();
    assert!(
        refused.contains("at most 1 sub-agents run at once"),
        "{refused}"
    );
    assert!(refused.contains("max_parallel_agents"), "{refused}");
    assert_eq!(processes_of(&s, "agent").len(), 2, "the root and one child");
}
