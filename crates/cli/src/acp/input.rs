//! A tool call's input as an editor is shown it: read by the tool
//! updates (`tools.rs`) and by the editor's own file tools (`files.rs`).

use agent::contract::TodoItem;
use serde::Deserialize;
use serde_json::Value;

/// A tool call's input, as far as an editor is shown it (every field
/// optional: a tool of another vocabulary has none of them).
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct Input {
    /// read, write, edit.
    pub file_path: Option<String>,
    /// read: the line it starts at.
    pub offset: Option<u64>,
    /// read: how many lines.
    pub limit: Option<u64>,
    /// write: the whole new text.
    pub content: Option<String>,
    /// edit: what is replaced.
    pub old_string: Option<String>,
    /// edit: what replaces it.
    pub new_string: Option<String>,
    /// edit: every occurrence.
    pub replace_all: bool,
    /// shell.
    pub command: Option<String>,
    /// web-fetch.
    pub url: Option<String>,
    /// glob, grep: where.
    pub path: Option<String>,
    /// todo: the list.
    pub items: Vec<TodoItem>,
}

impl Input {
    /// `input` read (one that does not read as this: none of it).
    pub fn of(input: &Value) -> Input {
        Input::deserialize(input).unwrap_or_default()
    }

    pub fn file(&self) -> Option<&str> {
        self.file_path.as_deref().filter(|p| !p.is_empty())
    }
}
