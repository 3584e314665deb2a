//! `hc run "prompt"`: one agent run in print mode. A new session; the
//! prompt, the pinned context and the resolved configuration placed on it
//! in the run's own declaration; the answer streamed to stdout, each tool
//! call one line on stderr, permission questions asked on the terminal
//! when there is one; a closing line of turns, tokens, cost and time.

use crate::exit::{Exit, exit};
use crate::print::sink::JsonSink;
use crate::print::{OutputFormat, Printed};
use crate::settings;
use crate::term::{answerer::TerminalAnswerer, text::TextSink};
use anyhow::{Context as _, Result};
use engine::Engine;
use hc_host::follow::{Answerer, Sink};
use hc_host::open::{Find, Staged};
use hc_host::turn::{Finished, Turn, check_credentials};
use std::time::Instant;

pub use super::request::RunRequest;

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
