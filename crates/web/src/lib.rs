//! `hc serve --http`: the browser host. One engine; one page that shows
//! everything the substrate holds, live, and drives agents from it; the
//! protocol over WebSocket (`/ws`: the page's socket is a host, a tile's is
//! bound to its process by a one-time slot token); webview programs as
//! sandboxed tiles (`/tile/…`). Every request needs the token printed at
//! start (once in the address, then an HttpOnly SameSite=Strict cookie);
//! a WebSocket upgrade, and any request that changes something, is
//! checked for the cookie and its `Origin`. The
//! page and its views are compiled in (`assets.rs`): it works offline.
//! Beside the socket, HTTP for what the protocol does not say (`api.rs`:
//! runs, tiles, the trace; `sessions.rs`: the sidebar's rows).

mod api;
mod assets;
mod auth;
pub mod bridge;
mod roles;
mod sessions;
mod socket;

use anyhow::{Context as _, Result};
use engine::Engine;
use hc_host::confirm::Confirm;
use hc_host::exit::exit;
use hc_host::open::{Find, Staged};
use hc_host::settings::{self, Flags};
use hc_host::trust::Ask;
use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

/// How `hc serve --http` serves (its flags).
///
/// ```no_run
/// // serves the project found from the working directory until Ctrl-C;
/// // a command file's `!cmd` line from the page is put to no one
/// let options = hc_web::Options {
///     port: 8420,
///     host: "127.0.0.1".into(),
///     open: false,
///     token_files: Vec::new(),
///     no_contain: false,
///     agent: None,
///     allow_host: Vec::new(),
/// };
/// hc_web::serve(options, &hc_host::confirm::NoOne)?;
/// # anyhow::Ok(())
/// ```
#[derive(Debug, Clone)]
pub struct Options {
    /// The port.
    pub port: u16,
    /// The address to listen on (anything but loopback still needs the
    /// token).
    pub host: String,
    /// Open the address in the browser.
    pub open: bool,
    /// Keep the token in this file (made, 0600, when missing) instead of
    /// a fresh one each start; several: one per person, each named by its
    /// file's name (`alice.token`: alice).
    pub token_files: Vec<PathBuf>,
    /// Run programs uncontained.
    pub no_contain: bool,
    /// The agent preset runs from the page use unless the page names one.
    pub agent: Option<String>,
    /// Names this server is reached by (besides its IP addresses,
    /// `localhost` and this machine's name).
    pub allow_host: Vec<String>,
}

/// What every request handler shares.
#[derive(Clone)]
pub(crate) struct App(Arc<Inner>);

pub(crate) struct Inner {
    engine: Engine,
    /// Who a command file's `` !`cmd` `` line is put to.
    confirm: &'static dyn Confirm,
    /// Who may open the page, each by their own token.
    people: Vec<auth::Person>,
    /// The origins the page is served from (`http://HOST:PORT`).
    origins: Vec<String>,
    /// The agent's configuration, resolved at start (as `hc run` would).
    config: agent::AgentConfig,
    /// The same with the hermitcrab preset (`"agent": "hermitcrab"`).
    hermitcrab: agent::AgentConfig,
    /// The preset a run uses when the page names none.
    agent: Option<String>,
    /// `retry` for runs the page starts in the background.
    retry: Option<String>,
    /// Each mounted tile's view key (for its page's files): by process.
    views: Mutex<HashMap<String, String>>,
    /// Names besides IP addresses a request's `Host` may give.
    hosts: Vec<String>,
    /// Whether it listens on loopback (`localhost` names it then).
    loopback: bool,
    /// The tokens whose address was opened (each opens once).
    opened: Mutex<std::collections::HashSet<String>>,
}

impl std::ops::Deref for App {
    type Target = Inner;
    fn deref(&self) -> &Inner {
        &self.0
    }
}

impl Inner {
    /// Opens `token`'s address: whether it was not opened before.
    fn open_once(&self, token: &str) -> bool {
        let mut opened = self.opened.lock().unwrap_or_else(PoisonError::into_inner);
        opened.insert(token.to_owned())
    }

    fn views(&self) -> std::sync::MutexGuard<'_, HashMap<String, String>> {
        self.views.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Serves the page until Ctrl-C; a command file's `` !`cmd` `` line in
/// a prompt from the page is put to `confirm`.
pub fn serve(flags: Options, confirm: &'static dyn Confirm) -> Result<()> {
    let staged = Staged::here(Find::OrInit, Ask::Never)?;
    let (_, mut config) = settings::resolve(&staged.files, &Flags::default(), true)
        .map_err(|e| exit(2, format!("{e:#}")))?;
    // the page answers permission questions and the agent's own
    config.interactive = true;
    let preset = Flags {
        agent: Some("hermitcrab".into()),
        ..Flags::default()
    };
    let (_, mut hermitcrab) =
        settings::resolve(&staged.files, &preset, true).map_err(|e| exit(2, format!("{e:#}")))?;
    hermitcrab.interactive = true;
    if let Some(name) = flags.agent.as_deref().filter(|n| *n != "hermitcrab") {
        return Err(exit(
            2,
            format!("--agent {name}: the one preset is `hermitcrab`"),
        ));
    }
    let max = staged.files.max_background()?;
    let retry = staged.files.retry()?;
    let prepared = staged
        .prepare(flags.no_contain)?
        .register(&Flags::default(), true)?;
    // the server is a worker too: it takes the project's queued runs
    let template = prepared.config.clone();
    let (root, db) = (prepared.project.root.clone(), Arc::clone(&prepared.db));
    let people = auth::people(&flags.token_files, hc_host::worker::person())?;
    if !people.iter().any(|p| p.role == auth::Role::Owner) {
        eprintln!(
            "hc: no token is the owner's (none names {}, the server's person): programs run \
             directly and program declarations are refused from the page; to give one, \
             --token-file FILE:owner",
            hc_host::worker::person()
        );
    }
    // its worker takes the runs its page users start, within its person's
    // settings
    let serving = hc_host::serving::Serving {
        people: people.iter().map(|p| p.name.clone()).collect(),
        own: Some(config.clone()),
    };
    let host: std::net::IpAddr = flags.host.parse().map_err(|_| {
        exit(
            2,
            format!("--host {}: give an IP address, e.g. 127.0.0.1", flags.host),
        )
    })?;
    hc_host::open::runtime()?.block_on(async move {
        let opened = prepared.open()?;
        let engine = opened.engine.clone();
        let listener = tokio::net::TcpListener::bind(SocketAddr::new(host, flags.port))
            .await
            .with_context(|| format!("cannot listen on {}:{}", flags.host, flags.port))?;
        let bound = listener.local_addr()?;
        let mut origins = vec![format!("http://{bound}")];
        if host.is_loopback() {
            origins.push(format!("http://localhost:{}", bound.port()));
        }
        let address_of = |p: &auth::Person| format!("{}/?token={}", origins[0], p.token);
        let address = address_of(&people[0]);
        let others: Vec<String> = (people.iter().skip(1))
            .map(|p| format!("hc: {}'s address: {}", p.name, address_of(p)))
            .collect();
        let app = App(Arc::new(Inner {
            engine: engine.clone(),
            confirm,
            people,
            origins,
            config,
            hermitcrab,
            agent: flags.agent,
            retry,
            views: Mutex::default(),
            hosts: allowed_hosts(flags.allow_host),
            loopback: host.is_loopback(),
            opened: Mutex::default(),
        }));
        println!("hc: serving {} at {address}", opened.project.root.display());
        for line in others {
            println!("{line}");
        }
        if !host.is_loopback() {
            eprintln!(
                "hc: listening on {host}, not only this machine: anyone who can reach it still needs the token"
            );
        }
        if flags.open {
            let _ = std::process::Command::new("xdg-open").arg(&address).spawn();
        }
        let following = tokio::spawn(follow(engine.clone()));
        let opts = hc_host::worker::Opts {
            labels: Vec::new(),
            until_idle: false,
            max,
            serving: serving.clone(),
        };
        let working = tokio::spawn(async move {
            let say = |line: &str| eprintln!("hc serve: {}", hc_host::text::shown(line));
            let stop = std::future::pending::<()>();
            if let Err(e) = hc_host::worker::work(&root, &db, &template, &opts, stop, &say).await {
                eprintln!("hc serve: queued runs are not taken here: {e:#}");
            }
        });
        // every frame goes at once (no Nagle delay waiting for an ack)
        let listener = axum::serve::ListenerExt::tap_io(listener, |stream| {
            let _ = stream.set_nodelay(true);
        });
        let served = axum::serve(listener, router(app))
            .with_graceful_shutdown(async {
                let _ = tokio::signal::ctrl_c().await;
            })
            .await;
        following.abort();
        working.abort();
        opened.close().await;
        served.context("the server stopped")
    })
}

/// The names a request's `Host` may give: this machine's, and those the
/// person listed.
fn allowed_hosts(mut listed: Vec<String>) -> Vec<String> {
    if let Ok(name) = std::fs::read_to_string("/proc/sys/kernel/hostname") {
        listed.push(name.trim().to_owned());
    }
    listed.retain(|n| !n.is_empty());
    listed
}

/// What another engine commits on the project (a terminal's `hc run`),
/// broadcast to this one's subscribers as it lands.
async fn follow(engine: Engine) {
    let mut tick = tokio::time::interval(Duration::from_millis(50));
    loop {
        tick.tick().await;
        let db = Arc::clone(engine.db());
        let followed = tokio::task::spawn_blocking(move || db.follow()).await;
        if let Ok(Err(e)) = followed {
            tracing::debug!("following other engines' commits: {e}");
        }
    }
}

fn router(app: App) -> axum::Router {
    use axum::routing::{get, post};
    axum::Router::new()
        .route("/", get(assets::page))
        .route("/assets/{file}", get(assets::asset))
        .route("/ws", get(socket::upgrade))
        .route("/tile/{process}/{key}/{*path}", get(assets::tile_file))
        .route("/api/run", post(api::run))
        .route("/api/rewind", post(api::rewind))
        .route("/api/program-run", post(api::program_run))
        .route("/api/tile/{process}", post(api::mount))
        .route("/api/tile/{process}/close", post(api::close))
        .route("/api/sessions", get(sessions::list))
        .route("/api/trace/{session}", get(api::trace))
        .route("/api/request/{session}/{n}", get(api::request))
        .route("/api/diff/{session}/{n}", get(api::diff))
        .layer(axum::middleware::from_fn_with_state(
            app.clone(),
            auth::gate,
        ))
        .with_state(app)
}
