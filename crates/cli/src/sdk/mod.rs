//! `hc run --input-format stream-json`: driven by a program over stdin and
//! stdout, as the Agent SDK drives Claude Code. One long-lived process,
//! one session: each `user` line is a turn (a run on the session, as in
//! `hc chat`), ending with its own `result` line; lines that come during a
//! turn wait for it, but control requests are answered at once
//! (`control.rs`), and `hc`'s own requests to the program — permissions,
//! hook callbacks, its MCP servers' messages — go through the [`Link`].
//! When stdin closes — which the SDK does right after its prompt when it
//! has nothing more to answer — the turns already sent run to their end
//! and the process exits; anything `hc` would still ask the program fails
//! at once, saying why (a permission is then refused, a hook decides
//! nothing), as it does in Claude Code.

mod answerer;
mod control;
mod launch;
mod link;
mod rewind;
mod wire;

pub use link::Link;

use crate::exit::exit;
use crate::sessions::Choice;
use crate::term::run::RunRequest;
use crate::trust::Ask;
use anyhow::Result;
use control::State;
use engine::Engine;
use hc_host::open::{Find, Staged};
pub use launch::{Launched, SPOKEN_VERSION};
use serde_json::{Value, json};
use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Instant;

/// A turn under way.
type Turn = Pin<Box<dyn Future<Output = Result<hc_host::turn::Finished>>>>;

/// The turn's end (never, when there is none).
async fn end_of(turn: &mut Option<Turn>) -> Result<hc_host::turn::Finished> {
    match turn {
        Some(turn) => turn.await,
        None => std::future::pending().await,
    }
}

/// Serves the driving program until it closes stdin and its turns are
/// done; answers the exit code: 1 when the last turn ended in an error
/// (as Claude Code, so the SDK raises it), else 0.
pub fn serve(mut request: RunRequest, printed: crate::print::Printed) -> Result<u8> {
    request.check_flags(&printed)?;
    // one reader of stdin for the whole session; the newest SDKs' first
    // line carries what flags did: read first
    let mut lines = stdin_lines();
    let first = launch::read_first(&mut request, &mut lines)?;
    request.apply_settings()?;
    let mut staged = Staged::here(Find::OrInit, Ask::Never)?;
    request
        .sdk
        .keep_sources(&mut staged.files)
        .map_err(|e| exit(2, e))?;
    let (_, mut config) = crate::settings::resolve(&staged.files, &request.flags, false)
        .map_err(|e| exit(2, format!("{e:#}")))?;
    request.sdk.apply(&mut config).map_err(|e| exit(2, e))?;
    hc_host::turn::check_credentials(&config)?;
    let prepared = staged.prepare(request.no_contain)?;
    crate::runtime()?.block_on(async move {
        let link = Arc::new(Link::new(
            request.sdk.prompts_over_stdio(),
            config.tool_names,
        ));
        let forward: Arc<dyn hc_web::bridge::Forward> = Arc::clone(&link) as _;
        let bridge = hc_web::bridge::start(forward, &mut request.flags.mcp_config).await?;
        let host = prepared
            .register(&request.flags, config.interactive)?
            .open()?;
        let engine = host.engine.clone();
        let session = match &request.session {
            Choice::Resume(id) => Some(
                crate::sessions::resolve(engine.db(), id).map_err(|e| exit(2, format!("{e:#}")))?,
            ),
            Choice::Latest => Some(crate::sessions::latest(&engine)?),
            _ => None,
        };
        // --fork-session: the turns go on a fork of it, made now
        let session = match session {
            Some(id) if request.sdk.fork_session => Some(hc_host::fork::fork(
                &engine,
                &id,
                hc_host::fork::Cut::Whole,
            )?),
            other => other,
        };
        let compact_next = request.compact;
        let driver = Driver {
            engine: engine.clone(),
            link,
            template: request,
            printed,
            state: State {
                config,
                session,
                host_hooks: Vec::new(),
                running: false,
                launched: first.as_ref().map(|(_, launched)| launched.clone()),
                interrupted: false,
            },
            first: first.map(|(line, _)| line),
            queue: VecDeque::new(),
            compact_next,
        };
        let code = driver.run(lines).await;
        host.close().await;
        if let Some(bridge) = bridge {
            bridge.abort();
        }
        Ok(code)
    })
}

/// What comes on stdin.
enum Line {
    /// A JSON object.
    Json(Value),
    /// Not one: why.
    Bad(String),
}

/// Reads stdin a line at a time, on a thread of its own (started before
/// the runtime: the launch's first line comes from it too, so nothing
/// read ahead is lost).
fn stdin_lines() -> tokio::sync::mpsc::UnboundedReceiver<Line> {
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    std::thread::spawn(move || {
        for line in std::io::BufRead::lines(std::io::stdin().lock()) {
            let Ok(line) = line else {
                break;
            };
            if line.trim().is_empty() {
                continue;
            }
            let parsed = match serde_json::from_str::<Value>(&line) {
                Ok(value) if value.is_object() => Line::Json(value),
                Ok(_) => Line::Bad("it is not a JSON object".into()),
                Err(e) => Line::Bad(format!("it is not JSON ({e})")),
            };
            if tx.send(parsed).is_err() {
                break;
            }
        }
    });
    rx
}

/// The loop: lines in, turns run one after another.
struct Driver {
    engine: Engine,
    link: Arc<Link>,
    /// How every turn is printed.
    printed: crate::print::Printed,
    /// What every turn's run is asked, but its prompt and session.
    template: RunRequest,
    state: State,
    /// Prompts waiting for the turn under way.
    queue: VecDeque<Queued>,
    /// `--compact`: the first turn compacts the session first.
    compact_next: bool,
    /// The `initialize` line read at launch (`--await-initialize`), to
    /// answer first.
    first: Option<Value>,
}

/// The program's lines, read as they come, and whether they ended.
struct Input {
    lines: tokio::sync::mpsc::UnboundedReceiver<Line>,
    closed: bool,
}

/// A user line waiting for its turn: its prompt, its id, its message.
struct Queued {
    prompt: String,
    uuid: String,
    message: Value,
}

impl Driver {
    async fn run(mut self, lines: tokio::sync::mpsc::UnboundedReceiver<Line>) -> u8 {
        if let Some(first) = self.first.take() {
            self.on_line(first);
        }
        let mut input = Input {
            lines,
            closed: false,
        };
        let mut turn: Option<Turn> = None;
        let mut code = 0;
        let mut started = false;
        loop {
            if turn.is_none() {
                match self.queue.pop_front() {
                    Some(prompt) => {
                        if !started {
                            started = true;
                            let hooks =
                                self.host_hooks("SessionStart", json!({"source": "startup"}));
                            self.reading(&mut input, hooks).await;
                        }
                        turn = Some(self.turn(prompt));
                        self.state.running = true;
                    }
                    None if input.closed => break,
                    None => {}
                }
            }
            let mut finished = None;
            tokio::select! {
                line = input.lines.recv(), if !input.closed => self.take(line, &mut input),
                done = end_of(&mut turn), if turn.is_some() => finished = Some(done),
            }
            if let Some(done) = finished {
                turn = None;
                self.state.running = false;
                code = self.ended(done);
                // an interrupt ended the turn: the program's Interrupt hooks
                if std::mem::take(&mut self.state.interrupted) {
                    let why = json!({"source": "user", "reason": "stop", "via": "client"});
                    let hooks = self.host_hooks("Interrupt", why);
                    self.reading(&mut input, hooks).await;
                }
            }
        }
        if started {
            let hooks = self.host_hooks("SessionEnd", json!({"reason": "other"}));
            self.reading(&mut input, hooks).await;
        }
        code
    }

    /// Waits for `work` (the program's callbacks) while the program's lines
    /// are still read: its answers come in on them.
    async fn reading(&mut self, input: &mut Input, work: impl Future<Output = ()>) {
        let mut work = std::pin::pin!(work);
        loop {
            tokio::select! {
                () = &mut work => return,
                line = input.lines.recv(), if !input.closed => self.take(line, input),
            }
        }
    }

    /// A line read from stdin, or its end.
    fn take(&mut self, line: Option<Line>, input: &mut Input) {
        match line {
            Some(Line::Json(value)) => self.on_line(value),
            Some(Line::Bad(why)) => eprintln!("hc: a line on stdin is ignored: {why}"),
            None => {
                // no more input: what was sent runs to its end, and the
                // program can answer nothing more
                input.closed = true;
                self.link.close();
            }
        }
    }

    /// A line from the program.
    fn on_line(&mut self, line: Value) {
        let line = wire::Line::of(&line);
        match line.kind.as_str() {
            "control_request" => {
                control::answer(&self.engine, &mut self.state, &self.link, &line);
            }
            "control_response" => self.link.resolve(&line.response),
            "control_cancel_request" | "keep_alive" => {}
            "user" => match prompt_of(&line.message) {
                Ok(prompt) => self.queue.push_back(Queued {
                    prompt,
                    uuid: line
                        .uuid
                        .as_str()
                        .filter(|u| !u.is_empty())
                        .map_or_else(crate::print::uuid_v4, str::to_owned),
                    message: line.message,
                }),
                Err(why) => eprintln!("hc: a user line is ignored: {why}"),
            },
            other => eprintln!("hc: a line of type `{other}` on stdin is ignored"),
        }
    }

    /// Starts a turn on the session (a new one, the first time).
    fn turn(&mut self, queued: Queued) -> Turn {
        let Queued {
            prompt,
            uuid,
            message,
        } = queued;
        let mut request = self.template.clone();
        request.prompt = Some(prompt.clone());
        request.prompt_uuid = Some(uuid.clone());
        request.session = match &self.state.session {
            Some(session) => Choice::Known(session.clone()),
            None => Choice::New,
        };
        let mut config = self.state.config.clone();
        config.compact_first = std::mem::take(&mut self.compact_next);
        let engine = self.engine.clone();
        let mut sink = match self.printed.format {
            crate::print::OutputFormat::Text => crate::term::run::sink_for(&engine, self.printed),
            format => {
                let link = Arc::clone(&self.link);
                let mut json = crate::print::sink::JsonSink::new(format, self.printed.partial);
                if self.template.sdk.replay_user_messages {
                    json = json.replaying(json!({
                        "type": "user",
                        "message": message,
                        "parent_tool_use_id": null,
                        "uuid": uuid,
                        "timestamp": humantime::format_rfc3339_millis(std::time::SystemTime::now()).to_string(),
                        "isReplay": true,
                    }));
                }
                Box::new(json.telling(move |shown| link.set_session(shown)))
            }
        };
        let answerer = answerer::LinkAnswerer {
            link: Arc::clone(&self.link),
            terminal: crate::term::answerer::TerminalAnswerer {
                interactive: config.interactive,
            },
        };
        Box::pin(async move {
            let started = Instant::now();
            let drive = crate::term::run::drive(
                &engine, &prompt, &config, &request, started, &mut *sink, &answerer,
            );
            drive.await
        })
    }

    /// A turn's end: the session kept for the next; a turn that could not
    /// start is said as an error result. Answers the exit code it means.
    fn ended(&mut self, done: Result<hc_host::turn::Finished>) -> u8 {
        match done {
            Ok(finished) => {
                self.state.session = Some(finished.session);
                // (a turn the program interrupted ended as it asked: the SDK
                // raises any other exit code, so an interrupt is not one)
                u8::from(finished.code != 0 && !self.state.interrupted)
            }
            Err(e) => {
                let code = e.downcast_ref::<crate::exit::Exit>().map_or(1, |x| x.code);
                crate::print::failed(&format!("{e:#}"), code, 0);
                1
            }
        }
    }

    /// Runs the program's callbacks for a session event the host keeps
    /// (`SessionStart`, `SessionEnd`); what they say is not recorded (no
    /// run is under way).
    fn host_hooks(&self, event: &str, extra: Value) -> impl Future<Output = ()> + use<> {
        let mut requests = Vec::new();
        for (_, id) in self.state.host_hooks.iter().filter(|(e, _)| e == event) {
            let mut input = json!({
                "hook_event_name": event,
                "session_id": self.state.session.clone().unwrap_or_default(),
                "transcript_path": "",
                "cwd": self.engine.config().project_root.to_string_lossy(),
            });
            if let (Some(fields), Some(more)) = (input.as_object_mut(), extra.as_object()) {
                fields.extend(more.clone());
            }
            let request = json!({"subtype": "hook_callback", "callback_id": id, "input": input});
            requests.push((id.clone(), request));
        }
        let (link, event) = (Arc::clone(&self.link), event.to_owned());
        async move {
            for (id, request) in requests {
                let wait = Some(std::time::Duration::from_secs(60));
                if let Err(why) = link.request(request, wait).await {
                    eprintln!("hc: the {event} hook callback {id} failed: {why}");
                }
            }
        }
    }
}

/// The prompt of a `user` line's message: its text, or its text blocks
/// joined.
fn prompt_of(message: &Value) -> Result<String, String> {
    let message: wire::Message = wire::read(message).unwrap_or_default();
    let text = match message.content {
        Some(wire::Content::Text(text)) => text,
        Some(wire::Content::Blocks(blocks)) => {
            let mut texts = Vec::new();
            for block in blocks.iter().map(wire::Block::of) {
                match block.kind.as_deref() {
                    Some("text") => texts.extend(block.text),
                    Some(other) => eprintln!(
                        "hc: a `{other}` block in a user message is not supported yet; it is left out"
                    ),
                    None => {}
                }
            }
            texts.join("\n\n")
        }
        None => return Err("it has no `message.content`".into()),
    };
    if text.trim().is_empty() {
        return Err("its message is empty".into());
    }
    Ok(text)
}
