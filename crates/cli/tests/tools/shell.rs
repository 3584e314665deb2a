//! `shell`: output, exit codes, `cwd` in and out, truncation, timeouts
//! that kill everything, progress to a deep subscriber.

use crate::common::*;
use engine::Context;
use protocol::{Event, SubscribeOpts};
use serde_json::json;
use std::time::Duration;

#[tokio::test(flavor = "multi_thread")]
async fn a_command_answers_with_its_output_and_exit_code() {
    let p = Project::new();
    let a = p
        .tool(
            "shell",
            json!({"command": "echo hello; echo oops >&2", "description": "say hello"}),
        )
        .await
        .ok();
    assert!(
        a.text.contains("hello") && a.text.contains("oops"),
        "{}",
        a.text
    );
    assert_eq!(a.data["exit_code"], 0);
    assert_eq!(a.data["timed_out"], false);
    assert_eq!(a.data["cwd"], p.root.to_string_lossy().as_ref());
    let failed = p
        .tool("shell", json!({"command": "echo before; exit 3"}))
        .await
        .refused("exit code 3");
    assert!(failed.text.contains("before"));
    assert_eq!(failed.data["exit_code"], 3);
    let missing = p
        .tool("shell", json!({"command": "no-such-command-here"}))
        .await
        .refused("exit code 127");
    assert!(
        missing.text.contains("command not found"),
        "{}",
        missing.text
    );
    let quiet = p.tool("shell", json!({"command": "true"})).await.ok();
    assert_eq!(quiet.text, "(no output)");
    // stdin is /dev/null: a command that reads it ends at once
    let stdin = p
        .tool("shell", json!({"command": "cat; echo done"}))
        .await
        .ok();
    assert!(stdin.text.contains("done"));
}

#[tokio::test(flavor = "multi_thread")]
async fn cd_carries_over_through_the_returned_cwd() {
    let p = Project::new();
    std::fs::create_dir(p.root.join("sub")).unwrap();
    let first = p
        .tool("shell", json!({"command": "cd sub && pwd"}))
        .await
        .ok();
    let sub = p.root.join("sub");
    assert_eq!(first.data["cwd"], sub.to_string_lossy().as_ref());
    let second = p
        .tool("shell", json!({"command": "pwd", "cwd": first.data["cwd"]}))
        .await
        .ok();
    assert_eq!(second.text.trim(), sub.to_string_lossy());
    // a command that replaces the shell ends where it started
    let exec = p
        .tool("shell", json!({"command": "cd sub; exec true", "cwd": "."}))
        .await
        .ok();
    assert_eq!(exec.data["cwd"], p.root.to_string_lossy().as_ref());
    p.tool("shell", json!({"command": "pwd", "cwd": "gone"}))
        .await
        .refused("does not exist");
}

#[tokio::test(flavor = "multi_thread")]
async fn long_output_keeps_head_and_tail() {
    let p = Project::new();
    let a = p
        .tool("shell", json!({"command": "seq 1 100000"}))
        .await
        .ok();
    assert_eq!(a.data["truncated"], true);
    assert!(a.text.starts_with("1\n2\n3\n"), "{}", &a.text[..20]);
    assert!(
        a.text.trim_end().ends_with("99999\n100000"),
        "{}",
        &a.text[a.text.len() - 30..]
    );
    assert!(
        a.text.contains("characters cut from the middle of 588895"),
        "{}",
        a.text.len()
    );
    assert!(a.text.chars().count() < 30_200);
}

/// Host pids of live `sleep` processes whose argument holds `marker`.
fn running(marker: &str) -> Vec<i64> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i64>() else {
            continue;
        };
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        let zombie = stat
            .rsplit_once(") ")
            .is_some_and(|(_, r)| r.starts_with('Z'));
        let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        if !zombie && cmdline.starts_with("sleep ") && cmdline.contains(marker) {
            out.push(pid);
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread")]
async fn a_timeout_kills_everything_the_command_started() {
    let p = Project::new();
    let marker = format!("{}", 700_000 + std::process::id() % 100_000);
    let command = format!("setsid sleep {marker} & sleep {marker}.5 & echo started; sleep 60");
    let run = p.start("shell", json!({"command": command, "timeout": 1500}));
    // the grandchildren exist while it runs…
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while running(&marker).len() < 2 && std::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let pids = running(&marker);
    assert_eq!(
        pids.len(),
        2,
        "the setsid and the background sleep are running"
    );
    let a = p.answer(&run).await.refused("timed out after 1500 ms");
    assert!(a.text.contains("started"));
    assert_eq!(a.data["timed_out"], true);
    assert!(a.data["exit_code"].is_null());
    // …and none outlives it
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while !running(&marker).is_empty() && std::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(
        running(&marker).is_empty(),
        "pids {pids:?} outlived the timeout"
    );
    p.tool("shell", json!({"command": "true", "timeout": 600_001}))
        .await
        .refused("maximum of 600000");
}

#[tokio::test(flavor = "multi_thread")]
async fn background_jobs_end_with_the_command() {
    let p = Project::new();
    let marker = format!("{}", 800_000 + std::process::id() % 100_000);
    let a = p
        .tool(
            "shell",
            json!({"command": format!("setsid sleep {marker} & echo left")}),
        )
        .await
        .ok();
    assert!(a.text.contains("left"));
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while !running(&marker).is_empty() && std::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(running(&marker).is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn progress_reaches_a_deep_subscriber_before_the_run_ends() {
    let p = Project::new();
    p.session("s_1");
    let sub = p
        .engine
        .subscribe(
            &Context::host(),
            &["s_1".to_owned()],
            SubscribeOpts { deep: true },
        )
        .unwrap();
    let mut events = p.engine.events(&sub).unwrap();
    let mut args = Project::args(
        "shell",
        json!({"command": "echo first-line; sleep 1; echo second-line"}),
    );
    args.session = Some("s_1".into());
    let run = p.engine.run(&Context::host(), "shell", args).unwrap();
    let mut heard_first_while_running = false;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while let Ok(Some(event)) = tokio::time::timeout_at(deadline, events.recv()).await {
        match event {
            Event::Notification { process, data } if process == run => {
                assert_eq!(data["kind"], "output");
                assert_eq!(data["stream"], "stdout");
                if data["text"].as_str().unwrap_or("").contains("first-line") {
                    let status = p.db.read(|s| s.body(&run)).unwrap().unwrap()["status"].clone();
                    heard_first_while_running = status == "running";
                    break;
                }
            }
            _ => {}
        }
    }
    assert!(
        heard_first_while_running,
        "the first line came as progress while the command ran"
    );
    let a = p.answer(&run).await.ok();
    assert!(a.text.contains("first-line\nsecond-line"));
}
