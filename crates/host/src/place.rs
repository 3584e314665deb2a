//! Where a session's files are (`design/scale.md`, "Hand-off"): the record
//! is shared by every host on the store, the files are each host's own.
//! When a run of a session ends, its host notes on the session the git
//! branch and commit its files were left at (`place` in the session's
//! body). Resuming the session on another host that is not on that branch
//! and commit is refused, saying which to check out — or, asked
//! (`--checkout`), hc checks them out first (fetched when missing; never
//! over changes not committed). Files are moved by git, never copied by
//! hc.

use crate::exit::exit;
use anyhow::{Result, bail};
use serde::{Deserialize, Serialize};
use std::path::Path;
use std::process::Output;
use substrate::{ChunkDecl, Declaration, Substrate};

/// Where a session's last run left its files.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Place {
    /// The host it ran on.
    pub host: String,
    /// The branch checked out there (none: a detached head).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub branch: Option<String>,
    /// The commit checked out there.
    pub commit: String,
    /// Whether it left changes not committed (not on any other host).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub dirty: bool,
}

impl Place {
    /// The place a session's body notes, if it notes one that git may be
    /// given: a full commit id, a branch that is a plain name (a program
    /// that may write on the session could have planted any text there).
    pub fn of(body: &serde_json::Value) -> Option<Place> {
        let mut place: Place = serde_json::from_value(body.get("place")?.clone()).ok()?;
        // (said on a terminal: no control characters)
        place.host = crate::text::shown(&place.host).into_owned();
        let plain = |b: &String| {
            !b.starts_with('-')
                && !b.contains("..")
                && (b.bytes()).all(|c| c.is_ascii_alphanumeric() || b"-_./".contains(&c))
        };
        let fine = crate::worktree::check_commit(&place.commit).is_ok()
            && place.branch.as_ref().is_none_or(plain);
        fine.then_some(place)
    }
}

fn git(dir: &Path, args: &[&str]) -> Option<Output> {
    crate::worktree::git(dir, args).ok()
}

fn said(dir: &Path, args: &[&str]) -> Option<String> {
    let out = git(dir, args)?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

/// Where the checkout at `root` is now (none: not a git repository with a
/// commit).
pub fn here(root: &Path) -> Option<Place> {
    let commit = said(root, &["rev-parse", "--verify", "--quiet", "HEAD"])?;
    let branch = said(root, &["symbolic-ref", "--quiet", "--short", "HEAD"]);
    // (what hc keeps under .hermitcrab/ is ignored by git already)
    let dirty = said(root, &["status", "--porcelain"]).is_some_and(|s| !s.is_empty());
    Some(Place {
        host: engine::host_name(),
        branch,
        commit,
        dirty,
    })
}

/// Notes on `session` that its files are where the checkout at `root` is
/// now (nothing when it is no git repository).
pub fn record(db: &Substrate, root: &Path, session: &str) -> Result<()> {
    match here(root) {
        Some(place) => note(db, session, &place),
        None => Ok(()),
    }
}

/// Notes `place` on `session`.
pub fn note(db: &Substrate, session: &str, place: &Place) -> Result<()> {
    let body = serde_json::json!({ "place": place });
    db.commit(
        Declaration::of(vec![ChunkDecl::with_id(session).merge_body(body)]),
        None,
    )?;
    Ok(())
}

/// Before a run goes on with `session` in the checkout at `root`: when
/// its last run was on another host and this checkout is not where that
/// run left the files, an error saying which branch and commit to check
/// out — or, with `checkout`, checks them out (answering what it did, or
/// what is worth saying: changes the other host did not commit).
pub fn check(db: &Substrate, root: &Path, session: &str, checkout: bool) -> Result<Option<String>> {
    let body = db.read(|snap| snap.body(session))?.unwrap_or_default();
    let Some(there) = Place::of(&body).filter(|p| p.host != engine::host_name()) else {
        return Ok(None);
    };
    let Some(now) = here(root) else {
        return Ok(None);
    };
    if now.commit == there.commit && now.branch == there.branch {
        return Ok(there.dirty.then(|| {
            format!(
                "{} left changes for {session} not committed: they are only there",
                there.host
            )
        }));
    }
    let wanted = match &there.branch {
        Some(branch) => format!("branch {branch} at commit {}", short(&there.commit)),
        None => format!("commit {}", short(&there.commit)),
    };
    let left = match there.dirty {
        true => format!(
            " ({} left changes not committed: they are only there)",
            there.host
        ),
        false => String::new(),
    };
    if !checkout {
        let is = match &now.branch {
            Some(branch) => format!("{branch} at {}", short(&now.commit)),
            None => format!("commit {}", short(&now.commit)),
        };
        let how = match &there.branch {
            Some(branch) => format!("git fetch && git checkout {branch}"),
            None => format!("git fetch && git checkout {}", short(&there.commit)),
        };
        return Err(exit(
            2,
            format!(
                "{session} last ran on {}, which left its files on {wanted}{left}; this checkout \
                 is on {is}. Check that out first ({how}), or give --checkout and hc does it",
                there.host
            ),
        ));
    }
    if now.dirty {
        bail!(
            "--checkout: this checkout has changes not committed; commit or stash them first \
             (hc never checks out over them)"
        );
    }
    crate::worktree::find_base(root, &there.commit)?;
    match &there.branch {
        Some(branch) => check_out_branch(root, branch, &there.commit)?,
        None => run(root, &["checkout", "--quiet", "--detach", &there.commit])?,
    }
    Ok(Some(format!("checked out {wanted}{left}")))
}

/// Checks out `branch` at `commit`: made there when missing here; moved
/// forward to it when behind; refused when it went elsewhere here.
fn check_out_branch(root: &Path, branch: &str, commit: &str) -> Result<()> {
    let local = format!("refs/heads/{branch}");
    if said(root, &["rev-parse", "--verify", "--quiet", &local]).is_none() {
        return run(root, &["checkout", "--quiet", "-b", branch, commit]);
    }
    run(root, &["checkout", "--quiet", branch])?;
    let ahead = git(root, &["merge-base", "--is-ancestor", "HEAD", commit])
        .is_some_and(|o| o.status.success());
    if !ahead {
        bail!(
            "--checkout: your branch {branch} is not behind commit {}: it went its own way here; \
             merge or reset it yourself",
            short(commit)
        );
    }
    run(root, &["merge", "--quiet", "--ff-only", commit])
}

fn run(root: &Path, args: &[&str]) -> Result<()> {
    let Some(out) = git(root, args) else {
        bail!("cannot run git: is it installed and on PATH?");
    };
    if !out.status.success() {
        bail!(
            "git {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(())
}

fn short(commit: &str) -> &str {
    &commit[..commit.len().min(12)]
}

/// On a shared store, after a background run ended here: notes on the
/// session where its files are (its branch's tip on this host) and, when
/// it was queued on another host (`asked_on`), pushes its branch to this
/// checkout's `origin` so that host can fetch it (`hc agents diff|merge`,
/// `--resume --checkout`). A push that fails is said, not fatal.
pub fn share(db: &Substrate, root: &Path, session: &str, asked_on: Option<&str>) -> Result<()> {
    let branch = crate::worktree::branch_of(session);
    let tip = crate::worktree::ok(root, &["rev-parse", "--verify", "--quiet", &branch])?;
    let place = Place {
        host: engine::host_name(),
        branch: Some(branch.clone()),
        commit: tip,
        dirty: false,
    };
    note(db, session, &place)?;
    let Some(asked_on) = asked_on else {
        return Ok(());
    };
    let remotes = crate::worktree::ok(root, &["remote"])?;
    if !remotes.lines().any(|r| r == "origin") {
        eprintln!(
            "hc worker: {session} was asked for on {asked_on}; this checkout has no `origin` to \
             push {branch} to: fetch it from here"
        );
        return Ok(());
    }
    if let Err(e) = crate::worktree::ok(root, &["push", "--quiet", "origin", &branch]) {
        eprintln!("hc worker: {branch} was not pushed to origin for {asked_on}: {e:#}");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_place_git_would_read_as_an_option_or_a_name_is_not_taken() {
        let sha = "a".repeat(40);
        let body = |branch: &str, commit: &str| json!({"place": {"host": "b\u{1b}[2J", "branch": branch, "commit": commit}});
        let fine = Place::of(&body("feature/x", &sha)).unwrap();
        assert_eq!(
            fine.host, "b\\x1b[2J",
            "no control characters reach a terminal"
        );
        assert!(Place::of(&body("--upload-pack=touch /tmp/x", &sha)).is_none());
        assert!(Place::of(&body("a..b", &sha)).is_none());
        assert!(Place::of(&body("main", "HEAD")).is_none());
        assert!(Place::of(&body("main", "--output=/tmp/x")).is_none());
    }
}
