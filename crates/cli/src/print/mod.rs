//! `hc run --output-format json | stream-json`: what scripts read, in the
//! shapes of Claude Code's print mode so tools written for it read ours —
//! `system`/`init`, `assistant` and `user` (the API's message shapes, one
//! per message), `stream_event` (with `--include-partial-messages`), and a
//! last `result` — with what we add in fields of our own: the process,
//! usage and cost per model and per sub-agent, and `hc trace` commands.

pub mod sink;

use agent::contract::{Answer, Notice, RunBody, ToolResult};
use serde_json::{Value, json};
use std::io::Write as _;

/// The version of Claude Code whose print mode and control protocol these
/// lines follow (what an Agent SDK checks `system/init` for).
pub const CLAUDE_CODE_LEVEL: &str = "2.1.0";

/// How `hc run` prints.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum OutputFormat {
    /// The answer as it streams; tool calls and the closing line on stderr.
    #[default]
    Text,
    /// One JSON object at the end: the result.
    Json,
    /// One JSON object per line as things happen, the result last.
    StreamJson,
}

/// How a run is printed: `--output-format`, `--include-partial-messages`.
#[derive(Clone, Copy, Debug, Default)]
pub struct Printed {
    /// The format.
    pub format: OutputFormat,
    /// With stream-json: the model's deltas as `stream_event` lines too.
    pub partial: bool,
    /// With text: every line of a shell's output and of a failure's reason.
    pub verbose: bool,
}

/// Writes JSON lines to stdout.
pub struct JsonOut {
    /// Print every line (stream-json), or only the result (json).
    pub stream: bool,
    /// Also print `stream_event` lines.
    pub partial: bool,
    /// The session, named on every line.
    pub session: String,
    /// The model, for a streamed message's `message_start`.
    model: String,
    held: std::sync::Mutex<Held>,
}

/// What waits to be printed. The results of one round of calls land in
/// several commits (in the background, while the next request already
/// streams), and go out as one user message, before the next message's
/// stream events.
#[derive(Default)]
struct Held {
    /// Tool results, with the call that spawned the sub-agent they belong
    /// to (the run's own: `None`).
    results: Vec<(Option<String>, ToolResult)>,
    /// The run's own calls still without a result.
    outstanding: Vec<String>,
    /// Stream events that came while calls were outstanding.
    events: Vec<Value>,
    /// The blocks begun (in order) of the run's own message being
    /// streamed (none: no message begun), so its events read as the API's
    /// own stream.
    blocks: Vec<u64>,
}

impl Held {
    /// Takes the results of `parent`'s conversation.
    fn take(&mut self, parent: Option<&str>) -> Vec<ToolResult> {
        let (mine, others) = std::mem::take(&mut self.results)
            .into_iter()
            .partition(|(p, _)| p.as_deref() == parent);
        self.results = others;
        mine.into_iter().map(|(_, r)| r).collect()
    }
}

impl JsonOut {
    /// A writer for `session`, run with `model`.
    pub fn new(stream: bool, partial: bool, session: String, model: String) -> JsonOut {
        JsonOut {
            stream,
            // Stream events are lines of stream-json only.
            partial: partial && stream,
            session,
            model,
            held: std::sync::Mutex::new(Held::default()),
        }
    }

    fn held(&self) -> std::sync::MutexGuard<'_, Held> {
        self.held.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// One line, if this format prints it.
    pub fn line(&self, mut value: Value) {
        if !self.stream {
            return;
        }
        with_session(&mut value, &self.session);
        emit(&value);
    }

    /// Prints `parent`'s held results as one user message; for the run's
    /// own, then the stream events held behind them.
    fn release(&self, parent: Option<&str>) {
        let (results, events) = {
            let mut held = self.held();
            let results = held.take(parent);
            let events = match parent {
                None => std::mem::take(&mut held.events),
                Some(_) => Vec::new(),
            };
            (results, events)
        };
        if !results.is_empty() {
            let content: Vec<Value> = results
                .iter()
                .map(|r| {
                    json!({"type": "tool_result", "tool_use_id": r.tool_use_id, "content": r.text, "is_error": r.is_error})
                })
                .collect();
            self.line(json!({
                "type": "user", "parent_tool_use_id": parent,
                "message": {"role": "user", "content": content},
            }));
        }
        for event in events {
            self.line(event);
        }
    }

    /// The `system`/`init` line.
    pub fn init(&self, init: &Init<'_>) {
        self.line(json!({
            "type": "system", "subtype": "init", "model": self.model, "tools": init.tools,
            "cwd": init.cwd, "permission_mode": init.mode.as_str(),
            "permissionMode": init.mode.claude_name(),
            "mcp_servers": init.mcp_servers, "slash_commands": init.slash_commands,
            "skills": init.skills, "agents": init.agents,
            "process": init.process, "hc_version": env!("CARGO_PKG_VERSION"),
            // the level of Claude Code's print mode these lines follow
            "claude_code_version": CLAUDE_CODE_LEVEL,
            "apiKeySource": "none", "output_style": "default",
        }));
    }

    /// A delta the agent streamed, as the API's own stream events (a
    /// `message_start` and `content_block_start`/`_stop` around the
    /// deltas, as the API sends them): held while the results of the calls
    /// before it are still coming.
    pub fn partial(&self, notice: &Notice) {
        if !self.partial {
            return;
        }
        let (index, block, delta) = match notice {
            Notice::TextDelta { index, text } => (
                *index,
                json!({"type": "text", "text": ""}),
                json!({"type": "text_delta", "text": text}),
            ),
            Notice::ThinkingDelta { index, text } => (
                *index,
                json!({"type": "thinking", "thinking": ""}),
                json!({"type": "thinking_delta", "thinking": text}),
            ),
            Notice::ToolInputDelta {
                index,
                tool_use_id,
                name,
                json,
            } => (
                *index,
                json!({"type": "tool_use", "id": tool_use_id, "name": name, "input": {}}),
                json!({"type": "input_json_delta", "partial_json": json}),
            ),
            Notice::Discard => {
                // The stream broke and is asked again: a new message.
                self.held().blocks.clear();
                return;
            }
            Notice::ToolStart { .. }
            | Notice::ToolEnd { .. }
            | Notice::Status { .. }
            | Notice::ModelFallback { .. }
            | Notice::Output { .. }
            | Notice::Progress { .. } => return,
        };
        let index = index as u64;
        let mut events = Vec::new();
        let mut held = self.held();
        if held.blocks.is_empty() {
            events.push(json!({"type": "message_start", "message": {
                "id": null, "type": "message", "role": "assistant",
                "model": self.model, "content": [],
                "stop_reason": null, "stop_sequence": null, "usage": {},
            }}));
        }
        if !held.blocks.contains(&index) {
            if let Some(last) = held.blocks.last() {
                events.push(json!({"type": "content_block_stop", "index": last}));
            }
            held.blocks.push(index);
            events.push(
                json!({"type": "content_block_start", "index": index, "content_block": block}),
            );
        }
        events.push(json!({"type": "content_block_delta", "index": index, "delta": delta}));
        let wait = !held.outstanding.is_empty();
        let events = events.into_iter().map(stream_event);
        if wait {
            held.events.extend(events);
            return;
        }
        drop(held);
        for event in events {
            self.line(event);
        }
    }

    /// The end of a streamed message of the run's own, before its
    /// assistant line: its last block's stop, `message_delta` (the stop
    /// reason, the usage), `message_stop`.
    fn end_message(&self, answer: &Answer) {
        let Some(index) = std::mem::take(&mut self.held().blocks).pop() else {
            return;
        };
        self.line(stream_event(
            json!({"type": "content_block_stop", "index": index}),
        ));
        self.line(stream_event(json!({"type": "message_delta",
            "delta": {"stop_reason": answer.stop_reason, "stop_sequence": null},
            "usage": answer.usage})));
        self.line(stream_event(json!({"type": "message_stop"})));
    }

    /// An `answer` chunk, as the API's assistant message.
    /// `parent`: the call that spawned the sub-agent that answered.
    pub fn assistant(&self, answer: &Answer, parent: Option<&str>) {
        self.release(parent);
        if parent.is_none() {
            self.end_message(answer);
        }
        self.line(json!({
            "type": "assistant", "parent_tool_use_id": parent,
            "message": {
                "id": answer.message_id, "type": "message", "role": "assistant",
                "model": answer.model, "content": answer.content,
                "stop_reason": answer.stop_reason, "stop_sequence": null, "usage": answer.usage,
            },
        }));
        // Only a reply that stops for its calls has results coming (one
        // cut at max_tokens has none).
        if parent.is_none() && answer.stop_reason == Some(model::StopReason::ToolUse) {
            self.held().outstanding = answer.call_ids().map(str::to_owned).collect();
        }
    }

    /// `tool-result` chunks, held until the round's last (the run's own)
    /// or the next message of the same conversation (a sub-agent's), so
    /// that one round's results are one user message. `parent`: as for
    /// `assistant`.
    pub fn user(&self, results: &[ToolResult], parent: Option<&str>) {
        let round_done = {
            let mut held = self.held();
            held.results.extend(
                results
                    .iter()
                    .map(|r| (parent.map(str::to_owned), r.clone())),
            );
            if parent.is_some() {
                return;
            }
            held.outstanding
                .retain(|id| !results.iter().any(|r| r.tool_use_id == *id));
            held.outstanding.is_empty()
        };
        if round_done {
            self.release(None);
        }
    }

    /// The `result` object: last on stream-json, the only one on json.
    pub fn result(&self, result: Value) {
        let parents: Vec<Option<String>> = {
            let mut held = self.held();
            held.outstanding.clear();
            let mut parents: Vec<Option<String>> = Vec::new();
            for (p, _) in &held.results {
                if !parents.contains(p) {
                    parents.push(p.clone());
                }
            }
            parents
        };
        for parent in parents {
            self.release(parent.as_deref());
        }
        self.release(None);
        let mut result = result;
        with_session(&mut result, &self.session);
        emit(&result);
    }
}

/// Names the session on a line, and gives the line a `uuid` of its own
/// (as Claude Code's lines have; the SDK requires it of some).
fn with_session(line: &mut Value, session: &str) {
    if let Some(fields) = line.as_object_mut() {
        fields.insert("session_id".into(), json!(session));
        fields.entry("uuid").or_insert_with(|| json!(uuid_v4()));
    }
}

/// A random UUID (version 4).
pub fn uuid_v4() -> String {
    use ring::rand::SecureRandom as _;
    let mut b = [0u8; 16];
    if ring::rand::SystemRandom::new().fill(&mut b).is_err() {
        // no randomness: a time-based one still tells lines apart
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        b.copy_from_slice(&nanos.to_le_bytes());
    }
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let hex: String = b.iter().map(|x| format!("{x:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &hex[..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..]
    )
}

/// An API stream event as print mode wraps it (the run's own messages).
fn stream_event(event: Value) -> Value {
    json!({"type": "stream_event", "parent_tool_use_id": null, "event": event})
}

fn emit(value: &Value) {
    let mut out = std::io::stdout().lock();
    let _ = serde_json::to_writer(&mut out, value);
    let _ = out.write_all(b"\n");
    let _ = out.flush();
}

/// The `result` of a run that could not start or could not be followed:
/// an error, nothing spent, the exit code `hc` ends with.
pub fn failed(message: &str, exit_code: u8, duration_ms: u128) {
    emit(&json!({
        "type": "result", "subtype": "error_during_execution", "is_error": true,
        "result": "", "error": message, "session_id": null, "num_turns": 0,
        "duration_ms": duration_ms as u64, "duration_api_ms": 0, "total_cost_usd": 0.0,
        "usage": {}, "permission_denials": [], "exit_code": exit_code,
    }));
}

/// The `result` object of a finished run: its process body and answer.
pub fn result(
    body: &RunBody,
    answer: &str,
    process: &str,
    session: &str,
    calls: usize,
    duration_ms: u128,
    names: agent::names::ToolNames,
) -> Value {
    use agent::contract::RunStop;
    let totals = &body.totals;
    let subtype = match totals.stop_reason {
        Some(RunStop::EndTurn) => "success",
        Some(RunStop::MaxTurns) => "error_max_turns",
        Some(RunStop::MaxBudget) => "error_max_budget_usd",
        Some(RunStop::StructuredOutputRetries) => "error_max_structured_output_retries",
        Some(RunStop::Interrupted | RunStop::PromptTooLong | RunStop::Error | RunStop::Other)
        | None => "error_during_execution",
    };
    let by_model = model_usage(body);
    let camel = camel_model_usage(&by_model);
    let mut requests: Vec<String> = (1..=calls)
        .map(|n| format!("hc trace {session} --request {n}"))
        .collect();
    requests.truncate(100);
    let mut result = json!({
        "type": "result",
        "subtype": subtype,
        "is_error": subtype != "success",
        "result": answer,
        "num_turns": totals.turns,
        "duration_ms": duration_ms as u64,
        "duration_api_ms": totals.duration_api_ms,
        "duration_tools_ms": totals.work.tool_ms,
        "lines_added": totals.work.lines_added,
        "lines_removed": totals.work.lines_removed,
        "total_cost_usd": totals.cost_usd,
        "usage": totals.usage,
        "permission_denials": denials(body, names),
        "stop_reason": totals.stop_reason.map_or("", |s| s.as_str()),
        "error": totals.stop_message.as_deref().or(body.process.error.as_deref()),
        "process": process,
        "model_usage": by_model,
        "modelUsage": camel,
        "sub_agents": totals.children,
        "trace": {"session": format!("hc trace {session}"), "requests": requests},
    });
    if let Some(output) = &totals.structured_output {
        result["structured_output"] = output.clone();
    }
    if totals.stop_reason == Some(RunStop::StructuredOutputRetries) {
        result["errors"] = json!([totals.stop_message]);
    }
    result
}

/// The run's denials in print mode's shape (`tool_name` as the model
/// names the tool, `tool_use_id`, `tool_input`), with the reason the
/// model was given.
fn denials(body: &RunBody, names: agent::names::ToolNames) -> Vec<Value> {
    body.totals
        .permission_denials
        .iter()
        .map(|d| {
            json!({"tool_name": names.show(&d.program), "tool_use_id": d.tool_use_id, "tool_input": d.input, "reason": d.reason})
        })
        .collect()
}

/// Usage and cost of one model.
#[derive(Default, serde::Serialize)]
struct ModelUsage {
    usage: agent::contract::Tokens,
    cost_usd: f64,
}

/// Usage and cost by model: the run's own under its model, each
/// sub-agent's under its.
fn model_usage(body: &RunBody) -> std::collections::BTreeMap<String, ModelUsage> {
    let totals = &body.totals;
    let mut by_model = std::collections::BTreeMap::new();
    let mut own = totals.usage;
    let mut own_cost = totals.cost_usd;
    for child in &totals.children {
        own = own.less(&child.usage);
        own_cost = own_cost.map(|c| c - child.cost_usd.unwrap_or(0.0));
        add(
            &mut by_model,
            model_name(&child.model),
            &child.usage,
            child.cost_usd,
        );
    }
    if totals.models.len() > 1 {
        // (it fell back: its own calls, by the model each went to)
        for entry in &totals.models {
            add(
                &mut by_model,
                model_name(&entry.model),
                &entry.usage,
                entry.cost_usd,
            );
        }
        return by_model;
    }
    add(&mut by_model, model_name(&totals.model), &own, own_cost);
    by_model
}

fn model_name(model: &str) -> &str {
    if model.is_empty() { "unknown" } else { model }
}

/// `model_usage` in the names print mode's `modelUsage` uses.
fn camel_model_usage(by_model: &std::collections::BTreeMap<String, ModelUsage>) -> Value {
    let mut out = serde_json::Map::new();
    for (model, entry) in by_model {
        let u = &entry.usage;
        out.insert(
            model.clone(),
            json!({
                "inputTokens": u.input_tokens, "outputTokens": u.output_tokens,
                "cacheReadInputTokens": u.cache_read_input_tokens,
                "cacheCreationInputTokens": u.cache_creation_input_tokens,
                "costUSD": entry.cost_usd,
            }),
        );
    }
    Value::Object(out)
}

fn add(
    by_model: &mut std::collections::BTreeMap<String, ModelUsage>,
    model: &str,
    usage: &agent::contract::Tokens,
    cost: Option<f64>,
) {
    let entry = by_model.entry(model.to_owned()).or_default();
    entry.usage.add(usage);
    let total = entry.cost_usd + cost.unwrap_or(0.0);
    entry.cost_usd = (total * 1e6).round() / 1e6;
}

/// What the `system`/`init` line says (Claude Code's fields).
pub struct Init<'a> {
    /// The tools offered.
    pub tools: &'a [String],
    /// The project root.
    pub cwd: &'a str,
    /// The permission mode.
    pub mode: agent::PermissionMode,
    /// The agent's process.
    pub process: &'a str,
    /// `[{"name", "status"}]`.
    pub mcp_servers: &'a [Value],
    /// The slash commands: chat's own, the command files', the MCP prompts'.
    pub slash_commands: &'a [String],
    /// The skills' names.
    pub skills: &'a [String],
    /// The sub-agent types (the built-in one only, for now).
    pub agents: &'a [String],
}
