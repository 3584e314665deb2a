//! A background run's own git worktree (`design/scale.md`, "Runs
//! anywhere"): `.hermitcrab/worktrees/<session>` on the branch
//! `hc/<session>`, from a base commit. `hc run --bg` checks what it can
//! before queueing ([`ask`]); the worker that claims the run makes it
//! ([`make`]) and, when the run ends, commits what it changed on its branch
//! ([`commit_changes`]); `hc agents diff|merge` bring the work back; it is
//! removed with its session ([`remove`]) — never while it holds changes not
//! on its branch. git is run as a program: the person's own, with their
//! configuration.

use anyhow::{Context as _, Result, bail};
use protocol::process::WorktreeAsk;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Where worktrees live, under the project's `.hermitcrab/`.
pub const DIR: &str = "worktrees";

/// A session's branch.
pub fn branch_of(session: &str) -> String {
    format!("hc/{session}")
}

/// A session's worktree, relative to the project's root.
pub fn relative_path(session: &str) -> String {
    format!("{}/{DIR}/{session}", crate::project::DIR)
}

/// `git -C dir ARGS…`, as the person's own git (what an environment
/// points elsewhere left out).
pub(crate) fn git(dir: &Path, args: &[&str]) -> Result<Output> {
    Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .env_remove("GIT_INDEX_FILE")
        .output()
        .context("cannot run git: is it installed and on PATH?")
}

/// git's own words for a failure (its last lines of stderr).
fn said(out: &Output) -> String {
    let text = String::from_utf8_lossy(&out.stderr);
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    crate::text::shown(&lines[lines.len().saturating_sub(3)..].join("; ")).into_owned()
}

pub(crate) fn ok(dir: &Path, args: &[&str]) -> Result<String> {
    let out = git(dir, args)?;
    if !out.status.success() {
        bail!("git {}: {}", args.join(" "), said(&out));
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

/// What a background run on `session` asks of the worker, checked here
/// first: `root` is a git repository's top, `base` (none: `HEAD`) names a
/// commit, the index holds nothing staged (what is staged would be in no
/// commit the run starts from) and the worktree's place is free.
pub fn ask(root: &Path, session: &str, base: Option<&str>) -> Result<WorktreeAsk> {
    let top = git(root, &["rev-parse", "--show-toplevel"])?;
    if !top.status.success() {
        bail!(
            "{} is not in a git repository, and a background run works in a git worktree of its \
             own: run `git init` and commit, or give --no-worktree to let it work in this \
             directory",
            root.display()
        );
    }
    let wanted = base.unwrap_or("HEAD");
    let commit = ok(
        root,
        &[
            "rev-parse",
            "--verify",
            "--quiet",
            &format!("{wanted}^{{commit}}"),
        ],
    )
    .map_err(|_| {
        anyhow::anyhow!(
            "--base {wanted}: no such commit in this repository{}",
            if base.is_none() {
                " (it has no commit yet: commit something first, or give --no-worktree)"
            } else {
                ""
            }
        )
    })?;
    let staged = git(root, &["diff", "--cached", "--quiet"])?;
    if staged.status.code() == Some(1) {
        bail!(
            "the index has staged changes, which a background run would not see (it starts \
             from {}): commit or unstage them, or give --no-worktree",
            &commit[..commit.len().min(12)]
        );
    }
    let relative = relative_path(session);
    let branch = branch_of(session);
    if root.join(&relative).exists() {
        bail!("{relative} exists already: remove it, or start the run anew");
    }
    let listed = {
        // (a worktree being added is not one git can list yet)
        let _adding = hold(root, "add")?;
        ok(root, &["worktree", "list", "--porcelain"])?
    };
    if listed
        .lines()
        .any(|l| l == format!("branch refs/heads/{branch}"))
    {
        bail!("the branch {branch} is checked out in another worktree (see `git worktree list`)");
    }
    Ok(WorktreeAsk {
        branch,
        base: commit,
        path: relative,
    })
}

/// `commit` when it is a full commit id (what `ask` recorded): anything
/// else read from the store — a name, an option for git — is refused
/// before git sees it.
pub(crate) fn check_commit(commit: &str) -> Result<()> {
    let hex = commit.bytes().all(|b| b.is_ascii_hexdigit());
    if !(hex && matches!(commit.len(), 40 | 64)) {
        bail!(
            "`{}` is not a commit id: a run's base and a session's place are full commit ids",
            crate::text::shown(commit)
        );
    }
    Ok(())
}

/// Whether commit `base` is in the repository at `root`.
fn has_commit(root: &Path, base: &str) -> bool {
    let object = format!("{base}^{{commit}}");
    git(root, &["cat-file", "-e", &object]).is_ok_and(|out| out.status.success())
}

/// Makes sure commit `base` (a run queued on another host starts from
/// it) is in the repository at `root`: fetched from its remotes when it
/// is not — by name first, then everything they have. An error says
/// what to do when none has it.
pub fn find_base(root: &Path, base: &str) -> Result<()> {
    check_commit(base)?;
    if has_commit(root, base) {
        return Ok(());
    }
    let remotes = ok(root, &["remote"])?;
    let mut said = String::from("this checkout has no remote");
    for remote in remotes.lines().filter(|r| !r.trim().is_empty()) {
        for args in [
            &["fetch", "--quiet", remote, base][..],
            &["fetch", "--quiet", remote][..],
        ] {
            let out = git(root, args)?;
            if !out.status.success() {
                said = format!("git fetch {remote}: {}", self::said(&out));
            }
            if has_commit(root, base) {
                return Ok(());
            }
        }
    }
    bail!(
        "its base commit {} is not in this checkout, and fetching did not bring it ({said}): push \
         it where this host fetches from, or let a worker whose checkout has it take the run",
        &base[..base.len().min(12)]
    )
}

/// Makes the worktree `ask` describes under `root` (or finds it made: a
/// worker that lost the race for the run made it first); answers its path.
pub fn make(root: &Path, ask: &WorktreeAsk) -> Result<PathBuf> {
    let path = root.join(&ask.path);
    if !ask
        .path
        .starts_with(&format!("{}/{DIR}/", crate::project::DIR))
        || ask.path.contains("..")
    {
        bail!("a worktree goes under .hermitcrab/{DIR}/, not {}", ask.path);
    }
    // one maker at a time per worktree: a second worker finds it made
    let name = ask.path.rsplit('/').next().unwrap_or_default();
    let _held = hold(root, name)?;
    if path.join(".git").is_file() {
        let on = ok(&path, &["rev-parse", "--abbrev-ref", "HEAD"])?;
        if on == ask.branch {
            return Ok(path);
        }
        bail!("{} exists and is on {on}, not {}", ask.path, ask.branch);
    }
    check_commit(&ask.base)?;
    unignore(root)?;
    // (git's own worktree bookkeeping is not safe for two adds at once)
    let _adding = hold(root, "add")?;
    let shown = path.to_string_lossy().into_owned();
    let out = git(
        root,
        &["worktree", "add", "-b", &ask.branch, &shown, &ask.base],
    )?;
    if !out.status.success() {
        bail!("cannot make its worktree {}: {}", ask.path, said(&out));
    }
    Ok(path)
}

/// `.hermitcrab/worktrees/.gitignore`: `!*`. `.hermitcrab/`'s own
/// `.gitignore` ignores everything under it (git never enters it, so this
/// one changes nothing for the project's repository); a search that reads
/// the ignore files of the directories above where it starts — `glob` and
/// `grep` inside a worktree — would find every file there ignored.
fn unignore(root: &Path) -> Result<()> {
    let dir = root.join(crate::project::DIR).join(DIR);
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot make {}", dir.display()))?;
    let file = dir.join(".gitignore");
    if !file.exists() {
        std::fs::write(
            &file,
            "# hermitcrab's worktrees: each is a checkout of its own, its own .gitignore
!*
",
        )
        .with_context(|| format!("cannot write {}", file.display()))?;
    }
    Ok(())
}

/// Commits everything the run changed in its worktree on its branch
/// (`message`: the session's title); answers whether there was anything.
fn commit_changes(path: &Path, message: &str) -> Result<bool> {
    if ok(path, &["status", "--porcelain"])?.is_empty() {
        return Ok(false);
    }
    ok(path, &["add", "-A"])?;
    let mut args = vec!["commit", "-q", "--no-verify", "-m", message];
    let named = git(path, &["config", "user.email"])?;
    if String::from_utf8_lossy(&named.stdout).trim().is_empty() {
        args.splice(
            0..0,
            [
                "-c",
                "user.name=hermitcrab",
                "-c",
                "user.email=hc@localhost",
            ],
        );
    }
    ok(path, &args)?;
    Ok(true)
}

/// The lock on `session`'s worktree, held while the file lives.
fn hold(root: &Path, session: &str) -> Result<std::fs::File> {
    let dir = root.join(crate::project::DIR).join(DIR);
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot make {}", dir.display()))?;
    let lock = dir.join(format!(".{session}.lock"));
    let file =
        std::fs::File::create(&lock).with_context(|| format!("cannot make {}", lock.display()))?;
    file.lock()
        .with_context(|| format!("cannot lock {}", lock.display()))?;
    Ok(file)
}

/// Commits on its branch what a session's run left in its worktree (the
/// worker does so as the run ends; one asking for the branch first may be
/// quicker): one at a time, under a lock beside the worktree. Answers
/// whether there was anything.
pub fn settle(root: &Path, session: &str, title: &str) -> Result<bool> {
    let path = root.join(relative_path(session));
    if !path.join(".git").is_file() {
        return Ok(false);
    }
    let _held = hold(root, session)?;
    commit_changes(&path, title)
}

/// Makes sure `session`'s branch is here: fetched from a remote that has
/// it when it is not (a run another host carried).
fn fetch_branch(root: &Path, session: &str) -> Result<()> {
    let branch = branch_of(session);
    let local = format!("refs/heads/{branch}");
    if ok(root, &["rev-parse", "--verify", "--quiet", &local]).is_ok() {
        return Ok(());
    }
    let wanted = format!("{local}:{local}");
    for remote in ok(root, &["remote"])?.lines() {
        if ok(root, &["fetch", "--quiet", remote, &wanted]).is_ok() {
            return Ok(());
        }
    }
    Ok(())
}

/// What a session's branch changed since it left the current branch, as a
/// patch (`--stat`: a summary).
pub fn diff(root: &Path, session: &str, stat: bool) -> Result<String> {
    fetch_branch(root, session)?;
    let branch = branch_of(session);
    ok(root, &["rev-parse", "--verify", "--quiet", &branch]).map_err(|_| {
        anyhow::anyhow!("{session} has no branch {branch}: it ran in this directory")
    })?;
    let range = format!("HEAD...{}", branch_of(session));
    let mut args = vec!["diff", "--no-color"];
    if stat {
        args.push("--stat");
    }
    args.push(&range);
    ok(root, &args)
}

/// Merges a session's branch into the current branch of `root`.
pub fn merge(root: &Path, session: &str, title: &str) -> Result<String> {
    fetch_branch(root, session)?;
    let branch = branch_of(session);
    ok(root, &["rev-parse", "--verify", "--quiet", &branch]).map_err(|_| {
        anyhow::anyhow!("{session} has no branch {branch}: it ran in this directory")
    })?;
    // a merge commit names who made it: git must know (said whole, not
    // git's advice cut into a line)
    let ident = git(root, &["var", "GIT_COMMITTER_IDENT"])?;
    if !ident.status.success() {
        bail!(
            "git does not know who you are, and the merge commit must say: set it with `git \
             config --global user.name \"Your Name\"` and `git config --global user.email \
             you@example.com` (without --global for this repository alone), then run `hc \
             agents merge {session}` again"
        );
    }
    let message = format!("Merge {branch}: {title}");
    ok(
        root,
        &["merge", "--no-ff", "--no-edit", "-m", &message, &branch],
    )
}

/// Whether `session`'s worktree is there, and what in it is not on its
/// branch (`git status --porcelain`).
pub fn unsaved(root: &Path, session: &str) -> Result<Option<String>> {
    let path = root.join(relative_path(session));
    if !path.join(".git").is_file() {
        return Ok(None);
    }
    Ok(Some(ok(&path, &["status", "--porcelain"])?))
}

/// Removes `session`'s worktree (its branch stays) — refused while it has
/// changes not committed on its branch.
pub fn remove(root: &Path, session: &str) -> Result<bool> {
    let Some(changes) = unsaved(root, session)? else {
        return Ok(false);
    };
    if !changes.is_empty() {
        bail!(
            "{} has changes not on {}: commit them there (or discard them) first",
            relative_path(session),
            branch_of(session)
        );
    }
    let path = root
        .join(relative_path(session))
        .to_string_lossy()
        .into_owned();
    let _adding = hold(root, "add")?;
    ok(root, &["worktree", "remove", &path])?;
    Ok(true)
}
