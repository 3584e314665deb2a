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
use substrate::{ChunkDecl, NewPlacement};

/// The type of a run's `file-effects` chunk.
pub const EFFECTS_TYPE: &str = "engine/file-effects";
/// The type of a kept content.
pub const BLOB_TYPE: &str = "engine/blob";

/// The most paths one run's record lists (its chunk stays under the
/// store's 8 MiB a body).
const MAX_PATHS: usize = 20_000;

pub use effects::record::{BLOB_PREFIX, blob_id};

/// What a run's files looked like before it starts (none: it writes
/// nowhere in the project, or effects are not recorded).
pub(crate) fn before(core: &Core, plan: &Plan) -> Option<effects::Snapshot> {
    let tree = core.effects.as_ref()?;
    // (a service lives as long as its engine: its runs are what is recorded)
    if plan.service {
        return None;
    }
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
    // (what one chunk can hold: a run that changed more is recorded in part)
    let mut capped = None;
    if effects.len() > MAX_PATHS {
        capped = Some(format!(
            "{} paths changed: the first {MAX_PATHS} are recorded, the rest are not (not restorable)",
            effects.len()
        ));
        effects.truncate(MAX_PATHS);
    }
    let mut kept = Kept::default();
    let count_lines = effects.len() <= MAX_COUNTED;
    let deadline = std::time::Instant::now() + LINES_BUDGET;
    for effect in &mut effects {
        kept.keep(core, tree, effect);
        if count_lines {
            effect.lines = lines(tree, effect, deadline);
        }
    }
    let body = effects::record::FileEffects {
        effects,
        stored_bytes: kept.stored,
        capped: capped.or(kept.capped),
    };
    let mut chunks = kept.chunks;
    chunks.push(
        ChunkDecl::generated()
            .name(format!("file-effects of {id}"))
            .body(serde_json::to_value(&body).unwrap_or_default())
            .on(NewPlacement::instance(id))
            .on(NewPlacement::instance(EFFECTS_TYPE)),
    );
    chunks
}

/// The before-images a run's record keeps, as blobs.
#[derive(Default)]
struct Kept {
    chunks: Vec<ChunkDecl>,
    stored: u64,
    capped: Option<String>,
    seen: std::collections::HashSet<String>,
}

impl Kept {
    /// `effect`'s before-image kept, when the substrate lacks it, the run's
    /// cap allows and the store has it; else the effect says why not.
    fn keep(&mut self, core: &Core, tree: &effects::Tree, effect: &mut effects::Effect) {
        let (Some(hash), None) = (&effect.before, &effect.unrestorable) else {
            return;
        };
        if effect.is_dir() {
            return;
        }
        if self.stored + effect.size > tree.limits.run_bytes {
            let cap = format!(
                "over the {} MiB a run may keep",
                tree.limits.run_bytes >> 20
            );
            effect.unrestorable = Some(cap.clone());
            self.capped = Some(cap);
            return;
        }
        let id = blob_id(hash);
        if !self.seen.insert(id.clone()) {
            return;
        }
        let there = core.db.read(|snap| {
            Ok::<_, substrate::Error>((snap.exists(&id)?, snap.is_instance_of(&id, BLOB_TYPE)?))
        });
        match there {
            Ok((true, true)) => return,
            // a chunk of that name that is not the engine's: the content
            // cannot be kept under it
            Ok((true, false)) => {
                effect.unrestorable = Some(format!(
                    "`{id}` exists and is not a content the engine kept"
                ));
                return;
            }
            _ => {}
        }
        let Some(bytes) = tree.kept(hash) else {
            effect.unrestorable = Some("its content was not kept (the store lost it)".into());
            return;
        };
        self.stored += effect.size;
        self.chunks.push(
            ChunkDecl::with_id(&id)
                .body(serde_json::to_value(effects::record::Blob::of(&bytes)).unwrap_or_default())
                .on(NewPlacement::instance(BLOB_TYPE)),
        );
    }
}

/// The most paths a run may change for their lines to be counted (a
/// build's outputs are not a change anyone reads by lines).
const MAX_COUNTED: usize = 200;

/// The most time a run's end spends counting lines (its tool's end is on
/// the turn's path): the files left when it is spent are not counted.
const LINES_BUDGET: std::time::Duration = std::time::Duration::from_millis(100);

/// The most bytes either side of a file may have for its lines to be
/// counted.
const MAX_DIFF_BYTES: u64 = 1 << 20;

/// The lines `effect` added and removed: its content before against its
/// content after, both as the tree's store kept them when it hashed them
/// (nothing read again), for text files under a MiB each side.
fn lines(
    tree: &effects::Tree,
    effect: &effects::Effect,
    deadline: std::time::Instant,
) -> Option<effects::Lines> {
    let left = deadline.checked_duration_since(std::time::Instant::now())?;
    if !effect.is_file() || effect.size > MAX_DIFF_BYTES {
        return None;
    }
    let text = |hash: &Option<String>| match hash {
        Some(hash) => tree
            .kept(hash)
            .filter(|bytes| bytes.len() as u64 <= MAX_DIFF_BYTES)
            .and_then(|bytes| String::from_utf8(bytes).ok()),
        None => Some(String::new()),
    };
    let (before, after) = (text(&effect.before)?, text(&effect.after)?);
    let mut lines = effects::Lines::default();
    let diff = similar::TextDiff::configure()
        .timeout(left.min(std::time::Duration::from_millis(50)))
        .diff_lines(&before, &after);
    for change in diff.iter_all_changes() {
        match change.tag() {
            similar::ChangeTag::Insert => lines.added += 1,
            similar::ChangeTag::Delete => lines.removed += 1,
            similar::ChangeTag::Equal => {}
        }
    }
    Some(lines)
}
