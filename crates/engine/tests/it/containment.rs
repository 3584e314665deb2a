//! Containment: a contained program cannot write outside its roots
//! (directly, through a symlink, through `../`), write `.git` inside a root,
//! reach a listener on 127.0.0.1 over TCP or UDP without `network`, ptrace,
//! read outside declared read roots, or see the host's environment; the same
//! program can when the capability is granted; a grandchild that leaves the
//! process group is still contained, and cancel kills it.

use crate::common;
use common::*;
use engine::Context;
use protocol::{Capabilities, ErrorCode, FilesystemAccess, ReadAccess, RunArgs};
use serde_json::{Value, json};
use std::io::Read;
use std::net::{TcpListener, UdpSocket};
use std::path::Path;
use std::time::{Duration, Instant};
use substrate::{ChunkDecl, NewPlacement};

struct Places {
    work: tempfile::TempDir,
    outside: tempfile::TempDir,
}

fn places() -> Places {
    let work = tempfile::tempdir().unwrap();
    std::fs::create_dir(work.path().join(".git")).unwrap();
    std::fs::write(work.path().join(".git/config"), "[core]\n").unwrap();
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret.txt"), "the host's secret").unwrap();
    Places { work, outside }
}

fn path(p: &Path) -> String {
    p.to_string_lossy().into_owned()
}

/// The real Python interpreter (not a shim) and its installation prefix: a
/// program that restricts its reads must declare where its interpreter
/// lives, as a user would.
fn python() -> (String, String) {
    let out = std::process::Command::new("python3")
        .args([
            "-c",
            "import sys; print(sys.executable); print(sys.base_prefix)",
        ])
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    let mut lines = text.lines();
    (
        lines.next().unwrap().to_owned(),
        lines.next().unwrap().to_owned(),
    )
}

/// The probe program may do everything, if a run lets it.
fn probe_program(h: &Harness, p: &Places) {
    h.program_with(
        "probe",
        json!("open"),
        30_000,
        json!({
            "filesystem": {"read": "all", "write": [path(p.work.path()), path(p.outside.path())]},
            "network": true,
            "env": ["CARGO_MANIFEST_DIR"]
        }),
    );
    // the real interpreter, so its prefix is all a restricted read needs
    h.commit(vec![
        substrate::ChunkDecl::with_id("program/probe")
            .merge_body(json!({"executable": python().0})),
    ]);
}

fn actions(p: &Places, tcp: u16, udp: u16) -> Value {
    let w = p.work.path();
    let o = p.outside.path();
    let sibling = format!(
        "{}/../{}/dotdot.txt",
        path(w),
        o.file_name().unwrap().to_string_lossy()
    );
    json!([
        {"do": "write", "path": path(&w.join("inside.txt"))},
        {"do": "write", "path": path(&o.join("direct.txt"))},
        {"do": "symlink-write", "target": path(o), "link": path(&w.join("link"))},
        {"do": "write", "path": sibling},
        {"do": "write", "path": path(&w.join(".git/config"))},
        {"do": "tcp", "port": tcp},
        {"do": "udp", "port": udp},
        {"do": "ptrace"},
        {"do": "read", "path": path(&o.join("secret.txt"))},
        {"do": "env", "name": "CARGO_MANIFEST_DIR"},
        {"do": "file-contains", "path": "/proc/1/environ", "needle": env!("CARGO_MANIFEST_DIR")},
        {"do": "env", "name": "TMPDIR"}
    ])
}

/// Runs the probe; returns its results and whether the listeners heard it.
async fn probe(
    h: &Harness,
    p: &Places,
    capabilities: Option<Capabilities>,
) -> (Vec<String>, bool, bool) {
    let tcp = TcpListener::bind("127.0.0.1:0").unwrap();
    tcp.set_nonblocking(true).unwrap();
    let udp = UdpSocket::bind("127.0.0.1:0").unwrap();
    udp.set_nonblocking(true).unwrap();
    let task = json!({"mode": "probe", "actions": actions(p, tcp.local_addr().unwrap().port(), udp.local_addr().unwrap().port())});
    let mut args = Harness::task(task);
    args.capabilities = capabilities;
    let id = h.engine.run(&Context::host(), "probe", args).unwrap();
    let results = results_of(h, &id).await;
    let heard_tcp = tcp.accept().is_ok();
    let mut buf = [0u8; 64];
    let heard_udp = udp.recv(&mut buf).is_ok();
    (results, heard_tcp, heard_udp)
}

fn closed(p: &Places) -> Capabilities {
    Capabilities {
        filesystem: FilesystemAccess {
            read: ReadAccess::Paths(vec![path(p.work.path()), python().1]),
            write: vec![path(p.work.path())],
        },
        network: false,
        env: vec![],
        programs: Vec::new(),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_contained_program_cannot_reach_past_its_capabilities() {
    let h = Harness::new();
    let p = places();
    probe_program(&h, &p);
    let (r, heard_tcp, heard_udp) = probe(&h, &p, Some(closed(&p))).await;
    assert_eq!(r[0], "ok", "it may write inside its root");
    assert!(r[1].starts_with("denied"), "direct write outside: {}", r[1]);
    assert!(
        r[2].starts_with("denied"),
        "write through a symlink: {}",
        r[2]
    );
    assert!(r[3].starts_with("denied"), "write through ../: {}", r[3]);
    assert!(r[4].starts_with("denied"), ".git inside the root: {}", r[4]);
    assert!(
        r[5].starts_with("denied") && !heard_tcp,
        "tcp to 127.0.0.1: {}",
        r[5]
    );
    assert!(
        r[6].starts_with("denied") && !heard_udp,
        "udp to 127.0.0.1: {}",
        r[6]
    );
    assert!(r[7].starts_with("denied"), "ptrace: {}", r[7]);
    assert!(
        r[8].starts_with("denied"),
        "read outside the read roots: {}",
        r[8]
    );
    assert_eq!(r[9], "unset", "the host's environment");
    assert_ne!(
        r[10], "found",
        "the host's environment, through its init's /proc"
    );
    // Its temp dir sits in a private directory of this user's.
    let tmp = std::path::PathBuf::from(r[11].strip_prefix("set: ").unwrap());
    let mine = tmp.parent().unwrap();
    assert_eq!(
        mine.file_name().unwrap().to_string_lossy(),
        format!("hermitcrab-{}", nix::unistd::getuid())
    );
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(
        std::fs::metadata(mine).unwrap().permissions().mode() & 0o777,
        0o700
    );
    assert!(!p.outside.path().join("direct.txt").exists());
    assert!(!p.outside.path().join("through-link").exists());
    assert!(!p.outside.path().join("dotdot.txt").exists());
    assert_eq!(
        std::fs::read_to_string(p.work.path().join(".git/config")).unwrap(),
        "[core]\n"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn the_same_program_can_when_the_capability_is_granted() {
    let h = Harness::new();
    let p = places();
    probe_program(&h, &p);
    let (r, heard_tcp, heard_udp) = probe(&h, &p, None).await;
    assert_eq!(
        &r[..4],
        ["ok", "ok", "ok", "ok"],
        "writes to the granted roots: {r:?}"
    );
    assert!(
        r[4].starts_with("denied"),
        ".git stays read-only inside a writable root: {}",
        r[4]
    );
    assert_eq!((r[5].as_str(), heard_tcp), ("ok", true));
    assert_eq!((r[6].as_str(), heard_udp), ("ok", true));
    assert!(
        r[7].starts_with("denied"),
        "ptrace is never granted: {}",
        r[7]
    );
    assert_eq!(r[8], "ok");
    assert_eq!(r[9], format!("set: {}", env!("CARGO_MANIFEST_DIR")));
    assert_eq!(
        std::fs::read_to_string(p.outside.path().join("direct.txt")).unwrap(),
        "written by a program"
    );
}

/// Starts the probe with `actions`; its results once it ends.
async fn run_probe(h: &Harness, actions: Value, capabilities: Capabilities) -> String {
    let mut args = Harness::task(json!({"mode": "probe", "actions": actions}));
    args.capabilities = Some(capabilities);
    h.engine.run(&Context::host(), "probe", args).unwrap()
}

async fn results_of(h: &Harness, id: &str) -> Vec<String> {
    let done = h.wait(id).await;
    assert_eq!(
        status(&done).0,
        "completed",
        "{:?}",
        done.scopes[0].body_value()
    );
    output(&done)["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r.as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn programs_without_network_share_an_empty_network_namespace_but_not_its_sockets() {
    let h = Harness::new();
    let p = places();
    probe_program(&h, &p);
    let host_netns = std::fs::read_link("/proc/self/ns/net").unwrap();
    for network in [false, true] {
        let caps = Capabilities {
            network,
            ..closed(&p)
        };
        let name = format!("hc-test-{}-{network}", std::process::id());
        let ready = p.work.path().join(format!("listening-{network}"));
        let server = run_probe(
            &h,
            json!([
                {"do": "netns"},
                {"do": "unix-serve", "name": name, "ready": path(&ready), "seconds": 3}
            ]),
            caps.clone(),
        )
        .await;
        for _ in 0..200 {
            if ready.exists() {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(25)).await;
        }
        assert!(ready.exists(), "the first program never listened");
        let client = run_probe(
            &h,
            json!([{"do": "netns"}, {"do": "unix-connect", "name": name}]),
            caps,
        )
        .await;
        let (client, server) = (results_of(&h, &client).await, results_of(&h, &server).await);
        if network {
            assert_eq!(
                server[0],
                host_netns.to_string_lossy(),
                "the host's network"
            );
            assert_eq!((client[1].as_str(), server[1].as_str()), ("ok", "heard"));
        } else {
            assert_ne!(
                server[0],
                host_netns.to_string_lossy(),
                "not the host's network"
            );
            assert_eq!(client[0], server[0], "one namespace, shared");
            assert!(
                client[1].starts_with("denied"),
                "another program's socket: {client:?}"
            );
            assert_eq!(server[1], "silent");
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn uncontained_the_probe_can_even_ptrace_and_every_run_says_so() {
    let h = Harness::uncontained();
    let p = places();
    probe_program(&h, &p);
    let (r, ..) = probe(&h, &p, Some(closed(&p))).await;
    assert_eq!(
        r[7], "ok",
        "the probe's ptrace works where nothing stops it"
    );
    assert_eq!(r[4], "ok", "nor is .git protected");
    let any = h.read(&["engine/process"]).chunks[0].body_value();
    assert_eq!(any["containment"], "off");
    let contained = Harness::new();
    let id = contained.run("fixture", json!({"mode": "output"}));
    assert_eq!(
        contained.wait(&id).await.scopes[0].body_value()["containment"],
        "on"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_run_may_narrow_capabilities_but_never_widen_them() {
    let h = Harness::new();
    let p = places();
    h.program_with(
        "tight",
        json!("open"),
        30_000,
        json!({"filesystem": {"read": "all", "write": [path(p.work.path())]}}),
    );
    let widen = |caps: Capabilities| RunArgs {
        capabilities: Some(caps),
        ..Harness::task(json!({"mode": "output"}))
    };
    let mut net = closed(&p);
    net.network = true;
    let e = h
        .engine
        .run(&Context::host(), "tight", widen(net))
        .unwrap_err();
    assert_eq!(e.code, ErrorCode::BoundaryViolation);
    assert!(
        e.message.contains("network") && e.message.contains("never widen"),
        "{e}"
    );
    let mut write = closed(&p);
    write.filesystem.write = vec![path(p.outside.path())];
    assert!(
        h.engine
            .run(&Context::host(), "tight", widen(write))
            .unwrap_err()
            .message
            .contains("write")
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_grandchild_that_leaves_the_process_group_is_contained_and_killed() {
    let h = Harness::new();
    let id = h.run("fixture", json!({"mode": "escape"}));
    let start = Instant::now();
    while outputs(&h.read(&[id.as_str()])).is_empty() {
        assert!(start.elapsed() < Duration::from_secs(30));
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let trampoline = h.body(&id)["pid"].as_i64().unwrap();
    let members = namespace_members(trampoline);
    let escaped: Vec<i64> = members
        .iter()
        .copied()
        .filter(|pid| !group_members(trampoline).contains(pid))
        .collect();
    assert!(
        !escaped.is_empty(),
        "the setsid grandchild left the process group: {members:?}"
    );
    h.engine.cancel(&Context::host(), &id).unwrap();
    h.wait(&id).await;
    assert_all_die(&members, "its program's cancel").await;
}

/// Host pids of the processes in the PID namespace the trampoline made.
fn namespace_members(trampoline: i64) -> Vec<i64> {
    let init = children_of(trampoline)
        .into_iter()
        .next()
        .expect("the trampoline has its init");
    let ns = std::fs::read_link(format!("/proc/{init}/ns/pid")).unwrap();
    let mine = std::fs::read_link("/proc/self/ns/pid").unwrap();
    assert_ne!(ns, mine, "the program runs in a PID namespace of its own");
    let mut out = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i64>() else {
            continue;
        };
        if std::fs::read_link(format!("/proc/{pid}/ns/pid"))
            .ok()
            .as_ref()
            == Some(&ns)
            && alive(pid)
        {
            out.push(pid);
        }
    }
    out
}

fn children_of(parent: i64) -> Vec<i64> {
    let mut text = String::new();
    let _ = std::fs::File::open(format!("/proc/{parent}/task/{parent}/children"))
        .and_then(|mut f| f.read_to_string(&mut text));
    text.split_whitespace()
        .filter_map(|p| p.parse().ok())
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn without_landlock_programs_are_refused_with_the_way_out() {
    let h = Harness::with(|root| {
        let mut c = config(root);
        c.assume_landlock = Some(false);
        c
    });
    let before = h.db.head().unwrap();
    let e = h
        .engine
        .run(
            &Context::host(),
            "fixture",
            Harness::task(json!({"mode": "output"})),
        )
        .unwrap_err();
    assert_eq!(e.code, ErrorCode::Internal);
    for needle in ["Landlock", "containment = \"off\"", "--no-contain"] {
        assert!(
            e.message.contains(needle),
            "{needle} missing from: {}",
            e.message
        );
    }
    assert_eq!(h.db.head().unwrap(), before, "nothing was created");
}

/// This process's children started with `--zygote`.
fn zygotes() -> Vec<i64> {
    let me = std::process::id().to_string();
    let mut out = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i64>() else {
            continue;
        };
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
        let parent = status
            .lines()
            .find_map(|l| l.strip_prefix("PPid:"))
            .map(str::trim);
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        if parent == Some(me.as_str()) && cmdline.split(|b| *b == 0).any(|a| a == b"--zygote") {
            out.push(pid);
        }
    }
    out
}

fn parent_of(pid: i64) -> Option<i64> {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()?
        .lines()
        .find_map(|l| l.strip_prefix("PPid:"))?
        .trim()
        .parse()
        .ok()
}

#[tokio::test(flavor = "multi_thread")]
async fn contained_runs_are_forked_by_the_zygote_and_go_on_without_it() {
    let h = Harness::new();
    let id = h.run("fixture", json!({"mode": "hang"}));
    let start = Instant::now();
    let trampoline = loop {
        if let Some(pid) = h.body(&id)["pid"].as_i64() {
            break pid;
        }
        assert!(start.elapsed() < Duration::from_secs(30));
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    // (Tests run side by side: each engine has a zygote of its own.) Where
    // the machine gives control groups, the zygote's stem in the run's
    // groups forks it.
    let parent = parent_of(trampoline).unwrap();
    let zygote = if zygotes().contains(&parent) {
        parent
    } else {
        parent_of(parent).unwrap()
    };
    assert!(
        zygotes().contains(&zygote),
        "forked by a zygote (or its stem)"
    );
    h.engine.cancel(&Context::host(), &id).unwrap();
    let done = h.wait(&id).await;
    assert_eq!(status(&done).0, "failed");
    // Without its zygote the engine spawns trampolines itself.
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(zygote as i32),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    let id = h.run("fixture", json!({"mode": "output"}));
    let done = h.wait(&id).await;
    assert_eq!(
        status(&done).0,
        "completed",
        "{:?}",
        done.scopes[0].body_value()
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn without_network_no_socket_file_outside_is_reachable() {
    use std::os::unix::net::{UnixDatagram, UnixListener};
    let h = Harness::new();
    let p = places();
    probe_program(&h, &p);
    // Services listening on socket files outside the program's reach, as
    // a container runtime, an ssh-agent or D-Bus do.
    let stream_path = p.outside.path().join("service.sock");
    let dgram_path = p.outside.path().join("log.sock");
    let listener = UnixListener::bind(&stream_path).unwrap();
    listener.set_nonblocking(true).unwrap();
    let datagrams = UnixDatagram::bind(&dgram_path).unwrap();
    datagrams.set_nonblocking(true).unwrap();
    let actions = json!([
        {"do": "unix-path-connect", "path": path(&stream_path)},
        {"do": "unix-dgram-send", "path": path(&dgram_path)}
    ]);
    for network in [false, true] {
        let caps = Capabilities {
            network,
            ..closed(&p)
        };
        let id = run_probe(&h, actions.clone(), caps).await;
        let r = results_of(&h, &id).await;
        let heard_stream = listener.accept().is_ok();
        let mut buf = [0u8; 64];
        let heard_dgram = datagrams.recv(&mut buf).is_ok();
        if network {
            assert_eq!((r[0].as_str(), heard_stream), ("ok", true), "{r:?}");
            assert_eq!((r[1].as_str(), heard_dgram), ("ok", true), "{r:?}");
        } else {
            assert!(r[0].starts_with("denied") && !heard_stream, "{r:?}");
            assert!(r[1].starts_with("denied") && !heard_dgram, "{r:?}");
        }
    }
}

/// A program the zygote's own executable carries — as `hc` carries its
/// built-ins — is forked contained from the zygote instead of exec'd: it
/// holds nothing of the zygote's (no descriptor but its stdio, so never the
/// socket that asks the zygote for trampolines; the policy's environment
/// and no other; the project root as its directory), and Landlock holds it
/// as it holds any program.
#[tokio::test(flavor = "multi_thread")]
async fn a_carried_program_is_forked_contained_holding_nothing_of_the_zygote() {
    let exe = std::path::PathBuf::from(env!("CARGO_BIN_EXE_hc-contain-test"));
    let h = Harness::with(|root| {
        let mut c = config(root);
        c.builtin_exe = exe.clone();
        c.zygote = Some((exe.clone(), Vec::new()));
        c
    });
    let p = places();
    let inside = h.dir.path().join("made-inside");
    let outside = p.outside.path().join("made-outside");
    h.commit(vec![
        ChunkDecl::with_id("program/inside")
            .name("inside")
            .body(json!({
                "executable": "builtin:inside",
                "args": [path(&inside), path(&outside)],
                "runtime": "vm",
                "text": "says what it holds",
                "capabilities": {"filesystem": {"read": "all", "write": ["."]}},
            }))
            .on(NewPlacement::instance("engine/program")),
    ]);
    let id = h
        .engine
        .run(&Context::host(), "inside", RunArgs::default())
        .unwrap();
    let done = h.wait(&id).await;
    let body = done.scopes[0].body_value();
    let tail = body["stderr_tail"].as_str().unwrap_or_default();
    let said: Value = serde_json::from_str(tail.trim()).unwrap_or_else(|e| panic!("{e}: {body:#}"));
    assert!(
        said["cmdline"].as_str().unwrap().ends_with("--zygote"),
        "forked from the zygote, never exec'd: {said}"
    );
    let fds: Vec<&str> = said["fds"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f.as_str().unwrap())
        .collect();
    // Its stdio, and the directory it was listing.
    assert_eq!(fds.len(), 4, "{fds:?}");
    for fd in ["0=pipe:", "1=pipe:", "2=pipe:", "3=/proc/"] {
        assert!(fds.iter().any(|f| f.starts_with(fd)), "{fd} in {fds:?}");
    }
    assert!(!fds.iter().any(|f| f.contains("socket:")), "{fds:?}");
    let mut env: Vec<&str> = said["env"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    env.sort_unstable();
    for name in [
        "HC_CAPABILITIES",
        "HC_PROCESS_ID",
        "HC_PROJECT_ROOT",
        "HC_PROTOCOL",
        "TMPDIR",
    ] {
        assert!(env.contains(&name), "{name} in {env:?}");
    }
    let allowed = ["PATH", "HOME", "LANG", "LC_ALL", "TERM", "TZ", "USER"];
    assert!(
        env.iter()
            .all(|n| n.starts_with("HC_") || *n == "TMPDIR" || allowed.contains(n)),
        "nothing but the policy's environment: {env:?}"
    );
    assert_eq!(said["cwd"].as_str().unwrap(), path(h.dir.path()));
    assert_eq!(said["created"], json!([path(&inside)]), "{said}");
    assert!(inside.exists() && !outside.exists());
}
