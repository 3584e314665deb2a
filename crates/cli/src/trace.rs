//! `hc trace SESSION`: a session as it happened (`tree.rs`); `--request N`
//! the exact body of the session's N-th model call, rebuilt from the
//! substrate by the function the agent built it with; `--diff N` what
//! changed in it from call N−1.

use crate::exit::exit;
use crate::project::Project;
use anyhow::{Result, bail};
use engine::Engine;
use protocol::ScopeOpts;
use substrate::Substrate;

/// A session id from a unique prefix of one.
pub fn resolve_session(db: &Substrate, given: &str) -> Result<String> {
    if let Some(named) = named_session(db, given)? {
        return Ok(named);
    }
    by_prefix(db, "session", given, "session", "`hc sessions` lists them")
}

/// The newest session of the project.
fn newest_session(db: &Substrate) -> Result<String> {
    (instance_ids(db, "session")?.pop())
        .ok_or_else(|| exit(2, "there is no session yet; start one with `hc run \"…\"`"))
}

/// The ids of `ty`'s instances, oldest first.
fn instance_ids(db: &Substrate, ty: &str) -> Result<Vec<String>> {
    let found = db.scope(
        &[ty],
        &ScopeOpts {
            kind: substrate::TypeFilter::Instance,
            include: substrate::Include {
                body: false,
                dimensions: false,
            },
            ..ScopeOpts::default()
        },
    )?;
    Ok(found.chunks.iter().map(|c| c.id.clone()).collect())
}

/// The session a program named `name` (`--session-id`), if one is.
pub fn named_session(db: &Substrate, name: &str) -> Result<Option<String>> {
    if name.starts_with("s_") || name.is_empty() {
        return Ok(None);
    }
    let sessions = db.scope(
        &["session"],
        &ScopeOpts {
            kind: substrate::TypeFilter::Instance,
            ..ScopeOpts::default()
        },
    )?;
    Ok(sessions
        .chunks
        .iter()
        .find(|c| {
            agent::contract::SessionBody::parse(&c.body_value())
                .session_id
                .as_deref()
                == Some(name)
        })
        .map(|c| c.id.clone()))
}

/// The name a program gave `session`, else its id: what stream-json lines
/// call it.
pub fn shown_session(db: &Substrate, session: &str) -> String {
    db.read(|s| s.body(session))
        .ok()
        .flatten()
        .and_then(|b| agent::contract::SessionBody::parse(&b).session_id)
        .unwrap_or_else(|| session.to_owned())
}

/// A sub-agent's process (its own session) named by id or a unique
/// prefix of one: `hc trace` shows and rebuilds it like a session.
fn sub_agent(db: &Substrate, given: &str) -> Result<Option<String>> {
    if !given.starts_with("p_") {
        return Ok(None);
    }
    let hint = "`hc trace SESSION --json` names each sub-agent's process";
    by_prefix(db, "program/agent", given, "agent run", hint).map(Some)
}

/// The one instance of `ty` whose id is `given` or begins with it.
fn by_prefix(db: &Substrate, ty: &str, given: &str, what: &str, hint: &str) -> Result<String> {
    let ids = instance_ids(db, ty)?;
    let matching: Vec<&str> = ids
        .iter()
        .map(String::as_str)
        .filter(|id| id.starts_with(given))
        .collect();
    match matching.as_slice() {
        [one] => Ok((*one).to_owned()),
        // A wrong id is a usage error (exit 2) wherever it is given.
        [] => Err(exit(
            2,
            format!("no {what} `{given}` in this project; {hint}"),
        )),
        many if many.contains(&given) => Ok(given.to_owned()),
        many => Err(exit(
            2,
            format!(
                "`{given}` names {} {what}s ({}…); give more of the id",
                many.len(),
                many.iter().take(3).copied().collect::<Vec<_>>().join(", ")
            ),
        )),
    }
}

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

/// `hc trace`.
pub fn trace(asked: TraceRequest) -> Result<()> {
    let (project, db) = crate::project::open_store()?;
    let session = match &asked.session {
        None => newest_session(&db)?,
        Some(given) => match sub_agent(&db, given)? {
            Some(process) => process,
            None => resolve_session(&db, given)?,
        },
    };
    match (asked.request, asked.diff) {
        (None, None) => crate::tree::show(&db, &session, asked.full, asked.json),
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
    for line in text.lines() {
        let shown = match line.chars().next() {
            Some('+') if !line.starts_with("+++") => crate::style::ok(line),
            Some('-') if !line.starts_with("---") => crate::style::bad(line),
            Some('@') => crate::style::dim(line),
            _ => line.to_owned(),
        };
        println!("{shown}");
    }
    Ok(())
}
