//! Where the project's substrate file was made ([`protocol::origin`]). A
//! checkout may ship `.hermitcrab/substrate.db`; what such a file
//! declares was made by someone else. `hc` tells its own file from one it
//! found by a stamp — SHA-256 of the file's canonical path, device, inode
//! and birth time on this machine — recorded in the substrate when `hc`
//! makes the file, adopts one it found, or the person trusts it. A file
//! made elsewhere (or copied, or moved) cannot carry this machine's
//! stamp: when `hc` finds one, everything committed in it up to then is a
//! stranger's — its programs run only with the person's yes and never
//! with more than a built-in's capabilities (the engine clamps them), its
//! "always" answers allow nothing, and its memory is not carried into the
//! person's — until `hc trust`.

use agent::contract::{Choice, PermissionDecision};
use anyhow::{Context as _, Result};
use protocol::origin::{ORIGIN, Origin};
use serde::Deserialize;
use std::collections::HashSet;
use std::path::Path;
use substrate::{ChunkDecl, Declaration, PlacementType, ScopeOpts, Substrate, TypeFilter};

/// The stamp of the substrate file at `path` on this machine.
pub fn stamp(path: &Path) -> Result<String> {
    use std::os::unix::fs::MetadataExt as _;
    let canonical = path
        .canonicalize()
        .with_context(|| format!("cannot resolve {}", path.display()))?;
    let meta = std::fs::symlink_metadata(&canonical)
        .with_context(|| format!("cannot read {}", canonical.display()))?;
    let born = meta
        .created()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_nanos());
    let text = format!(
        "{}\0{}\0{}\0{born}",
        canonical.display(),
        meta.dev(),
        meta.ino()
    );
    let digest = ring::digest::digest(&ring::digest::SHA256, text.as_bytes());
    Ok(digest.as_ref().iter().map(|b| format!("{b:02x}")).collect())
}

/// The origin recorded in `db`, if any.
pub fn recorded(db: &Substrate) -> Result<Option<Origin>> {
    let body = db.read(|snap| snap.body(ORIGIN))?;
    Ok(body.map(|b| Origin::parse(&b)))
}

/// Settles the origin of the substrate at `path` as it is opened: kept
/// when the stamp is this file's; recorded as made here when this open
/// made the file (`fresh`); else adopted — everything up to `head_before`
/// (the head before this open committed anything) is a stranger's.
pub fn settle(db: &Substrate, path: &Path, fresh: bool, head_before: u64) -> Result<Origin> {
    let stamp = stamp(path)?;
    if let Some(origin) = recorded(db)?.filter(|o| o.stamp == stamp) {
        return Ok(origin);
    }
    let origin = match fresh {
        true => Origin {
            stamp,
            ..Origin::default()
        },
        false => Origin {
            stamp,
            adopted_at: Some(head_before),
            programs: foreign_programs(db, head_before)?,
            decisions: foreign_decisions(db, head_before)?,
        },
    };
    record(db, &origin)?;
    Ok(origin)
}

/// Records `origin` (a host's commit: no process may change it).
fn record(db: &Substrate, origin: &Origin) -> Result<()> {
    let body = serde_json::to_value(origin).context("cannot encode the substrate's origin")?;
    let chunk = ChunkDecl::with_id(ORIGIN).name(ORIGIN).body(body);
    db.commit(Declaration::of(vec![chunk]), None)
        .context("cannot record where the substrate was made")?;
    Ok(())
}

/// `hc trust`: everything in the substrate is the person's from now on.
pub fn trust(db: &Substrate, path: &Path) -> Result<Option<Origin>> {
    let before = recorded(db)?;
    let origin = Origin {
        stamp: stamp(path)?,
        ..Origin::default()
    };
    if before.as_ref() != Some(&origin) {
        record(db, &origin)?;
    }
    Ok(before.filter(|b| b.adopted_at.is_some()))
}

/// The person's own configuration registered these programs (MCP
/// servers): a stranger's chunk of the same id is theirs now.
pub fn vouch(db: &Substrate, ids: &[String]) -> Result<()> {
    let Some(mut origin) = recorded(db)? else {
        return Ok(());
    };
    let before = origin.programs.len();
    origin.programs.retain(|p| !ids.contains(p));
    if origin.programs.len() != before {
        record(db, &origin)?;
    }
    Ok(())
}

/// Program chunks on `engine/program` as of commit `at`, unchanged since
/// and still there, but the built-ins (whose bodies every open resets).
fn foreign_programs(db: &Substrate, at: u64) -> Result<Vec<String>> {
    let builtins: HashSet<String> = crate::builtins::vocabulary()
        .into_iter()
        .filter_map(|d| d.id)
        .collect();
    let opts = ScopeOpts {
        kind: TypeFilter::Instance,
        limit: Some(usize::MAX),
        ..ScopeOpts::default()
    };
    let ids = db.read(|snap| -> substrate::Result<Vec<String>> {
        let then = snap.as_of(at)?;
        let mut out = Vec::new();
        for chunk in then.scope(&["engine/program".to_owned()], &opts)?.chunks {
            if builtins.contains(&chunk.id) {
                continue;
            }
            if snap.chunk(&chunk.id)?.as_deref() == Some(&*chunk) {
                out.push(chunk.id.clone());
            }
        }
        Ok(out)
    })?;
    Ok(ids)
}

/// The "always" permission decisions recorded up to commit `at`.
fn foreign_decisions(db: &Substrate, at: u64) -> Result<Vec<String>> {
    let opts = ScopeOpts {
        kind: TypeFilter::Instance,
        limit: Some(usize::MAX),
        as_of: Some(at),
        ..ScopeOpts::default()
    };
    let read = db.read(|snap| snap.scope(&["permission-decision".to_owned()], &opts));
    let read = match read {
        Ok(read) => read,
        Err(substrate::Error::NotFound(_)) => return Ok(Vec::new()),
        Err(e) => return Err(e.into()),
    };
    Ok(read
        .chunks
        .iter()
        .filter(|c| c.is_on("permission-decision", PlacementType::Instance))
        .filter(|c| {
            PermissionDecision::deserialize(&c.body_value())
                .is_ok_and(|d| d.decision == Choice::Always)
        })
        .map(|c| c.id.clone())
        .collect())
}

/// What a stranger's substrate still holds that hc does not trust, in
/// words (nothing when it is the person's own).
pub fn ignored(origin: &Origin) -> Vec<String> {
    let mut out = Vec::new();
    if !origin.programs.is_empty() {
        out.push(format!(
            "the programs {} its substrate declares (made elsewhere): they run only when you \
             say yes, with no network, no secrets and writes only in the project",
            origin
                .programs
                .iter()
                .map(|p| format!("`{}`", p.strip_prefix("program/").unwrap_or(p)))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    if !origin.decisions.is_empty() {
        out.push(format!(
            "{} \"always\" answer(s) recorded in its sessions",
            origin.decisions.len()
        ));
    }
    out
}
