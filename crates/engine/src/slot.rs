//! The slot each live process holds: created before its process chunk is
//! committed, removed after its terminal status is. Through it the process
//! is asked to end, its awaiters wait, and its timeout clock is paused.

use crate::boundary::Reach;
use crate::config::ProcessId;
use crate::services::Service;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use tokio::sync::watch;

/// A claimed run's tree's fence: its root and the epoch it was claimed
/// under (its slot carries it; `claim.rs` judges commits by it).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Fence {
    pub root: crate::config::ProcessId,
    pub epoch: u64,
}

/// A live process: created before its process chunk is committed, removed
/// after its terminal status is.
pub(crate) struct Slot {
    pub id: ProcessId,
    pub parent: Option<ProcessId>,
    pub reach: Reach,
    /// The service this process is, when it is one.
    pub service: Option<Arc<Service>>,
    /// The claim its tree runs under, when it is a claimed run's.
    pub fence: Option<Fence>,
    /// Its trace context, when traces are on (its children's trace).
    pub trace: Option<protocol::trace::TraceParent>,
    end: watch::Sender<Option<String>>,
    done: watch::Sender<bool>,
    paused: watch::Sender<usize>,
    finish: watch::Sender<Option<Finish>>,
    /// The control groups its program runs in.
    group: std::sync::Mutex<Option<contain::bounds::Group>>,
    /// What the files it may write looked like before it started.
    effects: std::sync::Mutex<Option<effects::Snapshot>>,
}

/// How a program (or the service serving its run) says the run ended:
/// `Ok` completed, `Err` failed with the reason; with its result (an
/// `engine/output` body) to commit with the end.
#[derive(Clone, Debug)]
pub(crate) struct Finish {
    pub result: std::result::Result<(), String>,
    pub output: Option<serde_json::Value>,
    /// Fields merged into the process chunk's body with the end.
    pub body: Option<serde_json::Value>,
}

impl Finish {
    /// Completed, with no result of its own.
    pub fn completed() -> Finish {
        Finish {
            result: Ok(()),
            output: None,
            body: None,
        }
    }
}

impl Slot {
    /// The slot of process `id`, started by `parent`, reaching `reach`.
    pub fn new(
        id: ProcessId,
        parent: Option<ProcessId>,
        reach: Reach,
        service: Option<Arc<Service>>,
    ) -> Slot {
        Slot {
            id,
            parent,
            reach,
            service,
            fence: None,
            trace: None,
            end: watch::channel(None).0,
            done: watch::channel(false).0,
            paused: watch::channel(0).0,
            finish: watch::channel(None).0,
            group: std::sync::Mutex::default(),
            effects: std::sync::Mutex::default(),
        }
    }

    /// Keeps what its files looked like before it started.
    pub fn set_effects(&self, before: Option<effects::Snapshot>) {
        *self.effects.lock().unwrap_or_else(PoisonError::into_inner) = before;
    }

    /// What its files looked like before it started (taken once).
    pub fn take_effects(&self) -> Option<effects::Snapshot> {
        self.effects
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
    }

    /// The slot, fenced by `fence`.
    pub fn fenced(mut self, fence: Option<Fence>) -> Slot {
        self.fence = fence;
        self
    }

    /// The slot, traced by `trace`.
    pub fn traced(mut self, trace: Option<protocol::trace::TraceParent>) -> Slot {
        self.trace = trace;
        self
    }

    /// Records the control groups its program runs in.
    pub fn set_group(&self, group: Option<contain::bounds::Group>) {
        *self.group.lock().unwrap_or_else(PoisonError::into_inner) = group;
    }

    /// Which bound its run hit, if one did (read once: the counters
    /// move on).
    pub fn bound_hit(&self) -> Option<String> {
        let mut group = self.group.lock().unwrap_or_else(PoisonError::into_inner);
        group.as_mut().and_then(contain::bounds::hit)
    }

    /// Its control groups, handed back once it is gone.
    pub fn take_group(&self) -> Option<contain::bounds::Group> {
        self.group
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
    }

    /// Watches for a request to end the process (its reason).
    pub fn end_requests(&self) -> watch::Receiver<Option<String>> {
        self.end.subscribe()
    }

    /// Watches for the run's `finish` (first one wins).
    pub fn finishes(&self) -> watch::Receiver<Option<Finish>> {
        self.finish.subscribe()
    }

    /// Says the run finished (the `finish` op); the first one counts.
    pub fn request_finish(&self, how: Finish) {
        self.finish.send_if_modified(|current| {
            if current.is_none() {
                *current = Some(how);
                true
            } else {
                false
            }
        });
    }

    /// Watches how many waits hold the timeout clock still.
    pub fn pauses(&self) -> watch::Receiver<usize> {
        self.paused.subscribe()
    }

    /// Wakes the process's awaiters: its terminal status is committed.
    pub fn mark_done(&self) {
        self.done.send_replace(true);
    }

    /// Asks the supervisor to end the process with `reason` (first reason wins).
    pub fn request_end(&self, reason: &str) {
        self.end.send_if_modified(|current| {
            if current.is_none() {
                *current = Some(reason.to_owned());
                true
            } else {
                false
            }
        });
    }

    /// Resolves once the terminal status is committed.
    pub async fn ended(&self) {
        let mut rx = self.done.subscribe();
        let _ = rx.wait_for(|done| *done).await;
    }

    /// Stops the timeout clock until the guard drops.
    pub fn pause(self: &Arc<Self>) -> PauseGuard {
        self.paused.send_modify(|n| *n += 1);
        PauseGuard(Arc::clone(self))
    }
}

/// Holds a process's timeout clock still.
pub(crate) struct PauseGuard(Arc<Slot>);

impl Drop for PauseGuard {
    fn drop(&mut self) {
        self.0.paused.send_modify(|n| *n = n.saturating_sub(1));
    }
}

/// Every live process.
#[derive(Default)]
pub(crate) struct Slots(Mutex<HashMap<ProcessId, Arc<Slot>>>);

impl Slots {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<ProcessId, Arc<Slot>>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub fn get(&self, id: &str) -> Option<Arc<Slot>> {
        self.lock().get(id).cloned()
    }

    pub fn all(&self) -> Vec<Arc<Slot>> {
        self.lock().values().cloned().collect()
    }

    pub fn children(&self, parent: &str) -> Vec<Arc<Slot>> {
        self.lock()
            .values()
            .filter(|s| s.parent.as_deref() == Some(parent))
            .cloned()
            .collect()
    }

    pub fn insert(&self, slot: Arc<Slot>) {
        self.lock().insert(slot.id.clone(), slot);
    }

    pub fn remove(&self, id: &str) {
        self.lock().remove(id);
    }
}

/// The first value a watched `Option` takes (`None`: its sender is gone).
pub(crate) async fn first<T: Clone>(rx: &mut watch::Receiver<Option<T>>) -> Option<T> {
    rx.wait_for(Option::is_some)
        .await
        .ok()
        .and_then(|r| r.clone())
}
