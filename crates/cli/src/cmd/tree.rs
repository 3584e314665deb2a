//! `hc trace SESSION`: the session's tree (`hc_host::tree`) as lines a
//! person reads — prompts, answers, tool calls with their results,
//! sub-agents nested under their calls, runs with their totals, tokens
//! and cost per call, permission questions and decisions, context
//! events, compactions, interrupts. `--json` gives the same tree for
//! machines.

use crate::style::{bad, bold, cut, dim, ok, shown, warn};
use agent::contract::{Choice, LlmPurpose, PromptSource, RunStop, SessionBody};
use anyhow::Result;
use hc_host::tree::{CallNode, Node, RunNode, json_of, millis, numbered, tree};
use model::StopReason;
use protocol::process::ProcessBody;
use std::sync::Arc;
use substrate::Substrate;

/// How much of a text a line shows.
const CUT: usize = 100;

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
    /// Whether runs name their host (a store hosts share).
    hosts: bool,
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
                    Some(PromptSource::Agent) => "sub-agent result",
                    Some(PromptSource::Message) => "message",
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
                    Choice::Never => "never",
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
            (LlmPurpose::Permission, ..) => format!("auto-mode judgement{call}"),
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
        let host = (n.host.as_deref())
            .filter(|_| self.hosts)
            .map_or(String::new(), |h| format!(" · on {h}"));
        // who it ran for, on a store many share, or when someone else asked
        let others = n.asked_by.is_some() && n.asked_by != n.person;
        let person = (n.person.as_deref())
            .filter(|_| self.hosts || others)
            .map_or(String::new(), |p| match n.via.as_deref() {
                Some(via) => format!(" · by {p} ({via})"),
                None => format!(" · by {p}"),
            });
        let by = (n.asked_by.as_deref())
            .filter(|_| self.hosts || others)
            .map_or(String::new(), |b| format!(" · asked by {b}"));
        let line = format!(
            "{} · {stop} · {} turn{plural} · {}{cost}{took}{host}{person}{by}",
            n.process,
            n.turns,
            tokens(n.usage.input(), n.usage.output_tokens)
        );
        self.push(indent, format!("{} {}", bold("▶ run"), dim(&line)));
    }
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
        hosts: db.is_shared(),
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
