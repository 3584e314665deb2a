//! What the block layer records on a session: each model call it makes
//! apart from the conversation (`call_llm`, a compression's summary) as an
//! `llm-call` — with everything its request is built from, so `hc trace
//! --request N` rebuilds it byte for byte — and each entry the kernel saves
//! to history as a `block-save`.

use super::bodies::Body;
use model::{Message, MessagesRequest, SystemBlock, Usage};
use serde::{Deserialize, Serialize};

/// Why a side call was made.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum LlmPurpose {
    /// The model asked for it (`call_llm`).
    #[default]
    CallLlm,
    /// A block's nine entries summarized into their node.
    Compression,
    /// Auto mode's judgement of a call that would ask.
    Permission,
}

/// `llm-call`: one tool-less model call beside the conversation.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct LlmCall {
    /// Why it was made.
    pub purpose: LlmPurpose,
    /// The model it went to.
    pub model: String,
    /// Its system prompt, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub system: Option<String>,
    /// Its one user message.
    pub prompt: String,
    /// Its reply limit.
    pub max_tokens: u32,
    /// The reply's text (empty when it failed).
    pub text: String,
    /// Why it failed, when it did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Its tokens.
    pub usage: Usage,
    /// Its dollars (0 with no price).
    pub cost_usd: f64,
    /// The agent process that made it.
    pub process: String,
    /// Auto mode's decision (`allow` or `deny`), for a judgement.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub decision: Option<String>,
    /// The `call_llm` call it answers (or the call judged).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_use_id: Option<String>,
    /// For a compression: the block and the node summarized.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub block: Option<String>,
    /// That node's address.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
}

impl Body for LlmCall {
    const TYPE: &'static str = "llm-call";
}

impl LlmCall {
    /// The request it sent (and a rebuild sends): its one prompt, its
    /// system, no tools, unstreamed.
    pub fn request(&self) -> MessagesRequest {
        let messages = vec![Message::user(&self.prompt)];
        let mut request = MessagesRequest::new(&self.model, self.max_tokens, messages);
        if let Some(system) = self.system.as_deref().filter(|s| !s.is_empty()) {
            request.system = vec![SystemBlock::text(system)];
        }
        request
    }
}

/// `block-save`: an entry the kernel saved to a block (history, after an
/// answer), with what it compressed on the way.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct BlockSave {
    /// The block.
    pub block: String,
    /// The entry's address.
    pub path: String,
    /// The entry.
    pub text: String,
    /// Nodes whose nine entries were summarized into them.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub compressed: Vec<String>,
    /// Nodes whose compression failed, to be tried at the next save.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub deferred: Vec<String>,
    /// Whether the block grew upward (its `decimal` one more).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub grew: bool,
}

impl Body for BlockSave {
    const TYPE: &'static str = "block-save";
}
