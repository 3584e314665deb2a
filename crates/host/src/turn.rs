//! A turn: one run of the agent on a session, started and driven to its
//! end without rendering — what the terminal, the print formats and the
//! Agent SDK each do with a prompt. The prompt expanded (an MCP prompt, a
//! command file), the pins and images checked, the session found or made,
//! the agent started and followed ([`crate::follow`]), and the run's end
//! handed to the [`Sink`]. The pieces are public for a host (the page)
//! that starts a run and leaves following it to others.

use crate::confirm::Confirm;
use crate::exit::exit;
use crate::follow::{Answerer, Begun, Ended, Follower, Sink};
use crate::sessions::Choice;
use agent::contract::{PromptImage, RunBody, RunStop};
use agent::launch::Launch;
use anyhow::Result;
use engine::{Context, Engine};
use protocol::SubscribeOpts;
use std::path::PathBuf;
use std::time::Instant;

/// What a turn is asked.
pub struct Turn<'a> {
    /// The prompt, as the person gave it.
    pub prompt: &'a str,
    /// The resolved configuration.
    pub config: &'a agent::AgentConfig,
    /// `--context` ids to pin.
    pub pins: &'a [String],
    /// Images sent with the prompt, as files.
    pub images: &'a [PathBuf],
    /// Images sent with the prompt as data (an editor's, over ACP).
    pub attached: &'a [PromptImage],
    /// Which session the run goes on.
    pub session: &'a Choice,
    /// The id a driving program gave a new session (`--session-id`).
    pub session_id: Option<&'a str>,
    /// Who a command file's `` !`cmd` `` line is put to.
    pub confirm: &'a dyn Confirm,
    /// When the person asked (the time a summary counts from).
    pub started: Instant,
    /// Going on with a session whose last run left its files elsewhere
    /// (another host, another branch): check those out first
    /// (`--checkout`); without, such a run is refused saying which.
    pub checkout: bool,
    /// The id the driving program gave the prompt (the SDK's `uuid`).
    pub uuid: Option<&'a str>,
    /// Going on with a session (`--resume`, `--continue`) in a new one
    /// forked from it (`--fork-session`).
    pub fork: bool,
}

impl<'a> Turn<'a> {
    /// A turn of `prompt` on `session` and nothing else asked of it: no
    /// pins or images, no name, no checkout or fork, timed from now.
    pub fn of(
        prompt: &'a str,
        config: &'a agent::AgentConfig,
        session: &'a Choice,
        confirm: &'a dyn Confirm,
    ) -> Turn<'a> {
        Turn {
            prompt,
            config,
            pins: &[],
            images: &[],
            attached: &[],
            session,
            session_id: None,
            confirm,
            started: Instant::now(),
            checkout: false,
            uuid: None,
            fork: false,
        }
    }
}

/// How a run ended.
pub struct Finished {
    /// Its exit code.
    pub code: u8,
    /// The session it ran on.
    pub session: String,
}

/// Starts the run, follows it to its end (shown by `sink`, questions put
/// to `answerer`), and answers how it ended.
pub async fn turn(
    engine: &Engine,
    turn: Turn<'_>,
    sink: &mut dyn Sink,
    answerer: &dyn Answerer,
) -> Result<Finished> {
    let since = std::time::SystemTime::now();
    let expanded = crate::mcp_prompt::expand(engine, turn.prompt).await?;
    let prompt = expanded.as_deref().unwrap_or(turn.prompt);
    let commanded = crate::commands::expand(engine, prompt, turn.config, turn.confirm).await?;
    let (prompt, config) = match &commanded {
        Some((prompt, config)) => (prompt.as_str(), config),
        None => (prompt, turn.config),
    };
    // A pin that is not there is refused before any session is made.
    let pinned = pins_of(engine, turn.pins)?;
    if config.memory {
        sync_memory(engine);
    }
    let mut images = load_images(turn.images)?;
    images.extend(turn.attached.iter().cloned());
    check_prompt(prompt, &images)?;
    let mut session = crate::sessions::for_choice(engine, prompt, turn.session, turn.session_id)?;
    if *turn.session != Choice::New {
        handed_over(engine, &session, turn.checkout)?;
    }
    if turn.fork && matches!(turn.session, Choice::Resume(_) | Choice::Latest) {
        session = crate::fork::fork(engine, &session, crate::fork::Cut::Whole)?;
    }
    // Before subscribing: what a `lagged` makes the follower read back
    // starts after this.
    let head = engine.db().head()?;
    let (sub, events) = subscribe(engine, &session)?;
    let launch = Launch {
        session: &session,
        prompt,
        images: &images,
        config,
        pins: &pinned,
        uuid: turn.uuid,
    };
    engine.watch_files();
    for dir in &config.add_dirs {
        engine.config().add_dirs.add(dir.into());
    }
    // (as Claude Code's print mode: its init line says where each server
    // stands, so they are started first)
    let servers = match sink.wants_servers() {
        true => Some(crate::mcp_config::connect(engine).await?),
        false => None,
    };
    let process = start_agent(engine, &launch, *turn.session == Choice::New)?;
    let run = Begun {
        engine,
        config,
        session: &session,
        process: &process,
        servers: servers.as_deref(),
    };
    let followed = (head, events, sub.as_str());
    let code = follow_to_end(&run, followed, sink, answerer, turn.started).await;
    // (one engine runs many turns in `hc chat` and the SDK's loop: a
    // subscription left behind would be matched against every commit)
    engine.unsubscribe(&sub);
    // (sent however its following ended: the record is what is sent)
    crate::telemetry::run_ended(engine.db(), &session, &process);
    let code = code?;
    sweep_git(engine, since).await;
    if engine.db().is_shared() {
        let root = engine.config().project_root.clone();
        let (db, at) = (std::sync::Arc::clone(engine.db()), session.clone());
        let noted = tokio::task::spawn_blocking(move || crate::place::record(&db, &root, &at));
        if let Ok(Err(e)) = noted.await {
            eprintln!("hc: where {session}'s files are was not noted: {e:#}");
        }
    }
    if config.memory {
        sync_memory(engine);
    }
    Ok(Finished { code, session })
}

/// Before going on with `session` on a shared store: its files where its
/// last run left them (`crate::place::check`), said when checked out.
pub fn handed_over(engine: &Engine, session: &str, checkout: bool) -> Result<()> {
    if !engine.db().is_shared() {
        return Ok(());
    }
    let root = &engine.config().project_root;
    if let Some(done) = crate::place::check(engine.db(), root, session, checkout)? {
        eprintln!("hc: {done}");
    }
    Ok(())
}

/// A subscription to everything under `session` (deep), and its events.
pub fn subscribe(engine: &Engine, session: &str) -> Result<(String, engine::EventStream)> {
    let sub = engine.subscribe(
        &Context::host(),
        &[session.to_owned()],
        SubscribeOpts { deep: true },
    )?;
    let events = engine
        .events(&sub)
        .ok_or_else(|| anyhow::anyhow!("cannot follow the session's events"))?;
    Ok((sub, events))
}

/// Shows the started run on `sink` until it ends (what it asks put to
/// `answerer`), then its outcome; answers its exit code.
async fn follow_to_end(
    run: &Begun<'_>,
    (head, events, subscription): (substrate::CommitId, engine::EventStream, &str),
    sink: &mut dyn Sink,
    answerer: &dyn Answerer,
    started: Instant,
) -> Result<u8> {
    sink.begin(run)?;
    let session = run.session.to_owned();
    let mut follower = Follower::new(run.engine.clone(), session, head, sink, answerer);
    let done = follower.follow(events, subscription, run.process).await?;
    let interrupted = follower.interrupted;
    let mut body = done
        .scopes
        .first()
        .map(|s| RunBody::parse(&s.body_value()))
        .unwrap_or_default();
    // Cancelled at a second Ctrl-C or after the grace period, the agent
    // wrote no reason of its own: it was still the person's interrupt.
    if interrupted && body.totals.stop_reason.is_none() {
        body.totals.stop_reason = Some(RunStop::Interrupted);
    }
    sink.ended(&Ended {
        engine: run.engine,
        config: run.config,
        body: &body,
        done: &done,
        session: run.session,
        process: run.process,
        started,
    })?;
    Ok(body.exit_code())
}

/// Refuses early, with what to set, when the default API has no key.
pub fn check_credentials(config: &agent::AgentConfig) -> Result<()> {
    if let Some(var) = missing_key(config.api) {
        return Err(exit(
            1,
            format!(
                "no API key: set {var} (or, to try hermitcrab without one, run `hc-fake-model` and set ANTHROPIC_BASE_URL to the address it prints)"
            ),
        ));
    }
    Ok(())
}

/// Before a project would be made in `dir` (none is found from it): a
/// run with no key for either API could not start, so it is said now and
/// nothing is made.
pub fn check_credentials_before_making(dir: &std::path::Path) -> Result<()> {
    let none = missing_key(agent::ApiKind::Anthropic).is_some()
        && missing_key(agent::ApiKind::Openai).is_some();
    if none && crate::project::Project::find(dir).is_err() {
        return check_credentials(&agent::AgentConfig::default());
    }
    Ok(())
}

/// The variable to set when API `api` cannot be reached (none of its key,
/// token or base URL is set); `None` when it can.
pub fn missing_key(api: agent::ApiKind) -> Option<&'static str> {
    let set = |v: &str| std::env::var(v).is_ok_and(|x| !x.trim().is_empty());
    match api {
        agent::ApiKind::Anthropic => (!set("ANTHROPIC_API_KEY")
            && !set("ANTHROPIC_AUTH_TOKEN")
            && !set("ANTHROPIC_BASE_URL"))
        .then_some("ANTHROPIC_API_KEY"),
        agent::ApiKind::Openai => {
            (!set("OPENAI_API_KEY") && !set("OPENAI_BASE_URL")).then_some("OPENAI_API_KEY")
        }
    }
}

/// The images of `--image` (or a chat message), read; one that cannot be
/// sent is a usage error saying why.
pub fn load_images(paths: &[PathBuf]) -> Result<Vec<PromptImage>> {
    paths
        .iter()
        .map(|path| {
            let shown = path.display().to_string();
            let image = programs::image::load(path, &shown).map_err(|e| exit(2, e.to_string()))?;
            Ok(PromptImage {
                path: shown,
                media_type: image.media_type.to_owned(),
                data: image.data,
            })
        })
        .collect()
}

/// A prompt larger than a chunk may hold is refused before anything is
/// made (exit 2), saying what to do instead.
pub fn check_prompt(prompt: &str, images: &[PromptImage]) -> Result<()> {
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
pub fn pins_of(engine: &Engine, pins: &[String]) -> Result<Vec<String>> {
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

/// The person's memory mirrored into the project (and what a run changed
/// in it carried back); a failure is said, and the run goes on without.
pub fn sync_memory(engine: &Engine) {
    if let Err(e) = crate::user_memory::sync(engine.db()) {
        eprintln!(
            "hc: your own memory is not synced with this project: {}",
            crate::text::shown(&format!("{e:#}"))
        );
    }
}

/// Commits what `launch` needs first and runs the agent; answers its
/// process. A session made for the run (`made`) is removed when it cannot
/// start.
pub fn start_agent(engine: &Engine, launch: &Launch<'_>, made: bool) -> Result<String> {
    start_agent_as(engine, &Context::host(), launch, made)
}

/// [`start_agent`] by a host acting for `host`'s person (a page user).
pub fn start_agent_as(
    engine: &Engine,
    host: &Context,
    launch: &Launch<'_>,
    made: bool,
) -> Result<String> {
    let (before, args) = launch.plan();
    let begun = before
        .map_or(Ok(()), |declaration| {
            engine.commit(host, declaration).map(drop)
        })
        .and_then(|()| engine.run(host, "agent", args));
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
            crate::text::shown(&line)
        );
    }
}
