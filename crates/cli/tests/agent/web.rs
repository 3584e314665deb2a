//! The browser host (`design/web.md`): `hc serve --http` driven in a real
//! browser — Debian's Chromium through Playwright for Python (PyPI,
//! pinned, in a venv under `target/`) — against the fake model: the token
//! gate, a run streamed, a permission answered on the page, an interrupt,
//! the trace byte for byte, a webview program's tile, a terminal run seen
//! live; and the transport's bad input. `surfaces.rs`: the page against
//! `hc trace` and the other hosts (results, totals, markdown, the Trace
//! tab, sidebar, search, processes, one answer per question).

mod surfaces;

use crate::common::*;
use serde_json::{Value, json};
use std::path::PathBuf;
use std::sync::OnceLock;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt};

const PLAYWRIGHT: &str = "playwright==1.64.1";

/// Debian's Chromium (`.ci/run` installs it).
fn chromium() -> PathBuf {
    let path = PathBuf::from("/usr/bin/chromium");
    assert!(
        path.exists(),
        "the browser tests need Debian's chromium: apt-get install chromium (.ci/run does)"
    );
    path
}

/// A Python with Playwright, made once (its own browsers are not fetched:
/// the tests drive Debian's Chromium).
fn playwright() -> PathBuf {
    static PYTHON: OnceLock<PathBuf> = OnceLock::new();
    PYTHON
        .get_or_init(|| {
            let venv = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("web-python");
            let python = venv.join("bin/python");
            let ready = venv.join(".installed");
            if std::fs::read_to_string(&ready).ok().as_deref() != Some(PLAYWRIGHT) {
                let made = std::process::Command::new("python3")
                    .args(["-m", "venv"])
                    .arg(&venv)
                    .status()
                    .unwrap();
                assert!(made.success());
                let out = std::process::Command::new(&python)
                    .args(["-m", "pip", "install", "-q", PLAYWRIGHT])
                    .output()
                    .unwrap();
                assert!(out.status.success(), "pip install {PLAYWRIGHT}: {out:?}");
                std::fs::write(&ready, PLAYWRIGHT).unwrap();
            }
            python
        })
        .clone()
}

/// `hc serve --http` on a free port, and the address it printed.
struct Served {
    child: tokio::process::Child,
    url: String,
}

impl Served {
    async fn start(s: &Setup) -> Served {
        Served::start_with(s, &[]).await
    }

    async fn start_with(s: &Setup, env: &[(&str, &str)]) -> Served {
        let mut command = s.hc(&["serve", "--http", "--port", "0"]);
        command.envs(env.iter().copied());
        command.stdout(std::process::Stdio::piped());
        let mut child = command.spawn().unwrap();
        let stdout = child.stdout.take().unwrap();
        let mut lines = tokio::io::BufReader::new(stdout).lines();
        let line = tokio::time::timeout(Duration::from_secs(30), lines.next_line())
            .await
            .expect("hc serve printed no address within 30 s")
            .unwrap()
            .unwrap();
        let url = line.rsplit(' ').next().unwrap().to_owned();
        assert!(url.contains("/?token="), "{line}");
        Served { child, url }
    }

    fn addr(&self) -> String {
        self.url
            .trim_start_matches("http://")
            .split('/')
            .next()
            .unwrap()
            .to_owned()
    }

    fn token(&self) -> String {
        self.url.split("token=").nth(1).unwrap().to_owned()
    }
}

/// One scenario of the page in the browser: what it said.
async fn page(s: &Setup, served: &Served, scenario: &str, extra: Value) -> Vec<Value> {
    page_at(&s.root, &served.url, scenario, extra).await
}

/// One scenario of the page at `url` in the browser, run in `cwd`: what
/// it said.
pub async fn page_at(cwd: &std::path::Path, url: &str, scenario: &str, extra: Value) -> Vec<Value> {
    let mut extra = extra;
    extra["chromium"] = json!(chromium());
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/agent/fixtures/web_page.py");
    let out = tokio::time::timeout(
        Duration::from_secs(120),
        tokio::process::Command::new(playwright())
            .arg(script)
            .arg(scenario)
            .arg(url)
            .arg(extra.to_string())
            .current_dir(cwd)
            .kill_on_drop(true)
            .output(),
    )
    .await
    .expect("the browser did not end within 120 s")
    .unwrap();
    let said: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    assert!(
        out.status.success(),
        "{scenario}: {}\n{said:#?}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        !said.iter().any(|l| l.get("pageerror").is_some()),
        "the page threw: {said:#?}"
    );
    said
}

/// What a scenario said under `key`.
pub fn said<'a>(lines: &'a [Value], key: &str) -> &'a Value {
    lines
        .iter()
        .find_map(|l| l.get(key))
        .unwrap_or_else(|| panic!("nothing said of {key}: {lines:#?}"))
}

/// One HTTP/1.1 exchange on a fresh connection: the status line's code
/// and the whole response.
pub async fn http(addr: &str, request: &str) -> (u16, String) {
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut out = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(5), stream.read_to_end(&mut out)).await;
    let text = String::from_utf8_lossy(&out).into_owned();
    let code = text
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    (code, text)
}

/// `POST /api/run` with `body`, as the page sends it.
async fn post_run(served: &Served, body: Value) -> (u16, String) {
    let body = body.to_string();
    let request = format!(
        "POST /api/run HTTP/1.1\r\nHost: {}\r\nCookie: hc_token={}\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        served.addr(),
        served.token(),
        body.len()
    );
    http(&served.addr(), &request).await
}

/// A paced reply: its text arrives in many small pieces.
fn paced(text_: &str, delay_ms: u64) -> Value {
    json!({"reply": {"content": [text(text_)], "stop_reason": "end_turn",
        "usage": {"input_tokens": 100, "output_tokens": 50}},
        "pace": {"delay_ms": delay_ms, "text_chunk": 8}})
}

#[tokio::test(flavor = "multi_thread")]
async fn the_token_opens_the_page_and_nothing_else_does() {
    let s = Setup::new(json!({"turns": [reply(json!([text("hi")]), "end_turn")]})).await;
    let served = Served::start(&s).await;
    let seen = page(&s, &served, "gate", json!({})).await;
    for key in ["no_token", "wrong", "wrong_place", "header_place", "api"] {
        assert_eq!(*said(&seen, key), json!(401), "{key}: {seen:#?}");
    }
    assert_eq!(*said(&seen, "shown"), json!(true));
    assert_eq!(*said(&seen, "connection"), json!("live"));
    // a WebSocket from another origin, even with the cookie, is refused
    let upgrade = |origin: &str| {
        format!(
            "GET /ws HTTP/1.1\r\nHost: {}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
             Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\
             Origin: {origin}\r\nCookie: hc_token={}\r\n\r\n",
            served.addr(),
            served.token()
        )
    };
    let (code, _) = http(&served.addr(), &upgrade("http://evil.example")).await;
    assert_eq!(code, 403);
    let (code, _) = http(
        &served.addr(),
        &upgrade(&format!("http://{}", served.addr())),
    )
    .await;
    assert_eq!(code, 101, "the page's own origin is let in");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_run_started_on_the_page_streams_its_answer() {
    let story = "Once upon a time a hermit crab found a shell that fit. ".repeat(8);
    let s = Setup::new(json!({"turns": [paced(&story, 25)]})).await;
    let served = Served::start(&s).await;
    let seen = page(&s, &served, "stream", json!({})).await;
    let lengths = said(&seen, "lengths").as_array().unwrap();
    assert!(
        lengths.len() >= 4,
        "the answer was painted as it streamed, piece by piece: {lengths:?}"
    );
    assert_eq!(said(&seen, "final").as_str().unwrap().trim(), story.trim());
    assert!(
        said(&seen, "status").as_str().unwrap().contains("1 turn ·"),
        "{seen:#?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_permission_answered_on_the_page_lets_the_tool_run() {
    let s = Setup::new(json!({"turns": [
        reply(json!([call("w", "write", json!({"file_path": "page.txt", "content": "from the page"}))]), "tool_use"),
        reply(json!([text("written")]), "end_turn"),
    ]}))
    .await;
    let served = Served::start(&s).await;
    // (the README's picture is the sidebar test's: surfaces.rs)
    let shot = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("page-permission.png");
    let seen = page(&s, &served, "permission", json!({"screenshot": shot})).await;
    assert!(
        said(&seen, "answered").as_str().unwrap().contains("allow"),
        "{seen:#?}"
    );
    assert!(
        said(&seen, "change")
            .as_str()
            .unwrap()
            .contains("+ from the page"),
        "the question shows what the write would write: {seen:#?}"
    );
    assert_eq!(
        std::fs::read_to_string(s.root.join("page.txt")).unwrap(),
        "from the page"
    );
    let session = s.sessions().pop().unwrap();
    assert_eq!(
        s.of_type(&session, "permission-decision")[0]["decision"],
        "allow"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_rewind_on_the_page_puts_the_files_back_and_goes_on_in_a_fork() {
    let s = Setup::new(crate::rewind::two_writes()).await;
    let session = crate::rewind::first_and_second(&s).await;
    let served = Served::start(&s).await;
    let seen = page(&s, &served, "rewind", json!({"session": session})).await;
    assert_eq!(said(&seen, "buttons"), 2, "{seen:#?}");
    assert!(
        said(&seen, "status")
            .as_str()
            .unwrap()
            .contains("put back 1 path"),
        "{seen:#?}"
    );
    assert!(s.root.join("a.txt").exists() && !s.root.join("b.txt").exists());
    // the page goes on in the fork: the first prompt only
    let forked = s.sessions().into_iter().find(|id| *id != session).unwrap();
    assert!(
        said(&seen, "url").as_str().unwrap().ends_with(&forked),
        "{seen:#?}"
    );
    assert_eq!(said(&seen, "prompts"), 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_plan_is_approved_on_the_page_and_carried_out() {
    let s = Setup::new(json!({"turns": [
        reply(json!([call("p1", "exit_plan", json!({"plan": "Write plan.txt."}))]), "tool_use"),
        reply(json!([call("w", "write", json!({"file_path": "plan.txt", "content": "done"}))]), "tool_use"),
        reply(json!([text("carried out")]), "end_turn"),
    ]}))
    .await;
    let served = Served::start_with(&s, &[("HC_PERMISSION_MODE", "plan")]).await;
    let seen = page(&s, &served, "plan", json!({})).await;
    assert_eq!(said(&seen, "plan"), "Write plan.txt.", "{seen:#?}");
    assert_eq!(
        std::fs::read_to_string(s.root.join("plan.txt")).unwrap(),
        "done"
    );
    let session = s.sessions().pop().unwrap();
    assert_eq!(
        s.of_type(&session, "user-answer")[0]["text"],
        "accept-edits"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn interrupt_on_the_page_ends_the_run() {
    let long = "word ".repeat(600);
    let s = Setup::new(json!({"turns": [paced(&long, 30)]})).await;
    let served = Served::start(&s).await;
    let seen = page(&s, &served, "interrupt", json!({})).await;
    assert!(
        said(&seen, "conversation")
            .as_str()
            .unwrap()
            .contains("interrupted"),
        "{seen:#?}"
    );
    let session = s.sessions().pop().unwrap();
    assert_eq!(s.processes(&session)[0]["stop_reason"], "interrupted");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_trace_shows_each_request_byte_for_byte_and_its_diff() {
    let s = Setup::new(json!({"turns": [
        reply(json!([call("g", "glob", json!({"pattern": "*.md"}))]), "tool_use"),
        reply(json!([text("found")]), "end_turn"),
    ]}))
    .await;
    assert_eq!(
        s.run(&["--permission-mode", "bypass", "look around"])
            .await
            .code,
        0
    );
    let session = s.sessions().pop().unwrap();
    let served = Served::start(&s).await;
    let seen = page(&s, &served, "trace", json!({"session": session, "n": 2})).await;
    assert_eq!(
        said(&seen, "raw").as_str().unwrap().as_bytes(),
        &s.sent()[1][..],
        "the page's request 2 is what the fake received"
    );
    let shown: Value = serde_json::from_str(said(&seen, "shown").as_str().unwrap()).unwrap();
    assert_eq!(
        shown,
        serde_json::from_slice::<Value>(&s.sent()[1]).unwrap()
    );
    assert!(
        said(&seen, "diff")
            .as_str()
            .unwrap()
            .contains("+++ request 2"),
        "{seen:#?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_webview_program_runs_as_a_tile_survives_a_reload_and_completes_when_closed() {
    let s = Setup::new(json!({"turns": [reply(json!([text("unused")]), "end_turn")]})).await;
    let served = Served::start(&s).await;
    let seen = page(&s, &served, "tile", json!({})).await;
    let process = said(&seen, "process").as_str().unwrap().to_owned();
    assert_eq!(*said(&seen, "notes"), json!(["first note"]));
    assert!(
        said(&seen, "seen").as_str().unwrap().starts_with("commit "),
        "the tile's subscription heard its commit"
    );
    assert_eq!(*said(&seen, "after_reload"), json!("first note"));
    wait_for("the closed tile's run to complete", || {
        s.db().read(|snap| snap.body(&process)).unwrap().unwrap()["status"] == "completed"
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_terminal_run_shows_up_on_the_page_as_it_happens() {
    terminal_run_seen_live(None).await;
}

/// The same with the substrate on PostgreSQL: the page's engine follows
/// the terminal's, another engine on the same server.
#[tokio::test(flavor = "multi_thread")]
async fn a_run_on_another_engine_shows_up_on_the_page_through_postgres() {
    let cluster = testkit::PgCluster::shared().unwrap();
    let store = format!("{}&schema=live_{}", cluster.url, std::process::id());
    terminal_run_seen_live(Some(&store)).await;
}

/// A terminal `hc run` while the page is open: the page shows it as it
/// happens (both on `store` when one is given).
async fn terminal_run_seen_live(store: Option<&str>) {
    let s =
        Setup::new(json!({"turns": [reply(json!([text("from the terminal")]), "end_turn")]})).await;
    let on_store: Vec<(&str, &str)> = store.iter().map(|url| ("HC_STORE", *url)).collect();
    let served = Served::start_with(&s, &on_store).await;
    let env: std::collections::HashMap<String, String> = std::env::vars()
        .filter(|(k, _)| !SCRUB.contains(&k.as_str()))
        .chain([
            ("ANTHROPIC_BASE_URL".to_owned(), s.fake.base_url()),
            (
                "XDG_CONFIG_HOME".to_owned(),
                root_of(&s.root.join(".no-user-config")),
            ),
            (
                "XDG_DATA_HOME".to_owned(),
                root_of(&s.root.join(".no-user-data")),
            ),
        ])
        .chain(
            on_store
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned())),
        )
        .collect();
    let seen = page(
        &s,
        &served,
        "live",
        json!({"hc_run": [HC, "run", "hello from a terminal"], "cwd": s.root, "env": env}),
    )
    .await;
    assert_eq!(*said(&seen, "code"), json!(0));
    assert!(
        said(&seen, "first")
            .as_str()
            .unwrap()
            .contains("hello from a terminal"),
        "{seen:#?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_tile_is_held_to_its_own_run_and_a_flood_leaves_the_page_answered() {
    let s = Setup::new(json!({"turns": [reply(json!([text("unused")]), "end_turn")]})).await;
    let served = Served::start(&s).await;
    let seen = page(&s, &served, "tile_abuse", json!({})).await;
    let first = said(&seen, "first").as_array().unwrap();
    let code = |m: &Value| m["error"]["code"].as_str().unwrap_or("").to_owned();
    assert_eq!(code(&first[0]), "INVALID_REQUEST", "{first:?}");
    assert_eq!(
        code(&first[1]),
        "BOUNDARY_VIOLATION",
        "another process's id: {first:?}"
    );
    assert_eq!(
        code(&first[2]),
        "BOUNDARY_VIOLATION",
        "outside its boundary: {first:?}"
    );
    let second = said(&seen, "second").as_array().unwrap();
    assert!(
        second[0]["error"]["message"]
            .as_str()
            .unwrap()
            .contains("used already"),
        "{second:?}"
    );
    assert!(
        said(&seen, "page_ms").as_f64().unwrap() < 5000.0,
        "{seen:#?}"
    );
    // nothing the tile tried landed on the other run
    let other = said(&seen, "other").as_str().unwrap();
    let on_other = s.db().scope(&[other], &Default::default()).unwrap();
    assert!(
        !on_other
            .chunks
            .iter()
            .any(|c| c.body_value()["text"] == "x"),
        "{on_other:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_server_killed_mid_run_leaves_the_run_reconciled_at_the_next_open() {
    let long = "word ".repeat(2000);
    let s = Setup::new(json!({"turns": [paced(&long, 50)]})).await;
    let mut served = Served::start(&s).await;
    let (code, response) = post_run(&served, json!({"prompt": "go on and on"})).await;
    assert_eq!(code, 200, "{response}");
    let session = s.sessions().pop().unwrap();
    wait_for("the run to be streaming", || {
        !s.fake.requests_to("/v1/messages").is_empty()
    })
    .await;
    served.child.start_kill().unwrap();
    served.child.wait().await.unwrap();
    // the next engine to open the project settles what the dead one left
    let reopened = s.piped(&["serve", "--stdio"], b"").await;
    assert!(reopened.status.success(), "{reopened:?}");
    let runs = s.processes(&session);
    assert_eq!(runs[0]["status"], "failed", "{runs:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn search_the_palette_and_a_programs_form_work_from_the_keyboard() {
    let s = Setup::new(json!({"turns": [reply(json!([text("a hermit crab")]), "end_turn")]})).await;
    assert_eq!(s.run(&["tell me of the hermit"]).await.code, 0);
    let served = Served::start(&s).await;
    let seen = page(&s, &served, "tour", json!({})).await;
    assert!(said(&seen, "found").as_u64().unwrap() >= 1, "{seen:#?}");
    assert_eq!(*said(&seen, "ran"), json!("hello from a form"));
    let runs = processes_of(&s, "echo");
    assert_eq!(runs[0]["status"], "completed");
}

/// A change asked with the cookie but from another origin (a page on
/// another site, in a browser that sent the cookie anyway) is refused
/// with nothing run; the same from the page's own origin runs.
#[tokio::test(flavor = "multi_thread")]
async fn a_change_from_another_origin_is_refused() {
    let s = Setup::new(json!({"turns": [reply(json!([text("ran")]), "end_turn")]})).await;
    let served = Served::start(&s).await;
    let body = json!({"prompt": "go"}).to_string();
    let post = |origin: &str| {
        format!(
            "POST /api/run HTTP/1.1\r\nHost: {}\r\nOrigin: {origin}\r\nCookie: hc_token={}\r\n\
             Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            served.addr(),
            served.token(),
            body.len()
        )
    };
    let (code, response) = http(&served.addr(), &post("http://evil.example")).await;
    assert_eq!(code, 403, "{response}");
    assert!(s.sessions().is_empty(), "nothing ran");
    let own = format!("http://{}", served.addr());
    let (code, response) = http(&served.addr(), &post(&own)).await;
    assert_eq!(code, 200, "{response}");
    wait_for("the run's session", || !s.sessions().is_empty()).await;
}

/// DNS rebinding: a page whose own name resolves to this server is
/// refused whatever it carries; and the printed address opens the page
/// once — later only with the cookie it set.
#[tokio::test(flavor = "multi_thread")]
async fn another_host_name_is_refused_and_the_address_works_once() {
    let s = Setup::new(json!({"turns": [reply(json!([text("hi")]), "end_turn")]})).await;
    let served = Served::start(&s).await;
    let port = served.addr().rsplit(':').next().unwrap().to_owned();
    let get = |host: &str, path: &str, cookie: bool| {
        format!(
            "GET {path} HTTP/1.1\r\nHost: {host}\r\n{}Connection: close\r\n\r\n",
            if cookie {
                format!("Cookie: hc_token={}\r\n", served.token())
            } else {
                String::new()
            }
        )
    };
    let rebound = format!("evil.example:{port}");
    let (code, response) = http(&served.addr(), &get(&rebound, "/", true)).await;
    assert_eq!(code, 403, "{response}");
    let with_token = format!("/?token={}", served.token());
    let (code, _) = http(&served.addr(), &get(&rebound, &with_token, false)).await;
    assert_eq!(code, 403);
    let (code, response) = http(&served.addr(), &get(&served.addr(), &with_token, false)).await;
    assert_eq!(code, 303, "{response}");
    assert!(response.contains("hc_token="), "{response}");
    // the same address again, from a browser without the cookie
    let (code, response) = http(&served.addr(), &get(&served.addr(), &with_token, false)).await;
    assert_eq!(code, 401, "{response}");
    assert!(response.contains("opened once"), "{response}");
    // the browser that holds the cookie still gets in, by any of its names
    let (code, _) = http(&served.addr(), &get(&served.addr(), &with_token, true)).await;
    assert_eq!(code, 303);
    let local = format!("localhost:{port}");
    let (code, _) = http(&served.addr(), &get(&local, "/", true)).await;
    assert_eq!(code, 200);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_run_started_in_the_background_from_the_page_is_taken_by_the_server() {
    let s =
        Setup::new(json!({"turns": [reply(json!([text("done in the background")]), "end_turn")]}))
            .await;
    for args in [
        vec!["init", "-q"],
        vec![
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "commit",
            "-q",
            "--allow-empty",
            "-m",
            "start",
        ],
    ] {
        let out = std::process::Command::new("git")
            .args(&args)
            .current_dir(&s.root)
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
    }
    let served = Served::start(&s).await;
    let asked = json!({"prompt": "work on your own", "background": true});
    let (code, response) = post_run(&served, asked).await;
    assert_eq!(code, 200, "{response}");
    let session = s.sessions().pop().unwrap();
    assert!(response.contains(&session), "{response}");
    // the server's own worker takes it, in a worktree of its own
    let rows = || {
        let rows: Vec<Value> = serde_json::from_str(
            &String::from_utf8(
                std::process::Command::new(HC)
                    .args(["agents", "--json"])
                    .current_dir(&s.root)
                    .env("XDG_CONFIG_HOME", s.root.join(".no-user-config"))
                    .output()
                    .unwrap()
                    .stdout,
            )
            .unwrap(),
        )
        .unwrap();
        rows
    };
    wait_for("the background run to end", || {
        rows().first().is_some_and(|r| r["status"] == "done")
    })
    .await;
    let row = rows().remove(0);
    assert_eq!(row["branch"], format!("hc/{session}"), "{row}");
    let answers = s.of_type(&session, "answer");
    assert_eq!(answers[0]["text"], "done in the background");
    let list = format!(
        "GET /api/sessions HTTP/1.1\r\nHost: {}\r\nCookie: hc_token={}\r\nConnection: close\r\n\r\n",
        served.addr(),
        served.token()
    );
    let (code, listed) = http(&served.addr(), &list).await;
    assert_eq!(code, 200, "{listed}");
    assert!(
        listed.contains(&format!("\"branch\":\"hc/{session}\"")),
        "{listed}"
    );
}
