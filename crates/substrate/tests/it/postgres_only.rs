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
    let psql = |sql: &str| cluster.psql(sql).unwrap();
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

#[test]
fn two_engines_committing_at_once_make_one_order_and_lose_nothing() {
    let cluster = testkit::PgCluster::shared().unwrap();
    let name = schema("race");
    let open = || {
        Substrate::open_postgres(
            &cluster.url,
            &name,
            Options::default(),
            std::path::Path::new("/nonexistent/substrate.db"),
        )
        .unwrap()
    };
    let (one, two) = (open(), open());
    std::thread::scope(|scope| {
        for (db, tag) in [(&one, "one"), (&two, "two")] {
            for t in 0..2 {
                scope.spawn(move || {
                    for i in 0..15 {
                        commit(db, &format!("{tag}-{t}-{i}"));
                    }
                });
            }
        }
    });
    let log = one
        .scope(
            &["commits_root"],
            &substrate::ScopeOpts {
                limit: Some(1000),
                ..Default::default()
            },
        )
        .unwrap();
    let mut ids: Vec<u64> = log
        .chunks
        .iter()
        .map(|c| c.id.trim_start_matches("commit/").parse().unwrap())
        .collect();
    ids.sort_unstable();
    assert_eq!(
        ids,
        (1..=60).collect::<Vec<u64>>(),
        "every commit, no gap, none twice"
    );
    for c in &log.chunks {
        let body = c.body_value();
        let id = body["id"].as_u64().unwrap();
        let parent = body["parent_id"].as_u64();
        assert_eq!(
            parent,
            (id > 1).then(|| id - 1),
            "each commit follows the one before"
        );
    }
    let (_, all) = (
        0,
        one.scope::<&str>(&[], &substrate::ScopeOpts::default())
            .unwrap(),
    );
    assert_eq!(all.total, 60);
}

#[test]
fn a_missing_database_or_a_role_that_may_not_create_says_what_to_do() {
    let cluster = testkit::PgCluster::shared().unwrap();
    let missing = cluster.url.replace("/postgres?", "/nosuchdb?");
    let beside = std::path::Path::new("/nonexistent/substrate.db");
    let said = Substrate::open_postgres(&missing, "x", Options::default(), beside)
        .unwrap_err()
        .to_string();
    assert!(
        said.contains("database \"nosuchdb\" does not exist") && said.contains("createdb"),
        "{said}"
    );
    assert_eq!(said.lines().count(), 1, "one line: {said}");
    let psql = |sql: &str| {
        cluster.psql(sql).unwrap();
    };
    let role = format!("ro_{}", std::process::id());
    psql(&format!(
        "CREATE ROLE {role} LOGIN; REVOKE CREATE ON DATABASE postgres FROM PUBLIC"
    ));
    let as_reader = cluster
        .url
        .replace("postgres://hc@", &format!("postgres://{role}@"));
    let said = Substrate::open_postgres(&as_reader, &schema("ro"), Options::default(), beside)
        .unwrap_err()
        .to_string();
    assert!(
        said.contains("permission denied") && said.contains("GRANT CREATE ON DATABASE"),
        "{said}"
    );
}

/// A store made before words were indexed (schema version 1) is brought
/// up to date on open: the words of the text it kept are cut and found.
#[test]
fn an_older_store_gets_its_words_indexed_on_open() {
    let cluster = testkit::PgCluster::shared().unwrap();
    let name = schema("words");
    let beside = std::path::Path::new("/nonexistent/substrate.db");
    let db = Substrate::open_postgres(&cluster.url, &name, Options::default(), beside).unwrap();
    db.commit(
        Declaration::of(vec![
            ChunkDecl::with_id("note").body(json!({"text": "the hermit crab"})),
        ]),
        None,
    )
    .unwrap();
    drop(db);
    cluster
        .psql(&format!(
            "DROP INDEX {name}.chunk_text_words; ALTER TABLE {name}.chunk_text DROP COLUMN words; \
             DROP TRIGGER commits_person ON {name}.commits; \
             DROP TRIGGER chunks_person ON {name}.chunks; DROP FUNCTION {name}.stamp_person(); \
             ALTER TABLE {name}.commits DROP COLUMN person; \
             ALTER TABLE {name}.chunks DROP COLUMN person; \
             UPDATE {name}.meta SET value = '1' WHERE key = 'schema_version'"
        ))
        .unwrap();
    let db = Substrate::open_postgres(&cluster.url, &name, Options::default(), beside).unwrap();
    let found = db
        .scope::<&str>(
            &[],
            &substrate::ScopeOpts {
                match_: Some("herm* crab".into()),
                ..substrate::ScopeOpts::default()
            },
        )
        .unwrap();
    assert_eq!(found.chunks.len(), 1);
    assert_eq!(db.info().unwrap().schema_version, 3);
    // what was written before authors were recorded is nobody's
    let authors = db.read(|snap| snap.authors(&["note".into()])).unwrap();
    assert_eq!(authors["note"], None);
}

/// The connection cut as a commit ends (`COMMIT` sent, no answer): the
/// caller is told whether it was made — the log says — and nothing is
/// made twice.
#[test]
fn a_connection_lost_as_a_commit_ends_is_settled_from_the_log() {
    let cluster = testkit::PgCluster::shared().unwrap();
    let name = schema("ending");
    let beside = std::path::Path::new("/nonexistent/substrate.db");
    // (a name of its own: only this test's connections are cut)
    let url = format!("{}&application_name={name}", cluster.url);
    let db = Substrate::open_postgres(&url, &name, Options::default(), beside).unwrap();
    commit(&db, "first");
    let head = db.head().unwrap();
    // a check that waits at COMMIT, so the connection can be cut then
    cluster
        .psql(&format!(
            "CREATE FUNCTION {name}.slow() RETURNS trigger LANGUAGE plpgsql AS \
             $$ BEGIN PERFORM pg_sleep(3); RETURN NULL; END $$; \
             CREATE CONSTRAINT TRIGGER slow AFTER INSERT ON {name}.commits \
             DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION {name}.slow()"
        ))
        .unwrap();
    let ours = name.clone();
    let cut = std::thread::spawn(move || {
        let name = ours;
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            let killed = cluster
                .psql(&format!(
                    "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity \
                     WHERE application_name = '{name}' AND state = 'active' \
                     AND query = 'COMMIT'"
                ))
                .unwrap();
            if killed.trim() != "0" {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!("no COMMIT to cut");
    });
    let err = db
        .commit(
            Declaration::of(vec![ChunkDecl::with_id("second").body(json!({}))]),
            None,
        )
        .unwrap_err()
        .to_string();
    cut.join().unwrap();
    assert!(
        err.contains(&format!("commit {} failed as it ended", head + 1))
            && err.contains("it was not made"),
        "{err}"
    );
    cluster
        .psql(&format!("DROP TRIGGER slow ON {name}.commits"))
        .unwrap();
    assert_eq!(db.head().unwrap(), head, "nothing was made");
    assert_eq!(
        commit(&db, "second"),
        head + 1,
        "made once, when asked again"
    );
}

/// The server restarted under running engines: a commit while it is down
/// fails clearly (and is not made), the next one after it is back works on
/// a new connection, and another engine's subscriber catches up on every
/// commit, once each, in order.
#[test]
fn a_server_restart_under_running_engines_loses_nothing() {
    let mut cluster = testkit::PgCluster::start().unwrap();
    let url = cluster.url("postgres");
    let beside = std::path::Path::new("/nonexistent/substrate.db");
    let open = || Substrate::open_postgres(&url, "restart", Options::default(), beside).unwrap();
    let (ours, theirs) = (open(), open());
    let mut events = theirs.subscribe();
    let mut seen = Vec::new();
    let a = commit(&ours, "a");
    heard(&mut events, a, &mut seen);
    cluster.stop();
    let down = ours
        .commit(
            Declaration::of(vec![ChunkDecl::with_id("lost").body(json!({}))]),
            None,
        )
        .unwrap_err()
        .to_string();
    assert!(down.contains("PostgreSQL"), "one clear error: {down}");
    assert_eq!(down.lines().count(), 1, "{down}");
    cluster.resume().unwrap();
    let b = commit(&ours, "b");
    assert_eq!(b, a + 1, "the failed commit was not made");
    heard(&mut events, b, &mut seen);
    let c = commit(&theirs, "c");
    assert_eq!(c, b + 1);
    while let Ok(commit) = events.try_recv() {
        seen.push(commit.id);
    }
    assert_eq!(seen, vec![a, b, c], "each once, in order");
}

/// Whether the connections named `app` speak TLS now (none: no).
fn over_tls(cluster: &testkit::SharedCluster, app: &str) -> bool {
    let said = cluster
        .psql(&format!(
            "SELECT count(*) FROM pg_stat_ssl s JOIN pg_stat_activity a USING (pid) \
             WHERE a.application_name = '{app}' AND s.ssl"
        ))
        .unwrap();
    said.trim() != "0"
}

/// TLS as libpq's `sslmode` says: `require` and `verify-full` (against
/// the server's own certificate as the root) speak it, `disable` does
/// not; a root that did not sign the server's certificate, a
/// `verify-full` with no root and a mode libpq does not know are each one
/// line saying what to do.
#[test]
fn tls_is_spoken_as_sslmode_says() {
    let cluster = testkit::PgCluster::shared().unwrap();
    let beside = std::path::Path::new("/nonexistent/substrate.db");
    let app = schema("tls");
    let url = |query: &str| format!("{}?{query}&application_name={app}", cluster.tcp_url);
    let open = |query: &str| {
        Substrate::open_postgres(&url(query), &schema("tls"), Options::default(), beside)
    };
    let cert = cluster.certificate.display().to_string();
    for query in [
        "sslmode=require".to_owned(),
        format!("sslmode=verify-full&sslrootcert={cert}"),
        format!("sslmode=verify-ca&sslrootcert={cert}"),
    ] {
        let db = open(&query).unwrap();
        commit(&db, &format!("over-{}", query.len()));
        assert!(over_tls(cluster, &app), "{query}: TLS");
        drop(db);
        // (until the pool's connections are gone)
        let deadline = Instant::now() + Duration::from_secs(10);
        while over_tls(cluster, &app) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(50));
        }
    }
    let plain = open("sslmode=disable").unwrap();
    plain.head().unwrap();
    assert!(!over_tls(cluster, &app), "disable: no TLS");
    drop(plain);
    // a root that did not sign the server's certificate
    let dir = tempfile::tempdir().unwrap();
    let other = dir.path().join("other.crt");
    let made = std::process::Command::new("openssl")
        .args([
            "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
        ])
        .args(["-subj", "/CN=someone-else", "-keyout"])
        .arg(dir.path().join("other.key"))
        .arg("-out")
        .arg(&other)
        .output()
        .unwrap();
    assert!(made.status.success(), "{made:?}");
    let said = open(&format!(
        "sslmode=verify-full&sslrootcert={}",
        other.display()
    ))
    .unwrap_err()
    .to_string();
    assert!(said.contains("check sslmode and sslrootcert"), "{said}");
    assert_eq!(said.lines().count(), 1, "{said}");
    let said = open("sslmode=verify-full&sslrootcert=/nonexistent/root.crt")
        .unwrap_err()
        .to_string();
    assert!(said.contains("cannot read the root certificate"), "{said}");
    let said = open("sslmode=require&sslrootcert=system")
        .unwrap_err()
        .to_string();
    assert!(
        said.contains("sslmode=verify-full"),
        "system roots check the name: {said}"
    );
    let said = open("sslmode=sometimes").unwrap_err().to_string();
    assert!(said.contains("is not one of disable"), "{said}");
    assert!(!said.contains(testkit::PG_PASSWORD), "{said}");
}

/// A read begun as of the head this engine knows, which then needs the
/// server after another engine committed, reads again at the server's
/// head: a member another engine placed is there at once.
#[test]
fn a_read_needing_the_server_sees_another_engines_commit() {
    let cluster = testkit::PgCluster::shared().unwrap();
    let name = schema("fresh");
    let beside = std::path::Path::new("/nonexistent/substrate.db");
    let open =
        || Substrate::open_postgres(&cluster.url, &name, Options::default(), beside).unwrap();
    let (ours, theirs) = (open(), open());
    commit(&ours, "list");
    for n in 0..20 {
        let id = format!("item{n}");
        theirs
            .commit(
                Declaration::of(vec![
                    ChunkDecl::with_id(&id)
                        .body(json!({}))
                        .on(substrate::NewPlacement::relates("list")),
                ]),
                None,
            )
            .unwrap();
        let members = ours
            .scope(&["list"], &substrate::ScopeOpts::default())
            .unwrap();
        assert!(
            members.chunks.iter().any(|c| c.id == id),
            "{id} is read at once by the other engine"
        );
    }
}

/// `url` (the test superuser's, over the socket) as `role`.
fn as_role(url: &str, role: &str) -> String {
    url.replacen(
        &format!("postgres://{}@", testkit::PG_USER),
        &format!("postgres://{role}@"),
        1,
    )
}

#[test]
fn the_database_stamps_who_wrote_each_commit_and_version_whatever_a_client_claims() {
    let cluster = testkit::PgCluster::shared().unwrap();
    let name = schema("authors");
    let (alice, bob) = (format!("alice_{name}"), format!("bob_{name}"));
    let nowhere = std::path::Path::new("/nonexistent/substrate.db");
    // the team's administrator makes the store, and a role for each person
    let admin = Substrate::open_postgres(&cluster.url, &name, Options::default(), nowhere).unwrap();
    drop(admin);
    for role in [&alice, &bob] {
        cluster
            .psql(&format!(
                "CREATE ROLE \"{role}\" LOGIN; GRANT USAGE ON SCHEMA \"{name}\" TO \"{role}\"; \
                 GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA \"{name}\" TO \"{role}\"; \
                 GRANT USAGE ON ALL SEQUENCES IN SCHEMA \"{name}\" TO \"{role}\";"
            ))
            .unwrap();
    }
    let open = |role: &str| {
        Substrate::open_postgres(
            &as_role(&cluster.url, role),
            &name,
            Options::default(),
            nowhere,
        )
        .unwrap()
    };
    let (a, b) = (open(&alice), open(&bob));
    let signer = |person: &str, via: &str| substrate::Signer {
        person: person.into(),
        host: "laptop".into(),
        via: via.into(),
    };
    a.sign(signer("alice", "terminal"));
    // bob's client claims to be alice
    b.sign(signer(&alice, "page"));
    assert_eq!(a.person(), alice);
    assert_eq!(b.person(), bob);
    let mine = a
        .commit(
            Declaration::of(vec![ChunkDecl::with_id("p").body(json!({}))]),
            None,
        )
        .unwrap();
    let theirs = b
        .commit_for(
            Declaration::of(vec![ChunkDecl::with_id("q").body(json!({}))]),
            Some("p_01"),
            Some("carol"),
            |_| Ok::<(), substrate::Error>(()),
        )
        .unwrap();
    let author = |c: &substrate::Commit| c.author.clone().unwrap();
    assert_eq!(author(&mine).person, alice);
    assert_eq!(author(&mine).via, "terminal");
    assert_eq!(author(&theirs).person, bob);
    assert_eq!(author(&theirs).via, "program:p_01");
    assert_eq!(author(&theirs).on_behalf.as_deref(), Some("carol"));
    // a version's author, as the database stamped it
    let authors = a
        .read(|snap| snap.authors(&["p".into(), "q".into()]))
        .unwrap();
    assert_eq!(authors["p"].as_deref(), Some(alice.as_str()));
    assert_eq!(authors["q"].as_deref(), Some(bob.as_str()));
    // bob writes rows by hand, claiming alice: the database says bob
    let forged = serde_json::json!({"id": 99, "parent_id": theirs.id, "timestamp": "2026-12-07T00:00:00.000Z",
        "dispatch_id": null, "chunks_modified": [], "created": [], "removed": [],
        "placements_modified": [], "touched_scopes": [], "author": {"person": alice}});
    cluster
        .psql(&format!(
            "SET ROLE \"{bob}\"; SET search_path = \"{name}\"; \
             INSERT INTO commits (id, parent_id, timestamp, record, person) \
             VALUES (99, {}, 'x', '{forged}', '{alice}'); \
             UPDATE chunks SET person = '{alice}' WHERE id = 'q';",
            theirs.id
        ))
        .unwrap();
    // nor may he rewrite alice's version, or any commit: only end a version
    for forgery in [
        "UPDATE chunks SET body = '{\"evil\": true}' WHERE id = 'p'".to_owned(),
        format!(
            "UPDATE commits SET person = '{alice}' WHERE id = {}",
            theirs.id
        ),
        format!("UPDATE commits SET record = '{{}}' WHERE id = {}", mine.id),
    ] {
        let refused = cluster.psql(&format!(
            "SET ROLE \"{bob}\"; SET search_path = \"{name}\"; {forgery};"
        ));
        assert!(refused.is_err(), "{forgery}: {refused:?}");
    }
    cluster
        .psql(&format!(
            "SET ROLE \"{bob}\"; SET search_path = \"{name}\"; \
             UPDATE chunks SET ended = ended WHERE id = 'p';"
        ))
        .unwrap();
    let p = a.read(|snap| snap.body("p")).unwrap().unwrap();
    assert_eq!(p, json!({}));
    let authors = a.read(|snap| snap.authors(&["q".into()])).unwrap();
    assert_eq!(authors["q"].as_deref(), Some(bob.as_str()));
    let log = a
        .scope(&["commits_root"], &substrate::ScopeOpts::default())
        .unwrap();
    let persons: Vec<String> = log
        .chunks
        .iter()
        .filter_map(|c| {
            let body = c.body_value();
            Some(body.get("author")?.get("person")?.as_str()?.to_owned())
        })
        .collect();
    assert!(
        persons.iter().filter(|p| **p == bob).count() >= 2,
        "{persons:?}"
    );
    assert_eq!(
        persons.iter().filter(|p| **p == alice).count(),
        1,
        "{persons:?}"
    );
}
