//! What only the PostgreSQL store has: engines following each other on
//! one server, and the faults of a network store.

use serde_json::json;
use std::time::{Duration, Instant};
use substrate::{ChunkDecl, Declaration, Options, Substrate};

/// A schema name no other test uses.
fn schema(tag: &str) -> String {
    format!("f{}_{tag}", std::process::id())
}

fn commit(db: &Substrate, id: &str) -> u64 {
    db.commit(
        Declaration::of(vec![ChunkDecl::with_id(id).body(json!({}))]),
        None,
    )
    .unwrap()
    .id
}

/// Waits (at most 10 s) for the commit `id` on `events`, noting in `seen`
/// every commit that came.
fn heard(
    events: &mut tokio::sync::broadcast::Receiver<std::sync::Arc<substrate::Commit>>,
    id: u64,
    seen: &mut Vec<u64>,
) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        match events.try_recv() {
            Ok(c) => {
                seen.push(c.id);
                if c.id == id {
                    return;
                }
            }
            Err(tokio::sync::broadcast::error::TryRecvError::Empty) => {
                assert!(
                    Instant::now() < deadline,
                    "commit {id} never reached the subscriber"
                );
                std::thread::sleep(Duration::from_millis(10));
            }
            Err(e) => panic!("{e}"),
        }
    }
}

#[test]
fn another_engines_commits_reach_subscribers_without_asking_even_after_a_dropped_connection() {
    let cluster = testkit::PgCluster::shared().unwrap();
    let name = schema("follow");
    let ours = Substrate::open_postgres(
        &cluster.url,
        &name,
        Options::default(),
        std::path::Path::new("/nonexistent/substrate.db"),
    )
    .unwrap();
    let theirs = Substrate::open_postgres(
        &cluster.url,
        &name,
        Options::default(),
        std::path::Path::new("/nonexistent/substrate.db"),
    )
    .unwrap();
    let mut events = ours.subscribe();
    let mut seen = Vec::new();
    let a = commit(&theirs, "a");
    heard(&mut events, a, &mut seen);
    // the listening connections are cut: nothing is lost
    let psql = |sql: &str| {
        let out = std::process::Command::new("psql")
            .args(["-X", "-q", "-A", "-t", "-h"])
            .arg(&cluster.socket_dir)
            .args([
                "-p",
                &cluster.port.to_string(),
                "-U",
                testkit::PG_USER,
                "-d",
                "postgres",
                "-c",
                sql,
            ])
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let cut = psql(
        "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE query LIKE 'LISTEN%'",
    );
    assert!(
        cut.trim().parse::<u32>().unwrap() >= 1,
        "listeners were cut: {cut}"
    );
    let b = commit(&theirs, "b");
    heard(&mut events, b, &mut seen);
    // our own commit after theirs: each once, in order
    let c = commit(&ours, "c");
    while let Ok(commit) = events.try_recv() {
        seen.push(commit.id);
    }
    assert_eq!(seen, vec![a, b, c]);
}

#[test]
fn a_server_that_is_down_at_start_is_a_clear_error_naming_it() {
    let mut cluster = testkit::PgCluster::start().unwrap();
    let url = cluster.tcp_url("postgres");
    cluster.stop();
    let err = Substrate::open_postgres(
        &url,
        "down",
        Options::default(),
        std::path::Path::new("/nonexistent/substrate.db"),
    )
    .unwrap_err();
    let said = err.to_string();
    assert!(
        said.contains("cannot connect to PostgreSQL at") && said.contains("127.0.0.1"),
        "{said}"
    );
    cluster.resume().unwrap();
    // nothing was half made: the schema opens fresh now
    let db = Substrate::open_postgres(
        &url,
        "down",
        Options::default(),
        std::path::Path::new("/nonexistent/substrate.db"),
    )
    .unwrap();
    assert_eq!(db.head().unwrap(), 0);
}
