//! The request is a function of the substrate: [`Prefix`] is the part a
//! context event fixes — model, system, tools — and [`Conversation`] the
//! messages, mapped item by item from the session. [`Request`] owns them
//! and is the only place a request's bytes are laid out: the live agent
//! feeds it as it goes, `hc trace --request` feeds it a session read back
//! (a rebuild), and both take the request from the same methods
//! ([`Request::next_call`], [`Request::summary`]), so the two agree byte for
//! byte by construction.

mod conversation;
mod prefix;
mod summary;

pub use conversation::{Conversation, INTERRUPTED, mark_breakpoint};
pub use prefix::{Prefix, ToolDef};
pub use summary::summary_request;

use crate::contract::SessionItem;
use model::{Message, MessagesRequest};
use substrate::ChunkItem;

/// The request of one session: its prefix and its conversation, with
/// the request of every call laid out from them.
#[derive(Clone, Debug)]
pub struct Request {
    prefix: Prefix,
    conversation: Conversation,
    /// The prefix and every closed message: where each call starts.
    base: MessagesRequest,
}

impl Request {
    /// A request of `prefix` and `conversation`.
    pub fn new(prefix: Prefix, conversation: Conversation) -> Request {
        let mut base = prefix.request();
        base.messages = conversation.closed().to_vec();
        Request {
            prefix,
            conversation,
            base,
        }
    }

    /// The request of a session read from the substrate: the prefix of
    /// its context event, its chunks since the last compaction, in order.
    pub fn of_session(prefix: Prefix, history: &[ChunkItem]) -> Request {
        Request::new(prefix, Conversation::since_compaction(history))
    }

    /// Maps an item just written on the session (a compaction starts
    /// the messages over).
    pub fn push(&mut self, item: &SessionItem) {
        let restarts = matches!(item, SessionItem::Compaction(_));
        self.conversation.push(item);
        let closed = self.conversation.closed();
        if restarts {
            self.base.messages = closed.to_vec();
            return;
        }
        let have = self.base.messages.len();
        if closed.len() > have {
            self.base.messages.extend(closed[have..].iter().cloned());
        }
    }

    /// Puts a new prefix in place (a new context event).
    pub fn set_prefix(&mut self, prefix: Prefix) {
        let mut base = prefix.request();
        base.messages = std::mem::take(&mut self.base.messages);
        self.base = base;
        self.prefix = prefix;
    }

    /// The request of the next call: the closed messages, the open one,
    /// the conversation's cache breakpoint on its last block. Put back as
    /// it was when the guard goes.
    pub fn next_call(&mut self) -> Outgoing<'_> {
        let closed = self.open();
        Outgoing {
            request: &mut self.base,
            closed,
        }
    }

    /// The same, taken whole (a rebuild's).
    pub fn into_next_call(mut self) -> MessagesRequest {
        self.open();
        self.base
    }

    /// Lays out the open message and the breakpoint; answers how many
    /// messages were closed before.
    fn open(&mut self) -> usize {
        if let Some(container) = self.conversation.container() {
            // (the code-execution container of the session's calls, reused)
            self.base
                .extra
                .insert("container".into(), serde_json::json!(container));
        }
        let closed = self.base.messages.len();
        self.base.messages.extend(self.conversation.tail());
        mark_breakpoint(&mut self.base.messages, true);
        closed
    }

    /// The compaction's summary call: the conversation as the next call
    /// would send it (without its cache mark), asking for the summary,
    /// with no tools and no thinking.
    pub fn summary(&self) -> MessagesRequest {
        let mut request = self.base.clone();
        request.messages.extend(self.conversation.tail());
        summary_request(request)
    }

    /// Every message, as the next call would send them (no cache mark).
    pub fn messages(&self) -> Vec<Message> {
        self.conversation.messages()
    }

    /// The prefix in place.
    pub fn prefix(&self) -> &Prefix {
        &self.prefix
    }
}

/// The request of the next call, while it is made.
pub struct Outgoing<'a> {
    request: &'a mut MessagesRequest,
    closed: usize,
}

impl std::ops::Deref for Outgoing<'_> {
    type Target = MessagesRequest;

    fn deref(&self) -> &MessagesRequest {
        self.request
    }
}

impl Drop for Outgoing<'_> {
    fn drop(&mut self) {
        mark_breakpoint(&mut self.request.messages, false);
        self.request.messages.truncate(self.closed);
    }
}
