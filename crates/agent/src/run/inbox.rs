//! What reaches the agent from outside while it works: a host's
//! `interrupt`, `permission-decision` and `user-answer` chunks committed on
//! its session, and the `message`s sent to it (kept for its next turn;
//! those sent while no run was there, from the session's history). One subscription; each new chunk someone else committed is
//! read and routed — an interrupt to a flag every wait watches, an answer
//! to whoever waits for it. When events were dropped (`lagged`), what they
//! would have said is read back from the session, so that no answer is
//! lost and the run never waits for one that came.

use crate::contract::{
    Body, HookAnswer, Interrupt, Message, PermissionDecision, SessionItem, UserAnswer,
};
use protocol::{ChunkItem, Client, Event, Events, PlacementType, ScopeOpts};
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, PoisonError};
use tokio::sync::{oneshot, watch};

/// A host's answer to something the agent asked.
#[derive(Clone, Debug, PartialEq)]
pub enum Reply {
    /// To a `permission-request`.
    Permission(PermissionDecision),
    /// To a `user-question`.
    User(UserAnswer),
    /// To a `hook-callback`.
    Hook(HookAnswer),
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
    /// Messages not yet brought to the model: their chunk, themselves.
    messages: Arc<Mutex<Vec<(String, Message)>>>,
}

impl Inbox {
    /// Subscribes to `session` and routes what others commit there;
    /// `history` is what the session held before (a read-back never takes
    /// an earlier run's interrupt or answer for this run's).
    pub async fn start(
        client: &Client,
        mut events: Events,
        session: &str,
        me: &str,
        history: &[ChunkItem],
    ) -> Result<Inbox, protocol::ClientError> {
        client.subscribe(&[session], false).await?;
        let mut seen: HashSet<String> = history
            .iter()
            .filter(|c| routed(c))
            .map(|c| c.id.clone())
            .collect();
        let (flag, interrupted) = watch::channel(false);
        let inbox = Inbox {
            interrupted,
            pending: Arc::default(),
            messages: Arc::new(Mutex::new(unread(history))),
        };
        let routing = inbox.clone();
        let client = client.clone();
        let (me, session) = (me.to_owned(), session.to_owned());
        tokio::spawn(async move {
            while let Some(event) = events.recv().await {
                match event {
                    Event::ScopeChanged { commit, .. } => {
                        if commit.dispatch_id.as_deref() == Some(me.as_str()) {
                            continue; // its own
                        }
                        // Only what the commit placed on the session itself
                        // is read (its record says so; what the run waits
                        // for is put there): a tool's output, on its
                        // process, costs no round trip.
                        for id in commit
                            .created
                            .iter()
                            .filter(|id| placed_on(&commit, id, &session))
                        {
                            if seen.insert(id.clone()) {
                                let author = commit.author.as_ref();
                                routing.route(&client, id, &flag, author).await;
                            }
                        }
                    }
                    Event::Lagged { .. } => {
                        for item in read_back(&client, &session).await {
                            if seen.insert(item.id.clone()) {
                                routing.route_item(&item, &flag, None);
                            }
                        }
                    }
                    _ => {}
                }
            }
        });
        Ok(inbox)
    }

    async fn route(
        &self,
        client: &Client,
        id: &str,
        flag: &watch::Sender<bool>,
        author: Option<&substrate::Author>,
    ) {
        let Ok(read) = client.scope(&[id], ScopeOpts::default()).await else {
            return;
        };
        if let Some(item) = read.scopes.first() {
            self.route_item(item, flag, author);
        }
    }

    /// Takes `item` (committed by `author`, when known) where it goes.
    fn route_item(
        &self,
        item: &ChunkItem,
        flag: &watch::Sender<bool>,
        author: Option<&substrate::Author>,
    ) {
        let (request, reply) = match SessionItem::of(item) {
            SessionItem::Interrupt(_) => {
                flag.send_replace(true);
                return;
            }
            SessionItem::Message(mut message) if message.incoming() => {
                vouched(&mut message, author);
                let mut messages = self.messages.lock().unwrap_or_else(PoisonError::into_inner);
                messages.push((item.id.clone(), message));
                return;
            }
            SessionItem::PermissionDecision(d) => (d.request.clone(), Reply::Permission(d)),
            SessionItem::UserAnswer(a) => (a.request.clone(), Reply::User(a)),
            SessionItem::HookAnswer(a) => (a.request.clone(), Reply::Hook(a)),
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

    /// The messages sent to the session not yet brought to the model
    /// (taken: each is brought once).
    pub fn take_messages(&self) -> Vec<(String, Message)> {
        std::mem::take(&mut *self.messages.lock().unwrap_or_else(PoisonError::into_inner))
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

/// Whether `item` is something others commit for a run: an interrupt, a
/// permission decision or an answer.
/// A message's sender as the commit that brought it says: one claiming a
/// person who neither made the commit nor was vouched for by its host
/// (`for`) is the commit's person's, through what they committed it.
fn vouched(message: &mut crate::contract::Message, author: Option<&substrate::Author>) {
    let (Some(author), Some(claimed)) = (author, message.sender.as_ref()) else {
        return;
    };
    let Some(person) = claimed.person.as_deref() else {
        return;
    };
    if person != author.person && author.on_behalf.as_deref() != Some(person) {
        message.sender = Some(crate::contract::Sender::person(
            author.on_behalf.as_deref().unwrap_or(&author.person),
            &author.via,
        ));
    }
}

fn routed(item: &ChunkItem) -> bool {
    [
        Interrupt::TYPE,
        PermissionDecision::TYPE,
        UserAnswer::TYPE,
        HookAnswer::TYPE,
        Message::TYPE,
    ]
    .iter()
    .any(|kind| item.is_on(kind, PlacementType::Instance))
}

/// The messages in a session's `history` no prompt has brought to the
/// model yet (sent while no run was there), in order.
fn unread(history: &[ChunkItem]) -> Vec<(String, Message)> {
    let brought: HashSet<String> = history
        .iter()
        .filter_map(|c| match SessionItem::of(c) {
            SessionItem::Prompt(p) => p.message,
            _ => None,
        })
        .collect();
    history
        .iter()
        .filter(|c| !brought.contains(&c.id))
        .filter_map(|c| match SessionItem::of(c) {
            SessionItem::Message(m) if m.incoming() => Some((c.id.clone(), m)),
            _ => None,
        })
        .collect()
}

/// Whether `commit` placed `id` as an instance on `session`. (Not its
/// type: a subscriber's copy of a record leaves out placements on scopes
/// outside its read boundary, the types among them.)
fn placed_on(commit: &substrate::Commit, id: &str, session: &str) -> bool {
    commit.placements_modified.iter().any(|p| {
        p.chunk == id
            && p.scope == session
            && p.op == substrate::PlacementOp::Added
            && p.kind == PlacementType::Instance
    })
}

/// What others have committed on `session` for a run, read back whole (a
/// read that fails reads nothing; the next event still routes).
async fn read_back(client: &Client, session: &str) -> Vec<Arc<ChunkItem>> {
    match client.scope(&[session], ScopeOpts::default()).await {
        Ok(read) => read.chunks.into_iter().filter(|c| routed(c)).collect(),
        Err(_) => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::contract::{Choice, Entry};
    use protocol::{ChunkDecl, Declaration, NewPlacement};
    use substrate::{Options, Substrate};

    fn on_session(entry: Entry) -> ChunkDecl {
        ChunkDecl::generated()
            .body(entry.body)
            .on(NewPlacement::instance("s_1"))
            .on(NewPlacement::instance(entry.kind))
    }

    #[tokio::test(flavor = "current_thread")]
    async fn an_answer_whose_event_was_dropped_is_read_back_from_the_session() {
        let dir = tempfile::tempdir().unwrap();
        // Room for one commit: a burst leaves the engine's relay behind,
        // and every subscriber gets `lagged` instead of what it missed.
        let options = Options {
            broadcast_capacity: 1,
            ..Options::default()
        };
        let db = Arc::new(Substrate::open_with(dir.path().join("substrate.db"), options).unwrap());
        let mut vocabulary = engine::vocabulary();
        vocabulary.extend(crate::vocabulary());
        for builtin in crate::BUILTINS {
            vocabulary.extend((builtin.chunks)());
        }
        db.init(vocabulary).unwrap();
        let engine =
            engine::Engine::open_with(Arc::clone(&db), engine::EngineConfig::new(dir.path()))
                .unwrap();
        let host = engine::Context::host();
        let session = ChunkDecl::with_id("s_1").on(NewPlacement::instance("session"));
        engine
            .commit(&host, Declaration::of(vec![session]))
            .unwrap();
        let (client, events) = engine.host_client();
        let inbox = Inbox::start(&client, events, "s_1", "p_me", &[])
            .await
            .unwrap();

        let decision = PermissionDecision {
            request: "c_asked".into(),
            decision: Choice::Allow,
            rule: None,
            message: None,
            ..PermissionDecision::default()
        };
        // The answer, then more, all before the relay runs again.
        engine
            .commit(
                &host,
                Declaration::of(vec![on_session(Entry::of(&decision))]),
            )
            .unwrap();
        for i in 0..20 {
            let answer = UserAnswer {
                request: format!("c_other_{i}"),
                text: "later".into(),
                by: None,
            };
            engine
                .commit(&host, Declaration::of(vec![on_session(Entry::of(&answer))]))
                .unwrap();
        }
        let reply = tokio::time::timeout(
            std::time::Duration::from_secs(10),
            inbox.answer_to("c_asked"),
        )
        .await
        .expect("the answer was lost with the dropped events");
        assert_eq!(reply, Some(Reply::Permission(decision)));
        assert!(!inbox.interrupted());
    }
}
