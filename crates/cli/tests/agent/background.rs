//! Agents in the background, as a person runs them: `hc run --bg` queues a
//! run in a git worktree of its own and starts a worker; `hc agents` lists
//! them through their lives; `hc attach` follows one and answers its
//! question; `hc stop`; a worker killed mid-turn; a queue held to
//! `max_background`; every request of every session rebuilt byte for byte.

use crate::common::*;
use crate::terminal::{Ready, in_terminal};
use serde_json::{Value, json};
use std::collections::HashSet;
use std::process::Command;
use std::time::Duration;

fn git(s: &Setup, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(args)
        .current_dir(&s.root)
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {out:?}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The project a git repository, `notes.txt` committed.
pub fn repository(s: &Setup) {
    git(s, &["init", "-q", "-b", "main"]);
    s.file("notes.txt", "original\n");
    git(s, &["add", "notes.txt"]);
    git(
        s,
        &[
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "commit",
            "-qm",
            "notes",
        ],
    );
}

/// `hc agents --json`.
async fn agents(s: &Setup) -> Vec<Value> {
    let out = s.out(&["agents", "--json"]).await;
    assert_eq!(out.code, 0, "{out:?}");
    serde_json::from_str(&out.stdout).unwrap()
}

/// Waits (at most 90 s) until `hc agents --json` says `done(rows)`;
/// answers every status seen per session on the way.
async fn until(
    s: &Setup,
    done: impl Fn(&[Value]) -> bool,
) -> (Vec<Value>, std::collections::HashMap<String, Vec<String>>) {
    let mut seen: std::collections::HashMap<String, Vec<String>> = Default::default();
    for _ in 0..450 {
        let rows = agents(s).await;
        for row in &rows {
            let statuses = seen
                .entry(row["id"].as_str().unwrap().to_owned())
                .or_default();
            let status = row["status"].as_str().unwrap().to_owned();
            if statuses.last() != Some(&status) {
                statuses.push(status);
            }
        }
        if done(&rows) {
            return (rows, seen);
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    panic!("not there within 90 s: {seen:?}");
}

fn all(rows: &[Value], status: &str, n: usize) -> bool {
    rows.len() == n && rows.iter().all(|r| r["status"] == status)
}

/// `hc worker ARGS…`, once it has had time to take the project's lock.
async fn start_worker(s: &Setup, args: &[&str]) -> tokio::process::Child {
    let mut all = vec!["worker"];
    all.extend_from_slice(args);
    let mut worker = s.hc(&all);
    worker.stderr(std::process::Stdio::null());
    let worker = worker.spawn().unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    worker
}

/// `hc run --bg ARGS…`: the session's id.
async fn background(s: &Setup, args: &[&str]) -> String {
    let mut all = vec!["run", "--bg"];
    all.extend_from_slice(args);
    let out = s.out(&all).await;
    assert_eq!(out.code, 0, "{out:?}");
    let id = out.stdout.trim().to_owned();
    assert!(id.starts_with("s_"), "{out:?}");
    id
}

/// Every request the fake received is one `hc trace` rebuilds, byte for
/// byte, for these sessions.
async fn rebuilt_exactly(s: &Setup, sessions: &[String], turns: usize) {
    let sent = s.sent();
    assert_eq!(sent.len(), sessions.len() * turns, "requests sent");
    let mut matched = HashSet::new();
    for session in sessions {
        for n in 1..=turns {
            let body = s.rebuilt(session, n).await;
            let at = sent.iter().position(|b| *b == body);
            assert!(at.is_some(), "{session} request {n} rebuilt as sent");
            matched.insert(at);
        }
    }
    assert_eq!(matched.len(), sent.len(), "each request once");
}

#[tokio::test(flavor = "multi_thread")]
async fn three_background_runs_edit_one_file_on_three_branches() {
    let names = ["alpha", "beta", "gamma"];
    // each reads notes.txt, writes it its own way, and is done
    let mut turns: Vec<Value> = Vec::new();
    for n in names {
        let read = json!({"file_path": "notes.txt"});
        let write = json!({"file_path": "notes.txt", "content": format!("{n}\n")});
        let said = format!("{n} done");
        turns.push(when(
            &format!("edit as {n}"),
            json!([call(&format!("tu_r_{n}"), "read", read)]),
            "tool_use",
        ));
        turns.push(when(
            &format!("tu_r_{n}"),
            json!([call(&format!("tu_w_{n}"), "write", write)]),
            "tool_use",
        ));
        turns.push(when(&format!("tu_w_{n}"), json!([text(&said)]), "end_turn"));
    }
    let s = Setup::new(json!({"turns": turns})).await;
    repository(&s);
    let mut sessions = Vec::new();
    for n in names {
        let prompt = format!("edit as {n}");
        let started = std::time::Instant::now();
        sessions.push(background(&s, &["--permission-mode", "acceptEdits", &prompt]).await);
        assert!(started.elapsed() < Duration::from_secs(10));
    }
    let (rows, seen) = until(&s, |rows| all(rows, "done", 3)).await;
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
    for (n, session) in names.iter().zip(&sessions) {
        let row = rows.iter().find(|r| r["id"] == *session).unwrap();
        let branch = format!("hc/{session}");
        assert_eq!(row["branch"], branch.as_str(), "{row}");
        assert_eq!(row["worktree"], format!(".hermitcrab/worktrees/{session}"));
        assert_eq!(row["host"], host.trim());
        assert_eq!(row["turns"], 3);
        assert!(row["cost_usd"].as_f64().unwrap() > 0.0);
        // its edit is on its branch, committed, titled by its prompt (as
        // the worker commits it when the run ends, or as soon as asked)
        let stat = s.out(&["agents", "diff", "--stat", session]).await;
        assert!(stat.stdout.contains("notes.txt"), "{stat:?}");
        assert_eq!(
            git(&s, &["show", &format!("{branch}:notes.txt")]),
            format!("{n}\n")
        );
        let subject = git(&s, &["log", "-1", "--format=%s", &branch]);
        assert_eq!(subject.trim(), format!("edit as {n}"));
        // every state it went through is one a person would see, in order
        let states = &seen[session.as_str()];
        assert_eq!(
            states.last().map(String::as_str),
            Some("done"),
            "{states:?}"
        );
        for s in states {
            assert!(
                ["queued", "running", "done"].contains(&s.as_str()),
                "{states:?}"
            );
        }
    }
    // the person's own checkout is untouched
    assert_eq!(
        std::fs::read_to_string(s.root.join("notes.txt")).unwrap(),
        "original\n"
    );
    assert_eq!(git(&s, &["status", "--porcelain"]), "");
    rebuilt_exactly(&s, &sessions, 3).await;

    // the branches come back: a diff, then a merge
    let diff = s.out(&["agents", "diff", &sessions[0]]).await;
    assert_eq!(diff.code, 0, "{diff:?}");
    assert!(diff.stdout.contains("+alpha"), "{diff:?}");
    // a person git does not know: told what to do, in one piece, and
    // nothing merged (git made to guess nothing, as on a fresh machine)
    let mut nobody = s.hc(&["agents", "merge", &sessions[0]]);
    nobody
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_COUNT", "1")
        .env("GIT_CONFIG_KEY_0", "user.useConfigOnly")
        .env("GIT_CONFIG_VALUE_0", "true")
        .env_remove("EMAIL");
    let refused = nobody.output().await.unwrap();
    let said = String::from_utf8_lossy(&refused.stderr);
    assert_ne!(refused.status.code(), Some(0), "{said}");
    assert!(said.contains("git does not know who you are"), "{said}");
    assert!(said.contains("git config --global user.email"), "{said}");
    assert_eq!(said.lines().count(), 1, "{said}");
    assert_eq!(
        std::fs::read_to_string(s.root.join("notes.txt")).unwrap(),
        "original\n"
    );
    let merged = s.out(&["agents", "merge", &sessions[0]]).await;
    assert_eq!(merged.code, 0, "{merged:?}");
    assert_eq!(
        std::fs::read_to_string(s.root.join("notes.txt")).unwrap(),
        "alpha\n",
        "{merged:?}\n{}",
        git(&s, &["log", "--all", "--oneline", "--graph"])
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn attach_follows_a_background_run_and_answers_its_question() {
    let write = json!({"file_path": "asked.txt", "content": "asked\n"});
    let s = Setup::new(json!({"turns": [
        when("ask me first", json!([call("tu_w", "write", write)]), "tool_use"),
        when("tu_w", json!([text("written after you allowed it")]), "end_turn"),
    ]}))
    .await;
    repository(&s);
    // writes ask first (a rule of the project's, trusted)
    s.file(
        ".hermitcrab/config.toml",
        "[permissions]\nask = [\"write\"]\n",
    );
    s.trust();
    let session = background(&s, &["ask me first"]).await;
    let (rows, _) = until(&s, |rows| {
        rows.first().is_some_and(|r| r["status"] == "waiting")
    })
    .await;
    let question = rows[0]["question"].as_str().unwrap();
    assert!(question.contains("asked.txt"), "{question}");
    // answered from another terminal, where the person attaches
    let typed: Ready = Box::new(|_| true);
    let (code, shown) =
        in_terminal(&s, &format!("attach {session}"), &[], vec![(typed, b"y\n")]).await;
    assert_eq!(code, 0, "{shown}");
    assert!(shown.contains("attached to"), "{shown}");
    assert!(shown.contains("written after you allowed it"), "{shown}");
    // the call's line, as `hc run` draws it (attach hears no notices: from
    // the commits)
    assert!(shown.contains("✓\x1b[0m write asked.txt"), "{shown:?}");
    // the terminal told of its end: the bell, OSC 9 and OSC 777
    assert!(
        shown.contains(&format!("\x07\x1b]9;hermitcrab: {session} done")),
        "{shown:?}"
    );
    assert!(shown.contains("\x1b]777;notify;hermitcrab;"), "{shown:?}");
    let (rows, _) = until(&s, |rows| all(rows, "done", 1)).await;
    assert!(rows[0].get("question").is_none());
    // attached once it ended: all it did, as it was shown live
    let (code, again) = in_terminal(&s, &format!("attach {session}"), &[], vec![]).await;
    assert_eq!(code, 0, "{again}");
    assert!(again.contains("✓\x1b[0m write asked.txt"), "{again:?}");
    assert!(again.contains("written after you allowed it"), "{again}");
    let decisions = s.of_type(&session, "permission-decision");
    assert_eq!(decisions.len(), 1, "{decisions:?}");
    assert_eq!(decisions[0]["by"], "the terminal");
    // (asked for right after its end, the branch has its work: the worker
    // may still be committing it, and `hc agents diff` waits for that)
    let diff = s.out(&["agents", "diff", &session]).await;
    assert!(diff.stdout.contains("+asked"), "{diff:?}");
    assert_eq!(
        git(&s, &["show", &format!("hc/{session}:asked.txt")]),
        "asked\n"
    );
    rebuilt_exactly(&s, std::slice::from_ref(&session), 2).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_worker_killed_mid_turn_leaves_its_run_engine_lost() {
    // the model never answers: the run is mid-turn when its worker dies
    let s = Setup::new(json!({"turns": [
        {"reply": {"content": [text("too late")]}, "pace": {"first_byte_delay_ms": 120000}}
    ]}))
    .await;
    repository(&s);
    let mut worker = start_worker(&s, &[]).await;
    let session = background(&s, &["--no-worktree", "wait for the model"]).await;
    until(&s, |rows| {
        rows.first().is_some_and(|r| r["status"] == "running")
    })
    .await;
    // until its request reached the model
    for _ in 0..200 {
        if !s.fake.requests_to("/v1/messages").is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    worker.start_kill().unwrap(); // SIGKILL
    worker.wait().await.unwrap();
    let (rows, _) = until(&s, |rows| all(rows, "failed", 1)).await;
    assert_eq!(rows[0]["error"], "engine lost", "{}", rows[0]);
    // recorded so, and its steps kept
    let runs = s.processes(&session);
    let run = runs.iter().find(|p| p["placement"].is_object()).unwrap();
    assert_eq!(run["error"], "engine lost", "{run}");
    assert_eq!(s.of_type(&session, "prompt").len(), 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_run_that_asked_to_retry_goes_on_from_its_last_whole_turn_after_its_worker_died() {
    // its first turn reads a file; the answer to the second never comes
    // before its worker dies; asked again, it comes
    let s = Setup::new(json!({"turns": [
        when("go on after me", json!([call("tu_r", "read", json!({"file_path": "notes.txt"}))]), "tool_use"),
        {"when": "tu_r", "reply": {"content": [text("too late")]}, "pace": {"first_byte_delay_ms": 120000}},
        when("tu_r", json!([text("went on")]), "end_turn"),
    ]}))
    .await;
    repository(&s);
    let mut worker = start_worker(&s, &[]).await;
    let args = [
        "--no-worktree",
        "--allow",
        "read",
        "--retry",
        "turn",
        "go on after me",
    ];
    let session = background(&s, &args).await;
    // once the second call is out and the read's result is recorded (the
    // agent records it while the call goes: its turn is whole then)
    for _ in 0..400 {
        let whole = s.of_type(&session, "tool-result").len() == 1;
        if whole && s.fake.requests_to("/v1/messages").len() >= 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    worker.start_kill().unwrap(); // SIGKILL
    worker.wait().await.unwrap();
    // found lost, queued again, taken by the worker `hc agents` starts
    let out = s.out(&["agents", "--json"]).await;
    assert_eq!(out.code, 0, "{out:?}");
    let worker = start_worker(&s, &["--until-idle"]).await;
    let (rows, _) = until(&s, |rows| all(rows, "done", 1)).await;
    drop(worker);
    let run = s.processes(&session);
    let run = run.iter().find(|p| p["placement"].is_object()).unwrap();
    assert_eq!(run["epoch"], 2, "claimed twice: {run}");
    assert!(run["note"].is_null(), "{run}");
    // one prompt, the read done once, its result read by the call made anew
    assert_eq!(s.of_type(&session, "prompt").len(), 1);
    assert_eq!(s.of_type(&session, "tool-result").len(), 1);
    assert_eq!(rows[0]["turns"], 2, "{}", rows[0]);
    let sent = s.sent();
    assert_eq!(sent.len(), 3, "the lost call asked anew");
    assert_eq!(sent[1], sent[2], "the same request, from the same record");
    assert_eq!(s.rebuilt(&session, 2).await, sent[2]);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_queue_of_a_hundred_runs_never_runs_more_than_max_background_at_once() {
    let s =
        Setup::new(json!({"turns": [reply(json!([text("ok")]), "end_turn")], "cycle": true})).await;
    s.file(".hermitcrab/config.toml", "max_background = 4\n");
    s.trust();
    let mut sessions = Vec::new();
    for n in 0..100 {
        sessions.push(background(&s, &["--no-worktree", &format!("run number {n}")]).await);
    }
    until(&s, |rows| all(rows, "done", 100)).await;
    let runs = spans(&s.db(), "agent");
    assert_eq!(runs.len(), 100, "none lost, none run twice");
    // at most 4 at any moment: count the runs started before each start
    // that had not ended by it
    let mut most = 0;
    for (start, _, _) in &runs {
        let at_once = runs
            .iter()
            .filter(|(s2, e2, _)| s2 <= start && e2 > start)
            .count();
        most = most.max(at_once);
    }
    assert!(most <= 4, "{most} at once");
    assert!(most >= 2, "they ran side by side ({most} at most)");
    rebuilt_exactly(&s, &sessions, 1).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn what_cannot_start_in_the_background_is_refused_clearly() {
    let s = Setup::new(json!({"turns": [reply(json!([text("never asked")]), "end_turn")]})).await;
    // not a git repository
    let out = s.run(&["--bg", "anything"]).await;
    assert_eq!(out.code, 2, "{out:?}");
    assert!(out.stderr.contains("not in a git repository"), "{out:?}");
    assert!(out.stderr.contains("--no-worktree"), "{out:?}");
    repository(&s);
    // a dirty index
    s.file("staged.txt", "half done\n");
    git(&s, &["add", "staged.txt"]);
    let out = s.run(&["--bg", "anything"]).await;
    assert_eq!(out.code, 2, "{out:?}");
    assert!(out.stderr.contains("staged changes"), "{out:?}");
    // a base that is no commit
    let out = s.run(&["--bg", "--base", "no-such-ref", "anything"]).await;
    assert_eq!(out.code, 2, "{out:?}");
    assert!(out.stderr.contains("no-such-ref"), "{out:?}");
    // flags a worker could not honour
    let out = s
        .run(&["--bg", "--no-contain", "--no-worktree", "anything"])
        .await;
    assert_eq!(out.code, 2, "{out:?}");
    assert!(out.stderr.contains("--no-contain"), "{out:?}");
    assert!(
        s.sessions().is_empty(),
        "nothing was queued: {:?}",
        s.sessions()
    );
    assert!(s.sent().is_empty());
    // attach to an unknown id: the ids there are
    let out = s.out(&["attach", "s_nope"]).await;
    assert_eq!(out.code, 2, "{out:?}");
    assert!(out.stderr.contains("no session `s_nope`"), "{out:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn stop_ends_a_background_run_and_says_so_of_a_finished_one() {
    let s = Setup::new(json!({"turns": [
        {"reply": {"content": [text("slow")]}, "pace": {"first_byte_delay_ms": 120000}},
        reply(json!([text("quick")]), "end_turn"),
    ]}))
    .await;
    repository(&s);
    let slow = background(&s, &["--no-worktree", "be slow"]).await;
    until(&s, |rows| {
        rows.first().is_some_and(|r| r["status"] == "running")
    })
    .await;
    let stopped = s.out(&["stop", &slow]).await;
    assert_eq!(stopped.code, 0, "{stopped:?}");
    assert!(stopped.stdout.contains("stopped"), "{stopped:?}");
    let (rows, _) = until(&s, |rows| {
        rows.first().is_some_and(|r| r["status"] == "stopped")
    })
    .await;
    assert_eq!(rows[0]["error"], "cancelled");
    // a finished run: nothing to stop
    let again = s.out(&["stop", &slow]).await;
    assert_eq!(again.code, 0, "{again:?}");
    assert!(again.stdout.contains("nothing to stop"), "{again:?}");
    // an unknown one: the ids there are
    let unknown = s.out(&["stop", "s_nope"]).await;
    assert_eq!(unknown.code, 2, "{unknown:?}");
    assert!(unknown.stderr.contains(&slow), "{unknown:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn notification_hooks_fire_when_a_background_run_asks_and_when_it_ends() {
    let write = json!({"file_path": "made.txt", "content": "made\n"});
    let s = Setup::new(json!({"turns": [
        when("tell me", json!([call("tu_m", "write", write)]), "tool_use"),
        when("tu_m", json!([text("made it")]), "end_turn"),
    ]}))
    .await;
    repository(&s);
    s.file(
        ".hermitcrab/config.toml",
        "[permissions]\nask = [\"write\"]\n\n[[hooks]]\nevent = \"notification\"\ncommand = \"cat >> notified.jsonl; echo >> notified.jsonl\"\n",
    );
    s.trust();
    let session = background(&s, &["--no-worktree", "tell me"]).await;
    until(&s, |rows| {
        rows.first().is_some_and(|r| r["status"] == "waiting")
    })
    .await;
    let typed: Ready = Box::new(|_| true);
    let (code, shown) =
        in_terminal(&s, &format!("attach {session}"), &[], vec![(typed, b"y\n")]).await;
    assert_eq!(code, 0, "{shown}");
    until(&s, |rows| all(rows, "done", 1)).await;
    let said = std::fs::read_to_string(s.root.join("notified.jsonl")).unwrap();
    let events: Vec<Value> = said
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(events.len(), 2, "{said}");
    for event in &events {
        assert_eq!(event["hook_event_name"], "Notification", "{event}");
        assert_eq!(event["session_id"], session.as_str(), "{event}");
    }
    assert_eq!(events[0]["notification_type"], "permission_prompt");
    assert_eq!(events[0]["status"], "waiting");
    assert!(events[0]["message"].as_str().unwrap().contains("write"));
    assert_eq!(events[1]["notification_type"], "agent_ended");
    assert_eq!(events[1]["status"], "done");
    // each a recorded run of the hook program, on the agent's process
    let hooks = processes_of(&s, "hook");
    assert_eq!(hooks.len(), 2, "{hooks:?}");
    rebuilt_exactly(&s, std::slice::from_ref(&session), 2).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_merged_branch_leaves_no_worktree_and_rm_refuses_unsaved_changes() {
    let write = json!({"file_path": "new.txt", "content": "new\n"});
    let s = Setup::new(json!({"turns": [
        when("first", json!([call("tu_1", "write", write.clone())]), "tool_use"),
        when("tu_1", json!([text("one")]), "end_turn"),
        when("second", json!([text("nothing to do")]), "end_turn"),
    ]}))
    .await;
    repository(&s);
    let one = background(&s, &["--permission-mode", "acceptEdits", "first"]).await;
    let two = background(&s, &["second"]).await;
    until(&s, |rows| all(rows, "done", 2)).await;
    let merged = s.out(&["agents", "merge", &one]).await;
    assert_eq!(merged.code, 0, "{merged:?}");
    assert!(merged.stderr.contains("removed its worktree"), "{merged:?}");
    assert!(!s.root.join(format!(".hermitcrab/worktrees/{one}")).exists());
    assert_eq!(
        std::fs::read_to_string(s.root.join("new.txt")).unwrap(),
        "new\n"
    );
    // the other: a change of the person's own in its worktree keeps it
    let place = s.root.join(format!(".hermitcrab/worktrees/{two}"));
    std::fs::write(place.join("scratch.txt"), "mine\n").unwrap();
    let refused = s.out(&["agents", "rm", &two]).await;
    assert_ne!(refused.code, 0, "{refused:?}");
    assert!(refused.stderr.contains("changes not on"), "{refused:?}");
    assert!(place.join("scratch.txt").exists());
    std::fs::remove_file(place.join("scratch.txt")).unwrap();
    let removed = s.out(&["agents", "rm", &two]).await;
    assert_eq!(removed.code, 0, "{removed:?}");
    assert!(!place.exists());
    assert!(git(&s, &["branch", "--list", &format!("hc/{two}")]).contains(&two));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_message_sent_to_a_session_is_read_at_its_next_turn() {
    let s = Setup::new(json!({"turns": [
        {"reply": {"content": [call("tu_g", "glob", json!({"pattern": "*.txt"}))], "stop_reason": "tool_use"},
         "when": "work slowly", "pace": {"first_byte_delay_ms": 1500}},
        when("also say banana", json!([text("banana said")]), "end_turn"),
        when("go on", json!([text("went on")]), "end_turn"),
    ]}))
    .await;
    repository(&s);
    let session = background(&s, &["--no-worktree", "work slowly"]).await;
    until(&s, |rows| {
        rows.first().is_some_and(|r| r["status"] == "running")
    })
    .await;
    let sent = s.out(&["send", &session, "also say banana"]).await;
    assert_eq!(sent.code, 0, "{sent:?}");
    assert!(sent.stdout.contains("next turn"), "{sent:?}");
    until(&s, |rows| all(rows, "done", 1)).await;
    let messages = s.of_type(&session, "message");
    assert_eq!(messages.len(), 1);
    let prompts = s.of_type(&session, "prompt");
    let brought: Vec<&Value> = prompts.iter().filter(|p| p["from"] == "message").collect();
    assert_eq!(brought.len(), 1, "{prompts:#?}");
    assert!(
        brought[0]["text"]
            .as_str()
            .unwrap()
            .contains("also say banana")
    );
    rebuilt_exactly(&s, std::slice::from_ref(&session), 2).await;

    // to a session no run is on: read when it next runs
    let later = s.out(&["send", &session, "tell it later"]).await;
    assert!(later.stdout.contains("when it next runs"), "{later:?}");
    let resumed = s.run(&["--resume", &session, "go on"]).await;
    assert_eq!(resumed.code, 0, "{resumed:?}");
    let body = String::from_utf8(s.rebuilt(&session, 3).await).unwrap();
    assert!(
        body.contains("tell it later") && body.contains("go on"),
        "{body}"
    );
    assert!(s.sent().iter().any(|b| String::from_utf8_lossy(b) == body));
    // each message brought once
    let prompts = s.of_type(&session, "prompt");
    assert_eq!(prompts.iter().filter(|p| p["from"] == "message").count(), 2);
    let unknown = s.out(&["send", "s_nope", "hello"]).await;
    assert_eq!(unknown.code, 2, "{unknown:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn chat_lists_the_agents_with_slash_agents() {
    let s = Setup::new(json!({"turns": [reply(json!([text("ok")]), "end_turn")]})).await;
    repository(&s);
    let session = background(&s, &["a job on the side"]).await;
    until(&s, |rows| all(rows, "done", 1)).await;
    let typed = |bytes: &'static [u8]| -> (Ready, &'static [u8]) { (Box::new(|_| true), bytes) };
    let (code, shown) = in_terminal(
        &s,
        "chat",
        &[],
        vec![typed(b"/agents\n"), typed(b"/exit\n")],
    )
    .await;
    assert_eq!(code, 0, "{shown}");
    assert!(shown.contains("a job on the side"), "{shown}");
    assert!(shown.contains(&session[..10]), "{shown}");
    assert!(shown.contains("BRANCH"), "{shown}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_background_run_sends_a_message_another_session_reads() {
    let s = Setup::new(json!({"turns": [
        when("be bee", json!([text("bee here")]), "end_turn"),
        when("tell the bee", json!([
            call("tu_s1", "send_message", json!({"session": "bee", "text": "pollen at noon"})),
            call("tu_s2", "send_message", json!({"session": "nobody", "text": "lost"}))]), "tool_use"),
        when("tu_s2", json!([text("told")]), "end_turn"),
        when("go on", json!([text("went on")]), "end_turn"),
    ]}))
    .await;
    repository(&s);
    let first = s.run(&["--session-id", "bee", "be bee"]).await;
    assert_eq!(first.code, 0, "{first:?}");
    let bee = s.sessions().pop().unwrap();
    let sender = background(
        &s,
        &[
            "--no-worktree",
            "--permission-mode",
            "bypass",
            "tell the bee",
        ],
    )
    .await;
    until(&s, |rows| {
        rows.iter()
            .any(|r| r["id"] == sender.as_str() && r["status"] == "done")
    })
    .await;
    let results = s.of_type(&sender, "tool-result");
    assert_eq!(results.len(), 2, "{results:#?}");
    let delivered = results[0]["text"].as_str().unwrap();
    assert!(delivered.contains(&format!("Sent to {bee}")), "{delivered}");
    let lost = results[1]["text"].as_str().unwrap();
    assert_eq!(results[1]["is_error"], true);
    assert!(
        lost.contains("not delivered") && lost.contains("nobody"),
        "{lost}"
    );
    // one copy on the other session, read at its next run
    let copies = s.of_type(&bee, "message");
    assert_eq!(copies.len(), 1, "{copies:#?}");
    assert_eq!(copies[0]["from"], sender.as_str());
    let resumed = s.run(&["--resume", "bee", "go on"]).await;
    assert_eq!(resumed.code, 0, "{resumed:?}");
    let body = String::from_utf8(s.rebuilt(&bee, 2).await).unwrap();
    assert!(
        body.contains("pollen at noon") && body.contains(&sender),
        "{body}"
    );
    let sent = s.sent();
    for (session, n) in [(&sender, 2), (&bee, 2)] {
        for i in 1..=n {
            assert!(
                sent.contains(&s.rebuilt(session, i).await),
                "{session} request {i}"
            );
        }
    }
}
