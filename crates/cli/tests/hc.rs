#![allow(clippy::unwrap_used, clippy::expect_used)]
//! `hc` as a person and a script would use it: `init`, finding the project
//! upward, and `serve --stdio` driven through the Rust SDK — which also runs
//! the built-in `echo` (`hc program echo`) as a real process.

use protocol::{Client, ErrorCode, Event, RunArgs};
use serde_json::json;
use std::process::{Command, Stdio};
use std::time::Duration;
use substrate::{ChunkDecl, Declaration, NewPlacement, PlacementType, ScopeOpts};

/// `hc ARGS` in `dir`, with a user configuration of its own there.
fn hc(dir: &std::path::Path, args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_hc"))
        .args(args)
        .current_dir(dir)
        .env("XDG_CONFIG_HOME", dir.join(".user-config"))
        .output()
        .unwrap()
}

#[test]
fn init_creates_the_project_and_is_idempotent() {
    let dir = tempfile::tempdir().unwrap();
    let first = hc(dir.path(), &["init"]);
    assert!(first.status.success(), "{first:?}");
    assert!(
        String::from_utf8_lossy(&first.stdout).starts_with("initialized hermitcrab project in")
    );
    assert!(dir.path().join(".hermitcrab/substrate.db").is_file());
    assert!(dir.path().join(".hermitcrab/config.toml").is_file());
    let second = hc(dir.path(), &["init"]);
    assert!(second.status.success());
    assert!(String::from_utf8_lossy(&second.stdout).starts_with("already up to date"));
}

#[test]
fn outside_a_project_serve_says_what_to_do() {
    let dir = tempfile::tempdir().unwrap();
    let out = hc(dir.path(), &["serve", "--stdio"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("no project here") && err.contains("run `hc init`"),
        "{err}"
    );
    let out = hc(dir.path(), &["serve"]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("hc serve --stdio"));
}

#[test]
fn a_builtin_program_explains_itself_when_run_by_hand() {
    let dir = tempfile::tempdir().unwrap();
    let out = hc(dir.path(), &["program", "echo"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("the engine runs it"));
    let out = hc(dir.path(), &["program", "nope"]);
    assert!(String::from_utf8_lossy(&out.stderr).contains(
        "built-ins are: read, write, edit, glob, grep, shell, web-fetch, echo, hook, rewind, agent"
    ));
}

#[tokio::test(flavor = "multi_thread")]
async fn serve_stdio_runs_echo_reads_and_streams_events() {
    let dir = tempfile::tempdir().unwrap();
    assert!(hc(dir.path(), &["init"]).status.success());
    let nested = dir.path().join("src/deep");
    std::fs::create_dir_all(&nested).unwrap();
    // found upward from a subdirectory, like git
    let mut server = tokio::process::Command::new(env!("CARGO_BIN_EXE_hc"))
        .args(["serve", "--stdio"])
        .current_dir(&nested)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let (client, mut events) =
        Client::connect(server.stdout.take().unwrap(), server.stdin.take().unwrap());

    client
        .commit(Declaration::of(vec![
            ChunkDecl::with_id("s_1").on(NewPlacement::instance("session")),
        ]))
        .await
        .unwrap();
    let sub = client.subscribe(&["s_1"], true).await.unwrap();
    let args = RunArgs {
        chunks: vec![
            ChunkDecl::generated()
                .body(json!({"text": "hello from the host"}))
                .on(NewPlacement::instance("input/echo")),
        ],
        session: Some("s_1".into()),
        ..RunArgs::default()
    };
    let p = client.run("echo", args).await.unwrap();
    let done = client.await_processes(&[p.as_str()]).await.unwrap();
    let process = &done[&p];
    assert_eq!(
        process.scopes[0].body_value()["status"],
        "completed",
        "{:?}",
        process.scopes[0].body_value()
    );
    let output = process
        .chunks
        .iter()
        .find(|c| c.is_on("engine/output", PlacementType::Instance))
        .unwrap();
    assert_eq!(output.body_value()["text"], "hello from the host");
    // the deep subscription heard the run: its process and its output
    let mut heard = Vec::new();
    while let Ok(Some(event)) =
        tokio::time::timeout(Duration::from_millis(300), events.recv()).await
    {
        heard.push(event);
    }
    assert!(heard.iter().any(|e| matches!(e, Event::ScopeChanged { subscription_id, commit } if *subscription_id == sub && commit.created.contains(&output.id))));
    // errors come back as errors and the connection goes on
    let e = client
        .scope(&["nope"], ScopeOpts::default())
        .await
        .unwrap_err();
    assert_eq!(e.code(), Some(ErrorCode::NotFound));
    let e = client.run("nope", RunArgs::default()).await.unwrap_err();
    assert_eq!(e.code(), Some(ErrorCode::NotFound));
    let all = client
        .scope(&["engine/program"], ScopeOpts::default())
        .await
        .unwrap();
    assert!(all.chunks.iter().any(|c| c.id == "program/echo"));
    drop(client);
    let status = tokio::time::timeout(Duration::from_secs(10), server.wait())
        .await
        .unwrap()
        .unwrap();
    assert!(
        status.success(),
        "hc serve ends cleanly when its input ends"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_bad_line_from_a_host_is_answered_not_fatal() {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
    let dir = tempfile::tempdir().unwrap();
    assert!(hc(dir.path(), &["init"]).status.success());
    let mut server = tokio::process::Command::new(env!("CARGO_BIN_EXE_hc"))
        .args(["serve", "--stdio"])
        .current_dir(dir.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut stdin = server.stdin.take().unwrap();
    let mut lines = BufReader::new(server.stdout.take().unwrap()).lines();
    stdin.write_all(b"this is not json\n[1,2]\n{\"id\":5,\"op\":\"fly\"}\n{\"id\":6,\"op\":\"scope\",\"scopes\":[\"session\"]}\n").await.unwrap();
    let mut answers = Vec::new();
    for _ in 0..4 {
        let line = lines.next_line().await.unwrap().unwrap();
        answers.push(serde_json::from_str::<serde_json::Value>(&line).unwrap());
    }
    assert_eq!(answers[0]["id"], json!(null));
    assert_eq!(answers[0]["error"]["code"], "INVALID_REQUEST");
    assert_eq!(answers[1]["id"], json!(null));
    assert_eq!(answers[2]["id"], 5);
    assert!(
        answers[2]["error"]["message"]
            .as_str()
            .unwrap()
            .contains("unknown variant `fly`")
    );
    assert_eq!(answers[3]["id"], 6);
    assert_eq!(answers[3]["result"]["scopes"][0]["id"], "session");
}

/// Runs echo through `hc serve --stdio` with `extra` flags; returns the
/// process body and what hc said on stderr.
async fn echo_through_serve(dir: &std::path::Path, extra: &[&str]) -> (serde_json::Value, String) {
    echo_through(env!("CARGO_BIN_EXE_hc").as_ref(), dir, extra).await
}

/// The same, with the `hc` at `exe`.
async fn echo_through(
    exe: &std::path::Path,
    dir: &std::path::Path,
    extra: &[&str],
) -> (serde_json::Value, String) {
    let mut server = tokio::process::Command::new(exe)
        .args(["serve", "--stdio"])
        .args(extra)
        .current_dir(dir)
        .env("XDG_CONFIG_HOME", dir.join(".user-config"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut stderr = server.stderr.take().unwrap();
    let (client, _events) =
        Client::connect(server.stdout.take().unwrap(), server.stdin.take().unwrap());
    let args = RunArgs {
        chunks: vec![
            ChunkDecl::generated()
                .body(json!({"text": "x"}))
                .on(NewPlacement::instance("input/echo")),
        ],
        ..RunArgs::default()
    };
    let p = client.run("echo", args).await.unwrap();
    let done = client.await_processes(&[p.as_str()]).await.unwrap();
    drop(client);
    server.wait().await.unwrap();
    let mut said = String::new();
    tokio::io::AsyncReadExt::read_to_string(&mut stderr, &mut said)
        .await
        .unwrap();
    (done[&p].scopes[0].body_value(), said)
}

#[tokio::test(flavor = "multi_thread")]
async fn programs_run_contained_unless_the_person_opts_out() {
    let dir = tempfile::tempdir().unwrap();
    assert!(hc(dir.path(), &["init"]).status.success());
    let (body, said) = echo_through_serve(dir.path(), &[]).await;
    assert_eq!(
        (body["status"].as_str(), body["containment"].as_str()),
        (Some("completed"), Some("on")),
        "{body}"
    );
    assert!(said.is_empty(), "{said}");
    let (body, said) = echo_through_serve(dir.path(), &["--no-contain"]).await;
    assert_eq!(
        (body["status"].as_str(), body["containment"].as_str()),
        (Some("completed"), Some("off"))
    );
    assert!(said.contains("containment is off"), "{said}");
    let config = dir.path().join(".hermitcrab/config.toml");
    std::fs::write(&config, "containment = \"off\"\n").unwrap();
    // The project's own file may not turn containment off until trusted.
    let (body, said) = echo_through_serve(dir.path(), &[]).await;
    assert_eq!(body["containment"], "on");
    assert!(said.contains("hc trust"), "{said}");
    assert!(hc(dir.path(), &["trust"]).status.success());
    let (body, _) = echo_through_serve(dir.path(), &[]).await;
    assert_eq!(body["containment"], "off");
    std::fs::write(&config, "containment = \"maybe\"\n").unwrap();
    assert!(hc(dir.path(), &["trust"]).status.success());
    let out = hc(dir.path(), &["serve", "--stdio"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.contains("`containment` is \"on\" or \"off\""),
        "{err}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn hc_contains_through_the_trampoline_beside_it_or_itself() {
    let dir = tempfile::tempdir().unwrap();
    assert!(hc(dir.path(), &["init"]).status.success());
    let bin = tempfile::tempdir().unwrap();
    let exe = bin.path().join("hc");
    std::fs::copy(env!("CARGO_BIN_EXE_hc"), &exe).unwrap();
    // Alone, `hc` is its own trampoline (`hc __contain`).
    let (body, _) = echo_through(&exe, dir.path(), &[]).await;
    assert_eq!(
        (body["status"].as_str(), body["containment"].as_str()),
        (Some("completed"), Some("on")),
        "{body}"
    );
    // Beside it, `hc-contain` is used (the zygote is `hc` itself, which
    // forks the built-ins it carries; `hc-contain` holds the shared network
    // namespace and is the trampoline of a run the zygote cannot take):
    // here a script that notes each use but the build id asked, then is
    // the real one.
    let log = bin.path().join("used");
    let real = std::path::Path::new(env!("CARGO_BIN_EXE_hc")).with_file_name("hc-contain");
    assert!(real.is_file(), "cargo builds hc-contain with hc");
    let sibling = bin.path().join("hc-contain");
    std::fs::write(
        &sibling,
        format!(
            "#!/bin/sh\ncase \"$1\" in --build-id) ;; *) echo used >> '{}';; esac\nexec '{}' \"$@\"\n",
            log.display(),
            real.display()
        ),
    )
    .unwrap();
    let mut perms = std::fs::metadata(&sibling).unwrap().permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o755);
    std::fs::set_permissions(&sibling, perms).unwrap();
    assert!(!log.exists());
    let (body, _) = echo_through(&exe, dir.path(), &[]).await;
    assert_eq!(body["status"], "completed", "{body}");
    assert!(log.exists(), "the trampoline beside hc is used");
    // One from another build (it says a different build id) is passed over.
    std::fs::remove_file(&log).unwrap();
    std::fs::write(
        &sibling,
        format!(
            "#!/bin/sh\ncase \"$1\" in --build-id) echo 0000000000000001; exit 0;; *) echo used >> '{}';; esac\nexec '{}' \"$@\"\n",
            log.display(),
            real.display()
        ),
    )
    .unwrap();
    let (body, _) = echo_through(&exe, dir.path(), &[]).await;
    assert_eq!(body["status"], "completed", "{body}");
    assert!(!log.exists(), "a trampoline from another build is not used");
}

#[test]
fn output_to_a_full_disk_says_so_and_a_gone_reader_ends_quietly() {
    let dir = tempfile::tempdir().unwrap();
    assert!(hc(dir.path(), &["init"]).status.success());
    // a full disk: one line saying why, exit 1, no panic
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_hc"))
        .args(["programs"])
        .current_dir(dir.path())
        .env("XDG_CONFIG_HOME", dir.path().join(".user-config"))
        .stdout(full)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("hc: cannot write the output: No space left on device"),
        "{stderr}"
    );
    assert!(!stderr.contains("panicked"), "{stderr}");
    // a reader gone before the output (`hc config` is not one of the
    // printing commands SIGPIPE ends): no panic, nothing said, exit 0
    let mut child = Command::new(env!("CARGO_BIN_EXE_hc"))
        .args(["config"])
        .current_dir(dir.path())
        .env("XDG_CONFIG_HOME", dir.path().join(".user-config"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(stderr.is_empty(), "{stderr}");
    assert_eq!(out.status.code(), Some(0));
}

#[test]
fn a_run_where_there_is_no_project_says_it_made_one_and_where() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let run = |key: Option<&str>| {
        let mut hc = Command::new(env!("CARGO_BIN_EXE_hc"));
        hc.args(["run", "hello"])
            .current_dir(&root)
            .env("XDG_CONFIG_HOME", root.join(".user-config"))
            .env_remove("ANTHROPIC_API_KEY")
            .env_remove("ANTHROPIC_AUTH_TOKEN")
            .env_remove("OPENAI_API_KEY")
            .env_remove("OPENAI_BASE_URL")
            // (nothing listens there: the run fails after it starts)
            .env("ANTHROPIC_BASE_URL", "http://127.0.0.1:9");
        if key.is_none() {
            hc.env_remove("ANTHROPIC_BASE_URL");
        }
        hc.output().unwrap()
    };
    // with no key at all nothing is made: the run could never start
    let keyless = run(None);
    assert!(!root.join(".hermitcrab").exists(), "{keyless:?}");
    let out = run(Some("a base URL"));
    let stderr = String::from_utf8_lossy(&out.stderr);
    let made = format!("hc: made a project at {}", root.display());
    assert!(
        stderr.lines().next().is_some_and(|l| l.starts_with(&made)),
        "{stderr}"
    );
    assert!(root.join(".hermitcrab/substrate.db").is_file());
    // once made, it is found, not made again
    let again = hc(&root, &["sessions"]);
    assert!(!String::from_utf8_lossy(&again.stderr).contains("made a project"));
}

#[test]
fn hc_program_help_is_the_commands_help() {
    let dir = tempfile::tempdir().unwrap();
    let out = hc(dir.path(), &["program", "--help"]);
    assert!(out.status.success(), "{out:?}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("Usage: hc program <NAME>"), "{stdout}");
}

/// A uid of its own for the test (no other process counts against its
/// process limit; none needs a name).
const LIMITED_UID: &str = "54321";

/// `hc ARGS` in `dir` with at most `n` processes and threads: as a uid of
/// its own when run as root (root is not held to `RLIMIT_NPROC`).
fn hc_with_nproc(dir: &std::path::Path, n: u32, args: &[&str]) -> std::process::Output {
    let root = Command::new("id").arg("-u").output().unwrap().stdout == b"0\n";
    let limit = format!("--nproc={n}:{n}");
    let mut command = Command::new("prlimit");
    command.arg(limit);
    if root {
        command.args([
            "setpriv",
            &format!("--reuid={LIMITED_UID}"),
            &format!("--regid={LIMITED_UID}"),
            "--clear-groups",
        ]);
    }
    command
        .arg(env!("CARGO_BIN_EXE_hc"))
        .args(args)
        .current_dir(dir)
        .env("HOME", dir)
        .env("XDG_CONFIG_HOME", dir.join(".user-config"))
        .env("ANTHROPIC_BASE_URL", "http://127.0.0.1:9")
        .output()
        .unwrap()
}

#[test]
fn a_thread_or_process_the_system_refuses_is_an_error_naming_it_not_a_panic() {
    let dir = tempfile::tempdir().unwrap();
    assert!(hc(dir.path(), &["init"]).status.success());
    if Command::new("id").arg("-u").output().unwrap().stdout == b"0\n" {
        let owned = Command::new("chown")
            .args(["-R", &format!("{LIMITED_UID}:{LIMITED_UID}")])
            .arg(dir.path())
            .status()
            .unwrap();
        assert!(owned.success());
    }
    let mut refused_a_thread = false;
    for n in [2, 3, 4, 6] {
        let out = hc_with_nproc(dir.path(), n, &["run", "hi"]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "at {n}: {stderr}");
        assert!(!stderr.contains("panicked"), "at {n}: {stderr}");
        assert!(
            stderr.contains("Resource temporarily unavailable"),
            "the OS's reason, at {n}: {stderr}"
        );
        refused_a_thread |= stderr.contains("hc: the system refused to start a thread");
    }
    assert!(
        refused_a_thread,
        "one of the limits stops a thread the runtime starts (which panics unless caught)"
    );
}
