//! `hc chat`: an interactive session in the terminal. Each message is one
//! agent run on the chat's session, rendered as `hc run` renders it (the
//! answer streamed, tool calls one line each, edits as a diff, permission
//! questions inline); slash commands between runs. One engine for the whole
//! chat; line editing and history by `rustyline`, the history kept in the
//! project's `.hermitcrab/history`.

use crate::args::ChatFlags;
use crate::cmd::{inspect, tree};
use crate::project::{self, Project};
use crate::sessions::{self, Choice};
use crate::settings;
use crate::style::{bold, dim};
use crate::term::run::{self, RunRequest};
use agent::PermissionMode;
use anyhow::{Context as _, Result};
use engine::Engine;
use hc_host::open::{Find, Host, Staged};
use rustyline::error::ReadlineError;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

const HELP: &str = "\
/help             this list
/clear            a new session from the next message
/compact          summarize the conversation before the next message
/cost             turns, tokens and cost of this session
/model [NAME]     show or change the model
/add-dir DIR      let the tools read and write DIR too, as the project
/resume [SESSION] go on with a session (the latest without one)
/rewind [N [files|conversation|both]]  back to before turn N (asked without)
/sessions         the project's sessions
/agents           the project's agents: queued, running, waiting for you, done (hc run --bg starts one)
/trace            this session as a tree (`hc trace` for more)
/mcp              the MCP servers and their tools (`hc mcp` for more)
/mcp__S__P ARGS   send MCP server S's prompt P
/memory           this project's memory and yours (`hc memory` to change it)
/plan             plan mode on or off: research, then a plan to approve
Shift-Tab         the next permission mode: default, accept-edits, plan
# TEXT            keep TEXT in this project's memory, for every later session
/exit             leave (also Ctrl-D, or Ctrl-C twice)
! COMMAND         run COMMAND in the shell (contained, recorded); its output goes with your next message
Tab completes a command, and a path after @; end a line with \\ to go on on the next.";

use crate::commands::BUILT_IN as COMMANDS;

/// Line editing's helper: Tab completes a slash command — chat's own and
/// the project's command files.
struct Commands(Vec<String>);

impl Commands {
    /// Chat's commands and those of the command files under `root`.
    fn of(root: &std::path::Path) -> Commands {
        let mut names: Vec<String> = COMMANDS.iter().map(|c| (*c).to_owned()).collect();
        let (files, _) = crate::commands::find(root);
        names.extend(files.into_iter().map(|c| format!("/{}", c.name)));
        Commands(names)
    }
}

impl rustyline::completion::Completer for Commands {
    type Candidate = String;

    fn complete(
        &self,
        line: &str,
        pos: usize,
        _: &rustyline::Context<'_>,
    ) -> rustyline::Result<(usize, Vec<String>)> {
        let typed = line.get(..pos).unwrap_or(line);
        // `@path`: a file or directory under the working directory
        let word_at = typed.rfind(char::is_whitespace).map_or(0, |i| i + 1);
        if let Some(partial) = typed[word_at..].strip_prefix('@') {
            return Ok((word_at, crate::term::complete::paths_like(partial)));
        }
        if !typed.starts_with('/') || typed.contains(char::is_whitespace) {
            return Ok((0, Vec::new()));
        }
        let found = self
            .0
            .iter()
            .filter(|c| c.starts_with(typed))
            .cloned()
            .collect();
        Ok((0, found))
    }
}

impl rustyline::hint::Hinter for Commands {
    type Hint = String;
}
impl rustyline::highlight::Highlighter for Commands {}
impl rustyline::validate::Validator for Commands {}
impl rustyline::Helper for Commands {}

/// The chat's state between messages.
struct Chat {
    engine: Engine,
    rt: tokio::runtime::Runtime,
    config: agent::AgentConfig,
    /// The session, once the first message made one (or one resumed).
    session: Option<String>,
    /// `/compact` asked: the next run starts by compacting.
    compact_next: bool,
    /// In plan mode: the mode it left, to go back to.
    before_plan: Option<PermissionMode>,
    /// The mode the chat started in (Shift-Tab comes back to it).
    first_mode: PermissionMode,
    /// `! COMMAND` lines run since the last message, as the model is told
    /// of them with the next.
    shell_said: Vec<String>,
    /// What was typed while the last run went on: the next line's start.
    typed: String,
}

/// The line typed when Shift-Tab was pressed: plan mode is toggled and
/// the line read again with it.
type Toggled = Arc<Mutex<Option<String>>>;

/// Shift-Tab: keeps the line typed and ends the read, for the chat to
/// toggle plan mode.
struct ShiftTab(Toggled);

impl rustyline::ConditionalEventHandler for ShiftTab {
    fn handle(
        &self,
        _: &rustyline::Event,
        _: rustyline::RepeatCount,
        _: bool,
        ctx: &rustyline::EventContext,
    ) -> Option<rustyline::Cmd> {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) = Some(ctx.line().to_owned());
        Some(rustyline::Cmd::Interrupt)
    }
}

/// What the person typed, once read.
enum Step {
    /// Go on reading.
    Next,
    /// Leave.
    Exit,
}

/// `hc chat`.
pub fn chat(flags: ChatFlags) -> Result<()> {
    if flags.checkout && !flags.continue_ && flags.resume.is_none() {
        return Err(crate::exit::exit(
            2,
            "--checkout goes with --resume or --continue: it checks out where that session's \
             files are",
        ));
    }
    hc_host::turn::check_credentials_before_making(&std::env::current_dir()?)?;
    let staged = Staged::here(Find::OrInit, crate::trust::Ask::Person(&crate::tty::Tty))?;
    let given = flags.settings.into_flags();
    let interactive = std::fs::File::open("/dev/tty").is_ok();
    let (_, config) = settings::resolve(&staged.files, &given, interactive)?;
    hc_host::turn::check_credentials(&config)?;
    let prepared = staged
        .prepare(flags.no_contain)?
        .register(&given, config.interactive)?;
    let rt = crate::runtime()?;
    let Host {
        project, engine, ..
    } = rt.block_on(async { prepared.open() })?;
    let mut chat = Chat {
        engine,
        rt,
        session: None,
        compact_next: false,
        before_plan: None,
        first_mode: config.permission_mode,
        shell_said: Vec::new(),
        typed: String::new(),
        config,
    };
    let start = match (flags.continue_, flags.resume) {
        (true, _) => Some(sessions::latest(&chat.engine)),
        (false, Some(id)) => Some(sessions::resolve(chat.engine.db(), &id)),
        (false, None) => None,
    };
    if flags.fork_session && start.is_none() {
        return Err(crate::exit::exit(
            2,
            "--fork-session goes with --resume or --continue: it forks the session they name",
        ));
    }
    let start = start.map(|found| {
        let session = found?;
        hc_host::turn::handed_over(&chat.engine, &session, flags.checkout)?;
        if flags.fork_session {
            return hc_host::fork::fork(&chat.engine, &session, hc_host::fork::Cut::Whole);
        }
        Ok(session)
    });
    let outcome = match start {
        Some(Err(e)) => Err(e),
        Some(Ok(session)) => {
            chat.session = Some(session);
            chat.lines(&project)
        }
        None => chat.lines(&project),
    };
    chat.rt.block_on(crate::close(&chat.engine));
    if let Some(session) = &chat.session {
        eprintln!(
            "{}",
            dim(&format!(
                "to go on: hc chat --resume {session} (or hc trace {session})"
            ))
        );
    }
    outcome
}

/// Where the person's lines come from: the line editor, or — when stdout
/// is not a terminal (`hc chat > log`) — plain lines from stdin, so no
/// editing escape codes reach the output.
enum Input {
    Editor(Box<rustyline::Editor<Commands, rustyline::history::DefaultHistory>>),
    Plain(std::io::StdinLock<'static>),
}

impl Input {
    fn new(commands: Commands, toggled: &Toggled) -> Result<Input> {
        if !std::io::IsTerminal::is_terminal(&std::io::stdout()) {
            return Ok(Input::Plain(std::io::stdin().lock()));
        }
        let mut editor: rustyline::Editor<Commands, rustyline::history::DefaultHistory> =
            rustyline::Editor::new().context("cannot set up line editing")?;
        editor.set_helper(Some(commands));
        editor.bind_sequence(
            rustyline::KeyEvent(rustyline::KeyCode::BackTab, rustyline::Modifiers::NONE),
            rustyline::EventHandler::Conditional(Box::new(ShiftTab(Arc::clone(toggled)))),
        );
        Ok(Input::Editor(Box::new(editor)))
    }

    fn readline(&mut self, prompt: &str, initial: &str) -> rustyline::Result<String> {
        match self {
            Input::Editor(editor) => editor.readline_with_initial(prompt, (initial, "")),
            Input::Plain(stdin) => {
                let mut line = String::new();
                match std::io::BufRead::read_line(stdin, &mut line)? {
                    0 => Err(ReadlineError::Eof),
                    _ => Ok(line.trim_end_matches(['\n', '\r']).to_owned()),
                }
            }
        }
    }

    /// One message: a line, or several when each but the last ends with
    /// `\`.
    fn message(&mut self, prompt: &str, initial: &str) -> rustyline::Result<String> {
        let mut message = self.readline(prompt, initial)?;
        while let Some(open) = message.strip_suffix('\\') {
            message = format!("{open}\n{}", self.readline("… ", "")?);
        }
        Ok(message)
    }
}

impl Chat {
    /// Reads and answers lines until the person leaves.
    fn lines(&mut self, project: &Project) -> Result<()> {
        let toggled: Toggled = Arc::default();
        let mut input = Input::new(Commands::of(&self.engine.config().project_root), &toggled)?;
        let history = project.root.join(project::DIR).join("history");
        if let Input::Editor(editor) = &mut input {
            let _ = editor.load_history(&history);
        }
        eprintln!(
            "{} · {} · {}",
            bold("hermitcrab chat"),
            self.config.model,
            match &self.session {
                Some(s) => format!("session {s}"),
                None => "a new session".to_owned(),
            }
        );
        eprintln!(
            "{}",
            dim("/help for commands · Ctrl-C interrupts · Ctrl-D leaves")
        );
        if let Some(session) = &self.session {
            for line in recap(self.engine.db(), session)? {
                eprintln!("{line}");
            }
        }
        let mut interrupted = false;
        let mut initial = String::new();
        loop {
            // the status line, then the prompt naming any mode but default
            crate::term::status::show(&self.engine, &self.config, self.session.as_deref());
            let prompt = match self.config.permission_mode {
                PermissionMode::Default => "› ".to_owned(),
                mode => format!("{} › ", mode.as_str()),
            };
            // a line typed whole while the last run went on is the next
            // message; a part of one starts the line
            let read = match self.typed.split_once('\n') {
                Some((line, rest)) => {
                    let line = line.to_owned();
                    self.typed = rest.to_owned();
                    eprintln!("{prompt}{}", crate::style::shown(&line));
                    Ok(line)
                }
                None => {
                    if initial.is_empty() {
                        initial = std::mem::take(&mut self.typed);
                    }
                    input.message(&prompt, &std::mem::take(&mut initial))
                }
            };
            let shift_tab = toggled
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .take();
            if let Some(line) = shift_tab {
                eprintln!("{}", dim(&self.next_mode()));
                initial = line;
                continue;
            }
            match read {
                Ok(line) => {
                    interrupted = false;
                    if line.trim().is_empty() {
                        continue;
                    }
                    if let Input::Editor(editor) = &mut input {
                        let _ = editor.add_history_entry(line.as_str());
                    }
                    if let Step::Exit = self.line(line.trim())? {
                        break;
                    }
                }
                Err(ReadlineError::Interrupted) if !interrupted => {
                    interrupted = true;
                    eprintln!("{}", dim("(Ctrl-C again, or Ctrl-D, to leave)"));
                }
                Err(ReadlineError::Interrupted | ReadlineError::Eof) => break,
                Err(e) => return Err(e).context("cannot read the terminal"),
            }
        }
        if let Input::Editor(editor) = &mut input
            && let Err(e) = editor.save_history(&history)
        {
            tracing::debug!("cannot save the chat history: {e}");
        }
        Ok(())
    }

    /// One line: a slash command, or a message for the agent.
    fn line(&mut self, line: &str) -> Result<Step> {
        if let Some(command) = line.strip_prefix('!').map(str::trim) {
            let ran = crate::term::complete::shell_line(&self.engine, &self.config, command);
            match self.rt.block_on(ran) {
                Ok((text, told)) => {
                    eprintln!("{}", crate::style::shown(text.trim_end()));
                    self.shell_said.push(told);
                }
                Err(e) => eprintln!("hc: {}", crate::style::shown(&format!("{e:#}"))),
            }
            return Ok(Step::Next);
        }
        if let Some(text) = line.strip_prefix('#') {
            match crate::cmd::memory::add_to_project(self.engine.db(), text) {
                Ok(id) => eprintln!("{}", dim(&format!("kept in this project's memory as {id}"))),
                Err(e) => eprintln!("hc: {}", crate::style::shown(&format!("{e:#}"))),
            }
            return Ok(Step::Next);
        }
        let Some(command) = line.strip_prefix('/') else {
            self.turn(line);
            return Ok(Step::Next);
        };
        let (name, arg) = command
            .split_once(char::is_whitespace)
            .map_or((command, ""), |(n, a)| (n, a.trim()));
        let said = match name {
            "help" | "?" => Ok(self.help()),
            "exit" | "quit" => return Ok(Step::Exit),
            "clear" | "new" => {
                self.session = None;
                self.compact_next = false;
                Ok("a new session starts with your next message".to_owned())
            }
            "compact" => self.compact(),
            "cost" => self.cost(),
            "model" => Ok(self.model(arg)),
            "add-dir" => self.add_dir(arg),
            "resume" => self.resume(arg),
            "rewind" => self.rewind(arg),
            "sessions" => inspect::print_sessions(self.engine.db(), false).map(|()| String::new()),
            "agents" => crate::cmd::agents::print(self.engine.db()).map(|()| String::new()),
            "trace" => match &self.session {
                Some(s) => tree::show(self.engine.db(), s, false, false).map(|()| String::new()),
                None => Ok("no session yet: say something first".to_owned()),
            },
            "mcp" => self.servers(),
            "memory" => crate::cmd::memory::memory(None).map(|()| String::new()),
            "plan" => Ok(self.toggle_plan()),
            // an MCP server's prompt, or a command file: the prompt it
            // makes goes to the agent
            other if other.starts_with("mcp__") || self.is_command(other) => {
                self.turn(line);
                return Ok(Step::Next);
            }
            other => Ok(format!("no command /{other}; /help lists them")),
        };
        match said {
            Ok(text) if text.is_empty() => {}
            Ok(text) => eprintln!("{text}"),
            Err(e) => eprintln!("hc: {}", crate::style::shown(&format!("{e:#}"))),
        }
        Ok(Step::Next)
    }

    /// `/add-dir DIR`: the tools read and write DIR too from the next
    /// message on (without one: the directories added so far).
    fn add_dir(&mut self, arg: &str) -> Result<String> {
        if arg.is_empty() {
            return Ok(match self.config.add_dirs.is_empty() {
                true => "no directories are added: /add-dir DIR adds one".to_owned(),
                false => format!("added directories: {}", self.config.add_dirs.join(", ")),
            });
        }
        let dir = settings::add_dir(&mut self.config, arg)?;
        Ok(format!(
            "{} is added: the tools may read and write there from your next message",
            dir.display()
        ))
    }

    /// Whether `name` is a command file's.
    fn is_command(&self, name: &str) -> bool {
        let (commands, _) = crate::commands::find(&self.engine.config().project_root);
        commands.iter().any(|c| c.name == name)
    }

    /// `/help`: the built-in commands, then the command files with their
    /// descriptions and where they are from.
    fn help(&self) -> String {
        let (commands, skipped) = crate::commands::find(&self.engine.config().project_root);
        let mut text = HELP.to_owned();
        let shown = |s: &str| crate::style::shown(s).into_owned();
        for c in &commands {
            let usage = shown(format!("/{} {}", c.name, c.argument_hint).trim_end());
            let from = format!("{}: {}", c.source, c.path.display());
            let line = format!("\n{usage:<17} {} ({})", shown(&c.description), shown(&from));
            text.push_str(&line);
        }
        for why in &skipped {
            text.push_str(&format!("\nskipped: {}", shown(why)));
        }
        text
    }

    /// `/mcp`: each server configured — its tools once it has started (a
    /// run starts them: before the first message none has), else why not
    /// yet — and the project's own when it is not trusted.
    fn servers(&self) -> Result<String> {
        let db = self.engine.db();
        let tools = crate::mcp_config::tools_by_server(db)?;
        let configured = crate::mcp_config::statuses(db)?;
        let root = &self.engine.config().project_root;
        // (a trusted project's servers are among those configured)
        let untrusted: Vec<String> = crate::mcp_config::untrusted(root, &[])?
            .into_iter()
            .map(|s| s.name)
            .filter(|n| !configured.iter().any(|c| c["name"] == n.as_str()))
            .collect();
        if configured.is_empty() && untrusted.is_empty() {
            return Ok("no MCP servers are configured: `hc mcp add` adds one".into());
        }
        let mut lines = Vec::new();
        for server in &configured {
            let name = server["name"].as_str().unwrap_or_default();
            let service = mcp::config::service_name(name);
            let names: Vec<&str> = tools
                .get(&service)
                .into_iter()
                .flatten()
                .filter(|t| t.starts_with("mcp__"))
                .map(String::as_str)
                .collect();
            let state = match server["status"].as_str() {
                Some("disabled") => "disabled".to_owned(),
                Some("failed") => "failed: its configuration cannot be used (`hc mcp get`)".into(),
                _ if names.is_empty() => "not started yet (a run starts it)".into(),
                _ => format!("{} tools", names.len()),
            };
            lines.push(format!("{name}: {state}"));
            lines.extend(names.iter().map(|n| format!("  {n}")));
        }
        for name in untrusted {
            lines.push(format!("{name}: {}", crate::mcp_config::UNTRUSTED));
        }
        Ok(lines.join("\n"))
    }

    /// One agent run on the chat's session; its errors are said, and the
    /// chat goes on.
    fn turn(&mut self, prompt: &str) {
        // the shell lines run since the last message go with this one
        let said = std::mem::take(&mut self.shell_said);
        let with = format!("{}\n\n{prompt}", said.join("\n"));
        let prompt = if said.is_empty() {
            prompt
        } else {
            with.as_str()
        };
        let mut config = self.config.clone();
        config.compact_first = std::mem::take(&mut self.compact_next);
        let request = RunRequest {
            prompt: Some(prompt.to_owned()),
            flags: settings::Flags::default(),
            no_contain: false,
            context: Vec::new(),
            images: pasted_images(prompt),
            session: match &self.session {
                Some(s) => Choice::Known(s.clone()),
                None => Choice::New,
            },
            compact: config.compact_first,
            sdk: Default::default(),
            background: None,
            checkout: false,
            prompt_uuid: None,
        };
        let started = Instant::now();
        let engine = self.engine.clone();
        // What the session held before this run: a plan approved in an
        // earlier run does not end plan mode now.
        let held = self.session.as_deref().map_or(0, |s| members(&engine, s));
        let mut sink = crate::term::text::TextSink::new(engine.clone(), false);
        let answerer = crate::term::answerer::TerminalAnswerer {
            interactive: config.interactive,
        };
        let turn = run::drive(
            &engine, prompt, &config, &request, started, &mut sink, &answerer,
        );
        // Esc interrupts while it runs; what else is typed starts the next
        // message
        let keys = crate::tty::RunKeys::hold(config.interactive);
        let done = self.rt.block_on(turn);
        drop(keys);
        self.typed = crate::tty::take_typed();
        match done {
            Ok(finished) => self.session = Some(finished.session),
            Err(e) => eprintln!("hc: {}", crate::style::shown(&format!("{e:#}"))),
        }
        if self.config.permission_mode == PermissionMode::Plan
            && let Some(mode) = (self.session.as_deref()).and_then(|s| approved(&engine, s, held))
        {
            self.config.permission_mode = mode;
            self.before_plan = None;
            eprintln!(
                "{}",
                dim(&format!("plan approved: permission mode {}", mode.as_str()))
            );
        }
    }

    /// `/plan`, Shift-Tab: plan mode on (the mode before kept) or off.
    fn toggle_plan(&mut self) -> String {
        match self.config.permission_mode {
            PermissionMode::Plan => {
                let mode = self.before_plan.take().unwrap_or_default();
                self.config.permission_mode = mode;
                format!("plan mode off: permission mode {}", mode.as_str())
            }
            mode => {
                self.before_plan = Some(mode);
                self.config.permission_mode = PermissionMode::Plan;
                "plan mode on: the agent researches without changing anything and presents a \
                 plan for you to approve (Shift-Tab or /plan leaves it)"
                    .to_owned()
            }
        }
    }

    /// Shift-Tab: the next permission mode, as Claude Code cycles them —
    /// default, accept-edits, plan, and the mode the chat started in when
    /// it is another (bypass, auto, dont-ask) — from the next message on.
    fn next_mode(&mut self) -> String {
        use PermissionMode::{AcceptEdits, Default, Plan};
        let mut order = vec![Default, AcceptEdits, Plan];
        if !order.contains(&self.first_mode) {
            order.push(self.first_mode);
        }
        let now = self.config.permission_mode;
        let at = order.iter().position(|m| *m == now).unwrap_or(0);
        let next = order[(at + 1) % order.len()];
        if next == Plan || now == Plan {
            // (into plan mode and out of it: as /plan says it)
            self.before_plan = Some(now).filter(|_| now != Plan);
            if now == Plan {
                self.config.permission_mode = next;
                return format!(
                    "plan mode off: permission mode {} (Shift-Tab for the next)",
                    next.as_str()
                );
            }
            return self.toggle_plan();
        }
        self.config.permission_mode = next;
        format!(
            "permission mode {} from your next message (Shift-Tab for the next)",
            next.as_str()
        )
    }

    fn compact(&mut self) -> Result<String> {
        if self.session.is_none() {
            return Ok("nothing to compact yet".to_owned());
        }
        self.compact_next = true;
        Ok("the conversation will be summarized before your next message".to_owned())
    }

    /// The session's totals, over every run on it.
    fn cost(&self) -> Result<String> {
        let Some(session) = &self.session else {
            return Ok("no session yet: nothing spent".to_owned());
        };
        let totals = inspect::session_totals(self.engine.db(), session)?;
        Ok(format!(
            "session {session}: {} turn{} · {} in / {} out tokens · {}{}",
            totals.turns,
            if totals.turns == 1 { "" } else { "s" },
            totals.input_tokens,
            totals.output_tokens,
            totals
                .cost_usd
                .map_or("cost unknown".to_owned(), |c| format!("${c:.4}")),
            super::text::work_said(&totals.work)
        ))
    }

    fn model(&mut self, name: &str) -> String {
        if name.is_empty() {
            return format!(
                "the model is {}; `/model NAME` changes it",
                self.config.model
            );
        }
        self.config.model = self.config.resolve_model(name);
        match self.config.model == name {
            true => format!("the model is now {name}"),
            false => format!("the model is now {} ({name})", self.config.model),
        }
    }

    fn rewind(&mut self, arg: &str) -> Result<String> {
        let Some(session) = self.session.clone() else {
            return Ok("no session yet: nothing to rewind".to_owned());
        };
        let (said, forked) = crate::cmd::rewind::in_chat(&self.engine, &self.rt, &session, arg)?;
        if let Some(forked) = forked {
            self.session = Some(forked);
            self.compact_next = false;
        }
        Ok(said)
    }

    fn resume(&mut self, id: &str) -> Result<String> {
        let session = if id.is_empty() {
            sessions::latest(&self.engine)?
        } else {
            sessions::resolve(self.engine.db(), id)?
        };
        hc_host::turn::handed_over(&self.engine, &session, false)?;
        let title = self
            .engine
            .db()
            .read(|s| s.body(&session))?
            .map(|b| agent::contract::SessionBody::parse(&b).title)
            .unwrap_or_default();
        self.session = Some(session.clone());
        self.compact_next = false;
        let mut said = format!("going on with session {session}: {title}");
        for line in recap(self.engine.db(), &session)? {
            said.push('\n');
            said.push_str(&line);
        }
        Ok(said)
    }
}

/// Where a session left off: its last prompt and its last answer, a line
/// each.
fn recap(db: &substrate::Substrate, session: &str) -> Result<Vec<String>> {
    use agent::contract::SessionItem;
    let items: Vec<SessionItem> = db
        .scope(&[session], &substrate::ScopeOpts::default())?
        .chunks
        .iter()
        .map(|c| SessionItem::of(c))
        .collect();
    let shown = |text: &str| Some(crate::style::cut(text, 100)).filter(|t| !t.is_empty());
    let prompt = items.iter().rev().find_map(|i| match i {
        SessionItem::Prompt(p) => Some(shown(&p.text)),
        _ => None,
    });
    let answer = items.iter().rev().find_map(|i| match i {
        SessionItem::Answer(a) => Some(shown(&a.text)),
        _ => None,
    });
    let mut lines = Vec::new();
    if let Some(prompt) = prompt.flatten() {
        lines.push(dim(&format!("  › {prompt}")));
    }
    if let Some(answer) = answer.flatten() {
        lines.push(dim(&format!("  {answer}")));
    }
    Ok(lines)
}

/// The mode the session's last plan was approved in, if it was.
fn approved(engine: &Engine, session: &str, held: usize) -> Option<PermissionMode> {
    use agent::contract::{PLAN_ACCEPT_EDITS, PLAN_APPROVE, SessionItem};
    let read = engine.db().scope(&[session], &Default::default()).ok()?;
    let items: Vec<(String, SessionItem)> = (read.chunks.iter())
        .map(|c| (c.id.clone(), SessionItem::of(c)))
        .collect();
    // (a session is ordered: what this run added follows what it held)
    let plan = items.iter().skip(held).rev().find_map(|(id, i)| match i {
        SessionItem::Plan(p) if p.ask => Some(id.as_str()),
        _ => None,
    })?;
    items.iter().find_map(|(_, i)| match i {
        SessionItem::UserAnswer(a) if a.request == plan => match a.text.as_str() {
            PLAN_APPROVE => Some(PermissionMode::Default),
            PLAN_ACCEPT_EDITS => Some(PermissionMode::AcceptEdits),
            _ => None,
        },
        _ => None,
    })
}

/// How many chunks `session` holds.
fn members(engine: &Engine, session: &str) -> usize {
    let opts = substrate::ScopeOpts {
        limit: Some(1),
        ..Default::default()
    };
    engine
        .db()
        .scope(&[session], &opts)
        .map_or(0, |r| r.total as usize)
}

/// The image files a message names (a path pasted or dropped on the
/// terminal, quoted or with `\ ` for spaces): each is sent as an image.
fn pasted_images(message: &str) -> Vec<std::path::PathBuf> {
    const SPACE: char = '\u{1f}';
    let escaped = message.replace("\\ ", &SPACE.to_string());
    escaped
        .split_whitespace()
        .map(|word| {
            let word = word.trim_matches(|c| c == '\'' || c == '"');
            std::path::PathBuf::from(word.replace(SPACE, " "))
        })
        .filter(|path| programs::image::named_as_image(path) && path.is_file())
        .collect()
}
