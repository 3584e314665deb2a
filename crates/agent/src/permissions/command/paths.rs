//! Paths as permissions compare them: resolved before any rule is checked
//! — `..` and `.` by their text, then symlinks (an in-repository link into
//! a denied directory, `/proc/self/root/…`, `/proc/self/cwd/…`) by the
//! filesystem — so a rule about a directory holds however the path is
//! spelled.

use std::path::{Path, PathBuf};

pub use protocol::paths::absolute;

/// Every spelling of `path` a rule must be checked against: as written
/// (made absolute, `.` and `..` resolved) and with its symlinks resolved
/// (for a path that does not exist yet, its deepest existing ancestor's).
pub fn forms(root: &Path, path: &str) -> Vec<PathBuf> {
    let literal = absolute(root, path);
    let real = real(&literal);
    if real == literal {
        vec![literal]
    } else {
        vec![literal, real]
    }
}

/// `path` with its symlinks resolved as far as it exists.
pub fn real(path: &Path) -> PathBuf {
    if let Ok(real) = path.canonicalize() {
        return real;
    }
    let mut rest = Vec::new();
    let mut at = path;
    while let Some(parent) = at.parent() {
        if let Some(name) = at.file_name() {
            rest.push(name.to_owned());
        }
        if let Ok(real) = parent.canonicalize() {
            let mut out = real;
            for name in rest.iter().rev() {
                out.push(name);
            }
            return out;
        }
        at = parent;
    }
    path.to_path_buf()
}

/// Whether rule pattern `spec` (a path or a glob, relative to the project
/// root, absolute, or under `~`) covers one of `forms`. A pattern without
/// a glob covers everything under it.
pub fn matches(spec: &str, forms: &[PathBuf], root: &Path) -> bool {
    patterns(spec, root).iter().any(|pattern| {
        let glob = globset::GlobBuilder::new(&pattern.to_string_lossy())
            .literal_separator(true)
            .build();
        let Ok(glob) = glob else { return false };
        let matcher = glob.compile_matcher();
        // `dir/**` covers the directory itself too: reading it reads them.
        let tree = pattern
            .to_string_lossy()
            .strip_suffix("/**")
            .map(PathBuf::from)
            .filter(|t| !t.to_string_lossy().contains(['*', '?', '[', '{']));
        forms.iter().any(|p| {
            matcher.is_match(p)
                || (!spec.contains('*') && p.starts_with(pattern))
                || tree.as_ref().is_some_and(|t| p.starts_with(t))
        })
    })
}

/// A rule's pattern made absolute, as written and with the symlinks of its
/// fixed part (before its first glob character) resolved.
pub fn patterns(spec: &str, root: &Path) -> Vec<PathBuf> {
    let written = absolute(root, spec);
    let text = written.to_string_lossy();
    let fixed_end = text.find(['*', '?', '[', '{']).unwrap_or(text.len());
    let fixed = Path::new(&text[..fixed_end]);
    // The fixed part up to a whole component.
    let (dir, tail) = if fixed_end == text.len() {
        (written.clone(), String::new())
    } else {
        let dir = fixed.parent().unwrap_or(fixed).to_path_buf();
        let tail = text[dir.to_string_lossy().len()..].to_owned();
        (dir, tail)
    };
    let resolved = real(&dir);
    let resolved = PathBuf::from(format!("{}{tail}", resolved.to_string_lossy()));
    if resolved == written {
        vec![written]
    } else {
        vec![written, resolved]
    }
}

/// Whether a path names a file whose contents are secrets by convention
/// (`.env`, `.env.local`, `.envrc`, …): reading one asks first.
pub fn is_secret(path: &Path) -> bool {
    path.file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n.starts_with(".env"))
}
