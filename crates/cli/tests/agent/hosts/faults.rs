//! What goes wrong between hosts: a worker whose checkout lacks a run's
//! base commit, one on a host that cannot contain tools (its kernel has
//! no Landlock, as `hc` sees it), the database server restarted under
//! three workers, a host whose clock is a minute behind, a worker told to
//! stop while its store is away.

use super::Team;
use crate::common::{call, text, when};
use serde_json::{Value, json};
use std::time::{Duration, Instant};

/// A process and all it started (its own process group), killed when
/// the test ends, passed or failed: `faketime` runs `hc` as its child,
/// which killing `faketime` alone would leave running.
struct Group(tokio::process::Child);

impl Drop for Group {
    fn drop(&mut self) {
        if let Some(pid) = self.0.id() {
            let _ = std::process::Command::new("kill")
                .args(["-KILL", "--", &format!("-{pid}")])
                .status();
        }
    }
}

/// Job `k` reads `notes.txt`, then is done (after `delay_ms`).
fn jobs(n: usize, delay_ms: u64) -> Value {
    let mut turns = Vec::new();
    for k in 0..n {
        let id = format!("tu{k:02}x");
        let read = call(&id, "read", json!({"file_path": "notes.txt"}));
        turns.push(when(&format!("job {k:02}!"), json!([read]), "tool_use"));
        let mut done = when(&id, json!([text(&format!("job {k:02} done"))]), "end_turn");
        done["pace"] = json!({"first_byte_delay_ms": delay_ms});
        turns.push(done);
    }
    json!({"turns": turns})
}

/// Queues job `k` from host `i` (`extra` flags first): its session.
async fn queue(team: &Team, i: usize, k: usize, extra: &[&str]) -> String {
    let prompt = format!("job {k:02}!");
    let mut args = vec!["run", "--bg", "--allow", "read"];
    args.extend_from_slice(extra);
    args.push(&prompt);
    let out = team.out(i, &args).await;
    assert_eq!(out.code, 0, "{out:?}");
    out.stdout.trim().to_owned()
}

/// A kernel without Landlock, as a program sees it: its three calls
/// answer ENOSYS (a seccomp filter, inherited by everything it starts).
fn without_landlock(command: &mut tokio::process::Command) {
    use seccompiler::{BpfProgram, SeccompAction, SeccompFilter};
    let rules = [444i64, 445, 446]
        .into_iter()
        .map(|call| (call, Vec::new()))
        .collect();
    let arch = std::env::consts::ARCH.try_into().unwrap();
    let filter = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(38), // ENOSYS
        arch,
    )
    .unwrap();
    let program: BpfProgram = filter.try_into().unwrap();
    // SAFETY: between fork and exec the child makes two system calls
    // (prctl, seccomp) on a program built before the fork: nothing that
    // allocates or takes a lock.
    #[allow(unsafe_code)]
    unsafe {
        command.pre_exec(move || {
            seccompiler::apply_filter(&program).map_err(|e| std::io::Error::other(e.to_string()))
        });
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_run_waits_past_workers_that_cannot_take_it_for_one_that_can() {
    let team = Team::new(3, jobs(1, 0), "").await;
    // A's base commit is on A alone (not pushed); A's worker holds A's
    // lock but takes only runs asking for `elsewhere`
    std::fs::write(team.root(0).join("notes.txt"), "changed on A\n").unwrap();
    super::git(&team.root(0), &["commit", "-qam", "on A only"]);
    let mut held = team.worker(0, &["--labels", "elsewhere"]);
    let b = team.worker(1, &[]);
    let mut c = team.hc(2, &["worker"]);
    let log_c = std::fs::File::create(team.log(2)).unwrap();
    c.stdout(std::process::Stdio::null()).stderr(log_c);
    without_landlock(&mut c);
    let c = c.spawn().unwrap();
    let session = queue(&team, 0, 0, &[]).await;
    // B cannot fetch its base commit, C cannot contain its tools: it waits
    let said_by =
        |i: usize, what: &str| std::fs::read_to_string(team.log(i)).is_ok_and(|l| l.contains(what));
    let deadline = Instant::now() + Duration::from_secs(30);
    while !(said_by(1, "left for another worker: its base commit")
        && said_by(2, "left for another worker: its tools run contained"))
    {
        assert!(Instant::now() < deadline, "B and C did not both pass it");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let rows = team.agents(0).await;
    let row = rows.iter().find(|r| r["id"] == *session).unwrap();
    assert_eq!(row["status"], "queued", "{row}");
    assert!(row["note"].as_str().unwrap().contains("host-"), "{row}");
    assert!(
        said_by(0, "asks for no label"),
        "A's labelled worker passed it too"
    );
    // a worker that can take it does
    held.start_kill().unwrap();
    let _ = held.wait().await;
    let _a = team.worker(0, &[]);
    let rows = team
        .until(0, 60, |rows| rows.iter().all(|r| r["status"] == "done"))
        .await;
    assert_eq!(rows[0]["host"], "host-a", "{rows:#?}");
    assert!(
        rows[0].get("note").is_none(),
        "its note goes with its claim"
    );
    drop((b, c));
}

#[tokio::test(flavor = "multi_thread")]
async fn the_database_restarted_under_three_workers_loses_no_step() {
    let mut team = Team::new(3, jobs(9, 2500), "lease_seconds = 8\n").await;
    let _workers: Vec<_> = (0..3).map(|i| team.worker(i, &["--max", "3"])).collect();
    let mut sessions = Vec::new();
    for k in 0..9 {
        sessions.push(queue(&team, 0, k, &[]).await);
    }
    // once every run has asked its first question, the server goes away
    let deadline = Instant::now() + Duration::from_secs(60);
    while team.sent().len() < 9 {
        assert!(Instant::now() < deadline, "not all runs started");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    team.cluster.stop();
    tokio::time::sleep(Duration::from_secs(1)).await;
    team.cluster.resume().unwrap();
    let rows = team
        .until(1, 120, |rows| {
            rows.len() == 9
                && rows
                    .iter()
                    .all(|r| r["status"] == "done" || r["status"] == "failed")
        })
        .await;
    let logs: Vec<String> = (0..3)
        .map(|i| std::fs::read_to_string(team.log(i)).unwrap_or_default())
        .collect();
    let db = super::team::store(&team);
    let bodies: Vec<Value> = (rows.iter())
        .filter(|r| r["status"] != "done")
        .map(|r| super::team::body_at(&db, r["process"].as_str().unwrap(), db.head().unwrap()))
        .collect();
    assert!(
        rows.iter().all(|r| r["status"] == "done"),
        "{bodies:#?}\n{logs:#?}"
    );
    // each run ran once: two requests each, each recorded once and
    // rebuilt byte for byte
    let sent = team.sent();
    assert_eq!(sent.len(), 18, "no call made twice");
    for session in &sessions {
        let row = rows.iter().find(|r| r["id"] == *session).unwrap();
        assert_eq!(row["turns"], 2, "{row}");
        for n in 1..=2 {
            let body = team.rebuilt(2, session, n).await;
            assert!(sent.contains(&body), "{session} request {n}");
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_host_a_minute_behind_keeps_its_leases() {
    let team = Team::new(2, jobs(4, 3000), "lease_seconds = 4\n").await;
    // B's clock is a minute behind; its runs take longer than a lease
    let mut behind = team.net.host(1).command("faketime");
    behind.args(["-f", "-60s", crate::common::HC, "worker", "--labels", "b"]);
    let mut behind = tokio::process::Command::from(behind);
    for var in crate::common::SCRUB {
        behind.env_remove(var);
    }
    behind
        .current_dir(team.root(1))
        .envs(team.env(1))
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::fs::File::create(team.log(1)).unwrap())
        .process_group(0)
        .kill_on_drop(true);
    let _b = Group(behind.spawn().unwrap());
    // A's worker judges B's leases every second, by the database's clock
    let _a = team.worker(0, &[]);
    for k in 0..4 {
        queue(&team, 0, k, &["--labels", "b"]).await;
    }
    let deadline = Instant::now() + Duration::from_secs(90);
    let rows = loop {
        let rows = team.agents(0).await;
        if rows.len() == 4
            && rows
                .iter()
                .all(|r| r["status"] == "done" || r["status"] == "failed")
        {
            break rows;
        }
        let log = std::fs::read_to_string(team.log(1)).unwrap_or_default();
        assert!(Instant::now() < deadline, "{rows:#?}\nB said: {log}");
        tokio::time::sleep(Duration::from_millis(250)).await;
    };
    for row in &rows {
        assert_eq!(row["status"], "done", "{row}");
        assert_eq!(row["host"], "host-b", "{row}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_worker_stops_on_sigterm_while_its_store_is_away() {
    let mut team = Team::new(1, jobs(1, 0), "").await;
    let mut worker = team.worker(0, &[]);
    let log = |team: &Team| std::fs::read_to_string(team.log(0)).unwrap_or_default();
    let deadline = Instant::now() + Duration::from_secs(30);
    while !log(&team).contains("taking the queued runs") {
        assert!(Instant::now() < deadline, "{}", log(&team));
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    team.cluster.stop();
    let deadline = Instant::now() + Duration::from_secs(60);
    while !log(&team).contains("cannot read the queue") {
        assert!(
            Instant::now() < deadline,
            "the store's absence unsaid: {}",
            log(&team)
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // a service manager stops a worker with SIGTERM
    let pid = worker.id().unwrap().to_string();
    let sent = std::process::Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .unwrap();
    assert!(sent.success());
    let ended = tokio::time::timeout(Duration::from_secs(15), worker.wait()).await;
    let said = log(&team);
    let status = ended
        .unwrap_or_else(|_| panic!("SIGTERM ignored: {said}"))
        .unwrap();
    assert!(status.success(), "{status:?}: {said}");
    assert!(said.contains("hc worker: done"), "{said}");
}
