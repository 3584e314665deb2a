//! The holes of one machine: a replay past the session's calls, a
//! project that swallows the repositories under it, git settings on a
//! section's line, the tools' temporary directory.

use crate::common::*;
use serde_json::json;

#[tokio::test]
async fn a_replay_past_the_sessions_calls_is_refused_at_once() {
    let s = Setup::new(json!({"turns": [reply(json!([text("hello")]), "end_turn")]})).await;
    let ran = s.run(&["say hello"]).await;
    assert_eq!(ran.code, 0, "{ran:?}");
    let session = s.sessions().pop().unwrap();
    let refused = s.out(&["replay", &session, "--at", "4000000000"]).await;
    assert_eq!(refused.code, 2, "{refused:?}");
    assert!(
        refused.stderr.contains("has 1 model call") && refused.stderr.contains("--at takes 1 to 1"),
        "{refused:?}"
    );
    let zero = s.out(&["replay", &session, "--at", "0"]).await;
    assert_eq!(zero.code, 2, "{zero:?}");
    // refused before anything ran: no replayed session was made
    assert_eq!(s.sessions().len(), 1);
    let through = s.out(&["replay", &session, "--at", "1"]).await;
    assert_eq!(through.code, 0, "{through:?}");
}

/// `git ARGS` in `dir`, as a person with no git configuration of their own.
fn git(dir: &std::path::Path, args: &[&str]) -> std::process::Output {
    let out = std::process::Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {out:?}");
    out
}

#[tokio::test(flavor = "multi_thread")]
async fn a_git_setting_on_its_sections_line_is_taken_out_too() {
    // git honours `[core] fsmonitor = CMD` written on the header's line
    let plant = "printf '[core] fsmonitor = \"touch $PWD/../../fsmonitor-ran; false\"\\n' \
                 >> .git/config";
    let s = Setup::new(json!({"turns": [
        reply(json!([call("t1", "shell", json!({"command": format!("cd vendor/lib && {plant}")}))]), "tool_use"),
        reply(json!([text("done")]), "end_turn"),
    ]}))
    .await;
    git(&s.root, &["init", "-q"]);
    std::fs::create_dir_all(s.root.join("vendor/lib")).unwrap();
    git(&s.root.join("vendor/lib"), &["init", "-q"]);
    let ran = s.run(&["--permission-mode", "bypass", "go"]).await;
    assert_eq!(ran.code, 0, "{ran:#?}");
    assert!(ran.stderr.contains("core.fsmonitor"), "{}", ran.stderr);
    let lib = s.root.join("vendor/lib");
    let listed = git(&lib, &["config", "--file", ".git/config", "--list"]);
    assert!(
        !String::from_utf8_lossy(&listed.stdout).contains("fsmonitor"),
        "{listed:?}"
    );
    git(&lib, &["status"]);
    assert!(!s.root.join("fsmonitor-ran").exists());
}

/// `hc ARGS` in `dir` as a person whose home is `home`, talking to `s`'s
/// fake model, with no terminal.
async fn hc_at_home(
    s: &Setup,
    home: &std::path::Path,
    dir: &std::path::Path,
    args: &[&str],
) -> Ran {
    let mut command = s.hc(args);
    command
        .current_dir(dir)
        .env("HOME", home)
        .env("XDG_CONFIG_HOME", home.join(".config"))
        .env("XDG_DATA_HOME", home.join(".local/share"));
    Ran::of(command).await
}

#[tokio::test(flavor = "multi_thread")]
async fn a_project_in_the_home_directory_does_not_swallow_the_repositories_under_it() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let key = root.join("home/.ssh/id_rsa");
    let script = json!({"turns": [
        reply(json!([call("t1", "read", json!({"file_path": key}))]), "tool_use"),
        reply(json!([text("done")]), "end_turn"),
    ]});
    let fake = testkit::FakeModel::start(testkit::Script::from_json(&script.to_string()).unwrap())
        .await
        .unwrap();
    let s = Setup { dir, root, fake };
    let home = s.root.join("home");
    let repo = home.join("repo");
    std::fs::create_dir_all(home.join(".ssh")).unwrap();
    std::fs::write(home.join(".ssh/id_rsa"), "SECRET-KEY-MATERIAL").unwrap();
    std::fs::create_dir_all(repo.join("src")).unwrap();
    git(&repo, &["init", "-q"]);
    // once, long ago, a project was made in the home directory itself
    let made = hc_at_home(&s, &home, &home, &["init"]).await;
    assert_eq!(made.code, 0, "{made:?}");
    let ran = hc_at_home(&s, &home, &repo.join("src"), &["run", "look around"]).await;
    assert_eq!(ran.code, 0, "{ran:?}");
    // the repository is a project of its own, and the key is outside it
    assert!(repo.join(".hermitcrab").is_dir(), "{ran:?}");
    assert!(ran.stderr.contains("root of the git repository"), "{ran:?}");
    for body in s.sent() {
        assert!(
            !String::from_utf8_lossy(&body).contains("SECRET-KEY-MATERIAL"),
            "the key reached the model"
        );
    }
    let sessions = hc_at_home(&s, &home, &repo, &["sessions"]).await;
    assert_eq!(sessions.code, 0, "{sessions:?}");
    // nor does it swallow a directory under it that is no repository
    let notes = home.join("notes");
    std::fs::create_dir_all(&notes).unwrap();
    let listed = hc_at_home(&s, &home, &notes, &["sessions"]).await;
    assert_ne!(listed.code, 0, "{listed:?}");
    assert!(listed.stderr.contains("no project here"), "{listed:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_home_directory_is_not_made_a_project_unasked() {
    let s = Setup::bare(json!({"turns": [reply(json!([text("hi")]), "end_turn")]})).await;
    let home = s.root.join("home");
    std::fs::create_dir_all(&home).unwrap();
    let refused = hc_at_home(&s, &home, &home, &["run", "hello"]).await;
    assert_eq!(refused.code, 2, "{refused:?}");
    assert!(
        refused.stderr.contains("your home directory") && refused.stderr.contains("hc init"),
        "{refused:?}"
    );
    assert!(!home.join(".hermitcrab").exists());
    assert!(s.sent().is_empty());
    // a directory under it is made a project as ever
    let work = home.join("notes");
    std::fs::create_dir_all(&work).unwrap();
    let ran = hc_at_home(&s, &home, &work, &["run", "hello"]).await;
    assert_eq!(ran.code, 0, "{ran:?}");
    assert!(work.join(".hermitcrab").is_dir());
}

#[tokio::test(flavor = "multi_thread")]
async fn another_users_directory_in_the_temp_dir_is_never_the_tools() {
    use std::os::unix::fs::{MetadataExt as _, PermissionsExt as _};
    let s = Setup::new(json!({"turns": [
        reply(json!([call("t1", "shell", json!({"command": "echo \"tmp=$TMPDIR\" && echo private > \"$TMPDIR/left.txt\""}))]), "tool_use"),
        reply(json!([text("done")]), "end_turn"),
    ]}))
    .await;
    // another local user made the directory hc would use, open to all
    let shared = s.root.join("shared-tmp");
    std::fs::create_dir(&shared).unwrap();
    std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o1777)).unwrap();
    let me = std::fs::metadata("/proc/self").unwrap().uid();
    let squatted = shared.join(format!("hermitcrab-{me}"));
    std::fs::create_dir(&squatted).unwrap();
    std::fs::set_permissions(&squatted, std::fs::Permissions::from_mode(0o777)).unwrap();
    let nobody = 65534;
    if me != 0 {
        // (only root can give a directory to another user)
        return;
    }
    std::os::unix::fs::chown(&squatted, Some(nobody), Some(nobody)).unwrap();
    let ran = s
        .out_with(
            &[("TMPDIR", shared.to_str().unwrap())],
            &["run", "--allow", "shell", "use a temp file"],
        )
        .await;
    assert_eq!(ran.code, 0, "{ran:?}");
    let session = s.sessions().pop().unwrap();
    let result = &s.of_type(&session, "tool-result")[0];
    assert_eq!(result["is_error"], false, "{result}");
    let said = result.to_string();
    let tmp = said
        .split("tmp=")
        .nth(1)
        .and_then(|t| t.split("\\n").next())
        .unwrap()
        .to_owned();
    let tmp = std::path::PathBuf::from(tmp);
    assert!(!tmp.starts_with(&squatted), "{tmp:?}");
    assert!(tmp.starts_with(&shared), "{tmp:?}");
    assert_eq!(std::fs::read_dir(&squatted).unwrap().count(), 0);
    // the directory it used instead is this user's alone
    let used = tmp.parent().unwrap();
    let meta = std::fs::metadata(used).unwrap();
    assert_eq!((meta.uid(), meta.mode() & 0o777), (me, 0o700));
}
