//! Compaction (`seeds/agent-runtime-spec.txt`: above 70 % of the context
//! window): the model summarizes the session so far; the summary is
//! committed as a `compaction` chunk; the next call's messages start from
//! it, then the most recent turns verbatim (the blueprint's "last N turns
//! kept verbatim"; how many is in the chunk, so a rebuild keeps the same).
//! Nothing is deleted — the whole session stays in the substrate, and
//! `scope` still reaches it.

use crate::request::Conversation;
use crate::run::{Run, Stop};
use model::{ContentBlock, Message, MessagesRequest, Role, ToolChoice};
use serde_json::json;
use std::time::Instant;

/// Compaction starts above this share of the context window, unless the
/// configuration says otherwise.
pub const DEFAULT_COMPACT_AT: f64 = 0.7;

/// The model turns kept verbatim after a summary, at most.
const KEEP_TURNS: usize = 2;

/// The share of the context window the kept turns may take, at most.
const KEEP_SHARE: f64 = 0.15;

/// What the model is asked for.
const INSTRUCTIONS: &str = "\
The conversation so far is about to be replaced by your summary of it, to free the context \
window. Write that summary now, for yourself to continue from: the user's requests and \
intent; what has been done (files read and changed, commands run and what they showed, \
decisions taken and why); errors met and how they were resolved; what is in progress and \
what remains. Be specific: paths, names, exact values. Do not call tools; answer with the \
summary only.";

impl Run {
    /// Whether the last call filled the context window past the threshold.
    /// Not right after a compaction: the one call since (the summary, the
    /// kept turns, the prefix) shows what compacting can free, and
    /// compacting again would pay for a summary each call; a window that
    /// really overflows is compacted on the API's prompt-too-long.
    pub(crate) fn needs_compaction(&self) -> bool {
        let at = self.config.compact_at.unwrap_or(DEFAULT_COMPACT_AT);
        let just_compacted = self
            .compacted_at
            .is_some_and(|turns| self.tally.turns <= turns + 1);
        !just_compacted && self.tally.context_percent > at * 100.0
    }

    /// Summarizes the session and starts the messages over from the summary.
    pub(crate) async fn compact(&mut self) -> Result<(), Stop> {
        self.status("compacting the conversation");
        let provider = match &self.provider {
            Ok(p) => std::sync::Arc::clone(p),
            Err(why) => return Err(Stop::Error(why.clone())),
        };
        // `as_of` must hold every result the summary reads: a rebuild of
        // this call reads the session as of it.
        self.settle().await;
        let mut request = self.request.clone();
        request.messages.extend(self.conversation.tail());
        let request = summary_request(request);
        let started = Instant::now();
        let reply = provider.create(&request).await.map_err(|e| {
            Stop::Error(format!(
                "the conversation could not be compacted ({e}); the session is intact — resume \
                 it with a model of a larger context window, or start a new one"
            ))
        })?;
        let cost = self.tally.add_usage(
            &reply.model,
            &reply.usage,
            started.elapsed().as_millis() as u64,
        );
        let kept = recent_turns(&self.conversation.messages(), self.tally.window());
        let mut text = format!(
            "[A summary of the conversation so far, which it replaces]\n\n{}",
            reply.text().trim()
        );
        if let Some(prompt) = self.last_prompt().filter(|p| !holds_text(&kept, p)) {
            text.push_str(&format!(
                "\n\n[The user's latest request, verbatim]\n\n{prompt}"
            ));
        }
        let body = json!({
            "text": text, "usage": reply.usage, "model": reply.model, "cost_usd": cost,
            "process": self.me, "as_of": self.as_of, "keep_messages": kept.len(),
        });
        self.commit_on_session(vec![("compaction", body.clone())], None)
            .await
            .map_err(|e| Stop::Error(format!("cannot record the compaction: {e}")))?;
        self.conversation = Conversation::after_summary(&body, kept);
        self.request.messages = self.conversation.closed().to_vec();
        self.tally.context_percent = 0.0;
        self.compacted_at = Some(self.tally.turns);
        self.status("compacted; going on from the summary");
        Ok(())
    }
}

/// The summary call: `request` (the conversation as the next call would
/// send it, without its cache mark) asking for the summary, with no tools
/// and no thinking. `hc trace --request` rebuilds it the same way.
pub fn summary_request(mut request: MessagesRequest) -> MessagesRequest {
    let ask = ContentBlock::text(INSTRUCTIONS);
    match request.messages.last_mut() {
        Some(last) if last.role == Role::User => last.content.push(ask),
        _ => request.messages.push(Message {
            role: Role::User,
            content: vec![ask],
        }),
    }
    request.tool_choice = Some(ToolChoice::None);
    request.thinking = None;
    request
}

/// The most recent turns kept verbatim after a summary: the last
/// [`KEEP_TURNS`] model messages and what answered them, from an assistant
/// message on (so every kept result follows its call), within
/// [`KEEP_SHARE`] of the context window (about four characters a token);
/// none when even the last turn is larger, or is all there is.
fn recent_turns(messages: &[Message], window: u64) -> Vec<Message> {
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
fn holds_text(messages: &[Message], text: &str) -> bool {
    messages.iter().any(|m| {
        m.role == Role::User
            && m.content
                .iter()
                .any(|b| matches!(b, ContentBlock::Text(t) if t.text == text))
    })
}
