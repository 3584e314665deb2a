//! `hc trace SESSION`: a session as it happened (`tree.rs`); `--request N`
//! the exact body of the session's N-th model call, rebuilt from the
//! substrate by the function the agent built it with; `--diff N` what
//! changed in it from call N−1.

use crate::project::Project;
use crate::sessions;
use anyhow::{Result, bail};
use engine::Engine;
use substrate::Substrate;

/// What `hc trace` was asked.
pub struct TraceRequest {
    /// The session (or a unique prefix); none: the newest.
    pub session: Option<String>,
    /// `--request N`.
    pub request: Option<usize>,
    /// `--diff N`.
    pub diff: Option<usize>,
    /// `--full`.
    pub full: bool,
    /// `--json`.
    pub json: bool,
}

/// The one session `hc trace` shows (more are for `--otel`).
pub fn one_session(mut sessions: Vec<String>) -> Result<Option<String>> {
    if sessions.len() > 1 {
        return Err(crate::exit::exit(
            2,
            "hc trace shows one session; more than one are sent with --otel",
        ));
    }
    Ok(sessions.pop())
}

/// `hc trace`.
pub fn trace(asked: TraceRequest) -> Result<()> {
    if (asked.request.is_some() || asked.diff.is_some()) && (asked.full || asked.json) {
        let flag = if asked.full { "--full" } else { "--json" };
        return Err(crate::exit::exit(
            2,
            format!(
                "{flag} goes with the session's tree; --request prints the body sent (JSON), \
                 --diff what changed between two calls"
            ),
        ));
    }
    let (project, db) = crate::project::open_store()?;
    let session = match &asked.session {
        None => sessions::newest(&db)?,
        Some(given) => match sessions::sub_agent(&db, given)? {
            Some(process) => process,
            None => sessions::resolve(&db, given)?,
        },
    };
    match (asked.request, asked.diff) {
        (None, None) => crate::cmd::tree::show(&db, &session, asked.full, asked.json),
        (Some(n), _) => {
            let body = rebuilt(&project, db, &session, &[n])?.remove(0);
            use std::io::Write as _;
            let mut out = std::io::stdout().lock();
            out.write_all(&body)?;
            // Piped or redirected, the bytes are exactly the body sent; a
            // terminal gets the line ended.
            if std::io::IsTerminal::is_terminal(&out) {
                out.write_all(b"\n")?;
            }
            Ok(())
        }
        (None, Some(n)) => diff(&project, db, &session, n),
    }
}

/// The bodies of calls `ns` of `session`, rebuilt through an engine.
fn rebuilt(
    project: &Project,
    db: std::sync::Arc<Substrate>,
    session: &str,
    ns: &[usize],
) -> Result<Vec<Vec<u8>>> {
    // An engine only to read through (no program runs): uncontained, and
    // nothing to say about it.
    let mut config = engine::EngineConfig::new(&project.root);
    config.containment = contain::Containment::Off;
    crate::runtime()?.block_on(async move {
        let engine = Engine::open_with(db, config)?;
        let (client, _events) = engine.host_client();
        let mut out = Vec::new();
        for n in ns {
            out.push(
                agent::request_body(&client, session, *n)
                    .await
                    .map_err(anyhow::Error::msg)?,
            );
        }
        crate::close(&engine).await;
        Ok(out)
    })
}

/// `--diff N`: the request of call N against call N−1's, as a unified
/// diff of their pretty-printed JSON.
fn diff(project: &Project, db: std::sync::Arc<Substrate>, session: &str, n: usize) -> Result<()> {
    if n < 2 {
        bail!("--diff N compares call N with call N-1: give N of 2 or more");
    }
    let bodies = rebuilt(project, db, session, &[n - 1, n])?;
    let text = crate::describe::diff_text(&bodies[0], &bodies[1], n)?;
    print_diff(&text);
    Ok(())
}

/// A unified diff printed, its added and removed lines coloured.
pub fn print_diff(text: &str) {
    for line in text.lines() {
        let shown = match line.chars().next() {
            Some('+') if !line.starts_with("+++") => crate::style::ok(line),
            Some('-') if !line.starts_with("---") => crate::style::bad(line),
            Some('@') => crate::style::dim(line),
            _ => line.to_owned(),
        };
        println!("{shown}");
    }
}
