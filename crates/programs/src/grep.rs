//! `grep`: a regex search over files with ripgrep's own crates, output
//! shaped as `rg --with-filename` prints it.

use crate::glob::{search_base, walker};
use crate::paths::Paths;
use crate::text;
use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use grep_searcher::{
    BinaryDetection, Searcher, SearcherBuilder, Sink, SinkContext, SinkContextKind, SinkMatch,
};
use protocol::program::{Output, ProgramDef, ProgramFuture, TOOL_TIMEOUT_MS, serve};
use protocol::{Capabilities, FilesystemAccess, ReadAccess};
use serde::Deserialize;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// The answer's text is kept to this many characters (its head).
const MAX_OUTPUT_CHARS: usize = 30_000;

fn schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "pattern": {"type": "string", "description": "A regular expression (Rust/ripgrep syntax; escape literal braces, e.g. `interface\\{\\}`)."},
            "path": {"type": "string", "description": "A file or directory to search (default: the project root)."},
            "glob": {"type": "string", "description": "Only files matching this glob, e.g. `*.js` or `*.{ts,tsx}`."},
            "type": {"type": "string", "description": "Only files of this ripgrep type, e.g. `rust`, `py`, `js`."},
            "output_mode": {"type": "string", "enum": ["content", "files_with_matches", "count"], "description": "`files_with_matches` (default): paths; `content`: matching lines; `count`: matches per file."},
            "-i": {"type": "boolean", "description": "Case-insensitive."},
            "-n": {"type": "boolean", "description": "Line numbers in content mode (default true)."},
            "-A": {"type": "integer", "minimum": 0, "description": "Lines after each match (content mode)."},
            "-B": {"type": "integer", "minimum": 0, "description": "Lines before each match (content mode)."},
            "-C": {"type": "integer", "minimum": 0, "description": "Lines before and after each match (content mode)."},
            "multiline": {"type": "boolean", "description": "Let `.` match newlines and patterns span lines."},
            "head_limit": {"type": "integer", "minimum": 1, "description": "Only the first N lines of output."}
        },
        "required": ["pattern"]
    })
}

fn definition() -> ProgramDef {
    ProgramDef {
        name: "grep",
        text: "Searches file contents with a regular expression (ripgrep's engine and syntax), \
               skipping what .gitignore excludes and binary files. `output_mode` is \
               `files_with_matches` (default: matching paths), `content` (matching lines as \
               `path:LINE:text`; `-A`/`-B`/`-C` add context, `-n` false drops numbers) or \
               `count` (`path:N`). Narrow with `path`, `glob` (`*.rs`) or `type` (`rust`, `py`, \
               `js`…); `-i` ignores case; `multiline` lets a match span lines; `head_limit` \
               keeps the first N lines. Paths are relative to the project root. Use this, \
               not shell grep or rg.",
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

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(rename_all = "snake_case")]
enum Mode {
    Content,
    #[default]
    FilesWithMatches,
    Count,
}

#[derive(Deserialize)]
pub(crate) struct Input {
    pattern: String,
    path: Option<String>,
    glob: Option<String>,
    #[serde(rename = "type")]
    file_type: Option<String>,
    #[serde(default)]
    output_mode: Mode,
    #[serde(rename = "-i", default)]
    ignore_case: bool,
    #[serde(rename = "-n")]
    numbers: Option<bool>,
    #[serde(rename = "-A")]
    after: Option<usize>,
    #[serde(rename = "-B")]
    before: Option<usize>,
    #[serde(rename = "-C")]
    around: Option<usize>,
    #[serde(default)]
    multiline: bool,
    head_limit: Option<usize>,
    /// Absolute globs to skip (the agent fills them from the permissions).
    #[serde(default)]
    exclude: Vec<String>,
}

pub(crate) fn main() -> ProgramFuture {
    Box::pin(serve("input/grep", async |program, input: Input| {
        let paths = Paths::from_env(program.root());
        grep(&paths, &input).unwrap_or_else(Output::error)
    }))
}

pub(crate) fn grep(paths: &Paths, input: &Input) -> Result<Output, String> {
    if input.head_limit == Some(0) {
        return Err("head_limit is a number of lines and must be at least 1".to_owned());
    }
    let base = search_base(paths, input.path.as_deref())?;
    let matcher = matcher(input)?;
    let walk = file_walk(&base, input)?;
    let found = search(paths, &walk, &matcher, input);
    let files = found.len();
    let matched_lines: u64 = found.iter().map(|(_, f)| f.count).sum();
    let mut lines: Vec<String> = Vec::new();
    let context = input.output_mode == Mode::Content && context_of(input) != (0, 0);
    for (i, (_, file)) in found.into_iter().enumerate() {
        if context && i > 0 {
            lines.push("--".to_owned());
        }
        lines.extend(file.lines);
    }
    let total = lines.len();
    let limit = input.head_limit.unwrap_or(usize::MAX);
    lines.truncate(limit);
    // `head_limit` caps the lines exactly (`data.truncated` says more were
    // found); only the size cap, which the model did not ask for, adds a
    // note, kept within the cap.
    let mut truncated = total > limit;
    let mut out = lines.join("\n");
    if out.len() > MAX_OUTPUT_CHARS {
        let room = MAX_OUTPUT_CHARS - crate::text::NOTE_ROOM;
        let at = out.char_indices().nth(room).map_or(out.len(), |(i, _)| i);
        let at = out[..at].rfind('\n').unwrap_or(at);
        let kept = out[..at].lines().count();
        out.truncate(at);
        out.push_str(&format!(
            "\n[… {} more lines not shown; narrow the search or set head_limit]",
            lines.len() - kept
        ));
        truncated = true;
    }
    if total == 0 {
        out = format!("No matches for `{}`.", input.pattern);
    }
    let data = json!({
        "mode": input.output_mode,
        "files": files,
        "matched_lines": matched_lines,
        "lines": total.min(limit),
        "truncated": truncated,
    });
    Ok(Output::ok(out, data))
}

fn matcher(input: &Input) -> Result<RegexMatcher, String> {
    let mut builder = RegexMatcherBuilder::new();
    builder.case_insensitive(input.ignore_case);
    if input.multiline {
        builder.multi_line(true).dot_matches_new_line(true);
    } else {
        builder.line_terminator(Some(b'\n'));
    }
    builder
        .build(&input.pattern)
        .map_err(|e| format!("invalid regular expression: {e}"))
}

fn file_walk(base: &Path, input: &Input) -> Result<ignore::WalkBuilder, String> {
    let mut walk = walker(base, &input.exclude)?;
    if let Some(name) = &input.file_type {
        let mut types = ignore::types::TypesBuilder::new();
        types.add_defaults();
        if !types.definitions().iter().any(|d| d.name() == name) {
            return Err(format!(
                "unknown file type `{name}`; ripgrep's types include rust, py, js, ts, go, \
                 java, c, cpp, md, json, yaml, toml, sh (or use glob instead)"
            ));
        }
        types.select(name);
        walk.types(types.build().map_err(|e| e.to_string())?);
    }
    if let Some(glob) = &input.glob {
        let mut over = ignore::overrides::OverrideBuilder::new(base);
        over.add(glob)
            .map_err(|e| format!("invalid glob `{glob}`: {e}"))?;
        walk.overrides(over.build().map_err(|e| e.to_string())?);
    }
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get());
    walk.threads(threads);
    Ok(walk)
}

fn context_of(input: &Input) -> (usize, usize) {
    let around = input.around.unwrap_or(0);
    (
        input.before.unwrap_or(around),
        input.after.unwrap_or(around),
    )
}

/// What a search found in one file.
#[derive(Default)]
struct FileResult {
    lines: Vec<String>,
    count: u64,
}

/// Searches every file of `walk` on all cores; results sorted by path.
fn search(
    paths: &Paths,
    walk: &ignore::WalkBuilder,
    matcher: &RegexMatcher,
    input: &Input,
) -> Vec<(PathBuf, FileResult)> {
    let found: Mutex<Vec<(PathBuf, FileResult)>> = Mutex::new(Vec::new());
    let (before, after) = context_of(input);
    let content = input.output_mode == Mode::Content;
    walk.build_parallel().run(|| {
        let mut searcher = SearcherBuilder::new()
            .line_number(true)
            .multi_line(input.multiline)
            .before_context(if content { before } else { 0 })
            .after_context(if content { after } else { 0 })
            .binary_detection(BinaryDetection::quit(0))
            .build();
        let found = &found;
        Box::new(move |entry| {
            let Ok(entry) = entry else {
                return ignore::WalkState::Continue;
            };
            if !entry.file_type().is_some_and(|t| t.is_file()) {
                return ignore::WalkState::Continue;
            }
            let mut sink = Collect {
                shown: paths.show(entry.path()),
                mode: input.output_mode,
                numbers: input.numbers.unwrap_or(true),
                result: FileResult::default(),
                binary: false,
            };
            let searched = searcher.search_path(matcher, entry.path(), &mut sink);
            if searched.is_ok() && !sink.binary && sink.result.count > 0 {
                let result = sink.finish();
                if let Ok(mut all) = found.lock() {
                    all.push((entry.into_path(), result));
                }
            }
            ignore::WalkState::Continue
        })
    });
    let mut found = found.into_inner().unwrap_or_default();
    found.sort_by(|a, b| a.0.cmp(&b.0));
    found
}

/// Collects one file's output lines.
struct Collect {
    shown: String,
    mode: Mode,
    numbers: bool,
    result: FileResult,
    binary: bool,
}

impl Collect {
    fn push(&mut self, separator: char, number: Option<u64>, bytes: &[u8]) {
        let text = String::from_utf8_lossy(bytes);
        for (i, line) in text.lines().enumerate() {
            let line = text::cut_line(line);
            self.result.lines.push(match (self.numbers, number) {
                (true, Some(n)) => {
                    format!("{}{separator}{}{separator}{line}", self.shown, n + i as u64)
                }
                _ => format!("{}{separator}{line}", self.shown),
            });
        }
    }

    fn finish(mut self) -> FileResult {
        match self.mode {
            Mode::Content => {}
            Mode::FilesWithMatches => self.result.lines = vec![self.shown],
            Mode::Count => {
                self.result.lines = vec![format!("{}:{}", self.shown, self.result.count)]
            }
        }
        self.result
    }
}

impl Sink for Collect {
    type Error = std::io::Error;

    fn matched(&mut self, _: &Searcher, found: &SinkMatch<'_>) -> Result<bool, Self::Error> {
        let lines = found.lines().count().max(1) as u64;
        self.result.count += lines;
        match self.mode {
            Mode::Content => {
                self.push(':', found.line_number(), found.bytes());
                Ok(true)
            }
            Mode::Count => Ok(true),
            Mode::FilesWithMatches => Ok(false),
        }
    }

    fn context(&mut self, _: &Searcher, context: &SinkContext<'_>) -> Result<bool, Self::Error> {
        if matches!(
            context.kind(),
            SinkContextKind::Before | SinkContextKind::After
        ) {
            self.push('-', context.line_number(), context.bytes());
        }
        Ok(true)
    }

    fn context_break(&mut self, _: &Searcher) -> Result<bool, Self::Error> {
        self.result.lines.push("--".to_owned());
        Ok(true)
    }

    fn binary_data(&mut self, _: &Searcher, _: u64) -> Result<bool, Self::Error> {
        self.binary = true;
        Ok(false)
    }
}
