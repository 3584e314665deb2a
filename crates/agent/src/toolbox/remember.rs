//! The `memory` tool: a change to the project's memory or the person's,
//! committed at once (no process). A change to the person's own memory
//! is a permission like any tool's (in the default mode it asks); an entry
//! named by id must be one of that memory's.

use super::Toolbox;
use super::outcome::{Outcome, Turn};
use super::permit::Permitted;
use crate::catalog::ProgramTool;
use crate::contract::MemoryScope;
use crate::memory::Change;
use crate::run::stop::Stop;
use model::ToolUseBlock;
use protocol::{PlacementType, ScopeOpts};
use serde_json::{Value, json};

impl Toolbox {
    /// Answers a `memory` call.
    pub(super) async fn change_memory(
        &mut self,
        call: &ToolUseBlock,
        input: &Value,
        turn: &mut Turn<'_>,
    ) -> Result<Outcome, Stop> {
        let change = match Change::parse(input) {
            Ok(change) => change,
            Err(why) => return Ok(Outcome::error(why)),
        };
        let mut scope = change.scope();
        let mut change = change;
        if scope == MemoryScope::User {
            let schema = crate::memory::definition()["input_schema"].clone();
            let tool = ProgramTool::own(crate::memory::TOOL, schema).map_err(Stop::Error)?;
            match self
                .permit
                .check(call, input, &tool, None, &self.hooks, turn)
                .await?
            {
                Permitted::No(refusal) => return Ok(refusal),
                Permitted::Yes(None) => {}
                // what the person gave instead, judged: that is what is done
                Permitted::Yes(Some(instead)) => match Change::parse(&instead) {
                    Ok(given) => {
                        change = given;
                        scope = change.scope();
                    }
                    Err(why) => return Ok(Outcome::error(why)),
                },
            }
        }
        if let Some(id) = change.id()
            && let Err(why) = self.is_entry(id, scope).await
        {
            return Ok(Outcome::error(why));
        }
        let (declaration, id) = change.declaration(Some(turn.writer.session()));
        Ok(match self.client.commit(declaration).await {
            Ok(_) => Outcome {
                text: change.done(&id),
                data: json!({"id": id, "scope": scope.as_str(), "action": input["action"]}),
                ..Outcome::default()
            },
            Err(e) => Outcome::error(format!("the memory was not changed: {e}")),
        })
    }

    /// Whether `id` is an entry of `scope`'s memory (an error says what
    /// to do when it is not).
    async fn is_entry(&self, id: &str, scope: MemoryScope) -> Result<(), String> {
        let opts = ScopeOpts {
            limit: Some(1),
            ..ScopeOpts::default()
        };
        let read = self.client.scope(&[id], opts).await;
        let entry = read.ok().and_then(|r| r.scopes.into_iter().next());
        match entry {
            Some(chunk) if chunk.is_on(scope.scope(), PlacementType::Instance) => Ok(()),
            _ => Err(format!(
                "there is no entry `{id}` in {} memory; the ids are in brackets in the list \
                 under `# Memory` (or search it with the `scope` tool, ids [\"{}\"])",
                match scope {
                    MemoryScope::Project => "this project's",
                    MemoryScope::User => "the person's",
                },
                scope.scope()
            )),
        }
    }
}
