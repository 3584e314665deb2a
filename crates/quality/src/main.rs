//! `hc-quality`: the quality ratchet, as `.ci/quality` runs it.
//!
//! ```text
//! hc-quality [--root DIR] [--baseline FILE] [--update | --init]
//! ```
//!
//! Counts every crate under `DIR/crates` (default: here) against the
//! baseline (default `.ci/quality.toml`); exits 1 when a count rose above
//! its baseline or fell below it (`--update` lowers the baseline to what
//! fell, and never raises a count; `--init` writes a first baseline where
//! there is none), 2 when the source or the baseline cannot be read.

use std::path::PathBuf;
use std::process::ExitCode;

const HEADER: &str = "\
# The quality ratchet's baseline: per crate, the most of each measure the
# source may hold (`hc-quality`, run by .ci/quality, counts them; a crate or
# measure not named here may have none). It only goes down: a count above
# its line fails CI; a count below it fails too until the line is lowered
# (`cargo run -q -p quality -- --update`). The measures: import circles
# between files; functions returning Result<_, String> (a String only where
# an error becomes a tool result); string-key reads x[\"key\"] (read bodies
# through types); functions over 60 lines; files over 800 lines;
# .unwrap()/.expect(); and the measurement switches named in `levers` outside
# #[cfg(feature = \"bench\")]. Test code counts for none.
";

/// What the command line asks.
struct Asked {
    root: PathBuf,
    baseline: PathBuf,
    update: bool,
    init: bool,
}

/// The command line read (a wrong option: said, exit 2).
fn asked() -> Result<Asked, ExitCode> {
    let mut root = PathBuf::from(".");
    let (mut baseline, mut update, mut init) = (None, false, false);
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--root" => root = args.next().map(PathBuf::from).unwrap_or(root),
            "--baseline" => baseline = args.next().map(PathBuf::from),
            "--update" => update = true,
            "--init" => init = true,
            other => {
                eprintln!(
                    "hc-quality: `{other}` is not an option: --root DIR, --baseline FILE, \
                     --update, --init"
                );
                return Err(ExitCode::from(2));
            }
        }
    }
    let baseline = baseline.unwrap_or_else(|| root.join(".ci/quality.toml"));
    Ok(Asked {
        root,
        baseline,
        update,
        init,
    })
}

/// The baseline at `path` (none there: an empty one).
fn read(path: &std::path::Path) -> Result<quality::Baseline, ExitCode> {
    let said = |e: &dyn std::fmt::Display| {
        eprintln!("hc-quality: {}: {e}", path.display());
        ExitCode::from(2)
    };
    match std::fs::read_to_string(path) {
        Ok(text) => toml::from_str(&text).map_err(|e| said(&e)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(quality::Baseline::default()),
        Err(e) => Err(said(&e)),
    }
}

/// Writes `baseline` to `path`, its header first; says `done`.
fn write(path: &std::path::Path, baseline: &quality::Baseline, done: &str) -> ExitCode {
    let text = format!(
        "{HEADER}\n{}",
        toml::to_string(baseline).unwrap_or_default()
    );
    if let Err(e) = std::fs::write(path, text) {
        eprintln!("hc-quality: {}: {e}", path.display());
        return ExitCode::from(2);
    }
    eprintln!("hc-quality: {done} in {}", path.display());
    ExitCode::SUCCESS
}

fn main() -> ExitCode {
    let asked = match asked() {
        Ok(a) => a,
        Err(code) => return code,
    };
    let baseline = match read(&asked.baseline) {
        Ok(b) => b,
        Err(code) => return code,
    };
    let counts = match quality::measure(&asked.root, &baseline.levers) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("hc-quality: {e}");
            return ExitCode::from(2);
        }
    };
    if asked.init {
        if !baseline.baseline.is_empty() {
            eprintln!("hc-quality: there is a baseline already: it only goes down (--update)");
            return ExitCode::from(2);
        }
        let first = quality::Baseline {
            levers: baseline.levers,
            baseline: counts.totals,
        };
        return write(&asked.baseline, &first, "the first baseline is");
    }
    let verdict = quality::check(&counts, &baseline);
    for said in &verdict.rose {
        eprintln!("hc-quality: {said}");
    }
    if asked.update && verdict.rose.is_empty() && !verdict.fell.is_empty() {
        return write(
            &asked.baseline,
            &baseline.lowered(&verdict),
            "the baseline is lowered",
        );
    }
    for (krate, measure, now) in &verdict.fell {
        eprintln!(
            "hc-quality: {krate}: {measure} fell to {now}, below its baseline — lower the \
             baseline to keep it there: `cargo run -q -p quality -- --update`"
        );
    }
    if verdict.holds() {
        eprintln!("hc-quality: every count is at its baseline");
        return ExitCode::SUCCESS;
    }
    ExitCode::from(1)
}
