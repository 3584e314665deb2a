//! # programs
//!
//! hermitcrab's built-in tool programs (`docs/programs.md`): `read`,
//! `write`, `edit`, `glob`, `grep`, `shell`, `web-fetch`, and `echo`. Each
//! is an ordinary protocol program — it reads its typed argument with
//! `scope([$HC_PROCESS_ID])` and answers by committing one `engine/output`
//! chunk onto its own process — run as `hc program NAME` (a program chunk
//! whose executable is `builtin:NAME`). [`BUILTINS`] is the one table of
//! them: each row is a program's chunks and its entry point.
//!
//! Invariants: a built-in reaches the substrate only through the protocol,
//! exactly as a program in another language would; a request that fails
//! is an error *result* (`is_error: true`) and the program still completes
//! — its process fails only when it could not answer at all; a request
//! that fails changes nothing on disk.

pub mod call;
mod echo;
mod edit;
mod files;
mod glob;
mod grep;
mod hook;
pub mod image;
mod paths;
mod read;
mod rewind;
mod shell;
mod text;
mod web_fetch;
mod write;

pub use protocol::program::{Builtin, ProgramError};

/// Every built-in tool program: its chunks and its entry point.
pub static BUILTINS: &[Builtin] = &[
    Builtin {
        name: "read",
        chunks: read::chunks,
        main: read::main,
    },
    Builtin {
        name: "write",
        chunks: write::chunks,
        main: write::main,
    },
    Builtin {
        name: "edit",
        chunks: edit::chunks,
        main: edit::main,
    },
    Builtin {
        name: "glob",
        chunks: glob::chunks,
        main: glob::main,
    },
    Builtin {
        name: "grep",
        chunks: grep::chunks,
        main: grep::main,
    },
    Builtin {
        name: "shell",
        chunks: shell::chunks,
        main: shell::main,
    },
    Builtin {
        name: "web-fetch",
        chunks: web_fetch::chunks,
        main: web_fetch::main,
    },
    Builtin {
        name: "echo",
        chunks: echo::chunks,
        main: echo::main,
    },
    Builtin {
        name: "hook",
        chunks: hook::chunks,
        main: hook::main,
    },
    Builtin {
        name: "rewind",
        chunks: rewind::chunks,
        main: rewind::main,
    },
];

/// The search itself of `grep`, for benchmarks: the output lines a `grep`
/// run would give for `input` (its JSON input) under `root`.
pub fn grep_search(root: &std::path::Path, input: serde_json::Value) -> Result<String, String> {
    call::call("grep", root, &call::Access::everything(), input).map(|out| out.text)
}
