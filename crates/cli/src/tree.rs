//! `hc trace SESSION`: the session as a readable tree — prompts, answers,
//! tool calls with their results, sub-agents nested under their calls,
//! runs with their totals, tokens and cost per call, permission questions
//! and decisions, context events, compactions, interrupts. `--json` gives
//! the same tree for machines.

use crate::style::{bad, bold, cut, dim, ok, shown, warn};
use agent::contract::{
    Choice, ContextBody, LlmPurpose, PromptSource, RunBody, RunStop, SessionBody, SessionItem,
    TodoItem, Tokens, ToolCall,
};
use anyhow::Result;
use model::{StopReason, Usage};
use protocol::process::{ProcessBody, ProcessStatus};
use serde::Serialize;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::Arc;
use substrate::{ScopeOpts, Substrate};

/// How much of a text a line shows.
const CUT: usize = 100;

/// One node of the tree (`--json` prints them as they are).
#[derive(Serialize)]
#[serde(tag = "type")]
enum Node {
    #[serde(rename = "prompt")]
    Prompt {
        id: String,
        text: String,
        from: Option<PromptSource>,
    },
    #[serde(rename = "answer")]
    Answer {
        id: String,
        /// Its number among the session's calls (`--request N`).
        call: Option<usize>,
        text: String,
        model: String,
        usage: Usage,
        cost_usd: Option<f64>,
        stop_reason: Option<StopReason>,
    },
    #[serde(rename = "tool-call")]
    ToolCall(Box<CallNode>),
    #[serde(rename = "run")]
    Run(Box<RunNode>),
    #[serde(rename = "context")]
    Context {
        id: String,
        model: String,
        tools: Vec<String>,
        as_of: u64,
        date: String,
        instructions: Vec<String>,
    },
    #[serde(rename = "compaction")]
    Compaction {
        id: String,
        text: String,
        usage: Usage,
        #[serde(skip_serializing_if = "Option::is_none")]
        call: Option<usize>,
    },
    #[serde(rename = "permission-request")]
    PermissionRequest {
        id: String,
        program: String,
        input: Value,
        reason: String,
    },
    #[serde(rename = "permission-decision")]
    PermissionDecision {
        id: String,
        decision: Choice,
        message: Option<String>,
    },
    #[serde(rename = "question")]
    Question { id: String, text: String },
    #[serde(rename = "answer-from-person")]
    AnswerFromPerson { id: String, text: String },
    #[serde(rename = "interrupt")]
    Interrupt { id: String },
    #[serde(rename = "todo")]
    Todo { id: String, items: Vec<TodoItem> },
    #[serde(rename = "plan")]
    Plan { id: String, text: String, ask: bool },
    #[serde(rename = "hook-callback")]
    HookCallback {
        id: String,
        event: String,
        callback_id: String,
    },
    #[serde(rename = "hook-answer")]
    HookAnswer {
        id: String,
        output: Value,
        error: Option<String>,
    },
    /// A model call beside the conversation (`call_llm`, a compression).
    #[serde(rename = "llm-call")]
    LlmCall {
        id: String,
        call: Option<usize>,
        purpose: LlmPurpose,
        model: String,
        prompt: String,
        text: String,
        error: Option<String>,
        usage: Usage,
        cost_usd: f64,
        block: Option<String>,
        path: Option<String>,
    },
    /// An entry the kernel saved to a block.
    #[serde(rename = "block-save")]
    BlockSave {
        id: String,
        block: String,
        path: String,
        text: String,
        compressed: Vec<String>,
        deferred: Vec<String>,
        grew: bool,
    },
}

/// A tool call with its result, its process's timing, and — for a
/// sub-agent — its own tree.
#[derive(Serialize)]
struct CallNode {
    id: String,
    program: String,
    input: Value,
    process: Option<String>,
    tool_use_id: String,
    result: Option<ResultNode>,
    #[serde(skip_serializing_if = "Option::is_none")]
    started: Option<Option<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    ended: Option<Option<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    status: Option<ProcessStatus>,
    #[serde(skip_serializing_if = "Option::is_none")]
    children: Option<Vec<Node>>,
}

/// What a call came to.
#[derive(Serialize)]
struct ResultNode {
    text: String,
    is_error: bool,
    denied: bool,
}

/// A run on the session: its process and totals.
#[derive(Serialize)]
struct RunNode {
    id: String,
    process: String,
    program: Option<String>,
    status: ProcessStatus,
    stop_reason: Option<RunStop>,
    turns: u32,
    usage: Tokens,
    cost_usd: Option<f64>,
    started: Option<String>,
    ended: Option<String>,
    model: String,
}

/// The tree of `scope` (a session, or a sub-agent's process).
fn tree(db: &Substrate, scope: &str, depth: usize) -> Result<Vec<Node>> {
    let chunks = db.scope(&[scope], &ScopeOpts::default())?.chunks;
    let items: Vec<SessionItem> = chunks.iter().map(|c| SessionItem::of(c)).collect();
    let mut results: HashMap<String, ResultNode> = items
        .iter()
        .filter_map(|i| match i {
            SessionItem::ToolResult(r) => Some((
                r.tool_use_id.clone(),
                ResultNode {
                    text: r.text.clone(),
                    is_error: r.is_error,
                    denied: r.denied,
                },
            )),
            _ => None,
        })
        .collect();
    // A sub-agent's scope (its process) also holds the processes of its
    // tools' runs: each is drawn with its call, not as a run of its own.
    let called: std::collections::HashSet<String> = items
        .iter()
        .filter_map(|i| match i {
            SessionItem::ToolCall(c) => c.process.clone(),
            _ => None,
        })
        .collect();
    let mut call_number = 0;
    let mut out = Vec::new();
    for (chunk, item) in chunks.iter().zip(items) {
        // Numbered as `--request N` numbers them: the session's own calls
        // (answers, and the summary call of a compaction).
        let call = match item.is_call() {
            true => {
                call_number += 1;
                (depth == 0).then_some(call_number)
            }
            false => None,
        };
        let id = chunk.id.clone();
        let node = match item {
            SessionItem::ToolCall(c) => {
                let result = results.remove(&c.tool_use_id);
                Some(call_node(db, id, c, result, depth)?)
            }
            SessionItem::Context(Some(c)) => Some(context_node(db, id, *c)),
            SessionItem::Run(_) if called.contains(&id) => None,
            SessionItem::Run(run) => Some(run_node(id, chunk.name.clone(), *run)),
            other => plain_node(id, other, call),
        };
        out.extend(node);
    }
    Ok(out)
}

/// A context event, with every tool its calls were sent: the programs',
/// the server tools of its run's configuration, the agent's own.
fn context_node(db: &Substrate, id: String, c: ContextBody) -> Node {
    // Only the run's configuration: its process and `agent-config`, met.
    let config = db
        .scope(&[c.process.as_str(), "agent-config"], &ScopeOpts::default())
        .ok()
        .and_then(|run| {
            (run.chunks.first()).and_then(|x| agent::AgentConfig::parse(&x.body_value()).ok())
        });
    let mut tools = c.tools;
    let servers = config.iter().flat_map(|c| c.server_tools.iter());
    let own = c.own_tools.iter();
    tools.extend(
        servers
            .chain(own)
            .filter_map(|t| t["name"].as_str().map(str::to_owned)),
    );
    Node::Context {
        id,
        model: c.model,
        tools,
        as_of: c.as_of,
        date: c.date,
        instructions: c.instructions.into_iter().map(|i| i.path).collect(),
    }
}

/// A run of the agent, as the tree draws it.
fn run_node(id: String, program: Option<String>, run: RunBody) -> Node {
    Node::Run(Box::new(RunNode {
        process: id.clone(),
        id,
        program,
        status: run.process.status,
        stop_reason: run.totals.stop_reason,
        turns: run.totals.turns,
        usage: run.totals.usage,
        cost_usd: run.totals.cost_usd,
        started: run.process.started,
        ended: run.process.ended,
        model: run.totals.model,
    }))
}

/// The node of an item that needs nothing but itself (`None`: not shown).
fn plain_node(id: String, item: SessionItem, call: Option<usize>) -> Option<Node> {
    Some(match item {
        SessionItem::Prompt(p) => Node::Prompt {
            id,
            text: p.text,
            from: p.from,
        },
        SessionItem::Answer(a) => Node::Answer {
            id,
            call,
            text: a.text,
            model: a.model,
            usage: a.usage,
            cost_usd: a.cost_usd,
            stop_reason: a.stop_reason,
        },
        // Only an event the agent filled in (the host's placeholder is empty).
        SessionItem::Compaction(c) => Node::Compaction {
            id,
            text: c.text,
            usage: c.usage,
            call,
        },
        SessionItem::PermissionRequest(r) => Node::PermissionRequest {
            id,
            program: r.program,
            input: r.input,
            reason: r.reason,
        },
        SessionItem::PermissionDecision(d) => Node::PermissionDecision {
            id,
            decision: d.decision,
            message: d.message,
        },
        SessionItem::UserQuestion(q) => Node::Question { id, text: q.text },
        SessionItem::UserAnswer(a) => Node::AnswerFromPerson { id, text: a.text },
        SessionItem::Interrupt(_) => Node::Interrupt { id },
        SessionItem::Todo(t) => Node::Todo { id, items: t.items },
        SessionItem::Plan(p) => Node::Plan {
            id,
            text: p.text,
            ask: p.ask,
        },
        SessionItem::HookCallback(h) => Node::HookCallback {
            id,
            event: h.event,
            callback_id: h.callback_id,
        },
        SessionItem::HookAnswer(a) => Node::HookAnswer {
            id,
            output: a.output,
            error: a.error,
        },
        SessionItem::LlmCall(c) => Node::LlmCall {
            id,
            call,
            purpose: c.purpose,
            model: c.model,
            prompt: c.prompt,
            text: c.text,
            error: c.error,
            usage: c.usage,
            cost_usd: c.cost_usd,
            block: c.block,
            path: c.path,
        },
        SessionItem::BlockSave(b) => Node::BlockSave {
            id,
            block: b.block,
            path: b.path,
            text: b.text,
            compressed: b.compressed,
            deferred: b.deferred,
            grew: b.grew,
        },
        SessionItem::Context(_)
        | SessionItem::ToolCall(_)
        | SessionItem::ToolResult(_)
        | SessionItem::Run(_)
        | SessionItem::Unreadable { .. }
        | SessionItem::Other => return None,
    })
}

/// A tool call with its result, its process's timing, and — for a
/// sub-agent — its own tree.
fn call_node(
    db: &Substrate,
    id: String,
    call: ToolCall,
    result: Option<ResultNode>,
    depth: usize,
) -> Result<Node> {
    let body = match &call.process {
        Some(p) => db.read(|s| s.body(p))?,
        None => None,
    };
    let process = body.as_ref().map(ProcessBody::parse);
    // A sub-agent: its own run's header, then its tree.
    let children = match (&body, &call.process) {
        (Some(body), Some(p)) if call.program == "agent" => {
            let own = run_node(p.clone(), Some("agent".into()), RunBody::parse(body));
            let mut nodes = vec![own];
            nodes.extend(tree(db, p, depth + 1)?);
            Some(nodes)
        }
        _ => None,
    };
    Ok(Node::ToolCall(Box::new(CallNode {
        id,
        program: call.program,
        input: call.input,
        process: call.process,
        tool_use_id: call.tool_use_id,
        result,
        started: process.as_ref().map(|p| p.started.clone()),
        ended: process.as_ref().map(|p| p.ended.clone()),
        status: process.as_ref().map(|p| p.status),
        children,
    })))
}

/// Milliseconds between two RFC 3339 times.
fn millis(started: Option<&str>, ended: Option<&str>) -> Option<u128> {
    let a = humantime::parse_rfc3339(started?).ok()?;
    let b = humantime::parse_rfc3339(ended?).ok()?;
    b.duration_since(a).ok().map(|d| d.as_millis())
}

fn text_of(t: &str, full: bool) -> String {
    if full {
        shown(t.trim_end()).into_owned()
    } else {
        cut(t, CUT)
    }
}

fn tokens(input: u64, output: u64) -> String {
    format!("{input} in / {output} out")
}

/// The tree as lines a person reads: each node a line (or a few), texts
/// cut to a line unless `full`.
struct Lines {
    full: bool,
    out: Vec<String>,
}

impl Lines {
    fn push(&mut self, indent: usize, text: String) {
        self.out.push(format!("{}{text}", "  ".repeat(indent)));
    }

    /// `text`'s first line after `head`, and with `full` the rest below
    /// it (under the text when there is no head, indented under a head).
    fn text(&mut self, indent: usize, head: String, text: &str) {
        let rest = if head.is_empty() { indent } else { indent + 2 };
        let mut lines = text.lines();
        self.push(indent, format!("{head}{}", lines.next().unwrap_or("")));
        if self.full {
            for line in lines {
                self.push(rest, line.to_owned());
            }
        }
    }

    fn nodes(&mut self, nodes: &[Node], indent: usize) {
        for n in nodes {
            self.node(n, indent);
        }
    }

    fn node(&mut self, n: &Node, indent: usize) {
        let full = self.full;
        match n {
            Node::Prompt { text, from, .. } => {
                let who = match from {
                    Some(PromptSource::Hook) => "hook",
                    None => "prompt",
                };
                let head = format!("{} ", bold(&format!("› {who}")));
                self.text(indent, head, &text_of(text, full));
            }
            Node::Answer { .. } => self.answer(n, indent),
            Node::ToolCall(call) => self.call(call, indent),
            Node::Run(run) => self.run(run, indent),
            Node::Context {
                model,
                tools,
                as_of,
                date,
                ..
            } => {
                let line = format!(
                    "◦ context: {model} · {} tools · as of commit {as_of} · {date}",
                    tools.len()
                );
                self.push(indent, dim(&line));
            }
            Node::Compaction { text, call, .. } => {
                // The summary, not the header the model is shown it under.
                let summary = text.split_once("]\n\n").map_or(text.as_str(), |(_, s)| s);
                let call = call.map_or(String::new(), |c| format!(" #{c}"));
                let head = format!("{} ", bold(&format!("⟳ compaction{call}")));
                self.text(indent, head, &text_of(summary, full));
            }
            Node::PermissionRequest {
                program,
                input,
                reason,
                ..
            } => {
                let input = crate::describe::summary(program, input);
                self.push(
                    indent + 1,
                    format!(
                        "? permission for {} {input} — {}",
                        shown(program),
                        shown(reason)
                    ),
                );
            }
            Node::PermissionDecision { decision, .. } => {
                let decision = match decision {
                    Choice::Allow => "allow",
                    Choice::Always => "always",
                    Choice::Deny => "deny",
                };
                self.push(indent + 2, format!("→ {decision}"));
            }
            Node::Question { text, .. } => self.text(indent + 1, "? ".into(), &text_of(text, full)),
            Node::AnswerFromPerson { text, .. } => {
                self.text(indent + 2, "→ ".into(), &text_of(text, full))
            }
            Node::Interrupt { .. } => self.push(indent, bad("✗ interrupted by the person")),
            Node::HookCallback {
                event, callback_id, ..
            } => self.push(
                indent + 1,
                format!("⚑ {} hook {}", shown(event), dim(&shown(callback_id))),
            ),
            Node::HookAnswer { output, error, .. } => {
                let said = match error {
                    Some(e) => bad(&format!("failed: {}", shown(e))),
                    None => cut(&output.to_string(), CUT),
                };
                self.push(indent + 2, format!("→ {said}"));
            }
            Node::LlmCall { .. } => self.llm_call(n, indent),
            Node::BlockSave {
                block,
                path,
                text,
                compressed,
                deferred,
                grew,
                ..
            } => {
                let mut notes = String::new();
                for c in compressed {
                    notes.push_str(&format!(" · compressed {c}"));
                }
                for d in deferred {
                    notes.push_str(&format!(" · {d} waits for compression"));
                }
                if *grew {
                    notes.push_str(" · grew upward");
                }
                let head = format!("{} ", bold(&format!("▤ {} {path} ←", shown(block))));
                self.text(indent + 1, head, &text_of(text, full));
                if !notes.is_empty() {
                    self.push(indent + 3, dim(notes.trim_start_matches(" · ")));
                }
            }
            Node::Todo { items, .. } => {
                let done = items
                    .iter()
                    .filter(|i| i.status == agent::contract::TodoStatus::Completed)
                    .count();
                self.push(
                    indent + 1,
                    format!("☐ plan: {done} of {} done", items.len()),
                );
            }
            Node::Plan { text, ask, .. } => {
                let head = match ask {
                    true => "◆ plan, put to the person: ",
                    false => "◆ plan (the run's result): ",
                };
                self.text(indent + 1, bold(head), &text_of(text, self.full));
            }
        }
    }

    fn answer(&mut self, n: &Node, indent: usize) {
        let Node::Answer {
            call,
            text,
            usage,
            cost_usd,
            stop_reason,
            ..
        } = n
        else {
            return;
        };
        let call = call.map_or(String::new(), |c| format!("#{c} "));
        let cost = cost_usd.map_or(String::new(), |c| format!(" · ${c:.4}"));
        let stop = match stop_reason {
            Some(StopReason::EndTurn | StopReason::ToolUse) | None => String::new(),
            Some(other) => format!(" · {}", other.as_str()),
        };
        let tokens = tokens(usage.total_input_tokens(), usage.output_tokens);
        self.push(
            indent,
            format!(
                "{} {}",
                bold(&format!("● answer {call}")),
                dim(&format!("{tokens}{cost}{stop}"))
            ),
        );
        let text = text_of(text, self.full);
        if !text.is_empty() {
            self.text(indent + 1, String::new(), &text);
        }
    }

    /// A call beside the conversation: what for, its tokens, its text.
    fn llm_call(&mut self, n: &Node, indent: usize) {
        let Node::LlmCall {
            call,
            purpose,
            model,
            prompt,
            text,
            error,
            usage,
            cost_usd,
            block,
            path,
            ..
        } = n
        else {
            return;
        };
        let call = call.map_or(String::new(), |c| format!(" #{c}"));
        let what = match (purpose, block, path) {
            (LlmPurpose::Compression, Some(block), Some(path)) => {
                format!("compression{call} of {} {path}", shown(block))
            }
            (LlmPurpose::Compression, ..) => format!("compression{call}"),
            (LlmPurpose::CallLlm, ..) => format!("call_llm{call}"),
        };
        let tokens = tokens(usage.total_input_tokens(), usage.output_tokens);
        let line = format!("{model} · {tokens} · ${cost_usd:.4}");
        self.push(
            indent + 1,
            format!("{} {}", bold(&format!("◆ {what}")), dim(&line)),
        );
        if *purpose == LlmPurpose::CallLlm {
            self.text(indent + 3, "? ".into(), &text_of(prompt, self.full));
        }
        match error {
            Some(e) => self.push(indent + 3, bad(&format!("✗ {}", shown(e)))),
            None => self.text(indent + 3, "→ ".into(), &text_of(text, self.full)),
        }
    }

    /// A tool call, its result, and a sub-agent's tree under it.
    fn call(&mut self, n: &CallNode, indent: usize) {
        let started = n.started.as_ref().and_then(|s| s.as_deref());
        let ended = n.ended.as_ref().and_then(|s| s.as_deref());
        let took = millis(started, ended).map_or(String::new(), |ms| format!(" {ms} ms"));
        let (mark, result) = match &n.result {
            None => (dim("…"), String::new()),
            Some(r) if r.denied => (warn("⊘"), text_of(&r.text, self.full)),
            Some(r) if r.is_error => (bad("✗"), text_of(&r.text, self.full)),
            Some(r) => (ok("✓"), text_of(&r.text, self.full)),
        };
        let input = crate::describe::summary(&n.program, &n.input);
        // A sub-agent is a session of its own: its process names it.
        let own = match (&n.children, &n.process) {
            (Some(_), Some(p)) => format!(" · {p}"),
            _ => String::new(),
        };
        let denied = match &n.result {
            Some(r) if r.denied => " — denied",
            _ => "",
        };
        let took = dim(&format!("{denied}{took}{own}"));
        self.push(
            indent + 1,
            format!("{mark} {} {input}{took}", bold(&shown(&n.program))),
        );
        let shown = if self.full { usize::MAX } else { 1 };
        for line in result.lines().take(shown) {
            self.push(indent + 3, dim(line));
        }
        if let Some(children) = &n.children {
            self.nodes(children, indent + 3);
        }
    }

    /// A run of the agent: its process, how it ended, its totals.
    fn run(&mut self, n: &RunNode, indent: usize) {
        let took = millis(n.started.as_deref(), n.ended.as_deref()).map_or(String::new(), |ms| {
            format!(" · {:.1} s", ms as f64 / 1000.0)
        });
        let cost = n.cost_usd.map_or(String::new(), |c| format!(" · ${c:.4}"));
        let stop = n.stop_reason.map_or(n.status.as_str(), RunStop::as_str);
        let plural = if n.turns == 1 { "" } else { "s" };
        let line = format!(
            "{} · {stop} · {} turn{plural} · {}{cost}{took}",
            n.process,
            n.turns,
            tokens(n.usage.input(), n.usage.output_tokens)
        );
        self.push(indent, format!("{} {}", bold("▶ run"), dim(&line)));
    }
}

/// The tree of `session` as JSON: `{session, title, created, items}`.
pub fn json_of(db: &Substrate, session: &str) -> Result<Value> {
    let nodes = tree(db, session, 0)?;
    let body = db.read(|s| s.body(session))?.unwrap_or_default();
    let header = SessionBody::parse(&body);
    let title = Some(header.title).filter(|t| !t.is_empty());
    let created = Some(header.created).filter(|t| !t.is_empty());
    Ok(json!({"session": session, "title": title, "created": created, "items": nodes}))
}

/// `hc trace SESSION [--full] [--json]`.
pub fn show(db: &Arc<Substrate>, session: &str, full: bool, as_json: bool) -> Result<()> {
    if as_json {
        println!("{}", serde_json::to_string_pretty(&json_of(db, session)?)?);
        return Ok(());
    }
    let nodes = tree(db, session, 0)?;
    let body = db.read(|s| s.body(session))?.unwrap_or_default();
    let header = SessionBody::parse(&body);
    let title = Some(header.title).filter(|t| !t.is_empty());
    let created = Some(header.created).filter(|t| !t.is_empty());
    // A sub-agent's session is its process: no title, a start time.
    let title = title.map_or_else(|| "a sub-agent's session".to_owned(), |t| cut(&t, 200));
    let created = created
        .or_else(|| ProcessBody::parse(&body).started)
        .unwrap_or_default();
    let head = format!(
        "{} {session}  {}",
        bold("session"),
        dim(&format!("{title} · {created}"))
    );
    let mut lines = Lines {
        full,
        out: vec![head],
    };
    lines.nodes(&nodes, 0);
    let mut lines = lines.out;
    let calls = nodes.iter().filter(|n| numbered(n)).count();
    if calls > 0 {
        lines.push(dim(&format!("{calls} model call{}: `hc trace {session} --request N` shows the exact request of call N", if calls == 1 { "" } else { "s" })));
    }
    let mut out = std::io::stdout().lock();
    for line in lines {
        use std::io::Write as _;
        let _ = writeln!(out, "{line}");
    }
    Ok(())
}

/// Whether a node is one of the session's numbered model calls.
fn numbered(n: &Node) -> bool {
    matches!(
        n,
        Node::Answer { call: Some(_), .. }
            | Node::Compaction { call: Some(_), .. }
            | Node::LlmCall { call: Some(_), .. }
    )
}
