//! Runs in the background: `hc run --bg` queues a run — its session, its
//! prompt and resolved configuration, its own git worktree asked for — and
//! starts a worker when none is running; `hc worker` takes the queue.
//! Neither opens an engine to queue: the substrate is opened, one run
//! planned and committed `pending`, and `hc` is gone.

use crate::exit::exit;
use crate::print::{OutputFormat, Printed};
use crate::sessions::Choice;
use crate::style::shown;
use crate::term::request::RunRequest;
use anyhow::{Context as _, Result};
use hc_host::open::{Find, Staged};
use hc_host::trust::Ask;
use hc_host::worker;
use serde_json::json;
use std::path::{Path, PathBuf};
use std::sync::Arc;

pub use super::request::Background;

/// Queues `request`'s run of `prompt` (configured as `config`) for a
/// worker; prints its session's id (and, as JSON, where it works).
pub fn queue(
    staged: Staged,
    request: &RunRequest,
    bg: &Background,
    prompt: &str,
    config: agent::AgentConfig,
    printed: Printed,
) -> Result<u8> {
    refuse_what_does_not_carry(request)?;
    if printed.partial {
        return Err(exit(
            2,
            "--bg cannot be given --include-partial-messages: nothing streams from a run in the \
             background (hc attach follows it)",
        ));
    }
    let root = staged.project.root.clone();
    let retry = match bg.retry.as_deref() {
        Some("turn") => Some("turn".to_owned()),
        Some(_) => None,
        None => staged.files.retry()?,
    };
    let prepared = staged.prepare(false)?;
    let db = &prepared.db;
    let images = hc_host::turn::load_images(&request.images)?;
    hc_host::turn::check_prompt(prompt, &images)?;
    let culture = db.scope(&["culture"], &Default::default()).ok();
    let exists = |id: &str| db.read(|s| s.exists(id)).unwrap_or(false);
    let pins = agent::launch::pins_of(culture.as_ref(), &request.context, exists)
        .map_err(|e| exit(2, e))?;
    let asked = worker::Asked {
        prompt,
        config: &config,
        images: &images,
        pins: &pins,
        worktree: bg.worktree.then_some(bg.base.as_deref()),
        name: request.sdk.session_id.as_deref(),
        labels: &bg.labels,
        retry: retry.as_deref(),
        by: None,
    };
    let worker::Queued {
        session,
        process,
        worktree,
    } = worker::enqueue(db, &prepared.config, &root, asked)?;
    let log = ensure_worker(&root)?;
    let branch = worktree.as_ref().map(|w| w.branch.clone());
    if printed.format == OutputFormat::Text {
        println!("{session}");
        let place = match &worktree {
            Some(w) => format!("in {} on {}", w.path, w.branch),
            None => "in this directory".to_owned(),
        };
        let worker = match &log {
            Some(log) => format!("; a worker started (its log: {})", log.display()),
            None => String::new(),
        };
        eprintln!(
            "hc: {session} queued, to work {place}{worker}. `hc attach {session}` follows it, \
             `hc agents` lists them all."
        );
    } else {
        let line = json!({
            "type": "queued",
            "session_id": session,
            "process": process,
            "branch": branch,
            "worktree": worktree.map(|w| w.path),
            "worker_log": log,
        });
        println!("{line}");
    }
    Ok(0)
}

/// Flags a worker could not honour for a queued run: refused, never
/// accepted and ignored.
fn refuse_what_does_not_carry(request: &RunRequest) -> Result<()> {
    let refuse =
        |what: &str, instead: &str| Err(exit(2, format!("--bg cannot be given {what}: {instead}")));
    if request.session != Choice::New {
        return refuse(
            "--continue or --resume",
            "a background run starts a session of its own (hc attach follows one)",
        );
    }
    if request.compact {
        return refuse("--compact", "it compacts a session it goes on with");
    }
    if request.no_contain {
        return refuse(
            "--no-contain",
            "its worker contains it as the project's configuration says (containment = \"off\" \
             there turns it off), or run it in the foreground",
        );
    }
    if !request.flags.mcp_config.is_empty() || request.flags.strict_mcp_config {
        return refuse(
            "--mcp-config",
            "its worker registers the MCP servers of the project's configuration (.mcp.json, \
             `hc mcp add`)",
        );
    }
    Ok(())
}

/// Starts `hc worker --until-idle` for the project at `root`, detached,
/// its output in `.hermitcrab/logs/`, unless a worker is running there;
/// answers its log.
fn ensure_worker(root: &Path) -> Result<Option<PathBuf>> {
    if worker::running(root) {
        return Ok(None);
    }
    let logs = root.join(hc_host::project::DIR).join("logs");
    std::fs::create_dir_all(&logs).with_context(|| format!("cannot make {}", logs.display()))?;
    let stamp = humantime::format_rfc3339_millis(std::time::SystemTime::now())
        .to_string()
        .replace([':', '.'], "-");
    let log = logs.join(format!("worker-{stamp}.log"));
    let file =
        std::fs::File::create(&log).with_context(|| format!("cannot make {}", log.display()))?;
    let exe = std::env::current_exe().context("cannot find hc's own executable")?;
    let mut command = std::process::Command::new(exe);
    command
        .args(["worker", "--until-idle"])
        .current_dir(root)
        .stdin(std::process::Stdio::null())
        .stdout(file.try_clone()?)
        .stderr(file);
    if let Some(url) = hc_host::project::store_given() {
        command.env("HC_STORE", url);
    }
    if let Some(name) = hc_host::project::project_name() {
        command.env("HC_PROJECT", name);
    }
    // its own process group: the terminal's Ctrl-C is not its
    std::os::unix::process::CommandExt::process_group(&mut command, 0);
    command
        .spawn()
        .context("cannot start a worker (hc worker)")?;
    Ok(Some(log))
}

/// `hc worker`: takes the project's queued runs until Ctrl-C (or, with
/// `until_idle`, until none is queued or running).
///
/// It serves its own person's runs and those of the people `serves`
/// names, another's within its person's own settings.
pub fn work(
    until_idle: bool,
    max: Option<u32>,
    labels: Vec<String>,
    serves: Vec<String>,
) -> Result<()> {
    let staged = Staged::here(Find::Existing, Ask::Never)?;
    // the person's own settings: what another person's run runs within
    let (_, own) = hc_host::settings::resolve(&staged.files, &Default::default(), true)
        .map_err(|e| crate::exit::exit(2, format!("{e:#}")))?;
    let max = match max {
        Some(n) => n as usize,
        None => staged.files.max_background()?,
    };
    let prepared = staged.prepare(false)?.register(&Default::default(), true)?;
    let root = prepared.project.root.clone();
    let db = Arc::clone(&prepared.db);
    let template = prepared.config.clone();
    let carries = match labels.is_empty() {
        true => String::new(),
        false => format!(", asking for {}", labels.join(", ")),
    };
    eprintln!(
        "hc worker: taking the queued runs of {} (at most {max} at once{carries}) on {}",
        shown(&root.display().to_string()),
        shown(&engine::host_name())
    );
    let others = match serves.is_empty() {
        true => String::new(),
        false => format!(", and {}'s", serves.join(", ")),
    };
    eprintln!("hc worker: serving {}'s runs{others}", shown(&db.person()));
    let opts = worker::Opts {
        until_idle,
        max,
        labels,
        serving: hc_host::serving::Serving {
            people: serves,
            own: Some(own),
        },
    };
    let say = |line: &str| eprintln!("hc worker: {}", shown(line));
    let worked = crate::runtime()?.block_on(async {
        let stop = async {
            let mut term =
                tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                Some(()) = async { match &mut term { Some(t) => t.recv().await, None => None } } => {}
            }
        };
        worker::work(&root, &db, &template, &opts, stop, &say).await
    })?;
    eprintln!(
        "hc worker: done: {} run(s) taken, {} not started",
        worked.claimed, worked.refused
    );
    Ok(())
}
