//! `rewind`: puts files back as a rewind asked (`hc rewind`, `/rewind`,
//! the page, the SDK's `rewind_files`) — a run like any other, so that its
//! own file effects are recorded and a rewind can be undone. Not a tool a
//! model is offered. Each path is checked first: what changed since the
//! record (the person's edit, another session's) stops the whole rewind
//! unless it was forced; contents come from the substrate's blobs.

use effects::record::{Blob, Change, Held, blob_id};
use effects::restore::{self, Put};
use protocol::program::{Output, ProgramDef, ProgramFuture, TOOL_TIMEOUT_MS, serve};
use protocol::{Boundary, Capabilities};
use serde::Deserialize;
use serde_json::json;
use std::collections::HashMap;
use std::path::Path;

fn definition() -> ProgramDef {
    ProgramDef {
        name: "rewind",
        text: "Puts the project's files back as a rewind asked (run by hc, not by a model).",
        schema: json!({
            "type": "object",
            "properties": {
                "paths": {"type": "array", "items": {"type": "string"}},
                "changes": {"type": "array"},
                "force": {"type": "boolean"}
            },
            "required": ["paths", "changes"]
        }),
        capabilities: Capabilities::project_writer(),
        timeout_ms: TOOL_TIMEOUT_MS,
        concurrency_safe: false,
        read_only: false,
        tool: false,
    }
}

pub(crate) fn chunks() -> Vec<substrate::ChunkDecl> {
    let def = definition();
    let mut body = def.body();
    body.boundary = Boundary::Roots(vec!["engine/blob".into()]);
    body.writes = Some("/paths".into());
    def.chunks_with(body)
}

/// (`paths`, every path changed, is the engine's: where it looks for the
/// run's effects.)
#[derive(Deserialize)]
pub(crate) struct Input {
    changes: Vec<Change>,
    #[serde(default)]
    force: bool,
}

pub(crate) fn main() -> ProgramFuture {
    Box::pin(serve("input/rewind", async |program, input: Input| {
        let root = program.root().to_path_buf();
        if let Err(changed) = check(&root, &input) {
            return Output::error_with(changed.0, json!({"changed": changed.1}));
        }
        let contents = match contents(program, &input.changes).await {
            Ok(contents) => contents,
            Err(e) => return Output::error(e),
        };
        apply(&root, &input.changes, &contents)
    }))
}

/// Every path holds what the record says it was left with — else the
/// paths that changed since, and what to do.
fn check(root: &Path, input: &Input) -> Result<(), (String, Vec<String>)> {
    let mut changed = Vec::new();
    for change in &input.changes {
        let now = restore::current(root, &change.path).map_err(|e| (e, Vec::new()))?;
        let now = now.map(|s| Held {
            hash: s.hash,
            mode: s.mode,
        });
        if now != change.expect {
            changed.push(change.path.clone());
        }
    }
    if changed.is_empty() || input.force {
        return Ok(());
    }
    let text = format!(
        "nothing was changed: {} changed since the record (by you or another session) and \
         would be overwritten: {}; look at them, or rewind with --force to overwrite them",
        if changed.len() == 1 {
            "a file"
        } else {
            "files"
        },
        changed.join(", ")
    );
    Err((text, changed))
}

/// The contents to put back, from the substrate's blobs.
async fn contents(
    program: &protocol::program::Program,
    changes: &[Change],
) -> Result<HashMap<String, Vec<u8>>, String> {
    let mut ids: Vec<String> = changes
        .iter()
        .filter_map(|c| c.put.as_ref())
        .filter(|p| p.mode & 0o170_000 != effects::DIR)
        .map(|p| blob_id(&p.hash))
        .collect();
    ids.sort();
    ids.dedup();
    let mut out = HashMap::new();
    for batch in ids.chunks(64) {
        let scopes: Vec<&str> = batch.iter().map(String::as_str).collect();
        let read = program
            .client()
            .scope(&scopes, protocol::ScopeOpts::default())
            .await
            .map_err(|e| format!("cannot read what to put back: {e}"))?;
        for chunk in &read.scopes {
            let hash = chunk.id.trim_start_matches(effects::record::BLOB_PREFIX);
            let blob: Option<Blob> = serde_json::from_value(chunk.body_value()).ok();
            let bytes = blob.and_then(|b| b.bytes(hash)).ok_or_else(|| {
                format!(
                    "`{}` is not the content its name says: nothing was put back",
                    chunk.id
                )
            })?;
            out.insert(hash.to_owned(), bytes);
        }
    }
    Ok(out)
}

/// Deletions deepest first, then what comes back parents first.
fn apply(root: &Path, changes: &[Change], contents: &HashMap<String, Vec<u8>>) -> Output {
    let mut order: Vec<&Change> = changes.iter().collect();
    order.sort_by(|a, b| a.path.cmp(&b.path));
    let mut left = Vec::new();
    let mut failed = Vec::new();
    for change in order.iter().rev().filter(|c| c.put.is_none()) {
        match restore::put(root, &change.path, Put::Absent) {
            Ok(true) => {}
            Ok(false) => left.push(change.path.clone()),
            Err(e) => failed.push(e),
        }
    }
    for change in order.iter() {
        let Some(put) = &change.put else { continue };
        let empty = Vec::new();
        let bytes = match contents.get(&put.hash) {
            Some(bytes) => bytes,
            None if put.mode & 0o170_000 == effects::DIR => &empty,
            None => {
                failed.push(format!(
                    "{}: its content is not in the substrate",
                    change.path
                ));
                continue;
            }
        };
        if let Err(e) = restore::put(root, &change.path, Put::of(put.mode, bytes)) {
            failed.push(e);
        }
    }
    let n = changes.len() - failed.len();
    let mut text = format!("put back {n} path{}", if n == 1 { "" } else { "s" });
    if !left.is_empty() {
        text.push_str(&format!(
            "; left {} (directories that still hold files not recorded)",
            left.join(", ")
        ));
    }
    let data = json!({"restored": n, "left": left, "failed": failed});
    if failed.is_empty() {
        Output::ok(text, data)
    } else {
        Output::error_with(format!("{text}; could not: {}", failed.join("; ")), data)
    }
}
