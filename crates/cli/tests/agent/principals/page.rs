//! One page, three people (decision 19): a token carries a person and a
//! role, everything the page commits is signed as the token's person, a
//! program runs directly only for the owner and through their rules, and
//! the one-time address is one-time whatever cookie comes with it. Driven
//! in Chromium, each person in a browser of their own.

use crate::common::*;
use crate::web::{page_at, said};
use serde_json::{Value, json};
use tokio::io::AsyncBufReadExt as _;

/// `hc serve --http` with a token file each (carol's a viewer's), as
/// alice; the server and each person's address.
async fn served(s: &Setup) -> (tokio::process::Child, Value) {
    let files = ["alice.token", "bob.token", "carol.token:viewer"]
        .map(|f| s.dir.path().join(f).display().to_string());
    let mut args = vec!["serve", "--http", "--port", "0"];
    for file in &files {
        args.extend(["--token-file", file.as_str()]);
    }
    let mut command = s.hc(&args);
    command
        .env("HC_PERSON", "alice")
        .stdout(std::process::Stdio::piped());
    let mut child = command.spawn().unwrap();
    let mut lines = tokio::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let mut urls = json!({});
    while urls.as_object().unwrap().len() < 3 {
        let line = tokio::time::timeout(std::time::Duration::from_secs(30), lines.next_line())
            .await
            .expect("hc serve printed its addresses")
            .unwrap()
            .unwrap();
        let url = line.rsplit(' ').next().unwrap().to_owned();
        let who = ["bob", "carol"]
            .into_iter()
            .find(|p| line.starts_with(&format!("hc: {p}'s address")))
            .unwrap_or("alice");
        if url.contains("/?token=") {
            urls[who] = json!(url);
        }
    }
    (child, urls)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_page_token_acts_with_its_persons_role_and_no_more() {
    let s = Setup::new(
        json!({"turns": [when("hello", json!([text("hi")]), "end_turn")], "cycle": true}),
    )
    .await;
    s.file("src/main.rs", "fn main() {}\n");
    // the owner's own rule: nothing removes files
    s.file(
        ".no-user-config/hermitcrab/config.toml",
        "[permissions]\ndeny = [\"shell(rm:*)\"]\n",
    );
    let ran = s.run(&["hello"]).await;
    assert_eq!(ran.code, 0, "{ran:?}");
    let session = s.sessions().pop().unwrap();
    let (mut server, urls) = served(&s).await;
    let seen = page_at(
        &s.root,
        urls["alice"].as_str().unwrap(),
        "roles",
        json!({"urls": urls, "session": session}),
    )
    .await;
    let tried = said(&seen, "tried");
    let status = |who: &str, what: &str| tried[who][what]["status"].as_u64().unwrap_or(0);
    let error = |who: &str, what: &str| tried[who][what]["error"]["code"].clone();
    // no one removes src: bob and carol may not run programs, alice's rule refuses it
    assert!(s.root.join("src/main.rs").exists(), "{tried:#}");
    assert_eq!(status("bob", "remove"), 403, "{tried:#}");
    assert_eq!(status("carol", "remove"), 403, "{tried:#}");
    assert_eq!(status("alice", "remove"), 403, "{tried:#}");
    assert!(
        tried["alice"]["remove"]["text"]
            .as_str()
            .unwrap()
            .contains("refused by your rules"),
        "{tried:#}"
    );
    // the owner runs what her rules allow
    assert_eq!(status("alice", "make"), 200, "{tried:#}");
    assert!(s.root.join("made-from-page.txt").exists());
    // an operator starts runs; a viewer does not
    assert_eq!(status("bob", "run"), 200, "{tried:#}");
    assert_eq!(status("carol", "run"), 403, "{tried:#}");
    // declaring a program, or running one raw, is the owner's alone
    assert_eq!(error("bob", "declare"), "BOUNDARY_VIOLATION", "{tried:#}");
    assert_eq!(error("carol", "declare"), "BOUNDARY_VIOLATION", "{tried:#}");
    assert_eq!(error("bob", "raw_run"), "BOUNDARY_VIOLATION", "{tried:#}");
    // alice's own raw run of `rm` meets her rule
    assert_eq!(error("alice", "raw_run"), "BOUNDARY_VIOLATION", "{tried:#}");
    assert!(error("alice", "declare").is_null(), "{tried:#}");
    // carol reads, and may not message a session
    assert!(tried["carol"]["read"]["result"].is_object(), "{tried:#}");
    assert_eq!(error("carol", "message"), "BOUNDARY_VIOLATION", "{tried:#}");
    // bob's message is his, whatever it claimed
    let messages = s.of_type(&session, "message");
    let bobs: Vec<&Value> = messages
        .iter()
        .filter(|m| m["sender"]["person"] == "bob")
        .collect();
    assert_eq!(bobs.len(), 1, "{messages:#?}");
    assert_eq!(bobs[0]["from"], "bob (the page)");
    assert_eq!(bobs[0]["sender"]["via"], "page");
    assert!(
        !messages
            .iter()
            .any(|m| m["from"] == "a person (hc send)" || m["sender"]["via"] == "hc send"),
        "{messages:#?}"
    );
    // what bob did is recorded as his, through alice's page
    let log = s
        .db()
        .scope(
            &["commits_root"],
            &substrate::ScopeOpts {
                limit: Some(usize::MAX),
                ..substrate::ScopeOpts::default()
            },
        )
        .unwrap();
    let by_bob: Vec<Value> = (log.chunks.iter())
        .map(|c| c.body_value()["author"].clone())
        .filter(|a| a["for"] == "bob")
        .collect();
    assert!(by_bob.len() >= 2, "his run and his message: {by_bob:#?}");
    assert!(
        by_bob
            .iter()
            .all(|a| a["person"] == "alice" && a["via"] == "page"),
        "{by_bob:#?}"
    );
    // the address opened once does not open again for another's cookie
    assert_eq!(*said(&seen, "again"), json!(401), "{seen:#?}");
    let bobs_token = urls["bob"]
        .as_str()
        .unwrap()
        .split("token=")
        .nth(1)
        .unwrap();
    assert_eq!(*said(&seen, "bob_cookie"), json!([bobs_token]), "{seen:#?}");
    let _ = server.kill().await;
}
