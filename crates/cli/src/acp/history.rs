//! `session/load`: a session's history told to the editor as the updates
//! it would have seen — each prompt a `user_message_chunk`, each reply's
//! thinking and text, each call begun and ended with what it showed, the
//! todo list as the plan.

use super::tools;
use agent::contract::SessionItem;
use hc_acp::schema::{ContentBlock, SessionUpdate, ToolCallStatus, ToolCallUpdate};
use model::ContentBlock as Block;
use std::path::Path;
use substrate::Substrate;

/// The updates that tell session `session`'s history, in order.
pub fn updates(db: &Substrate, root: &Path, session: &str) -> anyhow::Result<Vec<SessionUpdate>> {
    let chunks = db
        .scope(&[session], &protocol::ScopeOpts::default())?
        .chunks;
    let text = |text: &str| ContentBlock::Text {
        text: text.to_owned(),
    };
    let mut out = Vec::new();
    for chunk in &chunks {
        match SessionItem::of(chunk) {
            SessionItem::Prompt(prompt) => out.push(SessionUpdate::UserMessageChunk {
                content: text(&prompt.text),
            }),
            SessionItem::Answer(answer) => {
                for block in &answer.content {
                    match block {
                        Block::Thinking(t) if !t.thinking.is_empty() => {
                            out.push(SessionUpdate::AgentThoughtChunk {
                                content: text(&t.thinking),
                            });
                        }
                        Block::Text(t) if !t.text.is_empty() => {
                            out.push(SessionUpdate::AgentMessageChunk {
                                content: text(&t.text),
                            });
                        }
                        _ => {}
                    }
                }
            }
            SessionItem::ToolCall(call) => {
                let status = ToolCallStatus::InProgress;
                let begun = tools::told(
                    root,
                    &call.tool_use_id,
                    &call.program,
                    &call.input,
                    status,
                    false,
                );
                out.push(SessionUpdate::ToolCall(begun));
            }
            SessionItem::ToolResult(result) => {
                let status = match result.is_error {
                    true => ToolCallStatus::Failed,
                    false => ToolCallStatus::Completed,
                };
                out.push(SessionUpdate::ToolCallUpdate(ToolCallUpdate {
                    tool_call_id: result.tool_use_id.clone(),
                    status: Some(status),
                    ..ToolCallUpdate::default()
                }));
            }
            SessionItem::Todo(todo) => out.push(SessionUpdate::Plan {
                entries: tools::plan_entries(&todo.items),
            }),
            _ => {}
        }
    }
    Ok(out)
}
