//! A run replaying a recorded session (`hc replay`, `AgentConfig::replay`):
//! its model client serves the recorded answers in order — from the call
//! this session has reached on — and the facts of the machine the model
//! is told are those the recorded run was told, so that what differs is
//! what the harness (its code, hooks, rules, tools) does differently. A
//! sub-agent of a replay has no record of its own to serve: its calls are
//! answered that there is none (never sent to an API).

use crate::contract::{ContextBody, SessionItem};
use model::{ContentBlock, MessageResponse, Role};
use protocol::{Client, ScopeOpts};
use substrate::ChunkItem;

/// The recorded answers `own` (this session's history) has not had yet,
/// and the context the recorded run that made them was given.
pub(super) async fn recorded(
    client: &Client,
    original: &str,
    own: &[ChunkItem],
    depth: u32,
) -> Result<(model::Provider, Option<ContextBody>), String> {
    if depth > 1 {
        return Ok((
            model::Provider::Recorded(model::RecordedClient::new(Vec::new())),
            None,
        ));
    }
    let read = client
        .scope(&[original], ScopeOpts::default())
        .await
        .map_err(|e| format!("cannot read the session replayed ({original}): {e}"))?;
    let made = own.iter().filter(|c| crate::is_call(c)).count();
    let runs = own
        .iter()
        .filter(|c| matches!(SessionItem::of(c), SessionItem::Context(Some(_))))
        .count();
    let answers = read
        .chunks
        .iter()
        .filter(|c| crate::is_call(c))
        .skip(made)
        .filter_map(|c| answer_of(c))
        .collect();
    let context = read
        .chunks
        .iter()
        .filter_map(|c| match SessionItem::of(c) {
            SessionItem::Context(Some(body)) if body.is_written() => Some(*body),
            _ => None,
        })
        .nth(runs);
    Ok((
        model::Provider::Recorded(model::RecordedClient::new(answers)),
        context,
    ))
}

/// A recorded call's reply.
fn answer_of(item: &ChunkItem) -> Option<MessageResponse> {
    let (content, stop_reason, usage, model, id) = match SessionItem::of(item) {
        SessionItem::Answer(a) => (
            a.content,
            a.stop_reason,
            a.usage,
            a.model,
            a.message_id.unwrap_or_default(),
        ),
        SessionItem::Compaction(c) => (
            vec![ContentBlock::text(c.summary())],
            Some(model::StopReason::EndTurn),
            c.usage,
            c.model,
            String::new(),
        ),
        // a call beside the conversation (`call_llm`, a block's
        // compression) takes its own recorded reply, in its place
        SessionItem::LlmCall(c) => (
            vec![ContentBlock::text(c.text)],
            Some(model::StopReason::EndTurn),
            c.usage,
            c.model,
            String::new(),
        ),
        _ => return None,
    };
    Some(MessageResponse {
        id,
        model,
        role: Role::Assistant,
        content,
        stop_reason,
        stop_sequence: None,
        usage,
        container: None,
        context_management: None,
    })
}

/// `context` told what `recorded` was told of the machine.
pub(super) fn as_recorded(context: &mut ContextBody, recorded: &ContextBody) {
    context.date = recorded.date.clone();
    context.cwd = recorded.cwd.clone();
    context.platform = recorded.platform.clone();
    context.git = recorded.git.clone();
}
