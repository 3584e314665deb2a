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

/// A field sent as `null`: its default.
fn null_as_default<'de, D: serde::Deserializer<'de>, T: Deserialize<'de> + Default>(
    d: D,
) -> Result<T, D::Error> {
    Ok(Option::<T>::deserialize(d)?.unwrap_or_default())
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
    /// Content blocks (only `text` ones are read).
    Blocks(Vec<Block>),
}

/// One content block.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct Block {
    /// `text`, `image`, …
    #[serde(rename = "type")]
    pub kind: Option<String>,
    /// A text block's text.
    pub text: Option<String>,
}

/// A control request from the program.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct Request {
    /// What it asks: `initialize`, `interrupt`, `set_model`, …
    pub subtype: String,
    /// `set_model`'s model (none: the default).
    pub model: Option<String>,
    /// `set_permission_mode`'s mode.
    pub mode: Option<String>,
    /// `initialize`'s hook callbacks: event → matchers.
    #[serde(deserialize_with = "null_as_default")]
    pub hooks: BTreeMap<String, Vec<HookMatcher>>,
    /// `initialize`'s agents: name → definition.
    #[serde(deserialize_with = "null_as_default")]
    pub agents: BTreeMap<String, AgentDef>,
}

/// One hook matcher of `initialize`.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct HookMatcher {
    /// The tool names it matches (none: every call).
    pub matcher: Option<String>,
    /// The program's callbacks for it.
    #[serde(rename = "hookCallbackIds", deserialize_with = "null_as_default")]
    pub hook_callback_ids: Vec<String>,
    /// Seconds each callback may take.
    pub timeout: Option<f64>,
}

/// An agent the program defines in `initialize`.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct AgentDef {
    /// When to use it.
    #[serde(deserialize_with = "null_as_default")]
    pub description: String,
    /// Its system prompt.
    #[serde(deserialize_with = "null_as_default")]
    pub prompt: String,
    /// The tools it may use (none: all).
    pub tools: Option<Vec<String>>,
    /// Its model (`inherit` or none: the run's).
    pub model: Option<String>,
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
    pub behavior: Option<String>,
    /// With `allow`: the input to run with instead.
    #[serde(rename = "updatedInput")]
    pub updated_input: Option<Value>,
    /// With `deny`: what to tell the model.
    pub message: Option<String>,
    /// With `deny`: stop the run too.
    #[serde(deserialize_with = "null_as_default")]
    pub interrupt: bool,
}
