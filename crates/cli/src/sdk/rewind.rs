//! `rewind_files` in Claude Code's shape: the project's files back as
//! they were before the user message `user_message_id` (its `uuid`, as
//! sent or as `--replay-user-messages` echoed it) — every file any run
//! changed since, shell commands' too — answered `{"canRewind": true}`;
//! with `dry_run`, what would change (`filesChanged`, `insertions`,
//! `deletions`). Checkpointing is on as Claude Code has it:
//! `CLAUDE_CODE_ENABLE_SDK_FILE_CHECKPOINTING` (what the SDK's
//! `enable_file_checkpointing` sets), unless
//! `CLAUDE_CODE_DISABLE_FILE_CHECKPOINTING`. A file changed since the
//! record is never overwritten: the rewind fails naming it.

use super::wire::Request;
use engine::Engine;
use hc_host::rewind::{Plan, PutBack, Record, To};
use serde_json::{Value, json};

const NOT_ENABLED: &str = "File rewinding is not enabled.";
const NOT_FOUND: &str = "No file checkpoint found for this message.";

fn truthy(var: &str) -> bool {
    std::env::var(var)
        .is_ok_and(|v| matches!(v.to_ascii_lowercase().as_str(), "1" | "true" | "yes" | "on"))
}

/// Answers `rewind_files` on `session` (none yet: nothing to rewind).
pub async fn rewind_files(
    engine: &Engine,
    session: Option<&str>,
    request: &Request,
) -> Result<Value, String> {
    let checked = plan(engine, session, request);
    let plan = match checked {
        Ok(plan) => plan,
        // a dry run is answered what it would say
        Err(error) if request.dry_run => return Ok(json!({"canRewind": false, "error": error})),
        Err(error) => return Err(error),
    };
    let root = engine.config().project_root.clone();
    if request.dry_run {
        return Ok(dry_run(engine, &root, &plan));
    }
    let Some(session) = session else {
        return Err(NOT_FOUND.to_owned());
    };
    match hc_host::rewind::put_back(engine, session, &plan, false).await {
        Ok(PutBack::Nothing | PutBack::Done(_)) => Ok(json!({"canRewind": true})),
        Ok(PutBack::ChangedSince(changed)) => Err(format!(
            "Failed to rewind: changed since the session recorded them (a rewind never \
             overwrites that): {}",
            changed.join(", ")
        )),
        Err(e) => Err(format!("Failed to rewind: {e:#}")),
    }
}

/// The plan that puts the files back before the message, or why there is
/// none.
fn plan(engine: &Engine, session: Option<&str>, request: &Request) -> Result<Plan, String> {
    if !truthy("CLAUDE_CODE_ENABLE_SDK_FILE_CHECKPOINTING")
        || truthy("CLAUDE_CODE_DISABLE_FILE_CHECKPOINTING")
    {
        return Err(NOT_ENABLED.to_owned());
    }
    let (Some(session), Some(id)) = (session, request.user_message_id.as_deref()) else {
        return Err(NOT_FOUND.to_owned());
    };
    let k = hc_host::rewind::prompt_number(engine, session, |_, p| p.uuid.as_deref() == Some(id))
        .map_err(|e| format!("Failed to rewind: {e:#}"))?
        .ok_or_else(|| NOT_FOUND.to_owned())?;
    let record = Record::read(engine, session).map_err(|e| format!("Failed to rewind: {e:#}"))?;
    let first = record
        .first_call(To::Prompt(k))
        .map_err(|_| NOT_FOUND.to_owned())?;
    let plan = record.plan(first);
    if let Some((path, why)) = plan.unrestorable.first() {
        return Err(format!(
            "Failed to rewind: {path} cannot be put back ({why})"
        ));
    }
    Ok(plan)
}

/// What a rewind would change: the files (absolute), and the lines it
/// would add and take away.
fn dry_run(engine: &Engine, root: &std::path::Path, plan: &Plan) -> Value {
    let (mut files, mut insertions, mut deletions) = (Vec::new(), 0usize, 0usize);
    for change in &plan.changes {
        let is_dir = |h: &Option<hc_host::rewind::Held>| {
            h.as_ref().is_some_and(|h| h.mode & 0o170_000 == 0o040_000)
        };
        if is_dir(&change.put) || is_dir(&change.expect) {
            continue;
        }
        let path = root.join(&change.path);
        files.push(path.to_string_lossy().into_owned());
        let now = std::fs::read(&path).unwrap_or_default();
        let then = change
            .put
            .as_ref()
            .and_then(|h| hc_host::rewind::kept(engine, &h.hash))
            .unwrap_or_default();
        let (now, then) = (
            String::from_utf8_lossy(&now),
            String::from_utf8_lossy(&then),
        );
        for op in similar::TextDiff::from_lines(now.as_ref(), then.as_ref()).iter_all_changes() {
            match op.tag() {
                similar::ChangeTag::Insert => insertions += 1,
                similar::ChangeTag::Delete => deletions += 1,
                similar::ChangeTag::Equal => {}
            }
        }
    }
    json!({"canRewind": true, "filesChanged": files, "insertions": insertions, "deletions": deletions})
}
