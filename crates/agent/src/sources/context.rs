//! What a run reads from outside the substrate before its first call —
//! the instruction files (up the tree, with their imports), the git facts,
//! today's date — and the base instructions every run starts with. The context event records each verbatim
//! ([`ContextBody`](crate::contract::ContextBody)).

use crate::contract::{GitFacts, Instructions};
use std::path::{Path, PathBuf};

/// The most of one instruction file a request holds (the rest is cut,
/// with a note).
pub const MAX_INSTRUCTION_BYTES: usize = 64 * 1024;

/// How deep `@path` imports go.
const MAX_IMPORT_DEPTH: usize = 5;

/// Where instruction files are looked for.
pub struct Places<'a> {
    /// The project root (or the git root above it).
    pub root: &'a Path,
    /// The person's working directory (the root when not inside it).
    pub working: Option<&'a Path>,
    /// The user's configuration directory (`…/hermitcrab`).
    pub user_dir: Option<&'a Path>,
    /// The user's home (`~/.claude/CLAUDE.md`, and where `~/` imports go).
    pub home: Option<&'a Path>,
}

/// Instruction files, general first and closer later: the user's
/// (`…/hermitcrab/AGENTS.md`, `~/.claude/CLAUDE.md`), then `AGENTS.md`
/// (else `CLAUDE.md`) in every directory from the root down to the
/// working directory — each followed by the files it imports (`@path`).
pub fn read_instructions(places: &Places<'_>) -> Vec<Instructions> {
    // (file, the person's own): a project's files reach only the project
    let mut files: Vec<(PathBuf, bool)> = Vec::new();
    if let Some(dir) = places.user_dir {
        files.extend(first_of(dir, &["AGENTS.md"]).map(|f| (f, true)));
    }
    if let Some(home) = places.home {
        files.extend(first_of(&home.join(".claude"), &["CLAUDE.md"]).map(|f| (f, true)));
    }
    for dir in directories(places.root, places.working) {
        files.extend(first_of(&dir, &["AGENTS.md", "CLAUDE.md"]).map(|f| (f, false)));
    }
    let mut out = Vec::new();
    let mut seen = Vec::new();
    for (file, own) in files {
        let reach = Reach { places, own };
        if !own && !reach.admits(&file) {
            // a link out of the project: said, never read
            out.push(Instructions {
                path: file.to_string_lossy().into_owned(),
                text: format!("[hermitcrab: this file is not read: {LEADS_OUT}]"),
                ..Instructions::default()
            });
            continue;
        }
        read_with_imports(&file, 0, &reach, &mut seen, &mut out);
    }
    out
}

/// Why a project's file or folder that leads out of the project is not
/// read.
pub const LEADS_OUT: &str = "it leads outside the project (a link), and a project's own files \
    reach only the project, trusted or not";

/// Whether `path` — links followed — is inside `root`: all a project's
/// own files (its instruction files and their imports, its commands,
/// skills and custom agents) may reach, whether the person trusts the
/// project or not. Trust is judged on the project's configuration, not on
/// where its links lead (which may change after); a path that cannot be
/// resolved is not inside.
pub fn within(root: &Path, path: &Path) -> bool {
    match (root.canonicalize(), path.canonicalize()) {
        (Ok(root), Ok(real)) => real.starts_with(root),
        _ => false,
    }
}

/// The root, then each directory down to `working` (when inside the root).
fn directories(root: &Path, working: Option<&Path>) -> Vec<PathBuf> {
    let mut dirs = vec![root.to_path_buf()];
    if let Some(rest) = working.and_then(|w| w.strip_prefix(root).ok()) {
        let mut at = root.to_path_buf();
        for part in rest.components() {
            at.push(part);
            dirs.push(at.clone());
        }
    }
    dirs
}

/// What an instruction file may import: a project's, files in the
/// project; the person's own, in the project or their home.
struct Reach<'a> {
    places: &'a Places<'a>,
    own: bool,
}

impl Reach<'_> {
    /// Whether `path` (resolved, links followed) is inside what it may read.
    fn admits(&self, path: &Path) -> bool {
        within(self.places.root, path)
            || (self.own && self.places.home.is_some_and(|home| within(home, path)))
    }
}

fn first_of(dir: &Path, names: &[&str]) -> Option<PathBuf> {
    names.iter().map(|n| dir.join(n)).find(|p| p.is_file())
}

/// One file's text (cut, made UTF-8, with notes), then its imports.
fn read_with_imports(
    file: &Path,
    depth: usize,
    reach: &Reach<'_>,
    seen: &mut Vec<PathBuf>,
    out: &mut Vec<Instructions>,
) {
    let key = file.canonicalize().unwrap_or_else(|_| file.to_path_buf());
    seen.push(key);
    let Ok(bytes) = std::fs::read(file) else {
        return;
    };
    let mut text =
        String::from_utf8_lossy(&bytes[..bytes.len().min(MAX_INSTRUCTION_BYTES)]).into_owned();
    if bytes.len() > MAX_INSTRUCTION_BYTES {
        text.push_str(&format!(
            "\n[hermitcrab: this file is {} bytes; only its first {MAX_INSTRUCTION_BYTES} are here]",
            bytes.len()
        ));
    }
    if std::str::from_utf8(&bytes).is_err() {
        text.push_str(
            "\n[hermitcrab: this file is not UTF-8; what could not be read is shown as �]",
        );
    }
    let index = out.len();
    out.push(Instructions {
        path: file.to_string_lossy().into_owned(),
        ..Instructions::default()
    });
    let mut notes = Vec::new();
    for wanted in imports(&text) {
        match import_target(file, &wanted, reach) {
            Err(why) => notes.push(format!("[hermitcrab: @{wanted} not imported: {why}]")),
            Ok(_) if depth + 1 > MAX_IMPORT_DEPTH => notes.push(format!(
                "[hermitcrab: @{wanted} not imported: imports go {MAX_IMPORT_DEPTH} levels deep at most]"
            )),
            Ok(target) if seen.contains(&target) => {
                notes.push(format!("[hermitcrab: @{wanted} not imported: it imports itself (a cycle)]"));
            }
            Ok(target) => read_with_imports(&target, depth + 1, reach, seen, out),
        }
    }
    for note in notes {
        text.push('\n');
        text.push_str(&note);
    }
    out[index].text = text;
}

/// The `@path` words of a text, outside code fences and code spans.
fn imports(text: &str) -> Vec<String> {
    let mut fenced = false;
    let mut out = Vec::new();
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        let mut in_span = false;
        for (i, part) in line.split('`').enumerate() {
            in_span = i % 2 == 1;
            if in_span {
                continue;
            }
            for word in part.split_whitespace() {
                if let Some(path) = word.strip_prefix('@') {
                    let path = path.trim_end_matches(['.', ',', ';', ':', ')']);
                    if !path.is_empty() && (path.contains('/') || path.contains('.')) {
                        out.push(path.to_owned());
                    }
                }
            }
        }
        let _ = in_span;
    }
    out
}

/// Where `@wanted` in `file` points, when it may be read: a file inside
/// the project (or, from the person's own file, their home).
fn import_target(file: &Path, wanted: &str, reach: &Reach<'_>) -> Result<PathBuf, String> {
    let path = match (wanted.strip_prefix("~/"), reach.places.home) {
        (Some(rest), Some(home)) => home.join(rest),
        _ => file.parent().unwrap_or(Path::new("/")).join(wanted),
    };
    let real = path
        .canonicalize()
        .map_err(|_| "there is no such file".to_owned())?;
    if !reach.admits(&real) {
        return Err(if reach.own {
            "it is outside the project and your home".into()
        } else {
            "a project's file imports only files in the project".into()
        });
    }
    if !real.is_file() {
        return Err("it is not a file".into());
    }
    Ok(real)
}

/// The repository's branch, its `git status --short` (first 50 lines) and
/// its last five commits' titles — none when `root` is not in a git
/// repository (found without starting git) or git is not there. The
/// commands run at once, side by side.
pub fn git_facts(root: &Path) -> Option<GitFacts> {
    root.ancestors().find(|d| d.join(".git").exists())?;
    let git = |args: &[&str]| {
        std::process::Command::new("git")
            .arg("--no-optional-locks")
            .args(args)
            .current_dir(root)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .ok()
    };
    let answer = |child: Option<std::process::Child>| -> Option<String> {
        let out = child?.wait_with_output().ok()?;
        out.status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).trim_end().to_owned())
    };
    let (branch, local, log) = (
        git(&["branch", "--show-current"]),
        git(&["config", "--local", "--list", "--name-only"]),
        git(&["log", "-5", "--format=%h %s"]),
    );
    // not a work tree (a bare repository, a `.git` that is not one): no facts
    let branch = answer(branch)?;
    // `git status` runs what the repository's own configuration names
    // (`core.fsmonitor`, filters, …): a repository that names any gets no
    // status, unasked.
    let local = answer(local).unwrap_or_default();
    let status = if local
        .lines()
        .any(|name| contain::git::runs_code(&name.to_lowercase()))
    {
        "(not read: this repository's configuration names a command git would run)".to_owned()
    } else {
        answer(git(&["status", "--short"])).unwrap_or_default()
    };
    let mut lines: Vec<&str> = status.lines().collect();
    let more = lines.len().saturating_sub(50);
    lines.truncate(50);
    let mut status = lines.join("\n");
    if more > 0 {
        status.push_str(&format!("\n… and {more} more"));
    }
    let commits = answer(log)
        .map(|l| l.lines().map(str::to_owned).collect())
        .unwrap_or_default();
    Some(GitFacts {
        branch,
        status,
        commits,
    })
}

/// Today's date (UTC), `YYYY-MM-DD`.
pub fn today() -> String {
    let now = humantime::format_rfc3339(std::time::SystemTime::now()).to_string();
    now.get(..10).unwrap_or(&now).to_owned()
}

/// The base instructions every run starts with.
pub const BASE_INSTRUCTIONS: &str = "\
You are hermitcrab's coding agent, working in a software project on the user's machine. \
You help with software engineering: fixing bugs, adding features, explaining and refactoring \
code, running tests and commands.

How to work:
- Find things out before acting: search with grep and glob, read the files that matter. Do \
not guess at code you have not read.
- Make the smallest change that does the job, in the style of the code around it. Read a \
file before you edit or write it; edit refuses a file that changed since you read it.
- Prefer the dedicated tools (read, edit, write, glob, grep) to shell commands that do the \
same; use shell for builds, tests, git and everything else.
- Several independent read-only calls (reads, searches) can go in one reply: they run at once.
- After a change, check it: run the tests or the build when there are any.
- When a tool fails, read its message and fix the call; do not repeat the same call unchanged.
- Keep answers short and concrete. Say what you changed and what is left. When you are done, \
stop calling tools and answer.

Everything you do is recorded; tools run contained and may only touch what they are allowed \
to. A refused call says why.";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_big_file_is_cut_and_imports_stop_five_levels_deep() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::write(
            root.join("AGENTS.md"),
            "x".repeat(MAX_INSTRUCTION_BYTES + 10) + "\n@i1.md\n",
        )
        .unwrap();
        for n in 1..=7 {
            std::fs::write(
                root.join(format!("i{n}.md")),
                format!("level {n}\n@i{}.md\n", n + 1),
            )
            .unwrap();
        }
        let places = Places {
            root: &root,
            working: None,
            user_dir: None,
            home: None,
        };
        let read = read_instructions(&places);
        assert!(
            read[0].text.contains("only its first 65536 are here"),
            "cut"
        );
        // the root's import is cut off with the rest of the big file; the
        // chain from i1 stops at depth five
        assert_eq!(read.len(), 1);
        std::fs::write(root.join("AGENTS.md"), "@i1.md\n").unwrap();
        let read = read_instructions(&places);
        let texts: Vec<&str> = read
            .iter()
            .map(|r| r.text.lines().next().unwrap_or(""))
            .collect();
        assert_eq!(
            texts,
            vec![
                "@i1.md", "level 1", "level 2", "level 3", "level 4", "level 5"
            ]
        );
        assert!(
            read[5].text.contains("5 levels deep at most"),
            "{}",
            read[5].text
        );
    }

    #[test]
    fn a_projects_files_reach_only_the_project_not_the_home() {
        let project = tempfile::tempdir().unwrap();
        let home = tempfile::tempdir().unwrap();
        let root = project.path().canonicalize().unwrap();
        let home_dir = home.path().canonicalize().unwrap();
        std::fs::write(home_dir.join("secret.md"), "SECRET KEY").unwrap();
        std::fs::write(root.join("AGENTS.md"), "rules\n@~/secret.md\n").unwrap();
        std::fs::create_dir(root.join("sub")).unwrap();
        std::os::unix::fs::symlink(home_dir.join("secret.md"), root.join("sub/AGENTS.md")).unwrap();
        std::fs::create_dir(home_dir.join(".claude")).unwrap();
        std::fs::write(home_dir.join(".claude/CLAUDE.md"), "mine\n@~/secret.md\n").unwrap();
        let working = root.join("sub");
        let places = Places {
            root: &root,
            working: Some(&working),
            user_dir: None,
            home: Some(&home_dir),
        };
        let read = read_instructions(&places);
        let all: String = read.iter().map(|r| format!("{}\n", r.text)).collect();
        // the person's own file may import from their home; the project's may not
        assert_eq!(all.matches("SECRET KEY").count(), 1, "{all}");
        assert!(
            all.contains("a project's file imports only files in the project"),
            "{all}"
        );
        let linked = read
            .iter()
            .find(|r| r.path.ends_with("sub/AGENTS.md"))
            .unwrap();
        assert!(
            linked.text.contains("leads outside the project"),
            "a link out is not read, and said: {}",
            linked.text
        );
    }
}
