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
