//! `read`: a page of a text file, lines numbered as `cat -n` shows them.

use crate::paths::Paths;
use crate::text;
use protocol::program::{Output, ProgramDef, ProgramFuture, TOOL_TIMEOUT_MS, serve};
use protocol::{Capabilities, FilesystemAccess, ReadAccess};
use serde::Deserialize;
use serde_json::{Value, json};

/// Lines a page has when `limit` is not given.
const DEFAULT_LIMIT: usize = 2_000;

fn schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "file_path": {"type": "string", "description": "The file to read: absolute, or relative to the project root."},
            "offset": {"type": "integer", "minimum": 1, "description": "The line number to start at (1-based). Give it for large files."},
            "limit": {"type": "integer", "minimum": 1, "description": "How many lines to read (default 2000)."}
        },
        "required": ["file_path"]
    })
}

fn definition() -> ProgramDef {
    ProgramDef {
        name: "read",
        text: "Reads a text file and returns its lines numbered as `cat -n` shows them \
               (number, tab, line). By default the first 2000 lines; for a longer file give \
               `offset` (1-based line number) and `limit` to read another page — the answer \
               says how many lines the file has. Lines over 2000 characters are cut. Read a \
               file before you edit or overwrite it: `edit` and `write` refuse a file that was \
               not read, or that changed since. Directories and binary files are refused \
               (use `glob` to list files). Several reads may run at once.",
        schema: schema(),
        capabilities: Capabilities {
            filesystem: FilesystemAccess {
                read: ReadAccess::All,
                write: Vec::new(),
            },
            network: false,
            env: Vec::new(),
        },
        timeout_ms: TOOL_TIMEOUT_MS,
        concurrency_safe: true,
        read_only: true,
        tool: true,
    }
}

pub(crate) fn chunks() -> Vec<substrate::ChunkDecl> {
    definition().chunks()
}

#[derive(Deserialize)]
struct Input {
    file_path: String,
    offset: Option<usize>,
    limit: Option<usize>,
}

pub(crate) fn main() -> ProgramFuture {
    Box::pin(serve("input/read", async |program, input: Input| {
        let paths = Paths::from_env(program.root());
        read(&paths, &input).unwrap_or_else(Output::error)
    }))
}

fn read(paths: &Paths, input: &Input) -> Result<Output, String> {
    if input.offset == Some(0) || input.limit == Some(0) {
        return Err("`offset` and `limit` count lines from 1; give 1 or more".into());
    }
    let path = paths.absolute(&input.file_path);
    paths.check_read(&path)?;
    let shown = paths.show(&path);
    let meta = std::fs::metadata(&path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => format!(
            "{shown} does not exist (paths are absolute or relative to the project root, {})",
            paths.root().display()
        ),
        _ => format!("cannot read {shown}: {e}"),
    })?;
    if meta.is_dir() {
        return Err(format!(
            "{shown} is a directory, not a file; list it with glob (pattern `*`, path `{shown}`)"
        ));
    }
    let bytes = std::fs::read(&path).map_err(|e| format!("cannot read {shown}: {e}"))?;
    // The hash of the whole file runs beside the line scan (two cores).
    let (sha256, page) = std::thread::scope(|s| {
        let hashing = s.spawn(|| text::sha256_hex(&bytes));
        let page = page_of(&bytes, input);
        (hashing.join().unwrap_or_default(), page)
    });
    let page = page.map_err(|why| format!("{shown}: {why}"))?;
    let mtime = meta.modified().map(text::rfc3339).unwrap_or_default();
    let data = json!({
        "path": shown, "sha256": sha256, "mtime": mtime,
        "total_lines": page.total, "start": page.start, "end": page.end,
    });
    Ok(Output::ok(page.text, data))
}

/// The lines a read returns, numbered, and where they sit in the file.
struct Page {
    text: String,
    total: usize,
    start: usize,
    end: usize,
}

fn page_of(bytes: &[u8], input: &Input) -> Result<Page, String> {
    if memchr::memchr(0, bytes).is_some() {
        return Err(
            "a binary file (it has NUL bytes); read does text only — inspect it with \
                    shell, e.g. `file` or `xxd | head`"
                .to_owned(),
        );
    }
    let total = text::count_lines(bytes);
    if total == 0 {
        return Ok(Page {
            text: "(the file is empty)".to_owned(),
            total,
            start: 0,
            end: 0,
        });
    }
    let start = input.offset.unwrap_or(1);
    if start > total {
        return Err(format!(
            "offset {start} is past the end: the file has {total} line{}",
            if total == 1 { "" } else { "s" }
        ));
    }
    let limit = input.limit.unwrap_or(DEFAULT_LIMIT);
    let from = if start == 1 {
        0
    } else {
        memchr::memchr_iter(b'\n', bytes)
            .nth(start - 2)
            .map_or(bytes.len(), |i| i + 1)
    };
    let mut out = String::with_capacity(limit.min(total) * 64);
    let mut end = start - 1;
    for line in bytes[from..].split(|b| *b == b'\n').take(limit) {
        if end == total {
            break; // the empty piece after a final newline
        }
        end += 1;
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        text::push_numbered(&mut out, end, &String::from_utf8_lossy(line));
    }
    if end < total {
        out.push_str(&format!(
            "\n(lines {start}–{end} of {total}; read on with offset {})\n",
            end + 1
        ));
    }
    Ok(Page {
        text: out,
        total,
        start,
        end,
    })
}
