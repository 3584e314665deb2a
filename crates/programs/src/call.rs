//! A file tool's own logic, called in this process: what a run of `read`,
//! `write`, `edit`, `glob` or `grep` would answer for an input, without
//! the engine or containment around it — for tests of the tools
//! themselves and for benchmarks. A real run goes through the engine,
//! which contains the program and records the call.
//!
//! ```
//! use programs::call::{Access, call};
//! let dir = tempfile::tempdir().unwrap();
//! std::fs::write(dir.path().join("a.txt"), "one\ntwo\n").unwrap();
//! let read = call("read", dir.path(), &Access::everything(), serde_json::json!({"file_path": "a.txt"})).unwrap();
//! assert_eq!(read.text, "     1\tone\n     2\ttwo\n");
//! assert_eq!(read.data["total_lines"], 2);
//! ```

use crate::paths::Paths;
use protocol::program::Output;
use serde::de::DeserializeOwned;
use serde_json::Value;
use std::path::{Path, PathBuf};

/// What a call may touch, as the engine would grant it (`HC_CAPABILITIES`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Access {
    /// Absolute paths that may be read (`None`: everything).
    pub read: Option<Vec<PathBuf>>,
    /// Absolute paths that may be written (`None`: not said — only the
    /// protected `.git` and `.hermitcrab` are refused).
    pub write: Option<Vec<PathBuf>>,
}

impl Access {
    /// Everything may be read; writes are refused only in `.git` and
    /// `.hermitcrab`.
    pub fn everything() -> Access {
        Access::default()
    }

    /// Reads anywhere, writes only under `roots`.
    pub fn writing(roots: &[&Path]) -> Access {
        Access {
            read: None,
            write: Some(roots.iter().map(|r| r.to_path_buf()).collect()),
        }
    }
}

/// What tool `name` answers for `input` in project `root`: its output (a
/// refused or failed request is an output with `is_error`, as a run
/// answers it); `Err` for a tool that is not a file tool or an input that
/// does not read as its input.
pub fn call(name: &str, root: &Path, access: &Access, input: Value) -> Result<Output, String> {
    let paths = Paths::new(root, access.read.clone(), access.write.clone());
    let answered = match name {
        "read" => crate::read::read(&paths, &typed(name, input)?),
        "write" => crate::write::write(&paths, &typed(name, input)?),
        "edit" => crate::edit::edit(&paths, &typed(name, input)?),
        "glob" => crate::glob::glob(&paths, &typed(name, input)?),
        "grep" => crate::grep::grep(&paths, &typed(name, input)?),
        other => {
            return Err(format!(
                "`{other}` is not a file tool: it runs processes or reaches the network, so it \
                 runs through the engine"
            ));
        }
    };
    Ok(answered.unwrap_or_else(Output::error))
}

fn typed<T: DeserializeOwned>(tool: &str, input: Value) -> Result<T, String> {
    serde_json::from_value(input).map_err(|e| format!("invalid input for `{tool}`: {e}"))
}
