//! `hc run "prompt"`: one agent run in print mode. A new session; the
//! prompt, the pinned context and the resolved configuration placed on it
//! in the run's own declaration; the answer streamed to stdout, each tool
//! call one line on stderr, permission questions asked on the terminal
//! when there is one; a closing line of turns, tokens, cost and time.

use crate::exit::{Exit, exit};
use crate::output::{JsonOut, OutputFormat};
use crate::render::Renderer;
use crate::sessions::Choice;
use crate::settings::{self, Flags};
use crate::trust::Ask;
use agent::contract::{PromptImage, RunBody, RunStop};
use agent::launch::Launch;
use anyhow::{Context as _, Result};
use engine::{Context, Engine};
use hc_host::open::{Find, Staged};
use protocol::SubscribeOpts;
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
    /// How to print.
    pub format: crate::output::OutputFormat,
    /// `--include-partial-messages` (with stream-json).
    pub partial: bool,
    /// Claude Code's print-mode flags.
    pub sdk: crate::compat::SdkFlags,
    /// The program driving the run over stdin, when one is.
    pub link: Option<std::sync::Arc<crate::sdk::Link>>,
}

/// Runs the agent once; answers the exit code.
pub fn run(request: RunRequest) -> Result<u8> {
    let started = Instant::now();
    let json = request.format != OutputFormat::Text;
    let outcome = start(request, started);
    if json && let Err(e) = &outcome {
        // A script reading JSON gets its `result` even when the run could
        // not start (the message is on stderr too).
        let code = e.downcast_ref::<Exit>().map_or(1, |x| x.code);
        crate::output::failed(&format!("{e:#}"), code, started.elapsed().as_millis());
    }
    outcome
}

/// Everything `run` does but printing an early failure as JSON.
fn start(request: RunRequest, started: Instant) -> Result<u8> {
    if request.sdk.streaming() {
        return crate::sdk::serve(request);
    }
    let prompt = read_prompt(request.prompt.clone())?;
    let interactive = std::fs::File::open("/dev/tty").is_ok()
        && std::io::IsTerminal::is_terminal(&std::io::stderr());
    let ask = if interactive {
        Ask::Person(&crate::tty::Tty)
    } else {
        Ask::Never
    };
    let staged = Staged::here(Find::OrInit, ask)?;
    // A setting that cannot be read (a bad flag value, a bad line in a
    // config file) is a usage error: exit 2.
    let (_, mut config) = settings::resolve(&staged.files, &request.flags, interactive)
        .map_err(|e| exit(2, format!("{e:#}")))?;
    request.sdk.apply(&mut config).map_err(|e| exit(2, e))?;
    config.compact_first = request.compact;
    check_credentials(&config)?;
    let prepared = staged
        .prepare(request.no_contain)?
        .register(&request.flags, config.interactive)?;
    crate::runtime()?.block_on(async move {
        let host = prepared.open()?;
        let finished = drive(&host.engine, &prompt, &config, &request, started).await;
        host.close().await;
        finished.map(|f| f.code)
    })
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

/// Refuses early, with what to set, when the default API has no key.
pub fn check_credentials(config: &agent::AgentConfig) -> Result<()> {
    let set = |v: &str| std::env::var(v).is_ok_and(|x| !x.trim().is_empty());
    let missing = match config.api {
        agent::ApiKind::Anthropic => {
            !set("ANTHROPIC_API_KEY") && !set("ANTHROPIC_AUTH_TOKEN") && !set("ANTHROPIC_BASE_URL")
        }
        agent::ApiKind::Openai => !set("OPENAI_API_KEY") && !set("OPENAI_BASE_URL"),
    };
    if missing {
        let var = match config.api {
            agent::ApiKind::Anthropic => "ANTHROPIC_API_KEY",
            agent::ApiKind::Openai => "OPENAI_API_KEY",
        };
        return Err(exit(
            1,
            format!(
                "no API key: set {var} (or, to try hermitcrab without one, run `hc-fake-model` and set ANTHROPIC_BASE_URL to the address it prints)"
            ),
        ));
    }
    Ok(())
}

/// A prompt larger than a chunk may hold is refused before anything is
/// made (exit 2), saying what to do instead.
/// The images of `--image` (or a chat message), read; one that cannot be
/// sent is a usage error saying why.
pub(crate) fn load_images(paths: &[std::path::PathBuf]) -> Result<Vec<PromptImage>> {
    paths
        .iter()
        .map(|path| {
            let shown = path.display().to_string();
            let image = programs::image::load(path, &shown).map_err(|e| exit(2, e))?;
            Ok(PromptImage {
                path: shown,
                media_type: image.media_type.to_owned(),
                data: image.data,
            })
        })
        .collect()
}

pub(crate) fn check_prompt(prompt: &str, images: &[PromptImage]) -> Result<()> {
    let pictures: usize = images
        .iter()
        .map(|i| i.data.len() + i.path.len() + 64)
        .sum();
    if pictures + 1024 > substrate::MAX_BODY_BYTES {
        return Err(exit(
            2,
            format!(
                "the images are {:.1} MB together once encoded, and hc keeps at most {} MiB in \
                 one prompt: send fewer or smaller images",
                pictures as f64 / 1e6,
                substrate::MAX_BODY_BYTES >> 20
            ),
        ));
    }
    // The prompt's body holds it as a JSON string, with room for the rest.
    let size = serde_json::to_string(prompt).map_or(prompt.len(), |s| s.len()) + 1024 + pictures;
    if size > substrate::MAX_BODY_BYTES {
        return Err(exit(
            2,
            format!(
                "the prompt is {:.1} MB and hc keeps at most {} MiB in one prompt: save it to a \
                 file in the project and ask for that to be read, e.g. hc run \"do what task.md says\"",
                prompt.len() as f64 / 1e6,
                substrate::MAX_BODY_BYTES >> 20
            ),
        ));
    }
    Ok(())
}

/// The scopes pinned into the agent's knowledge: culture (when there is
/// any), then `--context` ids, each checked.
pub(crate) fn pins_of(engine: &Engine, pins: &[String]) -> Result<Vec<String>> {
    let culture = engine
        .scope(
            &Context::host(),
            &["culture".to_owned()],
            &protocol::ScopeOpts::default(),
        )
        .ok();
    let exists = |id: &str| engine.db().read(|s| s.exists(id)).unwrap_or(false);
    agent::launch::pins_of(culture.as_ref(), pins, exists).map_err(|e| exit(2, e))
}

/// How a run ended.
pub struct Finished {
    /// Its exit code.
    pub code: u8,
    /// The session it ran on.
    pub session: String,
}

/// Starts the run, renders it to its end, and answers how it ended.
pub async fn drive(
    engine: &Engine,
    prompt: &str,
    config: &agent::AgentConfig,
    request: &RunRequest,
    started: Instant,
) -> Result<Finished> {
    let host = Context::host();
    let since = std::time::SystemTime::now();
    let expanded = crate::mcp_prompt::expand(engine, prompt).await?;
    let prompt = expanded.as_deref().unwrap_or(prompt);
    let commanded = crate::commands::expand(engine, prompt, config, &crate::tty::Tty).await?;
    let (prompt, config) = match &commanded {
        Some((prompt, config)) => (prompt.as_str(), config),
        None => (prompt, config),
    };
    let pins = &request.context;
    // A pin that is not there is refused before any session is made.
    let pinned = pins_of(engine, pins)?;
    if config.memory {
        sync_memory(engine);
    }
    let images = load_images(&request.images)?;
    check_prompt(prompt, &images)?;
    let session = crate::sessions::for_choice(
        engine,
        prompt,
        &request.session,
        request.sdk.session_id.as_deref(),
    )?;
    // Before subscribing: what a `lagged` makes the renderer read back
    // starts after this.
    let head = engine.db().head()?;
    let sub = engine.subscribe(
        &host,
        std::slice::from_ref(&session),
        SubscribeOpts { deep: true },
    )?;
    let events = engine
        .events(&sub)
        .ok_or_else(|| anyhow::anyhow!("cannot follow the session's events"))?;
    let launch = Launch {
        session: &session,
        prompt,
        images: &images,
        config,
        pins: &pinned,
    };
    let process = start_agent(engine, &launch, request.session == Choice::New)?;
    let mut renderer = Renderer::new(engine.clone(), session.clone(), config.interactive, head);
    renderer.sdk = request.link.clone();
    if request.format != OutputFormat::Text {
        let shown = crate::sessions::shown(engine.db(), &session);
        if let Some(link) = &request.link {
            link.set_session(&shown);
        }
        let json = JsonOut::new(
            request.format == OutputFormat::StreamJson,
            request.partial,
            shown,
            config.model.clone(),
        );
        emit_init(&json, engine, config, &process)?;
        renderer.json = Some(json);
    }
    let done = renderer.follow(events, &process).await?;
    let mut body = done
        .scopes
        .first()
        .map(|s| RunBody::parse(&s.body_value()))
        .unwrap_or_default();
    // Cancelled at a second Ctrl-C or after the grace period, the agent
    // wrote no reason of its own: it was still the person's interrupt.
    if renderer.interrupted && body.totals.stop_reason.is_none() {
        body.totals.stop_reason = Some(RunStop::Interrupted);
    }
    let code = body.exit_code();
    match renderer.json {
        None => {
            let all_denied = !renderer.changed
                && (body.totals.permission_denials.iter()).any(|d| !renderer.read_only(&d.program));
            summary_line(&body, started, all_denied)
        }
        Some(json) => {
            let calls = model_calls(engine, &session)?;
            let result = crate::output::result(
                &body,
                &answer_of(&done),
                &process,
                &session,
                calls,
                started.elapsed().as_millis(),
                config.tool_names,
            );
            json.result(result);
        }
    }
    sweep_git(engine, since).await;
    if config.memory {
        sync_memory(engine);
    }
    Ok(Finished { code, session })
}

/// The person's memory mirrored into the project (and what a run changed
/// in it carried back); a failure is said, and the run goes on without.
pub(crate) fn sync_memory(engine: &Engine) {
    if let Err(e) = crate::user_memory::sync(engine.db()) {
        eprintln!(
            "hc: your own memory is not synced with this project: {}",
            crate::style::shown(&format!("{e:#}"))
        );
    }
}

/// Commits what `launch` needs first and runs the agent; answers its
/// process. A session made for the run (`made`) is removed when it cannot
/// start.
pub(crate) fn start_agent(engine: &Engine, launch: &Launch<'_>, made: bool) -> Result<String> {
    let host = Context::host();
    let (before, args) = launch.plan();
    let begun = before
        .map_or(Ok(()), |declaration| {
            engine.commit(&host, declaration).map(drop)
        })
        .and_then(|()| engine.run(&host, "agent", args));
    begun.map_err(|e| {
        if made {
            crate::sessions::forget(engine, launch.session);
        }
        e.into()
    })
}

/// After a run: git settings and hooks that run code, left by a tool in a
/// nested repository since `since`, made harmless and said.
pub async fn sweep_git(engine: &Engine, since: std::time::SystemTime) {
    let config = engine.config();
    let mut roots = vec![config.project_root.clone()];
    for grant in config.grants.values() {
        roots.extend(
            grant
                .write
                .iter()
                .map(|w| contain::policy::resolve(&config.project_root, w)),
        );
    }
    let found = tokio::task::spawn_blocking(move || contain::git::sweep(&roots, since))
        .await
        .unwrap_or_default();
    for line in found {
        eprintln!(
            "hc: a tool left a git setting that would run code on your machine: {}",
            crate::style::shown(&line)
        );
    }
}

/// A finished run's answer: its `engine/output` text.
fn answer_of(done: &substrate::ScopeResult) -> String {
    done.chunks
        .iter()
        .find(|c| c.is_on("engine/output", substrate::PlacementType::Instance))
        .map(|c| protocol::program::Output::parse(&c.body_value()).text)
        .unwrap_or_default()
}

/// How many model calls `session` has made (over all its runs).
fn model_calls(engine: &Engine, session: &str) -> Result<usize> {
    let chunks = engine.scope(
        &Context::host(),
        &[session.to_owned()],
        &protocol::ScopeOpts::default(),
    )?;
    Ok(agent::calls(&chunks.chunks).len())
}

/// The tools a run offers: the programs models may call, and the agent's own.
fn tool_names(engine: &Engine) -> Vec<String> {
    let programs = engine
        .scope(
            &Context::host(),
            &["engine/program".to_owned()],
            &protocol::ScopeOpts {
                kind: substrate::TypeFilter::Instance,
                ..protocol::ScopeOpts::default()
            },
        )
        .map(|r| r.chunks)
        .unwrap_or_default();
    let mut names: Vec<String> = programs
        .iter()
        .filter_map(|c| {
            let name = c.name.clone()?;
            let body = protocol::program::ProgramBody::parse(&name, &c.body_value()).ok()?;
            body.offered_as_tool().then_some(name)
        })
        .collect();
    names.sort();
    names.extend(agent::catalog::OWN_TOOLS.map(str::to_owned));
    names
}

/// The `system`/`init` line: the tools, the servers, the slash commands
/// (chat's, the command files', the MCP prompts'), the skills, the agents.
fn emit_init(
    json: &JsonOut,
    engine: &Engine,
    config: &agent::AgentConfig,
    process: &str,
) -> Result<()> {
    let cwd = engine.config().project_root.to_string_lossy().into_owned();
    let root = &engine.config().project_root;
    let (commands, _) = crate::commands::find(root);
    let mut slash_commands: Vec<String> = crate::commands::BUILT_IN
        .iter()
        .map(|c| c.trim_start_matches('/').to_owned())
        .collect();
    slash_commands.extend(commands.into_iter().map(|c| c.name));
    slash_commands.extend(crate::mcp_config::prompt_commands(engine.db())?);
    let home = std::env::var_os("HOME").map(std::path::PathBuf::from);
    let user = config.user_config_dir.as_deref().map(std::path::Path::new);
    let (skills, _) = agent::skills::find(root, user, home.as_deref());
    let skills: Vec<String> = skills.into_iter().map(|s| s.name).collect();
    // the general sub-agent, then the custom ones (`subagent_type`)
    let (custom, _) = agent::agents::find(root, user, home.as_deref());
    let mut agents = vec!["agent".to_owned()];
    agents.extend(config.agents.iter().map(|a| a.name.clone()));
    agents.extend(
        custom
            .into_iter()
            .map(|a| a.name)
            .filter(|n| !config.agents.iter().any(|a| a.name == *n)),
    );
    let tools: Vec<String> = tool_names(engine)
        .iter()
        .map(|t| config.tool_names.show(t).to_owned())
        .collect();
    json.init(&crate::output::Init {
        tools: &tools,
        cwd: &cwd,
        mode: config.permission_mode,
        process,
        mcp_servers: &crate::mcp_config::statuses(engine.db())?,
        slash_commands: &slash_commands,
        skills: &skills,
        agents: &agents,
    });
    Ok(())
}

/// The closing line of a finished run on stderr (with its denials
/// counted), and why it stopped when it did not finish; `all_denied`:
/// calls that would change things were denied, and none ran.
pub fn summary_line(body: &RunBody, started: Instant, all_denied: bool) {
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
