//! Subscriptions: every commit the substrate makes durable is matched
//! against the subscribed scopes (by its `touched_scopes`; a `deep`
//! subscription also by every scope those reach up instance chains) and
//! delivered as `scope_changed`, filtered to what the subscriber can read.
//! Delivery never blocks: a full queue drops the event and owes the
//! subscriber a `lagged`.

use crate::boundary::{EffectiveBoundary, View};
use crate::error::{EngineError, Result};
use protocol::Event;
use serde_json::Value;
use std::collections::{HashMap, HashSet};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::task::{Context as TaskContext, Poll};
use substrate::ids::COMMITS_ROOT;
use substrate::{Commit, CommitId, PlacementOp, ScopeOpts, Snapshot, Substrate};
use tokio::sync::{broadcast, mpsc};

/// Events a host subscription buffers before it is owed a `lagged`.
pub(crate) const HOST_QUEUE: usize = 1024;

/// Where a subscription's events go.
pub(crate) enum Sink {
    /// A protocol connection: events as JSON lines.
    Lines(mpsc::Sender<String>),
    /// A host using the engine API: events as values.
    Events(mpsc::Sender<Event>),
}

impl Sink {
    /// Delivers without waiting; false when the queue is full or gone.
    fn offer(&self, event: Event) -> bool {
        match self {
            Sink::Lines(tx) => match serde_json::to_string(&event) {
                Ok(mut line) => {
                    line.push('\n');
                    tx.try_send(line).is_ok()
                }
                Err(_) => false,
            },
            Sink::Events(tx) => tx.try_send(event).is_ok(),
        }
    }
}

struct Sub {
    id: String,
    owner: Option<String>,
    scopes: Vec<String>,
    deep: bool,
    read: EffectiveBoundary,
    sink: Sink,
    owed_lag: AtomicBool,
}

impl Sub {
    fn deliver(&self, event: Event) {
        if self.owed_lag.load(Ordering::Relaxed) {
            let lag = Event::Lagged {
                subscription_ids: vec![self.id.clone()],
            };
            if !self.sink.offer(lag) {
                return;
            }
            self.owed_lag.store(false, Ordering::Relaxed);
        }
        if !self.sink.offer(event) {
            self.owed_lag.store(true, Ordering::Relaxed);
        }
    }
}

#[derive(Default)]
struct State {
    subs: HashMap<String, Arc<Sub>>,
    by_scope: HashMap<String, Vec<String>>,
    deep: usize,
    parked: HashMap<String, mpsc::Receiver<Event>>,
}

/// The registry.
#[derive(Default)]
pub(crate) struct Subscriptions {
    state: Mutex<State>,
    next: AtomicU64,
}

impl Subscriptions {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn add(
        &self,
        owner: Option<String>,
        scopes: Vec<String>,
        deep: bool,
        read: EffectiveBoundary,
        sink: Sink,
    ) -> String {
        let id = format!("sub_{}", self.next.fetch_add(1, Ordering::Relaxed) + 1);
        let sub = Arc::new(Sub {
            id: id.clone(),
            owner,
            scopes,
            deep,
            read,
            sink,
            owed_lag: AtomicBool::new(false),
        });
        let mut state = self.lock();
        for scope in &sub.scopes {
            state
                .by_scope
                .entry(scope.clone())
                .or_default()
                .push(id.clone());
        }
        if deep {
            state.deep += 1;
        }
        state.subs.insert(id.clone(), sub);
        id
    }

    pub(crate) fn remove(&self, id: &str) {
        let mut state = self.lock();
        remove_locked(&mut state, id);
    }

    pub(crate) fn remove_owner(&self, owner: &str) {
        let mut state = self.lock();
        let ids: Vec<String> = state
            .subs
            .values()
            .filter(|s| s.owner.as_deref() == Some(owner))
            .map(|s| s.id.clone())
            .collect();
        for id in ids {
            remove_locked(&mut state, &id);
        }
    }

    pub(crate) fn clear(&self) {
        *self.lock() = State::default();
    }

    pub(crate) fn park_receiver(&self, id: &str, rx: mpsc::Receiver<Event>) {
        self.lock().parked.insert(id.to_owned(), rx);
    }

    pub(crate) fn take_receiver(&self, id: &str) -> Option<EventStream> {
        self.lock().parked.remove(id).map(EventStream)
    }

    fn all(&self) -> Vec<Arc<Sub>> {
        self.lock().subs.values().cloned().collect()
    }
}

fn remove_locked(state: &mut State, id: &str) {
    if let Some(sub) = state.subs.remove(id) {
        for scope in &sub.scopes {
            if let Some(list) = state.by_scope.get_mut(scope) {
                list.retain(|s| s != id);
                if list.is_empty() {
                    state.by_scope.remove(scope);
                }
            }
        }
        if sub.deep {
            state.deep -= 1;
        }
    }
    state.parked.remove(id);
}

/// The events of one host subscription.
pub struct EventStream(mpsc::Receiver<Event>);

impl EventStream {
    /// The next event; `None` once the subscription has ended.
    pub async fn recv(&mut self) -> Option<Event> {
        self.0.recv().await
    }

    /// An event already queued, without waiting.
    pub fn try_recv(&mut self) -> Option<Event> {
        self.0.try_recv().ok()
    }
}

impl futures_core::Stream for EventStream {
    type Item = Event;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<Option<Event>> {
        self.0.poll_recv(cx)
    }
}

/// Starts the task that relays every commit of `db` to `subs`; it ends
/// once either is gone.
pub(crate) fn start_dispatcher(
    subs: Weak<Subscriptions>,
    db: Weak<Substrate>,
    mut commits: broadcast::Receiver<Arc<Commit>>,
) {
    tokio::spawn(async move {
        loop {
            let received = commits.recv().await;
            let (Some(subs), Some(db)) = (subs.upgrade(), db.upgrade()) else {
                return;
            };
            match received {
                Ok(commit) => {
                    if let Err(e) = subs.dispatch(&db, &commit) {
                        tracing::warn!("cannot relay commit {}: {e}", commit.id);
                    }
                }
                Err(broadcast::error::RecvError::Lagged(missed)) => {
                    tracing::warn!("subscribers missed {missed} commits");
                    for sub in subs.all() {
                        sub.deliver(Event::Lagged {
                            subscription_ids: vec![sub.id.clone()],
                        });
                    }
                }
                Err(broadcast::error::RecvError::Closed) => return,
            }
        }
    });
}

impl Subscriptions {
    /// Delivers one commit.
    pub(crate) fn dispatch(&self, db: &Substrate, commit: &Arc<Commit>) -> Result<()> {
        let (exact, deep_count) = {
            let state = self.lock();
            let mut matched: Vec<Arc<Sub>> = Vec::new();
            let mut seen = HashSet::new();
            for scope in &commit.touched_scopes {
                for id in state.by_scope.get(scope).into_iter().flatten() {
                    if seen.insert(id.clone())
                        && let Some(sub) = state.subs.get(id)
                    {
                        matched.push(Arc::clone(sub));
                    }
                }
            }
            (matched, state.deep)
        };
        let mut matched = exact;
        let removals = !commit.removed.is_empty()
            || commit
                .placements_modified
                .iter()
                .any(|p| p.op == PlacementOp::Removed);
        let needs_snapshot =
            deep_count > 0 || removals || matched.iter().any(|s| !s.read.is_open());
        if !needs_snapshot {
            for sub in &matched {
                sub.deliver(Event::ScopeChanged {
                    subscription_id: sub.id.clone(),
                    commit: Arc::clone(commit),
                });
            }
            return Ok(());
        }
        db.read(|snap| {
            if deep_count > 0 {
                self.add_deep_matches(snap, commit, &mut matched)?;
            }
            let mut view = View::new(snap);
            for sub in &matched {
                let commit = if sub.read.is_open() {
                    Arc::clone(commit)
                } else {
                    Arc::new(filtered(&mut view, commit, &sub.read)?)
                };
                sub.deliver(Event::ScopeChanged {
                    subscription_id: sub.id.clone(),
                    commit,
                });
            }
            if removals {
                self.invalidate(&mut view)?;
            }
            Ok(())
        })
    }

    /// The commits after `after` that subscription `id` matches, oldest
    /// first, each as the subscription is sent it (filtered to its read
    /// boundary): what a subscriber that got `lagged` missed. Deep matches
    /// are judged on the store as it is now.
    pub(crate) fn missed(
        &self,
        db: &Substrate,
        id: &str,
        after: CommitId,
    ) -> Result<Option<Vec<Arc<Commit>>>> {
        let Some(sub) = self.lock().subs.get(id).cloned() else {
            return Ok(None);
        };
        db.read(|snap| {
            let mut view = View::new(snap);
            let mut out = Vec::new();
            for commit in commits_after(snap, after)? {
                let touched = if sub.deep {
                    reached(snap, &commit)?
                } else {
                    commit.touched_scopes.iter().cloned().collect()
                };
                if !sub.scopes.iter().any(|s| touched.contains(s)) {
                    continue;
                }
                out.push(if sub.read.is_open() {
                    Arc::new(commit)
                } else {
                    Arc::new(filtered(&mut view, &commit, &sub.read)?)
                });
            }
            Ok(Some(out))
        })
    }

    /// Adds the deep subscriptions on any scope a touched scope reaches up
    /// instance chains.
    fn add_deep_matches(
        &self,
        snap: &Snapshot<'_>,
        commit: &Commit,
        matched: &mut Vec<Arc<Sub>>,
    ) -> Result<()> {
        let reached = reached(snap, commit)?;
        let state = self.lock();
        let mut have: HashSet<String> = matched.iter().map(|s| s.id.clone()).collect();
        for scope in &reached {
            for id in state.by_scope.get(scope).into_iter().flatten() {
                if let Some(sub) = state.subs.get(id)
                    && sub.deep
                    && have.insert(id.clone())
                {
                    matched.push(Arc::clone(sub));
                }
            }
        }
        Ok(())
    }

    /// Ends the subscriptions whose scopes were removed or fell out of reach.
    fn invalidate(&self, view: &mut View<'_, '_>) -> Result<()> {
        for sub in self.all() {
            let mut reason = None;
            for scope in &sub.scopes {
                if scope == substrate::ids::COMMITS_ROOT {
                    continue;
                }
                if !view.snap.exists(scope)? {
                    reason = Some("scope removed");
                    break;
                }
                if !sub.read.admits(view, scope)? {
                    reason = Some("scope unreachable");
                    break;
                }
            }
            if let Some(reason) = reason {
                self.remove(&sub.id);
                let event = Event::SubscriptionInvalid {
                    subscription_id: sub.id.clone(),
                    reason: reason.to_owned(),
                };
                sub.sink.offer(event);
            }
        }
        Ok(())
    }

    /// Forwards a process's `notify` to the subscribers of the process, of its
    /// ancestor processes, and of the scopes those sit on (deep subscriptions:
    /// of any scope up their instance chains).
    pub(crate) fn notify(&self, db: &Substrate, from: &str, data: Value) -> Result<()> {
        let (near, far) = db.read(|snap| {
            let mut near: HashSet<String> = HashSet::new();
            let mut process = Some(from.to_owned());
            while let Some(id) = process.take() {
                near.insert(id.clone());
                for p in snap.placements_of(&id)? {
                    near.insert(p.scope.clone());
                    if p.kind == substrate::PlacementType::Instance
                        && snap.is_instance_of(&p.scope, "engine/process")?
                    {
                        process = Some(p.scope);
                    }
                }
            }
            let far: HashSet<String> = snap.instance_ancestors(from)?.into_iter().collect();
            Ok::<_, crate::error::EngineError>((near, far))
        })?;
        let targets: Vec<Arc<Sub>> = {
            let state = self.lock();
            state
                .subs
                .values()
                .filter(|s| {
                    s.scopes
                        .iter()
                        .any(|scope| near.contains(scope) || (s.deep && far.contains(scope)))
                })
                .cloned()
                .collect()
        };
        for sub in targets {
            sub.deliver(Event::Notification {
                process: from.to_owned(),
                data: data.clone(),
            });
        }
        Ok(())
    }
}

/// Every scope `commit` touched and every scope those reach up instance
/// chains.
fn reached(snap: &Snapshot<'_>, commit: &Commit) -> Result<HashSet<String>> {
    let mut reached: HashSet<String> = HashSet::new();
    for scope in &commit.touched_scopes {
        if snap.exists(scope)? {
            reached.extend(snap.instance_ancestors(scope)?);
        } else {
            reached.insert(scope.clone());
        }
    }
    Ok(reached)
}

/// The commit records after `after`, oldest first (the log is read newest
/// first, a page at a time, back to `after`).
fn commits_after(snap: &Snapshot<'_>, after: CommitId) -> Result<Vec<Commit>> {
    let mut newest_first = Vec::new();
    let mut cursor = None;
    'pages: loop {
        let page = snap.scope(
            &[COMMITS_ROOT.to_owned()],
            &ScopeOpts {
                after: cursor,
                limit: Some(256),
                ..ScopeOpts::default()
            },
        )?;
        for item in &page.chunks {
            let commit: Commit = serde_json::from_value(item.body_value())
                .map_err(|e| EngineError::invalid(format!("unreadable commit record: {e}")))?;
            if commit.id <= after {
                break 'pages;
            }
            newest_first.push(commit);
        }
        match page.next_after {
            Some(next) => cursor = Some(next),
            None => break,
        }
    }
    newest_first.reverse();
    Ok(newest_first)
}

/// The commit with everything outside `read` left out.
fn filtered(view: &mut View<'_, '_>, commit: &Commit, read: &EffectiveBoundary) -> Result<Commit> {
    let mut keep =
        |id: &str| -> Result<bool> { Ok(!view.snap.exists(id)? || read.admits(view, id)?) };
    let mut out = commit.clone();
    out.chunks_modified = keep_ids(&commit.chunks_modified, &mut keep)?;
    out.created = keep_ids(&commit.created, &mut keep)?;
    out.removed = keep_ids(&commit.removed, &mut keep)?;
    out.touched_scopes = keep_ids(&commit.touched_scopes, &mut keep)?;
    let mut placements = Vec::new();
    for p in &commit.placements_modified {
        if keep(&p.chunk)? && keep(&p.scope)? {
            placements.push(p.clone());
        }
    }
    out.placements_modified = placements;
    Ok(out)
}

fn keep_ids(ids: &[String], keep: &mut impl FnMut(&str) -> Result<bool>) -> Result<Vec<String>> {
    let mut out = Vec::new();
    for id in ids {
        if keep(id)? {
            out.push(id.clone());
        }
    }
    Ok(out)
}
