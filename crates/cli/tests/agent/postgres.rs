//! `hc` with its substrate on PostgreSQL (`HC_STORE`): a run with tools,
//! its trace rebuilt from the server, nothing in the project's SQLite file.

use crate::common::*;
use serde_json::json;

#[tokio::test(flavor = "multi_thread")]
async fn hc_run_keeps_its_record_on_postgres_when_hc_store_names_a_server() {
    let cluster = testkit::PgCluster::shared().unwrap();
    let s = Setup::new(json!({"turns": [
        reply(json!([call("r1", "read", json!({"file_path": "a.txt"}))]), "tool_use"),
        reply(json!([text("it says hello")]), "end_turn"),
    ]}))
    .await;
    s.file("a.txt", "hello from the file\n");
    let schema = format!("e2e_{}", std::process::id());
    // (the cluster trusts every connection: the password is only to be
    // kept out of everything hc says)
    let store = format!("{}&schema={schema}", cluster.url)
        .replace("postgres://hc@", "postgres://hc:sekrit@");
    let on_pg = |args: &[&str]| {
        let mut command = s.hc(args);
        command.env("HC_STORE", &store);
        command
    };
    let ran = on_pg(&["run", "--allow", "read", "what does a.txt say?"])
        .output()
        .await
        .unwrap();
    let stderr = String::from_utf8_lossy(&ran.stderr);
    assert!(ran.status.success(), "{stderr}");
    assert!(String::from_utf8_lossy(&ran.stdout).contains("it says hello"));
    assert!(
        s.sessions().is_empty(),
        "nothing went to .hermitcrab/substrate.db"
    );
    let sessions = on_pg(&["sessions", "--json"]).output().await.unwrap();
    let listed: serde_json::Value = serde_json::from_slice(&sessions.stdout).unwrap();
    assert_eq!(listed.as_array().map(Vec::len), Some(1), "{listed}");
    // the second request, rebuilt from the server, carries the file
    let rebuilt = on_pg(&["trace", "--request", "2"]).output().await.unwrap();
    assert!(rebuilt.status.success(), "{rebuilt:?}");
    let sent = s.sent();
    assert_eq!(
        rebuilt.stdout, sent[1],
        "byte for byte what the model was sent"
    );
    let commits: u32 = cluster
        .psql(&format!("SELECT count(*) FROM {schema}.commits"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(
        commits > 5,
        "the record is on the server: {commits} commits"
    );
    let info = on_pg(&["store", "info", "--json"]).output().await.unwrap();
    let shown = String::from_utf8_lossy(&info.stdout).into_owned();
    assert!(info.status.success(), "{info:?}");
    let info: serde_json::Value = serde_json::from_str(&shown).unwrap();
    assert_eq!(info["backend"], "postgres", "{info}");
    assert!(
        info["location"].as_str().unwrap().contains(&schema),
        "{info}"
    );
    assert!(info["head"].as_u64().unwrap() as u32 == commits, "{info}");
    assert!(info["bytes"].as_u64().unwrap() > 0, "{info}");
    for said in [&shown, &stderr.to_string()] {
        assert!(!said.contains("sekrit"), "no password shown: {said}");
    }
    let local = s.hc(&["store", "info"]).output().await.unwrap();
    let local = String::from_utf8_lossy(&local.stdout);
    assert!(
        local.contains("backend: sqlite") && local.contains("substrate.db"),
        "{local}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_password_comes_from_pgpassword_or_pgpass_and_a_wrong_one_is_one_line() {
    let cluster = testkit::PgCluster::shared().unwrap();
    let s = Setup::new(json!({"turns": [reply(json!([text("unused")]), "end_turn")]})).await;
    let port = cluster.port;
    let bare = format!(
        "postgres://{}@127.0.0.1:{port}/postgres?schema=pw_{}",
        testkit::PG_USER,
        std::process::id()
    );
    let info = |env: Vec<(&str, String)>| {
        let mut command = s.hc(&["store", "info"]);
        command.env("HC_STORE", &bare).env_remove("PGPASSWORD");
        for (k, v) in env {
            command.env(k, v);
        }
        command.output()
    };
    let wrong = info(vec![("PGPASSWORD", "not-it".into())]).await.unwrap();
    let said = String::from_utf8_lossy(&wrong.stderr).into_owned();
    assert!(!wrong.status.success());
    assert!(
        said.contains("password authentication failed")
            && said.contains("check the user and password"),
        "{said}"
    );
    assert_eq!(said.trim().lines().count(), 1, "one line: {said}");
    let right = info(vec![("PGPASSWORD", testkit::PG_PASSWORD.into())])
        .await
        .unwrap();
    assert!(right.status.success(), "{right:?}");
    let home = s.root.join(".pg-home");
    std::fs::create_dir_all(&home).unwrap();
    let pgpass = home.join(".pgpass");
    std::fs::write(
        &pgpass,
        format!(
            "127.0.0.1:{port}:*:{}:{}\n",
            testkit::PG_USER,
            testkit::PG_PASSWORD
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(&pgpass, std::fs::Permissions::from_mode(0o600)).unwrap();
    let from_file = info(vec![("HOME", home.display().to_string())])
        .await
        .unwrap();
    assert!(from_file.status.success(), "{from_file:?}");
}

/// What `hc store info --json` says in `s`'s project with `args` before
/// it, and its stderr.
async fn store_info(s: &Setup, args: &[&str]) -> (serde_json::Value, String) {
    let mut all = args.to_vec();
    all.extend(["store", "info", "--json"]);
    let out = s.hc(&all).output().await.unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{stderr}");
    (serde_json::from_slice(&out.stdout).unwrap(), stderr)
}

#[tokio::test(flavor = "multi_thread")]
async fn the_store_is_named_by_store_flag_the_persons_file_or_a_trusted_checkout() {
    let cluster = testkit::PgCluster::shared().unwrap();
    let s = Setup::new(json!({"turns": [reply(json!([text("unused")]), "end_turn")]})).await;
    let url = |schema: &str| {
        format!("{}&schema={schema}_{}", cluster.url, std::process::id())
            .replace("postgres://hc@", "postgres://hc:sekrit@")
    };
    // `--store`, on any command that opens the substrate
    let (info, said) = store_info(&s, &["--store", &url("flag")]).await;
    assert_eq!(info["backend"], "postgres", "{info}");
    assert!(
        info["location"].as_str().unwrap().contains("flag_"),
        "{info}"
    );
    assert!(!said.contains("sekrit") && !info.to_string().contains("sekrit"));
    let listed = s
        .hc(&["sessions", "--json", "--store", &url("flag")])
        .output()
        .await
        .unwrap();
    assert!(listed.status.success(), "{listed:?}");
    // … and refused where nothing is opened
    let refused = s
        .hc(&["trust", "--list", "--store", &url("flag")])
        .output()
        .await
        .unwrap();
    assert_eq!(refused.status.code(), Some(2), "{refused:?}");
    assert!(String::from_utf8_lossy(&refused.stderr).contains("opens none"));
    // … but a server's own `--store`, after its command, is the server's
    let server = s
        .hc(&["mcp", "add", "fs", "--", "echo", "--store", "x"])
        .output()
        .await
        .unwrap();
    assert!(server.status.success(), "{server:?}");
    // the person's file, for this project's path
    let user = s.root.join(".no-user-config/hermitcrab");
    std::fs::create_dir_all(&user).unwrap();
    let root = std::fs::canonicalize(&s.root).unwrap();
    std::fs::write(
        user.join("config.toml"),
        format!(
            "[projects.{:?}]\nstore = {:?}\n",
            root.display().to_string(),
            url("mine")
        ),
    )
    .unwrap();
    let (info, _) = store_info(&s, &[]).await;
    assert!(
        info["location"].as_str().unwrap().contains("mine_"),
        "{info}"
    );
    let config = s.hc(&["config", "--json"]).output().await.unwrap();
    let rows: serde_json::Value = serde_json::from_slice(&config.stdout).unwrap();
    let row = rows
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "store")
        .unwrap()
        .clone();
    assert!(row["value"].as_str().unwrap().contains("mine_"), "{row}");
    assert!(
        row["source"].as_str().unwrap().contains("user file"),
        "{row}"
    );
    assert!(!rows.to_string().contains("sekrit"), "no password: {rows}");
    std::fs::remove_file(user.join("config.toml")).unwrap();
    // a checkout's own file: ignored and said until the project is trusted
    let own = s.root.join(".hermitcrab/config.toml");
    let before = std::fs::read_to_string(&own).unwrap_or_default();
    std::fs::write(&own, format!("{before}\nstore = {:?}\n", url("theirs"))).unwrap();
    let (info, said) = store_info(&s, &[]).await;
    assert_eq!(info["backend"], "sqlite", "{info}");
    assert!(
        said.contains("names a store") && said.contains("hc trust") && !said.contains("sekrit"),
        "{said}"
    );
    let trusted = s.hc(&["trust"]).output().await.unwrap();
    let trusted_said = String::from_utf8_lossy(&trusted.stdout).into_owned();
    assert!(trusted.status.success(), "{trusted:?}");
    assert!(
        trusted_said.contains("store ="),
        "trust says what it allows: {trusted_said}"
    );
    let (info, said) = store_info(&s, &[]).await;
    assert_eq!(info["backend"], "postgres", "{info} {said}");
    assert!(
        info["location"].as_str().unwrap().contains("theirs_"),
        "{info}"
    );
    // a store that is not a server's URL is refused, saying where it came from
    let bad = s
        .hc(&["store", "info", "--store", "mysql://x"])
        .output()
        .await
        .unwrap();
    assert!(!bad.status.success());
    assert!(
        String::from_utf8_lossy(&bad.stderr).contains("--store is not a PostgreSQL URL"),
        "{bad:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn hc_store_copy_moves_the_record_to_postgres_and_back_and_the_requests_rebuild() {
    let cluster = testkit::PgCluster::shared().unwrap();
    let s = Setup::new(json!({"turns": [
        reply(json!([call("r1", "read", json!({"file_path": "a.txt"}))]), "tool_use"),
        reply(json!([text("it says hello")]), "end_turn"),
    ]}))
    .await;
    s.file("a.txt", "hello from the file\n");
    let ran = s
        .hc(&["run", "--allow", "read", "what does a.txt say?"])
        .output()
        .await
        .unwrap();
    assert!(ran.status.success(), "{ran:?}");
    let pg = format!("{}&schema=copy_{}", cluster.url, std::process::id());
    // SQLite → PostgreSQL
    let copied = s
        .hc(&["store", "copy", "--to", &pg])
        .output()
        .await
        .unwrap();
    let said = String::from_utf8_lossy(&copied.stdout).into_owned();
    assert!(copied.status.success(), "{copied:?}");
    let head = s.hc(&["store", "info", "--json"]).output().await.unwrap();
    let head: serde_json::Value = serde_json::from_slice(&head.stdout).unwrap();
    assert!(
        said.contains(&format!("copied {} commits", head["head"])),
        "{said} {head}"
    );
    assert!(
        said.contains("rebuilt 2 requests of 1 sessions on the copy: byte-identical"),
        "{said}"
    );
    let rebuilt = s
        .hc(&["trace", "--request", "2", "--store", &pg])
        .output()
        .await
        .unwrap();
    assert_eq!(
        rebuilt.stdout,
        s.sent()[1],
        "the copy rebuilds what was sent"
    );
    // never into a store that holds commits
    let again = s
        .hc(&["store", "copy", "--to", &pg])
        .output()
        .await
        .unwrap();
    assert!(!again.status.success());
    assert!(
        String::from_utf8_lossy(&again.stderr).contains("already holds"),
        "{again:?}"
    );
    // … and back: from the server into a SQLite file
    let back = s.root.join("back.db");
    let home = s
        .hc(&[
            "store",
            "copy",
            "--to",
            back.to_str().unwrap(),
            "--store",
            &pg,
        ])
        .output()
        .await
        .unwrap();
    let said = String::from_utf8_lossy(&home.stdout).into_owned();
    assert!(home.status.success(), "{home:?}");
    assert!(said.contains("rebuilt 2 requests of 1 sessions"), "{said}");
    // never into a file that is there already, nor from one that is not
    let again = s
        .hc(&[
            "store",
            "copy",
            "--to",
            back.to_str().unwrap(),
            "--store",
            &pg,
        ])
        .output()
        .await
        .unwrap();
    assert!(!again.status.success());
    assert!(
        String::from_utf8_lossy(&again.stderr).contains("exists"),
        "{again:?}"
    );
    let missing = s
        .hc(&["store", "copy", "--from", "no-such.db", "--store", &pg])
        .output()
        .await
        .unwrap();
    assert!(String::from_utf8_lossy(&missing.stderr).contains("does not exist"));
    assert!(!s.root.join("no-such.db").exists(), "no file made");
    // the project's own store filled from another
    let fresh = format!("{}&schema=copy_in_{}", cluster.url, std::process::id());
    let into = s
        .hc(&[
            "store",
            "copy",
            "--from",
            back.to_str().unwrap(),
            "--store",
            &fresh,
        ])
        .output()
        .await
        .unwrap();
    assert!(into.status.success(), "{into:?}");
    let rebuilt = s
        .hc(&["trace", "--request", "2", "--store", &fresh])
        .output()
        .await
        .unwrap();
    assert_eq!(rebuilt.stdout, s.sent()[1]);
}

/// The eventful session of `cli.rs` — a sub-agent, a denied call, and on a
/// second run a compaction — kept on PostgreSQL: every call of the
/// session rebuilt byte for byte from the server.
#[tokio::test(flavor = "multi_thread")]
async fn sub_agents_and_compaction_on_postgres_rebuild_byte_for_byte() {
    let cluster = testkit::PgCluster::shared().unwrap();
    let s = Setup::new(eventful_script()).await;
    let store = format!("{}&schema=eventful_{}", cluster.url, std::process::id());
    let first = s
        .run(&["--store", &store, "--allow", "agent", "ROOT tidy up"])
        .await;
    assert_eq!(first.code, 0, "{first:#?}");
    let second = s
        .run(&["--store", &store, "--continue", "--compact", "LATER go on"])
        .await;
    assert_eq!(second.code, 0, "{second:#?}");
    assert!(s.sessions().is_empty(), "nothing in the project's file");
    let listed = s.out(&["sessions", "--json", "--store", &store]).await;
    let listed: serde_json::Value = serde_json::from_str(&listed.stdout).unwrap();
    let session = listed[0]["id"].as_str().unwrap().to_owned();
    let sent = s.sent();
    // the session's own calls: all but the sub-agent's (the second sent)
    let own: Vec<&Vec<u8>> = sent
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != 1)
        .map(|(_, b)| b)
        .collect();
    assert_eq!(own.len(), 5);
    for (n, body) in own.iter().enumerate() {
        let rebuilt = s
            .hc(&[
                "trace",
                &session,
                "--request",
                &(n + 1).to_string(),
                "--store",
                &store,
            ])
            .output()
            .await
            .unwrap();
        assert!(rebuilt.status.success(), "{rebuilt:?}");
        assert!(
            rebuilt.stdout == **body,
            "call {} rebuilt byte for byte",
            n + 1
        );
    }
    let tree = s
        .out(&["trace", &session, "--json", "--store", &store])
        .await;
    let tree: serde_json::Value = serde_json::from_str(&tree.stdout).unwrap();
    let items = tree["items"].as_array().unwrap();
    assert!(items.iter().any(|n| n["type"] == "compaction"), "{tree:#}");
    let sub = items
        .iter()
        .find(|n| n["type"] == "tool-call" && n["program"] == "agent")
        .unwrap();
    assert!(
        sub["children"]
            .as_array()
            .unwrap()
            .iter()
            .any(|n| n["type"] == "answer" && n["text"] == "There are 2."),
        "{sub:#}"
    );
}

/// The server restarted while a run waits on the model: the run goes on
/// over new connections, ends well, and its record is whole.
#[tokio::test(flavor = "multi_thread")]
async fn a_run_goes_on_across_a_server_restart() {
    let mut cluster = testkit::PgCluster::start().unwrap();
    let s = Setup::new(json!({"turns": [
        reply(json!([call("r1", "read", json!({"file_path": "a.txt"}))]), "tool_use"),
        {"reply": {"content": [call("r2", "read", json!({"file_path": "a.txt"}))], "stop_reason": "tool_use"},
         "pace": {"first_byte_delay_ms": 4000}},
        reply(json!([text("read it twice")]), "end_turn"),
    ]}))
    .await;
    s.file("a.txt", "hello\n");
    let store = format!("{}&schema=restart", cluster.url("postgres"));
    let run = s
        .hc(&[
            "run",
            "--store",
            &store,
            "--allow",
            "read",
            "read a.txt twice",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // once the second request is being answered, the server goes away
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while s.fake.requests_to("/v1/messages").len() < 2 {
        assert!(std::time::Instant::now() < deadline, "no second request");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    cluster.stop();
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    cluster.resume().unwrap();
    let ran = run.wait_with_output().await.unwrap();
    let said = String::from_utf8_lossy(&ran.stderr).into_owned();
    assert!(ran.status.success(), "{said}");
    assert!(String::from_utf8_lossy(&ran.stdout).contains("read it twice"));
    let rebuilt = s
        .hc(&["trace", "--request", "3", "--store", &store])
        .output()
        .await
        .unwrap();
    assert!(rebuilt.status.success(), "{rebuilt:?}");
    assert_eq!(rebuilt.stdout, s.sent()[2], "the record is whole");
}
