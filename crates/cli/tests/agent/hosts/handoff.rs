//! A session moves between hosts: started on host A, resumed on host B —
//! refused while B's checkout is not where A left the session's files,
//! carried on with `--checkout` — and followed live on a page served from
//! host C, where a person signed in by their own token starts a run in
//! the background that every host sees was theirs.

use super::Team;
use crate::common::{text, when};
use crate::web::{page_at, said};
use serde_json::{Value, json};

fn script() -> Value {
    let mut slow = when("fourth part", json!([text("fourth done")]), "end_turn");
    slow["pace"] = json!({"first_byte_delay_ms": 3000});
    json!({"turns": [
        when("first part", json!([text("first done")]), "end_turn"),
        when("on a feature branch", json!([text("third done")]), "end_turn"),
        slow,
        when("from alice", json!([text("alice's done")]), "end_turn"),
    ]})
}

fn git(team: &Team, i: usize, args: &[&str]) -> String {
    super::git(&team.root(i), args)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_session_moves_from_host_to_host_and_is_followed_from_a_third() {
    let team = Team::new(3, script(), "").await;
    let first = team
        .out(0, &["run", "--output-format", "json", "first part"])
        .await;
    assert_eq!(first.code, 0, "{first:?}");
    let line: Value = serde_json::from_str(first.stdout.trim()).unwrap();
    let session = line["session_id"].as_str().unwrap().to_owned();
    // on A the work goes on on a branch of its own, committed
    git(&team, 0, &["checkout", "-q", "-b", "feature"]);
    std::fs::write(team.root(0).join("feature.txt"), "from A\n").unwrap();
    git(&team, 0, &["add", "feature.txt"]);
    git(&team, 0, &["commit", "-qm", "feature"]);
    let tip = git(&team, 0, &["rev-parse", "HEAD"]);
    let third = team
        .out(0, &["run", "--resume", &session, "on a feature branch"])
        .await;
    assert_eq!(third.code, 0, "{third:?}");
    // B is on main: refused, saying what to check out; nothing asked
    let asked = team.sent().len();
    let refused = team
        .out(1, &["run", "--resume", &session, "fourth part"])
        .await;
    assert_eq!(refused.code, 2, "{refused:?}");
    for needed in ["host-a", "feature", &tip[..12], "--checkout"] {
        assert!(refused.stderr.contains(needed), "{needed}: {refused:?}");
    }
    assert_eq!(team.sent().len(), asked, "no request for a refused run");
    // --checkout before the branch is anywhere B fetches from: said
    let unfetched = team
        .out(
            1,
            &["run", "--resume", &session, "--checkout", "fourth part"],
        )
        .await;
    assert_eq!(unfetched.code, 1, "{unfetched:?}");
    assert!(unfetched.stderr.contains("push it"), "{unfetched:?}");
    git(&team, 0, &["push", "-q", "origin", "feature"]);
    // followed from a page on C while B carries it on there
    let token = team.dir.path().join("alice.token");
    let token = token.to_str().unwrap();
    let (_server, urls) = team.serve(2, &["--token-file", token]).await;
    let mut run = vec!["ip", "netns", "exec", &team.net.host(1).namespace];
    run.extend([
        crate::common::HC,
        "run",
        "--resume",
        &session,
        "--checkout",
        "fourth part",
    ]);
    let seen = page_at(
        &team.root(2),
        &urls[0],
        "handed",
        json!({"session": session, "hc_run": run, "cwd": team.root(1), "env": team.full_env(1)}),
    )
    .await;
    assert_eq!(*said(&seen, "code"), json!(0), "{seen:#?}");
    let running = said(&seen, "running").as_str().unwrap();
    assert!(running.contains("host-b"), "{running}");
    assert!(
        said(&seen, "stderr")
            .as_str()
            .unwrap()
            .contains("checked out branch feature"),
        "{seen:#?}"
    );
    assert!(
        said(&seen, "stdout")
            .as_str()
            .unwrap()
            .contains("fourth done")
    );
    assert_eq!(git(&team, 1, &["rev-parse", "HEAD"]), tip);
    assert_eq!(
        git(&team, 1, &["symbolic-ref", "--short", "HEAD"]),
        "feature"
    );
    // the record is whole on every host: each request rebuilds
    let sent = team.sent();
    for i in 0..3 {
        for n in 1..=3 {
            let body = team.rebuilt(i, &session, n).await;
            assert!(sent.contains(&body), "request {n} on {}", team.names[i]);
        }
    }
    let tree = team.out(2, &["trace", &session]).await;
    assert!(tree.stdout.contains("on host-a"), "{tree:?}");
    assert!(tree.stdout.contains("on host-b"), "{tree:?}");
    // a run alice starts from C's page, in the background: hers, seen so
    // from A
    let addr = urls[0]
        .trim_start_matches("http://")
        .split('/')
        .next()
        .unwrap();
    let key = urls[0].split("token=").nth(1).unwrap();
    let body = json!({"prompt": "from alice", "background": true, "labels": []}).to_string();
    let request = format!(
        "POST /api/run HTTP/1.1\r\nHost: {addr}\r\nCookie: hc_token={key}\r\nContent-Type: \
         application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let (code, answer) = crate::web::http(addr, &request).await;
    assert_eq!(code, 200, "{answer}");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let rows = team.agents(0).await;
        let hers = rows.iter().find(|r| r["title"] == "from alice");
        if let Some(row) = hers.filter(|r| r["status"] == "done") {
            assert_eq!(row["asked_by"], "alice", "{row}");
            assert_eq!(row["asked_on"], "host-c", "{row}");
            break;
        }
        assert!(std::time::Instant::now() < deadline, "{rows:#?}");
        tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    }
}
