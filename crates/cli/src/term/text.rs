//! A run shown on the terminal (the text sink): the answer streamed to
//! stdout as it comes, each tool call one compact line on stderr (an
//! edit with its diff), status lines, a progress line while a tool runs,
//! and the closing summary. The questions a run asks are put to the
//! person by the terminal answerer (`answerer.rs`).

use agent::contract::{Answer, Notice, Plan, RunBody, ToolResult};
use anyhow::Result;
use engine::Engine;
use hc_host::follow::{Ended, Sink};
use serde_json::Value;
use std::collections::HashMap;
use std::io::{IsTerminal, Write};
use std::time::Instant;

use crate::describe::summary;
use crate::style::{paint_err, shown};
use crate::term::spinner::Spinner;

/// A tool call under way, as the person sees it.
struct Call {
    program: String,
    /// One line: the program and its input in a few words.
    line: String,
    input: Value,
}

/// At most this many lines of an edit's diff are shown.
const DIFF_LINES: usize = 12;

/// Shows one run as text.
pub struct TextSink {
    engine: Engine,
    /// Calls started and not ended: tool_use_id → the call.
    calls: HashMap<String, Call>,
    spinner: Spinner,
    /// Whether stdout is in the middle of a line.
    open_line: bool,
    /// Whether answer text was printed, and a tool ran since.
    printed: bool,
    gap: bool,
    stdout_tty: bool,
    /// The last line a running tool printed.
    progress: Option<String>,
    /// The answer text printed from the deltas of the reply under way.
    streamed: String,
    /// After a `lagged` (deltas may be lost), text comes from the answers
    /// committed instead of the deltas, so that none is missing.
    from_commits: bool,
    /// A call that changes things (a program not read-only) ran and
    /// succeeded.
    changed: bool,
    /// A `shell` call failed: its result is read for what it says of why.
    failed_shell: bool,
}

impl TextSink {
    /// A sink for one run of `engine`.
    pub fn new(engine: Engine) -> TextSink {
        TextSink {
            engine,
            calls: HashMap::new(),
            spinner: Spinner::new(),
            open_line: false,
            printed: false,
            gap: false,
            stdout_tty: std::io::stdout().is_terminal(),
            progress: None,
            streamed: String::new(),
            from_commits: false,
            changed: false,
            failed_shell: false,
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
                        .map(|r| format!("--allow {}", agent::permissions::command::quote(r)))
                        .collect();
                    format!(" (allow it with {})", flags.join(" "))
                }
            };
            let mark = paint_err("33", "⊘");
            self.line(&format!("{mark} {} — denied{how}", call.line.trim_end()));
            return;
        }
        if !failed && !self.changed && !hc_host::describe::read_only(&self.engine, &call.program) {
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

impl Sink for TextSink {
    fn notice(&mut self, notice: &Notice) {
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

    fn progress(&mut self, line: String) {
        self.progress = Some(line);
    }

    /// The reply whose deltas were printed is committed.
    fn reply_committed(&mut self) {
        if !self.from_commits {
            self.streamed.clear();
        }
    }

    fn wants_answers(&self) -> bool {
        self.from_commits
    }

    /// (a failed shell's result may say why: no network)
    fn wants_results(&self) -> bool {
        self.failed_shell
    }

    /// The run's own answer, once text comes from the commits.
    fn answer(&mut self, answer: &Answer, parent: Option<&str>) {
        if parent.is_none() {
            self.print_committed(&answer.text);
        }
    }

    /// What the person must know to fix a failure (a shell with no
    /// network) is said under its line, not only to the model.
    fn results(&mut self, results: &[ToolResult], _parent: Option<&str>) {
        self.failed_shell = false;
        for note in results
            .iter()
            .filter_map(|r| r.text.lines().find(|l| l.starts_with("[no network:")))
        {
            self.line(&format!("  {}", shown(note)));
        }
    }

    /// A plan of the run's own, printed on stdout as an answer is.
    fn plan(&mut self, plan: &Plan, own: bool) {
        if own {
            self.gap = true;
            self.print(&format!("Plan:\n\n{}\n", plan.text.trim_end()));
        }
    }

    fn lagged(&mut self) {
        self.from_commits = true;
    }

    /// The progress line, while nothing else is said.
    fn tick(&mut self) {
        if self.open_line {
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

    fn say(&mut self, text: &str) {
        self.line(text);
    }

    fn pause(&mut self) {
        self.spinner.clear();
        self.end_line();
    }

    fn finish(&mut self) {
        self.spinner.clear();
        if self.open_line {
            println!();
            self.open_line = false;
        }
    }

    fn ended(&mut self, ended: &Ended<'_>) -> Result<()> {
        let denials = &ended.body.totals.permission_denials;
        let all_denied = !self.changed
            && denials
                .iter()
                .any(|d| !hc_host::describe::read_only(&self.engine, &d.program));
        summary_line(ended.body, ended.started, all_denied);
        Ok(())
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

/// The closing line of a finished run on stderr (with its denials
/// counted), and why it stopped when it did not finish; `all_denied`:
/// calls that would change things were denied, and none ran.
fn summary_line(body: &RunBody, started: Instant, all_denied: bool) {
    let totals = &body.totals;
    let cost = match totals.cost_usd {
        Some(c) => format!("${c:.4}"),
        None => "cost unknown".to_owned(),
    };
    let turns = totals.turns;
    let denials = totals.permission_denials.len();
    let denied = match denials {
        0 => String::new(),
        1 => " · 1 call denied".to_owned(),
        n => format!(" · {n} calls denied"),
    };
    eprintln!(
        "— {turns} turn{} · {} in / {} out tokens · {cost}{denied} · {:.1} s",
        if turns == 1 { "" } else { "s" },
        totals.usage.input(),
        totals.usage.output_tokens,
        started.elapsed().as_secs_f64()
    );
    if all_denied {
        eprintln!(
            "hc: nothing was changed: every call that would have changed something was \
             denied. Allow it with the --allow flags above, add the rules to [permissions] \
             in .hermitcrab/config.toml, or run on a terminal to be asked."
        );
    }
    if body.exit_code() != 0 {
        let message = totals
            .stop_message
            .clone()
            .or_else(|| {
                body.process
                    .error
                    .as_ref()
                    .map(|e| format!("the agent failed ({e})"))
            })
            .unwrap_or_else(|| "the run did not finish".into());
        eprintln!("hc: {}", crate::style::shown(&message));
        if totals.stop_reason.is_none()
            && let Some(tail) = &body.process.stderr_tail
        {
            eprintln!("{}", crate::style::shown(tail.trim_end()));
        }
    }
}
