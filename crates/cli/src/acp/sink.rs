//! A run shown in the editor: the model's text and thinking as they
//! stream (`agent_message_chunk`, `agent_thought_chunk`), each tool call
//! as it begins and ends (`tool_call`, `tool_call_update`: kind, title,
//! locations, an edit's diff, a shell's output as it comes), the todo
//! tool's list as the `plan`.

use super::link::{Link, update};
use super::tools;
use agent::contract::{Answer, Notice, RunStop, ToolResult};
use hc_acp::schema::{
    ContentBlock, SessionUpdate, ToolCall, ToolCallStatus, ToolCallUpdate, ToolKind,
};
use hc_host::follow::{Ended, Sink};
use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::Arc;

/// How much of a running shell's output a tool update shows (its end).
const OUTPUT_SHOWN: usize = 16 * 1024;

/// The editor's view of one run.
pub struct EditorSink {
    /// The session, as the editor knows it.
    session: String,
    /// The link to the editor.
    link: Arc<Link>,
    /// The project (paths are shown absolute).
    root: PathBuf,
    /// The calls the editor was told of.
    known: HashSet<String>,
    /// The calls running, in the order they began.
    running: Vec<String>,
    /// A running call's output so far, and whether it moved since shown.
    output: HashMap<String, (String, bool)>,
    /// How the run stopped, once it ended (none: it never ran).
    pub stop: Option<RunStop>,
    /// What it said of that.
    pub stop_message: Option<String>,
}

impl EditorSink {
    /// A sink for a run on `session` in the project at `root`.
    pub fn new(session: &str, root: PathBuf, link: Arc<Link>) -> EditorSink {
        EditorSink {
            session: session.to_owned(),
            link,
            root,
            known: HashSet::new(),
            running: Vec::new(),
            output: HashMap::new(),
            stop: None,
            stop_message: None,
        }
    }

    fn send(&self, what: SessionUpdate) {
        update(&self.session, what);
    }

    fn started(&mut self, id: &str, program: &str, input: &serde_json::Value) {
        if agent::names::program_of(program) == "todo" {
            let entries = tools::plan_entries(&tools::Input::of(input).items);
            self.send(SessionUpdate::Plan { entries });
        }
        let call = tools::call(&self.root, id, program, input, ToolCallStatus::InProgress);
        self.known.insert(id.to_owned());
        self.running.push(id.to_owned());
        self.send(SessionUpdate::ToolCall(call));
    }

    fn finished(&mut self, id: &str, is_error: bool, said: Option<&str>, exit: Option<i64>) {
        self.running.retain(|r| r != id);
        let (output, _) = self.output.remove(id).unwrap_or_default();
        let status = match is_error {
            true => ToolCallStatus::Failed,
            false => ToolCallStatus::Completed,
        };
        // what it showed stays (a diff), unless there is output to show
        let shown = said
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
            .or_else(|| (!output.is_empty()).then(|| tail(&output, OUTPUT_SHOWN).to_owned()));
        let content: Option<Vec<_>> = shown.map(|text| vec![tools::text(fenced(&text))]);
        let asked = self.link.was_asked_about(id);
        if self.known.insert(id.to_owned()) && !asked {
            // (refused before it began: the editor hears of it once, ended)
            self.send(SessionUpdate::ToolCall(ToolCall {
                tool_call_id: id.to_owned(),
                title: "A call that did not run".into(),
                kind: ToolKind::Other,
                status,
                content: content.unwrap_or_default(),
                locations: Vec::new(),
                raw_input: serde_json::Value::Null,
            }));
            return;
        }
        self.send(SessionUpdate::ToolCallUpdate(ToolCallUpdate {
            tool_call_id: id.to_owned(),
            status: Some(status),
            content,
            raw_output: exit.map(|code| serde_json::json!({"exit_code": code})),
            ..ToolCallUpdate::default()
        }));
    }

    /// The running shell a line of output belongs to: the last begun.
    fn output(&mut self, text: &str) {
        let Some(id) = self.running.last() else {
            return;
        };
        let (kept, moved) = self.output.entry(id.clone()).or_default();
        kept.push_str(text);
        if kept.len() > 4 * OUTPUT_SHOWN {
            *kept = tail(kept, OUTPUT_SHOWN).to_owned();
        }
        *moved = true;
    }
}

/// The last `n` bytes of `text` (at a character's start).
fn tail(text: &str, n: usize) -> &str {
    let mut from = text.len().saturating_sub(n);
    while !text.is_char_boundary(from) {
        from += 1;
    }
    &text[from..]
}

/// Output as a fenced block (an editor renders content as markdown).
fn fenced(text: &str) -> String {
    let fence = if text.contains("```") { "````" } else { "```" };
    format!("{fence}\n{}\n{fence}", text.trim_end_matches('\n'))
}

impl Sink for EditorSink {
    fn notice(&mut self, notice: &Notice) {
        match notice {
            Notice::TextDelta { text, .. } => self.send(SessionUpdate::AgentMessageChunk {
                content: ContentBlock::Text { text: text.clone() },
            }),
            Notice::ThinkingDelta { text, .. } => self.send(SessionUpdate::AgentThoughtChunk {
                content: ContentBlock::Text { text: text.clone() },
            }),
            Notice::ToolStart {
                tool_use_id,
                program,
                input,
            } => self.started(tool_use_id, program, input),
            Notice::ToolEnd {
                tool_use_id,
                is_error,
                said,
                exit_code,
                ..
            } => self.finished(tool_use_id, *is_error, said.as_deref(), *exit_code),
            _ => {}
        }
    }

    fn tool_output(&mut self, text: &str) {
        self.output(text);
    }

    fn tick(&mut self) {
        let moved: Vec<(String, String)> = (self.output.iter_mut())
            .filter(|(_, (_, moved))| *moved)
            .map(|(id, (text, moved))| {
                *moved = false;
                (id.clone(), tail(text, OUTPUT_SHOWN).to_owned())
            })
            .collect();
        for (id, text) in moved {
            self.send(SessionUpdate::ToolCallUpdate(ToolCallUpdate {
                tool_call_id: id,
                content: Some(vec![tools::text(fenced(&text))]),
                ..ToolCallUpdate::default()
            }));
        }
    }

    fn wants_answers(&self) -> bool {
        false
    }

    fn wants_results(&self) -> bool {
        false
    }

    fn answer(&mut self, _answer: &Answer, _parent: Option<&str>) {}

    fn results(&mut self, _results: &[ToolResult], _parent: Option<&str>) {}

    fn say(&mut self, text: &str) {
        eprintln!("hc: {text}");
    }

    fn ended(&mut self, ended: &Ended<'_>) -> anyhow::Result<()> {
        let totals = &ended.body.totals;
        self.stop = Some(totals.stop_reason.unwrap_or(RunStop::Other));
        self.stop_message.clone_from(&totals.stop_message);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn output_is_cut_at_a_character_and_fenced() {
        assert_eq!(tail("héllo", 4), "llo");
        assert_eq!(fenced("a\n"), "```\na\n```");
        assert_eq!(fenced("```x```"), "````\n```x```\n````");
    }
}
