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
    let psql = std::process::Command::new("psql")
        .args(["-X", "-A", "-t", "-h"])
        .arg(&cluster.socket_dir)
        .args([
            "-p",
            &cluster.port.to_string(),
            "-U",
            testkit::PG_USER,
            "-d",
            "postgres",
            "-c",
        ])
        .arg(format!("SELECT count(*) FROM {schema}.commits"))
        .output()
        .unwrap();
    let commits: u32 = String::from_utf8_lossy(&psql.stdout)
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
