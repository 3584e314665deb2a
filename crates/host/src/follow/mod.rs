//! Following a run to its end, for any front end: the run's events read
//! as they come (and read back from the substrate after a `lagged`),
//! what they say handed to a [`Sink`] — the terminal's text, JSON lines,
//! a page — and what the run asks (a permission, a question, a plan, a
//! hook) handed to an [`Answerer`] — the person at the terminal, the
//! program driving the run, nobody. An interrupt commits an `interrupt`;
//! no end within two seconds, or a second one, cancels the run.

pub mod answers;

use agent::contract::{
    Answer, Body, Entry, HookCallback, Interrupt, Notice, PermissionRequest, Plan, SessionItem,
    ToolCall, ToolResult, UserQuestion,
};
use anyhow::Result;
use engine::{Context, Engine, EventStream};
use protocol::{Event, PlacementType, ScopeOpts};
use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::time::{Duration, Instant};
use substrate::{Commit, CommitId};

/// How long an interrupted run gets to end by itself.
const INTERRUPT_GRACE: Duration = Duration::from_secs(2);

/// A run, once started: what a sink is told before its first event.
pub struct Begun<'a> {
    /// The engine running it.
    pub engine: &'a Engine,
    /// Its configuration (a command file's, when one expanded the prompt).
    pub config: &'a agent::AgentConfig,
    /// Its session.
    pub session: &'a str,
    /// Its process.
    pub process: &'a str,
    /// The MCP servers and where each stands, when the sink asked for
    /// them started before the run ([`Sink::wants_servers`]).
    pub servers: Option<&'a [serde_json::Value]>,
}

/// A run, once ended: its final body and scope.
pub struct Ended<'a> {
    /// The engine that ran it.
    pub engine: &'a Engine,
    /// Its configuration.
    pub config: &'a agent::AgentConfig,
    /// Its body: how it stopped, its totals.
    pub body: &'a agent::contract::RunBody,
    /// Its final scope (its output among it).
    pub done: &'a substrate::ScopeResult,
    /// Its session.
    pub session: &'a str,
    /// Its process.
    pub process: &'a str,
    /// When the person asked.
    pub started: Instant,
}

/// What a run shows as it happens: the terminal's text, JSON lines.
pub trait Sink: Send {
    /// The run started (before any event of it).
    fn begin(&mut self, _run: &Begun<'_>) -> Result<()> {
        Ok(())
    }
    /// Whether the MCP servers are to be started, and their statuses
    /// known, before the run begins (a `system/init` line names them).
    fn wants_servers(&self) -> bool {
        false
    }
    /// One of the run's own notices (deltas, a tool's start and end, …).
    fn notice(&mut self, notice: &Notice);
    /// A running tool's latest line: its output's last, or its progress.
    fn progress(&mut self, _line: String) {}
    /// A running tool's output as it comes (the `shell` program's), whole.
    fn tool_output(&mut self, _text: &str) {}
    /// A reply was committed on the session (live).
    fn reply_committed(&mut self) {}
    /// Whether committed answers are wanted (each costs a read).
    fn wants_answers(&self) -> bool;
    /// Whether committed tool results are wanted (each costs a read).
    fn wants_results(&self) -> bool;
    /// Whether committed tool calls are wanted (a sink that does not
    /// hear the run's notices: `hc attach`); each costs a read.
    fn wants_calls(&self) -> bool {
        false
    }
    /// A committed call of the run's own (it is running, or has run).
    fn call(&mut self, _call: &ToolCall) {}
    /// Whether sub-agents' answers and results are wanted (each costs a
    /// lookup of the call that spawned the sub-agent).
    fn wants_sub_agents(&self) -> bool {
        false
    }
    /// A committed answer: the run's own (`parent` none) or a
    /// sub-agent's (the id of the call that spawned it).
    fn answer(&mut self, answer: &Answer, parent: Option<&str>);
    /// The tool results of one commit: the run's own (`parent` none, said
    /// for every commit read, even with none) or a sub-agent's.
    fn results(&mut self, results: &[ToolResult], parent: Option<&str>);
    /// A plan the agent made (its own, or a sub-agent's).
    fn plan(&mut self, _plan: &Plan, _own: bool) {}
    /// Events were dropped; what they said is read back.
    fn lagged(&mut self) {}
    /// A moment passed (every 120 ms): a progress line may move.
    fn tick(&mut self) {}
    /// A line of the host's own ("interrupting…", "cannot answer: …").
    fn say(&mut self, text: &str) {
        eprintln!("  {text}");
    }
    /// A question is about to take the terminal: nothing half-drawn.
    fn pause(&mut self) {}
    /// The run's events are over: what is half-drawn is finished.
    fn finish(&mut self) {}
    /// The run's outcome.
    fn ended(&mut self, ended: &Ended<'_>) -> Result<()>;
}

/// What a run asks.
pub enum Question {
    /// Whether a call may run.
    Permission(PermissionRequest),
    /// The agent's question to the person (`ask_user`).
    User(UserQuestion),
    /// A plan waiting for approval.
    Plan(Plan),
    /// A hook the driving program registered, to run.
    Hook(HookCallback),
}

/// Where a question was asked, for the answerer to answer it there.
pub struct Asked<'a> {
    /// The engine running the run.
    pub engine: &'a Engine,
    /// The question's chunk.
    pub id: &'a str,
    /// The session (or the sub-agent's process) it was asked on.
    pub on: &'a str,
    /// The sink the run is shown on (a question on the terminal clears
    /// its line first, and says what became of it there).
    pub sink: &'a mut dyn Sink,
}

/// What became of a question.
pub enum Outcome {
    /// Answered (or left to another host).
    Done,
    /// The person pressed Ctrl-C at it: the run is interrupted.
    CtrlC,
}

/// A question's outcome, to come.
pub type Answering<'a> = Pin<Box<dyn Future<Output = Outcome> + Send + 'a>>;

/// Who answers what a run asks: the person, the driving program, nobody.
pub trait Answerer: Send + Sync {
    /// Whether permission requests and questions are read at all.
    fn takes_questions(&self) -> bool;
    /// Whether hook callbacks are read.
    fn takes_hooks(&self) -> bool {
        false
    }
    /// Whether Ctrl-C (SIGINT) interrupts the run.
    fn hears_ctrl_c(&self) -> bool {
        false
    }
    /// Resolves when the run is to be interrupted (never, by default).
    fn interrupts(&self) -> Pin<Box<dyn Future<Output = ()> + Send + '_>> {
        Box::pin(std::future::pending())
    }
    /// Answers `question` where it was asked — or leaves it.
    fn answer<'a>(&'a self, asked: Asked<'a>, question: Question) -> Answering<'a>;
}

/// Nobody to answer: permissions and questions are not read (the agent,
/// told no one is there, does not ask them), hooks not run, and a plan
/// waiting for approval is answered not approved, so the run goes on.
pub struct Nobody;

impl Answerer for Nobody {
    fn takes_questions(&self) -> bool {
        false
    }

    fn answer<'a>(&'a self, asked: Asked<'a>, question: Question) -> Answering<'a> {
        if let Question::Plan(_) = question {
            let answer = agent::contract::UserAnswer {
                request: asked.id.to_owned(),
                text: String::new(),
                by: None,
            };
            answers::answer(asked.engine, asked.sink, asked.on, Entry::of(&answer));
        }
        Box::pin(async { Outcome::Done })
    }
}

/// Follows one run.
pub struct Follower<'s> {
    engine: Engine,
    session: String,
    sink: &'s mut dyn Sink,
    answerer: &'s dyn Answerer,
    /// The run's process, once following it.
    root: Option<String>,
    /// Ctrl-C was pressed at a question.
    asked_ctrl_c: bool,
    /// The run was interrupted (or cancelled).
    pub interrupted: bool,
    /// Each sub-agent's process → the call that spawned it, once looked up.
    spawners: HashMap<String, String>,
    /// The last commit handled: one the store replays after a `lagged`
    /// is not handled again when it also comes live.
    seen: CommitId,
}

impl<'s> Follower<'s> {
    /// A follower of runs on `session`, whose subscription started after
    /// commit `since`.
    pub fn new(
        engine: Engine,
        session: String,
        since: CommitId,
        sink: &'s mut dyn Sink,
        answerer: &'s dyn Answerer,
    ) -> Follower<'s> {
        Follower {
            engine,
            session,
            sink,
            answerer,
            root: None,
            asked_ctrl_c: false,
            interrupted: false,
            spawners: HashMap::new(),
            seen: since,
        }
    }

    /// Follows until `process` ends (`events` from `subscription`);
    /// answers its final scope (its body, its output).
    pub async fn follow(
        &mut self,
        mut events: EventStream,
        subscription: &str,
        process: &str,
    ) -> Result<substrate::ScopeResult> {
        let host = Context::host();
        self.root = Some(process.to_owned());
        let ids = vec![process.to_owned()];
        let engine = self.engine.clone();
        let ended = engine.await_processes(&host, &ids);
        tokio::pin!(ended);
        let mut interrupts = 0;
        let mut grace: Option<tokio::time::Instant> = None;
        let mut ticks = tokio::time::interval(Duration::from_millis(120));
        // One listener for the whole run: a `ctrl_c()` future made anew each
        // time round the loop misses a Ctrl-C that comes while an event is
        // being handled; this one keeps it until it is read.
        let mut sigint = self
            .answerer
            .hears_ctrl_c()
            .then(ctrl_c_listener)
            .transpose()?;
        let answerer = self.answerer;
        let done = loop {
            let deadline = grace
                .unwrap_or_else(|| tokio::time::Instant::now() + Duration::from_secs(86_400 * 365));
            tokio::select! {
                done = &mut ended => break done?,
                Some(event) = events.recv() => {
                    self.on_event(event, process).await;
                    if std::mem::take(&mut self.asked_ctrl_c) {
                        // The question heard this Ctrl-C; the listener
                        // holds it too: once, not twice.
                        if let Some(sigint) = &mut sigint {
                            while let Ok(Some(())) =
                                tokio::time::timeout(Duration::ZERO, sigint.recv()).await
                            {}
                        }
                        self.ctrl_c(&mut interrupts, &mut grace, process);
                    }
                }
                Some(()) = ctrl_c(&mut sigint) => self.ctrl_c(&mut interrupts, &mut grace, process),
                () = answerer.interrupts() => {
                    if interrupts == 0 {
                        self.ctrl_c(&mut interrupts, &mut grace, process);
                    }
                }
                _ = ticks.tick() => self.sink.tick(),
                () = tokio::time::sleep_until(deadline) => {
                    let _ = self.engine.cancel(&host, process);
                    grace = None;
                }
            }
        };
        while let Some(event) = events.try_recv() {
            self.on_event(event, process).await;
        }
        // What the run committed that its events have not brought yet
        // (the end is known as soon as it is committed; the event of the
        // same commit may come after): read back, each commit once.
        self.read_back(subscription).await;
        self.sink.finish();
        done.get(process)
            .cloned()
            .ok_or_else(|| anyhow::anyhow!("the engine did not report the run's end"))
    }

    /// Shows what the run `process` did before this follower was made
    /// (every commit of `subscription` after the one it was made at, as
    /// [`follow`](Self::follow) would have shown it live); a question still
    /// open is put to the answerer. For a host that attaches to a run
    /// under way (`hc attach`).
    pub async fn replay(&mut self, subscription: &str, process: &str) {
        self.root = Some(process.to_owned());
        self.read_back(subscription).await;
    }

    /// An interrupt: the first interrupts the run (it gets a grace period
    /// to end by itself), the next cancels it.
    fn ctrl_c(
        &mut self,
        interrupts: &mut u32,
        grace: &mut Option<tokio::time::Instant>,
        process: &str,
    ) {
        *interrupts += 1;
        self.interrupted = true;
        if *interrupts == 1 {
            self.sink
                .say("interrupting… (Ctrl-C again to stop at once)");
            let interrupt = Interrupt {
                text: "interrupted by the person".into(),
            };
            let on = self.session.clone();
            if let Err(e) = answers::commit_on(&self.engine, &on, Entry::of(&interrupt)) {
                self.sink.say(&format!("cannot interrupt: {e}"));
            }
            *grace = Some(tokio::time::Instant::now() + INTERRUPT_GRACE);
        } else {
            let _ = self.engine.cancel(&Context::host(), process);
        }
    }

    async fn on_event(&mut self, event: Event, process: &str) {
        match event {
            Event::Notification {
                process: from,
                data,
            } => match Notice::parse(&data) {
                Some(notice) if from == process => self.sink.notice(&notice),
                // A tool's output as it runs: its last line, for the
                // progress line.
                Some(Notice::Output { text, .. }) => {
                    self.sink.tool_output(&text);
                    if let Some(last) = text.lines().rfind(|l| !l.trim().is_empty()) {
                        self.sink.progress(last.trim().to_owned());
                    }
                }
                Some(Notice::Progress {
                    progress,
                    total,
                    message,
                }) => {
                    let line = Notice::progress_line(progress, total, message.as_deref());
                    self.sink.progress(line);
                }
                // A sub-agent's notices, and notices of no vocabulary of
                // ours (a user's program may notify anything): not shown.
                Some(_) | None => {}
            },
            Event::ScopeChanged { commit, .. } => self.on_commit(&commit).await,
            Event::Lagged { subscription_ids } => self.catch_up(&subscription_ids).await,
            // A service's events: never sent to a host.
            Event::SubscriptionInvalid { .. } | Event::Run { .. } | Event::Cancel { .. } => {}
        }
    }

    /// A commit on the session (live, or replayed after a `lagged`).
    async fn on_commit(&mut self, commit: &Commit) {
        if commit.id <= self.seen {
            return;
        }
        self.seen = commit.id;
        let touched = |scope: &str| commit.touched_scopes.iter().any(|s| s == scope);
        if touched(Answer::TYPE) && touched(&self.session) {
            self.sink.reply_committed();
        }
        if commit.dispatch_id.is_none() || !self.wants(&commit.touched_scopes) {
            return;
        }
        let mut results = Vec::new();
        for id in &commit.created {
            if let Some(result) = self.on_created(id).await {
                results.push(result);
            }
        }
        self.sink.results(&results, None);
    }

    /// Events were dropped (this follower fell behind): what they said is
    /// read back from the store, so that nothing shown and no question is
    /// lost.
    async fn catch_up(&mut self, subscriptions: &[String]) {
        self.sink.lagged();
        if let Some(sub) = subscriptions.first() {
            self.read_back(sub).await;
        }
    }

    /// Every commit of `subscription` after the last one handled, read
    /// from the store and handled in order.
    async fn read_back(&mut self, subscription: &str) {
        match self.engine.missed(subscription, self.seen) {
            Ok(missed) => {
                for commit in missed.unwrap_or_default() {
                    self.on_commit(&commit).await;
                }
            }
            Err(e) => self
                .sink
                .say(&format!("cannot read back what the run did: {e}")),
        }
    }

    /// Whether a commit touching `scopes` holds what the sink or the
    /// answerer acts on, so that the rest of a run's commits cost no read.
    fn wants(&self, scopes: &[String]) -> bool {
        scopes.iter().any(|s| match s.as_str() {
            Answer::TYPE => self.sink.wants_answers(),
            ToolResult::TYPE => self.sink.wants_results(),
            ToolCall::TYPE => self.sink.wants_calls(),
            Plan::TYPE => true,
            PermissionRequest::TYPE | UserQuestion::TYPE => self.answerer.takes_questions(),
            HookCallback::TYPE => self.answerer.takes_hooks(),
            _ => false,
        })
    }

    /// A chunk committed under the session: an answer or a sub-agent's
    /// result handed to the sink, a question to the answerer; the run's
    /// own tool result answered for the commit's results.
    async fn on_created(&mut self, id: &str) -> Option<ToolResult> {
        let read = self
            .engine
            .scope(&Context::host(), &[id.to_owned()], &ScopeOpts::default())
            .ok()?;
        let chunk = read.scopes.first()?;
        let own = chunk.is_on(&self.session, PlacementType::Instance);
        let question = match SessionItem::of(chunk) {
            SessionItem::Answer(answer) => {
                if own {
                    self.sink.answer(&answer, None);
                } else if self.sink.wants_sub_agents() {
                    let parent = self.spawned_by(chunk)?;
                    self.sink.answer(&answer, Some(&parent));
                }
                return None;
            }
            SessionItem::ToolCall(call) if own => {
                self.sink.call(&call);
                return None;
            }
            SessionItem::ToolResult(result) if own => return Some(result),
            SessionItem::ToolResult(result) => {
                if self.sink.wants_sub_agents() {
                    let parent = self.spawned_by(chunk)?;
                    self.sink
                        .results(std::slice::from_ref(&result), Some(&parent));
                }
                return None;
            }
            SessionItem::Plan(plan) => {
                self.sink.plan(&plan, own);
                if !plan.ask {
                    return None;
                }
                Question::Plan(plan)
            }
            SessionItem::PermissionRequest(request) => Question::Permission(request),
            SessionItem::UserQuestion(question) => Question::User(question),
            SessionItem::HookCallback(callback) => Question::Hook(callback),
            _ => return None,
        };
        let on = answers::asked_on(chunk, &self.session);
        let asked = Asked {
            engine: &self.engine,
            id,
            on: &on,
            sink: &mut *self.sink,
        };
        if let Outcome::CtrlC = self.answerer.answer(asked, question).await {
            self.asked_ctrl_c = true;
        }
        None
    }

    /// For a sub-agent's chunk: the `tool_use_id` of the call that spawned
    /// the sub-agent (its session is its process; the call is on its
    /// parent's session — the run's session, or the parent's process).
    /// Looked up once per sub-agent: its parent from its placements, the
    /// call among the parent's calls.
    fn spawned_by(&mut self, item: &substrate::ChunkItem) -> Option<String> {
        let child = own_process(&item.placements)?;
        if let Some(known) = self.spawners.get(&child) {
            return Some(known.clone());
        }
        let placements = self.engine.db().read(|s| s.placements_of(&child)).ok()?;
        let parent = own_process(&placements)?;
        let session = if self.root.as_deref() == Some(parent.as_str()) {
            self.session.clone()
        } else {
            parent
        };
        let calls = self
            .engine
            .scope(
                &Context::host(),
                &[session, "tool-call".to_owned()],
                &ScopeOpts::default(),
            )
            .ok()?;
        let call = calls.chunks.iter().find_map(|c| match SessionItem::of(c) {
            SessionItem::ToolCall(call) if call.process.as_deref() == Some(child.as_str()) => {
                Some(call.tool_use_id)
            }
            _ => None,
        })?;
        self.spawners.insert(child, call.clone());
        Some(call)
    }
}

/// A listener for Ctrl-C (SIGINT), kept for the whole run.
fn ctrl_c_listener() -> Result<tokio::signal::unix::Signal> {
    tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt())
        .map_err(|e| anyhow::anyhow!("cannot listen for Ctrl-C: {e}"))
}

/// The next Ctrl-C (never, when none is listened for).
async fn ctrl_c(sigint: &mut Option<tokio::signal::unix::Signal>) -> Option<()> {
    match sigint {
        Some(sigint) => sigint.recv().await,
        None => std::future::pending().await,
    }
}

/// The process a chunk is an instance of (a sub-agent's session).
fn own_process(placements: &[substrate::Placement]) -> Option<String> {
    placements
        .iter()
        .find(|p| p.kind == PlacementType::Instance && p.scope.starts_with("p_"))
        .map(|p| p.scope.clone())
}
