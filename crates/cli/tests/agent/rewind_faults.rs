//! Rewind and replay where things go wrong: files over the cap, a
//! sub-agent's edits, a compacted session, a run killed mid-write, a
//! symlink planted to point outside the project, a replay of a session
//! whose tool results came from the network.

use crate::common::*;
use crate::rewind::{done, ok, shell};
use serde_json::{Value, json};

async fn bypass(s: &Setup, prompt: &str) -> String {
    ok(s, &["run", "--permission-mode", "bypass", prompt]).await;
    s.sessions()[0].clone()
}

const BIG: usize = 200 * 1024 * 1024;

#[tokio::test(flavor = "multi_thread")]
async fn a_file_over_the_cap_is_said_not_restorable_and_the_rest_goes_back() {
    let s = Setup::new(json!({"turns": [
        shell("s1", "printf tail >> big.bin && head -c 209715200 /dev/zero > new.bin && echo two > small.txt"),
        done(1),
    ]}))
    .await;
    std::fs::write(s.root.join("big.bin"), vec![7u8; BIG]).unwrap();
    s.file("small.txt", "one\n");
    let session = bypass(&s, "grow them").await;
    let ran = ok(&s, &["rewind", &session, "--to", "1", "--code"]).await;
    assert!(
        ran.stderr
            .contains("cannot put back big.bin: 209715200 bytes, over the 3 MiB"),
        "{ran:#?}"
    );
    assert_eq!(
        std::fs::read_to_string(s.root.join("small.txt")).unwrap(),
        "one\n"
    );
    assert!(
        !s.root.join("new.bin").exists(),
        "what the run made is gone"
    );
    assert_eq!(
        std::fs::metadata(s.root.join("big.bin")).unwrap().len(),
        BIG as u64 + 4
    );
    // the record says so too: by path and hash, not restorable
    let recorded: Vec<Value> = instances(&s, "engine/file-effects")
        .iter()
        .flat_map(|c| c.body_value()["effects"].as_array().unwrap().clone())
        .collect();
    let big = recorded.iter().find(|e| e["path"] == "big.bin").unwrap();
    assert!(
        big["unrestorable"].is_string() && big["before"].is_string(),
        "{big}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_rewind_reaches_a_sub_agents_edits() {
    let s = Setup::new(json!({"turns": [
        reply(json!([call("a1", "agent", json!({"text": "CHILD make notes", "description": "notes"}))]), "tool_use"),
        shell("c1", "mkdir -p notes && echo from-the-child > notes/n.txt && rm gone.txt"),
        reply(json!([text("made")]), "end_turn"),
        done(1),
    ]}))
    .await;
    s.file("gone.txt", "kept by the rewind\n");
    let session = bypass(&s, "ask a helper").await;
    assert!(s.root.join("notes/n.txt").exists() && !s.root.join("gone.txt").exists());
    let listed = ok(&s, &["rewind", &session, "--list", "--json"]).await;
    let turns: Value = serde_json::from_str(&listed.stdout).unwrap();
    assert_eq!(
        turns[0]["files"],
        json!(["gone.txt", "notes/n.txt"]),
        "{turns:#}"
    );
    ok(&s, &["rewind", &session, "--to", "1", "--code"]).await;
    assert!(!s.root.join("notes").exists());
    assert_eq!(
        std::fs::read_to_string(s.root.join("gone.txt")).unwrap(),
        "kept by the rewind\n"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_compacted_session_rewinds_to_a_turn_before_its_summary() {
    let s = Setup::new(json!({"turns": [
        reply(json!([call("w1", "write", json!({"file_path": "a.txt", "content": "a\n"}))]), "tool_use"),
        done(1),
        reply(json!([text("SUMMARY: wrote a.txt")]), "end_turn"),
        reply(json!([call("w2", "write", json!({"file_path": "b.txt", "content": "b\n"}))]), "tool_use"),
        done(2),
    ]}))
    .await;
    let session = bypass(&s, "first").await;
    let compact = [
        "run",
        "--permission-mode",
        "bypass",
        "--resume",
        &session,
        "--compact",
        "second",
    ];
    ok(&s, &compact).await;
    let listed = ok(&s, &["rewind", &session, "--list", "--json"]).await;
    let turns: Value = serde_json::from_str(&listed.stdout).unwrap();
    assert_eq!(
        turns.as_array().unwrap().len(),
        5,
        "the summary is a turn too: {turns:#}"
    );
    // before the compaction (#3): b.txt goes, a.txt stays
    ok(&s, &["rewind", &session, "--to", "3", "--code"]).await;
    assert!(s.root.join("a.txt").exists() && !s.root.join("b.txt").exists());
    ok(&s, &["rewind", &session, "--to", "1", "--code"]).await;
    assert!(!s.root.join("a.txt").exists());
}

#[tokio::test(flavor = "multi_thread")]
async fn what_a_run_killed_mid_write_wrote_is_recorded_and_undone() {
    let s = Setup::new(json!({"turns": [
        reply(json!([call("s1", "shell", json!({"command": "echo part > part.txt; echo more >> kept.txt; sleep 30", "timeout": 1500}))]), "tool_use"),
        done(1),
    ]}))
    .await;
    s.file("kept.txt", "kept\n");
    let session = bypass(&s, "start it").await;
    let results = s.of_type(&session, "tool-result");
    assert_eq!(results[0]["is_error"], true, "{results:#?}");
    assert!(s.root.join("part.txt").exists());
    ok(&s, &["rewind", &session, "--to", "1", "--code"]).await;
    assert!(!s.root.join("part.txt").exists());
    assert_eq!(
        std::fs::read_to_string(s.root.join("kept.txt")).unwrap(),
        "kept\n"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_symlink_planted_to_point_outside_is_never_followed() {
    let outside = tempfile::tempdir().unwrap();
    let s = Setup::new(json!({"turns": [
        shell("s1", "echo changed > sub/f.txt"),
        done(1),
    ]}))
    .await;
    s.file("sub/f.txt", "original\n");
    let session = bypass(&s, "change it").await;
    // the person (or anything) swaps the directory for a link outside
    std::fs::remove_dir_all(s.root.join("sub")).unwrap();
    std::os::unix::fs::symlink(outside.path(), s.root.join("sub")).unwrap();
    let refused = s.out(&["rewind", &session, "--to", "1", "--code"]).await;
    assert_eq!(refused.code, 1, "{refused:#?}");
    assert!(refused.stderr.contains("sub/f.txt"), "{refused:#?}");
    let forced = s
        .out(&["rewind", &session, "--to", "1", "--code", "--force"])
        .await;
    assert_eq!(forced.code, 1, "{forced:#?}");
    assert!(forced.stderr.contains("never followed"), "{forced:#?}");
    assert_eq!(
        std::fs::read_dir(outside.path()).unwrap().count(),
        0,
        "nothing written outside"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_replay_of_what_came_from_the_network_says_it_differs() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let server = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/page", server.local_addr().unwrap());
    let serving = tokio::spawn(async move {
        while let Ok((mut stream, _)) = server.accept().await {
            let mut buf = vec![0u8; 8192];
            let _ = stream.read(&mut buf).await;
            let _ = stream
                .write_all(b"HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: 12\r\nconnection: close\r\n\r\nfrom the net")
                .await;
        }
    });
    let s = Setup::new(json!({"turns": [
        reply(json!([call("f1", "web-fetch", json!({"url": url}))]), "tool_use"),
        done(1),
    ]}))
    .await;
    let session = bypass(&s, "fetch it").await;
    let results = s.of_type(&session, "tool-result");
    assert!(
        results[0]["text"]
            .as_str()
            .unwrap()
            .contains("from the net"),
        "{results:#?}"
    );
    serving.abort();
    let _ = serving.await;
    let replayed = s
        .out(&["replay", &session, "--permission-mode", "bypass"])
        .await;
    assert_eq!(replayed.code, 1, "{replayed:#?}");
    assert!(
        replayed
            .stdout
            .contains("the result of web-fetch (tool call f1)"),
        "{replayed:#?}"
    );
    assert!(replayed.stdout.contains("from the net"), "{replayed:#?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn what_a_tool_calls_hooks_wrote_goes_back_with_its_turn() {
    let s = Setup::new(json!({"turns": [
        shell("s1", "echo made > made.txt"),
        done(1),
    ]}))
    .await;
    s.file(
        ".hermitcrab/config.toml",
        "[[hooks]]\nevent = \"post-tool\"\nmatcher = \"shell\"\ncommand = \"echo hooked >> hook.log\"\n",
    );
    s.trust();
    let session = bypass(&s, "make it").await;
    assert!(s.root.join("hook.log").exists() && s.root.join("made.txt").exists());
    let listed = ok(&s, &["rewind", &session, "--list", "--json"]).await;
    let turns: Value = serde_json::from_str(&listed.stdout).unwrap();
    assert_eq!(
        turns[0]["files"],
        json!(["made.txt", "hook.log"]),
        "{turns:#}"
    );
    ok(&s, &["rewind", &session, "--to", "1", "--code"]).await;
    assert!(!s.root.join("hook.log").exists() && !s.root.join("made.txt").exists());
}
