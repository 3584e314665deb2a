//! Permissions: modes, rules, asking through the substrate, and the
//! refusal that says which rule to add when no one can answer.

use crate::common::*;
use protocol::Event;
use serde_json::json;
use substrate::{ChunkDecl, Declaration, NewPlacement, PlacementType, ScopeOpts};

#[tokio::test(flavor = "multi_thread")]
async fn with_no_person_ask_is_a_denial_that_names_the_rule() {
    let s = Setup::new(json!({"turns": [
        reply(json!([call("t1", "shell", json!({"command": "rm -rf build"}))]), "tool_use"),
        reply(json!([text("could not")]), "end_turn"),
    ]}))
    .await;
    std::fs::create_dir(s.root.join("build")).unwrap();
    let ran = s.run(&["clean up"]).await;
    assert_eq!(ran.code, 0, "{ran:#?}");
    assert!(s.root.join("build").exists(), "nothing ran");
    let session = s.sessions().pop().unwrap();
    let result = &s.of_type(&session, "tool-result")[0];
    assert_eq!(result["is_error"], true);
    assert_eq!(result["denied"], true);
    let text = result["text"].as_str().unwrap();
    assert!(
        text.contains("--allow 'shell(rm -rf build)'") && text.contains("allow"),
        "{text}"
    );
    let agent = s
        .processes(&session)
        .into_iter()
        .find(|p| p["program"] == "program/agent")
        .unwrap();
    assert_eq!(agent["permission_denials"].as_array().unwrap().len(), 1);
    assert!(
        s.processes(&session)
            .iter()
            .all(|p| p["program"] != "program/shell"),
        "no shell process"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn rules_deny_before_they_allow_and_plan_mode_changes_nothing() {
    let s = Setup::new(json!({"turns": [
        reply(json!([call("t1", "shell", json!({"command": "echo allowed"})), call("t2", "shell", json!({"command": "rm notes.txt"}))]), "tool_use"),
        reply(json!([text("ok")]), "end_turn"),
        reply(json!([call("t3", "write", json!({"file_path": "x.txt", "content": "x"})), call("t4", "read", json!({"file_path": "notes.txt"}))]), "tool_use"),
        reply(json!([text("ok")]), "end_turn"),
    ]})).await;
    s.file("notes.txt", "keep me\n");
    let ran = s
        .run(&["--allow", "shell", "--deny", "shell(rm:*)", "go"])
        .await;
    assert_eq!(ran.code, 0, "{ran:#?}");
    let first = s.sessions().pop().unwrap();
    let results = s.of_type(&first, "tool-result");
    assert!(
        results[0]["text"].as_str().unwrap().contains("allowed") && results[0]["is_error"] == false
    );
    assert!(
        results[1]["text"]
            .as_str()
            .unwrap()
            .contains("denied by the rule `shell(rm:*)`"),
        "{results:#?}"
    );
    assert!(s.root.join("notes.txt").exists());
    let ran = s.run(&["--permission-mode", "plan", "go"]).await;
    assert_eq!(ran.code, 0);
    let sessions = s.sessions();
    let second = sessions.iter().find(|x| **x != first).unwrap();
    let results = s.of_type(second, "tool-result");
    assert!(
        results[0]["text"].as_str().unwrap().contains("plan mode"),
        "{results:#?}"
    );
    assert_eq!(results[1]["is_error"], false, "reads are fine in plan mode");
    assert!(!s.root.join("x.txt").exists());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_host_answers_permission_questions_through_the_substrate() {
    let s = Setup::new(json!({"turns": [
        reply(json!([call("t1", "shell", json!({"command": "echo approved"}))]), "tool_use"),
        reply(json!([call("t2", "shell", json!({"command": "echo refused"}))]), "tool_use"),
        reply(json!([call("t3", "shell", json!({"command": "echo again"}))]), "tool_use"),
        reply(json!([call("t4", "shell", json!({"command": "echo again"}))]), "tool_use"),
        reply(json!([text("done")]), "end_turn"),
        reply(json!([call("t5", "shell", json!({"command": "echo again"}))]), "tool_use"),
        reply(json!([text("done again")]), "end_turn"),
    ]}))
    .await;
    let (_server, client, mut events) = s.serve();
    client
        .commit(Declaration::of(vec![
            ChunkDecl::with_id("s_ask").on(NewPlacement::instance("session")),
        ]))
        .await
        .unwrap();
    client.subscribe(&["s_ask"], false).await.unwrap();
    let config = json!({"model": "claude-sonnet-4-5", "interactive": true});
    let p = client
        .run("agent", run_args("s_ask", "go", config))
        .await
        .unwrap();
    // the host: allow, deny, then "always" — so the fourth call, the same
    // as the third, is not asked: three questions in all
    let mut answers = vec![("allow", ""), ("deny", "not that one")].into_iter();
    let mut asked = 0;
    let host =
        async {
            while let Some(event) = events.recv().await {
                let Event::ScopeChanged { commit, .. } = event else {
                    continue;
                };
                for id in &commit.created {
                    let read = client
                        .scope(&[id.as_str()], ScopeOpts::default())
                        .await
                        .unwrap();
                    if !read.scopes[0].is_on("permission-request", PlacementType::Instance) {
                        continue;
                    }
                    asked += 1;
                    let (decision, message) = answers.next().unwrap_or(("always", ""));
                    client
                        .commit(Declaration::of(vec![ChunkDecl::generated()
                    .body(json!({"request": id, "decision": decision, "message": message}))
                    .on(NewPlacement::instance("s_ask"))
                    .on(NewPlacement::instance("permission-decision"))]))
                        .await
                        .unwrap();
                }
            }
        };
    let ids = [p.as_str()];
    let done = tokio::select! {
        done = client.await_processes(&ids) => done.unwrap(),
        () = host => panic!("events ended"),
    };
    assert_eq!(done[&p].scopes[0].body_value()["stop_reason"], "end_turn");
    assert_eq!(asked, 3);
    let results: Vec<serde_json::Value> = client
        .scope(&["s_ask", "tool-result"], ScopeOpts::default())
        .await
        .unwrap()
        .chunks
        .iter()
        .map(|c| c.body_value())
        .collect();
    assert!(results[0]["text"].as_str().unwrap().contains("approved"));
    assert!(
        results[1]["text"]
            .as_str()
            .unwrap()
            .contains("denied by the person: not that one"),
        "{results:#?}"
    );
    assert!(results[2]["text"].as_str().unwrap().contains("again"));
    assert!(
        results[3]["text"].as_str().unwrap().contains("again"),
        "allowed by the \"always\" answer: {results:#?}"
    );
    let requests = client
        .scope(&["s_ask", "permission-request"], ScopeOpts::default())
        .await
        .unwrap();
    assert_eq!(requests.chunks.len(), 3, "every question is on the session");
    // "Always" holds for the session: a later run on it, with no one to
    // ask, runs the same call.
    let config = json!({"model": "claude-sonnet-4-5", "interactive": false});
    let again = client
        .run("agent", run_args("s_ask", "go on", config))
        .await
        .unwrap();
    let done = client.await_processes(&[again.as_str()]).await.unwrap();
    assert_eq!(
        done[&again].scopes[0].body_value()["stop_reason"],
        "end_turn"
    );
    let last = client
        .scope(&["s_ask", "tool-result"], ScopeOpts::default())
        .await
        .unwrap()
        .chunks
        .last()
        .map(|c| c.body_value())
        .unwrap();
    assert_eq!(last["tool_use_id"], "t5");
    assert_eq!(last["is_error"], false, "{last:#}");
    assert!(last["text"].as_str().unwrap().contains("again"), "{last:#}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_command_joined_to_an_allowed_one_does_not_run() {
    let s = Setup::new(json!({"turns": [
        reply(json!([
            call("t1", "shell", json!({"command": "git status --short"})),
            call("t2", "shell", json!({"command": "git status && touch pwned"})),
            call("t3", "shell", json!({"command": "git status; echo x > important"})),
            call("t4", "shell", json!({"command": "\\rm -f keep.txt"})),
        ]), "tool_use"),
        reply(json!([text("done")]), "end_turn"),
    ]}))
    .await;
    std::process::Command::new("git")
        .args(["init", "-q"])
        .current_dir(&s.root)
        .status()
        .unwrap();
    s.file("keep.txt", "keep\n");
    let ran = s
        .run(&[
            "--allow",
            "shell(git status:*)",
            "--deny",
            "shell(rm:*)",
            "go",
        ])
        .await;
    assert_eq!(ran.code, 0, "{ran:#?}");
    assert!(!s.root.join("pwned").exists());
    assert!(!s.root.join("important").exists());
    assert!(s.root.join("keep.txt").exists());
    let session = s.sessions().pop().unwrap();
    let results = s.of_type(&session, "tool-result");
    assert_eq!(results[0]["is_error"], false, "{}", results[0]);
    for r in &results[1..] {
        assert_eq!(r["denied"], true, "{r}");
    }
    assert!(
        results[3]["text"].as_str().unwrap().contains("shell(rm:*)"),
        "{}",
        results[3]
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_denied_directory_stays_unread_however_it_is_reached() {
    let s = Setup::new(json!({"turns": [
        reply(json!([
            call("t1", "read", json!({"file_path": "innocent/key.txt"})),
            call("t2", "read", json!({"file_path": "/proc/self/cwd/secrets/key.txt"})),
            call("t3", "grep", json!({"pattern": "SECRET", "output_mode": "content"})),
            call("t4", "grep", json!({"pattern": "SECRET", "path": "secrets"})),
            call("t5", "read", json!({"file_path": ".env"})),
            call("t6", "grep", json!({"pattern": "SECRET", "path": "/proc/self/cwd", "output_mode": "content"})),
            call("t7", "glob", json!({"pattern": "**/*.txt", "path": "/proc/self/cwd"})),
        ]), "tool_use"),
        reply(json!([text("done")]), "end_turn"),
    ]}))
    .await;
    s.file("secrets/key.txt", "SECRET-1\n");
    s.file("notes.txt", "not a SECRET-2 at all\n");
    s.file(".env", "TOKEN=SECRET-3\n");
    std::os::unix::fs::symlink(s.root.join("secrets"), s.root.join("innocent")).unwrap();
    s.file(
        ".hermitcrab/config.toml",
        "[permissions]\ndeny = [\"read(secrets/**)\"]\n",
    );
    let ran = s.run(&["look around"]).await;
    assert_eq!(ran.code, 0, "{ran:#?}");
    let session = s.sessions().pop().unwrap();
    let results = s.of_type(&session, "tool-result");
    for i in [0, 1, 3, 4] {
        assert_eq!(results[i]["denied"], true, "{i}: {}", results[i]);
    }
    let found = results[2]["text"].as_str().unwrap();
    assert!(found.contains("SECRET-2"), "{found}");
    assert!(
        !found.contains("SECRET-1") && !found.contains("SECRET-3"),
        "{found}"
    );
    // A search from the project reached by /proc/self/cwd skips them too.
    let through_proc = results[5]["text"].as_str().unwrap();
    assert!(through_proc.contains("SECRET-2"), "{through_proc}");
    assert!(!through_proc.contains("SECRET-1"), "{through_proc}");
    let names = results[6]["text"].as_str().unwrap();
    assert!(
        names.contains("notes.txt") && !names.contains("key.txt"),
        "{names}"
    );
    // Nothing of the secrets reached the model.
    let sent = String::from_utf8_lossy(&s.sent()[1]).into_owned();
    assert!(!sent.contains("SECRET-1") && !sent.contains("SECRET-3"));
}

#[tokio::test(flavor = "multi_thread")]
async fn an_added_directory_is_read_and_written_as_the_project_and_no_other_is() {
    let other = tempfile::tempdir().unwrap();
    let dir = other.path().canonicalize().unwrap();
    let (a, b, c) = (dir.join("a.txt"), dir.join("b.txt"), dir.join("c.txt"));
    let shell = |to: &std::path::Path| format!("echo from shell > {}", to.display());
    let s = Setup::new(json!({"turns": [
        reply(json!([call("w", "write", json!({"file_path": a, "content": "from write\n"}))]), "tool_use"),
        reply(json!([call("s", "shell", json!({"command": shell(&b)}))]), "tool_use"),
        reply(json!([text("done")]), "end_turn"),
        reply(json!([call("s2", "shell", json!({"command": shell(&c)}))]), "tool_use"),
        reply(json!([text("could not")]), "end_turn"),
    ]}))
    .await;
    let shown = dir.to_string_lossy().into_owned();
    let mode = ["--permission-mode", "accept-edits", "--allow", "shell"];
    let mut args = vec!["--add-dir", shown.as_str()];
    args.extend(mode);
    args.push("write beside the project");
    let ran = s.run(&args).await;
    assert_eq!(ran.code, 0, "{ran:#?}");
    assert_eq!(std::fs::read_to_string(&a).unwrap(), "from write\n");
    assert_eq!(std::fs::read_to_string(&b).unwrap(), "from shell\n");
    let first = String::from_utf8_lossy(&s.sent()[0]).into_owned();
    assert!(
        first.contains(&format!("Additional working directories: {shown}")),
        "the model is told: {first}"
    );
    let session = s.sessions().pop().unwrap();
    assert_eq!(s.rebuilt(&session, 1).await, s.sent()[0]);
    // without it, containment keeps the shell out (permissions bypassed)
    let ran = s.run(&["--permission-mode", "bypass", "again"]).await;
    assert_eq!(ran.code, 0, "{ran:#?}");
    assert!(!c.exists(), "written outside every writable root");
    let session = s.sessions().pop().unwrap();
    let result = s.of_type(&session, "tool-result").pop().unwrap();
    let said = result["text"].as_str().unwrap_or_default();
    assert!(said.contains("Permission denied"), "{result}");
    // a directory that is not there is a usage error, before any request
    let asked = s.sent().len();
    let bad = s.run(&["--add-dir", "no/such/dir", "hello"]).await;
    assert_eq!(bad.code, 2, "{bad:#?}");
    assert!(bad.stderr.contains("not an existing directory"), "{bad:#?}");
    assert_eq!(s.sent().len(), asked);
}
