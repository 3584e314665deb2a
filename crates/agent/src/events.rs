//! What reaches the agent from outside while it works: a host's
//! `interrupt`, `permission-decision` and `user-answer` chunks committed on
//! its session. One subscription; each new chunk someone else committed is
//! read and routed — an interrupt to a flag every wait watches, an answer
//! to whoever waits for it.

use protocol::{Client, Event, Events, PlacementType, ScopeOpts};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use tokio::sync::{oneshot, watch};

/// Answers waited for, and answers that came before anyone waited, by
/// the id of the chunk they answer (one lock: neither can slip between).
#[derive(Default)]
struct Pending {
    waiters: HashMap<String, oneshot::Sender<Value>>,
    early: HashMap<String, Value>,
}

/// The routing of a session's events.
#[derive(Clone)]
pub struct Inbox {
    interrupted: watch::Receiver<bool>,
    pending: Arc<Mutex<Pending>>,
}

impl Inbox {
    /// Subscribes to `session` and routes what others commit there.
    pub async fn start(
        client: &Client,
        mut events: Events,
        session: &str,
        me: &str,
    ) -> Result<Inbox, protocol::ClientError> {
        client.subscribe(&[session], false).await?;
        let (flag, interrupted) = watch::channel(false);
        let inbox = Inbox {
            interrupted,
            pending: Arc::default(),
        };
        let routing = inbox.clone();
        let client = client.clone();
        let me = me.to_owned();
        tokio::spawn(async move {
            while let Some(event) = events.recv().await {
                let Event::ScopeChanged { commit, .. } = event else {
                    continue;
                };
                if commit.dispatch_id.as_deref() == Some(me.as_str()) {
                    continue; // its own
                }
                for id in &commit.created {
                    routing.route(&client, id, &flag).await;
                }
            }
        });
        Ok(inbox)
    }

    async fn route(&self, client: &Client, id: &str, flag: &watch::Sender<bool>) {
        let Ok(read) = client.scope(&[id], ScopeOpts::default()).await else {
            return;
        };
        let Some(item) = read.scopes.first() else {
            return;
        };
        if item.is_on("interrupt", PlacementType::Instance) {
            flag.send_replace(true);
            return;
        }
        let answers = ["permission-decision", "user-answer"];
        if !answers
            .iter()
            .any(|t| item.is_on(t, PlacementType::Instance))
        {
            return;
        }
        let body = item.body_value();
        let Some(request) = body["request"].as_str().map(str::to_owned) else {
            return;
        };
        let mut pending = self.pending.lock().unwrap_or_else(PoisonError::into_inner);
        match pending.waiters.remove(&request) {
            Some(tx) => {
                let _ = tx.send(body);
            }
            None => {
                pending.early.insert(request, body);
            }
        }
    }

    /// Whether a host asked the run to stop.
    pub fn interrupted(&self) -> bool {
        *self.interrupted.borrow()
    }

    /// Resolves when a host asks the run to stop.
    pub async fn wait_interrupt(&self) {
        let mut rx = self.interrupted.clone();
        let _ = rx.wait_for(|stop| *stop).await;
    }

    /// The answer to the chunk `request` (a permission request, a
    /// question), or `None` when the run is interrupted first.
    pub async fn answer_to(&self, request: &str) -> Option<Value> {
        let (tx, rx) = oneshot::channel();
        {
            let mut pending = self.pending.lock().unwrap_or_else(PoisonError::into_inner);
            if let Some(early) = pending.early.remove(request) {
                return Some(early);
            }
            pending.waiters.insert(request.to_owned(), tx);
        }
        tokio::select! {
            answer = rx => answer.ok(),
            () = self.wait_interrupt() => None,
        }
    }
}
