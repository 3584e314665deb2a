//! `send_message`: a message to another session of the project, offered to
//! a run in the background (a foreground run has its person; `hc send`
//! writes from outside). A run writes only its own session, so the message
//! is committed there, addressed (`to`); the host that runs the agent
//! delivers it — a copy on the other session (`hc_host::relay`), which
//! that session's agent brings to its model at its next turn — and says
//! on the original whether it did. The call waits a few seconds for that
//! word.

use super::outcome::Outcome;
use crate::contract::{Entry, Message};
use crate::run::writer::SessionWriter;
use protocol::{Client, ScopeOpts};
use serde::Deserialize;
use serde_json::{Value, json};
use std::time::Duration;

/// The tool's name.
pub const TOOL: &str = "send_message";

/// How long the call waits for its host to say the message was delivered.
const DELIVERY_WAIT: Duration = Duration::from_secs(5);

/// The tool's definition.
pub fn definition() -> Value {
    json!({
        "name": TOOL,
        "description": "Sends a message to another session of this project (another agent's \
            conversation): it reads it at its next turn, or when it next runs. Name the \
            session by its id, a unique prefix of it, or the name a program gave it.",
        "input_schema": {
            "type": "object",
            "properties": {
                "session": {"type": "string", "description": "The session: an id, a unique prefix, or a name."},
                "text": {"type": "string", "description": "The message, complete on its own."}
            },
            "required": ["session", "text"]
        }
    })
}

/// The tool's input.
#[derive(serde::Deserialize)]
struct Input {
    session: String,
    text: String,
}

/// Sends it: the message committed on this session, addressed; the
/// answer once the host said it was delivered (or not), or the wait ended.
pub async fn send(client: &Client, writer: &mut SessionWriter, input: &Value) -> Outcome {
    let Ok(Input { session, text }) = Input::deserialize(input) else {
        return Outcome::error("`session` and `text` are required, both text");
    };
    let (to, text) = (session.as_str(), text.as_str());
    if to.trim().is_empty() || text.trim().is_empty() {
        return Outcome::error("`session` and `text` must not be empty");
    }
    if to == writer.session() {
        return Outcome::error("that is this session: a message goes to another one");
    }
    let message = Message {
        text: text.to_owned(),
        from: Some(writer.session().to_owned()),
        to: Some(to.to_owned()),
        ..Message::default()
    };
    let commit = match writer.commit(vec![Entry::of(&message)], None).await {
        Ok(commit) => commit,
        Err(e) => return Outcome::error(format!("the message could not be recorded: {e}")),
    };
    let Some(sent) = commit.created.first().cloned() else {
        return Outcome::error("the message was not recorded");
    };
    let deadline = tokio::time::Instant::now() + DELIVERY_WAIT;
    while tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
        let Ok(read) = client.scope(&[sent.as_str()], ScopeOpts::default()).await else {
            continue;
        };
        let body = read
            .scopes
            .first()
            .map(|s| s.body_value())
            .unwrap_or_default();
        let said = Message::parse_body(&body);
        if let Some(copy) = said.delivered {
            return Outcome {
                text: format!(
                    "Sent to {copy}: it reads it at its next turn, or when it next runs."
                ),
                data: json!({"message": sent, "delivered": copy}),
                ..Outcome::default()
            };
        }
        if let Some(why) = said.undelivered {
            return Outcome::error(format!("not delivered: {why}"));
        }
    }
    Outcome {
        text: "Recorded for the other session; its delivery was not confirmed yet.".to_owned(),
        data: json!({"message": sent}),
        ..Outcome::default()
    }
}
