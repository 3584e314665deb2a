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
        let is = |t: &str| item.is_on(t, PlacementType::Instance);
        let node = if is("prompt") {
            json!({"type": "prompt", "text": body["text"], "from": body["from"]})
        } else if is("answer") {
            let numbered = body["call"].is_u64();
            if numbered {
                call_number += 1;
            }
            json!({"type": "answer", "call": if numbered && depth == 0 { json!(call_number) } else { Value::Null },
                   "text": body["text"], "model": body["model"], "usage": body["usage"],
                   "cost_usd": body["cost_usd"], "stop_reason": body["stop_reason"]})
        } else if is("tool-call") {
            call_node(
                db,
                &body,
                results.get(body["tool_use_id"].as_str().unwrap_or_default()),
                depth,
            )?
        } else if is("engine/process") {
            json!({"type": "run", "process": item.id, "program": item.name, "status": body["status"],
                   "stop_reason": body["stop_reason"], "turns": body["turns"], "usage": body["usage"],
                   "cost_usd": body["cost_usd"], "started": body["started"], "ended": body["ended"],
                   "model": body["model"]})
        } else if is("context") {
            if body["system"].is_null() {
                continue;
            }
            json!({"type": "context", "model": body["model"], "tools": body["tools"], "as_of": body["as_of"],
                   "date": body["date"], "instructions": body["instructions"].as_array().map(|a| a.iter().map(|i| i["path"].clone()).collect::<Vec<_>>())})
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
            continue;
        };
        let mut node = node;
        node["id"] = json!(item.id);
        out.push(node);
    }
    Ok(out)
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
    if let Some((started, ended, status)) = timing {
        node["started"] = started;
        node["ended"] = ended;
        node["status"] = status;
    }
    if call["program"] == "agent"
        && let Some(p) = process
        && db.read(|s| s.exists(p))?
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
    let n = |k: &str| usage[k].as_u64().unwrap_or(0);
    let input = n("input_tokens") + n("cache_creation_input_tokens") + n("cache_read_input_tokens");
    format!("{input} in / {} out", n("output_tokens"))
}

/// The tree as lines a person reads.
pub fn render(nodes: &[Value], indent: usize, full: bool, out: &mut Vec<String>) {
    let pad = "  ".repeat(indent);
    let more = |text: &str, out: &mut Vec<String>| {
        for line in text.lines().skip(1) {
            out.push(format!("{pad}    {line}"));
        }
    };
    for n in nodes {
        match n["type"].as_str().unwrap_or("") {
            "prompt" => {
                let who = if n["from"] == "hook" {
                    "hook"
                } else {
                    "prompt"
                };
                let text = text_of(&n["text"], full);
                out.push(format!("{pad}{} {text}", bold(&format!("› {who}"))));
                if full {
                    more(&text, out);
                }
            }
            "answer" => {
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
                out.push(format!(
                    "{pad}{} {}",
                    bold(&format!("● answer {call}")),
                    dim(&format!("{}{cost}{stop}", tokens(&n["usage"])))
                ));
                let text = text_of(&n["text"], full);
                if !text.is_empty() {
                    out.push(format!("{pad}  {}", text.lines().next().unwrap_or("")));
                    if full {
                        more(&text, out);
                    }
                }
            }
            "tool-call" => {
                let program = n["program"].as_str().unwrap_or("?");
                let took = millis(&n["started"], &n["ended"])
                    .map_or(String::new(), |ms| format!(" {ms} ms"));
                let (mark, result) = match &n["result"] {
                    Value::Null => (dim("…"), String::new()),
                    r if r["is_error"] == true => (bad("✗"), text_of(&r["text"], full)),
                    r => (ok("✓"), text_of(&r["text"], full)),
                };
                out.push(format!(
                    "{pad}  {mark} {} {}{}",
                    bold(program),
                    crate::render::summary(program, &n["input"]),
                    dim(&took)
                ));
                if !result.is_empty() {
                    for line in result.lines().take(if full { usize::MAX } else { 1 }) {
                        out.push(format!("{pad}      {}", dim(line)));
                    }
                }
                if let Some(children) = n["children"].as_array() {
                    render(children, indent + 3, full, out);
                }
            }
            "run" => {
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
                out.push(format!(
                    "{pad}{} {}",
                    bold("▶ run"),
                    dim(&format!(
                        "{} · {} · {turns} turn{plural} · {}{cost}{took}",
                        n["process"].as_str().unwrap_or(""),
                        stop,
                        tokens(&n["usage"])
                    ))
                ));
            }
            "context" => {
                let tools = n["tools"].as_array().map_or(0, Vec::len);
                out.push(format!(
                    "{pad}{}",
                    dim(&format!(
                        "◦ context: {} · {} tools · as of commit {} · {}",
                        n["model"].as_str().unwrap_or(""),
                        tools,
                        n["as_of"],
                        n["date"].as_str().unwrap_or("")
                    ))
                ));
            }
            "compaction" => {
                // The summary, not the header the model is shown it under.
                let text = n["text"].as_str().unwrap_or("");
                let summary = text.split_once("]\n\n").map_or(text, |(_, s)| s);
                out.push(format!(
                    "{pad}{} {}",
                    bold("⟳ compaction"),
                    text_of(&Value::from(summary), full)
                ));
            }
            "permission-request" => {
                let program = n["program"].as_str().unwrap_or("?");
                out.push(format!(
                    "{pad}  ? permission for {program} {} — {}",
                    crate::render::summary(program, &n["input"]),
                    n["reason"].as_str().unwrap_or("")
                ));
            }
            "permission-decision" => out.push(format!(
                "{pad}    → {}",
                n["decision"].as_str().unwrap_or("?")
            )),
            "question" => out.push(format!("{pad}  ? {}", text_of(&n["text"], full))),
            "answer-from-person" => out.push(format!("{pad}    → {}", text_of(&n["text"], full))),
            "interrupt" => out.push(format!("{pad}{}", bad("✗ interrupted by the person"))),
            "todo" => {
                let items = n["items"].as_array().map_or(0, Vec::len);
                let done = n["items"].as_array().map_or(0, |a| {
                    a.iter().filter(|i| i["status"] == "completed").count()
                });
                out.push(format!("{pad}  ☐ plan: {done} of {items} done"));
            }
            _ => {}
        }
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
    let mut lines = vec![format!(
        "{} {}  {}",
        bold("session"),
        session,
        dim(&format!(
            "{} · {}",
            body["title"].as_str().unwrap_or(""),
            body["created"].as_str().unwrap_or("")
        ))
    )];
    render(&nodes, 0, full, &mut lines);
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
