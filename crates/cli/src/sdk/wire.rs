//! The lines of the Agent SDK's control protocol as `hc` reads them,
//! typed (Claude Code's shapes): what comes on stdin — a `user` message, a
//! `control_request` and its `request`, a `control_response` to one of
//! `hc`'s own — and the program's answer to `can_use_tool`. Every field
//! is optional where a program may leave it out; what each means, and
//! what is said when one that matters is missing, is the reader's.

use serde::Deserialize;
use serde_json::Value;
use std::collections::BTreeMap;

/// One line on stdin: its kind, and its parts, each read by what takes
/// it (a part that does not read is that reader's error, not the line's).
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct Line {
    /// `user`, `control_request`, `control_response`,
    /// `control_cancel_request`, `keep_alive`.
    #[serde(rename = "type", deserialize_with = "string_or_empty")]
    pub kind: String,
    /// A control request's id (echoed in its response as given).
    pub request_id: Value,
    /// A control request's body ([`Request`]).
    pub request: Value,
    /// A control response's body ([`Response`]).
    pub response: Value,
    /// A user line's message ([`Message`]).
    pub message: Value,
    /// A user line's id (the SDK's `uuid`; made when none is given).
    pub uuid: Value,
}

impl Line {
    /// A JSON object read as a line (never fails: what is not there is
    /// empty).
    pub fn of(value: &Value) -> Line {
        Line::deserialize(value).unwrap_or_default()
    }
}

/// Reads `part` as a `T` (an absent part as `T`'s default).
pub fn read<T: for<'de> Deserialize<'de> + Default>(part: &Value) -> Result<T, String> {
    if part.is_null() {
        return Ok(T::default());
    }
    T::deserialize(part).map_err(|e| e.to_string())
}

/// A field that is a string when it is anything: anything else reads as
/// none.
fn string_or_none<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    Ok(Value::deserialize(d)?.as_str().map(str::to_owned))
}

/// A field that must be a string: anything else reads as empty.
fn string_or_empty<'de, D: serde::Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    Ok(Value::deserialize(d)?
        .as_str()
        .unwrap_or_default()
        .to_owned())
}

/// A user line's message.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct Message {
    /// Its text, or its content blocks.
    pub content: Option<Content>,
}

/// A message's content: a text, or blocks.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub enum Content {
    /// Plain text.
    Text(String),
    /// Content blocks (only `text` ones are read; [`Block::of`] each).
    Blocks(Vec<Value>),
}

/// One content block.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct Block {
    /// `text`, `image`, …
    #[serde(rename = "type", deserialize_with = "string_or_none")]
    pub kind: Option<String>,
    /// A text block's text.
    #[serde(deserialize_with = "string_or_none")]
    pub text: Option<String>,
}

impl Block {
    /// A block as given (one that is not an object reads as none of it).
    pub fn of(value: &Value) -> Block {
        Block::deserialize(value).unwrap_or_default()
    }
}

/// A control request from the program. Every field is read on its own:
/// one of the wrong type reads as absent, and the others still count.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct Request {
    /// What it asks: `initialize`, `interrupt`, `set_model`, …
    #[serde(deserialize_with = "string_or_empty")]
    pub subtype: String,
    /// `set_model`'s model (none: the default).
    #[serde(deserialize_with = "string_or_none")]
    pub model: Option<String>,
    /// `set_permission_mode`'s mode.
    #[serde(deserialize_with = "string_or_none")]
    pub mode: Option<String>,
    /// `initialize`'s hook callbacks: event → matchers.
    #[serde(deserialize_with = "hook_map")]
    pub hooks: BTreeMap<String, Vec<HookMatcher>>,
    /// `initialize`'s agents: name → definition.
    #[serde(deserialize_with = "agent_map")]
    pub agents: BTreeMap<String, AgentDef>,
    /// `rewind_files`: the user message whose turn's files go back.
    #[serde(deserialize_with = "string_or_none")]
    pub user_message_id: Option<String>,
    /// `rewind_files`: only say what would change.
    #[serde(deserialize_with = "bool_or_false")]
    pub dry_run: bool,
    /// Everything else it carries (`initialize`'s `mcpServers`,
    /// `settings`, … — each answered whether it applied).
    #[serde(flatten)]
    pub extra: serde_json::Map<String, serde_json::Value>,
}

/// One hook matcher of `initialize`.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct HookMatcher {
    /// The tool names it matches (none: every call).
    #[serde(deserialize_with = "string_or_none")]
    pub matcher: Option<String>,
    /// The program's callbacks for it (what is not a string left out).
    #[serde(rename = "hookCallbackIds", deserialize_with = "strings")]
    pub hook_callback_ids: Vec<String>,
    /// Seconds each callback may take.
    #[serde(deserialize_with = "number_or_none")]
    pub timeout: Option<f64>,
    /// What a callback's failure does (`block`: it blocks what the event
    /// guards; anything else goes on).
    #[serde(rename = "onFailure", deserialize_with = "on_failure")]
    pub on_failure: Option<agent::OnFailure>,
}

/// An agent the program defines in `initialize`.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct AgentDef {
    /// When to use it.
    #[serde(deserialize_with = "string_or_empty")]
    pub description: String,
    /// Its system prompt.
    #[serde(deserialize_with = "string_or_empty")]
    pub prompt: String,
    /// The tools it may use (none: all; what is not a string left out).
    #[serde(deserialize_with = "strings_or_none")]
    pub tools: Option<Vec<String>>,
    /// Its model (`inherit` or none: the run's).
    #[serde(deserialize_with = "string_or_none")]
    pub model: Option<String>,
}

/// `hooks`: each event's matchers (an event whose value is not a list has
/// none; a matcher that is not an object reads as one with no callbacks).
fn hook_map<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<BTreeMap<String, Vec<HookMatcher>>, D::Error> {
    let value = Value::deserialize(d)?;
    let events = value.as_object().into_iter().flatten();
    Ok(events
        .map(|(event, matchers)| {
            let each = matchers.as_array().into_iter().flatten();
            let read = each.map(|m| HookMatcher::deserialize(m).unwrap_or_default());
            (event.clone(), read.collect())
        })
        .collect())
}

/// `agents`: each definition (one that is not an object reads as empty).
fn agent_map<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<BTreeMap<String, AgentDef>, D::Error> {
    let value = Value::deserialize(d)?;
    let agents = value.as_object().into_iter().flatten();
    Ok(agents
        .map(|(name, def)| (name.clone(), AgentDef::deserialize(def).unwrap_or_default()))
        .collect())
}

/// A list's strings (anything else left out; not a list: none).
fn strings<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    Ok(strings_or_none(d)?.unwrap_or_default())
}

/// A list's strings, when it is a list.
fn strings_or_none<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<Option<Vec<String>>, D::Error> {
    let value = Value::deserialize(d)?;
    Ok(value.as_array().map(|list| {
        list.iter()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect()
    }))
}

/// A number, when it is one.
fn number_or_none<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
    Ok(Value::deserialize(d)?.as_f64())
}

/// `onFailure`: `block` or `continue` (anything else: not said).
fn on_failure<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<Option<agent::OnFailure>, D::Error> {
    Ok(serde_json::from_value(Value::deserialize(d)?).ok())
}

/// A boolean, when it is one (else false).
fn bool_or_false<'de, D: serde::Deserializer<'de>>(d: D) -> Result<bool, D::Error> {
    Ok(Value::deserialize(d)?.as_bool().unwrap_or(false))
}

/// A control response from the program, to one of `hc`'s requests.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct Response {
    /// The request it answers.
    #[serde(deserialize_with = "string_or_none")]
    pub request_id: Option<String>,
    /// `success` or `error`.
    #[serde(deserialize_with = "string_or_empty")]
    pub subtype: String,
    /// An error's message.
    #[serde(deserialize_with = "string_or_none")]
    pub error: Option<String>,
    /// A success's answer.
    pub response: Value,
}

/// The program's answer to `can_use_tool`.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct ToolAnswer {
    /// `allow` or `deny`.
    #[serde(deserialize_with = "string_or_none")]
    pub behavior: Option<String>,
    /// With `allow`: the input to run with instead.
    #[serde(rename = "updatedInput")]
    pub updated_input: Option<Value>,
    /// With `deny`: what to tell the model.
    #[serde(deserialize_with = "string_or_none")]
    pub message: Option<String>,
    /// With `deny`: stop the run too.
    #[serde(deserialize_with = "bool_or_false")]
    pub interrupt: bool,
    /// Rules to remember for the session (Claude Code's
    /// `updatedPermissions`: `addRules` with a `behavior` and `rules` of
    /// `toolName` and `ruleContent`).
    #[serde(rename = "updatedPermissions")]
    pub updated_permissions: Option<Vec<Value>>,
    /// Who decided (`user_temporary`, `user_permanent`, `user_reject`,
    /// or `config`: the program itself, by its configuration, no one
    /// asked).
    #[serde(rename = "decisionClassification", deserialize_with = "string_or_none")]
    pub decision_classification: Option<String>,
}

impl ToolAnswer {
    /// The first rule an `addRules` update with `behavior` names, as
    /// hermitcrab writes rules (`Bash(git status:*)`).
    pub fn added_rule(&self, behavior: &str) -> Option<String> {
        let updates = self.updated_permissions.as_deref()?;
        updates
            .iter()
            .filter(|u| u["type"] == "addRules" && u["behavior"] == behavior)
            .flat_map(|u| u["rules"].as_array().cloned().unwrap_or_default())
            .find_map(|r| {
                let tool = r["toolName"].as_str()?;
                Some(match r["ruleContent"].as_str() {
                    Some(content) if !content.is_empty() => format!("{tool}({content})"),
                    _ => tool.to_owned(),
                })
            })
    }
}
