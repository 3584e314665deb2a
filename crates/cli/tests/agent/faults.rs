//! Faults of the harness: a sub-agent whose model call fails, an interrupt
//! while a question is open, a question answered by a host.

use crate::common::*;
use protocol::Event;
use serde_json::{Value, json};
use substrate::{ChunkDecl, Declaration, NewPlacement, PlacementType, ScopeOpts};

fn when(w: &str, turn: Value) -> Value {
    let mut turn = turn;
    turn["when"] = json!(w);
    turn
}

#[tokio::test(flavor = "multi_thread")]
async fn a_failing_sub_agent_is_an_error_result_and_the_parent_goes_on() {
    let s = Setup::new(json!({"turns": [
        when("ROOT", reply(json!([call("a", "agent", json!({"text": "SUB task"}))]), "tool_use")),
        when("SUB task", json!({"error": {"status": 400, "type": "invalid_request_error", "message": "bad things"}})),
        when("bad things", reply(json!([text("the helper failed; I did it myself")]), "end_turn")),
    ]})).await;
    let ran = s.run(&["--permission-mode", "bypass", "ROOT"]).await;
    assert_eq!(ran.code, 0, "{ran:#?}");
    assert!(ran.stdout.contains("did it myself"));
    let session = s.sessions().pop().unwrap();
    let result = &s.of_type(&session, "tool-result")[0];
    assert_eq!(result["is_error"], true);
    assert!(
        result["text"].as_str().unwrap().contains("bad things"),
        "{result:#}"
    );
}

/// A host on `hc serve --stdio` that answers the agent's questions with
/// `answer` (a function of the question's type and body), until the run
/// ends; answers the process's final body.
async fn host_run(
    s: &Setup,
    session: &str,
    config: Value,
    mut answer: impl FnMut(&str, &Value) -> Option<(String, Value)>,
) -> Value {
    let (_server, client, mut events) = s.serve();
    client
        .commit(Declaration::of(vec![
            ChunkDecl::with_id(session).on(NewPlacement::instance("session")),
        ]))
        .await
        .unwrap();
    client.subscribe(&[session], false).await.unwrap();
    let p = client
        .run("agent", run_args(session, "go", config))
        .await
        .unwrap();
    let ids = [p.as_str()];
    let host = async {
        while let Some(event) = events.recv().await {
            let Event::ScopeChanged { commit, .. } = event else {
                continue;
            };
            for id in &commit.created {
                let read = client
                    .scope(&[id.as_str()], ScopeOpts::default())
                    .await
                    .unwrap();
                let item = &read.scopes[0];
                for ty in ["permission-request", "user-question"] {
                    if item.is_on(ty, PlacementType::Instance)
                        && let Some((reply_type, mut body)) = answer(ty, &item.body_value())
                    {
                        body["request"] = json!(id);
                        client
                            .commit(Declaration::of(vec![
                                ChunkDecl::generated()
                                    .body(body)
                                    .on(NewPlacement::instance(session))
                                    .on(NewPlacement::instance(reply_type.as_str())),
                            ]))
                            .await
                            .unwrap();
                    }
                }
            }
        }
    };
    let done = tokio::select! {
        done = client.await_processes(&ids) => done.unwrap(),
        () = host => panic!("events ended"),
    };
    done[&p].scopes[0].body_value()
}

#[tokio::test(flavor = "multi_thread")]
async fn an_interrupt_while_a_permission_question_is_open_ends_the_run() {
    let s = Setup::new(json!({"turns": [
        reply(json!([call("t1", "shell", json!({"command": "echo hi"})), call("t2", "read", json!({"file_path": "x"}))]), "tool_use"),
    ]})).await;
    let body = host_run(
        &s,
        "s_int",
        json!({"model": "claude-sonnet-4-5", "interactive": true}),
        |ty, _| {
            (ty == "permission-request").then(|| ("interrupt".to_owned(), json!({"text": "stop"})))
        },
    )
    .await;
    assert_eq!(body["stop_reason"], "interrupted", "{body:#}");
    let results = s.of_type("s_int", "tool-result");
    assert_eq!(
        results.len(),
        2,
        "every call of the reply has a result: {results:#?}"
    );
    assert!(
        results
            .iter()
            .all(|r| r["is_error"] == true && r["text"].as_str().unwrap().contains("interrupted"))
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn ask_user_is_answered_by_the_host_or_refused_with_no_one_there() {
    let s = Setup::new(json!({"turns": [
        reply(json!([call("q1", "ask_user", json!({"question": "Which colour?", "options": ["red", "blue"]}))]), "tool_use"),
        reply(json!([text("Blue it is.")]), "end_turn"),
        reply(json!([call("q2", "ask_user", json!({"question": "Which colour?"}))]), "tool_use"),
        reply(json!([text("I chose myself.")]), "end_turn"),
    ]})).await;
    let body = host_run(
        &s,
        "s_ask",
        json!({"model": "claude-sonnet-4-5", "interactive": true}),
        |ty, q| {
            assert_eq!(q["text"], "Which colour?");
            (ty == "user-question").then(|| ("user-answer".to_owned(), json!({"text": "blue"})))
        },
    )
    .await;
    assert_eq!(body["stop_reason"], "end_turn");
    let result = &s.of_type("s_ask", "tool-result")[0];
    assert_eq!(result["text"], "blue");
    assert_eq!(result["is_error"], false);
    let ran = s.run(&["go"]).await;
    assert_eq!(ran.code, 0);
    let session = s.sessions().into_iter().find(|x| x != "s_ask").unwrap();
    let refused = &s.of_type(&session, "tool-result")[0];
    assert_eq!(refused["is_error"], true);
    assert!(
        refused["text"]
            .as_str()
            .unwrap()
            .contains("no one is attached")
    );
}
