//! `--permission-mode auto`: what would ask is judged by the fast model,
//! the judgement a recorded model call; a deny rule never reaches it;
//! three denials in a row stop a run no one can be asked in.

use crate::common::*;
use serde_json::{Value, json};

fn shell(id: &str, command: &str) -> Value {
    reply(
        json!([call(id, "shell", json!({"command": command}))]),
        "tool_use",
    )
}

fn judged(s: &Setup, session: &str) -> Vec<Value> {
    s.of_type(session, "llm-call")
        .into_iter()
        .filter(|c| c["purpose"] == "permission")
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn the_judge_allows_and_denies_and_each_judgement_is_recorded() {
    let s = Setup::new(json!({"turns": [
        shell("t1", "rm -rf build"),
        reply(json!([text("DENY: it deletes the build, which was not asked for")]), "end_turn"),
        shell("t2", "touch made.txt"),
        reply(json!([text("ALLOW: the request asks for the file")]), "end_turn"),
        reply(json!([text("made it")]), "end_turn"),
    ]}))
    .await;
    std::fs::create_dir(s.root.join("build")).unwrap();
    let ran = s.run(&["--permission-mode", "auto", "make made.txt"]).await;
    assert_eq!(ran.code, 0, "{ran:#?}");
    assert!(s.root.join("build").exists(), "denied: nothing removed");
    assert!(
        ran.stderr
            .contains("denied by auto mode: it deletes the build"),
        "the reason on the denial line: {}",
        ran.stderr
    );
    assert!(s.root.join("made.txt").exists(), "allowed: it ran");
    let session = s.sessions().pop().unwrap();
    let judgements = judged(&s, &session);
    let decisions: Vec<&Value> = judgements.iter().map(|j| &j["decision"]).collect();
    assert_eq!(
        decisions,
        [&json!("deny"), &json!("allow")],
        "{judgements:#?}"
    );
    assert!(
        judgements[0]["prompt"]
            .as_str()
            .unwrap()
            .contains("make made.txt")
    );
    assert!(
        judgements[0]["prompt"]
            .as_str()
            .unwrap()
            .contains("rm -rf build")
    );
    let judge: Value = serde_json::from_slice(&s.sent()[1]).unwrap();
    assert_eq!(
        judge["model"],
        model::catalog::FAST_MODEL,
        "the fast model judges"
    );
    let results = s.of_type(&session, "tool-result");
    let denied = results[0]["text"].as_str().unwrap();
    assert!(
        denied.contains("permission denied by auto mode: it deletes the build"),
        "{denied}"
    );
    // every call rebuilds as sent, the judgements among them
    for n in 1..=5 {
        assert!(s.rebuilt(&session, n).await == s.sent()[n - 1], "call {n}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_deny_rule_never_reaches_the_judge_and_three_denials_stop_a_run_no_one_watches() {
    let deny = || reply(json!([text("DENY: not asked for")]), "end_turn");
    let s = Setup::new(json!({"turns": [
        shell("t0", "git push"),
        shell("t1", "touch a"), deny(),
        shell("t2", "touch b"), deny(),
        shell("t3", "touch c"), deny(),
        shell("t4", "touch d"),
        reply(json!([text("never")]), "end_turn"),
    ]}))
    .await;
    let ran = s
        .run(&[
            "--permission-mode",
            "auto",
            "--deny",
            "shell(git push:*)",
            "go",
        ])
        .await;
    assert_eq!(ran.code, 1, "{ran:#?}");
    assert!(
        ran.stderr.contains("auto mode denied 3 calls in a row"),
        "{ran:#?}"
    );
    let session = s.sessions().pop().unwrap();
    assert_eq!(
        judged(&s, &session).len(),
        3,
        "the rule's refusal was not judged"
    );
    assert_eq!(
        s.sent().len(),
        8,
        "the fourth was not judged, and the run stopped"
    );
    for made in ["a", "b", "c", "d"] {
        assert!(!s.root.join(made).exists());
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn after_three_denials_the_person_at_the_terminal_is_asked() {
    let deny = || reply(json!([text("DENY: not asked for")]), "end_turn");
    let s = Setup::new(json!({"turns": [
        shell("t1", "touch a"), deny(),
        shell("t2", "touch b"), deny(),
        shell("t3", "touch c"), deny(),
        shell("t4", "touch d"),
        reply(json!([text("done")]), "end_turn"),
    ]}))
    .await;
    let asked = crate::terminal::permission_asked();
    let (code, shown) = crate::terminal::in_terminal(
        &s,
        "run --permission-mode auto go",
        &[],
        vec![(asked, b"y\r")],
    )
    .await;
    assert_eq!(code, 0, "{shown}");
    let session = s.sessions().pop().unwrap();
    assert_eq!(
        judged(&s, &session).len(),
        3,
        "the fourth was asked, not judged"
    );
    assert!(s.root.join("d").exists(), "allowed by the person: {shown}");
    assert!(!s.root.join("a").exists());
}
