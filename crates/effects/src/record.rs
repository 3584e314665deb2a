//! The record's shapes, one each for who writes it (the engine: a run's
//! `file-effects`, the contents it keeps), who plans a rewind from it (a
//! host) and who carries the rewind out (the `rewind` program).

use crate::Effect;
use serde::{Deserialize, Serialize};

/// What every kept content's chunk id starts with.
pub const BLOB_PREFIX: &str = "blob/";

/// The chunk id of the content whose SHA-256 is `hash`.
pub fn blob_id(hash: &str) -> String {
    format!("{BLOB_PREFIX}{hash}")
}

/// The body of a kept content (`blob/SHA256`): its bytes as hex (one long
/// word, which full-text search leaves out).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Blob {
    /// The bytes, lowercase hex.
    pub hex: String,
}

impl Blob {
    /// The body that keeps `bytes`.
    pub fn of(bytes: &[u8]) -> Blob {
        Blob {
            hex: crate::hex(bytes),
        }
    }

    /// Its bytes, when they are what `hash` names (a content is only ever
    /// put back when it hashes to its name).
    pub fn bytes(&self, hash: &str) -> Option<Vec<u8>> {
        crate::unhex(&self.hex).filter(|b| crate::sha256_hex(b) == hash)
    }
}

/// The body of a run's `file-effects` chunk.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileEffects {
    /// Each path the run changed.
    #[serde(default)]
    pub effects: Vec<Effect>,
    /// Bytes of before-images the run's commit kept.
    #[serde(default)]
    pub stored_bytes: u64,
    /// Why part of it was not kept, when a cap was hit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capped: Option<String>,
}

impl FileEffects {
    /// The lines its effects added and removed, summed (the effects whose
    /// lines were not counted add nothing).
    pub fn lines(&self) -> crate::Lines {
        let mut out = crate::Lines::default();
        for lines in self.effects.iter().filter_map(|e| e.lines) {
            out.added += lines.added;
            out.removed += lines.removed;
        }
        out
    }
}

/// What a path holds: its content's hash and its mode.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Held {
    /// SHA-256, hex (empty for a directory).
    pub hash: String,
    /// Mode with type bits.
    pub mode: u32,
}

/// One path a rewind changes.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Change {
    /// Relative to the root.
    pub path: String,
    /// What the record says it holds now (none: nothing).
    pub expect: Option<Held>,
    /// What it is put back to (none: removed).
    pub put: Option<Held>,
}
