//! The person's own memory: a substrate of its own under
//! `$XDG_DATA_HOME/hermitcrab/` (the same library, its own file), shared
//! by every project. A request reads only its project's substrate, so
//! before a run the host mirrors the person's memory into the project's
//! `user-memory` scope; what a run changed there (the agent's `memory`
//! tool) is carried back to the person's substrate after it — and, should
//! a run end without that, before the next one (the project remembers
//! the commit it last synced at).

use agent::contract::{MemoryEntry, USER_MEMORY};
use anyhow::{Context as _, Result};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use substrate::{ChunkDecl, Declaration, NewPlacement, PlacementType, ScopeOpts, Substrate};

/// The person's memory substrate's file.
pub fn store_path() -> Option<PathBuf> {
    Some(crate::config::xdg_dir("XDG_DATA_HOME", ".local/share")?.join("substrate.db"))
}

/// Opens (making it when needed) the person's memory substrate.
pub fn open_store() -> Result<Substrate> {
    let path =
        store_path().context("cannot find your data directory: set HOME or XDG_DATA_HOME")?;
    open_store_at(&path)
}

/// Opens (making it when needed) a memory substrate at `path`.
pub fn open_store_at(path: &Path) -> Result<Substrate> {
    if let Some(dir) = path.parent() {
        make_private_dir(dir)?;
    }
    let db = Substrate::open(path).with_context(|| format!("cannot open {}", path.display()))?;
    db.init(vec![
        ChunkDecl::with_id(USER_MEMORY)
            .name(USER_MEMORY)
            .spec(json!({}))
            .body(json!({})),
    ])
    .with_context(|| format!("cannot bootstrap {}", path.display()))?;
    Ok(db)
}

fn make_private_dir(dir: &Path) -> Result<()> {
    use std::os::unix::fs::DirBuilderExt as _;
    if dir.is_dir() {
        return Ok(());
    }
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .with_context(|| format!("cannot make {}", dir.display()))
}

/// A memory's entries: id → body, in creation order.
pub type Entries = BTreeMap<String, Value>;

/// The entries of memory `scope` in `db` (as of `as_of`, else now), in
/// creation order.
pub fn entries(
    db: &Substrate,
    scope: &str,
    as_of: Option<u64>,
) -> Result<Vec<(String, MemoryEntry)>> {
    let read = db.scope(
        &[scope],
        &ScopeOpts {
            as_of,
            ..ScopeOpts::default()
        },
    )?;
    Ok(read
        .chunks
        .iter()
        .filter(|c| c.is_on(scope, PlacementType::Instance))
        .filter_map(|c| MemoryEntry::parse(&c.body_value()).map(|e| (c.id.clone(), e)))
        .collect())
}

fn by_id(db: &Substrate, scope: &str, as_of: Option<u64>) -> Result<Entries> {
    Ok(entries(db, scope, as_of)?
        .into_iter()
        .map(|(id, e)| (id, serde_json::to_value(e).unwrap_or_default()))
        .collect())
}

/// What makes `to`'s memory `scope` hold `want` where it held `had`:
/// each entry new or changed written, each gone removed (if `to` has it).
fn changes(to: &Substrate, had: &Entries, want: &Entries) -> Result<Declaration> {
    let mut declaration = Declaration::default();
    for (id, body) in want {
        if had.get(id) != Some(body) {
            declaration.chunks.push(
                ChunkDecl::with_id(id)
                    .body(body.clone())
                    .on(NewPlacement::instance(USER_MEMORY)),
            );
        }
    }
    for id in had.keys().filter(|id| !want.contains_key(*id)) {
        if to.read(|s| s.exists(id))? {
            declaration.remove.chunks.push(id.clone());
        }
    }
    Ok(declaration)
}

fn apply(db: &Substrate, declaration: Declaration) -> Result<()> {
    if !(declaration.chunks.is_empty() && declaration.remove.chunks.is_empty()) {
        db.commit(declaration, None)?;
    }
    Ok(())
}

/// Where a project keeps the commit it last synced the person's memory
/// at.
fn marker(project_db: &Substrate) -> PathBuf {
    project_db.path().with_file_name("user-memory.synced")
}

/// Carries what changed in `project`'s mirror since the last sync back to
/// the person's substrate, then mirrors the person's memory into it. A
/// person who never had a memory of their own gets no substrate for it
/// (and no cost) until something is put in it.
pub fn sync(project: &Substrate) -> Result<()> {
    let path =
        store_path().context("cannot find your data directory: set HOME or XDG_DATA_HOME")?;
    if !path.exists() && by_id(project, USER_MEMORY, None)?.is_empty() {
        return Ok(());
    }
    sync_with(project, &open_store_at(&path)?)
}

/// [`sync`] with the person's substrate `user`.
pub fn sync_with(project: &Substrate, user: &Substrate) -> Result<()> {
    let marker = marker(project);
    let read = read_nofollow(&marker)
        .ok()
        .and_then(|t| t.trim().parse::<u64>().ok())
        .filter(|n| *n <= project.head().unwrap_or(0));
    // A substrate made elsewhere: what it held when hc found it is a
    // stranger's, never carried into the person's memory (whatever a
    // marker shipped beside it says).
    let adopted = crate::origin::recorded(project)?.and_then(|o| o.adopted_at);
    let since = match (read, adopted) {
        (Some(read), Some(adopted)) => Some(read.max(adopted)),
        (read, adopted) => read.or(adopted),
    };
    // never synced: everything in the mirror is the project's doing
    let before = match since {
        Some(since) => by_id(project, USER_MEMORY, Some(since))?,
        None => Entries::new(),
    };
    let now = by_id(project, USER_MEMORY, None)?;
    let theirs = by_id(user, USER_MEMORY, None)?;
    if before != now {
        // only what the project changed: an entry it did not touch keeps
        // the person's version
        let mut want = theirs.clone();
        for (id, body) in &now {
            if before.get(id) != Some(body) {
                want.insert(id.clone(), body.clone());
            }
        }
        for id in before.keys().filter(|id| !now.contains_key(*id)) {
            want.remove(id);
        }
        apply(user, changes(user, &theirs, &want)?)?;
    }
    let theirs = by_id(user, USER_MEMORY, None)?;
    apply(project, changes(project, &now, &theirs)?)?;
    let head = project.head()?;
    if read != Some(head) {
        write_nofollow(&marker, &format!("{head}\n"))
            .with_context(|| format!("cannot write {}", marker.display()))?;
    }
    Ok(())
}

/// Reads `path`, refusing a symbolic link.
fn read_nofollow(path: &std::path::Path) -> std::io::Result<String> {
    use std::io::Read as _;
    use std::os::unix::fs::OpenOptionsExt as _;
    let mut text = String::new();
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)?
        .read_to_string(&mut text)?;
    Ok(text)
}

/// Writes `text` to `path`, never through a symbolic link.
fn write_nofollow(path: &std::path::Path, text: &str) -> std::io::Result<()> {
    use std::io::Write as _;
    use std::os::unix::fs::OpenOptionsExt as _;
    std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)?
        .write_all(text.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn add(db: &Substrate, id: &str, text: &str) {
        let body = serde_json::to_value(MemoryEntry::new(text, None)).unwrap();
        db.commit(
            Declaration::of(vec![
                ChunkDecl::with_id(id)
                    .body(body)
                    .on(NewPlacement::instance(USER_MEMORY)),
            ]),
            None,
        )
        .unwrap();
    }

    /// The entries, by id.
    fn texts(db: &Substrate) -> Vec<String> {
        let mut all: Vec<String> = entries(db, USER_MEMORY, None)
            .unwrap()
            .into_iter()
            .map(|(id, e)| format!("{id}={}", e.text))
            .collect();
        all.sort();
        all
    }

    #[test]
    fn the_mirror_follows_the_person_and_carries_the_projects_changes_back() {
        let dir = tempfile::tempdir().unwrap();
        let project = Substrate::open(dir.path().join("p.db")).unwrap();
        project
            .init(vec![ChunkDecl::with_id(USER_MEMORY).body(json!({}))])
            .unwrap();
        let user = open_store_at(&dir.path().join("data/hermitcrab/substrate.db")).unwrap();
        add(&user, "m_1", "tabs");
        add(&user, "m_2", "no emoji");
        sync_with(&project, &user).unwrap();
        assert_eq!(texts(&project), vec!["m_1=tabs", "m_2=no emoji"]);
        // the project (a run) removes one and adds one; the person, elsewhere, adds one
        let mut gone = Declaration::default();
        gone.remove.chunks.push("m_1".into());
        project.commit(gone, None).unwrap();
        add(&project, "m_3", "cargo nextest");
        add(&user, "m_4", "from another project");
        sync_with(&project, &user).unwrap();
        assert_eq!(
            texts(&user),
            vec![
                "m_2=no emoji",
                "m_3=cargo nextest",
                "m_4=from another project"
            ]
        );
        assert_eq!(texts(&project), texts(&user));
    }
}
