//! [`StreamEvent`]: what a caller sees of a reply as it arrives — the one
//! vocabulary every wire format's decoder folds its events into.

use crate::content::ContentBlock;
use crate::raw::RawJson;
use crate::response::{StopReason, Usage};

/// What a caller sees of a reply as it arrives. Indices are the blocks'
/// positions in the final [`MessageResponse::content`].
#[derive(Debug, Clone, PartialEq)]
pub enum StreamEvent {
    /// A block begins (text and thinking empty, tool input `{}`; server
    /// tool results arrive whole here).
    BlockStart {
        /// The block's index.
        index: usize,
        /// Its initial state.
        block: ContentBlock,
    },
    /// More text.
    TextDelta {
        /// The block's index.
        index: usize,
        /// The new text.
        text: String,
    },
    /// More thinking.
    ThinkingDelta {
        /// The block's index.
        index: usize,
        /// The new thinking.
        thinking: String,
    },
    /// The thinking block's signature.
    SignatureDelta {
        /// The block's index.
        index: usize,
        /// The signature.
        signature: String,
    },
    /// A fragment of a tool's input JSON (not valid JSON on its own).
    InputJsonDelta {
        /// The block's index.
        index: usize,
        /// The fragment; the first is often empty.
        partial_json: String,
    },
    /// A citation for a text block.
    CitationDelta {
        /// The block's index.
        index: usize,
        /// The citation, as sent.
        citation: RawJson,
    },
    /// A block is complete (tool input parsed and checked).
    BlockStop {
        /// The block's index.
        index: usize,
        /// The complete block.
        block: ContentBlock,
    },
    /// The stop reason and the usage so far (cumulative).
    MessageDelta {
        /// Why it stopped, once known.
        stop_reason: Option<StopReason>,
        /// Usage so far.
        usage: Usage,
    },
}
