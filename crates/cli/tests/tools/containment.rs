//! What containment holds the tools to, probed by programs that carry a
//! tool's own declared capabilities; and the capabilities configuration
//! grants, through `hc serve --stdio` as a person would set them.

use crate::common::*;
use engine::Context;
use protocol::{Capabilities, Client, FilesystemAccess, ReadAccess, RunArgs};
use serde_json::json;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use substrate::{ChunkDecl, Declaration, NewPlacement};

const PROBE: &str = r#"for p in "$@"; do if ( : > "$p" ) 2>/dev/null; then echo "CREATED $p" >&2; else echo "REFUSED $p" >&2; fi; done"#;

/// Runs a probe with `tool`'s declared capabilities that tries to create
/// each of `paths`; answers the probe's report.
async fn probe_as(p: &Project, tool: &str, paths: &[&Path]) -> String {
    let caps =
        p.db.read(|s| s.body(&format!("program/{tool}")))
            .unwrap()
            .unwrap()["capabilities"]
            .clone();
    let mut args = vec![json!("-c"), json!(PROBE), json!("probe")];
    args.extend(paths.iter().map(|p| json!(p)));
    let id = format!("program/probe-as-{tool}");
    p.db.commit(
        Declaration::of(vec![
            ChunkDecl::with_id(&id)
                .name(format!("probe-as-{tool}"))
                .body(json!({"executable": "sh", "args": args, "runtime": "vm", "capabilities": caps}))
                .on(NewPlacement::instance("engine/program")),
        ]),
        None,
    )
    .unwrap();
    let run = p
        .engine
        .run(&Context::host(), &id, RunArgs::default())
        .unwrap();
    let a = p.answer(&run).await;
    assert_eq!(a.status, "completed", "{a:#?}");
    a.body["stderr_tail"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

#[tokio::test(flavor = "multi_thread")]
async fn read_glob_and_grep_cannot_create_a_file_anywhere() {
    let p = Project::new();
    let outside = tempfile::tempdir().unwrap();
    for tool in ["read", "glob", "grep"] {
        let inside = p.root.join(format!("made-by-{tool}"));
        let out = outside.path().join(format!("made-by-{tool}"));
        let report = probe_as(&p, tool, &[&inside, &out]).await;
        assert!(!report.contains("CREATED"), "{tool}: {report}");
        assert_eq!(report.matches("REFUSED").count(), 2, "{tool}: {report}");
        assert!(!inside.exists() && !out.exists());
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn edit_writes_only_inside_the_project_and_never_into_git() {
    let p = Project::new();
    std::fs::create_dir(p.root.join(".git")).unwrap();
    let outside = tempfile::tempdir().unwrap();
    let inside = p.root.join("made-by-edit");
    let git = p.root.join(".git/made-by-edit");
    let out = outside.path().join("made-by-edit");
    let report = probe_as(&p, "edit", &[&inside, &git, &out]).await;
    assert!(
        report.contains(&format!("CREATED {}", inside.display())),
        "{report}"
    );
    assert!(
        report.contains(&format!("REFUSED {}", git.display())),
        "{report}"
    );
    assert!(
        report.contains(&format!("REFUSED {}", out.display())),
        "{report}"
    );
    assert!(!git.exists() && !out.exists());
}

/// `hc serve --stdio` in `dir`, as a client.
fn serve(dir: &Path) -> (tokio::process::Child, Client) {
    let mut server = tokio::process::Command::new(HC)
        .args(["serve", "--stdio"])
        .current_dir(dir)
        .env("XDG_CONFIG_HOME", dir.join(".user-config"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let (client, _events) =
        Client::connect(server.stdout.take().unwrap(), server.stdin.take().unwrap());
    (server, client)
}

/// Runs `command` in `shell` through `client`, optionally narrowed.
async fn shell(client: &Client, command: &str, narrowed: Option<Capabilities>) -> Answer {
    let mut args = Project::args("shell", json!({"command": command}));
    args.capabilities = narrowed;
    let id = client.run("shell", args).await.unwrap();
    let done = client.await_processes(&[id.as_str()]).await.unwrap();
    answer_of(&id, &done[&id])
}

#[tokio::test(flavor = "multi_thread")]
async fn configuration_widens_shell_and_a_run_still_narrows_it() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    init(&root);
    let extra = tempfile::tempdir().unwrap();
    let extra: PathBuf = extra.path().canonicalize().unwrap();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let command = format!(
        "touch {}/from-shell && echo wrote; exec 3<>/dev/tcp/127.0.0.1/{port} && echo connected",
        extra.display()
    );
    // without configuration: neither
    {
        let (_server, client) = serve(&root);
        let a = shell(&client, &command, None).await;
        assert!(
            a.is_error && !a.text.contains("wrote") && !a.text.contains("connected"),
            "{a:#?}"
        );
    }
    std::fs::write(
        root.join(".hermitcrab/config.toml"),
        format!(
            "[programs.shell]\nnetwork = true\nwrite = [\"{}\"]\n",
            extra.display()
        ),
    )
    .unwrap();
    // A project's grants apply once it is trusted.
    trust(&root);
    let (_server, client) = serve(&root);
    let a = shell(&client, &command, None).await.ok();
    assert!(
        a.text.contains("wrote") && a.text.contains("connected"),
        "{}",
        a.text
    );
    assert!(extra.join("from-shell").exists());
    std::fs::remove_file(extra.join("from-shell")).unwrap();
    // a run may still narrow what configuration granted
    let narrow = Capabilities {
        filesystem: FilesystemAccess {
            read: ReadAccess::All,
            write: vec![".".into()],
        },
        network: false,
        env: Vec::new(),
        programs: Vec::new(),
    };
    let n = shell(&client, &command, Some(narrow)).await;
    assert!(
        n.is_error && !n.text.contains("wrote") && !n.text.contains("connected"),
        "{n:#?}"
    );
    assert!(!extra.join("from-shell").exists());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_configured_write_root_that_does_not_exist_is_named() {
    let dir = tempfile::tempdir().unwrap();
    init(dir.path());
    std::fs::write(
        dir.path().join(".hermitcrab/config.toml"),
        "[programs.shell]\nwrite = [\"/no/such/dir\"]\n",
    )
    .unwrap();
    trust(dir.path());
    let out = hc_in(dir.path())
        .args(["serve", "--stdio"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("[programs.shell]") && err.contains("/no/such/dir"),
        "{err}"
    );
    std::fs::write(
        dir.path().join(".hermitcrab/config.toml"),
        "[programs.shell]\ncolour = 1\n",
    )
    .unwrap();
    let out = hc_in(dir.path())
        .args(["serve", "--stdio"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("unknown setting `programs.shell.colour`")
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn every_tool_answers_through_hc_serve() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    init(&root);
    std::fs::write(root.join("notes.txt"), "remember the milk\n").unwrap();
    let (_server, client) = serve(&root);
    let run = |program: &'static str, input: serde_json::Value| {
        let client = client.clone();
        async move {
            let id = client
                .run(program, Project::args(program, input))
                .await
                .unwrap();
            let done = client.await_processes(&[id.as_str()]).await.unwrap();
            answer_of(&id, &done[&id])
        }
    };
    let read = run("read", json!({"file_path": "notes.txt"})).await.ok();
    assert!(read.text.contains("remember the milk"));
    let edit = run("edit", json!({"file_path": "notes.txt", "old_string": "milk", "new_string": "eggs", "expect_sha256": read.data["sha256"]})).await.ok();
    assert_eq!(edit.data["replacements"], 1);
    run("write", json!({"file_path": "new.txt", "content": "x"}))
        .await
        .ok();
    assert_eq!(
        run("glob", json!({"pattern": "*.txt"})).await.ok().data["count"],
        2
    );
    assert_eq!(
        run("grep", json!({"pattern": "eggs"})).await.ok().text,
        "notes.txt"
    );
    assert!(
        run("shell", json!({"command": "cat notes.txt"}))
            .await
            .ok()
            .text
            .contains("eggs")
    );
    assert_eq!(run("echo", json!({"text": "hi"})).await.ok().text, "hi");
    run("web-fetch", json!({"url": "gopher://x"}))
        .await
        .refused("http and https");
}

#[tokio::test(flavor = "multi_thread")]
async fn configuration_sets_a_programs_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    init(&root);
    std::fs::write(
        root.join(".hermitcrab/config.toml"),
        "[programs.shell]\ntimeout_ms = 300\n",
    )
    .unwrap();
    trust(&root);
    let (_server, client) = serve(&root);
    let a = shell(&client, "sleep 20", None).await;
    assert_eq!(a.status, "failed", "{a:#?}");
    assert_eq!(a.body["timeout_ms"], 300, "{a:#?}");
    assert!(
        a.body["error"]
            .as_str()
            .unwrap_or_default()
            .contains("time"),
        "{a:#?}"
    );
}
