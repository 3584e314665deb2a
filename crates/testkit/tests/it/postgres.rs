//! The throwaway PostgreSQL cluster: it starts, takes connections on its
//! socket and on TCP, survives a crash and a restart with its data, and
//! is gone once dropped.

#[test]
fn a_cluster_starts_answers_restarts_and_is_removed() {
    let mut pg =
        testkit::PgCluster::start().expect("a cluster (Debian: apt-get install postgresql)");
    assert_eq!(pg.psql("postgres", "SELECT 40 + 2").unwrap().trim(), "42");
    pg.psql("postgres", "CREATE DATABASE kept").unwrap();
    pg.psql("kept", "CREATE TABLE t (n int); INSERT INTO t VALUES (7)")
        .unwrap();
    assert!(pg.url("kept").contains(&format!("port={}", pg.port())));
    assert!(pg.tcp_url("kept").starts_with(&format!(
        "postgres://hc:{}@127.0.0.1:",
        testkit::PG_PASSWORD
    )));
    pg.stop();
    assert!(pg.psql("kept", "SELECT 1").is_err(), "stopped");
    pg.resume().unwrap();
    assert_eq!(pg.psql("kept", "SELECT n FROM t").unwrap().trim(), "7");
    let dir = pg.socket_dir();
    drop(pg);
    assert!(!dir.exists(), "removed");
}
