//! `write`: creates a file, or replaces one that was read and has not
//! changed since.

use crate::files;
use crate::paths::Paths;
use crate::text;
use protocol::Capabilities;
use protocol::program::{Output, ProgramDef, ProgramFuture, TOOL_TIMEOUT_MS, serve};
use serde::Deserialize;
use serde_json::{Value, json};

fn schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "file_path": {"type": "string", "description": "The file to write: absolute, or relative to the project root."},
            "content": {"type": "string", "description": "The whole new content of the file."}
        },
        "required": ["file_path", "content"]
    })
}

fn definition() -> ProgramDef {
    ProgramDef {
        name: "write",
        text: "Writes a file: creates it (and its parent directories), or replaces its whole \
               content. To replace an existing file you must have read it first, and it must \
               not have changed since — otherwise the write is refused; read it again. Prefer \
               `edit` for changing part of a file. Writes only inside the project (never in \
               .git or .hermitcrab).",
        schema: schema(),
        capabilities: Capabilities::project_writer(),
        timeout_ms: TOOL_TIMEOUT_MS,
        concurrency_safe: false,
        read_only: false,
        tool: true,
    }
}

pub(crate) fn chunks() -> Vec<substrate::ChunkDecl> {
    definition().chunks_writing("/file_path")
}

#[derive(Deserialize)]
pub(crate) struct Input {
    file_path: String,
    content: String,
    expect_sha256: Option<String>,
}

pub(crate) fn main() -> ProgramFuture {
    Box::pin(serve("input/write", async |program, input: Input| {
        let paths = Paths::from_env(program.root());
        write(&paths, &input).unwrap_or_else(Output::error)
    }))
}

pub(crate) fn write(paths: &Paths, input: &Input) -> Result<Output, String> {
    let path = paths.absolute(&input.file_path);
    let shown = paths.show(&path);
    paths.check_write(&path)?;
    let old = match std::fs::read(&path) {
        Ok(old) => Some(old),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) if path.is_dir() => {
            return Err(format!("{shown} is a directory, not a file ({e})"));
        }
        Err(e) => return Err(format!("cannot read {shown} before replacing it: {e}")),
    };
    if let Some(old) = &old {
        files::check_unchanged(&shown, old, input.expect_sha256.as_deref())?;
    } else if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)
            .map_err(|e| format!("cannot create the directory {}: {e}", paths.show(parent)))?;
    }
    files::replace(&path, input.content.as_bytes())
        .map_err(|e| format!("cannot write {shown}: {e}"))?;
    let sha256 = text::sha256_hex(input.content.as_bytes());
    let lines = text::count_lines(input.content.as_bytes());
    Ok(match old {
        None => Output::ok(
            format!("Created {shown} ({lines} lines)."),
            json!({"path": shown, "sha256": sha256, "created": true, "diff": null}),
        ),
        Some(old) => {
            let diff = text::unified_diff(&shown, &String::from_utf8_lossy(&old), &input.content);
            let (added, removed) = changed_lines(&diff);
            Output::ok(
                format!("Replaced {shown} ({lines} lines; +{added} −{removed})."),
                json!({"path": shown, "sha256": sha256, "created": false, "diff": diff}),
            )
        }
    })
}

/// Lines added and removed in a unified diff.
pub(crate) fn changed_lines(diff: &str) -> (usize, usize) {
    diff.lines().fold((0, 0), |(a, r), line| {
        if line.starts_with('+') && !line.starts_with("+++") {
            (a + 1, r)
        } else if line.starts_with('-') && !line.starts_with("---") {
            (a, r + 1)
        } else {
            (a, r)
        }
    })
}
