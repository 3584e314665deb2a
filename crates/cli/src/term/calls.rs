//! A tool call's lines on the terminal: `✓`/`✗`, the program and its
//! input in a few words; under an edit, its diff; under a shell command,
//! its exit code and the last lines of its output; under a failed call,
//! why (a few lines, all with `--verbose`).

use crate::style::{paint_err, shown};
use agent::contract::{TodoItem, TodoStatus, ToolResult};
use serde::Deserialize as _;
use serde_json::Value;

/// At most this many lines of an edit's diff are shown.
const DIFF_LINES: usize = 12;
/// Lines of a shell's output or a failure's reason shown without
/// `--verbose`.
const TAIL_LINES: usize = 4;
/// The longest line shown under a call (without `--verbose`).
const LINE_CHARS: usize = 300;

/// What a call's result says that its lines show.
pub struct Detail<'a> {
    /// Its text (or, from a `tool-end` notice, the part a person sees).
    pub text: &'a str,
    /// A shell's exit code.
    pub exit_code: Option<i64>,
    /// A shell that ran out of time.
    pub timed_out: bool,
}

impl Detail<'_> {
    /// A committed result's.
    pub fn of(result: &ToolResult) -> Detail<'_> {
        let data = result.data.as_ref();
        Detail {
            text: &result.text,
            exit_code: data.and_then(|d| d["exit_code"].as_i64()),
            timed_out: data.is_some_and(|d| d["timed_out"] == true),
        }
    }
}

/// A tool call under way, as the person sees it.
#[derive(Clone)]
pub struct Call {
    pub program: String,
    /// One line: the program and its input in a few words.
    pub line: String,
    pub input: Value,
    /// When it started (its line counts the time while it runs).
    pub started: std::time::Instant,
}

impl Call {
    /// Whether its line waits for its result: a shell command (its exit
    /// code and output) or a failed call (why).
    pub fn waits_for_result(&self, failed: bool) -> bool {
        failed || agent::names::program_of(&self.program) == "shell"
    }

    /// The call's lines once it ended; `result` when it is known.
    pub fn ended(&self, failed: bool, result: Option<Detail<'_>>, verbose: bool) -> Vec<String> {
        let mark = if failed {
            paint_err("31", "✗")
        } else {
            paint_err("32", "✓")
        };
        let shell = agent::names::program_of(&self.program) == "shell";
        let how = match &result {
            Some(d) if shell && d.timed_out => " · timed out".to_owned(),
            Some(d) if shell && failed => match d.exit_code {
                Some(code) => format!(" · exit {code}"),
                None => String::new(),
            },
            _ => String::new(),
        };
        let todo = agent::names::program_of(&self.program) == "todo";
        if todo && !failed {
            // the plan as it stands now: the task panel, live
            return plan_lines(&self.input, &mark);
        }
        let mut lines = vec![format!("{mark} {}{how}", self.line.trim_end())];
        if !failed && self.program == "edit" {
            lines.extend(edit_diff(&self.input).into_iter().map(|l| format!("  {l}")));
        }
        if let Some(r) = result {
            let body = if shell {
                shell_output(r.text)
            } else if failed {
                r.text.lines().collect()
            } else {
                Vec::new()
            };
            lines.extend(under(&body, shell, verbose));
        }
        lines
    }
}

/// A `todo` call's lines: how far the plan is, then each item marked.
fn plan_lines(input: &Value, mark: &str) -> Vec<String> {
    #[derive(serde::Deserialize, Default)]
    #[serde(default)]
    struct Plan {
        items: Vec<TodoItem>,
    }
    let plan = Plan::deserialize(input).unwrap_or_default();
    let done = (plan.items.iter())
        .filter(|i| i.status == TodoStatus::Completed)
        .count();
    let mut lines = vec![format!("{mark} plan · {done} of {} done", plan.items.len())];
    lines.extend(plan.items.iter().map(item_line));
    lines
}

/// One item of the agent's plan, marked by where it stands.
pub fn item_line(item: &TodoItem) -> String {
    let mark = match item.status {
        TodoStatus::Pending => "☐",
        TodoStatus::InProgress => "◐",
        TodoStatus::Completed => "☑",
    };
    format!("  {mark} {}", shown(&item.content))
}

/// A shell's output without the notes of how it ended (said on the line).
fn shell_output(text: &str) -> Vec<&str> {
    let mut lines: Vec<&str> = text.lines().collect();
    while let Some(last) = lines.last() {
        let note = last.starts_with("[exit code ")
            || last.starts_with("[killed by signal ")
            || last.starts_with("[timed out after ")
            || last.starts_with("[ended without an exit code]");
        if note || last.trim().is_empty() {
            lines.pop();
        } else {
            break;
        }
    }
    if lines == ["(no output)"] {
        lines.clear();
    }
    lines
}

/// Lines shown under a call: all with `verbose`; else the last few of a
/// shell's output (what a failing command says last), the first few of a
/// reason; with how many are left out.
fn under(body: &[&str], tail: bool, verbose: bool) -> Vec<String> {
    let hidden = if verbose {
        0
    } else {
        body.len().saturating_sub(TAIL_LINES)
    };
    let shown_lines = match tail {
        true => &body[hidden..],
        false => &body[..body.len() - hidden],
    };
    let mut out: Vec<String> = shown_lines
        .iter()
        .map(|l| {
            let l = shown(l.trim_end());
            match verbose {
                true => l.into_owned(),
                false => crate::style::cut(&l, LINE_CHARS),
            }
        })
        .collect();
    if hidden > 0 {
        let more = format!(
            "… {hidden} more line{} (--verbose shows all)",
            if hidden == 1 { "" } else { "s" }
        );
        match tail {
            true => out.insert(0, more),
            false => out.push(more),
        }
    }
    out.iter()
        .enumerate()
        .map(|(i, l)| {
            let lead = if i == 0 { "  ⎿ " } else { "    " };
            format!("{lead}{l}")
        })
        .collect()
}

/// What an `edit` call changes.
#[derive(serde::Deserialize, Default)]
#[serde(default)]
struct EditInput {
    old_string: String,
    new_string: String,
}

/// An edit's change as diff lines (`-` old, `+` new), at most
/// `DIFF_LINES` of them and a line saying how many more.
pub fn edit_diff(input: &Value) -> Vec<String> {
    let edit: EditInput = serde::Deserialize::deserialize(input).unwrap_or_default();
    diff_lines(&edit.old_string, &edit.new_string)
}

/// The lines that change from `old` to `new` (`-` old, `+` new), at most
/// `DIFF_LINES` of them and a line saying how many more.
pub fn diff_lines(old: &str, new: &str) -> Vec<String> {
    let diff = similar::TextDiff::from_lines(old, new);
    let mut lines: Vec<String> = diff
        .iter_all_changes()
        .filter(|c| c.tag() != similar::ChangeTag::Equal)
        .map(|c| {
            let text = shown(c.value().trim_end_matches('\n'));
            match c.tag() {
                similar::ChangeTag::Delete => paint_err("31", &format!("- {text}")),
                _ => paint_err("32", &format!("+ {text}")),
            }
        })
        .collect();
    if lines.len() > DIFF_LINES {
        let more = lines.len() - DIFF_LINES;
        lines.truncate(DIFF_LINES);
        lines.push(format!(
            "… {more} more line{}",
            if more == 1 { "" } else { "s" }
        ));
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(text: &str, data: Value) -> ToolResult {
        ToolResult {
            program: "shell".into(),
            process: None,
            tool_use_id: "t".into(),
            text: text.into(),
            is_error: true,
            data: Some(data),
            denied: false,
        }
    }

    fn shell_call() -> Call {
        Call {
            program: "shell".into(),
            line: "shell make test".into(),
            input: Value::Null,
            started: std::time::Instant::now(),
        }
    }

    #[test]
    fn a_failed_command_shows_its_exit_code_and_last_lines() {
        let text = "1\n2\n3\n4\n5\n6\n[exit code 2]";
        let r = result(text, serde_json::json!({"exit_code": 2}));
        let lines = shell_call().ended(true, Some(Detail::of(&r)), false);
        assert_eq!(
            lines,
            [
                "✗ shell make test · exit 2",
                "  ⎿ … 2 more lines (--verbose shows all)",
                "    3",
                "    4",
                "    5",
                "    6"
            ]
        );
        let all = shell_call().ended(true, Some(Detail::of(&r)), true);
        assert_eq!(all.len(), 7, "{all:?}");
        assert_eq!(all[1], "  ⎿ 1");
    }

    #[test]
    fn a_failed_tool_shows_why_from_the_start() {
        let call = Call {
            program: "edit".into(),
            line: "edit calc.py".into(),
            input: Value::Null,
            started: std::time::Instant::now(),
        };
        let mut r = result("old_string not found in calc.py", Value::Null);
        r.program = "edit".into();
        let lines = call.ended(true, Some(Detail::of(&r)), false);
        assert_eq!(
            lines,
            ["✗ edit calc.py", "  ⎿ old_string not found in calc.py"]
        );
    }

    #[test]
    fn a_quiet_success_shows_only_its_line() {
        let mut r = result("(no output)", serde_json::json!({"exit_code": 0}));
        r.is_error = false;
        assert_eq!(
            shell_call().ended(false, Some(Detail::of(&r)), false),
            ["✓ shell make test"]
        );
    }
}
