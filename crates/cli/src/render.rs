//! Following an agent run in the terminal: the answer streamed to stdout
//! as it comes, each tool call one compact line on stderr, status lines,
//! and the questions the agent asks (permission, `ask_user`) put to the
//! person on the terminal and answered by committing on the session.
//! Ctrl-C commits an `interrupt`; no end within two seconds, or a second
//! Ctrl-C, cancels the run.

use anyhow::Result;
use engine::{Context, Engine, EventStream};
use protocol::{ChunkDecl, Declaration, Event, NewPlacement, PlacementType, ScopeOpts};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::io::{IsTerminal, Write};
use std::time::Duration;

/// How long an interrupted run gets to end by itself.
const INTERRUPT_GRACE: Duration = Duration::from_secs(2);

/// Renders one run.
pub struct Renderer {
    engine: Engine,
    session: String,
    interactive: bool,
    /// Calls started and not ended: tool_use_id → one-line summary.
    calls: HashMap<String, String>,
    /// Whether stdout is in the middle of a line.
    open_line: bool,
    /// Whether answer text was printed, and a tool ran since.
    printed: bool,
    gap: bool,
    stdout_tty: bool,
}

impl Renderer {
    /// A renderer for runs on `session`.
    pub fn new(engine: Engine, session: String, interactive: bool) -> Renderer {
        Renderer {
            engine,
            session,
            interactive,
            calls: HashMap::new(),
            open_line: false,
            printed: false,
            gap: false,
            stdout_tty: std::io::stdout().is_terminal(),
        }
    }

    /// Renders until `process` ends; answers its final body.
    pub async fn follow(&mut self, mut events: EventStream, process: &str) -> Result<Value> {
        let host = Context::host();
        let ids = vec![process.to_owned()];
        let engine = self.engine.clone();
        let ended = engine.await_processes(&host, &ids);
        tokio::pin!(ended);
        let mut interrupts = 0;
        let mut grace: Option<tokio::time::Instant> = None;
        let done = loop {
            let deadline = grace
                .unwrap_or_else(|| tokio::time::Instant::now() + Duration::from_secs(86_400 * 365));
            tokio::select! {
                done = &mut ended => break done?,
                Some(event) = events.recv() => self.on_event(event, process).await,
                _ = tokio::signal::ctrl_c() => {
                    interrupts += 1;
                    if interrupts == 1 {
                        self.line("interrupting… (Ctrl-C again to stop at once)");
                        self.interrupt();
                        grace = Some(tokio::time::Instant::now() + INTERRUPT_GRACE);
                    } else {
                        let _ = self.engine.cancel(&host, process);
                    }
                }
                () = tokio::time::sleep_until(deadline) => {
                    let _ = self.engine.cancel(&host, process);
                    grace = None;
                }
            }
        };
        while let Some(event) = events.try_recv() {
            self.on_event(event, process).await;
        }
        if self.open_line {
            println!();
            self.open_line = false;
        }
        Ok(done
            .get(process)
            .and_then(|r| r.scopes.first())
            .map(|s| s.body_value())
            .unwrap_or_default())
    }

    fn interrupt(&mut self) {
        let chunk = ChunkDecl::generated()
            .body(json!({"text": "interrupted by the person"}))
            .on(NewPlacement::instance(&self.session))
            .on(NewPlacement::instance("interrupt"));
        if let Err(e) = self
            .engine
            .commit(&Context::host(), Declaration::of(vec![chunk]))
        {
            self.line(&format!("cannot interrupt: {e}"));
        }
    }

    async fn on_event(&mut self, event: Event, process: &str) {
        match event {
            Event::Notification {
                process: from,
                data,
            } if from == process => self.on_notice(&data),
            Event::ScopeChanged { commit, .. } if commit.dispatch_id.is_some() => {
                for id in &commit.created {
                    self.on_created(id).await;
                }
            }
            _ => {}
        }
    }

    fn on_notice(&mut self, data: &Value) {
        match data["kind"].as_str() {
            Some("text_delta") => {
                let text = data["text"].as_str().unwrap_or_default();
                let mut out = std::io::stdout().lock();
                if self.gap && self.printed {
                    // A new answer after tools: a paragraph of its own.
                    let _ = out.write_all(if self.open_line { b"\n\n" } else { b"\n" });
                }
                self.gap = false;
                self.printed = true;
                let _ = out.write_all(text.as_bytes());
                let _ = out.flush();
                if !text.is_empty() {
                    self.open_line = !text.ends_with('\n');
                }
            }
            Some("tool_start") => {
                self.gap = true;
                let id = data["tool_use_id"].as_str().unwrap_or_default().to_owned();
                let program = data["program"].as_str().unwrap_or_default();
                self.calls.insert(
                    id,
                    format!("{program} {}", summary(program, &data["input"])),
                );
            }
            Some("tool_end") => {
                let id = data["tool_use_id"].as_str().unwrap_or_default();
                let call = self.calls.remove(id).unwrap_or_default();
                let mark = if data["is_error"].as_bool().unwrap_or(false) {
                    "✗"
                } else {
                    "✓"
                };
                self.line(&format!("{mark} {}", call.trim_end()));
            }
            Some("status") => {
                self.line(&format!("· {}", data["text"].as_str().unwrap_or_default()))
            }
            Some("discard") => self.line("· the reply broke off; it is being asked again"),
            _ => {}
        }
    }

    /// A question committed on the session: asked on the terminal.
    async fn on_created(&mut self, id: &str) {
        let Ok(read) = self
            .engine
            .scope(&Context::host(), &[id.to_owned()], &ScopeOpts::default())
        else {
            return;
        };
        let Some(item) = read.scopes.first() else {
            return;
        };
        let body = item.body_value();
        if item.is_on("permission-request", PlacementType::Instance) && self.interactive {
            let question = format!(
                "allow {} {}? ({}) [y]es / [n]o / [a]lways for this session: ",
                body["program"].as_str().unwrap_or_default(),
                summary(body["program"].as_str().unwrap_or_default(), &body["input"]),
                body["reason"].as_str().unwrap_or_default()
            );
            let answer = self.ask(&question).await;
            let decision = match answer.trim().to_lowercase().as_str() {
                "y" | "yes" => "allow",
                "a" | "always" => "always",
                _ => "deny",
            };
            self.answer(
                "permission-decision",
                json!({"request": id, "decision": decision, "rule": body["rule"]}),
            );
        } else if item.is_on("user-question", PlacementType::Instance) && self.interactive {
            let mut question = format!("? {}", body["text"].as_str().unwrap_or_default());
            if let Some(options) = body["options"].as_array() {
                let options: Vec<&str> = options.iter().filter_map(Value::as_str).collect();
                question.push_str(&format!(" ({})", options.join(" / ")));
            }
            question.push_str("\n> ");
            let answer = self.ask(&question).await;
            self.answer(
                "user-answer",
                json!({"request": id, "text": answer.trim_end()}),
            );
        }
    }

    fn answer(&mut self, ty: &str, body: Value) {
        let chunk = ChunkDecl::generated()
            .body(body)
            .on(NewPlacement::instance(&self.session))
            .on(NewPlacement::instance(ty));
        if let Err(e) = self
            .engine
            .commit(&Context::host(), Declaration::of(vec![chunk]))
        {
            self.line(&format!("cannot answer: {e}"));
        }
    }

    /// Asks on the terminal; answers the line typed (empty when none).
    async fn ask(&mut self, question: &str) -> String {
        self.end_line();
        let question = question.to_owned();
        tokio::task::spawn_blocking(move || {
            let mut tty = std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .open("/dev/tty")
                .ok()?;
            tty.write_all(question.as_bytes()).ok()?;
            let mut line = String::new();
            std::io::BufRead::read_line(&mut std::io::BufReader::new(tty), &mut line).ok()?;
            Some(line)
        })
        .await
        .ok()
        .flatten()
        .unwrap_or_default()
    }

    /// A line on stderr, after ending stdout's open line on a terminal.
    fn line(&mut self, text: &str) {
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

/// A call's input in a few words.
pub fn summary(program: &str, input: &Value) -> String {
    let pick = |k: &str| input[k].as_str().map(str::to_owned);
    let text = match program {
        "read" | "write" | "edit" => pick("file_path"),
        "glob" | "grep" => pick("pattern").map(|p| match pick("path") {
            Some(path) => format!("{p} in {path}"),
            None => p,
        }),
        "shell" => pick("command"),
        "web-fetch" => pick("url"),
        _ => None,
    }
    .unwrap_or_else(|| input.to_string());
    let first = text.lines().next().unwrap_or("");
    let mut cut: String = first.chars().take(80).collect();
    if first.chars().count() > 80 || text.lines().nth(1).is_some() {
        cut.push('…');
    }
    cut
}
