//! Crash safety: a child process committing in a loop is killed with
//! SIGKILL at random moments, 20 times. After each kill the file opens,
//! `PRAGMA integrity_check` says ok, and every commit the child reported as
//! acknowledged is there.

use crate::common;
use rand::Rng;
use serde_json::json;
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;
use substrate::{ChunkDecl, Declaration, NewPlacement, ScopeOpts, Substrate};

/// The child: commits prompts (some large, so transactions span many pages)
/// forever, printing `ack <commit> <chunk>` after each commit returns.
#[test]
#[ignore = "run by `killed_writers_never_corrupt_the_store` as a child process"]
fn crash_child() {
    let Ok(path) = std::env::var("SUBSTRATE_CRASH_DB") else {
        return;
    };
    let db = Substrate::open(&path).unwrap();
    db.init(common::vocabulary()).unwrap();
    let session = format!("s_{}", std::process::id());
    db.commit(
        Declaration::of(vec![
            ChunkDecl::with_id(&session).on(NewPlacement::instance("session")),
        ]),
        None,
    )
    .unwrap();
    let mut rng = rand::rng();
    for i in 0u64.. {
        let size = if i % 7 == 0 {
            rng.random_range(10_000..200_000)
        } else {
            100
        };
        let c = db
            .commit(
                Declaration::of(vec![
                    ChunkDecl::generated()
                        .body(json!({"text": "x".repeat(size), "i": i}))
                        .on(NewPlacement::instance(&session))
                        .on(NewPlacement::instance("prompt")),
                ]),
                None,
            )
            .unwrap();
        println!("ack {} {}", c.id, c.created[0]);
    }
}

#[test]
fn killed_writers_never_corrupt_the_store() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("crash.db");
    let exe = std::env::current_exe().unwrap();
    let mut rng = rand::rng();
    let mut acked: Vec<(u64, String)> = Vec::new();
    for round in 0..20 {
        let mut child = Command::new(&exe)
            .args([
                "--ignored",
                "--exact",
                "crash::crash_child",
                "--nocapture",
                "--test-threads=1",
            ])
            .env("SUBSTRATE_CRASH_DB", &path)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = mpsc::channel();
        let reader = std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if let Some(rest) = line.strip_prefix("ack ") {
                    let (id, chunk) = rest.split_once(' ').unwrap();
                    if tx
                        .send((id.parse::<u64>().unwrap(), chunk.to_owned()))
                        .is_err()
                    {
                        break;
                    }
                }
            }
        });
        // wait for the first acknowledgement, then kill at a random moment
        let first = rx
            .recv_timeout(Duration::from_secs(60))
            .expect("child never committed");
        acked.push(first);
        std::thread::sleep(Duration::from_millis(rng.random_range(1..120)));
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();
        reader.join().unwrap();
        acked.extend(rx.try_iter());

        let db = Substrate::open(&path).unwrap();
        let check: String = rusqlite::Connection::open(&path)
            .unwrap()
            .query_row("PRAGMA integrity_check", [], |r| r.get(0))
            .unwrap();
        assert_eq!(check, "ok", "round {round}: integrity check failed");
        let head = db.head().unwrap();
        for (id, chunk) in &acked {
            assert!(
                *id <= head,
                "round {round}: acknowledged commit {id} is missing (head {head})"
            );
            let found = db.read(|s| s.chunk(chunk)).unwrap();
            assert!(
                found.is_some(),
                "round {round}: acknowledged chunk {chunk} is missing"
            );
        }
        // the log is whole: ids 1..=head with no gap
        let log = db
            .scope(
                &["commits_root"],
                &ScopeOpts {
                    limit: Some(1_000_000),
                    ..ScopeOpts::default()
                },
            )
            .unwrap();
        assert_eq!(log.chunks.len() as u64, head);
    }
    eprintln!("{} acknowledged commits survived 20 kills", acked.len());
    assert!(acked.len() >= 20);
}
