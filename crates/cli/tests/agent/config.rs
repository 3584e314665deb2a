//! `hc config` and where settings come from: flags, the environment, a
//! `.env`, the project's and the user's files.

use crate::common::*;
use serde_json::{Value, json};

#[tokio::test(flavor = "multi_thread")]
async fn a_dotenv_file_gives_only_keys_and_never_a_setting() {
    let s =
        Setup::new(json!({"turns": [reply(json!([text("from the default")]), "end_turn")]})).await;
    s.file(
        ".env",
        "# settings for this project\nHC_MODEL=claude-haiku-4-5\nHC_PERMISSION_MODE=bypass\nLD_PRELOAD=/tmp/evil.so\nOPENAI_API_KEY=sk-from-dotenv\n",
    );
    let ran = s.out(&["config", "--json"]).await;
    assert_eq!(ran.code, 0, "{ran:#?}");
    let rows: Vec<Value> = serde_json::from_str(&ran.stdout).unwrap();
    let row = |name: &str| rows.iter().find(|r| r["name"] == name).unwrap().clone();
    assert_eq!(row("model")["source"], "default", "{rows:#?}");
    assert_eq!(row("permission_mode")["value"], "default");
    assert_eq!(row("OPENAI_API_KEY")["value"], "set", "keys come from .env");
    assert!(
        ran.stderr
            .contains("HC_MODEL, HC_PERMISSION_MODE, LD_PRELOAD")
            && ran.stderr.contains("ignored"),
        "{}",
        ran.stderr
    );
    let run = s.run(&["hello"]).await;
    assert_eq!(run.code, 0, "{run:#?}");
    let sent: Value = serde_json::from_slice(&s.sent()[0]).unwrap();
    assert_eq!(
        sent["model"],
        model::catalog::DEFAULT_MODEL,
        "the .env model is not used"
    );
    s.file(".env", "this is not a setting\n");
    let bad = s.out(&["config"]).await;
    assert_ne!(bad.code, 0);
    assert!(bad.stderr.contains(".env"), "{}", bad.stderr);
}

#[tokio::test(flavor = "multi_thread")]
async fn config_says_where_each_setting_came_from_and_never_prints_a_secret() {
    let s = Setup::new(json!({"turns": [reply(json!([text("unused")]), "end_turn")]})).await;
    s.file(
        ".hermitcrab/config.toml",
        "model = \"claude-opus-4-5\"\n[permissions]\nallow = [\"shell(git status)\"]\n\n[[hooks]]\nevent = \"pre-tool\"\ncommand = \"true\"\n",
    );
    s.file(
        ".no-user-config/hermitcrab/config.toml",
        "model = \"claude-haiku-4-5\"\nmax_budget_usd = 3.5\n",
    );
    // Its allow rule and hook are the project's own: trusted, they apply.
    s.trust();
    let mut command = s.hc(&["config", "--json"]);
    command
        .env("HC_MAX_TURNS", "7")
        .env("ANTHROPIC_API_KEY", "sk-ant-SECRET-VALUE");
    let ran = command.output().await.unwrap();
    let stdout = String::from_utf8_lossy(&ran.stdout);
    assert!(ran.status.success(), "{ran:?}");
    assert!(!stdout.contains("SECRET"), "{stdout}");
    let rows: Vec<Value> = serde_json::from_str(&stdout).unwrap();
    let row = |name: &str| {
        rows.iter()
            .find(|r| r["name"] == name)
            .unwrap_or_else(|| panic!("{name}: {stdout}"))
    };
    assert_eq!(row("model")["value"], "claude-opus-4-5");
    assert!(
        row("model")["source"].as_str().unwrap().contains("project"),
        "{stdout}"
    );
    assert_eq!(row("max_turns")["value"], 7);
    assert!(
        row("max_turns")["source"]
            .as_str()
            .unwrap()
            .contains("HC_MAX_TURNS"),
        "{stdout}"
    );
    assert!(
        row("permission_mode")["source"]
            .as_str()
            .unwrap()
            .contains("default"),
        "{stdout}"
    );
    assert_eq!(
        row("max_budget_usd")["value"],
        3.5,
        "the user file, under the project's"
    );
    assert!(
        row("max_budget_usd")["source"]
            .as_str()
            .unwrap()
            .starts_with("user file"),
        "{stdout}"
    );
    let allow = row("permissions.allow");
    assert_eq!(allow["value"], "shell(git status)");
    assert_eq!(row("ANTHROPIC_API_KEY")["value"], "set");
    assert_eq!(row("hooks")["value"]["command"], "true", "{stdout}");
    let flagged = s
        .out(&[
            "config",
            "--json",
            "--permission-mode",
            "plan",
            "--max-turns",
            "4",
        ])
        .await;
    let rows: Vec<Value> = serde_json::from_str(&flagged.stdout).unwrap();
    let mode = rows
        .iter()
        .find(|r| r["name"] == "permission_mode")
        .unwrap();
    assert_eq!(mode["value"], "plan");
    assert_eq!(mode["source"], "flag --permission-mode");
    let turns = rows.iter().find(|r| r["name"] == "max_turns").unwrap();
    assert_eq!(
        (turns["value"].as_i64(), turns["source"].as_str()),
        (Some(4), Some("flag --max-turns"))
    );
    let bad = s.out(&["config", "--permission-mode", "sometimes"]).await;
    assert_eq!(bad.code, 1);
    assert!(
        bad.stderr.contains("--permission-mode") && bad.stderr.contains("accept-edits"),
        "{}",
        bad.stderr
    );
    let mut text = s.hc(&["config"]);
    text.env("ANTHROPIC_API_KEY", "sk-ant-SECRET-VALUE");
    let text = text.output().await.unwrap();
    assert!(!String::from_utf8_lossy(&text.stdout).contains("SECRET"));
    let mut edit = s.hc(&["config", "--edit"]);
    edit.env("EDITOR", "sed -i s/claude-opus-4-5/claude-haiku-4-5/");
    let edited = edit.output().await.unwrap();
    assert!(edited.status.success(), "{edited:?}");
    assert!(String::from_utf8_lossy(&edited.stdout).contains("claude-haiku-4-5"));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_mistyped_setting_is_an_error_naming_file_line_and_the_closest_key() {
    let s = Setup::new(json!({"turns": [reply(json!([text("unused")]), "end_turn")]})).await;
    let cases = [
        (
            "model = \"claude-haiku-4-5\"\n\n[permisions]\ndeny = [\"shell(rm:*)\"]\n",
            ":3: unknown setting `permisions`; did you mean `permissions`?",
        ),
        (
            "modle = \"claude-haiku-4-5\"\n",
            ":1: unknown setting `modle`; did you mean `model`?",
        ),
        (
            "[permissions]\ndeny = [\"shell(rm:*)\"]\ndenny = [\"read(secrets/**)\"]\n",
            ":3: unknown setting `permissions.denny`; did you mean `deny`?",
        ),
        (
            "[[hooks]]\nevent = \"pre-tool\"\ncomand = \"true\"\n",
            ":3: unknown setting `hooks.comand`; did you mean `command`?",
        ),
        (
            "model = \"m\"\n\"permisions\" = { deny = [\"shell(rm:*)\"] }\n",
            ":2: unknown setting `permisions`; did you mean `permissions`?",
        ),
        (
            "model = \"m\"\n\npermissions = { dney = [\"read(x)\"] }\n",
            ":3: unknown setting `permissions.dney`; did you mean `deny`?",
        ),
    ];
    for (text, said) in cases {
        s.file(".hermitcrab/config.toml", text);
        let ran = s.run(&["go"]).await;
        assert_eq!(ran.code, 2, "{text}: {ran:#?}");
        assert!(
            ran.stderr.contains("config.toml") && ran.stderr.contains(said),
            "{text}: {}",
            ran.stderr
        );
    }
    assert!(s.sent().is_empty(), "no run with a mistyped setting");
    // The user's file too.
    s.file(".hermitcrab/config.toml", "");
    s.file(".no-user-config/hermitcrab/config.toml", "max_turn = 3\n");
    let ran = s.out(&["config"]).await;
    assert_eq!(ran.code, 2, "{ran:#?}");
    assert!(
        ran.stderr.contains("did you mean `max_turns`?"),
        "{}",
        ran.stderr
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_first_run_in_a_repository_makes_the_project_at_its_root() {
    let s = Setup::new(json!({"turns": [reply(json!([text("done")]), "end_turn")]})).await;
    // A repository with no project in it or above it.
    let elsewhere = tempfile::tempdir().unwrap();
    let repo_copy = elsewhere.path().join("repo");
    std::fs::create_dir_all(repo_copy.join("src/deep")).unwrap();
    std::fs::create_dir_all(repo_copy.join(".git")).unwrap();
    let mut command = s.hc(&["run", "hello"]);
    command.current_dir(repo_copy.join("src/deep"));
    let ran = command.output().await.unwrap();
    let stderr = String::from_utf8_lossy(&ran.stderr);
    assert_eq!(ran.status.code(), Some(0), "{stderr}");
    assert!(repo_copy.join(".hermitcrab").is_dir(), "{stderr}");
    assert!(!repo_copy.join("src/deep/.hermitcrab").exists());
    assert!(
        stderr.contains("made a project at") && stderr.contains("root of the git repository"),
        "{stderr}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_checkout_cannot_set_how_soon_other_hosts_take_this_machines_runs() {
    let s = Setup::new(json!({"turns": [reply(json!([text("unused")]), "end_turn")]})).await;
    s.file(".hermitcrab/config.toml", "lease_seconds = 2\n");
    let out = s.run(&["hello"]).await;
    assert_ne!(out.code, 0, "{out:?}");
    assert!(
        out.stderr
            .contains("`lease_seconds` is this machine's own setting"),
        "{out:?}"
    );
    assert!(s.sent().is_empty(), "no request");
    // the person's own file may
    let mine = s.root.join(".no-user-config/hermitcrab/config.toml");
    std::fs::create_dir_all(mine.parent().unwrap()).unwrap();
    std::fs::write(&mine, "lease_seconds = 30\n").unwrap();
    std::fs::remove_file(s.root.join(".hermitcrab/config.toml")).unwrap();
    let out = s.run(&["hello"]).await;
    assert_eq!(out.code, 0, "{out:?}");
}
