//! The engine's own chunks, which a host commits with `Substrate::init`:
//! the program and process types and the boundary types. The substrate
//! knows none of them.

use serde_json::json;
use substrate::ChunkDecl;

fn archetype(id: &str, spec: serde_json::Value) -> ChunkDecl {
    ChunkDecl::with_id(id).name(id).spec(spec).body(json!({}))
}

/// `engine/program` (every program is an instance; `executable` required
/// of a program that runs as a process, `entry` of a webview program —
/// the planner says which is missing),
/// `engine/engine` (an engine that claims queued runs: its lease),
/// `engine/process` (a template: each process is ordered and accepts child
/// processes and outputs), `engine/output`, `read-boundary`,
/// `write-boundary`.
pub fn vocabulary() -> Vec<ChunkDecl> {
    vec![
        archetype("engine/program", json!({})),
        archetype(
            "engine/process",
            json!({"propagate": true, "ordered": true, "accepts": ["engine/process", "engine/output", crate::file_effects::EFFECTS_TYPE]}),
        ),
        archetype("engine/output", json!({})),
        archetype(crate::file_effects::EFFECTS_TYPE, json!({})),
        archetype(crate::file_effects::BLOB_TYPE, json!({})),
        archetype(crate::claim::ENGINE_TYPE, json!({})),
        archetype("read-boundary", json!({})),
        archetype("write-boundary", json!({})),
    ]
}
