//! `edit`: replaces an exact string in a file that was read and has not
//! changed since.

use crate::files;
use crate::paths::Paths;
use crate::text;
use protocol::Capabilities;
use protocol::program::{Output, ProgramDef, ProgramFuture, TOOL_TIMEOUT_MS, serve};
use serde::Deserialize;
use serde_json::{Value, json};

/// Lines of context shown around an edit.
const CONTEXT: usize = 3;

fn schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "file_path": {"type": "string", "description": "The file to change: absolute, or relative to the project root."},
            "old_string": {"type": "string", "description": "The exact text to replace (whitespace and indentation included, without the line numbers `read` shows)."},
            "new_string": {"type": "string", "description": "The text to put in its place (must differ from old_string)."},
            "replace_all": {"type": "boolean", "default": false, "description": "Replace every occurrence of old_string instead of exactly one."}
        },
        "required": ["file_path", "old_string", "new_string"]
    })
}

fn definition() -> ProgramDef {
    ProgramDef {
        name: "edit",
        text: "Replaces an exact string in a file. `old_string` must appear exactly once \
               (include enough surrounding lines to make it unique) unless `replace_all` is \
               true; copy it from `read`'s output without the line-number prefix, keeping \
               indentation exactly. Read the file first: an edit of a file that was not read, \
               or that changed since, is refused. No match, several matches, or equal strings \
               are errors that say what to fix. Answers with the edited region, numbered.",
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
    old_string: String,
    new_string: String,
    #[serde(default)]
    replace_all: bool,
    expect_sha256: Option<String>,
}

pub(crate) fn main() -> ProgramFuture {
    Box::pin(serve("input/edit", async |program, input: Input| {
        let paths = Paths::from_env(program.root());
        edit(&paths, &input).unwrap_or_else(Output::error)
    }))
}

pub(crate) fn edit(paths: &Paths, input: &Input) -> Result<Output, String> {
    if input.old_string == input.new_string {
        return Err("old_string and new_string are the same: there is nothing to change".into());
    }
    if input.old_string.is_empty() {
        return Err(
            "old_string is empty; say what to replace (to create a file, use write)".into(),
        );
    }
    let path = paths.absolute(&input.file_path);
    let shown = paths.show(&path);
    paths.check_write(&path)?;
    let bytes = std::fs::read(&path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => {
            format!("{shown} does not exist; to create a file, use write")
        }
        _ if path.is_dir() => format!("{shown} is a directory, not a file"),
        _ => format!("cannot read {shown}: {e}"),
    })?;
    files::check_unchanged(&shown, &bytes, input.expect_sha256.as_deref())?;
    let old = String::from_utf8(bytes)
        .map_err(|_| format!("{shown} is not UTF-8 text; edit changes text files only"))?;
    let starts: Vec<usize> = old
        .match_indices(input.old_string.as_str())
        .map(|(i, _)| i)
        .collect();
    match starts.len() {
        0 => return Err(no_match(&shown, &old, &input.old_string)),
        1 => {}
        n if !input.replace_all => {
            let lines: Vec<String> = starts
                .iter()
                .map(|i| line_of(&old, *i).to_string())
                .collect();
            return Err(format!(
                "old_string matches {n} times in {shown} (at lines {}); include more of the \
                 surrounding lines to pick one, or set replace_all to change them all",
                lines.join(", ")
            ));
        }
        _ => {}
    }
    let new = if input.replace_all {
        old.replace(&input.old_string, &input.new_string)
    } else {
        old.replacen(&input.old_string, &input.new_string, 1)
    };
    files::replace(&path, new.as_bytes()).map_err(|e| format!("cannot write {shown}: {e}"))?;
    let first = line_of(&old, starts[0]);
    let span = input.new_string.matches('\n').count() + 1;
    let region = numbered_region(&new, first, span);
    let replacements = if input.replace_all { starts.len() } else { 1 };
    let text = format!(
        "Edited {shown} ({replacements} replacement{}). The region now reads:\n{region}",
        if replacements == 1 { "" } else { "s" }
    );
    let data = json!({
        "path": shown,
        "sha256": text::sha256_hex(new.as_bytes()),
        "diff": text::unified_diff(&shown, &old, &new),
        "replacements": replacements,
    });
    Ok(Output::ok(text, data))
}

/// The 1-based line number of byte offset `at`.
fn line_of(text: &str, at: usize) -> usize {
    memchr::memchr_iter(b'\n', &text.as_bytes()[..at]).count() + 1
}

/// Lines `first`..`first + span` of `text` with [`CONTEXT`] lines either
/// side, numbered.
fn numbered_region(text: &str, first: usize, span: usize) -> String {
    let from = first.saturating_sub(CONTEXT).max(1);
    let to = first + span - 1 + CONTEXT;
    let mut out = String::new();
    for (i, line) in text.lines().enumerate().skip(from - 1).take(to + 1 - from) {
        text::push_numbered(&mut out, i + 1, line);
    }
    out
}

/// The error for an `old_string` that is not in the file: the closest line,
/// so the model sees what differs (often indentation or a changed word).
fn no_match(shown: &str, text: &str, wanted: &str) -> String {
    let probe = wanted
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or(wanted);
    let closest = text
        .lines()
        .enumerate()
        .filter(|(_, line)| {
            let len = line.trim().len();
            len * 3 >= probe.len() && len <= probe.len() * 3
        })
        .map(|(i, line)| {
            let ratio = similar::TextDiff::from_chars(line.trim(), probe).ratio();
            (ratio, i, line)
        })
        .max_by(|a, b| a.0.total_cmp(&b.0));
    let mut out = format!("old_string was not found in {shown}");
    match closest {
        Some((ratio, i, line)) if ratio > 0.5 => {
            out.push_str(&format!(
                "; the closest line is {}:\n{}\nCopy old_string exactly from the file \
                 (read it again if it may have changed).",
                i + 1,
                text::cut_line(line)
            ));
        }
        _ => out.push_str("; read the file and copy old_string exactly from it."),
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_closest_line_is_named() {
        let text = "fn main() {\n    println!(\"hello\");\n}\n";
        let e = no_match("a.rs", text, "println!(\"helo\");");
        assert!(e.contains("closest line is 2"), "{e}");
        assert_eq!(line_of(text, text.find('}').unwrap()), 3);
        let region = numbered_region(text, 2, 1);
        assert!(region.starts_with("     1\tfn main() {"), "{region}");
    }
}
