//! A run's file effects (`docs/protocol.md`, "File effects"): the part of
//! the project a run may write is looked at before it starts and again as
//! it ends; what changed is committed with its end — an
//! `engine/file-effects` chunk on its process listing each path, and each
//! before-image that can be kept an `engine/blob` chunk (`blob/SHA256`,
//! its bytes as hex), one per distinct content, shared by every run that
//! saw it. The looking is the `effects` crate's; a program that names the
//! files it writes (`writes`) is looked at there alone.

use crate::core::Core;
use crate::plan::{Plan, Writes};
use serde_json::json;
use substrate::{ChunkDecl, NewPlacement};

/// The type of a run's `file-effects` chunk.
pub const EFFECTS_TYPE: &str = "engine/file-effects";
/// The type of a kept content.
pub const BLOB_TYPE: &str = "engine/blob";

/// The chunk id of the content whose SHA-256 is `hash`.
pub fn blob_id(hash: &str) -> String {
    format!("blob/{hash}")
}

/// What a run's files looked like before it starts (none: it writes
/// nowhere in the project, or effects are not recorded).
pub(crate) fn before(core: &Core, plan: &Plan) -> Option<effects::Snapshot> {
    let tree = core.effects.as_ref()?;
    let scope = match &plan.writes {
        Writes::Nowhere => return None,
        Writes::Paths(paths) => tree.scope_of_paths(paths),
        Writes::Roots(roots) => tree.scope_of(roots)?,
    };
    Some(crate::connection::blocking(|| tree.snapshot(scope)))
}

/// The chunks that record what the run changed since `before`: its
/// `file-effects` (on process `id`) and the blobs the store lacks.
pub(crate) fn after(core: &Core, id: &str, before: &effects::Snapshot) -> Vec<ChunkDecl> {
    let Some(tree) = core.effects.as_ref() else {
        return Vec::new();
    };
    let mut effects = crate::connection::blocking(|| tree.effects(before));
    if effects.is_empty() {
        return Vec::new();
    }
    let mut chunks = Vec::new();
    let mut stored = 0u64;
    let mut capped = None;
    let mut seen = std::collections::HashSet::new();
    for effect in &mut effects {
        let (Some(hash), None) = (&effect.before, &effect.unrestorable) else {
            continue;
        };
        if effect.is_dir() {
            continue;
        }
        if stored + effect.size > tree.limits.run_bytes {
            let cap = format!(
                "over the {} MiB a run may keep",
                tree.limits.run_bytes / (1024 * 1024)
            );
            effect.unrestorable = Some(cap.clone());
            capped = Some(cap);
            continue;
        }
        let id = blob_id(hash);
        if !seen.insert(id.clone()) || core.db.read(|snap| snap.exists(&id)).unwrap_or(false) {
            continue;
        }
        let Some(bytes) = tree.kept(hash) else {
            effect.unrestorable = Some("its content was not kept (the store lost it)".into());
            continue;
        };
        stored += effect.size;
        chunks.push(
            ChunkDecl::with_id(&id)
                .body(json!({"hex": effects::hex(&bytes)}))
                .on(NewPlacement::instance(BLOB_TYPE)),
        );
    }
    let mut body = json!({ "effects": effects, "stored_bytes": stored });
    if let Some(cap) = capped {
        body["capped"] = json!(cap);
    }
    chunks.push(
        ChunkDecl::generated()
            .name(format!("file-effects of {id}"))
            .body(body)
            .on(NewPlacement::instance(id))
            .on(NewPlacement::instance(EFFECTS_TYPE)),
    );
    chunks
}
