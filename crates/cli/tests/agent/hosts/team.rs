//! Three hosts take thirty background runs from one PostgreSQL server; one
//! host's link is cut mid-run, another's worker is killed -9. Every run
//! ends done, failed `engine lost`, or queued again from its last whole
//! turn as it asked; a cut-off host never writes for a run it lost; every
//! request of every session rebuilds byte for byte on every host.

use super::Team;
use crate::common::{call, text, when};
use serde_json::{Value, json};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;
use substrate::{Commit, ScopeOpts, Substrate};

const JOBS: usize = 30;

/// Each job reads `notes.txt`, then (after four seconds) is done.
/// Every turn is there twice: a run queued again asks its last call anew.
fn script() -> Value {
    let mut turns = Vec::new();
    for _ in 0..2 {
        for k in 0..JOBS {
            let id = format!("tu{k:02}x");
            let read = call(&id, "read", json!({"file_path": "notes.txt"}));
            turns.push(when(&format!("job {k:02}!"), json!([read]), "tool_use"));
            let mut done = when(&id, json!([text(&format!("job {k:02} done"))]), "end_turn");
            // (long enough that each host holds runs of both kinds at once, under load too)
            done["pace"] = json!({"first_byte_delay_ms": 8000});
            turns.push(done);
        }
    }
    json!({"turns": turns})
}

fn on(rows: &[Value], host: &str) -> Vec<String> {
    rows.iter()
        .filter(|r| r["status"] == "running" && r["host"] == host)
        .map(|r| r["id"].as_str().unwrap().to_owned())
        .collect()
}

/// The shared store, opened from this machine.
pub fn store(team: &Team) -> Arc<Substrate> {
    let url = team.cluster.tcp_url("postgres");
    let beside = team.dir.path().join("beside.db");
    Arc::new(Substrate::open_postgres(&url, "hc_team", Default::default(), &beside).unwrap())
}

/// Every commit, oldest first.
fn commits(db: &Substrate) -> Vec<Commit> {
    let opts = ScopeOpts {
        limit: Some(usize::MAX),
        ..ScopeOpts::default()
    };
    let read = db.scope(&["commits_root"], &opts).unwrap();
    let mut all: Vec<Commit> = (read.chunks.iter())
        .filter_map(|c| serde_json::from_value(c.body_value()).ok())
        .collect();
    all.sort_by_key(|c| c.id);
    all
}

/// `process`'s body as of commit `n`.
pub fn body_at(db: &Substrate, process: &str, n: u64) -> Value {
    db.read(|s| s.as_of(n)?.body(process)).unwrap().unwrap()
}

/// From the record: once `process` was failed or queued again, no commit
/// was made for it until an engine claimed it anew (a fenced engine wrote
/// nothing); its claims' epochs only grow.
fn fenced_in_the_record(db: &Substrate, log: &[Commit], process: &str) -> usize {
    let mut lost_at = None;
    let mut epoch = 0;
    let mut lost = 0;
    for commit in log
        .iter()
        .filter(|c| c.chunks_modified.iter().any(|m| m == process))
    {
        let body = body_at(db, process, commit.id);
        let claimed = body["epoch"].as_u64().unwrap_or(0);
        assert!(claimed >= epoch, "{process}: epochs only grow");
        epoch = claimed;
        let status = body["status"].as_str().unwrap_or_default();
        if commit.dispatch_id.is_none() && status == "running" {
            lost_at = None;
        }
        if commit.dispatch_id.is_none()
            && (status == "pending" && body["note"].is_string() || body["error"] == "engine lost")
        {
            lost_at = Some(commit.id);
            lost += 1;
        }
    }
    let now = body_at(db, process, db.head().unwrap());
    if let Some(at) = lost_at.filter(|_| now["status"] != "done") {
        let after: Vec<u64> = (log.iter())
            .filter(|c| c.id > at && c.dispatch_id.as_deref() == Some(process))
            .map(|c| c.id)
            .collect();
        assert!(
            after.is_empty(),
            "{process} wrote after it was lost: {after:?}"
        );
    }
    lost
}

#[tokio::test(flavor = "multi_thread")]
async fn thirty_runs_on_three_hosts_survive_a_cut_link_and_a_killed_worker() {
    let team = Team::new(3, script(), "lease_seconds = 6\n").await;
    let mut workers: Vec<_> = (0..3).map(|i| team.worker(i, &["--max", "4"])).collect();
    let mut sessions = Vec::new();
    for k in 0..JOBS {
        let prompt = format!("job {k:02}!");
        let mut args = vec!["run", "--bg", "--allow", "read"];
        if k % 2 == 1 {
            args.extend(["--retry", "turn"]);
        }
        args.push(&prompt);
        let out = team.out(0, &args).await;
        assert_eq!(out.code, 0, "{out:?}");
        sessions.push(out.stdout.trim().to_owned());
    }
    // host B is cut off while it runs a run that asked to be queued again
    // and one that did not; host C's worker is killed
    let retries = |ids: &[String]| {
        (ids.iter())
            .map(|id| sessions.iter().position(|s| s == id).unwrap() % 2)
            .collect::<HashSet<usize>>()
    };
    let rows = team
        .until(0, 60, |rows| {
            retries(&on(rows, "host-b")).len() == 2 && !on(rows, "host-c").is_empty()
        })
        .await;
    let (on_b, on_c) = (on(&rows, "host-b"), on(&rows, "host-c"));
    team.net.host(1).cut().unwrap();
    workers[2].start_kill().unwrap();
    // within the lease (6 s) and a sweep, host A finds them lost
    let lost_seen = team
        .until(0, 30, |rows| {
            (rows.iter())
                .filter(|r| on_b.iter().chain(&on_c).any(|id| r["id"] == *id))
                .all(|r| r["status"] != "running" || r["host"] == "host-a")
        })
        .await;
    // (every run still listed, the lost ones among them)
    assert_eq!(lost_seen.len(), JOBS, "{lost_seen:#?}");
    // B comes back: what it still had in flight for those runs is fenced
    tokio::time::sleep(Duration::from_secs(2)).await;
    team.net.host(1).join().unwrap();
    let rows = team
        .until(0, 180, |rows| {
            rows.len() == JOBS
                && (rows.iter()).all(|r| r["status"] == "done" || r["status"] == "failed")
        })
        .await;
    let db = store(&team);
    for row in &rows {
        let k: usize = sessions.iter().position(|s| row["id"] == *s).unwrap();
        let process = row["process"].as_str().unwrap();
        let body = body_at(&db, process, db.head().unwrap());
        let stderr = body["stderr_tail"].as_str().unwrap_or_default().to_owned();
        match row["status"].as_str().unwrap() {
            "done" => {}
            "failed" => {
                assert_eq!(row["error"], "engine lost", "{row}\n{stderr}");
                // (B may claim one more between the look and the cut: a
                // run lost with it is on B too)
                let was_on: Vec<&String> = on_b.iter().chain(&on_c).collect();
                let went = matches!(row["host"].as_str(), Some("host-b" | "host-c"));
                assert!(
                    was_on.contains(&&sessions[k]) || went,
                    "only lost runs fail: {row}"
                );
            }
            other => panic!("{other}: {row}"),
        }
    }
    let log = commits(&db);
    let mut lost = 0;
    for row in &rows {
        lost += fenced_in_the_record(&db, &log, row["process"].as_str().unwrap());
    }
    // every run that was on B or C when they went was lost once — but one
    // that ended there before the cut took hold
    let ended_there = (on_b.iter().chain(&on_c))
        .filter(|id| {
            let row = rows.iter().find(|r| r["id"] == **id).unwrap();
            row["status"] == "done" && row["host"] != "host-a"
        })
        .count();
    assert!(
        lost + ended_there >= on_b.len() + on_c.len(),
        "every run on B and C was lost once"
    );
    assert!(lost >= 1, "something was lost");
    // a lost run that asked to be queued again ran to its end elsewhere —
    // unless a tool call of its last turn had no result recorded (its
    // agent said it could not go on from the record)
    for id in on_b.iter().chain(&on_c) {
        let k = sessions.iter().position(|s| s == id).unwrap();
        let row = rows.iter().find(|r| r["id"] == *id).unwrap();
        let body = body_at(&db, row["process"].as_str().unwrap(), db.head().unwrap());
        // (done: queued again and done on A, or it ended before the cut)
        if k % 2 == 1 && row["status"] == "failed" {
            assert_eq!(body["resumable"], false, "{row} {body}");
        }
    }
    // every request of every session rebuilds on every host
    let sent = team.sent();
    let mut matched = HashSet::new();
    let mut by_session: HashMap<&str, usize> = HashMap::new();
    for (k, session) in sessions.iter().enumerate() {
        let row = rows.iter().find(|r| r["id"] == *session).unwrap();
        let turns = row["turns"].as_u64().unwrap() as usize;
        by_session.insert(session, turns);
        for n in 1..=turns {
            let hosts: &[usize] = if k % 5 == 0 { &[0, 1, 2] } else { &[0] };
            for &i in hosts {
                let body = team.rebuilt(i, session, n).await;
                let at = sent.iter().position(|b| *b == body);
                assert!(at.is_some(), "{session} request {n} on {}", team.names[i]);
                matched.insert(at);
            }
        }
    }
    let recorded: usize = by_session.values().sum();
    assert_eq!(
        matched.len(),
        recorded,
        "each recorded request was sent once"
    );
    let said = std::fs::read_to_string(team.log(1)).unwrap();
    drop(workers);
    // B said it lost them, and wrote nothing more for them
    // (each run it had when it was cut, but one that ended there first)
    for id in &on_b {
        let row = rows.iter().find(|r| r["id"] == *id).unwrap();
        if row["status"] == "done" && row["host"] == "host-b" {
            continue;
        }
        let process = row["process"].as_str().unwrap();
        let lost_here = format!("{process}: lost: this host's lease on it expired");
        assert!(said.contains(&lost_here), "{process}: {said}");
    }
}
