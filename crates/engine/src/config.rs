//! Who asks ([`Context`]: a host, or a process) and how the engine runs
//! programs ([`EngineConfig`]).

use std::path::PathBuf;

/// How long a lease holds without renewal, by default.
pub const LEASE_MS: u64 = 10_000;

/// A process id (`p_…`).
pub type ProcessId = String;

/// A subscription id (`sub_…`).
pub type SubscriptionId = String;

/// Who is asking: a host (`None`, full reach) or a running process.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Context {
    /// The caller's process; `None` for the host.
    pub process_id: Option<ProcessId>,
    /// The person a host acts for when it is not its own (a page user,
    /// by their token): what it commits records them beside the host's
    /// person (decision 19).
    pub on_behalf: Option<String>,
}

impl Context {
    /// The host.
    pub fn host() -> Context {
        Context::default()
    }

    /// The host, acting for `person` (a page user it vouches for).
    pub fn host_for(person: impl Into<String>) -> Context {
        Context {
            process_id: None,
            on_behalf: Some(person.into()),
        }
    }

    /// A process.
    pub fn process(id: impl Into<String>) -> Context {
        Context {
            process_id: Some(id.into()),
            on_behalf: None,
        }
    }
}

/// How the engine runs programs.
#[derive(Clone, Debug)]
pub struct EngineConfig {
    /// The project directory: programs run there, relative executables
    /// resolve against it, and it is `HC_PROJECT_ROOT`.
    pub project_root: PathBuf,
    /// The executable `builtin:NAME` programs run as (`EXE program NAME`).
    pub builtin_exe: PathBuf,
    /// A run's timeout when neither the run nor the program gives one.
    pub default_timeout_ms: u64,
    /// How `vm` programs are contained.
    pub containment: contain::Containment,
    /// What configuration grants programs beyond their declarations, by
    /// program name (`[programs.NAME]`); checked at open.
    pub grants: std::collections::BTreeMap<String, contain::grant::Grant>,
    /// `None` (the default): ask the kernel whether it enforces Landlock.
    /// `Some`: assume so — to exercise and diagnose the refusal path.
    pub assume_landlock: Option<bool>,
    /// Variables the host puts in a program's environment, by program
    /// chunk id (an MCP server's resolved configuration, its secrets):
    /// never written to the substrate. By id, not name: a name is not
    /// unique.
    pub env_values: std::collections::BTreeMap<String, Vec<(String, String)>>,
    /// Where a service's stderr is appended, as `NAME.log` (`/` in its
    /// program's name made `-`); none: kept only as the process's tail.
    pub log_dir: Option<PathBuf>,
    /// The zygote's executable and arguments when they are not the
    /// trampoline's: `hc __contain`, which carries the built-ins and forks
    /// them contained instead of exec'ing `hc program NAME` (the small
    /// `hc-contain` stays the namespace holder and the trampoline of a run
    /// the zygote cannot take). `None`: the trampoline's.
    pub zygote: Option<(PathBuf, Vec<String>)>,
    /// How long a claim on a queued run holds without renewal (renewed
    /// five times as often): past it, the run is lost.
    pub lease_ms: u64,
    /// Where this machine keeps what recording runs' file effects needs
    /// (the index of the tree, the contents it saw): none, no file
    /// effects are recorded.
    pub effects_dir: Option<PathBuf>,
    /// How much of them is kept.
    pub effects_limits: effects::Limits,
    /// Directories beside the project that a program writing the
    /// project may also write (`--add-dir`, `/add-dir`): shared, so a
    /// host adds one while the engine runs.
    pub add_dirs: AddDirs,
    /// Switches that turn an optimisation off, to measure against (the
    /// `bench` feature only: never in a release binary).
    #[cfg(feature = "bench")]
    pub levers: Levers,
    /// Traces: each process started with `TRACEPARENT` naming its own
    /// span (none: off).
    pub trace: Option<Tracing>,
    /// Whose programs are taken at their word besides the person's own
    /// (decision 19; see [`crate::Principal`]).
    pub principal: crate::Principal,
}

/// How the engine passes trace context to the programs it starts.
#[derive(Clone, Debug, Default)]
pub struct Tracing {
    /// The trace the host was started in (its `TRACEPARENT`): a run with
    /// no parent process continues it, and records it on its process.
    pub outer: Option<protocol::trace::TraceParent>,
}

/// The project's other directories (`--add-dir`): absolute, existing,
/// free of links; each written by every program that may write the
/// project (`.`), inside the same containment.
#[derive(Clone, Debug, Default)]
pub struct AddDirs(std::sync::Arc<std::sync::RwLock<Vec<PathBuf>>>);

impl AddDirs {
    /// Adds `dir` (once).
    pub fn add(&self, dir: PathBuf) {
        let mut dirs = self.0.write().unwrap_or_else(|e| e.into_inner());
        if !dirs.contains(&dir) {
            dirs.push(dir);
        }
    }

    /// The directories, as added.
    pub fn list(&self) -> Vec<PathBuf> {
        self.0.read().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

/// Measurement levers, each off by default (the `bench` feature).
#[cfg(feature = "bench")]
#[derive(Clone, Debug, Default)]
pub struct Levers {
    /// The order before a run's start was one commit: commit the process
    /// `pending`, spawn, commit `running` (the paired benchmark
    /// `tools/echo_split_start`).
    pub split_start: bool,
    /// No stems: each run's trampoline moves itself into its control
    /// groups (the paired benchmark `contain/after_a_pause_paired`).
    pub no_stems: bool,
}

impl EngineConfig {
    /// Whether programs can run contained here: containment is on and the
    /// kernel enforces Landlock (or is assumed to).
    pub fn can_contain(&self) -> bool {
        matches!(self.containment, contain::Containment::On { .. })
            && self
                .assume_landlock
                .unwrap_or_else(contain::landlock_available)
    }

    /// Runs in `project_root`, built-ins through the current executable.
    pub fn new(project_root: impl Into<PathBuf>) -> EngineConfig {
        let exe = std::env::current_exe().unwrap_or_else(|_| PathBuf::from("hc"));
        EngineConfig {
            project_root: project_root.into(),
            builtin_exe: exe.clone(),
            default_timeout_ms: protocol::program::TOOL_TIMEOUT_MS,
            grants: std::collections::BTreeMap::new(),
            containment: contain::Containment::On {
                exe,
                args: vec!["__contain".into()],
            },
            assume_landlock: None,
            env_values: std::collections::BTreeMap::new(),
            log_dir: None,
            zygote: None,
            lease_ms: LEASE_MS,
            effects_dir: None,
            effects_limits: effects::Limits::default(),
            add_dirs: AddDirs::default(),
            #[cfg(feature = "bench")]
            levers: Levers::default(),
            trace: None,
            principal: crate::Principal::default(),
        }
    }

    /// Whether a run's start is split in two commits (a lever).
    pub(crate) fn split_start(&self) -> bool {
        #[cfg(feature = "bench")]
        return self.levers.split_start;
        #[cfg(not(feature = "bench"))]
        false
    }

    /// Whether runs' control groups get stems (all but a lever's).
    pub(crate) fn stems(&self) -> bool {
        #[cfg(feature = "bench")]
        return !self.levers.no_stems;
        #[cfg(not(feature = "bench"))]
        true
    }
}
