//! What a run reads from outside the substrate before its first call —
//! the instruction files, today's date — and the base instructions every
//! run starts with. The context event records each verbatim
//! ([`ContextBody`](crate::contract::ContextBody)).

use crate::contract::Instructions;
use std::path::Path;

/// Instruction files, the project's first: `AGENTS.md` (else `CLAUDE.md`)
/// in the project root, then in the user's configuration directory.
pub fn read_instructions(root: &Path, user_dir: Option<&Path>) -> Vec<Instructions> {
    let mut out = Vec::new();
    for dir in std::iter::once(root).chain(user_dir) {
        for name in ["AGENTS.md", "CLAUDE.md"] {
            let path = dir.join(name);
            if let Ok(text) = std::fs::read_to_string(&path) {
                out.push(Instructions {
                    path: path.to_string_lossy().into_owned(),
                    text,
                });
                break;
            }
        }
    }
    out
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
