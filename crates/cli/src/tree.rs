//! `hc trace SESSION`: the session as a readable tree — prompts, answers,
//! tool calls with their results, sub-agents nested under their calls,
//! runs with their totals, tokens and cost per call, permission questions
//! and decisions, context events, compactions, interrupts. `--json` gives
//! the same tree for machines.

use crate::style::{bad, bold, cut, dim, ok};
use anyhow::Result;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::Arc;
use substrate::{PlacementType, ScopeOpts, Substrate};

/// How much of a text a line shows.
const CUT: usize = 100;

/// The tree of `scope` (a session, or a sub-agent's process).
pub fn tree(db: &Substrate, scope: &str, depth: usize) -> Result<Vec<Value>> {
    let items = db.scope(&[scope], &ScopeOpts::default())?.chunks;
    let results: HashMap<String, Value> = items
        .iter()
        .filter(|c| c.is_on("tool-result", PlacementType::Instance))
        .map(|c| {
            let b = c.body_value();
            (b["tool_use_id"].as_str().unwrap_or_default().to_owned(), b)
        })
        .collect();
    let mut call_number = 0;
    let mut out = Vec::new();
    for item in &items {
        let body = item.body_value();
        // Numbered as `--request N` numbers them: the session's own calls
        // (answers, and the summary call of a compaction).
        let numbered = agent::is_call(item);
        if numbered {
            call_number += 1;
        }
        let node = if item.is_on("answer", PlacementType::Instance) {
            let call = if numbered && depth == 0 {
                json!(call_number)
            } else {
                Value::Null
            };
            Some(
                json!({"type": "answer", "call": call, "text": body["text"], "model": body["model"],
                        "usage": body["usage"], "cost_usd": body["cost_usd"], "stop_reason": body["stop_reason"]}),
            )
        } else if item.is_on("tool-call", PlacementType::Instance) {
            let result = results.get(body["tool_use_id"].as_str().unwrap_or_default());
            Some(call_node(db, &body, result, depth)?)
        } else {
            plain_node(item, &body).map(|mut node| {
                if numbered && depth == 0 {
                    node["call"] = json!(call_number);
                }
                node
            })
        };
        if let Some(mut node) = node {
            node["id"] = json!(item.id);
            out.push(node);
        }
    }
    Ok(out)
}

/// The node of a chunk that needs nothing but itself (`None`: not shown).
fn plain_node(item: &substrate::ChunkItem, body: &Value) -> Option<Value> {
    let is = |t: &str| item.is_on(t, PlacementType::Instance);
    let node = if is("prompt") {
        json!({"type": "prompt", "text": body["text"], "from": body["from"]})
    } else if is("engine/process") {
        json!({"type": "run", "process": item.id, "program": item.name, "status": body["status"],
               "stop_reason": body["stop_reason"], "turns": body["turns"], "usage": body["usage"],
               "cost_usd": body["cost_usd"], "started": body["started"], "ended": body["ended"],
               "model": body["model"]})
    } else if is("context") {
        // Only an event the agent filled in (the host's placeholder is empty).
        if body["system"].is_null() {
            return None;
        }
        let instructions = body["instructions"]
            .as_array()
            .map(|a| a.iter().map(|i| i["path"].clone()).collect::<Vec<_>>());
        json!({"type": "context", "model": body["model"], "tools": body["tools"], "as_of": body["as_of"],
               "date": body["date"], "instructions": instructions})
    } else if is("compaction") {
        json!({"type": "compaction", "text": body["text"], "usage": body["usage"]})
    } else if is("permission-request") {
        json!({"type": "permission-request", "program": body["program"], "input": body["input"], "reason": body["reason"]})
    } else if is("permission-decision") {
        json!({"type": "permission-decision", "decision": body["decision"], "message": body["message"]})
    } else if is("user-question") {
        json!({"type": "question", "text": body["text"]})
    } else if is("user-answer") {
        json!({"type": "answer-from-person", "text": body["text"]})
    } else if is("interrupt") {
        json!({"type": "interrupt"})
    } else if is("todo") {
        json!({"type": "todo", "items": body["items"]})
    } else {
        return None;
    };
    Some(node)
}

/// A tool call with its result, its process's timing, and — for a
/// sub-agent — its own tree.
fn call_node(db: &Substrate, call: &Value, result: Option<&Value>, depth: usize) -> Result<Value> {
    let process = call["process"].as_str();
    let timing = match process {
        Some(p) => db.read(|s| s.body(p))?.map(|b| {
            (
                b["started"].clone(),
                b["ended"].clone(),
                b["status"].clone(),
            )
        }),
        None => None,
    };
    let mut node = json!({
        "type": "tool-call", "program": call["program"], "input": call["input"], "process": process,
        "tool_use_id": call["tool_use_id"],
        "result": result.map(|r| json!({"text": r["text"], "is_error": r["is_error"], "denied": r["denied"]})),
    });
    let ran = timing.is_some();
    if let Some((started, ended, status)) = timing {
        node["started"] = started;
        node["ended"] = ended;
        node["status"] = status;
    }
    if call["program"] == "agent"
        && ran
        && let Some(p) = process
    {
        node["children"] = json!(tree(db, p, depth + 1)?);
    }
    Ok(node)
}

/// Milliseconds between two RFC 3339 times.
fn millis(started: &Value, ended: &Value) -> Option<u128> {
    let a = humantime::parse_rfc3339(started.as_str()?).ok()?;
    let b = humantime::parse_rfc3339(ended.as_str()?).ok()?;
    b.duration_since(a).ok().map(|d| d.as_millis())
}

fn text_of(v: &Value, full: bool) -> String {
    let t = v.as_str().unwrap_or("");
    if full {
        t.trim_end().to_owned()
    } else {
        cut(t, CUT)
    }
}

fn tokens(usage: &Value) -> String {
    let input = crate::output::input_tokens(usage);
    format!(
        "{input} in / {} out",
        usage["output_tokens"].as_u64().unwrap_or(0)
    )
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

    fn nodes(&mut self, nodes: &[Value], indent: usize) {
        for n in nodes {
            self.node(n, indent);
        }
    }

    fn node(&mut self, n: &Value, indent: usize) {
        let full = self.full;
        match n["type"].as_str().unwrap_or("") {
            "prompt" => {
                let who = if n["from"] == "hook" {
                    "hook"
                } else {
                    "prompt"
                };
                let head = format!("{} ", bold(&format!("› {who}")));
                self.text(indent, head, &text_of(&n["text"], full));
            }
            "answer" => self.answer(n, indent),
            "tool-call" => self.call(n, indent),
            "run" => self.run(n, indent),
            "context" => {
                let tools = n["tools"].as_array().map_or(0, Vec::len);
                let model = n["model"].as_str().unwrap_or("");
                let date = n["date"].as_str().unwrap_or("");
                let line = format!(
                    "◦ context: {model} · {tools} tools · as of commit {} · {date}",
                    n["as_of"]
                );
                self.push(indent, dim(&line));
            }
            "compaction" => {
                // The summary, not the header the model is shown it under.
                let text = n["text"].as_str().unwrap_or("");
                let summary = text.split_once("]\n\n").map_or(text, |(_, s)| s);
                let call = n["call"]
                    .as_u64()
                    .map_or(String::new(), |c| format!(" #{c}"));
                let head = format!("{} ", bold(&format!("⟳ compaction{call}")));
                self.text(indent, head, &text_of(&Value::from(summary), full));
            }
            "permission-request" => {
                let program = n["program"].as_str().unwrap_or("?");
                let input = crate::render::summary(program, &n["input"]);
                let reason = n["reason"].as_str().unwrap_or("");
                self.push(
                    indent + 1,
                    format!("? permission for {program} {input} — {reason}"),
                );
            }
            "permission-decision" => {
                self.push(
                    indent + 2,
                    format!("→ {}", n["decision"].as_str().unwrap_or("?")),
                );
            }
            "question" => self.text(indent + 1, "? ".into(), &text_of(&n["text"], full)),
            "answer-from-person" => self.text(indent + 2, "→ ".into(), &text_of(&n["text"], full)),
            "interrupt" => self.push(indent, bad("✗ interrupted by the person")),
            "todo" => {
                let items = n["items"].as_array().map_or(&[][..], Vec::as_slice);
                let done = items.iter().filter(|i| i["status"] == "completed").count();
                self.push(
                    indent + 1,
                    format!("☐ plan: {done} of {} done", items.len()),
                );
            }
            _ => {}
        }
    }

    fn answer(&mut self, n: &Value, indent: usize) {
        let call = n["call"]
            .as_u64()
            .map_or(String::new(), |c| format!("#{c} "));
        let cost = n["cost_usd"]
            .as_f64()
            .map_or(String::new(), |c| format!(" · ${c:.4}"));
        let stop = match n["stop_reason"].as_str() {
            Some("end_turn" | "tool_use") | None => String::new(),
            Some(other) => format!(" · {other}"),
        };
        let tokens = tokens(&n["usage"]);
        self.push(
            indent,
            format!(
                "{} {}",
                bold(&format!("● answer {call}")),
                dim(&format!("{tokens}{cost}{stop}"))
            ),
        );
        let text = text_of(&n["text"], self.full);
        if !text.is_empty() {
            self.text(indent + 1, String::new(), &text);
        }
    }

    /// A tool call, its result, and a sub-agent's tree under it.
    fn call(&mut self, n: &Value, indent: usize) {
        let program = n["program"].as_str().unwrap_or("?");
        let took =
            millis(&n["started"], &n["ended"]).map_or(String::new(), |ms| format!(" {ms} ms"));
        let (mark, result) = match &n["result"] {
            Value::Null => (dim("…"), String::new()),
            r if r["is_error"] == true => (bad("✗"), text_of(&r["text"], self.full)),
            r => (ok("✓"), text_of(&r["text"], self.full)),
        };
        let input = crate::render::summary(program, &n["input"]);
        // A sub-agent is a session of its own: its process names it.
        let own = match (&n["children"], n["process"].as_str()) {
            (Value::Array(_), Some(p)) => format!(" · {p}"),
            _ => String::new(),
        };
        let took = dim(&format!("{took}{own}"));
        self.push(
            indent + 1,
            format!("{mark} {} {input}{took}", bold(program)),
        );
        let shown = if self.full { usize::MAX } else { 1 };
        for line in result.lines().take(shown) {
            self.push(indent + 3, dim(line));
        }
        if let Some(children) = n["children"].as_array() {
            self.nodes(children, indent + 3);
        }
    }

    /// A run of the agent: its process, how it ended, its totals.
    fn run(&mut self, n: &Value, indent: usize) {
        let took = millis(&n["started"], &n["ended"]).map_or(String::new(), |ms| {
            format!(" · {:.1} s", ms as f64 / 1000.0)
        });
        let cost = n["cost_usd"]
            .as_f64()
            .map_or(String::new(), |c| format!(" · ${c:.4}"));
        let stop = n["stop_reason"]
            .as_str()
            .or(n["status"].as_str())
            .unwrap_or("");
        let turns = n["turns"].as_u64().unwrap_or(0);
        let plural = if turns == 1 { "" } else { "s" };
        let process = n["process"].as_str().unwrap_or("");
        let line = format!(
            "{process} · {stop} · {turns} turn{plural} · {}{cost}{took}",
            tokens(&n["usage"])
        );
        self.push(indent, format!("{} {}", bold("▶ run"), dim(&line)));
    }
}

/// `hc trace SESSION [--full] [--json]`.
pub fn show(db: &Arc<Substrate>, session: &str, full: bool, as_json: bool) -> Result<()> {
    let nodes = tree(db, session, 0)?;
    if as_json {
        let body = db.read(|s| s.body(session))?.unwrap_or_default();
        println!(
            "{}",
            serde_json::to_string_pretty(
                &json!({"session": session, "title": body["title"], "created": body["created"], "items": nodes})
            )?
        );
        return Ok(());
    }
    let body = db.read(|s| s.body(session))?.unwrap_or_default();
    // A sub-agent's session is its process: no title, a start time.
    let title = body["title"].as_str().unwrap_or("a sub-agent's session");
    let created = body["created"]
        .as_str()
        .or(body["started"].as_str())
        .unwrap_or("");
    let header = format!(
        "{} {session}  {}",
        bold("session"),
        dim(&format!("{title} · {created}"))
    );
    let mut lines = Lines {
        full,
        out: vec![header],
    };
    lines.nodes(&nodes, 0);
    let mut lines = lines.out;
    let calls = nodes.iter().filter(|n| n["call"].is_u64()).count();
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
