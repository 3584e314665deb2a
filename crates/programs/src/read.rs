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
               not read, or that changed since. An image file (PNG, JPEG, GIF, WebP) is \
               returned as the image, for you to see. Directories and other binary files are \
               refused (use `glob` to list files). Several reads may run at once.",
        schema: schema(),
        capabilities: Capabilities {
            filesystem: FilesystemAccess {
                read: ReadAccess::All,
                write: Vec::new(),
            },
            network: false,
            env: Vec::new(),
            programs: Vec::new(),
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
pub(crate) struct Input {
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

pub(crate) fn read(paths: &Paths, input: &Input) -> Result<Output, String> {
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
    if crate::image::named_as_image(&path) {
        return read_image(&path, &shown);
    }
    let file = std::fs::File::open(&path).map_err(|e| format!("cannot read {shown}: {e}"))?;
    let (sha256, page) = scan(file, input).map_err(|e| format!("cannot read {shown}: {e}"))?;
    let page = page.map_err(|why| format!("{shown}: {why}"))?;
    let mtime = meta.modified().map(text::rfc3339).unwrap_or_default();
    let data = json!({
        "path": shown, "sha256": sha256, "mtime": mtime,
        "total_lines": page.total, "start": page.start, "end": page.end,
    });
    Ok(Output::ok(page.text, data))
}

/// An image file: the image itself, in `data.images` (which a request
/// sends as an image block beside the text).
fn read_image(path: &std::path::Path, shown: &str) -> Result<Output, String> {
    let image = crate::image::load(path, shown).map_err(|e| e.to_string())?;
    let text = format!(
        "{shown}: an image ({}, {} bytes), attached for you to see.",
        image.media_type, image.bytes
    );
    let data = json!({
        "path": shown, "media_type": image.media_type, "bytes": image.bytes,
        "images": [{"media_type": image.media_type, "data": image.data}],
    });
    Ok(Output::ok(text, data))
}

/// The lines a read returns, numbered, and where they sit in the file.
struct Page {
    text: String,
    total: usize,
    start: usize,
    end: usize,
}

/// Size of the pieces a file is read in.
const PIECE: usize = 1 << 20;

/// Reads the file once, in pieces: this thread finds the page's lines, the
/// NUL bytes and the line count while another hashes the pieces it has
/// finished with (SHA-256 of the whole file costs more than the rest
/// together; two cores overlap them). Memory stays a few pieces, whatever
/// the file's size.
fn scan(mut file: std::fs::File, input: &Input) -> std::io::Result<(String, Result<Page, String>)> {
    use std::io::Read as _;
    let start = input.offset.unwrap_or(1);
    let limit = input.limit.unwrap_or(DEFAULT_LIMIT);
    let mut lines = Lines::new(start, limit);
    let (to_hash, hashing) = std::sync::mpsc::sync_channel::<Vec<u8>>(2);
    let (to_reuse, reusable) = std::sync::mpsc::channel::<Vec<u8>>();
    std::thread::scope(|s| {
        let hasher = s.spawn(move || {
            let mut ctx = ring::digest::Context::new(&ring::digest::SHA256);
            for piece in hashing {
                ctx.update(&piece);
                let _ = to_reuse.send(piece);
            }
            text::hex(ctx.finish().as_ref())
        });
        let mut outcome = Ok(());
        loop {
            let mut piece = reusable
                .try_recv()
                .unwrap_or_else(|_| Vec::with_capacity(PIECE));
            piece.clear();
            // Into the buffer's spare capacity: nothing is zeroed first.
            let n = match (&mut file).take(PIECE as u64).read_to_end(&mut piece) {
                Ok(n) => n,
                Err(e) => {
                    outcome = Err(e);
                    break;
                }
            };
            if n == 0 {
                break;
            }
            lines.take(&piece);
            if to_hash.send(piece).is_err() || n < PIECE {
                break;
            }
        }
        drop(to_hash);
        let sha256 = hasher.join().unwrap_or_default();
        outcome.map(|()| (sha256, lines.finish()))
    })
}

/// The state of a scan: where it is, and the page's bytes so far.
struct Lines {
    start: usize,
    limit: usize,
    /// The 1-based number of the line the next byte belongs to.
    line: usize,
    newlines: usize,
    bytes: usize,
    last: u8,
    binary: bool,
    page: Vec<u8>,
}

impl Lines {
    fn new(start: usize, limit: usize) -> Lines {
        Lines {
            start,
            limit,
            line: 1,
            newlines: 0,
            bytes: 0,
            last: b'\n',
            binary: false,
            page: Vec::new(),
        }
    }

    fn in_page(&self) -> bool {
        self.line >= self.start && self.line < self.start.saturating_add(self.limit)
    }

    fn take(&mut self, piece: &[u8]) {
        self.binary |= memchr::memchr(0, piece).is_some();
        self.bytes += piece.len();
        self.last = piece.last().copied().unwrap_or(self.last);
        let page_end = self.start.saturating_add(self.limit);
        if self.line >= page_end {
            // Past the page: only count.
            let count = memchr::memchr_iter(b'\n', piece).count();
            self.newlines += count;
            self.line += count;
            return;
        }
        let mut from = 0;
        for at in memchr::memchr_iter(b'\n', piece) {
            if self.in_page() {
                self.page.extend_from_slice(&piece[from..=at]);
            }
            from = at + 1;
            self.newlines += 1;
            self.line += 1;
        }
        if self.in_page() {
            self.page.extend_from_slice(&piece[from..]);
        }
    }

    fn finish(self) -> Result<Page, String> {
        if self.binary {
            return Err(
                "a binary file (it has NUL bytes); read does text only — inspect it \
                        with shell, e.g. `file` or `xxd | head`"
                    .to_owned(),
            );
        }
        let total = self.newlines + usize::from(self.bytes > 0 && self.last != b'\n');
        if total == 0 && self.start <= 1 {
            return Ok(Page {
                text: "(the file is empty)".to_owned(),
                total,
                start: 0,
                end: 0,
            });
        }
        if self.start > total {
            return Err(format!(
                "offset {} is past the end: the file has {total} line{}",
                self.start,
                if total == 1 { "" } else { "s" }
            ));
        }
        let mut out = String::with_capacity(self.page.len() + self.limit.min(total) * 8);
        let mut end = self.start - 1;
        for line in self.page.split(|b| *b == b'\n').take(self.limit) {
            if end == total {
                break; // the empty piece after a final newline
            }
            end += 1;
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            text::push_numbered(&mut out, end, &String::from_utf8_lossy(line));
        }
        if end < total {
            out.push_str(&format!(
                "\n(lines {}–{end} of {total}; read on with offset {})\n",
                self.start,
                end + 1
            ));
        }
        Ok(Page {
            text: out,
            total,
            start: self.start,
            end,
        })
    }
}
