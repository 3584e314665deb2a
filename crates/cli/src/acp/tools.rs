//! A tool call as an editor shows it: its ACP kind, its title, the files
//! it touches (with lines), and — for an edit or a write — the change as
//! ACP's diff content, from the call's input.

pub use super::input::Input;
use agent::contract::{TodoItem, TodoStatus};
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
    let given = Input::of(input);
    let file = given.file().unwrap_or_default();
    match program {
        "read" => match (given.offset, given.limit) {
            (Some(from), Some(n)) => format!("Read {file} ({from}–{})", from.saturating_add(n)),
            (Some(from), None) => format!("Read {file} (from {from})"),
            _ => format!("Read {file}"),
        },
        "write" => format!("Write {file}"),
        "edit" => format!("Edit {file}"),
        "shell" => format!(
            "`{}`",
            hc_host::text::cut(given.command.as_deref().unwrap_or_default(), 120)
        ),
        "web-fetch" => format!("Fetch {}", given.url.as_deref().unwrap_or_default()),
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
pub fn locations(root: &Path, program: &str, input: &Input) -> Vec<Location> {
    let (path, line) = match base(program) {
        "read" | "write" | "edit" => (input.file(), input.offset),
        "glob" | "grep" => (input.path.as_deref().filter(|p| !p.is_empty()), None),
        _ => (None, None),
    };
    (path.into_iter())
        .map(|p| Location {
            path: absolute(root, p),
            line,
        })
        .collect()
}

/// What a write replaces: the file as it is now, when the editor's files
/// would serve it (inside the project, no secrets) and it is a text file of
/// at most [`DIFF_READ_BYTES`]; `hc acp` reads it outside containment, so
/// never more than that.
fn old_text(root: &Path, given: &str) -> Option<String> {
    let path = super::files::served(root, given, false).ok()?;
    std::fs::metadata(&path)
        .ok()
        .filter(|m| m.is_file() && m.len() <= DIFF_READ_BYTES)
        .and_then(|_| std::fs::read_to_string(&path).ok())
}

/// What an edit or a write changes, as ACP's diff: an edit's old and new
/// strings; a write's whole new text against the file as it is `now`
/// (none when it does not exist yet, is too large to show, or the call is
/// told from the record: the disk is no longer what it replaced).
pub fn diff(root: &Path, program: &str, input: &Input, now: bool) -> Option<ToolCallContent> {
    let given = input.file()?;
    let path = absolute(root, given);
    match base(program) {
        "edit" => Some(ToolCallContent::Diff {
            path,
            old_text: Some(input.old_string.clone()?),
            new_text: input.new_string.clone()?,
        }),
        "write" => Some(ToolCallContent::Diff {
            path,
            old_text: now.then(|| old_text(root, given)).flatten(),
            new_text: input.content.clone()?,
        }),
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
    told(root, id, program, input, status, true)
}

/// [`call`], its write's diff read from the disk `now`, or not (a call
/// told again from the record).
pub fn told(
    root: &Path,
    id: &str,
    program: &str,
    input: &Value,
    status: ToolCallStatus,
    now: bool,
) -> ToolCall {
    let given = Input::of(input);
    ToolCall {
        tool_call_id: id.to_owned(),
        title: title(program, input),
        kind: kind(program),
        status,
        content: diff(root, program, &given, now).into_iter().collect(),
        locations: locations(root, program, &given),
        raw_input: input.clone(),
    }
}

/// Text as a tool call's content.
pub fn text(text: impl Into<String>) -> ToolCallContent {
    ToolCallContent::Content {
        content: ContentBlock::Text { text: text.into() },
    }
}

/// The todo tool's items as ACP plan entries.
pub fn plan_entries(items: &[TodoItem]) -> Vec<hc_acp::schema::PlanEntry> {
    (items.iter())
        .map(|item| hc_acp::schema::PlanEntry {
            content: item.content.clone(),
            priority: "medium".to_owned(),
            status: match item.status {
                TodoStatus::InProgress => "in_progress",
                TodoStatus::Completed => "completed",
                TodoStatus::Pending => "pending",
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
            diff(root, "edit", &Input::of(&input), true),
            Some(ToolCallContent::Diff {
                path: "/p/src/a.rs".into(),
                old_text: Some("a".into()),
                new_text: "b".into()
            })
        );
        let at = locations(root, "edit", &Input::of(&input));
        assert_eq!(at[0].path, "/p/src/a.rs");
    }

    #[test]
    fn a_new_file_is_a_diff_from_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let input = json!({"file_path": "new.txt", "content": "hi\n"});
        let Some(ToolCallContent::Diff { old_text, .. }) =
            diff(dir.path(), "write", &Input::of(&input), true)
        else {
            panic!("no diff");
        };
        assert_eq!(old_text, None);
        std::fs::write(dir.path().join("new.txt"), "was\n").unwrap();
        let Some(ToolCallContent::Diff { old_text, .. }) =
            diff(dir.path(), "write", &Input::of(&input), true)
        else {
            panic!("no diff");
        };
        assert_eq!(old_text.as_deref(), Some("was\n"));
    }

    #[test]
    fn todos_are_plan_entries() {
        let entries = plan_entries(
            &Input::of(&json!({"items": [
                {"content": "a", "status": "completed", "activeForm": "A"},
                {"content": "b", "status": "in_progress"},
                {"content": "c", "status": "pending"}
            ]}))
            .items,
        );
        let statuses: Vec<&str> = entries.iter().map(|e| e.status.as_str()).collect();
        assert_eq!(statuses, ["completed", "in_progress", "pending"]);
    }
}
