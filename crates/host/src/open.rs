//! Opening a host: the one start-up sequence every front end goes through
//! — the project found (or made), its files read and trust settled, the
//! engine's configuration, the substrate opened, the MCP servers
//! registered, the engine started — in stages, so that each front end
//! does its own steps between them in the order it always has (which
//! message comes first, which error wins):
//!
//! ```
//! use hc_host::open::{Find, Staged};
//! use hc_host::trust::Ask;
//!
//! # fn main() -> anyhow::Result<()> {
//! # let dir = tempfile::tempdir()?;
//! // (`Staged::here` starts from the working directory)
//! let staged = Staged::at(dir.path(), Find::OrInit, Ask::Never)?; // before any thread: `.env` applies
//! let prepared = staged.prepare(true)?; // "containment is off" said here
//! let prepared = prepared.register(&Default::default(), false)?;
//! hc_host::open::runtime()?.block_on(async {
//!     let host = prepared.open()?;
//!     // … a run, a page, a check: the project's substrate is open …
//!     assert!(host.engine.db().read(|s| s.exists("engine/program"))?);
//!     host.close().await;
//!     anyhow::Ok(())
//! })
//! # }
//! ```

use crate::config::Files;
use crate::project::{self, Project};
use crate::settings::Flags;
use crate::trust::Ask;
use anyhow::{Context as _, Result};
use engine::{Engine, EngineConfig};
use std::sync::Arc;
use substrate::Substrate;

/// Where the project comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Find {
    /// One that exists, found upward from here.
    Existing,
    /// Found, else made (at the git repository's root).
    OrInit,
}

/// The project and its configuration files, trust settled.
pub struct Staged {
    /// The project.
    pub project: Project,
    /// Its configuration files, as trust leaves them.
    pub files: Files,
}

impl Staged {
    /// The project here (found, or made as `find` says), its files read
    /// and trust settled as `ask` says. Before any thread starts: a
    /// trusted `.env` is applied to the environment.
    pub fn here(find: Find, ask: Ask<'_>) -> Result<Staged> {
        let here = std::env::current_dir().context("cannot read the working directory")?;
        Staged::at(&here, find, ask)
    }

    /// [`Staged::here`], from `dir` instead of the working directory.
    pub fn at(dir: &std::path::Path, find: Find, ask: Ask<'_>) -> Result<Staged> {
        let project = match find {
            Find::Existing => Project::find(dir)?,
            Find::OrInit => Project::find_or_init(dir, &ask)?,
        };
        let files = project.config(ask)?;
        Ok(Staged { project, files })
    }

    /// The engine's configuration (containment off when the person said
    /// so, by `no_contain` or configuration), and the substrate opened.
    pub fn prepare(self, no_contain: bool) -> Result<Prepared> {
        let mut config = engine_config(&self.project, &self.files, no_contain)?;
        // (what cannot be read is said, and sends nothing: a run is not
        // stopped by a variable set for another program)
        let telemetry = self.files.telemetry_settings().unwrap_or_else(|e| {
            eprintln!("hc: telemetry is off: {e:#}");
            None
        });
        config.trace = crate::telemetry::tracing(telemetry.as_ref());
        let (db, _) = self.project.open()?;
        Ok(Prepared {
            project: self.project,
            files: self.files,
            db,
            config,
            telemetry,
        })
    }
}

/// A project ready for its engine.
pub struct Prepared {
    /// The project.
    pub project: Project,
    /// Its configuration files.
    pub files: Files,
    /// Its substrate, open.
    pub db: Arc<Substrate>,
    /// The engine's configuration.
    pub config: EngineConfig,
    /// Where telemetry goes (none: off).
    pub telemetry: Option<hc_telemetry::Settings>,
}

impl Prepared {
    /// The MCP servers `flags` and the files configure, registered (what
    /// a substrate made elsewhere asked, said and ignored); `interactive`:
    /// whether someone answers a server's questions.
    pub fn register(mut self, flags: &Flags, interactive: bool) -> Result<Prepared> {
        self.config = with_servers(self.config, &self.db, &self.files, flags, interactive)?;
        Ok(self)
    }

    /// The engine started (inside a runtime).
    pub fn open(self) -> Result<Host> {
        if let Some(settings) = &self.telemetry
            && let Err(e) = crate::telemetry::start(settings)
        {
            eprintln!("hc: telemetry is off: {e:#}");
        }
        let engine = Engine::open_with(self.db, self.config)?;
        crate::relay::start(Arc::clone(engine.db()));
        Ok(Host {
            project: self.project,
            files: self.files,
            engine,
        })
    }
}

/// An open host: the project, its files and its engine.
pub struct Host {
    /// The project.
    pub project: Project,
    /// Its configuration files.
    pub files: Files,
    /// Its engine.
    pub engine: Engine,
}

impl Host {
    /// Ends the host's engine (see [`close`]), and sends what telemetry
    /// has queued.
    pub async fn close(&self) {
        close(&self.engine).await;
        crate::telemetry::finish();
    }
}

/// Ends an engine: every process cancelled and awaited, then the
/// substrate's log checkpointed (a short-lived `hc` would otherwise leave
/// it to grow across runs).
pub async fn close(engine: &Engine) {
    engine.shutdown().await;
    if let Err(e) = engine.db().checkpoint() {
        tracing::debug!("checkpoint at exit: {e}");
    }
}

/// The runtime a host's engine runs on.
pub fn runtime() -> Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")
}

/// Contained programs go through the `hc-contain` built and installed with
/// `hc` when it is there and from the same source (`--build-id`; `cargo run
/// -p hc` rebuilds only `hc`, and could leave an older one beside it): a
/// small binary that skips Rust's runtime set-up, started as the engine's
/// zygote and namespace holder (and per run if the zygote is gone).
fn containment_beside_hc(default: contain::Containment) -> contain::Containment {
    let contain::Containment::On { .. } = default else {
        return default;
    };
    let Some(sibling) = std::env::current_exe()
        .map(|exe| exe.with_file_name("hc-contain"))
        .ok()
        .filter(|p| p.is_file())
    else {
        return default;
    };
    let same_build = std::process::Command::new(&sibling)
        .arg(contain::BUILD_ID_FLAG)
        .stderr(std::process::Stdio::null())
        .output()
        .ok()
        .and_then(|out| u64::from_str_radix(String::from_utf8_lossy(&out.stdout).trim(), 16).ok())
        == Some(contain::BUILD_ID);
    if !same_build {
        tracing::debug!(
            ?sibling,
            "not from this build; containing through `hc __contain`"
        );
        return default;
    }
    contain::Containment::On {
        exe: sibling,
        args: Vec::new(),
    }
}

/// The engine's configuration for `project`: containment (off when the
/// person said so, by flag or configuration) and what configuration grants
/// programs.
pub fn engine_config(project: &Project, files: &Files, no_contain: bool) -> Result<EngineConfig> {
    let mut config = EngineConfig::new(&project.root);
    config.containment = containment_beside_hc(config.containment);
    // The zygote is `hc` itself, which forks the built-ins it carries
    // (built with the `bench` feature, `HC_EXEC_BUILTINS` — set only by the
    // paired benchmark — exec's them as before, to measure against).
    #[cfg(feature = "bench")]
    let forked = std::env::var_os("HC_EXEC_BUILTINS").is_none();
    #[cfg(not(feature = "bench"))]
    let forked = true;
    if forked {
        config.zygote = Some((config.builtin_exe.clone(), vec!["__contain".into()]));
    }
    if no_contain || files.containment_off()? {
        eprintln!("hc: containment is off: programs run with all of your privileges");
        config.containment = contain::Containment::Off;
    }
    config.grants = files.grants()?;
    config.principal = crate::principal::principal(files, &project.root)?;
    config.lease_ms = files.lease_ms()?;
    config.log_dir = Some(project.root.join(project::DIR).join("logs"));
    config.effects_dir = Some(project.root.join(project::DIR).join("effects"));
    // (a lever, `bench` only: runs' file effects not recorded, to measure
    // what recording them costs)
    #[cfg(feature = "bench")]
    if std::env::var_os("HC_NO_FILE_EFFECTS").is_some() {
        config.effects_dir = None;
    }
    Ok(config)
}

/// Registers the MCP servers `files` and `flags` configure in `db`, and
/// gives `config` what their services' environments get (`interactive`:
/// whether someone answers a server's questions).
fn with_servers(
    mut config: EngineConfig,
    db: &Substrate,
    files: &Files,
    flags: &Flags,
    interactive: bool,
) -> Result<EngineConfig> {
    let servers = crate::mcp_config::servers(files, &flags.mcp_config, flags.strict_mcp_config)?;
    let root = config.project_root.clone();
    let registered = crate::mcp_config::register(db, &root, &servers, interactive)?;
    config.env_values = registered.values;
    // (the servers the person's own configuration declares are theirs,
    // whoever on a shared store committed the same first)
    config.principal.own_programs.extend(registered.declared);
    let ignored = crate::origin::recorded(db)?
        .map(|o| crate::origin::ignored(&o))
        .unwrap_or_default();
    if !ignored.is_empty() {
        eprintln!(
            "hc: this project's substrate was made elsewhere (shipped with it, not made by hc \
             here), and is not trusted: {}. To trust it: hc trust",
            crate::text::shown(&ignored.join("; "))
        );
    }
    Ok(config)
}
