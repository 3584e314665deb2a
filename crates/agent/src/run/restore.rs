//! What a compaction gives back after its summary, as Claude Code's does:
//! the files read most recently (as they are now, at most
//! [`MAX_FILES`], each and all bounded) and the skills loaded in the
//! session — so the model does not read them again, or work without
//! the instructions it had. Part of the `compaction` chunk's text, so a
//! rebuild sends what was sent.

use super::Run;
use crate::names::program_of;
use model::{ContentBlock, Message, Role};
use std::collections::HashSet;

/// Files restored, at most.
const MAX_FILES: usize = 5;
/// Characters of one file restored, at most.
const FILE_CHARS: usize = 20_000;
/// Characters of every file restored together, at most.
const ALL_CHARS: usize = 60_000;
/// Characters of the skills restored together, at most.
const SKILL_CHARS: usize = 20_000;

impl Run {
    /// The text added after a compaction's summary (none: nothing to
    /// give back). `kept`: the turns kept verbatim (what they read stays).
    pub(super) fn restored(&self, kept: &[Message]) -> String {
        let (paths, skills) = recent(&self.request.messages(), kept);
        let root = std::path::PathBuf::from(&self.knowledge.context.cwd);
        let mut out = String::new();
        let mut left = ALL_CHARS;
        for path in paths {
            // read again only what a read of it now would be allowed
            // without asking: a file swapped since for a link to a
            // secret, or one a deny rule now covers, stays out
            if !self.toolbox.reads_quietly(&path) {
                continue;
            }
            let absolute = crate::permissions::absolute(&root, &path);
            let Ok(text) = std::fs::read_to_string(&absolute) else {
                continue; // gone, or not text
            };
            let cut = cut(&text, FILE_CHARS.min(left));
            left = left.saturating_sub(cut.len());
            if out.is_empty() {
                out.push_str("\n\n[Files read before the summary, as they are now]");
            }
            let cut = cut.trim_end_matches('\n');
            out.push_str(&format!("\n\n### {path}\n```\n{cut}\n```"));
            if left == 0 {
                break;
            }
        }
        let mut left = SKILL_CHARS;
        for name in skills {
            let Some(text) = self.toolbox.skill_text(&name) else {
                continue;
            };
            let cut = cut(&text, left);
            left = left.saturating_sub(cut.len());
            out.push_str(&format!(
                "\n\n[The skill `{name}`, loaded earlier in this session]\n\n{cut}"
            ));
            if left == 0 {
                break;
            }
        }
        out
    }
}

/// `text`, at most `max` bytes of it (on a character boundary), saying so
/// when cut.
fn cut(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}\n[… cut: {} more bytes]", &text[..end], text.len() - end)
}

/// The files successfully read (newest first, each once, at most
/// [`MAX_FILES`]) and the skills loaded, in `messages` but not in `kept`.
fn recent(messages: &[Message], kept: &[Message]) -> (Vec<String>, Vec<String>) {
    let in_kept: HashSet<&str> = kept
        .iter()
        .flat_map(|m| &m.content)
        .filter_map(|b| match b {
            ContentBlock::ToolUse(t) => Some(t.id.as_str()),
            _ => None,
        })
        .collect();
    let failed: HashSet<&str> = messages
        .iter()
        .filter(|m| m.role == Role::User)
        .flat_map(|m| &m.content)
        .filter_map(|b| match b {
            ContentBlock::ToolResult(r) if r.is_error => Some(r.tool_use_id.as_str()),
            _ => None,
        })
        .collect();
    let (mut paths, mut skills) = (Vec::new(), Vec::new());
    let calls = messages
        .iter()
        .rev()
        .filter(|m| m.role == Role::Assistant)
        .flat_map(|m| m.content.iter().rev());
    for block in calls {
        let ContentBlock::ToolUse(call) = block else {
            continue;
        };
        if in_kept.contains(call.id.as_str()) || failed.contains(call.id.as_str()) {
            continue;
        }
        let input = call.input_value();
        let (list, key) = match program_of(&call.name) {
            "read" => (&mut paths, "file_path"),
            "skill" => (&mut skills, "name"),
            _ => continue,
        };
        if let Some(value) = input[key].as_str().map(str::to_owned)
            && !list.contains(&value)
            && (key != "file_path" || list.len() < MAX_FILES)
        {
            list.push(value);
        }
    }
    (paths, skills)
}
