//! `hc` under a pseudo-terminal (`script`), typed at step by step.

use crate::common::*;
use std::process::Stdio;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// When to type the next input.
pub type Ready = Box<dyn Fn(&Setup) -> bool + Send>;

/// `hc ARGS` under a pseudo-terminal; `input` typed as `(after, bytes)`
/// steps, each once `after` says so; answers the exit code and what the
/// terminal showed.
pub async fn in_terminal(
    s: &Setup,
    args: &str,
    env: &[(&str, &str)],
    input: Vec<(Ready, &[u8])>,
) -> (i32, String) {
    let mut child = tokio::process::Command::new("script");
    for var in SCRUB {
        child.env_remove(var);
    }
    child
        // `exec`: a shell that stays between (dash does) would take the
        // terminal's SIGINT and die of it, and `script` answers its code.
        .args(["-qfec", &format!("exec {HC} {args}"), "/dev/null"])
        .current_dir(&s.root)
        .envs(home_env())
        .env("ANTHROPIC_BASE_URL", s.fake.base_url())
        .env("XDG_CONFIG_HOME", s.root.join(".no-user-config"))
        .env("XDG_DATA_HOME", s.root.join(".no-user-data"))
        .env_remove("NO_COLOR")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .kill_on_drop(true);
    for (k, v) in env {
        child.env(k, v);
    }
    let mut child = child.spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let reader = tokio::spawn(async move {
        let mut out = Vec::new();
        let _ = stdout.read_to_end(&mut out).await;
        String::from_utf8_lossy(&out).into_owned()
    });
    for (ready, bytes) in input {
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        while !ready(s) {
            assert!(
                std::time::Instant::now() < deadline,
                "waited 30 s to type {:?}",
                String::from_utf8_lossy(bytes)
            );
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        // Let the prompt be drawn before typing.
        tokio::time::sleep(Duration::from_millis(300)).await;
        stdin.write_all(bytes).await.unwrap();
        stdin.flush().await.unwrap();
    }
    let status = tokio::time::timeout(Duration::from_secs(30), child.wait())
        .await
        .expect("hc did not end")
        .unwrap();
    (status.code().unwrap_or(-1), reader.await.unwrap())
}

/// `hc run ARGS` under a pseudo-terminal, Ctrl-C typed once `ready`
/// says so.
pub async fn run_then_ctrl_c(
    s: &Setup,
    args: &str,
    ready: impl Fn(&Setup) -> bool + Send + 'static,
) -> (i32, String) {
    in_terminal(
        s,
        &format!("run {args}"),
        &[],
        vec![(Box::new(ready), b"\x03")],
    )
    .await
}

pub fn always() -> Ready {
    Box::new(|_| true)
}

/// Once a permission is asked on the first session.
pub fn permission_asked() -> Ready {
    Box::new(|s: &Setup| {
        s.sessions()
            .first()
            .is_some_and(|id| !s.of_type(id, "permission-request").is_empty())
    })
}

/// Once `n` agent runs on the chat's session have ended.
pub fn runs_ended(n: usize) -> Ready {
    Box::new(move |s: &Setup| {
        s.sessions().first().is_some_and(|id| {
            s.processes(id)
                .iter()
                .filter(|p| p["ended"].is_string())
                .count()
                >= n
        })
    })
}

#[tokio::test(flavor = "multi_thread")]
async fn a_slow_allowed_tool_shows_its_text_and_its_line_while_it_runs() {
    // the tool runs until the test has seen its text and its live line
    let wait = "for i in $(seq 600); do [ -f gate ] && break; sleep 0.05; done; echo finished";
    let s = Setup::new(serde_json::json!({"turns": [
        reply(serde_json::json!([
            text("I'll run the slow suite now."),
            call("t1", "shell", serde_json::json!({"command": wait})),
        ]), "tool_use"),
        reply(serde_json::json!([text("All done.")]), "end_turn"),
    ]}))
    .await;
    let mut child = tokio::process::Command::new("script");
    for var in SCRUB {
        child.env_remove(var);
    }
    let mut child = child
        .args([
            "-qfec",
            &format!("exec {HC} run --allow shell go"),
            "/dev/null",
        ])
        .current_dir(&s.root)
        .envs(home_env())
        .env("ANTHROPIC_BASE_URL", s.fake.base_url())
        .env("XDG_CONFIG_HOME", s.root.join(".no-user-config"))
        .env("XDG_DATA_HOME", s.root.join(".no-user-data"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let mut shown = Vec::new();
    let mut chunk = [0u8; 4096];
    let seen = tokio::time::timeout(Duration::from_secs(30), async {
        loop {
            let n = stdout.read(&mut chunk).await.unwrap();
            assert!(n > 0, "hc ended first: {}", String::from_utf8_lossy(&shown));
            shown.extend_from_slice(&chunk[..n]);
            let text = String::from_utf8_lossy(&shown);
            if text.contains("I'll run the slow suite now.") && text.contains("running shell") {
                break;
            }
        }
    })
    .await;
    let before = String::from_utf8_lossy(&shown).into_owned();
    std::fs::write(s.root.join("gate"), "").unwrap();
    assert!(seen.is_ok(), "dark while the tool ran: {before:?}");
    assert!(!before.contains("All done."), "{before:?}");
    let mut rest = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(30), stdout.read_to_end(&mut rest)).await;
    let status = child.wait().await.unwrap();
    let after = String::from_utf8_lossy(&rest);
    assert_eq!(status.code(), Some(0), "{before}{after}");
    assert!(
        after.contains("shell for i in") && after.contains("All done."),
        "{after:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_permission_is_answered_with_one_key() {
    let s = Setup::new(serde_json::json!({"turns": [
        reply(serde_json::json!([call("w1", "write", serde_json::json!({"file_path": "out.txt", "content": "yes\n"}))]), "tool_use"),
        reply(serde_json::json!([text("Written.")]), "end_turn"),
    ]}))
    .await;
    let (code, shown) = in_terminal(
        &s,
        "run 'write it'",
        &[],
        // `y` alone: no Enter
        vec![(permission_asked(), b"y")],
    )
    .await;
    assert_eq!(code, 0, "{shown}");
    assert_eq!(
        std::fs::read_to_string(s.root.join("out.txt")).unwrap(),
        "yes\n"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn esc_interrupts_a_run_as_ctrl_c_does() {
    let long = "word ".repeat(400);
    let s = Setup::new(serde_json::json!({"turns": [
        {"reply": {"content": [text(&long)], "stop_reason": "end_turn"}, "pace": {"delay_ms": 40, "text_chunk": 10}},
    ]}))
    .await;
    let streaming: Ready = Box::new(|s: &Setup| {
        s.fake
            .requests()
            .first()
            .is_some_and(|r| r.received.elapsed() > Duration::from_millis(400))
    });
    let (code, shown) =
        in_terminal(&s, "run 'a long story'", &[], vec![(streaming, b"\x1b")]).await;
    assert_eq!(code, 130, "{shown}");
    let session = s.sessions().pop().unwrap();
    assert_eq!(s.of_type(&session, "interrupt").len(), 1, "{shown}");
}
