//! `exit_plan`: how a run in plan mode ends its research. The plan is
//! committed on the session (a `plan`); a person attached approves it —
//! the run goes on in the mode they chose — or answers what to change;
//! with no one attached, the plan is the run's result.

use super::outcome::{Outcome, Turn};
use crate::config::PermissionMode;
use crate::contract::{Entry, PLAN_ACCEPT_EDITS, PLAN_APPROVE, Plan};
use crate::run::inbox::Reply;
use crate::run::stop::Stop;
use model::ToolUseBlock;
use serde_json::{Value, json};

/// The tool's name.
pub const TOOL: &str = "exit_plan";

/// Its definition, offered to a top-level run in plan mode.
pub fn definition() -> Value {
    json!({
        "name": TOOL,
        "description": "You are in plan mode: research with the read-only tools, change \
            nothing, then call this once with your plan to present it. The person approves it \
            (you then carry it out, with your tools allowed as they chose) or says what to \
            change (revise the plan and call this again). When no one is attached, the plan \
            is your final answer.",
        "input_schema": {
            "type": "object",
            "properties": {
                "plan": {"type": "string", "description": "The plan, in markdown: what you found, the changes you will make (files, functions), and how you will check them."}
            },
            "required": ["plan"]
        }
    })
}

/// What the person answered.
pub(crate) enum Verdict {
    /// Go on in this mode.
    Approved(PermissionMode),
    /// Revise: what they said.
    Feedback(String),
}

/// Reads a person's answer to a plan.
pub(crate) fn verdict(answer: &str) -> Verdict {
    match answer.trim() {
        PLAN_APPROVE | "yes" | "y" => Verdict::Approved(PermissionMode::Default),
        PLAN_ACCEPT_EDITS | "a" => Verdict::Approved(PermissionMode::AcceptEdits),
        other => Verdict::Feedback(other.to_owned()),
    }
}

/// Presents the plan: committed, then answered by a person, or — with
/// no one attached — the run's result (`planned` is set).
pub(crate) async fn present(
    call: &ToolUseBlock,
    input: &Value,
    interactive: bool,
    turn: &mut Turn<'_>,
) -> Result<(Outcome, Option<Verdict>), Stop> {
    let Some(text) = input["plan"].as_str().filter(|t| !t.trim().is_empty()) else {
        return Ok((
            Outcome::error("`plan` is required: the plan, in markdown"),
            None,
        ));
    };
    let plan = Plan {
        text: text.to_owned(),
        tool_use_id: call.id.clone(),
        process: turn.writer.me().to_owned(),
        ask: interactive,
    };
    let commit = turn
        .writer
        .commit(vec![Entry::of(&plan)], None)
        .await
        .map_err(|e| Stop::Error(format!("cannot record the plan: {e}")))?;
    if !interactive {
        let said = "No one is attached to approve the plan: the run ends with it as its result.";
        return Ok((plain(said), None));
    }
    let Some(asked) = commit.created.first().cloned() else {
        return Err(Stop::Error("the plan was not recorded".into()));
    };
    turn.writer
        .notifier()
        .waiting("waiting for the person to approve the plan");
    let answer = match turn.inbox.answer_to(&asked).await {
        None => return Err(Stop::Interrupted),
        Some(Reply::User(answer)) => answer.text,
        Some(Reply::Permission(_) | Reply::Hook(_)) => String::new(),
    };
    Ok(match verdict(&answer) {
        Verdict::Approved(mode) => (
            plain(&format!(
                "The person approved the plan; the permission mode is now `{}`. Carry the plan \
                 out now.",
                mode.as_str()
            )),
            Some(Verdict::Approved(mode)),
        ),
        Verdict::Feedback(said) => {
            let text = match said.is_empty() {
                true => "The person did not approve the plan. Stay in plan mode: ask what \
                         to change, or revise it and call exit_plan again."
                    .to_owned(),
                false => format!(
                    "The person did not approve the plan and said: {said}\nStay in plan \
                     mode: revise the plan and call exit_plan again."
                ),
            };
            (Outcome::error(text), Some(Verdict::Feedback(said)))
        }
    })
}

fn plain(text: &str) -> Outcome {
    Outcome {
        text: text.to_owned(),
        ..Outcome::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_answer_approves_in_a_mode_or_is_feedback() {
        assert!(matches!(
            verdict("default"),
            Verdict::Approved(PermissionMode::Default)
        ));
        assert!(matches!(
            verdict("accept-edits"),
            Verdict::Approved(PermissionMode::AcceptEdits)
        ));
        assert!(
            matches!(verdict("use a HashMap instead"), Verdict::Feedback(f) if f == "use a HashMap instead")
        );
    }
}
