//! A session as telemetry, read from the substrate: each agent run's spans
//! (the run, its model calls, its tool runs, a sub-agent's run nested under
//! its call), its events and its counts — plain values, the same whether
//! the run ended a moment ago or a year ago. `otel` makes them the SDK's.

use agent::contract::{Choice, Member, PermissionDecision, RunBody, SessionItem, Tokens, ToolCall};
use anyhow::Result;
use protocol::process::ProcessBody;
use protocol::trace::{TraceParent, span_id, trace_id};
use std::collections::HashMap;
use std::time::{Duration, SystemTime};
use substrate::{ScopeOpts, Substrate};

/// Who a run was for (decision 19): `user.name` (the person its engine ran
/// it for), `hc.via` (the front end it came through), `hc.host`, and
/// `hc.asked_by` when a queued run was asked for by someone else.
fn who(process: &ProcessBody) -> Attrs {
    let mut out = Vec::new();
    out.extend(process.person.as_deref().map(|p| ("user.name", s(p))));
    out.extend(process.via.as_deref().map(|v| ("hc.via", s(v))));
    out.extend(process.host.as_deref().map(|h| ("hc.host", s(h))));
    let asked = process
        .placement
        .as_ref()
        .and_then(|p| p.asked_by.as_deref());
    out.extend(asked.map(|a| ("hc.asked_by", s(a))));
    out
}

/// An attribute's value.
#[derive(Clone, Debug, PartialEq)]
pub enum Attr {
    /// Text.
    S(String),
    /// A whole number.
    I(i64),
    /// A number.
    F(f64),
    /// Yes or no.
    B(bool),
}

/// Attributes, by key.
pub type Attrs = Vec<(&'static str, Attr)>;

/// A span: a run, a model call, a tool run.
#[derive(Clone, Debug)]
pub struct Span {
    /// Its id (derived from the substrate id it stands for).
    pub id: [u8; 8],
    /// Its parent (none: the trace's root).
    pub parent: Option<[u8; 8]>,
    /// `hc.run`, `hc.llm_request`, `hc.tool`.
    pub name: &'static str,
    /// When it started.
    pub start: SystemTime,
    /// When it ended.
    pub end: SystemTime,
    /// What it was.
    pub attrs: Attrs,
    /// How it failed, when it did.
    pub error: Option<String>,
}

/// An event (an OpenTelemetry log record).
#[derive(Clone, Debug)]
pub struct Event {
    /// Its name (`user_prompt`, `api_request`, …).
    pub name: &'static str,
    /// When it happened.
    pub time: SystemTime,
    /// The span it happened in.
    pub span: Option<[u8; 8]>,
    /// What it says.
    pub attrs: Attrs,
}

/// What a run's metrics add.
#[derive(Clone, Debug, Default)]
pub struct Counts {
    /// Tokens by model.
    pub tokens: Vec<(String, Tokens)>,
    /// Dollars by model.
    pub cost: Vec<(String, f64)>,
    /// Lines its tools added to the project's files.
    pub lines_added: u64,
    /// Lines they removed.
    pub lines_removed: u64,
    /// Each tool run: its tool and milliseconds.
    pub tool_ms: Vec<(String, f64)>,
    /// Each decision: the tool, `accept`/`reject`, its source.
    pub decisions: Vec<(String, &'static str, &'static str)>,
    /// Seconds the run ran.
    pub active_s: f64,
    /// Whether it was its session's first run.
    pub new_session: bool,
}

/// One agent run of a session, as telemetry.
#[derive(Clone, Debug)]
pub struct RunSignals {
    /// The session.
    pub session: String,
    /// The run's process.
    pub run: String,
    /// Its trace.
    pub trace_id: [u8; 16],
    /// The span it continues, when it was started inside a trace.
    pub remote_parent: Option<[u8; 8]>,
    /// Its spans, sub-agents' included.
    pub spans: Vec<Span>,
    /// Its events, in order.
    pub events: Vec<Event>,
    /// Its counts.
    pub counts: Counts,
    /// When it started.
    pub started: SystemTime,
}

/// What may be said beyond counts and names.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Detail {
    /// A prompt's text (`OTEL_LOG_USER_PROMPTS=1`).
    pub user_prompts: bool,
    /// A tool's input, a failed tool's output and a hook's command
    /// (`OTEL_LOG_TOOL_DETAILS=1`).
    pub tool_details: bool,
}

/// Every agent run of `session`, in order.
pub fn session(db: &Substrate, session: &str, detail: Detail) -> Result<Vec<RunSignals>> {
    runs(db, session, detail, None)
}

/// Agent run `run` of `session` (none: not one of its runs); the others
/// are only placed, not read.
pub fn run(db: &Substrate, session: &str, run: &str, detail: Detail) -> Result<Option<RunSignals>> {
    Ok(runs(db, session, detail, Some(run))?.pop())
}

/// The runs of `session` (`only`: that one), in order.
fn runs(
    db: &Substrate,
    session: &str,
    detail: Detail,
    only: Option<&str>,
) -> Result<Vec<RunSignals>> {
    let chunks = db.scope(&[session], &ScopeOpts::default())?.chunks;
    let mut groups: Vec<(String, RunBody, Vec<Member>)> = Vec::new();
    let mut pending = Vec::new();
    for chunk in &chunks {
        let member = Member::of(chunk);
        match member.item {
            SessionItem::Run(run) if is_agent(&run.process) => {
                let items = std::mem::take(&mut pending);
                groups.push((chunk.id.clone(), *run, items));
            }
            SessionItem::Run(_) | SessionItem::Other | SessionItem::Unreadable { .. } => {}
            // (a run's prompt is an argument of its run, placed after it)
            SessionItem::Prompt(_) => match groups.last_mut() {
                Some(group) => group.2.push(member),
                None => pending.push(member),
            },
            _ => {
                let at = owner(&member.item)
                    .and_then(|p| groups.iter().position(|g| g.0 == p))
                    .or(groups.len().checked_sub(1));
                match at.and_then(|at| groups.get_mut(at)) {
                    Some(group) => group.2.push(member),
                    None => pending.push(member),
                }
            }
        }
    }
    let wanted: Vec<usize> = match only {
        Some(only) => groups
            .iter()
            .position(|g| g.0 == only)
            .into_iter()
            .collect(),
        None => (0..groups.len()).collect(),
    };
    let mode_of = |at: usize| permission_mode(db, &groups[at].0);
    let mut out = Vec::new();
    for at in wanted {
        let (id, run, items) = &groups[at];
        let mut signals = run_signals(db, session, id, run, items, detail)?;
        signals.counts.new_session = at == 0;
        // the mode against the run before's
        let before = at.checked_sub(1).and_then(mode_of);
        if let (Some(before), Some(now)) = (before, mode_of(at))
            && before != now
        {
            signals.events.insert(
                0,
                Event {
                    name: "permission_mode_changed",
                    time: signals.started,
                    span: Some(span_id(id)),
                    attrs: vec![("from", s(&before)), ("to", s(&now))],
                },
            );
        }
        out.push(signals);
    }
    Ok(out)
}

/// Whether a process on a session is an agent's run.
fn is_agent(process: &ProcessBody) -> bool {
    process.program == "program/agent"
}

/// The run an item names as its maker.
fn owner(item: &SessionItem) -> Option<&str> {
    match item {
        SessionItem::Answer(a) => Some(&a.process),
        SessionItem::Compaction(c) => Some(&c.process),
        SessionItem::PermissionRequest(r) => Some(&r.process),
        SessionItem::HookCallback(h) => Some(&h.process),
        SessionItem::LlmCall(c) => Some(&c.process),
        _ => None,
    }
    .filter(|p| !p.is_empty())
    .map(String::as_str)
}

/// The permission mode a run was configured with.
fn permission_mode(db: &Substrate, run: &str) -> Option<String> {
    let read = db
        .scope(&[run, "agent-config"], &ScopeOpts::default())
        .ok()?;
    let config = agent::AgentConfig::parse(&read.chunks.first()?.body_value()).ok()?;
    Some(config.permission_mode.as_str().to_owned())
}

/// One run's signals.
fn run_signals(
    db: &Substrate,
    session: &str,
    id: &str,
    run: &RunBody,
    items: &[Member],
    detail: Detail,
) -> Result<RunSignals> {
    let outer = run
        .process
        .traceparent
        .as_deref()
        .and_then(TraceParent::parse);
    let started = time(run.process.started.as_deref()).unwrap_or(SystemTime::UNIX_EPOCH);
    let mut walk = Walk {
        db,
        detail,
        session,
        spans: Vec::new(),
        events: Vec::new(),
        counts: Counts::default(),
    };
    let span = span_id(id);
    walk.prompts(items, started, span);
    walk.run(id, run, items, span, outer.map(|o| o.span_id))?;
    let end = time(run.process.ended.as_deref()).unwrap_or(started);
    walk.counts.active_s = end
        .duration_since(started)
        .unwrap_or_default()
        .as_secs_f64();
    let mut events = walk.events;
    events.sort_by_key(|e| e.time);
    Ok(RunSignals {
        session: session.to_owned(),
        run: id.to_owned(),
        trace_id: outer.map_or_else(|| trace_id(id), |o| o.trace_id),
        remote_parent: outer.map(|o| o.span_id),
        spans: walk.spans,
        events,
        counts: walk.counts,
        started,
    })
}

/// What a run's walk gathers.
struct Walk<'a> {
    db: &'a Substrate,
    detail: Detail,
    session: &'a str,
    spans: Vec<Span>,
    events: Vec<Event>,
    counts: Counts,
}

impl Walk<'_> {
    /// The prompts that started a run, as `user_prompt` events.
    fn prompts(&mut self, items: &[Member], at: SystemTime, span: [u8; 8]) {
        for member in items {
            // (the person's: not a hook's, a command's or a message)
            let SessionItem::Prompt(p) = &member.item else {
                continue;
            };
            if p.from.is_some() {
                continue;
            }
            let mut attrs = vec![("prompt_length", i(p.text.chars().count() as u64))];
            match self.detail.user_prompts {
                true => attrs.push(("prompt", s(&p.text))),
                false => attrs.push(("prompt", s("<REDACTED>"))),
            }
            self.event("user_prompt", at, Some(span), attrs);
        }
    }

    fn event(&mut self, name: &'static str, time: SystemTime, span: Option<[u8; 8]>, attrs: Attrs) {
        let mut all = vec![("session.id", s(self.session))];
        all.extend(attrs);
        self.events.push(Event {
            name,
            time,
            span,
            attrs: all,
        });
    }

    /// A run's span (`span`, under `parent`) and everything under it.
    fn run(
        &mut self,
        id: &str,
        run: &RunBody,
        items: &[Member],
        span: [u8; 8],
        parent: Option<[u8; 8]>,
    ) -> Result<()> {
        let start = time(run.process.started.as_deref()).unwrap_or(SystemTime::UNIX_EPOCH);
        let end = time(run.process.ended.as_deref()).unwrap_or(start);
        let totals = &run.totals;
        let mut attrs = vec![
            ("session.id", s(self.session)),
            ("hc.process.id", s(id)),
            ("model", s(&totals.model)),
            ("hc.turns", i(u64::from(totals.turns))),
            ("input_tokens", i(totals.usage.input_tokens)),
            ("output_tokens", i(totals.usage.output_tokens)),
            ("cache_read_tokens", i(totals.usage.cache_read_input_tokens)),
            (
                "cache_creation_tokens",
                i(totals.usage.cache_creation_input_tokens),
            ),
            ("status", s(&run.status())),
        ];
        attrs.extend(totals.cost_usd.map(|c| ("cost_usd", Attr::F(c))));
        attrs.extend(totals.stop_reason.map(|r| ("stop_reason", s(r.as_str()))));
        attrs.extend(who(&run.process));
        let failed = matches!(
            totals.stop_reason,
            Some(agent::contract::RunStop::Error | agent::contract::RunStop::PromptTooLong)
        );
        let error = failed.then(|| totals.stop_message.clone().unwrap_or_default());
        if let Some(message) = &error {
            let attrs = vec![("model", s(&totals.model)), ("error", s(message))];
            self.event("api_error", end, Some(span), attrs);
        }
        self.spans.push(Span {
            id: span,
            parent,
            name: "hc.run",
            start,
            end,
            attrs,
            error,
        });
        // (a run still running bounds its calls by now)
        let bound = time(run.process.ended.as_deref()).unwrap_or_else(SystemTime::now);
        self.items(items, span, (start, bound))?;
        self.hooks(id, span)
    }

    /// A run's items: its model calls and tool runs.
    fn items(
        &mut self,
        items: &[Member],
        run: [u8; 8],
        (start, end): (SystemTime, SystemTime),
    ) -> Result<()> {
        // each call's question (by its call) and answer (by the question)
        let asked: HashMap<&str, &str> = items
            .iter()
            .filter_map(|m| match &m.item {
                SessionItem::PermissionRequest(r) => Some((r.tool_use_id.as_str(), m.id.as_str())),
                _ => None,
            })
            .collect();
        let answered: HashMap<&str, &PermissionDecision> = items
            .iter()
            .filter_map(|m| match &m.item {
                SessionItem::PermissionDecision(d) => Some((d.request.as_str(), d)),
                _ => None,
            })
            .collect();
        let mut last = start;
        for member in items {
            match &member.item {
                SessionItem::Answer(a) => {
                    let call = LlmCallView {
                        id: a.message_id.clone().unwrap_or_default(),
                        process: &a.process,
                        model: &a.model,
                        usage: (&a.usage).into(),
                        cost: a.cost_usd,
                        timing: a.timing.as_ref(),
                        stop: a.stop_reason.as_ref().and_then(|r| {
                            serde_json::to_value(r).ok()?.as_str().map(str::to_owned)
                        }),
                    };
                    let key = item_key(a.call, &a.process);
                    last = self.llm_call(&call, run, (last, end), key);
                }
                SessionItem::Compaction(c) => {
                    self.count(&c.model, &(&c.usage).into(), Some(c.cost_usd));
                    let attrs = vec![
                        ("model", s(&c.model)),
                        ("input_tokens", i(c.usage.input_tokens)),
                        ("output_tokens", i(c.usage.output_tokens)),
                        ("cost_usd", Attr::F(c.cost_usd)),
                    ];
                    self.event("compaction", last, Some(run), attrs);
                }
                SessionItem::LlmCall(c) => {
                    self.count(&c.model, &(&c.usage).into(), Some(c.cost_usd));
                }
                SessionItem::ToolCall(call) => {
                    let request = asked.get(call.tool_use_id.as_str()).copied();
                    let decided = request.and_then(|r| answered.get(r).copied());
                    let result = items.iter().find_map(|m| match &m.item {
                        SessionItem::ToolResult(r) if r.tool_use_id == call.tool_use_id => Some(r),
                        _ => None,
                    });
                    let denied = result.is_some_and(|r| r.denied);
                    let decision = decision_of(request.is_some(), decided, denied);
                    self.tool(call, decision, result, run, last)?;
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// A model call: its span, its `api_request` event, its counts; answers
    /// when it ended.
    fn llm_call(
        &mut self,
        call: &LlmCallView,
        run: [u8; 8],
        (last, run_end): (SystemTime, SystemTime),
        key: String,
    ) -> SystemTime {
        self.count(call.model, &call.usage, call.cost);
        let start = call
            .timing
            .and_then(|t| time(Some(&t.started)))
            .unwrap_or(last);
        let ms = call.timing.map_or(0, |t| t.duration_ms);
        // within its run (the agent's clock is its engine's; a process
        // whose clock differed is drawn where its run was)
        let low = last.min(run_end);
        let start = start.clamp(low, run_end.max(low));
        let end = start + Duration::from_millis(ms);
        let mut attrs = vec![
            ("model", s(call.model)),
            ("input_tokens", i(call.usage.input_tokens)),
            ("output_tokens", i(call.usage.output_tokens)),
            ("cache_read_tokens", i(call.usage.cache_read_input_tokens)),
            (
                "cache_creation_tokens",
                i(call.usage.cache_creation_input_tokens),
            ),
            ("duration_ms", i(ms)),
        ];
        attrs.extend(call.cost.map(|c| ("cost_usd", Attr::F(c))));
        if let Some(t) = call.timing {
            attrs.extend(t.first_token_ms.map(|f| ("ttft_ms", i(f))));
            attrs.push(("retries", i(u64::from(t.retries))));
        }
        attrs.extend(call.stop.as_ref().map(|r| ("stop_reason", s(r))));
        if !call.id.is_empty() {
            attrs.push(("request_id", s(&call.id)));
        }
        let id = span_id(&key);
        let mut on_span = attrs.clone();
        on_span.push(("session.id", s(self.session)));
        on_span.push(("hc.process.id", s(call.process)));
        self.spans.push(Span {
            id,
            parent: Some(run),
            name: "hc.llm_request",
            start,
            end,
            attrs: on_span,
            error: None,
        });
        self.event("api_request", end, Some(id), attrs);
        end
    }

    /// Adds a model call's tokens and dollars.
    fn count(&mut self, model: &str, usage: &Tokens, cost: Option<f64>) {
        match self.counts.tokens.iter_mut().find(|(m, _)| m == model) {
            Some((_, t)) => t.add(usage),
            None => self.counts.tokens.push((model.to_owned(), *usage)),
        }
        if let Some(cost) = cost {
            match self.counts.cost.iter_mut().find(|(m, _)| m == model) {
                Some((_, c)) => *c += cost,
                None => self.counts.cost.push((model.to_owned(), cost)),
            }
        }
    }

    /// A tool call: its decision, and — when it ran — its span, its
    /// result, its lines, and a sub-agent's run under it.
    fn tool(
        &mut self,
        call: &ToolCall,
        decision: (&'static str, &'static str),
        result: Option<&agent::contract::ToolResult>,
        run: [u8; 8],
        last: SystemTime,
    ) -> Result<()> {
        let tool = call.program.clone();
        let process = match &call.process {
            Some(p) => Some((p.clone(), self.process(p)?)),
            None => None,
        };
        let start = process
            .as_ref()
            .and_then(|(_, p)| time(p.started.as_deref()))
            .unwrap_or(last);
        let end = process
            .as_ref()
            .and_then(|(_, p)| time(p.ended.as_deref()))
            .unwrap_or(start);
        let (verdict, source) = decision;
        self.counts.decisions.push((tool.clone(), verdict, source));
        let mut decided = vec![
            ("tool_name", s(&tool)),
            ("decision", s(verdict)),
            ("source", s(source)),
        ];
        decided.push(("tool_use_id", s(&call.tool_use_id)));
        self.event("tool_decision", start, Some(run), decided);
        let Some((pid, body)) = process else {
            return Ok(());
        };
        let span = span_id(&pid);
        let ms = end.duration_since(start).unwrap_or_default().as_secs_f64() * 1e3;
        self.counts.tool_ms.push((tool.clone(), ms));
        let success = result.is_some_and(|r| !r.is_error);
        let mut attrs = vec![
            ("tool_name", s(&tool)),
            ("hc.program", s(&body.program)),
            ("hc.process.id", s(&pid)),
            ("session.id", s(self.session)),
            ("decision", s(verdict)),
            ("source", s(source)),
            ("success", Attr::B(success)),
            ("duration_ms", i(ms as u64)),
        ];
        attrs.extend(body.exit_code.map(|c| ("exit_code", Attr::I(i64::from(c)))));
        let lines = self.lines(&pid)?;
        self.counts.lines_added += lines.added;
        self.counts.lines_removed += lines.removed;
        let mut said = attrs.clone();
        said.retain(|(k, _)| *k != "session.id");
        // (what a tool printed is its content: only when asked)
        if !success {
            let reason = body
                .error
                .clone()
                .or_else(|| body.exit_code.map(|c| format!("exit code {c}")));
            let error = match (self.detail.tool_details, result) {
                (true, Some(r)) => r.text.clone(),
                _ => reason.unwrap_or_else(|| "failed".into()),
            };
            said.push(("error", s(&truncate(&error, 2000))));
        }
        if self.detail.tool_details {
            said.push((
                "tool_parameters",
                s(&truncate(&call.input.to_string(), 4000)),
            ));
        }
        self.event("tool_result", end, Some(span), said);
        self.spans.push(Span {
            id: span,
            parent: Some(run),
            name: "hc.tool",
            start,
            end,
            attrs,
            error: (!success).then(|| body.error.clone().unwrap_or_else(|| "failed".into())),
        });
        if is_agent(&body) {
            self.sub_agent(&pid, span)?;
        }
        Ok(())
    }

    /// A sub-agent's run, its own span under its call's.
    fn sub_agent(&mut self, pid: &str, call: [u8; 8]) -> Result<()> {
        let run = match self.db.read(|snap| snap.body(pid))? {
            Some(body) => RunBody::parse(&body),
            None => return Ok(()),
        };
        let chunks = self.db.scope(&[pid], &ScopeOpts::default())?.chunks;
        let items: Vec<Member> = chunks.iter().map(|c| Member::of(c)).collect();
        let span = span_id(&format!("run {pid}"));
        self.run(pid, &run, &items, span, Some(call))
    }

    /// The hooks a run ran, as `hook_execution` events.
    fn hooks(&mut self, run: &str, span: [u8; 8]) -> Result<()> {
        let chunks = self
            .db
            .scope(&[run, "program/hook"], &ScopeOpts::default())?
            .chunks;
        for chunk in chunks {
            let body = ProcessBody::parse(&chunk.body_value());
            let input = match body.arguments.first() {
                Some(arg) => self.db.read(|snap| snap.body(arg))?.unwrap_or_default(),
                None => serde_json::Value::Null,
            };
            let start = time(body.started.as_deref()).unwrap_or(SystemTime::UNIX_EPOCH);
            let end = time(body.ended.as_deref()).unwrap_or(start);
            let ms = end.duration_since(start).unwrap_or_default().as_millis() as u64;
            // (the hook's input names hc's event; sent in Claude Code's name)
            let named = input["event"]["event"].as_str().unwrap_or_default();
            let event = agent::config::claude_hook_event(named);
            // (the command's exit is in the hook program's output)
            let output = self
                .db
                .scope(&[chunk.id.as_str(), "engine/output"], &ScopeOpts::default())?;
            let data = output
                .chunks
                .first()
                .map(|c| c.body_value()["data"].clone());
            let code = data.as_ref().and_then(|d| d["exit_code"].as_i64());
            let mut attrs = vec![
                ("hook_event", s(event)),
                ("success", Attr::B(code == Some(0))),
                ("duration_ms", i(ms)),
            ];
            attrs.extend(code.map(|c| ("exit_code", Attr::I(c))));
            if self.detail.tool_details {
                attrs.push((
                    "hook_command",
                    s(input["command"].as_str().unwrap_or_default()),
                ));
            }
            self.event("hook_execution", end, Some(span), attrs);
        }
        Ok(())
    }

    /// A process's body.
    fn process(&self, id: &str) -> Result<ProcessBody> {
        let body = self.db.read(|snap| snap.body(id))?;
        Ok(body.map(|b| ProcessBody::parse(&b)).unwrap_or_default())
    }

    /// The lines a tool run's file effects added and removed.
    fn lines(&self, process: &str) -> Result<effects::Lines> {
        let read = self
            .db
            .scope(&[process, "engine/file-effects"], &ScopeOpts::default())?;
        let mut out = effects::Lines::default();
        for chunk in read.chunks {
            let record: effects::record::FileEffects =
                serde_json::from_value(chunk.body_value()).unwrap_or_default();
            for lines in record.effects.iter().filter_map(|e| e.lines) {
                out.added += lines.added;
                out.removed += lines.removed;
            }
        }
        Ok(out)
    }
}

/// A model call as its span reads it.
struct LlmCallView<'a> {
    id: String,
    process: &'a str,
    model: &'a str,
    usage: Tokens,
    cost: Option<f64>,
    timing: Option<&'a agent::contract::CallTiming>,
    stop: Option<String>,
}

/// The id an answer's span is derived from: its run and its number.
fn item_key(call: Option<u32>, process: &str) -> String {
    format!("llm {process} {}", call.unwrap_or(0))
}

/// A call's decision and its source, as Claude Code names them.
fn decision_of(
    asked: bool,
    decided: Option<&PermissionDecision>,
    denied: bool,
) -> (&'static str, &'static str) {
    match (asked, decided.map(|d| d.decision), denied) {
        (true, Some(Choice::Allow), _) => ("accept", "user_temporary"),
        (true, Some(Choice::Always), _) => ("accept", "user_permanent"),
        (true, Some(Choice::Never), _) => ("reject", "user_permanent"),
        (true, Some(Choice::Deny), _) | (true, None, true) => ("reject", "user_reject"),
        (_, _, true) => ("reject", "config"),
        _ => ("accept", "config"),
    }
}

fn s(text: &str) -> Attr {
    Attr::S(text.to_owned())
}

fn i(n: u64) -> Attr {
    Attr::I(i64::try_from(n).unwrap_or(i64::MAX))
}

/// A time the substrate wrote.
pub(crate) fn time(text: Option<&str>) -> Option<SystemTime> {
    humantime::parse_rfc3339_weak(text?).ok()
}

fn truncate(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_owned(),
    }
}
