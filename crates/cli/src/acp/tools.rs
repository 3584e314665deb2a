//! A tool call as an editor shows it: its ACP kind, its title, the files
//! it touches (with lines), and — for an edit or a write — the change as
//! ACP's diff content, from the call's input.

use hc_acp::schema::{ContentBlock, Location, ToolCall, ToolCallContent, ToolCallStatus, ToolKind};
use serde_json::Value;
use std::path::Path;

/// How large a file a write's diff reads the old text of (a larger one
/// shows as written whole).
const DIFF_READ_BYTES: u64 = 1 << 20;

/// The tool `program` is, as the editor shows it: the editor's own
/// (`mcp__editor__edit`) as the built-in it stands in for.
fn base(program: &str) -> &str {
    let editor = program
        .strip_prefix("mcp__")
        .and_then(|p| p.strip_prefix(super::files::SERVER))
        .and_then(|p| p.strip_prefix("__"));
    editor.unwrap_or_else(|| agent::names::program_of(program))
}

/// What kind of thing program `program` does.
pub fn kind(program: &str) -> ToolKind {
    match base(program) {
        "read" | "block_read" => ToolKind::Read,
        "write" | "edit" | "block_write" | "write_entry" | "block_create" | "memory" => {
            ToolKind::Edit
        }
        "glob" | "grep" | "scope" => ToolKind::Search,
        "shell" => ToolKind::Execute,
        "web-fetch" => ToolKind::Fetch,
        "todo" | "agent" | "skill" | "call_llm" => ToolKind::Think,
        _ => ToolKind::Other,
    }
}

/// The call in a few words, as an editor titles it.
pub fn title(program: &str, input: &Value) -> String {
    let program = base(program);
    let pick = |k: &str| input[k].as_str().unwrap_or_default();
    match program {
        "read" => match (input["offset"].as_u64(), input["limit"].as_u64()) {
            (Some(from), Some(n)) => format!(
                "Read {} ({from}–{})",
                pick("file_path"),
                from.saturating_add(n)
            ),
            (Some(from), None) => format!("Read {} (from {from})", pick("file_path")),
            _ => format!("Read {}", pick("file_path")),
        },
        "write" => format!("Write {}", pick("file_path")),
        "edit" => format!("Edit {}", pick("file_path")),
        "shell" => format!("`{}`", hc_host::text::cut(pick("command"), 120)),
        "web-fetch" => format!("Fetch {}", pick("url")),
        "todo" => "Update the plan".to_owned(),
        _ => format!("{program}: {}", hc_host::describe::summary(program, input)),
    }
}

/// `path` as an absolute path under `root` (an editor opens it).
fn absolute(root: &Path, path: &str) -> String {
    let path = Path::new(path);
    match path.is_absolute() {
        true => path.display().to_string(),
        false => root.join(path).display().to_string(),
    }
}

/// The files the call touches, with the line it starts at when known.
pub fn locations(root: &Path, program: &str, input: &Value) -> Vec<Location> {
    let pick = |k: &str| input[k].as_str().filter(|p| !p.is_empty());
    match base(program) {
        "read" | "write" | "edit" => pick("file_path")
            .map(|p| Location {
                path: absolute(root, p),
                line: input["offset"].as_u64(),
            })
            .into_iter()
            .collect(),
        "glob" | "grep" => pick("path")
            .map(|p| Location {
                path: absolute(root, p),
                line: None,
            })
            .into_iter()
            .collect(),
        _ => Vec::new(),
    }
}

/// What an edit or a write changes, as ACP's diff: an edit's old and new
/// strings; a write's whole new text against the file as it is now (none
/// when it does not exist yet, or is too large to show).
pub fn diff(root: &Path, program: &str, input: &Value) -> Option<ToolCallContent> {
    let path = input["file_path"].as_str().filter(|p| !p.is_empty())?;
    let path = absolute(root, path);
    match base(program) {
        "edit" => Some(ToolCallContent::Diff {
            path,
            old_text: Some(input["old_string"].as_str()?.to_owned()),
            new_text: input["new_string"].as_str()?.to_owned(),
        }),
        "write" => {
            let new_text = input["content"].as_str()?.to_owned();
            let old_text = std::fs::metadata(&path)
                .ok()
                .filter(|m| m.is_file() && m.len() <= DIFF_READ_BYTES)
                .and_then(|_| std::fs::read_to_string(&path).ok());
            Some(ToolCallContent::Diff {
                path,
                old_text,
                new_text,
            })
        }
        _ => None,
    }
}

/// The call as it begins (`status`: pending when it waits for a person,
/// else in progress).
pub fn call(
    root: &Path,
    id: &str,
    program: &str,
    input: &Value,
    status: ToolCallStatus,
) -> ToolCall {
    ToolCall {
        tool_call_id: id.to_owned(),
        title: title(program, input),
        kind: kind(program),
        status,
        content: diff(root, program, input).into_iter().collect(),
        locations: locations(root, program, input),
        raw_input: input.clone(),
    }
}

/// Text as a tool call's content.
pub fn text(text: impl Into<String>) -> ToolCallContent {
    ToolCallContent::Content {
        content: ContentBlock::Text { text: text.into() },
    }
}

/// The todo tool's items (its input's `items`) as ACP plan entries.
pub fn plan_entries(input: &Value) -> Vec<hc_acp::schema::PlanEntry> {
    let items = (input["items"].as_array())
        .or(input["todos"].as_array())
        .cloned()
        .unwrap_or_default();
    items
        .iter()
        .map(|item| hc_acp::schema::PlanEntry {
            content: item["content"].as_str().unwrap_or_default().to_owned(),
            priority: "medium".to_owned(),
            status: match item["status"].as_str() {
                Some("in_progress") => "in_progress",
                Some("completed") => "completed",
                _ => "pending",
            }
            .to_owned(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn each_tool_has_its_kind_and_title() {
        assert_eq!(kind("read"), ToolKind::Read);
        assert_eq!(kind("Edit"), ToolKind::Edit);
        assert_eq!(kind("shell"), ToolKind::Execute);
        assert_eq!(kind("grep"), ToolKind::Search);
        assert_eq!(kind("web-fetch"), ToolKind::Fetch);
        assert_eq!(kind("mcp__x__y"), ToolKind::Other);
        assert_eq!(kind("mcp__editor__edit"), ToolKind::Edit);
        assert_eq!(
            title(
                "read",
                &json!({"file_path": "a.rs", "offset": 10, "limit": 5})
            ),
            "Read a.rs (10–15)"
        );
        assert_eq!(title("shell", &json!({"command": "ls"})), "`ls`");
    }

    #[test]
    fn an_edit_is_a_diff_at_its_absolute_path() {
        let root = Path::new("/p");
        let input = json!({"file_path": "src/a.rs", "old_string": "a", "new_string": "b"});
        assert_eq!(
            diff(root, "edit", &input),
            Some(ToolCallContent::Diff {
                path: "/p/src/a.rs".into(),
                old_text: Some("a".into()),
                new_text: "b".into()
            })
        );
        let at = locations(root, "edit", &input);
        assert_eq!(at[0].path, "/p/src/a.rs");
    }

    #[test]
    fn a_new_file_is_a_diff_from_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let input = json!({"file_path": "new.txt", "content": "hi\n"});
        let Some(ToolCallContent::Diff { old_text, .. }) = diff(dir.path(), "write", &input) else {
            panic!("no diff");
        };
        assert_eq!(old_text, None);
        std::fs::write(dir.path().join("new.txt"), "was\n").unwrap();
        let Some(ToolCallContent::Diff { old_text, .. }) = diff(dir.path(), "write", &input) else {
            panic!("no diff");
        };
        assert_eq!(old_text.as_deref(), Some("was\n"));
    }

    #[test]
    fn todos_are_plan_entries() {
        let entries = plan_entries(&json!({"items": [
            {"content": "a", "status": "completed", "activeForm": "A"},
            {"content": "b", "status": "in_progress"},
            {"content": "c", "status": "pending"}
        ]}));
        let statuses: Vec<&str> = entries.iter().map(|e| e.status.as_str()).collect();
        assert_eq!(statuses, ["completed", "in_progress", "pending"]);
    }
}
