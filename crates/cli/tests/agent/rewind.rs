//! Rewind, fork: every file effect of every tool — `write`, `edit`, and
//! what shell commands did (`sed -i`, `mv`, `chmod`, `rm -rf`, a binary) —
//! put back byte for byte, modes too, to each point of a session; a file
//! changed since is never overwritten; a rewind is undone; the
//! conversation forked where it was rewound.

use crate::common::*;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::path::Path;

/// Every path of the project but hc's own and the test's, with its mode
/// and content (a symlink's target).
fn tree_of(root: &Path) -> BTreeMap<String, (u32, Vec<u8>)> {
    let mut out = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let path = entry.path();
            let rel = path
                .strip_prefix(root)
                .unwrap()
                .to_string_lossy()
                .into_owned();
            if rel.starts_with(".hermitcrab") || rel.starts_with(".no-user") || rel == ".git" {
                continue;
            }
            let meta = std::fs::symlink_metadata(&path).unwrap();
            let content = if meta.is_dir() {
                stack.push(path.clone());
                Vec::new()
            } else if meta.file_type().is_symlink() {
                std::fs::read_link(&path)
                    .unwrap()
                    .into_os_string()
                    .into_encoded_bytes()
            } else {
                std::fs::read(&path).unwrap()
            };
            out.insert(rel, (std::os::unix::fs::MetadataExt::mode(&meta), content));
        }
    }
    out
}

pub fn shell(id: &str, command: &str) -> Value {
    reply(
        json!([call(id, "shell", json!({"command": command}))]),
        "tool_use",
    )
}

pub fn done(n: u32) -> Value {
    reply(json!([text(&format!("done {n}"))]), "end_turn")
}

/// Five prompts, each run on its own (`hc run`, then `--resume`), mixing
/// write, edit, `sed -i`, `mv`, `chmod`, a binary, `mkdir -p`, `rm -rf`.
fn five_prompts() -> Value {
    json!({"turns": [
        reply(json!([call("w1", "write", json!({"file_path": "a.txt", "content": "one\n"}))]), "tool_use"),
        done(1),
        shell("s2", "mkdir -p docs/deep && echo d > docs/deep/x.md && echo r > run.sh && printf 'x=1\\n' > src.txt"),
        done(2),
        shell("s3", "sed -i 's/one/two/' a.txt && mv src.txt moved.txt && chmod 755 run.sh && printf '\\000\\001\\377' > bin.dat && ln -s a.txt link"),
        done(3),
        reply(json!([call("r4", "read", json!({"file_path": "a.txt"}))]), "tool_use"),
        reply(json!([call("e4", "edit", json!({"file_path": "a.txt", "old_string": "two", "new_string": "three"}))]), "tool_use"),
        done(4),
        shell("s5", "rm -rf docs && rm a.txt && chmod 600 kept.txt"),
        done(5),
    ]})
}

pub async fn ok(s: &Setup, args: &[&str]) -> Ran {
    let ran = s.out(args).await;
    assert_eq!(ran.code, 0, "hc {args:?}: {ran:#?}");
    ran
}

/// Two prompts' turns: `a.txt` written, then `b.txt`, each answered.
pub fn two_writes() -> Value {
    let write = |id: &str, file: &str| {
        reply(
            json!([call(
                id,
                "write",
                json!({"file_path": file, "content": "x\n"})
            )]),
            "tool_use",
        )
    };
    json!({"turns": [write("w1", "a.txt"), done(1), write("w2", "b.txt"), done(2), done(3)]})
}

/// A session of two prompts, `first` then `second` (each its own `hc
/// run`): its id.
pub async fn first_and_second(s: &Setup) -> String {
    ok(s, &["run", "--permission-mode", "bypass", "first"]).await;
    let session = s.sessions()[0].clone();
    let resume = [
        "run",
        "--permission-mode",
        "bypass",
        "--resume",
        &session,
        "second",
    ];
    ok(s, &resume).await;
    session
}

/// The session's turns as `hc rewind --list --json` gives them.
async fn turns(s: &Setup, session: &str) -> Vec<Value> {
    let ran = ok(s, &["rewind", session, "--list", "--json"]).await;
    serde_json::from_str::<Value>(&ran.stdout)
        .unwrap()
        .as_array()
        .unwrap()
        .clone()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_rewind_puts_back_whatever_any_tool_did_to_each_point_and_is_undone() {
    let s = Setup::new(five_prompts()).await;
    s.file("kept.txt", "kept\n");
    let mut copies = Vec::new();
    let mut session = String::new();
    for k in 1..=5 {
        copies.push(tree_of(&s.root));
        let prompt = format!("step {k}");
        let mut args = vec!["run", "--permission-mode", "bypass"];
        if k > 1 {
            args.extend(["--resume", session.as_str()]);
        }
        args.push(&prompt);
        ok(&s, &args).await;
        session = s.sessions()[0].clone();
    }
    let last = tree_of(&s.root);
    assert!(
        last.contains_key("bin.dat") && !last.contains_key("docs"),
        "{last:?}"
    );
    // the list: each turn and the files it changed (a shell's too)
    let listed = turns(&s, &session).await;
    assert_eq!(listed.len(), 11, "{listed:#?}");
    let files = |n: usize| listed[n - 1]["files"].clone();
    assert_eq!(files(3), json!(["docs/deep/x.md", "run.sh", "src.txt"]));
    assert_eq!(
        files(5),
        json!(["a.txt", "bin.dat", "link", "moved.txt", "run.sh", "src.txt"])
    );
    assert_eq!(files(10), json!(["a.txt", "docs/deep/x.md", "kept.txt"]));
    // back to before each prompt, newest first, on the same session
    for k in (1..=5).rev() {
        let ran = if k == 3 {
            // a turn as hc trace numbers it: the first answer to prompt 3
            let first = listed.iter().find(|t| t["prompt"] == json!(3)).unwrap();
            let n = first["turn"].to_string();
            ok(&s, &["rewind", &session, "--to", &n, "--code"]).await
        } else {
            ok(
                &s,
                &["rewind", &session, "--prompt", &k.to_string(), "--code"],
            )
            .await
        };
        assert!(ran.stdout.contains("put back"), "{ran:#?}");
        assert_eq!(tree_of(&s.root), copies[k - 1], "before prompt {k}");
    }
    // the last rewind undone: as it was before it
    ok(&s, &["rewind", &session, "--undo"]).await;
    assert_eq!(tree_of(&s.root), copies[1]);
    // a file the person changed since is never overwritten
    std::fs::write(s.root.join("a.txt"), "mine\n").unwrap();
    let refused = s
        .out(&["rewind", &session, "--prompt", "1", "--code"])
        .await;
    assert_eq!(refused.code, 1, "{refused:#?}");
    assert!(
        refused.stderr.contains("a.txt") && refused.stderr.contains("--force"),
        "{refused:#?}"
    );
    assert_eq!(
        std::fs::read_to_string(s.root.join("a.txt")).unwrap(),
        "mine\n"
    );
    ok(
        &s,
        &["rewind", &session, "--prompt", "1", "--code", "--force"],
    )
    .await;
    assert_eq!(tree_of(&s.root), copies[0]);
}

#[tokio::test(flavor = "multi_thread")]
async fn the_conversation_is_forked_where_it_is_rewound_and_goes_on_from_there() {
    let s = Setup::new(json!({"turns": [
        reply(json!([call("w1", "write", json!({"file_path": "a.txt", "content": "one\n"}))]), "tool_use"),
        done(1),
        reply(json!([call("w2", "write", json!({"file_path": "b.txt", "content": "two\n"}))]), "tool_use"),
        done(2),
        done(3),
        done(4),
    ]}))
    .await;
    let session = first_and_second(&s).await;
    assert!(s.root.join("b.txt").exists());
    // files and conversation: b.txt gone, a new session up to before prompt 2
    let ran = ok(&s, &["rewind", &session, "--prompt", "2", "--both"]).await;
    assert!(!s.root.join("b.txt").exists() && s.root.join("a.txt").exists());
    let forked = ran
        .stdout
        .split_whitespace()
        .find(|w| w.starts_with("s_"))
        .unwrap()
        .trim_end_matches(|c: char| !c.is_alphanumeric())
        .to_owned();
    ok(&s, &["run", "--resume", &forked, "instead"]).await;
    let sent = s.sent();
    let last: Value = serde_json::from_slice(sent.last().unwrap()).unwrap();
    let said = last["messages"].to_string();
    assert!(said.contains("first") && said.contains("instead"), "{said}");
    assert!(
        !said.contains("second") && !said.contains("b.txt"),
        "{said}"
    );
    // hc fork: the whole history up to answer #2, printed as an id
    let fork = ok(&s, &["fork", &session, "--at", "2"]).await;
    let id = fork.stdout.trim().to_owned();
    assert!(id.starts_with("s_"), "{fork:#?}");
    ok(&s, &["run", "--resume", &id, "later"]).await;
    let sent = s.sent();
    let last: Value = serde_json::from_slice(sent.last().unwrap()).unwrap();
    let said = last["messages"].to_string();
    assert!(
        said.contains("first") && said.contains("done 1") && said.contains("later"),
        "{said}"
    );
    assert!(!said.contains("second"), "{said}");
    // the old session is as it was
    assert_eq!(turns(&s, &session).await.len(), 4);
    // the fork's calls rebuild: those it took from the session as they
    // were sent there, its own from its own record
    let rebuilt = |id: String, n: &'static str| {
        let s = &s;
        async move { ok(s, &["trace", &id, "--request", n]).await.stdout }
    };
    assert_eq!(
        rebuilt(id.clone(), "1").await,
        rebuilt(session.clone(), "1").await
    );
    let own: Value = serde_json::from_str(&rebuilt(id.clone(), "3").await).unwrap();
    assert!(own["messages"].to_string().contains("later"), "{own}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_replay_matches_the_record_until_a_hook_changes_what_a_tool_did() {
    let s = Setup::new(json!({"turns": [
        shell("s1", "echo made > made.txt && cat made.txt base.txt && ls"),
        done(1),
        reply(json!([call("w2", "write", json!({"file_path": "b.txt", "content": "b\n"}))]), "tool_use"),
        done(2),
    ]}))
    .await;
    s.file("base.txt", "base\n");
    let session = first_and_second(&s).await;
    // the replay starts from the files as the session found them: b.txt
    // (written at its third call) is not there for the first call's `ls`
    assert!(s.root.join("b.txt").exists());
    let asked = s.sent().len();
    let tree = tree_of(&s.root);
    let clean = ok(&s, &["replay", &session, "--permission-mode", "bypass"]).await;
    assert!(
        clean
            .stdout
            .contains("4 model calls, every request and tool result as recorded"),
        "{clean:#?}"
    );
    assert_eq!(s.sent().len(), asked, "no request reached a model");
    assert_eq!(tree_of(&s.root), tree, "the project's files are left alone");
    // today a pre-tool hook blocks the shell: its result, and the request after, differ
    s.file(
        ".hermitcrab/config.toml",
        "[[hooks]]\nevent = \"pre-tool\"\nmatcher = \"shell\"\ncommand = \"echo 'no shell today' >&2; exit 2\"\n",
    );
    s.trust();
    let changed = s
        .out(&["replay", &session, "--permission-mode", "bypass"])
        .await;
    assert_eq!(changed.code, 1, "{changed:#?}");
    assert!(changed.stdout.contains("request 2"), "{changed:#?}");
    assert!(
        changed
            .stdout
            .contains("the result of shell (tool call s1)"),
        "{changed:#?}"
    );
    assert!(changed.stdout.contains("no shell today"), "{changed:#?}");
    assert_eq!(s.sent().len(), asked);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_fork_in_a_worktree_of_its_own_has_the_files_as_they_were_at_its_turn() {
    let s = Setup::new(json!({"turns": [
        shell("s1", "echo one > a.txt && echo changed > notes.txt"),
        done(1),
        shell("s2", "echo two > b.txt && rm a.txt"),
        done(2),
    ]}))
    .await;
    crate::background::repository(&s);
    let session = first_and_second(&s).await;
    let forked = ok(&s, &["fork", &session, "--at", "2", "--worktree"]).await;
    let id = forked.stdout.trim();
    let tree = s.root.join(".hermitcrab/worktrees").join(id);
    assert!(forked.stderr.contains(&format!("hc/{id}")), "{forked:#?}");
    // after answer #2 (the first prompt's end): a.txt made, notes changed, no b.txt
    assert_eq!(
        std::fs::read_to_string(tree.join("a.txt")).unwrap(),
        "one\n"
    );
    assert_eq!(
        std::fs::read_to_string(tree.join("notes.txt")).unwrap(),
        "changed\n"
    );
    assert!(!tree.join("b.txt").exists());
    // the checkout itself is as the session left it
    assert!(s.root.join("b.txt").exists() && !s.root.join("a.txt").exists());
}

#[tokio::test(flavor = "multi_thread")]
async fn fork_session_goes_on_in_a_fork_and_leaves_the_session_as_it_was() {
    let s = Setup::new(json!({"turns": [done(1), done(2)]})).await;
    ok(&s, &["run", "first"]).await;
    let session = s.sessions()[0].clone();
    let ran = ok(
        &s,
        &[
            "run",
            "--resume",
            &session,
            "--fork-session",
            "--output-format",
            "json",
            "again",
        ],
    )
    .await;
    let result: Value = serde_json::from_str(&ran.stdout).unwrap();
    let forked = result["session_id"].as_str().unwrap().to_owned();
    assert_ne!(forked, session);
    let sent: Value = serde_json::from_slice(s.sent().last().unwrap()).unwrap();
    let said = sent["messages"].to_string();
    assert!(
        said.contains("first") && said.contains("done 1") && said.contains("again"),
        "{said}"
    );
    // the session forked from has its one prompt still
    assert_eq!(s.of_type(&session, "prompt").len(), 1);
    assert_eq!(s.of_type(&forked, "prompt").len(), 2);
}

#[tokio::test(flavor = "multi_thread")]
async fn slash_rewind_in_chat_puts_the_files_back_and_goes_on_in_the_fork() {
    use crate::terminal::{always, in_terminal, runs_ended as ended};
    let s = Setup::new(two_writes()).await;
    let forked: crate::terminal::Ready = Box::new(|s: &Setup| s.sessions().len() == 2);
    let answered: crate::terminal::Ready = Box::new(|s: &Setup| {
        s.sessions()
            .get(1)
            .is_some_and(|id| s.of_type(id, "answer").len() >= 3)
    });
    let (code, shown) = in_terminal(
        &s,
        "chat --permission-mode bypass",
        &[],
        vec![
            (always(), b"first\r"),
            (ended(1), b"second\r"),
            (ended(2), b"/rewind 3 both\r"),
            (forked, b"third\r"),
            (answered, b"/exit\r"),
        ],
    )
    .await;
    assert_eq!(code, 0, "{shown}");
    assert!(shown.contains("put back 1 path"), "{shown}");
    assert!(s.root.join("a.txt").exists() && !s.root.join("b.txt").exists());
    let fork = s.sessions()[1].clone();
    let prompts: Vec<Value> = s.of_type(&fork, "prompt");
    let texts: Vec<&str> = prompts
        .iter()
        .map(|p| p["text"].as_str().unwrap())
        .collect();
    assert_eq!(texts, ["first", "third"]);
}

/// `git ARGS` in the project as a person with no git configuration (and
/// no identity: a commit names one itself).
fn git_here(s: &Setup, args: &[&str]) {
    let out = std::process::Command::new("git")
        .args(args)
        .current_dir(&s.root)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {out:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_replay_in_a_git_repository_matches_the_record_and_no_id_is_the_recorded_session() {
    let s = Setup::new(json!({"turns": [shell("s1", "cat notes.txt"), done(1)]})).await;
    git_here(&s, &["init", "-q", "-b", "main"]);
    let commit = |s: &Setup, file: &str, message: &str| {
        s.file(file, &format!("{message}\n"));
        git_here(s, &["add", file]);
        git_here(
            s,
            &[
                "-c",
                "user.name=t",
                "-c",
                "user.email=t@t",
                "commit",
                "-qm",
                message,
            ],
        );
    };
    commit(&s, "notes.txt", "notes");
    commit(&s, "more.txt", "more notes");
    s.file("notes.txt", "changed, not committed\n");
    let env = [
        ("GIT_CONFIG_GLOBAL", "/dev/null"),
        ("GIT_CONFIG_NOSYSTEM", "1"),
    ];
    let ran = s
        .out_with(&env, &["run", "--permission-mode", "bypass", "first"])
        .await;
    assert_eq!(ran.code, 0, "{ran:#?}");
    let session = s.sessions()[0].clone();
    let sent = String::from_utf8_lossy(&s.sent()[0]).into_owned();
    assert!(
        sent.contains("main") && sent.contains("more notes"),
        "the request carries the repository's facts: {sent}"
    );
    // twice, with no id: the second replays the session, not the first replay
    for _ in 0..2 {
        let replayed = s
            .out_with(&env, &["replay", "--permission-mode", "bypass"])
            .await;
        assert_eq!(replayed.code, 0, "{replayed:#?}");
        assert!(
            replayed
                .stdout
                .starts_with(&format!("replayed {session} as")),
            "{replayed:#?}"
        );
        assert!(
            replayed
                .stdout
                .contains("2 model calls, every request and tool result as recorded"),
            "{replayed:#?}"
        );
    }
}
