//! Small things that were real: what a model or a prompt writes cannot
//! drive the terminal, a bad argument is a usage error, a prompt too
//! large to keep leaves nothing behind, and the store is its owner's.

use crate::common::*;
use serde_json::json;
use std::os::unix::fs::PermissionsExt;

/// Sequences that would retitle the window, clear the screen, hide a
/// link and reverse text.
const NASTY: &str =
    "\x1b]0;owned\x07\x1b[2J\x1b]8;;http://evil\x1b\\link\x1b]8;;\x1b\\ \u{202e}txt.exe";

#[tokio::test(flavor = "multi_thread")]
async fn escape_sequences_from_the_model_or_a_prompt_are_shown_written_out() {
    let s = Setup::new(json!({"turns": [
        reply(json!([text(&format!("answer {NASTY}")),
            call("t1", "glob", json!({"pattern": format!("*{NASTY}")}))]), "tool_use"),
        reply(json!([text(&format!("done {NASTY}"))]), "end_turn"),
    ]}))
    .await;
    let prompt = format!("title {NASTY}");
    let ran = s.run(&[&prompt]).await;
    assert_eq!(ran.code, 0, "{ran:?}");
    let session = s.sessions().pop().unwrap();
    let trace = s.out(&["trace", &session, "--full"]).await;
    let sessions = s.out(&["sessions"]).await;
    for (what, out) in [
        ("run stdout", &ran.stdout),
        ("run stderr", &ran.stderr),
        ("trace", &trace.stdout),
        ("sessions", &sessions.stdout),
    ] {
        assert!(
            !out.contains('\x1b') && !out.contains('\x07'),
            "{what}: {out:?}"
        );
        assert!(!out.contains('\u{202e}'), "{what}: {out:?}");
        assert!(
            out.contains("\\x1b]0;owned\\x07"),
            "{what} shows them: {out}"
        );
    }
    assert!(
        ran.stdout.contains("answer \\x1b]0;owned"),
        "{}",
        ran.stdout
    );
    assert!(ran.stdout.contains("\\u{202e}txt.exe"), "{}", ran.stdout);
    // What is stored is what was said, byte for byte.
    let prompts = s.of_type(&session, "prompt");
    assert_eq!(prompts[0]["text"], prompt.as_str());
}

#[test]
fn an_argument_that_is_not_utf8_is_a_usage_error() {
    use std::os::unix::ffi::OsStrExt;
    let dir = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(HC)
        .arg("run")
        .arg(std::ffi::OsStr::from_bytes(b"fix \xff\xfe"))
        .current_dir(dir.path())
        .env("XDG_CONFIG_HOME", dir.path().join("config"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("UTF-8"), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_prompt_too_large_to_keep_is_refused_and_leaves_no_session() {
    let s = Setup::new(json!({"turns": [reply(json!([text("hi")]), "end_turn")]})).await;
    let kept = s.run(&["a first, small run"]).await;
    assert_eq!(kept.code, 0, "{kept:?}");
    let before = s.sessions();
    assert_eq!(before.len(), 1);
    let big = "x".repeat(10_000_000);
    let done = s.piped(&["run"], big.as_bytes()).await;
    assert_eq!(done.status.code(), Some(2), "{done:?}");
    let stderr = String::from_utf8_lossy(&done.stderr);
    assert!(stderr.contains("save it to a file"), "{stderr}");
    assert_eq!(s.sessions(), before, "no session was made for it");
    assert!(s.sent().len() <= 1, "nothing was sent for it");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_store_and_its_directory_are_readable_by_their_owner_only() {
    let s = Setup::new(json!({"turns": [reply(json!([text("hi")]), "end_turn")]})).await;
    let ran = s.run(&["hello"]).await;
    assert_eq!(ran.code, 0, "{ran:?}");
    let mode = |rel: &str| {
        std::fs::metadata(s.root.join(rel))
            .unwrap()
            .permissions()
            .mode()
            & 0o777
    };
    assert_eq!(mode(".hermitcrab"), 0o700);
    assert_eq!(mode(".hermitcrab/substrate.db"), 0o600);
    assert_eq!(mode(".hermitcrab/substrate.db-wal"), 0o600);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_store_made_readable_before_is_made_private_again() {
    let s = Setup::new(json!({"turns": [reply(json!([text("hi")]), "end_turn")]})).await;
    let db = s.root.join(".hermitcrab/substrate.db");
    std::fs::set_permissions(&db, std::fs::Permissions::from_mode(0o644)).unwrap();
    let ran = s.run(&["hello"]).await;
    assert_eq!(ran.code, 0, "{ran:?}");
    assert_eq!(
        std::fs::metadata(&db).unwrap().permissions().mode() & 0o777,
        0o600
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn escape_sequences_from_files_or_the_api_are_shown_written_out_too() {
    let s = Setup::new(json!({"turns": [
        {"error": {"status": 400, "message": format!("bad {NASTY}")}},
    ]}))
    .await;
    let clean = |what: &str, out: &str| {
        assert!(
            !out.contains('\x1b') && !out.contains('\x07'),
            "{what}: {out:?}"
        );
    };
    // A hook's command and a model name in an untrusted project's file.
    s.file(
        ".hermitcrab/config.toml",
        "model = \"m\\u001b]0;owned\\u0007\"\n[[hooks]]\nevent = \"pre-tool\"\ncommand = \"echo \\u001b[2J\"\n",
    );
    let ran = s.run(&["hello"]).await;
    assert_ne!(ran.code, 0);
    clean("run stderr (the trust line, the API's error)", &ran.stderr);
    assert!(ran.stderr.contains("\\x1b"), "{}", ran.stderr);
    let config = s.out(&["config"]).await;
    clean("config", &config.stdout);
    // A key hc does not know, named with an escape.
    s.file(".hermitcrab/config.toml", "\"k\\u001b]0;x\\u0007\" = 1\n");
    let refused = s.out(&["config"]).await;
    assert_eq!(refused.code, 2, "{refused:?}");
    clean("unknown key", &refused.stderr);
}

/// A built-in tool is not exec'd: `hc`'s own zygote forks it, contained
/// (its command line is the zygote's), and it is held to the tool's
/// boundaries as before: `shell` writes in the project, not outside it.
#[tokio::test(flavor = "multi_thread")]
async fn a_built_in_tool_is_forked_from_hcs_zygote_and_still_contained() {
    let outside = tempfile::tempdir().unwrap();
    let out = outside.path().join("escaped");
    let command = format!(
        "tr '\\0' ' ' < /proc/$PPID/cmdline; echo; touch inside; touch {} || echo refused",
        out.display()
    );
    let s = Setup::new(json!({"turns": [
        reply(json!([call("t1", "shell", json!({"command": command}))]), "tool_use"),
        reply(json!([text("done")]), "end_turn"),
    ]}))
    .await;
    let ran = s.run(&["--permission-mode", "bypass", "go"]).await;
    assert_eq!(ran.code, 0, "{ran:?}");
    let session = s.sessions().pop().unwrap();
    let result = &s.of_type(&session, "tool-result")[0];
    let text = result["text"].as_str().unwrap();
    assert!(text.contains("hc __contain --zygote"), "{text}");
    assert!(text.contains("refused"), "{text}");
    assert!(s.root.join("inside").exists() && !out.exists());
}

/// A block's text is the model's: `hc blocks` writes its control
/// characters out instead of sending them to the terminal.
#[tokio::test(flavor = "multi_thread")]
async fn hc_blocks_shows_escape_sequences_written_out() {
    let s = Setup::new(json!({"turns": [reply(json!([text("ok")]), "end_turn")]})).await;
    s.commit(json!({"chunks": [{"id": "block/hermitcrab/notes",
        "body": {"name": "notes", "decimal": 1, "tree": {"_": format!("top {NASTY}"), "1": {"_": format!("child {NASTY}")}}}}]}))
        .await;
    for args in [
        &["blocks", "show", "notes"][..],
        &["blocks", "show", "notes", "1"][..],
    ] {
        let out = s.out(args).await;
        assert_eq!(out.code, 0, "{out:?}");
        assert!(
            !out.stdout.contains('\x1b') && !out.stdout.contains('\u{202e}'),
            "{out:?}"
        );
        assert!(out.stdout.contains("\\x1b]0;owned"), "{out:?}");
    }
}
