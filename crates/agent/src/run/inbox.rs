//! What reaches the agent from outside while it works: a host's
//! `interrupt`, `permission-decision` and `user-answer` chunks committed on
//! its session. One subscription; each new chunk someone else committed is
//! read and routed — an interrupt to a flag every wait watches, an answer
//! to whoever waits for it.

use crate::contract::{PermissionDecision, SessionItem, UserAnswer};
use protocol::{Client, Event, Events, ScopeOpts};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use tokio::sync::{oneshot, watch};

/// A host's answer to something the agent asked.
#[derive(Clone, Debug, PartialEq)]
pub enum Reply {
    /// To a `permission-request`.
    Permission(PermissionDecision),
    /// To a `user-question`.
    User(UserAnswer),
}

/// Answers waited for, and answers that came before anyone waited, by
/// the id of the chunk they answer (one lock: neither can slip between).
#[derive(Default)]
struct Pending {
    waiters: HashMap<String, oneshot::Sender<Reply>>,
    early: HashMap<String, Reply>,
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
        let (request, reply) = match SessionItem::of(item) {
            SessionItem::Interrupt(_) => {
                flag.send_replace(true);
                return;
            }
            SessionItem::PermissionDecision(d) => (d.request.clone(), Reply::Permission(d)),
            SessionItem::UserAnswer(a) => (a.request.clone(), Reply::User(a)),
            _ => return,
        };
        let mut pending = self.pending.lock().unwrap_or_else(PoisonError::into_inner);
        match pending.waiters.remove(&request) {
            Some(tx) => {
                let _ = tx.send(reply);
            }
            None => {
                pending.early.insert(request, reply);
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
    pub async fn answer_to(&self, request: &str) -> Option<Reply> {
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
