//! The block tools (`design/blocks.md`), the agent's own (no process):
//! `block_list`, `block_read`, `block_write`, `block_create`,
//! `write_entry`, `call_llm`, `get_datetime`. Every block change is a
//! commit (a new version of its chunk); every `call_llm` (and each
//! compression's summary) an `llm-call` on the session. Bad input is an
//! error result — `{"error": …}` — never a failed run.

use super::outcome::{Outcome, Turn};
use crate::blocks::store::{BlockStore, valid_name};
use crate::blocks::{Block, MAX_DECIMAL, dotted, grow::check_content};
use crate::contract::{LlmCall, LlmPurpose};
use crate::run::side::Side;
use serde::Deserialize;
use serde_json::{Value, json};
use std::sync::Arc;

/// The block tools' names.
pub const TOOLS: &[&str] = &[
    "block_list",
    "block_read",
    "block_write",
    "block_create",
    "write_entry",
    "call_llm",
    "get_datetime",
];

/// The block tools code the API runs may call (programmatic tool calling,
/// when server code execution is on): bulk block work in one round trip.
pub const PROGRAMMATIC: &[&str] = &["block_list", "block_read", "block_write", "block_create"];

/// The most tokens a `call_llm` reply may have.
const CALL_TOKENS: u32 = 4096;

/// The most characters a `call_llm` prompt and system may have together.
const MAX_CALL_CHARS: usize = 200_000;

/// What the block tools work with.
pub(crate) struct BlockTools {
    pub store: BlockStore,
    pub provider: Result<Arc<model::Provider>, String>,
    pub model: String,
    pub fast_model: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Read {
    name: String,
    #[serde(default)]
    path: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Write {
    name: String,
    path: String,
    content: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Create {
    name: String,
    pscale0: String,
    #[serde(default)]
    decimal: Option<u32>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct EntryInput {
    name: String,
    #[serde(default)]
    path: Option<String>,
    content: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CallLlm {
    prompt: String,
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    system: Option<String>,
}

/// An error result: `{"error": why}`.
fn refused(why: impl std::fmt::Display) -> Outcome {
    Outcome::error(json!({ "error": why.to_string() }).to_string())
}

/// A result of JSON.
fn answered(value: Value) -> Outcome {
    Outcome {
        text: value.to_string(),
        data: value,
        ..Outcome::default()
    }
}

/// A tool's input, read: an object of its fields, nothing else (serde
/// would take a list as the fields in order).
// (an outcome is the error of input that does not read: not a hot path)
#[allow(clippy::result_large_err)]
fn parse<T: for<'de> Deserialize<'de>>(tool: &str, input: &Value) -> Result<T, Outcome> {
    if !input.is_object() {
        return Err(refused(format!(
            "invalid input for `{tool}`: it is an object of named fields, not {}",
            match input {
                Value::Array(_) => "a list",
                Value::String(_) => "text",
                Value::Null => "null",
                _ => "a number or a boolean",
            }
        )));
    }
    T::deserialize(input).map_err(|e| refused(format!("invalid input for `{tool}`: {e}")))
}

impl BlockTools {
    /// Answers one block tool.
    pub async fn answer(
        &self,
        call: &model::ToolUseBlock,
        input: &Value,
        turn: &mut Turn<'_>,
    ) -> Outcome {
        let done = match call.name.as_str() {
            "block_list" => self.list().await,
            "block_read" => match parse::<Read>(&call.name, input) {
                Ok(read) => self.read(read).await,
                Err(e) => Err(e),
            },
            "block_write" => match parse::<Write>(&call.name, input) {
                Ok(write) => self.write(write).await,
                Err(e) => Err(e),
            },
            "block_create" => match parse::<Create>(&call.name, input) {
                Ok(create) => self.create(create).await,
                Err(e) => Err(e),
            },
            "write_entry" => match parse::<EntryInput>(&call.name, input) {
                Ok(entry) => self.entry(entry, turn).await,
                Err(e) => Err(e),
            },
            "call_llm" => match parse::<CallLlm>(&call.name, input) {
                Ok(asked) => self.call_llm(asked, &call.id, turn).await,
                Err(e) => Err(e),
            },
            _ => Ok(datetime()),
        };
        done.unwrap_or_else(|refusal| refusal)
    }

    /// Block `name`, read: an error result when `name` is not a block's
    /// name, there is none or its tree is not valid.
    async fn block(&self, name: &str) -> Result<Block, Outcome> {
        valid_name(name).map_err(refused)?;
        match self.store.get(name).await {
            Ok(Some(Ok(block))) => Ok(block),
            Ok(Some(Err(invalid))) => Err(refused(format!(
                "block `{name}` is not a valid block ({invalid}); `hc blocks show {name}` shows \
                 it — fix it with block_write or by hand"
            ))),
            Ok(None) => Err(refused(format!(
                "there is no block `{name}`; block_list lists them, block_create makes one"
            ))),
            Err(e) => Err(refused(format!("cannot read block `{name}`: {e}"))),
        }
    }

    async fn save(&self, block: &Block) -> Result<u64, Outcome> {
        self.store
            .put(&[block])
            .await
            .map(|c| c.id)
            .map_err(|e| refused(format!("block `{}` was not written: {e}", block.name)))
    }

    async fn list(&self) -> Result<Outcome, Outcome> {
        let (all, _) = self
            .store
            .all(None)
            .await
            .map_err(|e| refused(format!("cannot list the blocks: {e}")))?;
        let listed: Vec<Value> = all
            .iter()
            .map(|s| match &s.block {
                Ok(b) => json!({"name": b.name, "decimal": b.decimal, "pscale0": b.pscale0()}),
                Err(e) => json!({"name": s.name, "invalid": e.to_string()}),
            })
            .collect();
        Ok(answered(Value::Array(listed)))
    }

    async fn read(&self, read: Read) -> Result<Outcome, Outcome> {
        let block = self.block(&read.name).await?;
        let Some(address) = read.path.filter(|p| !p.trim().is_empty()) else {
            return Ok(answered(block.to_body()));
        };
        let path = block.locate(&address).map_err(refused)?;
        let node = block
            .tree
            .at(&path)
            .ok_or_else(|| refused("no such node"))?;
        let mut out = json!({
            "content": node.text(),
            "spindle": block.spindle_of(&path),
        });
        if node.is_branch() {
            let children: serde_json::Map<String, Value> = node
                .children()
                .map(|(d, c)| {
                    let shown = match c.is_branch() {
                        true => "(branch)".to_owned(),
                        false => c.text().to_owned(),
                    };
                    (d.to_string(), Value::String(shown))
                })
                .collect();
            out["children"] = Value::Object(children);
        }
        Ok(answered(out))
    }

    async fn write(&self, write: Write) -> Result<Outcome, Outcome> {
        let mut block = self.block(&write.name).await?;
        let path = block.locate_for_write(&write.path).map_err(refused)?;
        block.write(&path, &write.content).map_err(refused)?;
        let commit = self.save(&block).await?;
        Ok(answered(
            json!({"written": block.name, "path": dotted(&path), "commit": commit}),
        ))
    }

    async fn create(&self, create: Create) -> Result<Outcome, Outcome> {
        valid_name(&create.name).map_err(refused)?;
        check_content(&create.pscale0).map_err(refused)?;
        let decimal = create.decimal.unwrap_or(1);
        if decimal > MAX_DECIMAL {
            return Err(refused(format!(
                "`decimal` is 0 (a rendition) to {MAX_DECIMAL}"
            )));
        }
        match self.store.get(&create.name).await {
            Ok(None) => {}
            Ok(Some(_)) => {
                return Err(refused(format!(
                    "block `{}` exists already; block_write changes it",
                    create.name
                )));
            }
            Err(e) => return Err(refused(format!("cannot read the blocks: {e}"))),
        }
        let block = Block::new(&create.name, decimal, &create.pscale0);
        let commit = self.store.create(&block).await.map_err(|e| {
            refused(format!(
                "block `{}` was not made (made meanwhile by another run? block_read reads it): {e}",
                block.name
            ))
        })?;
        Ok(answered(
            json!({"created": block.name, "decimal": decimal, "commit": commit.id}),
        ))
    }

    async fn entry(&self, entry: EntryInput, turn: &mut Turn<'_>) -> Result<Outcome, Outcome> {
        let mut block = self.block(&entry.name).await?;
        check_content(&entry.content).map_err(refused)?;
        let at = match entry.path.filter(|p| !p.trim().is_empty()) {
            Some(address) => block.locate_for_write(&address).map_err(refused)?,
            None => block.live_edge(),
        };
        block.entry_fits(&at).map_err(|why| {
            refused(format!(
                "no entry is added to block `{}`: {why}",
                block.name
            ))
        })?;
        let mut side = self.side(turn);
        let added = side.add_entry(&mut block, &at, &entry.content).await;
        let commit = self.save(&block).await?;
        Ok(answered(json!({
            "written": block.name,
            "path": dotted(&added.placed.entry),
            "compressed": added.compressed,
            "deferred": added.deferred,
            "grew": added.placed.grew,
            "commit": commit,
        })))
    }

    fn side<'t>(&'t self, turn: &'t mut Turn<'_>) -> Side<'t> {
        Side {
            provider: &self.provider,
            writer: turn.writer,
            gates: turn.gates,
            fast_model: &self.fast_model,
        }
    }

    async fn call_llm(
        &self,
        asked: CallLlm,
        tool_use_id: &str,
        turn: &mut Turn<'_>,
    ) -> Result<Outcome, Outcome> {
        // A call beside the conversation spends as a turn does: not past
        // the budget, not after an interrupt, not on an unbounded prompt.
        if turn.inbox.interrupted() {
            return Err(refused("the run was interrupted".to_owned()));
        }
        if let Some(crate::run::stop::Stop::MaxBudget(usd)) = turn.gates.check() {
            return Err(refused(format!(
                "the run's budget of ${} is spent",
                crate::run::stop::dollars(usd)
            )));
        }
        let asked_chars = asked.prompt.len() + asked.system.as_deref().map_or(0, str::len);
        if asked_chars > MAX_CALL_CHARS {
            return Err(refused(format!(
                "`prompt` and `system` are {asked_chars} characters; at most {MAX_CALL_CHARS}"
            )));
        }
        let model = match asked.model.as_deref() {
            None | Some("default") => self.model.clone(),
            Some("fast") => self.fast_model.clone(),
            Some(other) => {
                return Err(refused(format!(
                    "`model` is \"default\" or \"fast\", not \"{other}\""
                )));
            }
        };
        let call = LlmCall {
            purpose: LlmPurpose::CallLlm,
            model,
            system: asked.system,
            prompt: asked.prompt,
            max_tokens: CALL_TOKENS,
            tool_use_id: Some(tool_use_id.to_owned()),
            ..LlmCall::default()
        };
        let done = self.side(turn).call(call).await;
        match done.error {
            Some(why) => Err(refused(format!("the model call failed: {why}"))),
            None => Ok(Outcome {
                text: done.text,
                data: json!({"model": done.model, "usage": done.usage, "cost_usd": done.cost_usd}),
                ..Outcome::default()
            }),
        }
    }
}

/// The time now: `{iso, unix_ms, timezone}`.
fn datetime() -> Outcome {
    let now = std::time::SystemTime::now();
    let unix_ms = now
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or_default();
    answered(json!({
        "iso": humantime::format_rfc3339_millis(now).to_string(),
        "unix_ms": unix_ms,
        "timezone": std::env::var("TZ").ok().filter(|t| !t.is_empty()).unwrap_or_else(|| "UTC".to_owned()),
    }))
}

/// The block tools as the model is shown them.
pub fn definitions() -> Vec<Value> {
    let name =
        json!({"type": "string", "description": "The block's name (block_list lists them)."});
    let path = json!({"type": "string", "description": "An address: literal dotted keys (`1.4`) or a pscale number (`21.34`); empty or absent: the root."});
    vec![
        json!({"name": "block_list", "description": "Lists your pscale blocks: each one's name, decimal (levels above pscale 0) and pscale-0 text.",
               "input_schema": {"type": "object", "properties": {}}}),
        json!({"name": "block_read", "description": "Reads a block: without a path the whole block; with one, that node's text, its children (a child with children of its own shows as \"(branch)\") and its spindle — every text from the root down to it, each with its pscale.",
               "input_schema": {"type": "object", "properties": {"name": name, "path": path}, "required": ["name"]}}),
        json!({"name": "block_write", "description": "Writes text at a node of a block, making the nodes on the way: a leaf's text is replaced, a branch's own text (`_`) set. Each write is a new version of the block; the old ones are kept. At most 10,000 characters a node.",
               "input_schema": {"type": "object", "properties": {"name": name, "path": path, "content": {"type": "string"}}, "required": ["name", "path", "content"]}}),
        json!({"name": "block_create", "description": "Makes a new block. `decimal` is how many levels sit above pscale 0: 1 (the default) or more for a living block that grows, 0 for a rendition whose root defines it. `pscale0` is its pscale-0 text.",
               "input_schema": {"type": "object", "properties": {"name": {"type": "string", "description": "Letters, digits, - and _."}, "pscale0": {"type": "string"}, "decimal": {"type": "integer", "minimum": 0, "maximum": 9}}, "required": ["name", "pscale0"]}}),
        json!({"name": "write_entry", "description": "Adds an entry at the next free digit 1–9 under a node (default: the block's live edge at pscale 0). When nine are full they are summarized into the node's own text and entries go on under its next sibling.",
               "input_schema": {"type": "object", "properties": {"name": name, "path": path, "content": {"type": "string"}}, "required": ["name", "content"]}}),
        json!({"name": "call_llm", "description": "One model call without tools: a second view, a draft, a summary. `model` is \"default\" (this run's model) or \"fast\" (a small quick one). Its cost counts in this run's.",
               "input_schema": {"type": "object", "properties": {"prompt": {"type": "string"}, "model": {"type": "string", "enum": ["default", "fast"]}, "system": {"type": "string"}}, "required": ["prompt"]}}),
        json!({"name": "get_datetime", "description": "The date and time now: ISO 8601, Unix milliseconds and the time zone.",
               "input_schema": {"type": "object", "properties": {}}}),
    ]
}
