//! The tools the agent answers itself (`design/agent.md`): `scope` (read
//! or search the substrate; a scope read joins the knowledge layer through
//! a new context event), `todo` (the plan, kept on the session) and
//! `ask_user` (a question a host answers). No process; their calls and
//! results are recorded like any other.

use crate::calls::Outcome;
use crate::run::{Run, Stop};
use model::ToolUseBlock;
use protocol::ScopeOpts;
use serde_json::{Value, json};

/// Members a `scope` call lists when it gives no limit.
const DEFAULT_LIMIT: usize = 50;
/// Characters of a member's text shown in a `scope` answer.
const TEXT_CHARS: usize = 300;

impl Run {
    /// Answers one of the agent's own tools.
    pub(crate) async fn own_tool(
        &mut self,
        call: &ToolUseBlock,
        input: &Value,
    ) -> Result<Outcome, Stop> {
        Ok(match call.name.as_str() {
            "todo" => self.todo(input).await,
            "ask_user" => self.ask_user(call, input).await?,
            _ => self.scope_tool(input).await,
        })
    }

    async fn todo(&mut self, input: &Value) -> Outcome {
        let Some(items) = input["items"].as_array() else {
            return Outcome::error(
                "invalid input for `todo`: `items` must be a list of {content, status}",
            );
        };
        let done = items.iter().filter(|i| i["status"] == "completed").count();
        let body = json!({"items": items, "text": format!("{done} of {} done", items.len())});
        match self.commit_on_session(vec![("todo", body)], None).await {
            Ok(_) => Outcome {
                text: format!("The plan has {} items, {done} completed.", items.len()),
                data: json!({"items": items}),
                ..Outcome::default()
            },
            Err(e) => Outcome::error(format!("cannot keep the plan: {e}")),
        }
    }

    async fn ask_user(&mut self, call: &ToolUseBlock, input: &Value) -> Result<Outcome, Stop> {
        let Some(question) = input["question"].as_str() else {
            return Ok(Outcome::error(
                "invalid input for `ask_user`: `question` is required",
            ));
        };
        if !self.config.interactive {
            return Ok(Outcome::error(
                "no one is attached to answer questions in this run; decide yourself, and say \
                 in your answer what you assumed",
            ));
        }
        let body = json!({
            "text": question, "options": input["options"], "tool_use_id": call.id, "process": self.me,
        });
        let commit = self
            .commit_on_session(vec![("user-question", body)], None)
            .await
            .map_err(|e| Stop::Error(format!("cannot ask the question: {e}")))?;
        let Some(request) = commit.created.first().cloned() else {
            return Err(Stop::Error("the question was not recorded".into()));
        };
        self.status("waiting for an answer");
        let Some(answer) = self.inbox.answer_to(&request).await else {
            return Err(Stop::Interrupted);
        };
        Ok(Outcome {
            text: answer["text"].as_str().unwrap_or_default().to_owned(),
            ..Outcome::default()
        })
    }

    async fn scope_tool(&mut self, input: &Value) -> Outcome {
        let ids: Vec<String> = input["ids"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|v| v.as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default();
        let query = input["match"].as_str().map(str::to_owned);
        if ids.is_empty() && query.is_none() {
            return Outcome::error("give `ids` to read, or `match` to search");
        }
        let opts = ScopeOpts {
            match_: query,
            as_of: input["as_of"].as_u64(),
            limit: Some(
                input["limit"]
                    .as_u64()
                    .map_or(DEFAULT_LIMIT, |n| n as usize),
            ),
            ..ScopeOpts::default()
        };
        // A search with no scope named searches the session: a run reads
        // within its read boundary, never the whole substrate.
        let refs: Vec<&str> = if ids.is_empty() {
            vec![self.session.as_str()]
        } else {
            ids.iter().map(String::as_str).collect()
        };
        let read = match self.client.scope(&refs, opts).await {
            Ok(read) => read,
            Err(e) => return Outcome::error(format!("cannot read: {e}")),
        };
        let mut text = String::new();
        for scope in &read.scopes {
            text.push_str(&format!(
                "# {} ({})\n",
                scope.name.as_deref().unwrap_or(&scope.id),
                scope.id
            ));
        }
        text.push_str(&format!(
            "{} of {} members:\n",
            read.chunks.len(),
            read.total
        ));
        for item in &read.chunks {
            let body = item.body_value();
            let shown: String = body["text"]
                .as_str()
                .map(|t| t.chars().take(TEXT_CHARS).collect())
                .unwrap_or_else(|| body.to_string().chars().take(TEXT_CHARS).collect());
            text.push_str(&format!(
                "- {} {}: {}\n",
                item.id,
                item.name.as_deref().unwrap_or(""),
                shown
            ));
        }
        if !ids.is_empty() {
            match self.pin(&ids).await {
                Ok(()) => text.push_str("\n(added to your knowledge from the next turn on)"),
                Err(e) => text.push_str(&format!("\n(not added to your knowledge: {e})")),
            }
        }
        Outcome {
            text,
            data: json!({"total": read.total, "as_of": read.as_of}),
            ..Outcome::default()
        }
    }
}
