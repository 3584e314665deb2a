//! Webview programs (`runtime: "webview"`): a run is a tile; a host gets a
//! one-time slot token for it, and the tile's connection, bound by that
//! token to the process, is judged against its boundaries. The run
//! completes when the host closes it or the tile finishes; it fails
//! `TRANSPORT_CLOSED` when its socket stays gone for the grace.

use crate::common;
use common::*;
use engine::Context;
use protocol::{Client, ErrorCode, RunArgs};
use serde_json::json;
use std::time::Duration;
use substrate::{ChunkDecl, Declaration, NewPlacement};

fn with_tile_program() -> Harness {
    let h = Harness::new();
    h.commit(vec![
        ChunkDecl::with_id("program/notes")
            .name("notes")
            .body(json!({"runtime": "webview", "entry": "notes.html", "text": "a tile"}))
            .on(NewPlacement::instance("engine/program")),
    ]);
    h
}

/// A connection to `engine` as the tile `token` opens it.
fn tile_client(h: &Harness, token: &str) -> (Client, tokio::task::JoinHandle<engine::Result<()>>) {
    let (ours, theirs) = tokio::io::duplex(1 << 16);
    let (read, write) = tokio::io::split(theirs);
    let engine = h.engine.clone();
    let token = token.to_owned();
    let serving = tokio::spawn(async move { engine.serve_tile(&token, read, write).await });
    let (read, write) = tokio::io::split(ours);
    let (client, _events) = Client::connect(read, write);
    (client, serving)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_tile_is_bound_by_its_token_and_judged_by_its_process_boundaries() {
    let h = with_tile_program();
    let host = Context::host();
    let process = h.engine.run(&host, "notes", RunArgs::default()).unwrap();
    let body = h.body(&process);
    assert_eq!(body["status"], "running");
    assert_eq!(body["webview"], "notes.html");
    let (token, entry) = h.engine.tile_token(&host, &process).unwrap();
    assert_eq!(entry, "notes.html");
    let (client, _serving) = tile_client(&h, &token);
    // inside its own tree: allowed
    let own = client
        .commit(Declaration::of(vec![
            ChunkDecl::generated()
                .body(json!({"text": "a note"}))
                .on(NewPlacement::instance(&process))
                .on(NewPlacement::instance("engine/output")),
        ]))
        .await;
    assert!(own.is_ok(), "{own:?}");
    // outside: refused
    let outside = client
        .commit(Declaration::of(vec![
            ChunkDecl::generated().on(NewPlacement::instance("engine/program")),
        ]))
        .await
        .unwrap_err();
    assert_eq!(
        outside.code(),
        Some(ErrorCode::BoundaryViolation),
        "{outside}"
    );
    // the token is spent: a second socket with it is refused
    let again = h
        .engine
        .serve_tile(&token, tokio::io::empty(), tokio::io::sink())
        .await
        .unwrap_err();
    assert!(again.to_string().contains("used already"), "{again}");
    // a program may not ask for tokens or close tiles
    assert!(
        h.engine
            .tile_token(&Context::process(process.clone()), &process)
            .is_err()
    );
    h.engine.close_tile(&host, &process).unwrap();
    let done = h.wait(&process).await;
    assert_eq!(status(&done).0, "completed");
}

/// A tile's socket as raw lines: one request answered, the socket kept
/// `open` more, then closed.
async fn visit(h: &Harness, token: &str, process: &str, open: Duration) {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt};
    let (ours, theirs) = tokio::io::duplex(1 << 16);
    let (read, write) = tokio::io::split(theirs);
    let engine = h.engine.clone();
    let token = token.to_owned();
    let serving = tokio::spawn(async move { engine.serve_tile(&token, read, write).await });
    let (reader, mut writer) = tokio::io::split(ours);
    let request = json!({"id": 1, "op": "scope", "scopes": [process]});
    writer
        .write_all(format!("{request}\n").as_bytes())
        .await
        .unwrap();
    let answer = tokio::io::BufReader::new(reader)
        .lines()
        .next_line()
        .await
        .unwrap()
        .unwrap();
    assert!(answer.contains("\"result\""), "{answer}");
    tokio::time::sleep(open).await;
    writer.shutdown().await.unwrap();
    serving.await.unwrap().unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_reload_within_the_grace_keeps_the_run_and_a_longer_absence_fails_it() {
    let h = with_tile_program();
    let host = Context::host();
    let process = h.engine.run(&host, "notes", RunArgs::default()).unwrap();
    let (token, _) = h.engine.tile_token(&host, &process).unwrap();
    visit(&h, &token, &process, Duration::ZERO).await;
    // back within the grace, with a fresh token, for 3 s: 6.5 s after the
    // first socket went, the run is still on (the grace began again)
    tokio::time::sleep(Duration::from_secs(1)).await;
    let (token, _) = h.engine.tile_token(&host, &process).unwrap();
    visit(&h, &token, &process, Duration::from_secs(3)).await;
    tokio::time::sleep(Duration::from_millis(2500)).await;
    assert_eq!(h.body(&process)["status"], "running", "the reload kept it");
    let done = tokio::time::timeout(Duration::from_secs(20), h.wait(&process))
        .await
        .unwrap();
    assert_eq!(
        status(&done),
        ("failed".into(), Some("TRANSPORT_CLOSED".into()))
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_tile_finishes_its_own_run_and_a_malformed_line_is_answered() {
    let h = with_tile_program();
    let host = Context::host();
    let process = h.engine.run(&host, "notes", RunArgs::default()).unwrap();
    let (token, _) = h.engine.tile_token(&host, &process).unwrap();
    let (ours, theirs) = tokio::io::duplex(1 << 16);
    let (read, write) = tokio::io::split(theirs);
    let engine = h.engine.clone();
    tokio::spawn(async move { engine.serve_tile(&token, read, write).await });
    let (mut reader, mut writer) = tokio::io::split(ours);
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt};
    writer.write_all(b"not json\n").await.unwrap();
    let mut lines = tokio::io::BufReader::new(&mut reader).lines();
    let answer = lines.next_line().await.unwrap().unwrap();
    assert!(answer.contains("INVALID_REQUEST"), "{answer}");
    writer
        .write_all(b"{\"id\":1,\"op\":\"finish\",\"status\":\"completed\"}\n")
        .await
        .unwrap();
    let done = tokio::time::timeout(Duration::from_secs(10), h.wait(&process))
        .await
        .unwrap();
    assert_eq!(status(&done).0, "completed");
    // a program that is not a webview program has no tile
    assert!(h.engine.tile_token(&host, "p_nothing").is_err());
}

/// A slot token is a capability: nothing else the engine hands out (ids
/// are ULIDs, the next one made in a millisecond the last plus one) says
/// what the next token is. Tokens issued back to back share no prefix
/// past their kind.
#[tokio::test(flavor = "multi_thread")]
async fn slot_tokens_cannot_be_guessed_from_one_another() {
    let h = with_tile_program();
    let host = Context::host();
    let process = h.engine.run(&host, "notes", RunArgs::default()).unwrap();
    let tokens: Vec<String> = (0..20)
        .map(|_| h.engine.tile_token(&host, &process).unwrap().0)
        .collect();
    for pair in tokens.windows(2) {
        let (a, b) = (&pair[0]["slot_".len()..], &pair[1]["slot_".len()..]);
        assert_eq!(a.len(), 32, "128 bits: {a}");
        let shared = a.chars().zip(b.chars()).take_while(|(x, y)| x == y).count();
        assert!(shared < 8, "{a} and {b} share {shared} leading digits");
    }
}
