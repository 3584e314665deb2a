//! A session as a tree of typed nodes — prompts, answers, tool calls with
//! their results, sub-agents nested under their calls, runs with their
//! totals, permission questions and decisions, context events,
//! compactions, interrupts — as `hc trace` shows it and the page draws
//! it; [`json_of`] is the same tree for machines.

use agent::contract::{
    Choice, ContextBody, LlmPurpose, PromptSource, RunBody, RunStop, SessionBody, SessionItem,
    TodoItem, Tokens, ToolCall,
};
use anyhow::Result;
use model::{StopReason, Usage};
use protocol::process::{ProcessBody, ProcessStatus};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::collections::HashMap;
use substrate::{ScopeOpts, Substrate};

/// One node of the tree (`--json` prints them as they are).
#[derive(Serialize)]
#[serde(tag = "type")]
pub enum Node {
    /// A prompt (the person's, a hook's, a command's).
    #[serde(rename = "prompt")]
    Prompt {
        /// The chunk's id.
        id: String,
        /// Its text.
        text: String,
        /// Where it came from (a hook, a command file…), when not the person.
        from: Option<PromptSource>,
    },
    /// A reply of the model on the session.
    #[serde(rename = "answer")]
    Answer {
        /// The chunk's id.
        id: String,
        /// Its number among the session's calls (`--request N`).
        call: Option<usize>,
        /// Its text.
        text: String,
        /// The model.
        model: String,
        /// Tokens used.
        usage: Usage,
        /// What it cost, in US dollars.
        cost_usd: Option<f64>,
        /// Why it stopped.
        stop_reason: Option<StopReason>,
    },
    /// A tool call with its result.
    #[serde(rename = "tool-call")]
    ToolCall(Box<CallNode>),
    /// A run on the session.
    #[serde(rename = "run")]
    Run(Box<RunNode>),
    /// What the agent read before its first request.
    #[serde(rename = "context")]
    Context {
        /// The chunk's id.
        id: String,
        /// The model.
        model: String,
        /// The tools offered.
        tools: Vec<String>,
        /// The commit it was read as of.
        as_of: u64,
        /// The date the agent was told.
        date: String,
        /// The instruction files read.
        instructions: Vec<String>,
    },
    /// The session summarised.
    #[serde(rename = "compaction")]
    Compaction {
        /// The chunk's id.
        id: String,
        /// Its text.
        text: String,
        /// Tokens used.
        usage: Usage,
        /// Its number among the session's calls (`--request N`).
        #[serde(skip_serializing_if = "Option::is_none")]
        call: Option<usize>,
    },
    /// A permission asked.
    #[serde(rename = "permission-request")]
    PermissionRequest {
        /// The chunk's id.
        id: String,
        /// The program.
        program: String,
        /// Its input.
        input: Value,
        /// Why it asks.
        reason: String,
    },
    /// A permission decided.
    #[serde(rename = "permission-decision")]
    PermissionDecision {
        /// The chunk's id.
        id: String,
        /// What was decided.
        decision: Choice,
        /// What the decision said to the model.
        message: Option<String>,
    },
    /// The agent's question to the person.
    #[serde(rename = "question")]
    Question {
        /// The chunk's id.
        id: String,
        /// Its text.
        text: String,
    },
    /// The person's answer.
    #[serde(rename = "answer-from-person")]
    AnswerFromPerson {
        /// The chunk's id.
        id: String,
        /// Its text.
        text: String,
    },
    /// The run interrupted.
    #[serde(rename = "interrupt")]
    Interrupt {
        /// The chunk's id.
        id: String,
    },
    /// The agent's to-do list.
    #[serde(rename = "todo")]
    Todo {
        /// The chunk's id.
        id: String,
        /// The list's items.
        items: Vec<TodoItem>,
    },
    /// A plan.
    #[serde(rename = "plan")]
    Plan {
        /// The chunk's id.
        id: String,
        /// Its text.
        text: String,
        /// Whether the agent waits for approval.
        ask: bool,
    },
    /// A hook put to the driving program.
    #[serde(rename = "hook-callback")]
    HookCallback {
        /// The chunk's id.
        id: String,
        /// The hook event.
        event: String,
        /// The callback the driving program registered.
        callback_id: String,
    },
    /// What the driving program's hook answered.
    #[serde(rename = "hook-answer")]
    HookAnswer {
        /// The chunk's id.
        id: String,
        /// What the callback answered.
        output: Value,
        /// The error, when it failed.
        error: Option<String>,
    },
    /// A model call beside the conversation (`call_llm`, a compression).
    #[serde(rename = "llm-call")]
    LlmCall {
        /// The chunk's id.
        id: String,
        /// Its number among the session's calls (`--request N`).
        call: Option<usize>,
        /// What the call was for.
        purpose: LlmPurpose,
        /// The model.
        model: String,
        /// What the model was asked.
        prompt: String,
        /// Its text.
        text: String,
        /// The error, when it failed.
        error: Option<String>,
        /// Tokens used.
        usage: Usage,
        /// What it cost, in US dollars.
        cost_usd: f64,
        /// The block it was for.
        block: Option<String>,
        /// The place in the block.
        path: Option<String>,
    },
    /// An entry the kernel saved to a block.
    #[serde(rename = "block-save")]
    BlockSave {
        /// The chunk's id.
        id: String,
        /// The block it was for.
        block: String,
        /// The place in the block.
        path: String,
        /// Its text.
        text: String,
        /// Entries compressed to make room.
        compressed: Vec<String>,
        /// Entries left for a later compression.
        deferred: Vec<String>,
        /// Whether the block grew a level.
        grew: bool,
    },
}

/// A tool call with its result, its process's timing, and — for a
/// sub-agent — its own tree.
#[derive(Serialize)]
pub struct CallNode {
    /// The chunk's id.
    pub id: String,
    /// The program.
    pub program: String,
    /// Its input.
    pub input: Value,
    /// Its process.
    pub process: Option<String>,
    /// The model's id of the call.
    pub tool_use_id: String,
    /// What it came to (none yet).
    pub result: Option<ResultNode>,
    /// When its process started.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub started: Option<Option<String>>,
    /// When its process ended.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ended: Option<Option<String>>,
    /// Its process's status.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<ProcessStatus>,
    /// A sub-agent's own tree.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub children: Option<Vec<Node>>,
}

/// What a call came to.
#[derive(Serialize)]
pub struct ResultNode {
    /// Its text.
    pub text: String,
    /// Whether it failed.
    pub is_error: bool,
    /// Whether it was refused by a permission.
    pub denied: bool,
}

/// A run on the session: its process and totals.
#[derive(Serialize)]
pub struct RunNode {
    /// The chunk's id.
    pub id: String,
    /// Its process.
    pub process: String,
    /// The program.
    pub program: Option<String>,
    /// Its process's status.
    pub status: ProcessStatus,
    /// Why it stopped.
    pub stop_reason: Option<RunStop>,
    /// Its model turns.
    pub turns: u32,
    /// Tokens used.
    pub usage: Tokens,
    /// What it cost, in US dollars.
    pub cost_usd: Option<f64>,
    /// When its process started.
    pub started: Option<String>,
    /// When its process ended.
    pub ended: Option<String>,
    /// The model.
    pub model: String,
    /// The host it ran on (a process names its engine's).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    /// Who asked for it in the background.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub asked_by: Option<String>,
    /// The person it ran for, and the front end it came through.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub person: Option<String>,
    /// See `person`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub via: Option<String>,
}

/// The tree of `scope` (a session, or a sub-agent's process).
pub fn tree(db: &Substrate, scope: &str, depth: usize) -> Result<Vec<Node>> {
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
            .filter_map(|t| Named::deserialize(t).ok().map(|n| n.name)),
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
        host: run.process.host.clone(),
        asked_by: (run.process.placement.as_ref()).and_then(|p| p.asked_by.clone()),
        person: run.process.person.clone(),
        via: run.process.via.clone(),
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
        // (a message is shown by the prompt that brought it to the model)
        SessionItem::Context(_)
        | SessionItem::Message(_)
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
pub fn millis(started: Option<&str>, ended: Option<&str>) -> Option<u128> {
    let a = humantime::parse_rfc3339(started?).ok()?;
    let b = humantime::parse_rfc3339(ended?).ok()?;
    b.duration_since(a).ok().map(|d| d.as_millis())
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

/// Whether a node is one of the session's numbered model calls.
pub fn numbered(n: &Node) -> bool {
    matches!(
        n,
        Node::Answer { call: Some(_), .. }
            | Node::Compaction { call: Some(_), .. }
            | Node::LlmCall { call: Some(_), .. }
    )
}

/// A tool definition, as far as the tree names it.
#[derive(serde::Deserialize)]
struct Named {
    name: String,
}
