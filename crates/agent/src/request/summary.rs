//! The request of a compaction's summary call.

use model::{ContentBlock, Message, MessagesRequest, Role, ToolChoice};

/// What the model is asked for.
const INSTRUCTIONS: &str = "\
The conversation so far is about to be replaced by your summary of it, to free the context \
window. Write that summary now, for yourself to continue from: the user's requests and \
intent; what has been done (files read and changed, commands run and what they showed, \
decisions taken and why); errors met and how they were resolved; what is in progress and \
what remains. Be specific: paths, names, exact values. Do not call tools; answer with the \
summary only.";

/// The summary call: `request` (the conversation as the next call would
/// send it, without its cache mark) asking for the summary, with no tools
/// and no thinking.
pub fn summary_request(mut request: MessagesRequest) -> MessagesRequest {
    let ask = ContentBlock::text(INSTRUCTIONS);
    match request.messages.last_mut() {
        Some(last) if last.role == Role::User => last.content.push(ask),
        _ => request.messages.push(Message {
            role: Role::User,
            content: vec![ask],
        }),
    }
    // (images and documents are not worth a summary's tokens: each is
    // said, not sent)
    for message in &mut request.messages {
        strip_media(&mut message.content);
    }
    request.tool_choice = Some(ToolChoice::None);
    request.thinking = None;
    request.extra.remove("thinking");
    request.extra.remove("container");
    request
}

/// `blocks` with every image and document (in tool results too) said in
/// words instead.
fn strip_media(blocks: &mut [ContentBlock]) {
    for block in blocks {
        match block {
            ContentBlock::Raw(raw) if matches!(raw.block_type.as_str(), "image" | "document") => {
                *block = ContentBlock::text(format!(
                    "[{} omitted from the summary call]",
                    raw.block_type
                ));
            }
            ContentBlock::ToolResult(result) => {
                if let model::ToolResultContent::Blocks(inner) = &mut result.content {
                    strip_media(inner);
                }
            }
            _ => {}
        }
    }
}
