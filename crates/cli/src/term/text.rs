//! A run shown on the terminal (the text sink): the answer streamed to
//! stdout as it comes (markdown drawn and wrapped on a terminal, raw when
//! piped), each tool call a compact line on stderr (`calls.rs`: an edit
//! with its diff, a shell with its exit code and last lines, a failure
//! with why), status lines, a progress line while a tool runs, and the
//! closing summary. The questions a run asks are put to the
//! person by the terminal answerer (`answerer.rs`).

use agent::contract::{Answer, Notice, Plan, RunBody, ToolResult};
use anyhow::Result;
use engine::Engine;
use hc_host::follow::{Ended, Sink};
use std::collections::HashMap;
use std::io::{IsTerminal, Write};
use std::time::Instant;

use crate::describe::summary;
use crate::style::{paint_err, shown};
use crate::term::calls::{Call, Detail};
use crate::term::markdown::Markdown;
use crate::term::spinner::Spinner;

/// Shows one run as text.
pub struct TextSink {
    engine: Engine,
    /// Calls started and not ended: tool_use_id → the call.
    calls: HashMap<String, Call>,
    /// Calls ended whose line waits for their result (a shell's exit code
    /// and output, a failure's reason): id, call, failed.
    waiting: Vec<(String, Call, bool)>,
    /// `--verbose`: every line of a shell's output and of a reason.
    verbose: bool,
    /// The answer as a terminal draws it (none when stdout is piped).
    markdown: Option<Markdown>,
    /// A "waiting for …" status, shown on the progress line only (it is
    /// over once answered).
    waiting_status: Option<String>,
    spinner: Spinner,
    /// Whether stdout is in the middle of a line.
    open_line: bool,
    /// Whether answer text was printed, and a tool ran since.
    printed: bool,
    gap: bool,
    /// Whether stdout's open line is ended before a line on stderr: on a
    /// terminal, or when both go to one file.
    breaks: bool,
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
}

impl TextSink {
    /// A sink for one run of `engine`; `verbose`: every line under a call.
    /// A sink for a run followed from another process (`hc attach`): its
    /// text from what it commits (its deltas stay with its engine).
    pub fn following(engine: Engine) -> TextSink {
        let mut sink = TextSink::new(engine, false);
        sink.from_commits = true;
        sink
    }

    pub fn new(engine: Engine, verbose: bool) -> TextSink {
        let stdout_tty = std::io::stdout().is_terminal();
        TextSink {
            engine,
            calls: HashMap::new(),
            waiting: Vec::new(),
            verbose,
            markdown: stdout_tty.then(|| {
                Markdown::new(
                    crate::term::markdown::terminal_width(),
                    crate::style::colour(),
                )
            }),
            waiting_status: None,
            spinner: Spinner::new(),
            open_line: false,
            printed: false,
            gap: false,
            breaks: stdout_tty || one_file(),
            progress: None,
            streamed: String::new(),
            from_commits: false,
            changed: false,
        }
    }

    /// Answer text as it streams, on stdout (on a terminal, drawn a whole
    /// line at a time).
    fn print(&mut self, text: &str) {
        self.spinner.clear();
        let mut out = std::io::stdout().lock();
        if self.gap && self.printed {
            // A new answer after tools: a paragraph of its own.
            let _ = out.write_all(if self.open_line { b"\n\n" } else { b"\n" });
        }
        self.gap = false;
        self.printed = true;
        let text = shown(text);
        let drawn = match &mut self.markdown {
            Some(md) => std::borrow::Cow::Owned(md.push(&text)),
            None => text,
        };
        let _ = out.write_all(drawn.as_bytes());
        let _ = out.flush();
        if !drawn.is_empty() {
            self.open_line = !drawn.ends_with('\n');
        }
        if self.markdown.as_ref().is_some_and(Markdown::pending) {
            self.open_line = true;
        }
    }

    /// The part of a line the terminal's markdown holds, drawn.
    fn flush_markdown(&mut self) {
        if let Some(md) = &mut self.markdown
            && md.pending()
        {
            let rest = md.finish();
            let mut out = std::io::stdout().lock();
            let _ = out.write_all(rest.as_bytes());
            let _ = out.flush();
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
    fn tool_end(
        &mut self,
        id: &str,
        failed: bool,
        denied: Option<&[String]>,
        detail: Option<Detail<'_>>,
    ) {
        let Some(call) = self.calls.remove(id) else {
            return;
        };
        self.progress = None;
        // (its line waits for its result already: it came from a commit)
        if self.waiting.iter().any(|(w, ..)| w == id) {
            return;
        }
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
            // auto mode's judge says why
            let why = detail
                .and_then(|d| d.text.split_once("by auto mode: "))
                .map(|(_, reason)| format!(" by auto mode: {}", shown(reason.trim())))
                .unwrap_or_default();
            self.line(&format!(
                "{mark} {} — denied{why}{how}",
                call.line.trim_end()
            ));
            return;
        }
        if !failed && !self.changed && !hc_host::describe::read_only(&self.engine, &call.program) {
            self.changed = true;
        }
        if call.waits_for_result(failed) && (detail.is_none() || self.from_commits) {
            self.waiting.push((id.to_owned(), call, failed));
            return;
        }
        for line in call.ended(failed, detail, self.verbose) {
            self.line(&line);
        }
    }

    /// A line on stderr, after ending stdout's open line on a terminal.
    fn line(&mut self, text: &str) {
        self.spinner.clear();
        self.end_line();
        eprintln!("  {text}");
    }

    /// Ends stdout's open line on a terminal — and when stdout and stderr
    /// are one file (`> log 2>&1`), so that a tool's line never runs on
    /// from the answer; piped alone, stdout is the answer as written.
    fn end_line(&mut self) {
        self.flush_markdown();
        if self.open_line && self.breaks {
            println!();
            self.open_line = false;
        }
    }
}

impl Sink for TextSink {
    fn notice(&mut self, notice: &Notice) {
        if !matches!(notice, Notice::Status { .. }) {
            self.waiting_status = None;
        }
        match notice {
            Notice::TextDelta { text, .. } if !self.from_commits => {
                self.streamed.push_str(text);
                self.print(text);
            }
            // the text before a call is whole: drawn now, not when the
            // call ends (the progress line needs the line to itself)
            Notice::ToolInputDelta { .. } => self.end_line(),
            Notice::ToolStart {
                tool_use_id,
                program,
                input,
            } => {
                self.end_line();
                self.gap = true;
                let call = Call {
                    program: program.clone(),
                    line: format!("{} {}", shown(program), summary(program, input)),
                    input: input.clone(),
                    started: Instant::now(),
                };
                self.calls.insert(tool_use_id.clone(), call);
            }
            Notice::ToolEnd {
                tool_use_id,
                is_error,
                denied,
                allow,
                said,
                exit_code,
                timed_out,
                ..
            } => {
                // what the notice says, when it is all the lines shown
                let whole = said
                    .as_deref()
                    .filter(|s| !self.verbose || s.len() < agent::contract::SAID_BYTES);
                let detail = whole.map(|text| Detail {
                    text,
                    exit_code: *exit_code,
                    timed_out: *timed_out,
                });
                self.tool_end(
                    tool_use_id,
                    *is_error,
                    denied.then_some(allow.as_slice()),
                    detail,
                )
            }
            // (a wait for a person is over once answered: on a terminal it
            // is said on the progress line only)
            Notice::Status {
                text,
                waiting: true,
            } if self.spinner.on() => {
                self.waiting_status = Some(text.clone());
            }
            Notice::Status { text, .. } => self.line(&format!("· {}", shown(text))),
            Notice::Discard => self.line("· the reply broke off; it is being asked again"),
            Notice::ModelFallback {
                trigger,
                original_model,
                fallback_model,
            } => {
                let why = match trigger.as_str() {
                    "overloaded" => "is overloaded",
                    _ => "is not found",
                };
                let line = format!("{original_model} {why}: going on with {fallback_model}");
                self.line(&format!("· {}", shown(&line)));
            }
            Notice::ThinkingDelta { .. }
            | Notice::TextDelta { .. }
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

    /// (a shell's result says its exit code and output; a failure's, why)
    fn wants_results(&self) -> bool {
        !self.waiting.is_empty()
    }

    /// Calls come from the commits when notices do not (`hc attach`).
    fn wants_calls(&self) -> bool {
        self.from_commits
    }

    /// A call committed: running (its line on the progress line), its
    /// line drawn when its result comes.
    fn call(&mut self, call: &agent::contract::ToolCall) {
        let id = &call.tool_use_id;
        if self.waiting.iter().any(|(w, ..)| w == id) {
            return;
        }
        self.end_line();
        self.gap = true;
        let program = &call.program;
        let running = Call {
            program: program.clone(),
            line: format!("{} {}", shown(program), summary(program, &call.input)),
            input: call.input.clone(),
            started: Instant::now(),
        };
        self.waiting.push((id.clone(), running.clone(), false));
        self.calls.entry(id.clone()).or_insert(running);
    }

    /// The run's own answer, once text comes from the commits.
    fn answer(&mut self, answer: &Answer, parent: Option<&str>) {
        if parent.is_none() {
            self.print_committed(&answer.text);
        }
    }

    /// The lines of calls that waited for their results.
    fn results(&mut self, results: &[ToolResult], parent: Option<&str>) {
        if parent.is_some() {
            return;
        }
        for result in results {
            let Some(at) = self
                .waiting
                .iter()
                .position(|(id, ..)| *id == result.tool_use_id)
            else {
                continue;
            };
            let (id, call, failed) = self.waiting.remove(at);
            self.calls.remove(&id);
            let failed = failed || result.is_error;
            for line in call.ended(failed, Some(Detail::of(result)), self.verbose) {
                self.line(&line);
            }
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
        // the call running longest, with its time and its latest line
        let running = self.calls.values().min_by_key(|c| c.started);
        let label = match (running, &self.progress) {
            (Some(call), Some(last)) => format!(
                "{} · {}",
                crate::style::cut(&call.line, 28),
                crate::style::cut(last, 36)
            ),
            (Some(call), None) => format!("running {}", crate::style::cut(&call.line, 60)),
            (None, _) => match &self.waiting_status {
                Some(status) => crate::style::cut(status, 60),
                None => "thinking".to_owned(),
            },
        };
        match running {
            Some(call) => self.spinner.tick_since(&label, call.started),
            None => self.spinner.tick(&label),
        }
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
        self.flush_markdown();
        for (_, call, failed) in std::mem::take(&mut self.waiting) {
            for line in call.ended(failed, None, self.verbose) {
                self.line(&line);
            }
        }
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

/// Whether stdout and stderr are one file (`> log 2>&1`, one pipe).
fn one_file() -> bool {
    let of = |fd: u8| std::fs::read_link(format!("/proc/self/fd/{fd}")).ok();
    of(1).is_some_and(|out| Some(out) == of(2))
}

/// What a run's tools did, as the closing line ends (nothing when no tool
/// ran): their time, and the lines they changed when they changed any.
pub(crate) fn work_said(work: &agent::contract::Work) -> String {
    let mut out = String::new();
    if work.tool_ms > 0 {
        out.push_str(&format!(" · tools {:.1} s", work.tool_ms as f64 / 1000.0));
    }
    if work.lines_added + work.lines_removed > 0 {
        out.push_str(&format!(
            " · +{} −{} lines",
            work.lines_added, work.lines_removed
        ));
    }
    out
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
        "— {turns} turn{} · {} in / {} out tokens · {cost}{denied} · {:.1} s{}",
        if turns == 1 { "" } else { "s" },
        totals.usage.input(),
        totals.usage.output_tokens,
        started.elapsed().as_secs_f64(),
        work_said(&totals.work)
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
                body.cancelled()
                    .then(|| "stopped before the run could end by itself".to_owned())
            })
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
