//! Delivering the messages runs send (`send_message`): a run writes only
//! its own session, so it commits the message there, addressed (`to`); a
//! host that sees that commit puts a copy on the session it names
//! (`relayed_from`: the store keeps one copy of each, whichever host is
//! first) and says on the original that it did, or why it could not. Every
//! host that runs agents relays what its own engines commit — `open`'s
//! hosts and the workers.

use agent::contract::{Body, Message};
use serde_json::json;
use std::sync::Arc;
use substrate::{ChunkDecl, Declaration, NewPlacement, Substrate};

/// Relays the messages committed on `db` from now on, for as long as the
/// runtime runs.
pub fn start(db: Arc<Substrate>) {
    let mut commits = db.subscribe();
    tokio::spawn(async move {
        use tokio::sync::broadcast::error::RecvError;
        loop {
            let commit = match commits.recv().await {
                Ok(commit) => commit,
                Err(RecvError::Lagged(_)) => continue,
                Err(RecvError::Closed) => return,
            };
            if !commit.touched_scopes.iter().any(|s| s == Message::TYPE) {
                continue;
            }
            for id in commit.created.clone() {
                let db = Arc::clone(&db);
                let _ = tokio::task::spawn_blocking(move || deliver(&db, &id)).await;
            }
        }
    });
}

/// Delivers message `id` when it is one a run sent and nobody delivered.
fn deliver(db: &Substrate, id: &str) {
    let Ok(Some(body)) = db.read(|s| s.body(id)) else {
        return;
    };
    let message = Message::parse_body(&body);
    let Some(to) = message.to.clone() else {
        return;
    };
    if message.delivered.is_some() || message.undelivered.is_some() {
        return;
    }
    // who sent it: the session it sits on, whatever its body says
    let Some(sender) = sent_from(db, id) else {
        tracing::debug!("message {id} sits on no session: not delivered");
        return;
    };
    let decl = match crate::sessions::resolve(db, &to) {
        Ok(target) => {
            let copy = Message {
                text: message.text,
                from: Some(sender.clone()),
                relayed_from: Some(id.to_owned()),
                sender: Some(agent::contract::Sender::session(&sender)),
                ..Message::default()
            };
            Declaration::of(vec![
                ChunkDecl::generated()
                    .body(serde_json::to_value(&copy).unwrap_or_default())
                    .on(NewPlacement::instance(&target))
                    .on(NewPlacement::instance(Message::TYPE)),
                ChunkDecl::with_id(id).merge_body(json!({"delivered": target})),
            ])
        }
        Err(e) => {
            let why = crate::text::shown(&format!("{e:#}")).into_owned();
            Declaration::of(vec![
                ChunkDecl::with_id(id).merge_body(json!({"undelivered": why})),
            ])
        }
    };
    // delivered once: another relay (another host, or another of this
    // process's) that came first leaves this one refused
    let undelivered = |snap: &substrate::Snapshot<'_>| {
        let now = Message::parse_body(&snap.body(id)?.unwrap_or_default());
        match now.delivered.is_some() || now.undelivered.is_some() {
            true => Err(substrate::Error::InvalidRequest("delivered already".into())),
            false => Ok(()),
        }
    };
    if let Err(e) = db.commit_with(decl, None, undelivered) {
        tracing::debug!("message {id} not delivered here: {e}");
    }
}

/// The session message `id` was sent on (the one it sits on).
fn sent_from(db: &Substrate, id: &str) -> Option<String> {
    db.read(|snap| {
        let Some(item) = snap.chunk(id)? else {
            return Ok::<_, substrate::Error>(None);
        };
        for placement in &item.placements {
            if snap.is_instance_of(&placement.scope, "session")? {
                return Ok(Some(placement.scope.clone()));
            }
        }
        Ok(None)
    })
    .ok()
    .flatten()
}
