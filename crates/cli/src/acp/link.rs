//! The line to the editor: every message `hc` writes goes out whole, one
//! line, under stdout's lock; `hc`'s own requests to the editor
//! (`session/request_permission`) wait for their answers by id; and each
//! session's interrupt (`session/cancel`) reaches its running turn.

use hc_acp::rpc::{self, RpcError};
use hc_acp::schema::{SessionNotification, SessionUpdate};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use tokio::sync::{Notify, oneshot};

/// Why a request was withdrawn (`session/cancel`).
pub const WITHDRAWN: &str = "withdrawn: the turn was cancelled";

/// Why a request has no answer: the editor closed its input.
pub const GONE: &str = "the editor closed its input: it cannot answer";

/// What became of a request to the editor.
pub type Reply = Result<Value, String>;

/// A request to the editor waiting for its answer.
struct Pending {
    /// The session it is for (withdrawn when that session is cancelled).
    session: String,
    /// Who waits.
    answer: oneshot::Sender<Reply>,
}

/// The link to the editor.
#[derive(Default)]
pub struct Link {
    next: AtomicU64,
    pending: Mutex<HashMap<u64, Pending>>,
    /// Each session's interrupt, while a turn runs on it.
    interrupts: Mutex<HashMap<String, Arc<Notify>>>,
    /// The editor closed its input: it answers nothing more.
    closed: AtomicBool,
    /// The session whose turn began last (the editor's files are read
    /// for it).
    current: Mutex<Option<String>>,
    /// The tool calls a question showed the editor before they began.
    asked_about: Mutex<std::collections::HashSet<String>>,
}

/// Writes `line` and a newline to stdout, whole (a closed stdout: the
/// editor is gone, and stdin's end ends `hc`).
pub fn emit(line: &str) {
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(line.as_bytes());
    let _ = out.write_all(b"\n");
    let _ = out.flush();
}

/// Answers request `id` with `result`.
pub fn answer(id: &Value, result: Value) {
    emit(&rpc::result(id, result));
}

/// Answers request `id` with `error`.
pub fn fail(id: &Value, error: &RpcError) {
    emit(&rpc::error(id, error));
}

/// Tells the editor of `update` on `session`.
pub fn update(session: &str, update: SessionUpdate) {
    let note = SessionNotification {
        session_id: session.to_owned(),
        update,
    };
    let params = serde_json::to_value(&note).unwrap_or(Value::Null);
    emit(&rpc::notification("session/update", params));
}

impl Link {
    /// Sends request `method` (for `session`) and waits for its answer.
    pub async fn request(&self, session: &str, method: &str, params: Value) -> Reply {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        {
            // (under the lock `close` clears: no waiter is left behind)
            let mut pending = self.pending.lock().unwrap_or_else(PoisonError::into_inner);
            if self.closed.load(Ordering::Acquire) {
                return Err(GONE.into());
            }
            let session = session.to_owned();
            pending.insert(
                id,
                Pending {
                    session,
                    answer: tx,
                },
            );
        }
        emit(&rpc::request(&json!(id), method, params));
        rx.await.unwrap_or_else(|_| Err(GONE.into()))
    }

    /// An answer from the editor: to whoever waits for it.
    pub fn resolve(&self, id: &Value, outcome: Result<Value, RpcError>) {
        let waiter = id.as_u64().and_then(|id| {
            self.pending
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .remove(&id)
        });
        match waiter {
            Some(waiter) => {
                let _ = waiter.answer.send(outcome.map_err(|e| e.message));
            }
            None => eprintln!("hc: an answer to no request of hc's ({id}) is ignored"),
        }
    }

    /// Every request waiting on `session` withdrawn: each ends `cancelled`
    /// at once (the editor's late answer is then ignored).
    pub fn withdraw(&self, session: &str) {
        let mut pending = self.pending.lock().unwrap_or_else(PoisonError::into_inner);
        let ids: Vec<u64> = (pending.iter())
            .filter(|(_, p)| p.session == session)
            .map(|(id, _)| *id)
            .collect();
        for id in ids {
            if let Some(waiter) = pending.remove(&id) {
                let _ = waiter.answer.send(Err(WITHDRAWN.into()));
            }
        }
    }

    /// The editor closed its input: every request waiting fails, and
    /// every later one at once.
    pub fn close(&self) {
        let mut pending = self.pending.lock().unwrap_or_else(PoisonError::into_inner);
        self.closed.store(true, Ordering::Release);
        pending.clear();
    }

    /// `session`'s interrupt, made for a turn starting on it.
    pub fn interrupt_for(&self, session: &str) -> Arc<Notify> {
        let notify = Arc::new(Notify::new());
        self.interrupts
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(session.to_owned(), Arc::clone(&notify));
        notify
    }

    /// Interrupts the turn running on `session` (none: nothing).
    pub fn interrupt(&self, session: &str) {
        let interrupts = self
            .interrupts
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(notify) = interrupts.get(session) {
            notify.notify_one();
        }
    }

    /// Interrupts every running turn (the editor is gone).
    pub fn interrupt_all(&self) {
        let interrupts = self
            .interrupts
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        for notify in interrupts.values() {
            notify.notify_one();
        }
    }

    /// A question about tool call `id` showed it to the editor.
    pub fn asked_about(&self, id: &str) {
        self.asked_about
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(id.to_owned());
    }

    /// Whether a question showed tool call `id` to the editor (once).
    pub fn was_asked_about(&self, id: &str) -> bool {
        self.asked_about
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(id)
    }

    /// A turn begins on `session`.
    pub fn set_current(&self, session: &str) {
        *self.current.lock().unwrap_or_else(PoisonError::into_inner) = Some(session.to_owned());
    }

    /// The session whose turn began last.
    pub fn current(&self) -> Option<String> {
        self.current
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// The turn on `session` ended.
    pub fn ended(&self, session: &str) {
        self.interrupts
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(session);
    }
}
