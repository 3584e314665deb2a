//! Sessions: found by id, unique prefix or the name a program gave one,
//! the newest, the latest, made for a run — every lookup a host makes.

use crate::exit::exit;
use anyhow::Result;
use engine::{Context, Engine};
use protocol::ScopeOpts;
use serde::Deserialize as _;
use substrate::Substrate;

/// A new session, or one to go on with.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Choice {
    /// A new one.
    New,
    /// The latest (`--continue`).
    Latest,
    /// This one (`--resume ID`: an id or a unique prefix of one).
    Resume(String),
    /// This one, already resolved (a chat's session).
    Known(String),
}

/// A session id from a unique prefix of one.
pub fn resolve(db: &Substrate, given: &str) -> Result<String> {
    if let Some(named) = named(db, given)? {
        return Ok(named);
    }
    by_prefix(db, "session", given, "session", "`hc sessions` lists them")
}

/// The newest session of the project.
pub fn newest(db: &Substrate) -> Result<String> {
    (instance_ids(db, "session")?.pop())
        .ok_or_else(|| exit(2, "there is no session yet; start one with `hc run \"…\"`"))
}

/// The newest session of the project that is not a replay (`hc replay`
/// with no id: replaying a replay replays nothing new).
pub fn newest_recorded(db: &Substrate) -> Result<String> {
    let found = db.scope(
        &["session"],
        &ScopeOpts {
            kind: substrate::TypeFilter::Instance,
            limit: Some(usize::MAX),
            ..ScopeOpts::default()
        },
    )?;
    (found.chunks.iter().rev())
        .find(|c| {
            agent::contract::SessionBody::parse(&c.body_value())
                .replay_of
                .is_none()
        })
        .map(|c| c.id.clone())
        .ok_or_else(|| {
            exit(
                2,
                "there is no session to replay; start one with `hc run \"…\"`",
            )
        })
}

/// The sessions made at or after `since`, oldest first.
pub fn made_since(db: &Substrate, since: std::time::SystemTime) -> Result<Vec<String>> {
    let found = db.scope(
        &["session"],
        &ScopeOpts {
            kind: substrate::TypeFilter::Instance,
            ..ScopeOpts::default()
        },
    )?;
    Ok(found
        .chunks
        .iter()
        .filter(|c| {
            let body =
                agent::contract::SessionBody::deserialize(c.body_value()).unwrap_or_default();
            humantime::parse_rfc3339_weak(&body.created).is_ok_and(|t| t >= since)
        })
        .map(|c| c.id.clone())
        .collect())
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
pub fn named(db: &Substrate, name: &str) -> Result<Option<String>> {
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
pub fn shown(db: &Substrate, session: &str) -> String {
    db.read(|s| s.body(session))
        .ok()
        .flatten()
        .and_then(|b| agent::contract::SessionBody::parse(&b).session_id)
        .unwrap_or_else(|| session.to_owned())
}

/// A sub-agent's process (its own session) named by id or a unique
/// prefix of one: `hc trace` shows and rebuilds it like a session.
pub fn sub_agent(db: &Substrate, given: &str) -> Result<Option<String>> {
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
        [] if ids.is_empty() => Err(exit(
            2,
            format!("no {what} `{given}` in this project, which has none yet; {hint}"),
        )),
        [] => {
            let newest: Vec<&str> = ids.iter().rev().take(10).map(String::as_str).collect();
            let more = if ids.len() > newest.len() {
                ", …"
            } else {
                ""
            };
            Err(exit(
                2,
                format!(
                    "no {what} `{given}` in this project; there are {} (newest first){more}; {hint}",
                    newest.join(", ")
                ),
            ))
        }
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

/// The session made last.
pub fn latest(engine: &Engine) -> Result<String> {
    let sessions = engine.scope(
        &Context::host(),
        &["session".to_owned()],
        &protocol::ScopeOpts {
            kind: substrate::TypeFilter::Instance,
            include: substrate::Include {
                body: false,
                dimensions: false,
            },
            ..protocol::ScopeOpts::default()
        },
    )?;
    sessions.chunks.last().map(|c| c.id.clone()).ok_or_else(|| {
        exit(
            2,
            "there is no session to continue yet; start one with `hc run \"…\"`",
        )
    })
}

/// A new session for `prompt` (its title the prompt's first line, cut).
pub fn create(engine: &Engine, prompt: &str) -> Result<String> {
    let (id, declaration) = agent::launch::new_session(prompt);
    engine.commit(&Context::host(), declaration)?;
    Ok(id)
}

/// Session `id` (an id given out ahead by [`agent::launch::new_session_id`])
/// made now for `prompt`.
pub fn create_as(engine: &Engine, id: &str, prompt: &str) -> Result<()> {
    let declaration = agent::launch::session_declaration(id, prompt, None);
    engine.commit(&Context::host(), declaration)?;
    Ok(())
}

/// Whether session `id` is in the substrate.
pub fn exists(db: &Substrate, id: &str) -> Result<bool> {
    Ok(db.read(|snap| snap.is_instance_of(id, "session"))?)
}

/// Removes a session made for a run that could not start (best effort:
/// what it could not remove stays, and says nothing worse than empty).
pub fn forget(engine: &Engine, session: &str) {
    let mut declaration = protocol::Declaration::default();
    declaration.remove.chunks.push(session.to_owned());
    if let Err(e) = engine.commit(&Context::host(), declaration) {
        tracing::debug!("cannot remove the session {session} of a run that did not start: {e}");
    }
}

/// The session a run goes on, as it was asked (a new one made now, named
/// by `--session-id` when given).
pub fn for_choice(
    engine: &Engine,
    prompt: &str,
    choice: &Choice,
    name: Option<&str>,
) -> Result<String> {
    Ok(match choice {
        Choice::New => match name {
            None => create(engine, prompt)?,
            Some(name) => {
                if named(engine.db(), name)?.is_some() {
                    return Err(exit(
                        2,
                        format!(
                            "--session-id {name}: a session already has that id; go on with it with --resume {name}"
                        ),
                    ));
                }
                let (id, declaration) = agent::launch::new_named_session(prompt, Some(name));
                engine.commit(&Context::host(), declaration)?;
                id
            }
        },
        Choice::Latest => latest(engine)?,
        Choice::Known(id) => id.clone(),
        // A session that is not there is a usage error, as `--continue`
        // with none is.
        Choice::Resume(id) => resolve(engine.db(), id).map_err(|e| exit(2, format!("{e:#}")))?,
    })
}

/// Whether processes' engines are gone, each engine judged once (a
/// queued run waits for one: never gone).
pub struct Gone<'a> {
    db: &'a Substrate,
    judged: std::collections::HashMap<Option<String>, bool>,
}

impl<'a> Gone<'a> {
    /// Judges against `db`'s engines.
    pub fn new(db: &'a Substrate) -> Gone<'a> {
        Gone {
            db,
            judged: std::collections::HashMap::new(),
        }
    }

    /// Whether `process` is marked running by an engine that is gone.
    pub fn judge(&mut self, process: &protocol::process::ProcessBody) -> bool {
        if process.status.ended() || process.queued() {
            return false;
        }
        let db = self.db;
        *(self.judged.entry(process.engine.clone()))
            .or_insert_with(|| engine::process_gone(db, process))
    }
}
