//! hermitcrab's quality ratchet: what the structure must not grow,
//! counted from the source alone (each crate's `src/`, parsed with `syn`),
//! against a baseline that only goes down.
//!
//! The measures, per crate:
//!
//! * `circles` — import circles between files: groups of files that reach
//!   each other through `crate::`, `super::` and `self::` paths;
//! * `result_string` — functions whose signature returns `Result<_, String>`;
//! * `string_keys` — reads by string key (`x["key"]`);
//! * `long_functions` — functions over 60 lines;
//! * `long_files` — files over 800 lines;
//! * `unwrap` — `.unwrap()` and `.expect(…)`;
//! * `levers` — the measurement switches the baseline names, outside
//!   `#[cfg(feature = "bench")]` (so in the release binary).
//!
//! Test code (`#[cfg(test)]`, `#[test]`, a `tests.rs` or `tests/` under
//! `src/`) counts for none of them.
//!
//! ```
//! let dir = tempfile::tempdir().unwrap();
//! let src = dir.path().join("crates/demo/src");
//! std::fs::create_dir_all(&src).unwrap();
//! std::fs::write(src.join("lib.rs"), "pub fn f() -> Result<(), String> { Ok(()) }\n").unwrap();
//! let counts = quality::measure(dir.path(), &[]).unwrap();
//! assert_eq!(counts.of("demo", "result_string"), 1);
//! ```

mod circles;
mod measure;
mod report;

pub use report::{Baseline, Verdict, check};

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Every measure, in the order they are said.
pub const MEASURES: [&str; 7] = [
    "circles",
    "result_string",
    "string_keys",
    "long_functions",
    "long_files",
    "unwrap",
    "levers",
];

/// A function longer than this is a long one.
pub const FUNCTION_LINES: usize = 60;
/// A file longer than this is a long one.
pub const FILE_LINES: usize = 800;

/// What was counted: per crate and measure, the total, and where each
/// count came from (a file, with a few words when there is more to say).
#[derive(Debug, Default)]
pub struct Counts {
    /// Crate → measure → count.
    pub totals: BTreeMap<String, BTreeMap<String, u64>>,
    /// Crate → measure → (file, what) of each count.
    pub places: BTreeMap<String, BTreeMap<String, Vec<(String, String)>>>,
}

impl Counts {
    /// The count of `measure` in `krate` (0 when none was found).
    pub fn of(&self, krate: &str, measure: &str) -> u64 {
        self.totals
            .get(krate)
            .and_then(|m| m.get(measure))
            .copied()
            .unwrap_or(0)
    }

    fn add(&mut self, krate: &str, measure: &str, file: &str, what: String) {
        *self
            .totals
            .entry(krate.to_owned())
            .or_default()
            .entry(measure.to_owned())
            .or_default() += 1;
        self.places
            .entry(krate.to_owned())
            .or_default()
            .entry(measure.to_owned())
            .or_default()
            .push((file.to_owned(), what));
    }
}

/// A source file that could not be read or parsed.
#[derive(Debug)]
pub struct Unreadable {
    /// The file.
    pub path: PathBuf,
    /// Why.
    pub why: String,
}

impl std::fmt::Display for Unreadable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.path.display(), self.why)
    }
}

impl std::error::Error for Unreadable {}

/// Counts every crate under `root/crates` (`levers`: the switch names to
/// count).
///
/// # Errors
/// A source file that cannot be read or parsed.
pub fn measure(root: &Path, levers: &[String]) -> Result<Counts, Unreadable> {
    let mut counts = Counts::default();
    for krate in crates(root) {
        let name = krate
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let src = krate.join("src");
        let mut graph = circles::Graph::default();
        // (`tests.rs`, and files under a `tests/` in `src/`, are the
        // `#[cfg(test)] mod tests;` of their parents: test code)
        let code = rust_files(&src).into_iter().filter(|f| {
            let inner = f.strip_prefix(&src).unwrap_or(f);
            !inner.iter().any(|p| p == "tests" || p == "tests.rs")
        });
        for file in code {
            let text = std::fs::read_to_string(&file).map_err(|e| Unreadable {
                path: file.clone(),
                why: e.to_string(),
            })?;
            let parsed = syn::parse_file(&text).map_err(|e| Unreadable {
                path: file.clone(),
                why: format!("line {}: {e}", e.span().start().line),
            })?;
            let shown = file
                .strip_prefix(root)
                .unwrap_or(&file)
                .display()
                .to_string();
            let module = circles::module_of(&src, &file);
            let found = measure::file(&parsed, levers, &module);
            for (measure, what) in found.counted {
                counts.add(&name, measure, &shown, what);
            }
            let lines = text.lines().count();
            if lines > FILE_LINES {
                counts.add(&name, "long_files", &shown, format!("{lines} lines"));
            }
            graph.add(shown, module, found.reaches);
        }
        for circle in graph.circles() {
            let files = circle.join(" → ");
            let first = circle.first().cloned().unwrap_or_default();
            counts.add(&name, "circles", &first, files);
        }
    }
    Ok(counts)
}

/// The crates: `root/crates/*` with a `src/`.
fn crates(root: &Path) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = std::fs::read_dir(root.join("crates"))
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.join("src").is_dir())
        .collect();
    found.sort();
    found
}

/// The `.rs` files under `dir`, in order.
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                found.push(path);
            }
        }
    }
    found.sort();
    found
}
