//! Following an agent run in the terminal: the answer streamed to stdout
//! as it comes, each tool call one compact line on stderr, status lines,
//! and the questions the agent asks (permission, `ask_user`) put to the
//! person on the terminal and answered by committing on the session.
//! Ctrl-C commits an `interrupt`; no end within two seconds, or a second
//! Ctrl-C, cancels the run.

use agent::contract::{
    Answer, Body, Entry, Interrupt, Notice, PermissionRequest, SessionItem, ToolResult, UserAnswer,
    UserQuestion,
};
use anyhow::Result;
use engine::{Context, Engine, EventStream};
use protocol::{Event, PlacementType, ScopeOpts};
use serde_json::Value;
use std::collections::HashMap;
use std::io::{IsTerminal, Write};
use std::time::Duration;
use substrate::{Commit, CommitId};

mod ask;

use crate::describe::summary;
use crate::spinner::Spinner;
use crate::style::{paint_err, shown};
use ask::{Asked, asked_on};

/// A tool call under way, as the person sees it.
struct Call {
    program: String,
    /// One line: the program and its input in a few words.
    line: String,
    input: Value,
}

/// At most this many lines of an edit's diff are shown.
const DIFF_LINES: usize = 12;

/// How long an interrupted run gets to end by itself.
const INTERRUPT_GRACE: Duration = Duration::from_secs(2);

/// Renders one run.
pub struct Renderer {
    engine: Engine,
    session: String,
    interactive: bool,
    /// Calls started and not ended: tool_use_id → the call.
    calls: HashMap<String, Call>,
    spinner: Spinner,
    /// Whether stdout is in the middle of a line.
    open_line: bool,
    /// Whether answer text was printed, and a tool ran since.
    printed: bool,
    gap: bool,
    stdout_tty: bool,
    /// JSON lines instead of text (`--output-format json | stream-json`).
    pub json: Option<crate::output::JsonOut>,
    /// The program driving the run over stdin (an Agent SDK program): it
    /// interrupts, answers permission questions and runs hook callbacks.
    pub sdk: Option<std::sync::Arc<crate::sdk::Link>>,
    /// The run's process, once following it.
    root: Option<String>,
    /// The last line a running tool printed.
    progress: Option<String>,
    /// Ctrl-C was pressed at a question.
    asked_ctrl_c: bool,
    /// The person interrupted the run (or cancelled it).
    pub interrupted: bool,
    /// Each sub-agent's process → the call that spawned it, once looked up.
    spawners: HashMap<String, String>,
    /// The last commit handled: one the store replays after a `lagged`
    /// is not handled again when it also comes live.
    seen: CommitId,
    /// The answer text printed from the deltas of the reply under way.
    streamed: String,
    /// After a `lagged` (deltas may be lost), text comes from the answers
    /// committed instead of the deltas, so that none is missing.
    from_commits: bool,
    /// A call that changes things (a program not read-only) ran and
    /// succeeded.
    pub changed: bool,
    /// A `shell` call failed: its result is read for what it says of why.
    failed_shell: bool,
}

impl Renderer {
    /// A renderer for runs on `session`, whose subscription started after
    /// commit `since`.
    pub fn new(engine: Engine, session: String, interactive: bool, since: CommitId) -> Renderer {
        Renderer {
            engine,
            session,
            interactive,
            calls: HashMap::new(),
            spinner: Spinner::new(),
            open_line: false,
            printed: false,
            gap: false,
            stdout_tty: std::io::stdout().is_terminal(),
            json: None,
            sdk: None,
            root: None,
            progress: None,
            asked_ctrl_c: false,
            interrupted: false,
            spawners: HashMap::new(),
            seen: since,
            streamed: String::new(),
            from_commits: false,
            changed: false,
            failed_shell: false,
        }
    }

    /// Renders until `process` ends; answers its final scope (its body,
    /// its output).
    pub async fn follow(
        &mut self,
        mut events: EventStream,
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
        // being rendered; this one keeps it until it is read.
        let mut sigint = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt())
            .map_err(|e| anyhow::anyhow!("cannot listen for Ctrl-C: {e}"))?;
        let link = self.sdk.clone();
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
                        while let Ok(Some(())) =
                            tokio::time::timeout(Duration::ZERO, sigint.recv()).await
                        {}
                        self.ctrl_c(&mut interrupts, &mut grace, process);
                    }
                }
                Some(()) = sigint.recv() => self.ctrl_c(&mut interrupts, &mut grace, process),
                () = program_interrupts(link.as_deref()) => {
                    if interrupts == 0 {
                        self.ctrl_c(&mut interrupts, &mut grace, process);
                    }
                }
                _ = ticks.tick() => self.tick(),
                () = tokio::time::sleep_until(deadline) => {
                    let _ = self.engine.cancel(&host, process);
                    grace = None;
                }
            }
        };
        while let Some(event) = events.try_recv() {
            self.on_event(event, process).await;
        }
        self.spinner.clear();
        if self.open_line {
            println!();
            self.open_line = false;
        }
        done.get(process)
            .cloned()
            .ok_or_else(|| anyhow::anyhow!("the engine did not report the run's end"))
    }

    /// Ctrl-C: the first interrupts the run (it gets a grace period to
    /// end by itself), the next cancels it.
    fn ctrl_c(
        &mut self,
        interrupts: &mut u32,
        grace: &mut Option<tokio::time::Instant>,
        process: &str,
    ) {
        *interrupts += 1;
        self.interrupted = true;
        if *interrupts == 1 {
            self.line("interrupting… (Ctrl-C again to stop at once)");
            self.interrupt();
            *grace = Some(tokio::time::Instant::now() + INTERRUPT_GRACE);
        } else {
            let _ = self.engine.cancel(&Context::host(), process);
        }
    }

    fn interrupt(&mut self) {
        let interrupt = Interrupt {
            text: "interrupted by the person".into(),
        };
        let session = self.session.clone();
        if let Err(e) = self.commit_on(&session, Entry::of(&interrupt)) {
            self.line(&format!("cannot interrupt: {e}"));
        }
    }

    async fn on_event(&mut self, event: Event, process: &str) {
        match event {
            Event::Notification {
                process: from,
                data,
            } => match Notice::parse(&data) {
                Some(notice) if from == process => self.on_notice(&notice),
                // A tool's output as it runs: its last line, for the
                // progress line.
                Some(Notice::Output { text, .. }) => {
                    if let Some(last) = text.lines().rfind(|l| !l.trim().is_empty()) {
                        self.progress = Some(last.trim().to_owned());
                    }
                }
                Some(Notice::Progress {
                    progress,
                    total,
                    message,
                }) => {
                    let line = Notice::progress_line(progress, total, message.as_deref());
                    self.progress = Some(line);
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
        if touched(Answer::TYPE) && touched(&self.session) && !self.from_commits {
            // The reply whose deltas were printed is committed.
            self.streamed.clear();
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
        match &self.json {
            Some(json) => json.user(&results, None),
            // What the person must know to fix a failure (a shell with no
            // network) is said under its line, not only to the model.
            None => {
                self.failed_shell = false;
                for note in results
                    .iter()
                    .filter_map(|r| r.text.lines().find(|l| l.starts_with("[no network:")))
                {
                    self.line(&format!("  {}", shown(note)));
                }
            }
        }
    }

    /// Events were dropped (this renderer fell behind): what they said is
    /// read back from the store, so that no line of the output and no
    /// question is lost.
    async fn catch_up(&mut self, subscriptions: &[String]) {
        if self.json.is_none() {
            self.from_commits = true;
        }
        let Some(sub) = subscriptions.first() else {
            return;
        };
        match self.engine.missed(sub, self.seen) {
            Ok(missed) => {
                for commit in missed.unwrap_or_default() {
                    self.on_commit(&commit).await;
                }
            }
            Err(e) => self.line(&format!("cannot read back what the run did: {e}")),
        }
    }

    /// Whether a commit touching `scopes` holds what this renderer acts
    /// on — answers and results for JSON, questions for a person — so
    /// that the rest of a run's commits cost no read.
    fn wants(&self, scopes: &[String]) -> bool {
        let streaming = self.json.as_ref().is_some_and(|j| j.stream);
        scopes.iter().any(|s| match s.as_str() {
            Answer::TYPE => streaming || self.from_commits,
            // (a failed shell's result may say why: no network)
            ToolResult::TYPE => streaming || self.failed_shell,
            agent::contract::Plan::TYPE => true,
            PermissionRequest::TYPE | UserQuestion::TYPE => self.interactive || self.sdk.is_some(),
            agent::contract::HookCallback::TYPE => self.sdk.is_some(),
            _ => false,
        })
    }

    fn on_notice(&mut self, notice: &Notice) {
        if let Some(json) = &self.json {
            json.partial(notice);
            return;
        }
        match notice {
            Notice::TextDelta { text, .. } if !self.from_commits => {
                self.streamed.push_str(text);
                self.print(text);
            }
            Notice::ToolStart {
                tool_use_id,
                program,
                input,
            } => {
                self.gap = true;
                let call = Call {
                    program: program.clone(),
                    line: format!("{} {}", shown(program), summary(program, input)),
                    input: input.clone(),
                };
                self.calls.insert(tool_use_id.clone(), call);
            }
            Notice::ToolEnd {
                tool_use_id,
                is_error,
                denied,
                allow,
                ..
            } => self.tool_end(tool_use_id, *is_error, denied.then_some(allow.as_slice())),
            Notice::Status { text } => self.line(&format!("· {}", shown(text))),
            Notice::Discard => self.line("· the reply broke off; it is being asked again"),
            Notice::ThinkingDelta { .. }
            | Notice::TextDelta { .. }
            | Notice::ToolInputDelta { .. }
            | Notice::Output { .. }
            | Notice::Progress { .. } => {}
        }
    }

    /// Answer text as it streams, on stdout.
    fn print(&mut self, text: &str) {
        self.spinner.clear();
        let mut out = std::io::stdout().lock();
        if self.gap && self.printed {
            // A new answer after tools: a paragraph of its own.
            let _ = out.write_all(if self.open_line { b"\n\n" } else { b"\n" });
        }
        self.gap = false;
        self.printed = true;
        let _ = out.write_all(shown(text).as_bytes());
        let _ = out.flush();
        if !text.is_empty() {
            self.open_line = !text.ends_with('\n');
        }
    }

    /// A committed answer's text, once text comes from the commits: what
    /// its deltas did not print already.
    fn print_committed(&mut self, text: &str) {
        let streamed = std::mem::take(&mut self.streamed);
        let rest = match text.strip_prefix(streamed.as_str()) {
            Some(rest) if !streamed.is_empty() => rest,
            _ => {
                self.gap = true;
                text
            }
        };
        self.print(rest);
    }

    /// A call's line, once it ended (an edit with its diff); a refused
    /// call's says so, with the rules that would allow it.
    fn tool_end(&mut self, id: &str, failed: bool, denied: Option<&[String]>) {
        let Some(call) = self.calls.remove(id) else {
            return;
        };
        self.progress = None;
        if let Some(allow) = denied {
            let how = match allow {
                [] => String::new(),
                rules => {
                    let flags: Vec<String> = rules
                        .iter()
                        .map(|r| format!("--allow {}", agent::permissions::shell::quote(r)))
                        .collect();
                    format!(" (allow it with {})", flags.join(" "))
                }
            };
            let mark = paint_err("33", "⊘");
            self.line(&format!("{mark} {} — denied{how}", call.line.trim_end()));
            return;
        }
        if !failed && !self.changed && !self.read_only(&call.program) {
            self.changed = true;
        }
        if failed && agent::names::program_of(&call.program) == "shell" {
            self.failed_shell = true;
        }
        let mark = if failed {
            paint_err("31", "✗")
        } else {
            paint_err("32", "✓")
        };
        self.line(&format!("{mark} {}", call.line.trim_end()));
        if !failed && call.program == "edit" {
            for line in edit_diff(&call.input) {
                self.line(&format!("  {line}"));
            }
        }
    }

    /// Whether `program` only reads (by its registration; an own tool or
    /// one not found counts as reading).
    pub fn read_only(&self, program: &str) -> bool {
        let name = agent::names::program_of(program);
        let read = self.engine.scope(
            &Context::host(),
            &[format!("program/{name}")],
            &ScopeOpts::default(),
        );
        read.ok()
            .and_then(|r| r.scopes.first().map(|c| c.body_value()))
            .and_then(|body| protocol::program::ProgramBody::parse(name, &body).ok())
            .is_none_or(|b| b.read_only)
    }

    /// A chunk committed under the session: a question is asked on the
    /// terminal; an answer is printed as JSON; a tool result is answered
    /// for the commit's user message.
    async fn on_created(&mut self, id: &str) -> Option<ToolResult> {
        let read = self
            .engine
            .scope(&Context::host(), &[id.to_owned()], &ScopeOpts::default())
            .ok()?;
        let chunk = read.scopes.first()?;
        let own = chunk.is_on(&self.session, PlacementType::Instance);
        match SessionItem::of(chunk) {
            SessionItem::Answer(answer) if self.json.is_none() => {
                if own {
                    self.print_committed(&answer.text);
                }
                None
            }
            SessionItem::Answer(answer) => {
                let parent = if own {
                    None
                } else {
                    Some(self.spawned_by(chunk)?)
                };
                if let Some(json) = &self.json {
                    json.assistant(&answer, parent.as_deref());
                }
                None
            }
            SessionItem::ToolResult(result) if own => Some(result),
            SessionItem::PermissionRequest(request)
                if self.sdk.as_ref().is_some_and(|l| l.prompts) =>
            {
                self.ask_program(id, chunk, Asked::Permission(request));
                None
            }
            SessionItem::HookCallback(callback) if self.sdk.is_some() => {
                self.ask_program(id, chunk, Asked::Hook(callback));
                None
            }
            SessionItem::UserQuestion(_) if self.sdk.is_some() => {
                let answer = UserAnswer {
                    by: Some(crate::sdk::BY_PROGRAM.into()),
                    request: id.to_owned(),
                    text: "(no one can answer questions through the program driving this run: \
                           decide yourself, and say what you assumed)"
                        .into(),
                };
                self.answer(&asked_on(chunk, &self.session), Entry::of(&answer));
                None
            }
            SessionItem::ToolResult(result) if self.json.is_some() => {
                let parent = self.spawned_by(chunk)?;
                if let Some(json) = &self.json {
                    json.user(std::slice::from_ref(&result), Some(&parent));
                }
                None
            }
            SessionItem::Plan(plan) => {
                self.plan(id, chunk, plan, own).await;
                None
            }
            SessionItem::PermissionRequest(request) if self.interactive => {
                self.ask_permission(id, &asked_on(chunk, &self.session), &request)
                    .await;
                None
            }
            SessionItem::UserQuestion(question) if self.interactive => {
                self.ask_question(id, &asked_on(chunk, &self.session), &question)
                    .await;
                None
            }
            SessionItem::ToolResult(_)
            | SessionItem::PermissionRequest(_)
            | SessionItem::UserQuestion(_)
            | SessionItem::Prompt(_)
            | SessionItem::ToolCall(_)
            | SessionItem::Context(_)
            | SessionItem::Compaction(_)
            | SessionItem::LlmCall(_)
            | SessionItem::BlockSave(_)
            | SessionItem::PermissionDecision(_)
            | SessionItem::UserAnswer(_)
            | SessionItem::Interrupt(_)
            | SessionItem::Todo(_)
            | SessionItem::HookCallback(_)
            | SessionItem::HookAnswer(_)
            | SessionItem::Run(_)
            | SessionItem::Unreadable { .. }
            | SessionItem::Other => None,
        }
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

    /// The progress line, while nothing else is said.
    fn tick(&mut self) {
        if self.json.is_some() || self.open_line {
            return;
        }
        let label = match (self.calls.values().next(), &self.progress) {
            (Some(call), Some(last)) => format!(
                "{} · {}",
                crate::style::cut(&call.line, 28),
                crate::style::cut(last, 36)
            ),
            (Some(call), None) => format!("running {}", crate::style::cut(&call.line, 60)),
            (None, _) => "thinking".to_owned(),
        };
        self.spinner.tick(&label);
    }

    /// A line on stderr, after ending stdout's open line on a terminal.
    fn line(&mut self, text: &str) {
        self.spinner.clear();
        self.end_line();
        eprintln!("  {text}");
    }

    fn end_line(&mut self) {
        if self.open_line && self.stdout_tty {
            println!();
            self.open_line = false;
        }
    }
}

/// What an `edit` call changes.
#[derive(serde::Deserialize, Default)]
#[serde(default)]
struct EditInput {
    old_string: String,
    new_string: String,
}

/// An edit's change as diff lines (`-` old, `+` new), at most
/// `DIFF_LINES` of them and a line saying how many more.
fn edit_diff(input: &Value) -> Vec<String> {
    let edit: EditInput = serde::Deserialize::deserialize(input).unwrap_or_default();
    let diff = similar::TextDiff::from_lines(&edit.old_string, &edit.new_string);
    let mut lines: Vec<String> = diff
        .iter_all_changes()
        .filter(|c| c.tag() != similar::ChangeTag::Equal)
        .map(|c| {
            let text = shown(c.value().trim_end_matches('\n'));
            match c.tag() {
                similar::ChangeTag::Delete => paint_err("31", &format!("- {text}")),
                _ => paint_err("32", &format!("+ {text}")),
            }
        })
        .collect();
    if lines.len() > DIFF_LINES {
        let more = lines.len() - DIFF_LINES;
        lines.truncate(DIFF_LINES);
        lines.push(format!(
            "… {more} more line{}",
            if more == 1 { "" } else { "s" }
        ));
    }
    lines
}

/// Resolves when the program driving the run asks it to stop (never,
/// when there is none).
async fn program_interrupts(link: Option<&crate::sdk::Link>) {
    match link {
        Some(link) => link.interrupted().await,
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
