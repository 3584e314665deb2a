//! `hc run "prompt"`: one agent run in print mode. A new session; the
//! prompt, the pinned context and the resolved configuration placed on it
//! in the run's own declaration; the answer streamed to stdout, each tool
//! call one line on stderr, permission questions asked on the terminal
//! when there is one; a closing line of turns, tokens, cost and time.

use crate::args::RunFlags;
use crate::exit::{Exit, exit};
use crate::print::sink::JsonSink;
use crate::print::{OutputFormat, Printed};
use crate::sessions::Choice;
use crate::settings::{self, Flags};
use crate::term::{answerer::TerminalAnswerer, text::TextSink};
use anyhow::{Context as _, Result};
use engine::Engine;
use hc_host::follow::{Answerer, Sink};
use hc_host::open::{Find, Staged};
use hc_host::turn::{Finished, Turn, check_credentials};
use std::time::Instant;

/// What `hc run` was asked.
#[derive(Clone)]
pub struct RunRequest {
    /// The prompt (`None`: read it from stdin).
    pub prompt: Option<String>,
    /// Settings given as flags.
    pub flags: Flags,
    /// `--no-contain`.
    pub no_contain: bool,
    /// `--context ID`: scopes to pin.
    pub context: Vec<String>,
    /// `--image FILE`: images sent with the prompt.
    pub images: Vec<std::path::PathBuf>,
    /// Which session the run goes on.
    pub session: Choice,
    /// `--compact`: summarize the session before going on.
    pub compact: bool,
    /// Claude Code's print-mode flags.
    pub sdk: crate::compat::SdkFlags,
    /// `--bg`: queued for a worker instead of run here.
    pub background: Option<crate::term::background::Background>,
    /// `--checkout`: a session's files checked out where its last run on
    /// another host left them.
    pub checkout: bool,
    /// The id the driving program gave this turn's prompt (the SDK's
    /// user message `uuid`).
    pub prompt_uuid: Option<String>,
}

impl RunRequest {
    /// Flags that mean something only beside others (`--checkout` with
    /// `--resume`, `--include-partial-messages` with stream-json output…):
    /// one given without them is a usage error, never taken and ignored.
    pub fn check_flags(&self, printed: &Printed) -> Result<()> {
        let resumed = self.session != crate::sessions::Choice::New;
        let streaming = self.sdk.streaming();
        let stream_out = printed.format == crate::print::OutputFormat::StreamJson;
        let refusals = [
            (
                self.checkout && !resumed,
                "--checkout goes with --resume or --continue: it checks out where that session's files are",
            ),
            (
                self.sdk.fork_session && !resumed,
                "--fork-session goes with --resume or --continue: it forks the session they name",
            ),
            (
                self.compact && !resumed,
                "--compact goes with --resume or --continue: it compacts the session they name before going on",
            ),
            (
                self.sdk.session_id.is_some() && resumed,
                "--session-id names a new session; the session --resume or --continue goes on with keeps its name",
            ),
            (
                self.sdk.await_initialize && !streaming,
                "--await-initialize goes with --input-format stream-json: the initialize request is its first line",
            ),
            (
                printed.partial && !stream_out,
                "--include-partial-messages goes with --output-format stream-json: the deltas are stream_event lines",
            ),
            (
                self.sdk.replay_user_messages && !stream_out,
                "--replay-user-messages goes with --output-format stream-json: the echoes are lines of it",
            ),
            (
                self.sdk.prompts_over_stdio() && !streaming,
                "--permission-prompt-tool stdio asks the program that drives hc over stdin: give it with --input-format stream-json",
            ),
            (
                streaming && self.background.is_some(),
                "--bg queues one prompt for a worker; it does not take --input-format stream-json",
            ),
            (
                streaming && self.prompt.is_some(),
                "with --input-format stream-json the prompts come on stdin as user messages: leave out the prompt argument",
            ),
        ];
        match refusals.into_iter().find(|(refused, _)| *refused) {
            Some((_, why)) => Err(exit(2, why)),
            None => Ok(()),
        }
    }

    /// `--settings`, added to the flags (before they are resolved): a
    /// setting hermitcrab does not apply is a usage error.
    pub fn apply_settings(&mut self) -> Result<()> {
        if let Some(given) = self.sdk.settings.clone() {
            crate::claude_settings::apply(&given, &mut self.flags).map_err(|e| exit(2, e))?;
        }
        Ok(())
    }

    /// What `hc run`'s flags ask: the run, and how it is printed.
    pub fn from_flags(this: RunFlags) -> (RunRequest, Printed) {
        let printed = Printed {
            format: this.output_format,
            partial: this.include_partial_messages,
            verbose: this.sdk.verbose,
        };
        let request = RunRequest {
            prompt: this.prompt,
            flags: this.settings.into_flags(),
            no_contain: this.no_contain,
            context: this.context,
            images: this.images,
            compact: this.compact,
            sdk: this.sdk,
            background: this.bg.then_some(crate::term::background::Background {
                base: this.base,
                worktree: !this.no_worktree,
                labels: this.labels,
                retry: this.retry,
            }),
            checkout: this.checkout,
            prompt_uuid: None,
            session: match (this.continue_, this.resume) {
                (true, _) => crate::sessions::Choice::Latest,
                (false, Some(id)) => crate::sessions::Choice::Resume(id),
                (false, None) => crate::sessions::Choice::New,
            },
        };
        (request, printed)
    }
}

/// Runs the agent once; answers the exit code.
pub fn run(request: RunRequest, printed: Printed) -> Result<u8> {
    let started = Instant::now();
    reporting(printed.format, started, || start(request, printed, started))
}

/// Runs `run`; printed as `format` asks JSON, a failure before the run
/// could start is also a JSON `result`: a script reading JSON gets one
/// (the message is on stderr too).
pub fn reporting(
    format: OutputFormat,
    started: Instant,
    run: impl FnOnce() -> Result<u8>,
) -> Result<u8> {
    let outcome = run();
    if format != OutputFormat::Text
        && let Err(e) = &outcome
    {
        let code = e.downcast_ref::<Exit>().map_or(1, |x| x.code);
        crate::print::failed(&format!("{e:#}"), code, started.elapsed().as_millis());
    }
    outcome
}

/// Everything `run` does but printing an early failure as JSON.
fn start(mut request: RunRequest, printed: Printed, started: Instant) -> Result<u8> {
    request.check_flags(&printed)?;
    request.apply_settings()?;
    let prompt = read_prompt(request.prompt.clone())?;
    let (interactive, ask) = crate::tty::person();
    // (no key at all: said before a project is made for nothing)
    hc_host::turn::check_credentials_before_making(&std::env::current_dir()?)?;
    let mut staged = Staged::here(Find::OrInit, ask)?;
    request
        .sdk
        .keep_sources(&mut staged.files)
        .map_err(|e| exit(2, e))?;
    // A setting that cannot be read (a bad flag value, a bad line in a
    // config file) is a usage error: exit 2.
    let (_, mut config) = settings::resolve(&staged.files, &request.flags, interactive)
        .map_err(|e| exit(2, format!("{e:#}")))?;
    request.sdk.apply(&mut config).map_err(|e| exit(2, e))?;
    config.compact_first = request.compact;
    check_credentials(&config)?;
    if let Some(bg) = &request.background {
        return crate::term::background::queue(staged, &request, bg, &prompt, config, printed);
    }
    let prepared = staged
        .prepare(request.no_contain)?
        .register(&request.flags, config.interactive)?;
    crate::runtime()?.block_on(async move {
        let host = prepared.open()?;
        let mut sink = sink_for(&host.engine, printed);
        let answerer = TerminalAnswerer {
            interactive: config.interactive,
        };
        let finished = drive(
            &host.engine,
            &prompt,
            &config,
            &request,
            started,
            &mut *sink,
            &answerer,
        );
        // Esc interrupts while it runs (a person at the terminal)
        let keys = crate::tty::RunKeys::hold(config.interactive);
        let finished = finished.await;
        drop(keys);
        host.close().await;
        finished.map(|f| f.code)
    })
}

/// What shows a run printed as asked.
pub fn sink_for(engine: &Engine, printed: Printed) -> Box<dyn Sink> {
    match printed.format {
        OutputFormat::Text => Box::new(TextSink::new(engine.clone(), printed.verbose)),
        format => Box::new(JsonSink::new(format, printed.partial)),
    }
}

/// One turn of `request` with `prompt` (asked at `started`): shown on
/// `sink`, what it asks put to `answerer` (a command file's `` !`cmd` ``
/// line to the terminal); how it ended.
pub async fn drive(
    engine: &Engine,
    prompt: &str,
    config: &agent::AgentConfig,
    request: &RunRequest,
    started: Instant,
    sink: &mut dyn Sink,
    answerer: &dyn Answerer,
) -> Result<Finished> {
    let turn = Turn {
        prompt,
        config,
        pins: &request.context,
        images: &request.images,
        attached: &[],
        session: &request.session,
        session_id: request.sdk.session_id.as_deref(),
        confirm: &crate::tty::Tty,
        started,
        checkout: request.checkout,
        uuid: request.prompt_uuid.as_deref(),
        fork: request.sdk.fork_session,
    };
    hc_host::turn::turn(engine, turn, sink, answerer).await
}

/// How long a prompt given as an argument waits for piped input to start
/// (`git diff | hc run "review this"`); a pipe left open and idle by
/// whatever started `hc` is not waited on longer.
const PIPED_WAIT_MS: i32 = 1_000;

/// What is piped on stdin beside a prompt given as an argument, if any.
fn piped_input() -> Result<Option<String>> {
    let stdin = std::io::stdin();
    if std::io::IsTerminal::is_terminal(&stdin) {
        return Ok(None);
    }
    let mut fds = [libc::pollfd {
        fd: 0,
        events: libc::POLLIN,
        revents: 0,
    }];
    // SAFETY: one valid pollfd for the duration of the call.
    #[allow(unsafe_code)]
    let ready = unsafe { libc::poll(fds.as_mut_ptr(), 1, PIPED_WAIT_MS) };
    if ready <= 0 || fds[0].revents & (libc::POLLIN | libc::POLLHUP) == 0 {
        return Ok(None);
    }
    let text = read_stdin().context("cannot read what was piped on stdin")?;
    Ok(Some(text).filter(|t| !t.trim().is_empty()))
}

/// All of stdin, as text (bytes that are not UTF-8 replaced, as a diff of
/// a Latin-1 file has them).
fn read_stdin() -> std::io::Result<String> {
    let mut bytes = Vec::new();
    std::io::Read::read_to_end(&mut std::io::stdin().lock(), &mut bytes)?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

fn read_prompt(given: Option<String>) -> Result<String> {
    let prompt = match given.filter(|p| p != "-") {
        Some(p) => match piped_input()? {
            Some(piped) => format!("{p}\n\n{piped}"),
            None => p,
        },
        None => {
            if std::io::IsTerminal::is_terminal(&std::io::stdin()) {
                return Err(exit(
                    2,
                    "say what to do: `hc run \"fix the failing test\"` (or pipe the prompt on stdin)",
                ));
            }
            read_stdin().context("cannot read the prompt from stdin")?
        }
    };
    if prompt.trim().is_empty() {
        return Err(exit(2, "the prompt is empty; say what to do"));
    }
    Ok(prompt)
}
