//! `glob`: files whose path matches a pattern, newest first, respecting
//! `.gitignore` and `.ignore`.

use crate::paths::Paths;
use protocol::program::{Output, ProgramDef, ProgramFuture, TOOL_TIMEOUT_MS, serve};
use protocol::{Capabilities, FilesystemAccess, ReadAccess};
use serde::Deserialize;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

/// At most this many paths are returned.
const MAX_PATHS: usize = 1_000;

fn schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "pattern": {"type": "string", "description": "A glob such as `**/*.rs` or `src/**/*.{ts,tsx}`, matched against paths relative to `path`."},
            "path": {"type": "string", "description": "The directory to search (default: the project root)."}
        },
        "required": ["pattern"]
    })
}

fn definition() -> ProgramDef {
    ProgramDef {
        name: "glob",
        text: "Finds files by name pattern, newest first. Patterns are globs matched against \
               paths relative to `path` (default the project root): `*` and `?` do not cross \
               `/`, `**` does, `{a,b}` is either — so `*.rs` is the top level only and \
               `**/*.rs` every depth. Files that .gitignore or .ignore exclude are left out, \
               and .git always is; hidden files are included. At most 1000 paths, relative to \
               the project root. Use grep to search file contents.",
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
    pattern: String,
    path: Option<String>,
    /// Absolute globs to skip (the agent fills them from the permissions).
    #[serde(default)]
    exclude: Vec<String>,
}

pub(crate) fn main() -> ProgramFuture {
    Box::pin(serve("input/glob", async |program, input: Input| {
        let paths = Paths::from_env(program.root());
        glob(&paths, &input).unwrap_or_else(Output::error)
    }))
}

/// A directory walk that honours `.gitignore` (repository or not) and
/// `.ignore`, includes hidden files, never enters `.git`, and skips what
/// `exclude` names (absolute globs: what the permissions keep from every
/// reader).
pub(crate) fn walker(base: &Path, exclude: &[String]) -> Result<ignore::WalkBuilder, String> {
    let mut skip = globset::GlobSetBuilder::new();
    for pattern in exclude {
        let glob = globset::GlobBuilder::new(pattern)
            .literal_separator(false)
            .build()
            .map_err(|e| format!("invalid exclude pattern `{pattern}`: {e}"))?;
        skip.add(glob);
    }
    let skip = skip.build().map_err(|e| e.to_string())?;
    let mut walk = ignore::WalkBuilder::new(base);
    walk.hidden(false)
        .require_git(false)
        .git_global(false)
        .filter_entry(move |entry| entry.file_name() != ".git" && !skip.is_match(entry.path()));
    Ok(walk)
}

/// The directory a search starts from: `path` (default the root), which
/// must exist and be readable — resolved (symlinks, `/proc/self/cwd`), so
/// that what it finds is named by real paths, which `exclude` matches.
pub(crate) fn search_base(paths: &Paths, path: Option<&str>) -> Result<PathBuf, String> {
    let written = paths.absolute(path.unwrap_or("."));
    let base = written.canonicalize().unwrap_or(written);
    paths.check_read(&base)?;
    if !base.exists() {
        return Err(format!("{} does not exist", paths.show(&base)));
    }
    Ok(base)
}

pub(crate) fn glob(paths: &Paths, input: &Input) -> Result<Output, String> {
    let base = search_base(paths, input.path.as_deref())?;
    if !base.is_dir() {
        return Err(format!(
            "{} is a file, not a directory; give glob a directory as `path`",
            paths.show(&base)
        ));
    }
    let pattern = input.pattern.strip_prefix("./").unwrap_or(&input.pattern);
    let matcher = globset::GlobBuilder::new(pattern)
        .literal_separator(true)
        .backslash_escape(true)
        .build()
        .map_err(|e| format!("invalid glob pattern: {e}"))?
        .compile_matcher();
    let mut found: Vec<(SystemTime, PathBuf)> = Vec::new();
    for entry in walker(&base, &input.exclude)?.build().flatten() {
        if !entry
            .file_type()
            .is_some_and(|t| t.is_file() || t.is_symlink())
        {
            continue;
        }
        let Ok(relative) = entry.path().strip_prefix(&base) else {
            continue;
        };
        if matcher.is_match(relative) {
            let mtime = entry
                .metadata()
                .ok()
                .and_then(|m| m.modified().ok())
                .unwrap_or(SystemTime::UNIX_EPOCH);
            found.push((mtime, entry.into_path()));
        }
    }
    found.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
    let count = found.len();
    let truncated = count > MAX_PATHS;
    let shown: Vec<String> = found
        .iter()
        .take(MAX_PATHS)
        .map(|(_, p)| paths.show(p))
        .collect();
    let mut text = shown.join("\n");
    if shown.is_empty() {
        text = format!(
            "No files match `{}` in {}.",
            input.pattern,
            paths.show(&base)
        );
    }
    Ok(Output::ok(
        text,
        json!({"paths": shown, "count": count, "truncated": truncated}),
    ))
}
