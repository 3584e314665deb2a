//! The tools the agent answers itself: `scope` (read or search the
//! substrate; a scope read by id joins the knowledge layer through a new
//! context event, which the run writes), `todo` (the plan, kept on the
//! session) and `ask_user` (a question a host answers). No process; their
//! calls and results are recorded like any other.

use super::outcome::{Outcome, Turn};
use crate::contract::{Entry, Todo, TodoItem, UserQuestion};
use crate::run::inbox::Reply;
use crate::run::stop::Stop;
use crate::run::writer::Notifier;
use model::ToolUseBlock;
use protocol::{Client, ScopeOpts};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

/// Members a `scope` call lists when it gives no limit.
const DEFAULT_LIMIT: usize = 50;
/// Characters of a member's text shown in a `scope` answer.
const TEXT_CHARS: usize = 300;

#[derive(Deserialize)]
struct TodoInput {
    items: Vec<TodoItem>,
}

#[derive(Deserialize)]
struct AskInput {
    question: String,
    #[serde(default)]
    options: Option<Vec<String>>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct ScopeInput {
    ids: Vec<String>,
    #[serde(rename = "match")]
    query: Option<String>,
    as_of: Option<u64>,
    limit: Option<usize>,
    unpin: Vec<String>,
}

/// The input of own tool `tool`, or the error result that says what is
/// wrong with it.
// (an outcome is the error of input that does not read: not a hot path)
#[allow(clippy::result_large_err)]
fn input<T: DeserializeOwned>(tool: &str, input: &Value, hint: &str) -> Result<T, Outcome> {
    serde_path_to_error::deserialize(input).map_err(|e| {
        let at = e.path().to_string();
        let at = if at == "." {
            String::new()
        } else {
            format!(" at `{at}`")
        };
        Outcome::error(format!(
            "invalid input for `{tool}`{at}: {}; {hint}",
            e.inner()
        ))
    })
}

/// The agent's own tools and what answering them takes.
pub(super) struct OwnTools {
    client: Client,
    notifier: Notifier,
    /// Whether a person can answer `ask_user`.
    interactive: bool,
}

impl OwnTools {
    /// Own tools answered through `client`.
    pub fn new(client: Client, notifier: Notifier, interactive: bool) -> OwnTools {
        OwnTools {
            client,
            notifier,
            interactive,
        }
    }

    /// Answers one of the agent's own tools.
    pub async fn answer(
        &mut self,
        call: &ToolUseBlock,
        given: &Value,
        hooks: &super::Hooks,
        turn: &mut Turn<'_>,
    ) -> Result<Outcome, Stop> {
        Ok(match call.name.as_str() {
            "todo" => match input(&call.name, given, "`items` is a list of {content, status}") {
                Ok(TodoInput { items }) => todo(items, turn).await,
                Err(refusal) => refusal,
            },
            "ask_user" => match input(&call.name, given, "`question` is required") {
                Ok(asked) => self.ask_user(call, asked, hooks, turn).await?,
                Err(refusal) => refusal,
            },
            _ => match input(
                &call.name,
                given,
                "give `ids` to read, or `match` to search",
            ) {
                Ok(scope) => self.scope_tool(scope, turn).await,
                Err(refusal) => refusal,
            },
        })
    }

    async fn ask_user(
        &mut self,
        call: &ToolUseBlock,
        asked: AskInput,
        hooks: &super::Hooks,
        turn: &mut Turn<'_>,
    ) -> Result<Outcome, Stop> {
        if !self.interactive {
            return Ok(Outcome::error(
                "no one is attached to answer questions in this run; decide yourself, and say \
                 in your answer what you assumed",
            ));
        }
        let question = UserQuestion {
            text: asked.question,
            options: asked.options,
            tool_use_id: call.id.clone(),
            process: turn.writer.me().to_owned(),
        };
        let commit = turn
            .writer
            .commit(vec![Entry::of(&question)], None)
            .await
            .map_err(|e| Stop::Error(format!("cannot ask the question: {e}")))?;
        let Some(request) = commit.created.first().cloned() else {
            return Err(Stop::Error("the question was not recorded".into()));
        };
        self.notifier.waiting("waiting for an answer");
        hooks
            .notify(
                "idle_prompt",
                "hermitcrab is waiting for your answer",
                "waiting",
            )
            .await;
        let text = match turn.inbox.answer_to(&request).await {
            None => return Err(Stop::Interrupted),
            Some(Reply::User(answer)) => answer.text,
            Some(Reply::Permission(_) | Reply::Hook(_)) => String::new(),
        };
        Ok(Outcome {
            text,
            ..Outcome::default()
        })
    }

    async fn scope_tool(&mut self, input: ScopeInput, turn: &mut Turn<'_>) -> Outcome {
        if input.ids.is_empty() && input.query.is_none() {
            if !input.unpin.is_empty() {
                return Outcome {
                    text: format!("Unpinning {}.", input.unpin.join(", ")),
                    pin: input.unpin.into_iter().map(|id| (id, false)).collect(),
                    ..Outcome::default()
                };
            }
            return Outcome::error("give `ids` to read, `match` to search, or `unpin`");
        }
        let opts = ScopeOpts {
            match_: input.query,
            as_of: input.as_of,
            limit: Some(input.limit.unwrap_or(DEFAULT_LIMIT)),
            ..ScopeOpts::default()
        };
        // A search with no scope named searches the session: a run reads
        // within its read boundary, never the whole substrate.
        let refs: Vec<&str> = if input.ids.is_empty() {
            vec![turn.writer.session()]
        } else {
            input.ids.iter().map(String::as_str).collect()
        };
        let read = match self.client.scope(&refs, opts).await {
            Ok(read) => read,
            Err(e) => return Outcome::error(format!("cannot read: {e}")),
        };
        Outcome {
            text: listing(&read),
            data: json!({"total": read.total, "as_of": read.as_of}),
            pin: (input.ids.into_iter().map(|id| (id, true)))
                .chain(input.unpin.into_iter().map(|id| (id, false)))
                .collect(),
            ..Outcome::default()
        }
    }
}

/// The plan, kept on the session.
async fn todo(items: Vec<TodoItem>, turn: &mut Turn<'_>) -> Outcome {
    let plan = Todo::of(items);
    match turn.writer.commit(vec![Entry::of(&plan)], None).await {
        Ok(_) => Outcome {
            text: format!(
                "The plan has {} items, {} completed.",
                plan.items.len(),
                plan.done()
            ),
            data: json!({"items": plan.items}),
            ..Outcome::default()
        },
        Err(e) => Outcome::error(format!("cannot keep the plan: {e}")),
    }
}

/// A read as the model is shown it: the scopes, then each member a line.
fn listing(read: &substrate::ScopeResult) -> String {
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
    text
}
