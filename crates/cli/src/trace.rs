//! `hc trace SESSION`: a session as it happened. `--request N` prints the
//! exact body of the session's N-th model call, rebuilt from the substrate
//! by the function the agent built it with.

use crate::project::Project;
use anyhow::{Context as _, Result, bail};
use engine::{Context, Engine};
use protocol::ScopeOpts;

/// A session id from a unique prefix of one.
pub fn resolve_session(engine: &Engine, given: &str) -> Result<String> {
    let host = Context::host();
    let sessions = engine.scope(
        &host,
        &["session".to_owned()],
        &ScopeOpts {
            kind: substrate::TypeFilter::Instance,
            include: substrate::Include {
                body: false,
                dimensions: false,
            },
            ..ScopeOpts::default()
        },
    )?;
    let matching: Vec<&str> = sessions
        .chunks
        .iter()
        .map(|c| c.id.as_str())
        .filter(|id| id.starts_with(given))
        .collect();
    match matching.as_slice() {
        [one] => Ok((*one).to_owned()),
        [] => bail!("no session `{given}` in this project; `hc sessions` lists them"),
        many if many.contains(&given) => Ok(given.to_owned()),
        many => bail!(
            "`{given}` names {} sessions ({}…); give more of the id",
            many.len(),
            many.iter().take(3).copied().collect::<Vec<_>>().join(", ")
        ),
    }
}

/// `hc trace SESSION --request N`.
pub fn request(session: &str, n: usize) -> Result<()> {
    let here = std::env::current_dir().context("cannot read the working directory")?;
    let project = Project::find(&here)?;
    let config = crate::engine_config(&project, false)?;
    let (db, _) = project.open()?;
    crate::runtime()?.block_on(async move {
        let engine = Engine::open_with(db, config)?;
        let session = resolve_session(&engine, session)?;
        let (client, _events) = engine.host_client();
        let body = agent::request_body(&client, &session, n)
            .await
            .map_err(anyhow::Error::msg)?;
        use std::io::Write as _;
        let mut out = std::io::stdout().lock();
        out.write_all(&body)?;
        out.write_all(b"\n")?;
        crate::close(&engine).await;
        Ok(())
    })
}
