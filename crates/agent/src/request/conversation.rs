//! The messages of a session, mapped item by item: `prompt` (and a
//! `compaction`'s summary) → user text, `answer` → the reply's blocks
//! verbatim, `tool-result` → a `tool_result` block; consecutive items of a
//! side make one message. An item maps the same way whether the agent has
//! just written it or a rebuild reads it back.

use crate::contract::{Answer, Compaction, SessionItem, ToolResult};
use model::{CacheControl, ContentBlock, Message, Role};
use substrate::ChunkItem;

/// The text a `tool_use` left without a result gets.
pub const INTERRUPTED: &str = "interrupted before the tool returned";

/// The messages of a session, built item by item. Closed messages never
/// change; the open one at the end is rendered when a request is made.
#[derive(Clone, Debug, Default)]
pub struct Conversation {
    closed: Vec<Message>,
    open: Open,
    /// The `tool_use` ids of the last assistant message.
    calls: Vec<String>,
    /// The code-execution container the last answer that had one ran in
    /// (kept across compactions: the container outlives them).
    container: Option<String>,
}

#[derive(Clone, Debug, Default)]
enum Open {
    #[default]
    Nothing,
    /// Consecutive answers: one assistant message.
    Assistant(Vec<ContentBlock>),
    /// Consecutive prompts and results: one user message.
    User {
        results: Vec<ContentBlock>,
        texts: Vec<ContentBlock>,
    },
}

impl Conversation {
    /// Maps one session item (those that are not sent are skipped).
    pub fn push(&mut self, item: &SessionItem) {
        match item {
            SessionItem::Prompt(p) => {
                for image in &p.images {
                    self.user(None, image_block(&image.media_type, &image.data));
                }
                self.user(None, Some(ContentBlock::text(&p.text)));
            }
            SessionItem::Compaction(c) => self.compacted(c),
            SessionItem::Answer(a) => self.answer(a),
            SessionItem::ToolResult(r) => self.result(r),
            SessionItem::ToolCall(_)
            | SessionItem::Context(_)
            | SessionItem::PermissionRequest(_)
            | SessionItem::PermissionDecision(_)
            | SessionItem::UserQuestion(_)
            | SessionItem::UserAnswer(_)
            | SessionItem::Interrupt(_)
            | SessionItem::Message(_)
            | SessionItem::Todo(_)
            | SessionItem::HookCallback(_)
            | SessionItem::HookAnswer(_)
            | SessionItem::LlmCall(_)
            | SessionItem::BlockSave(_)
            | SessionItem::Plan(_)
            | SessionItem::Run(_)
            | SessionItem::Unreadable { .. }
            | SessionItem::Other => {}
        }
    }

    /// A compaction: the messages start over from its summary, then the
    /// last `keep_messages` of those before it, verbatim.
    fn compacted(&mut self, summary: &Compaction) {
        let before = self.messages();
        let kept = before[before.len().saturating_sub(summary.keep_messages)..].to_vec();
        let container = self.container.take();
        *self = Conversation::after_summary(summary, kept);
        self.container = container;
    }

    /// The code-execution container the next call goes on in, if any.
    pub fn container(&self) -> Option<&str> {
        self.container.as_deref()
    }

    fn answer(&mut self, answer: &Answer) {
        if let Some(container) = &answer.container {
            self.container = Some(container.clone());
        }
        if !answer.content.is_empty() {
            self.assistant(answer.content.clone());
        }
    }

    fn result(&mut self, result: &ToolResult) {
        let mut block =
            ContentBlock::tool_result(&result.tool_use_id, &result.text, result.is_error);
        // a tool search's result is the tools it loaded, referenced (the
        // API takes nothing else beside them)
        let loaded = references_of(result);
        if let (false, ContentBlock::ToolResult(tool_result)) = (loaded.is_empty(), &mut block) {
            tool_result.content = model::ToolResultContent::Blocks(loaded);
            self.user(Some(block), None);
            return;
        }
        let images = images_of(result);
        if let (false, ContentBlock::ToolResult(tool_result)) = (images.is_empty(), &mut block) {
            let mut blocks = vec![ContentBlock::text(&result.text)];
            blocks.extend(images);
            tool_result.content = model::ToolResultContent::Blocks(blocks);
        }
        self.user(Some(block), None);
    }

    fn assistant(&mut self, mut content: Vec<ContentBlock>) {
        match &mut self.open {
            Open::Assistant(blocks) => blocks.append(&mut content),
            _ => {
                self.close();
                self.open = Open::Assistant(content);
            }
        }
    }

    fn user(&mut self, result: Option<ContentBlock>, text: Option<ContentBlock>) {
        if !matches!(self.open, Open::User { .. }) {
            self.close();
            self.open = Open::User {
                results: Vec::new(),
                texts: Vec::new(),
            };
        }
        if let Open::User { results, texts } = &mut self.open {
            results.extend(result);
            texts.extend(text);
        }
    }

    /// Moves the open message to the closed ones.
    fn close(&mut self) {
        match std::mem::take(&mut self.open) {
            Open::Nothing => {}
            Open::Assistant(content) => {
                self.calls = content
                    .iter()
                    .filter_map(|b| match b {
                        ContentBlock::ToolUse(t) => Some(t.id.clone()),
                        _ => None,
                    })
                    .collect();
                self.closed.push(Message::assistant(content));
            }
            Open::User { results, texts } => {
                let message = self.render_user(results, texts);
                self.calls.clear();
                self.closed.push(message);
            }
        }
    }

    /// A user message: results first, in the order of the calls they
    /// answer (a call with none gets [`INTERRUPTED`]), then text.
    fn render_user(&self, results: Vec<ContentBlock>, texts: Vec<ContentBlock>) -> Message {
        let mut content = Vec::with_capacity(results.len() + texts.len());
        let id_of = |b: &ContentBlock| match b {
            ContentBlock::ToolResult(r) => r.tool_use_id.clone(),
            _ => String::new(),
        };
        for call in &self.calls {
            match results.iter().find(|r| id_of(r) == *call) {
                Some(found) => content.push(found.clone()),
                None => content.push(ContentBlock::tool_result(call, INTERRUPTED, true)),
            }
        }
        for r in results {
            if !self.calls.contains(&id_of(&r)) {
                content.push(r);
            }
        }
        content.extend(texts);
        Message {
            role: Role::User,
            content,
        }
    }

    /// The messages closed so far.
    pub fn closed(&self) -> &[Message] {
        &self.closed
    }

    /// The open message, rendered (a call still unanswered at the end of
    /// an assistant message gets [`INTERRUPTED`] in a user message after it).
    pub fn tail(&self) -> Vec<Message> {
        match &self.open {
            Open::Nothing => Vec::new(),
            Open::User { results, texts } => vec![self.render_user(results.clone(), texts.clone())],
            Open::Assistant(content) => {
                let mut probe = self.clone();
                probe.close();
                let mut out = vec![Message::assistant(content.clone())];
                if !probe.calls.is_empty() {
                    out.push(probe.render_user(Vec::new(), Vec::new()));
                }
                out
            }
        }
    }

    /// Every message, for a request.
    pub fn messages(&self) -> Vec<Message> {
        let mut all = self.closed.clone();
        all.extend(self.tail());
        all
    }

    /// The conversation of `history`: each chunk mapped in order (a
    /// compaction starting the messages over from its summary).
    pub fn since_compaction(history: &[ChunkItem]) -> Conversation {
        let mut conversation = Conversation::default();
        for chunk in history {
            conversation.push(&SessionItem::of(chunk));
        }
        conversation
    }

    /// The same, of items already read.
    pub fn of_items<T: AsRef<SessionItem>>(items: &[T]) -> Conversation {
        let mut conversation = Conversation::default();
        for item in items {
            conversation.push(item.as_ref());
        }
        conversation
    }

    /// A conversation that starts from a compaction's summary, then the
    /// messages it kept verbatim (the first an assistant message).
    fn after_summary(summary: &Compaction, kept: Vec<Message>) -> Conversation {
        let mut conversation = Conversation::default();
        conversation.user(None, Some(ContentBlock::text(&summary.text)));
        for message in kept {
            match message.role {
                Role::Assistant => conversation.assistant(message.content),
                Role::User => {
                    for block in message.content {
                        match block {
                            ContentBlock::ToolResult(_) => conversation.user(Some(block), None),
                            other => conversation.user(None, Some(other)),
                        }
                    }
                }
            }
        }
        conversation
    }
}

/// Marks the last block of the last message as the conversation's cache
/// breakpoint (`on`), or takes the mark off again.
pub fn mark_breakpoint(messages: &mut [Message], on: bool) {
    let Some(block) = messages.last_mut().and_then(|m| m.content.last_mut()) else {
        return;
    };
    let mark = on.then(CacheControl::ephemeral);
    match block {
        ContentBlock::Text(b) => b.cache_control = mark,
        ContentBlock::ToolResult(b) => b.cache_control = mark,
        ContentBlock::ToolUse(b) => b.cache_control = mark,
        _ => {}
    }
}

/// The tools a `ToolSearch` result loaded, as `tool_reference` blocks.
fn references_of(result: &ToolResult) -> Vec<ContentBlock> {
    let search = crate::toolbox::search::TOOL;
    let (Some(data), false, true) = (&result.data, result.is_error, result.program == search)
    else {
        return Vec::new();
    };
    let loaded = crate::toolbox::search::Loaded::of(data);
    (loaded.tool_references.iter())
        .filter_map(|name| {
            let block = serde_json::json!({"type": "tool_reference", "tool_name": name});
            ContentBlock::from_json(&block.to_string()).ok()
        })
        .collect()
}

/// The images a tool answered with (`data.images`: `{media_type, data}`,
/// base64 — an MCP server's image content), as image blocks the model sees.
fn images_of(result: &ToolResult) -> Vec<ContentBlock> {
    let Some(images) = result.data.as_ref().and_then(|d| d["images"].as_array()) else {
        return Vec::new();
    };
    images
        .iter()
        .filter_map(|image| {
            image_block(
                image["media_type"].as_str().unwrap_or_default(),
                image["data"].as_str().unwrap_or_default(),
            )
        })
        .collect()
}

/// An image block of base64 `data`.
fn image_block(media_type: &str, data: &str) -> Option<ContentBlock> {
    let block = serde_json::json!({"type": "image", "source": {
        "type": "base64", "media_type": media_type, "data": data}});
    ContentBlock::from_json(&block.to_string()).ok()
}
