//! What a compaction keeps: the choice of the most recent turns kept
//! verbatim after its summary (how many is recorded on the `compaction`
//! chunk, so a rebuild keeps the same).

use model::{ContentBlock, Message, Role};

/// The model turns kept verbatim after a summary, at most.
const KEEP_TURNS: usize = 2;

/// The share of the context window the kept turns may take, at most.
const KEEP_SHARE: f64 = 0.15;

/// The most recent turns kept verbatim after a summary: the last
/// [`KEEP_TURNS`] model messages and what answered them, from an assistant
/// message on (so every kept result follows its call), within
/// [`KEEP_SHARE`] of the context window (about four characters a token);
/// none when even the last turn is larger, or is all there is.
pub fn recent_turns(messages: &[Message], window: u64) -> Vec<Message> {
    let budget = (window as f64 * KEEP_SHARE * 4.0) as usize;
    let mut start = None;
    let mut turns = 0;
    let mut size = 0;
    for (i, message) in messages.iter().enumerate().skip(1).rev() {
        size += serde_json::to_string(message).map_or(usize::MAX, |s| s.len());
        if size > budget {
            break;
        }
        if message.role == Role::Assistant {
            start = Some(i);
            turns += 1;
            if turns == KEEP_TURNS {
                break;
            }
        }
    }
    start.map_or_else(Vec::new, |i| messages[i..].to_vec())
}

/// Whether a user message of `messages` holds `text` as a block of its own.
pub(crate) fn holds_text(messages: &[Message], text: &str) -> bool {
    messages.iter().any(|m| {
        m.role == Role::User
            && m.content
                .iter()
                .any(|b| matches!(b, ContentBlock::Text(t) if t.text == text))
    })
}
