//! `hc store info`: the project's substrate — which backend, where (a
//! server without its password), its schema version, its latest commit,
//! how many bytes it takes.

use anyhow::{Context as _, Result};

/// `hc store info`.
pub fn info(as_json: bool) -> Result<()> {
    let (_, db) = crate::project::open_store()?;
    let info = db.info().context("cannot read the substrate")?;
    if as_json {
        println!("{}", serde_json::to_string_pretty(&info)?);
        return Ok(());
    }
    println!("backend: {}", info.backend);
    println!("where: {}", crate::style::shown(&info.location));
    println!("schema version: {}", info.schema_version);
    println!("latest commit: {}", info.head);
    println!("size: {}", size(info.bytes));
    Ok(())
}

/// `bytes` as a person reads it.
fn size(bytes: u64) -> String {
    match bytes {
        b if b >= 1 << 30 => format!("{:.1} GiB", b as f64 / f64::from(1u32 << 30)),
        b if b >= 1 << 20 => format!("{:.1} MiB", b as f64 / f64::from(1u32 << 20)),
        b if b >= 1 << 10 => format!("{:.1} KiB", b as f64 / 1024.0),
        b => format!("{b} bytes"),
    }
}

/// `hc store copy --to X` / `--from X`: the whole record into an empty
/// store, then every session's requests rebuilt on both and compared.
pub fn copy(to: Option<String>, from: Option<String>) -> Result<()> {
    let here = std::env::current_dir().context("cannot read the working directory")?;
    let project = crate::project::Project::find(&here)?;
    let ours = std::sync::Arc::new(project.open_unseeded()?);
    let (other, to_other) = match (&to, &from) {
        (Some(place), None) => (place, true),
        (None, Some(place)) => (place, false),
        _ => anyhow::bail!("say where: --to URL|FILE or --from URL|FILE"),
    };
    let theirs = std::sync::Arc::new(open_other(&project, other, to_other)?);
    let (source, target) = match to_other {
        true => (ours, theirs),
        false => (theirs, ours),
    };
    let copied = source.copy_to(&target).map_err(|e| {
        anyhow::anyhow!(
            "cannot copy {}: {e}",
            if to_other { "to it" } else { "from it" }
        )
    })?;
    println!("copied {copied} commits");
    let (same, sessions, unrecorded) = compare(&project, source, target)?;
    println!(
        "rebuilt {same} requests of {sessions} sessions on the copy: byte-identical{}",
        match unrecorded {
            0 => String::new(),
            n => format!(" ({n} older calls record no request to rebuild, on either)"),
        }
    );
    Ok(())
}

/// The store `place` names: a PostgreSQL URL (the project's schema there,
/// or `?schema=NAME`) or a SQLite file.
fn open_other(
    project: &crate::project::Project,
    place: &str,
    copied_to: bool,
) -> Result<substrate::Substrate> {
    if place.starts_with("postgres://") || place.starts_with("postgresql://") {
        return crate::project::open_server(place, &project.root, &project.database())
            .with_context(|| format!("cannot open {}", substrate::shown_store(place)));
    }
    if place.contains("://") {
        // (not shown: it may hold a password)
        anyhow::bail!(
            "that is neither a PostgreSQL URL (postgres://USER@HOST/DATABASE) nor a file"
        );
    }
    let path = std::path::Path::new(place);
    // a file copied to is made new (never another program's written into);
    // one copied from must be there (never made, empty, by the copy)
    let there = std::fs::symlink_metadata(path).is_ok();
    if copied_to && there {
        anyhow::bail!(
            "{} exists; copy into a new file (or remove it first)",
            path.display()
        );
    }
    if !copied_to && !there {
        anyhow::bail!("{} does not exist", path.display());
    }
    crate::project::open_file(path)
}

/// Every session's requests rebuilt from `source` and from `target`:
/// how many were the same, of how many sessions, and how many calls
/// could not be rebuilt on either (recorded before requests were). A
/// request rebuilt differently, or only on one, is an error naming it.
fn compare(
    project: &crate::project::Project,
    source: std::sync::Arc<substrate::Substrate>,
    target: std::sync::Arc<substrate::Substrate>,
) -> Result<(usize, usize, usize)> {
    let sessions = all_sessions(&source)?;
    let count = sessions.len();
    let reader = |db| {
        let mut config = engine::EngineConfig::new(&project.root);
        config.containment = contain::Containment::Off;
        engine::Engine::open_with(db, config)
    };
    crate::runtime()?.block_on(async move {
        let (from, to) = (reader(source)?, reader(target)?);
        let (from_client, _e1) = from.host_client();
        let (to_client, _e2) = to.host_client();
        let (mut same, mut unrecorded) = (0, 0);
        for session in &sessions {
            let mut items = Vec::new();
            let mut after = None;
            loop {
                let opts = substrate::ScopeOpts {
                    limit: Some(1000),
                    after: after.take(),
                    ..Default::default()
                };
                let page = from_client.scope(&[session.as_str()], opts).await?;
                items.extend(page.chunks);
                match page.next_after {
                    Some(next) => after = Some(next),
                    None => break,
                }
            }
            let calls = agent::calls(&items).len();
            for n in 1..=calls {
                let a = agent::request_body(&from_client, session, n).await;
                let b = agent::request_body(&to_client, session, n).await;
                match (a, b) {
                    (Ok(a), Ok(b)) if a == b => same += 1,
                    (Err(a), Err(b)) if a.to_string() == b.to_string() => unrecorded += 1,
                    _ => anyhow::bail!(
                        "request {n} of session {session} is not rebuilt the same on the copy; \
                         the copy is kept, but do not use it"
                    ),
                }
            }
        }
        crate::close(&from).await;
        crate::close(&to).await;
        Ok((same, count, unrecorded))
    })
}

/// Every session's id, oldest first.
fn all_sessions(db: &substrate::Substrate) -> Result<Vec<String>> {
    let mut out = Vec::new();
    let mut after = None;
    loop {
        let page = db.scope(
            &["session"],
            &substrate::ScopeOpts {
                kind: substrate::TypeFilter::Instance,
                include: substrate::Include {
                    body: false,
                    dimensions: false,
                },
                limit: Some(1000),
                after: after.take(),
                ..Default::default()
            },
        )?;
        out.extend(page.chunks.iter().map(|c| c.id.clone()));
        match page.next_after {
            Some(next) => after = Some(next),
            None => return Ok(out),
        }
    }
}
