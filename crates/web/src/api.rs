//! The page's HTTP calls beside its socket: start a run on a session (as
//! `hc chat` sends a message), run a program from its form, mount and
//! close a webview program's tile, and the trace — the tree, a call's
//! exact request (rebuilt by the agent's own function) and its diff to the
//! previous one. The sidebar's rows are `sessions.rs`'s; everything else
//! the page does is the protocol on `/ws`.

use super::App;
use axum::Json;
use axum::body::Body;
use axum::extract::{Path, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use engine::Context;
use serde::Deserialize;
use serde_json::{Value, json};

/// An error as the page shows it.
pub(crate) fn failed(status: StatusCode, e: impl std::fmt::Display) -> Response {
    (status, Json(json!({"error": format!("{e:#}")}))).into_response()
}

/// What the page sends to start a run.
#[derive(Deserialize)]
pub struct RunAsked {
    /// The session to go on with (none: a new one).
    session: Option<String>,
    /// The message.
    prompt: String,
    /// An agent preset (`hermitcrab`); none: the server's.
    #[serde(default)]
    agent: Option<String>,
    /// Start it in the background: queued for a worker (this server is
    /// one), in a git worktree of its own.
    #[serde(default)]
    background: bool,
    /// With `background`: the labels a worker must carry to take it.
    #[serde(default)]
    labels: Vec<String>,
}

/// `POST /api/run`: a run of the agent on the session (a new one when
/// none is named), with the prompt — slash commands expanded as in `hc
/// chat`. Answers `{session, process}`; the page follows the session on
/// its socket.
pub async fn run(
    State(app): State<App>,
    headers: axum::http::HeaderMap,
    Json(asked): Json<RunAsked>,
) -> Response {
    let by = crate::auth::person_of(&app, &headers).map(|p| p.name.clone());
    match start(&app, asked, by.as_deref()).await {
        Ok((session, process)) => {
            Json(json!({"session": session, "process": process})).into_response()
        }
        Err(e) => failed(StatusCode::BAD_REQUEST, e),
    }
}

async fn start(app: &App, asked: RunAsked, by: Option<&str>) -> anyhow::Result<(String, String)> {
    let engine = &app.engine;
    hc_host::turn::check_credentials(&app.config)?;
    let prompt = asked.prompt;
    if prompt.trim().is_empty() {
        anyhow::bail!("the message is empty; say what to do");
    }
    let expanded = hc_host::mcp_prompt::expand(engine, &prompt).await?;
    let prompt = expanded.unwrap_or(prompt);
    let base = match asked.agent.as_deref().or(app.agent.as_deref()) {
        None | Some("") => &app.config,
        Some("hermitcrab") => &app.hermitcrab,
        Some(other) => anyhow::bail!("there is no agent preset `{other}`: the one is `hermitcrab`"),
    };
    // `!cmd` lines are asked on the server's terminal, as they were
    let commanded = hc_host::commands::expand(engine, &prompt, base, app.confirm).await?;
    let (prompt, config) = match commanded {
        Some((prompt, config)) => (prompt, config),
        None => (prompt, base.clone()),
    };
    hc_host::turn::check_prompt(&prompt, &[])?;
    let pins = hc_host::turn::pins_of(engine, &[])?;
    for label in &asked.labels {
        hc_host::worker::check_label(label).map_err(anyhow::Error::msg)?;
    }
    if !asked.background && !asked.labels.is_empty() {
        anyhow::bail!("labels choose a worker for a run in the background: ask for one too");
    }
    if asked.background {
        if asked.session.is_some() {
            anyhow::bail!(
                "a run in the background starts a session of its own: start it from a new session"
            );
        }
        let root = engine.config().project_root.clone();
        let queued = hc_host::worker::enqueue(
            engine.db(),
            engine.config(),
            &root,
            hc_host::worker::Asked {
                prompt: &prompt,
                config: &config,
                images: &[],
                pins: &pins,
                worktree: Some(None),
                name: None,
                labels: &asked.labels,
                retry: app.retry.as_deref(),
                by,
            },
        )?;
        return Ok((queued.session, queued.process));
    }
    if config.memory {
        hc_host::turn::sync_memory(engine);
    }
    let (session, made) = match asked.session {
        Some(given) => (hc_host::sessions::resolve(engine.db(), &given)?, false),
        None => (hc_host::sessions::create(engine, &prompt)?, true),
    };
    let launch = agent::launch::Launch {
        session: &session,
        prompt: &prompt,
        images: &[],
        config: &config,
        pins: &pins,
        uuid: None,
    };
    let host = match by {
        Some(person) => Context::host_for(person),
        None => Context::host(),
    };
    let process = hc_host::turn::start_agent_as(engine, &host, &launch, made)?;
    hc_host::telemetry::when_ended(engine, &session, &process);
    Ok((session, process))
}

/// What the page sends to run a program from its form.
#[derive(Deserialize)]
pub struct ProgramAsked {
    program: String,
    #[serde(default)]
    input: Value,
}

/// `POST /api/program-run`: a run of `program` by the host, its input an
/// argument chunk of its input type. Answers `{process, webview}`.
pub async fn program_run(
    State(app): State<App>,
    headers: axum::http::HeaderMap,
    Json(asked): Json<ProgramAsked>,
) -> Response {
    let engine = &app.engine;
    let host = crate::auth::context_of(&app, &headers);
    let read = engine.scope(
        &host,
        &["engine/program".to_owned()],
        &protocol::ScopeOpts {
            kind: substrate::TypeFilter::Instance,
            limit: Some(usize::MAX),
            ..protocol::ScopeOpts::default()
        },
    );
    let body = read.ok().and_then(|r| {
        r.chunks
            .iter()
            .find(|c| c.id == asked.program || c.name.as_deref() == Some(asked.program.as_str()))
            .and_then(|c| {
                let name = c.name.clone().unwrap_or_default();
                let body = protocol::program::ProgramBody::parse(&name, &c.body_value()).ok();
                body.map(|b| (name, b))
            })
    });
    let Some((name, body)) = body else {
        return failed(
            StatusCode::NOT_FOUND,
            format!("no program `{}`", asked.program),
        );
    };
    // (the person's permission rules, as for any call: a deny refuses it)
    let root = engine.config().project_root.clone();
    let decided =
        hc_host::permit::asked_by_person(&app.config, &root, &name, &asked.input, body.read_only);
    if let Err(why) = decided {
        return failed(StatusCode::FORBIDDEN, why);
    }
    let mut args = protocol::RunArgs::default();
    if let Some(input_type) = &body.input_type {
        args.chunks.push(
            protocol::ChunkDecl::generated()
                .body(asked.input)
                .on(protocol::NewPlacement::instance(input_type)),
        );
    }
    match engine.run(&host, &asked.program, args) {
        Ok(process) => Json(json!({
            "process": process,
            "webview": body.runtime == protocol::program::Runtime::Webview,
        }))
        .into_response(),
        Err(e) => failed(StatusCode::BAD_REQUEST, e),
    }
}

/// `POST /api/tile/PROCESS`: what mounting the tile of a webview run takes
/// — a one-time slot token for its socket, and the address of its page
/// (its files under a key of their own, which a sandboxed frame uses in
/// place of the cookie it does not have).
pub async fn mount(State(app): State<App>, Path(process): Path<String>) -> Response {
    match app.engine.tile_token(&Context::host(), &process) {
        Ok((token, entry)) => {
            let fresh = match super::auth::random_hex(16) {
                Ok(key) => key,
                Err(e) => return failed(StatusCode::INTERNAL_SERVER_ERROR, e),
            };
            let key = app.views().entry(process.clone()).or_insert(fresh).clone();
            let page = entry
                .rsplit('/')
                .next()
                .filter(|f| !f.is_empty() && !entry.starts_with("builtin:"))
                .unwrap_or("index.html")
                .to_owned();
            Json(json!({
                "process": process,
                "entry": entry,
                "url": format!("/tile/{process}/{key}/{page}?slot={token}"),
            }))
            .into_response()
        }
        Err(e) => failed(StatusCode::NOT_FOUND, e),
    }
}

/// `POST /api/tile/PROCESS/close`: the person closed the tile; its run
/// completes.
pub async fn close(State(app): State<App>, Path(process): Path<String>) -> Response {
    app.views().remove(&process);
    match app.engine.close_tile(&Context::host(), &process) {
        Ok(()) => Json(json!({"closed": process})).into_response(),
        Err(e) => failed(StatusCode::NOT_FOUND, e),
    }
}

/// The session `given` names (an id, a unique prefix, a program's name
/// for it, or a sub-agent's process).
fn session_of(app: &App, given: &str) -> anyhow::Result<String> {
    if given.starts_with("p_") {
        return Ok(given.to_owned());
    }
    hc_host::sessions::resolve(app.engine.db(), given)
}

/// `GET /api/trace/SESSION`: the `hc trace` tree, as JSON.
pub async fn trace(State(app): State<App>, Path(session): Path<String>) -> Response {
    let tree = session_of(&app, &session).and_then(|s| hc_host::tree::json_of(app.engine.db(), &s));
    match tree {
        Ok(tree) => Json(tree).into_response(),
        Err(e) => failed(StatusCode::NOT_FOUND, e),
    }
}

/// The bodies of calls `ns` of `session`, rebuilt exactly.
async fn bodies(app: &App, session: &str, ns: &[usize]) -> anyhow::Result<Vec<Vec<u8>>> {
    let session = session_of(app, session)?;
    let (client, _events) = app.engine.host_client();
    let mut out = Vec::new();
    for n in ns {
        out.push(
            agent::request_body(&client, &session, *n)
                .await
                .map_err(anyhow::Error::msg)?,
        );
    }
    Ok(out)
}

/// `GET /api/request/SESSION/N`: the exact body of call N, as it was sent.
pub async fn request(
    State(app): State<App>,
    Path((session, n)): Path<(String, usize)>,
) -> Response {
    match bodies(&app, &session, &[n]).await {
        Ok(mut body) => Response::builder()
            .header(header::CONTENT_TYPE, "application/json")
            .body(Body::from(body.remove(0)))
            .unwrap_or_else(|e| failed(StatusCode::INTERNAL_SERVER_ERROR, e)),
        Err(e) => failed(StatusCode::NOT_FOUND, e),
    }
}

/// `GET /api/diff/SESSION/N`: call N's request against call N−1's, a
/// unified diff of their JSON.
pub async fn diff(State(app): State<App>, Path((session, n)): Path<(String, usize)>) -> Response {
    if n < 2 {
        return failed(
            StatusCode::BAD_REQUEST,
            "a diff compares call N with N-1: N is 2 or more",
        );
    }
    let diffed = bodies(&app, &session, &[n - 1, n])
        .await
        .and_then(|b| hc_host::describe::diff_text(&b[0], &b[1], n));
    match diffed {
        Ok(text) => ([(header::CONTENT_TYPE, "text/plain; charset=utf-8")], text).into_response(),
        Err(e) => failed(StatusCode::NOT_FOUND, e),
    }
}

/// What the page sends to rewind a session to before one of its prompts.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RewindAsked {
    /// The session.
    session: String,
    /// The prompt (its chunk id) to go back to before.
    prompt: String,
    /// `both` (the default), `code` or `conversation`.
    #[serde(default)]
    sides: Sides,
    /// Overwrite files changed since the session recorded them.
    #[serde(default)]
    force: bool,
}

/// What a rewind takes back.
#[derive(Clone, Copy, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
enum Sides {
    /// The files and the conversation.
    #[default]
    Both,
    /// The files only.
    Code,
    /// The conversation only.
    Conversation,
}

/// `POST /api/rewind`: the project's files back as they were before the
/// prompt, and the conversation forked there (`hc rewind --prompt K`).
/// Answers `{text, session}` (the fork, when the conversation went back);
/// `409` with `changed` when files changed since the record (nothing
/// done: ask again with `force`).
pub async fn rewind(State(app): State<App>, Json(asked): Json<RewindAsked>) -> Response {
    match rewind_to(&app, &asked).await {
        Ok(Ok(done)) => Json(done).into_response(),
        Ok(Err(changed)) => (
            StatusCode::CONFLICT,
            Json(json!({
                "error": format!(
                    "changed since the session recorded them (a rewind never overwrites that \
                     unless told to): {}", changed.join(", ")),
                "changed": changed,
            })),
        )
            .into_response(),
        Err(e) => failed(StatusCode::BAD_REQUEST, e),
    }
}

async fn rewind_to(app: &App, asked: &RewindAsked) -> anyhow::Result<Result<Value, Vec<String>>> {
    use hc_host::rewind::{PutBack, Record, To};
    let engine = &app.engine;
    let (code, conversation) = (
        asked.sides != Sides::Conversation,
        asked.sides != Sides::Code,
    );
    let k = hc_host::rewind::prompt_number(engine, &asked.session, |c, _| c.id == asked.prompt)?
        .ok_or_else(|| {
            anyhow::anyhow!("`{}` is not a prompt of {}", asked.prompt, asked.session)
        })?;
    let record = Record::read(engine, &asked.session)?;
    let mut text = Vec::new();
    if code {
        let plan = record.plan(record.first_call(To::Prompt(k))?);
        match hc_host::rewind::put_back(engine, &asked.session, &plan, asked.force).await? {
            PutBack::ChangedSince(changed) => return Ok(Err(changed)),
            PutBack::Done(applied) => text.push(applied.text),
            PutBack::Nothing => {}
        }
        for (path, why) in &plan.unrestorable {
            text.push(format!("cannot put back {path}: {why}"));
        }
    }
    let mut session = Value::Null;
    if conversation {
        let forked =
            hc_host::fork::fork(engine, &asked.session, hc_host::fork::Cut::BeforePrompt(k))?;
        text.push(format!(
            "the conversation goes on from before that prompt ({forked})"
        ));
        session = json!(forked);
    }
    Ok(Ok(json!({"text": text.join("; "), "session": session})))
}
