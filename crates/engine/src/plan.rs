//! What a `run` resolves before anything is committed: the program (by id
//! or name), its typed body, the run's boundaries, its capabilities
//! (declared, widened by configuration, narrowed by the run) and timeout,
//! and the file its executable names.

use crate::boundary::{EffectiveBoundary, Reach, View};
use crate::config::{Context, EngineConfig};
use crate::error::{EngineError, Result};
use contain::Containment;
use protocol::program::{ProgramBody, Runtime};
use protocol::{Boundary, Capabilities, ErrorCode, RunArgs};
use std::path::PathBuf;
use substrate::{ScopeOpts, Snapshot, TypeFilter};

/// What `run` resolved about the program.
pub(crate) struct Plan {
    pub program_id: String,
    pub program_name: String,
    pub executable: String,
    pub extra_args: Vec<String>,
    pub timeout_ms: u64,
    pub reach: Reach,
    /// Its capabilities for this run, whether or not it runs contained.
    pub capabilities: Capabilities,
    /// Whether it runs contained.
    pub contained: bool,
    /// It is a service (`runtime: "service"`): started once, kept up.
    pub service: bool,
    /// The service program that carries out its runs, when it is served.
    pub served_by: Option<String>,
    /// A webview program's page (`entry`): its run is a tile a host shows.
    pub webview: Option<String>,
    /// Where its file effects are looked for.
    pub writes: Writes,
    /// Its trace context (`TRACEPARENT`), when traces are on.
    pub trace: Option<protocol::trace::TraceParent>,
    /// The host's trace a run with no parent process continues (recorded
    /// on its process).
    pub outer_trace: Option<protocol::trace::TraceParent>,
}

/// Where a run may change the project's files.
#[derive(Clone, Debug, Default)]
pub(crate) enum Writes {
    /// Nowhere (no write capability).
    #[default]
    Nowhere,
    /// The paths its input names (a program's `writes`).
    Paths(Vec<String>),
    /// Anywhere under these (absolute) write roots: its own, or those of
    /// the service serving it.
    Roots(Vec<std::path::PathBuf>),
}

/// How long a tile may stay open when its program says nothing: a day.
const WEBVIEW_TIMEOUT_MS: u64 = 24 * 3600 * 1000;

/// How long a service may run: as long as its engine.
const SERVICE_TIMEOUT_MS: u64 = 100 * 365 * 24 * 3600 * 1000;

/// The engine's state a plan reads besides the substrate.
pub(crate) struct Planner<'a> {
    pub config: &'a EngineConfig,
    /// Whether this kernel enforces Landlock.
    pub landlock: bool,
    /// On a shared store, the person whose programs are the engine's own
    /// (its store's role); `None` on a file.
    pub me: Option<String>,
}

/// Why a program is run clamped: a stranger's substrate brought it, or
/// another person declared it.
enum Stranger {
    Shipped,
    Person(Option<String>),
}

impl Planner<'_> {
    /// Resolves `program` for a run by `ctx` (whose reach is `caller`) that
    /// will create process `id`.
    pub fn plan(
        &self,
        snap: &Snapshot<'_>,
        ctx: &Context,
        caller: &Reach,
        program: &str,
        args: &RunArgs,
        id: &str,
    ) -> Result<Plan> {
        let program_id = resolve_program(snap, program)?;
        if !caller.read.admits(&mut View::new(snap), &program_id)? {
            return Err(EngineError::boundary(format!(
                "cannot run `{program_id}`: the program is outside this process's read boundary"
            )));
        }
        let item = snap
            .chunk(&program_id)?
            .ok_or_else(|| EngineError::not_found(format!("no program `{program_id}`")))?;
        let name = item.name.clone().unwrap_or_else(|| program_id.clone());
        let body = ProgramBody::parse(&name, &item.body_value()).map_err(EngineError::invalid)?;
        let webview = match (body.runtime, &body.entry) {
            (Runtime::Webview, Some(entry)) if !entry.is_empty() => Some(entry.clone()),
            (Runtime::Webview, _) => {
                return Err(EngineError::invalid(format!(
                    "program `{name}` has runtime `webview` and no `entry`: give the HTML file \
                     its tile shows (relative to the project root)"
                )));
            }
            (_, _) if body.executable.trim().is_empty() => {
                return Err(EngineError::invalid(format!(
                    "program `{name}` has no `executable`: say what runs (`builtin:NAME`, a \
                     path, or a command on PATH)"
                )));
            }
            _ => None,
        };
        if let Some(session) = &args.session
            && ctx.process_id.is_none()
            && !snap.exists(session)?
        {
            return Err(EngineError::not_found(format!(
                "no session `{session}` to run on"
            )));
        }
        let shipped = snap
            .body(protocol::origin::ORIGIN)?
            .is_some_and(|b| protocol::origin::Origin::parse(&b).distrusts(&program_id));
        let stranger = match (&self.me, shipped) {
            (_, true) => Some(Stranger::Shipped),
            (None, false) => None,
            (Some(me), false) => {
                let found = self.config.principal.foreign_program(snap, me, &item)?;
                found.map(|f| Stranger::Person(f.by))
            }
        };
        let foreign = stranger.is_some();
        // a stranger's program reaches only its own tree in the substrate
        let own = match foreign {
            true => Boundary::Roots(Vec::new()),
            false => body.boundary.clone(),
        };
        let side = |run: &Option<Boundary>, caller: &EffectiveBoundary| {
            let mut levels = vec![own.clone(), run.clone().unwrap_or(Boundary::Open)];
            levels.extend(caller.inherited());
            EffectiveBoundary {
                own: Some(id.to_owned()),
                levels,
            }
        };
        let mut capabilities = self.capabilities(&name, &body, args)?;
        // a tile runs in the browser's sandbox: its boundaries are its containment
        let contained =
            webview.is_none() && matches!(self.config.containment, Containment::On { .. });
        if let Some(stranger) = &stranger {
            self.clamp_foreign(&name, &body, webview.is_some(), stranger, &mut capabilities)?;
        }
        if contained && !self.landlock {
            return Err(EngineError::internal(contain::NO_LANDLOCK));
        }
        let service = body.runtime == Runtime::Service;
        let served_by = match &body.served_by {
            Some(by) => Some(service_program(snap, &name, by)?),
            None => None,
        };
        let writes = match &served_by {
            Some(by) => self.service_writes(snap, by)?,
            None => self.writes(&body, &capabilities, args),
        };
        let default_timeout = if service {
            SERVICE_TIMEOUT_MS
        } else if webview.is_some() {
            WEBVIEW_TIMEOUT_MS
        } else {
            self.config.default_timeout_ms
        };
        Ok(Plan {
            trace: None,
            outer_trace: None,
            timeout_ms: args
                .timeout_ms
                .or(self.config.grants.get(&name).and_then(|g| g.timeout_ms))
                .or(body.timeout_ms)
                .unwrap_or(default_timeout),
            reach: Reach {
                read: side(&args.read_boundary, &caller.read),
                write: side(&args.write_boundary, &caller.write),
                programs: if service {
                    capabilities.programs.clone()
                } else {
                    Vec::new()
                },
                service: service.then(|| program_id.clone()),
            },
            service,
            served_by,
            webview,
            program_id,
            program_name: name,
            executable: body.executable,
            extra_args: body.args,
            capabilities,
            contained,
            writes,
        })
    }

    /// A program a stranger declared — a substrate made elsewhere, or another
    /// person on a shared store — not trusted yet ([`protocol::origin`],
    /// [`crate::Principal`]): never a service, never uncontained, and no
    /// more than a built-in tool gets — no network, no variable beyond the
    /// base ones, writes only inside the project, no programs to manage.
    fn clamp_foreign(
        &self,
        name: &str,
        body: &ProgramBody,
        webview: bool,
        stranger: &Stranger,
        caps: &mut Capabilities,
    ) -> Result<()> {
        let untrusted = |what: &str| {
            EngineError::boundary(match stranger {
                Stranger::Shipped => format!(
                    "cannot run `{name}`: it comes from a substrate made elsewhere (shipped with \
                     the project) and {what} until you trust the project (`hc trust`)"
                ),
                Stranger::Person(by) => format!(
                    "cannot run `{name}`: {} declared it, not you, and {what} unless you trust \
                     them for this project ([team] trust = [\"{}\"] in your configuration)",
                    by.as_deref()
                        .unwrap_or("someone before authors were recorded"),
                    by.as_deref().unwrap_or("NAME")
                ),
            })
        };
        if body.runtime == Runtime::Service {
            return Err(untrusted("its service does not start"));
        }
        if !webview && !matches!(self.config.containment, Containment::On { .. }) {
            return Err(untrusted("it runs only contained"));
        }
        // a root over the project (`/`, `~`) is cut down to the project
        let root = &self.config.project_root;
        let project = contain::policy::resolve(root, ".");
        let over = caps.filesystem.write.iter().any(|p| {
            let p = contain::policy::resolve(root, p);
            project.starts_with(&p) && p != project
        });
        caps.filesystem
            .write
            .retain(|p| contain::policy::resolve(root, p).starts_with(&project));
        if over && caps.filesystem.write.is_empty() {
            caps.filesystem.write.push(".".into());
        }
        caps.network = false;
        caps.env.clear();
        caps.programs.clear();
        Ok(())
    }

    /// The program's declared capabilities, widened by what configuration
    /// grants it, narrowed by the run.
    fn capabilities(&self, name: &str, body: &ProgramBody, args: &RunArgs) -> Result<Capabilities> {
        let mut granted = match self.config.grants.get(name) {
            Some(grant) => grant.apply(&body.capabilities),
            None => body.capabilities.clone(),
        };
        let root = &self.config.project_root;
        // a program that writes the project writes its added directories
        let project = contain::policy::resolve(root, ".");
        let writes_project = granted
            .filesystem
            .write
            .iter()
            .any(|p| contain::policy::resolve(root, p) == project);
        if writes_project {
            for dir in self.config.add_dirs.list() {
                let dir = dir.to_string_lossy().into_owned();
                if !granted.filesystem.write.contains(&dir) {
                    granted.filesystem.write.push(dir);
                }
            }
        }
        contain::policy::narrow(&granted, args.capabilities.as_ref(), root).map_err(|why| {
            EngineError::boundary(format!(
                "cannot run `{name}`: {why}; a run may narrow capabilities, never widen them"
            ))
        })
    }
}

impl Planner<'_> {
    /// Where a run of a program with `body` and `capabilities` writes.
    fn writes(&self, body: &ProgramBody, capabilities: &Capabilities, args: &RunArgs) -> Writes {
        let roots = &capabilities.filesystem.write;
        if roots.is_empty() {
            return Writes::Nowhere;
        }
        // (only a built-in is taken at its word: any other program that
        // named a field would hide what it writes elsewhere from a rewind)
        let builtin = body.executable.starts_with("builtin:");
        if let Some(pointer) = body.writes.as_ref().filter(|_| builtin) {
            let named = args
                .chunks
                .iter()
                .filter_map(|c| c.body.as_ref()?.pointer(pointer))
                .flat_map(|v| match v {
                    serde_json::Value::String(s) => vec![s.clone()],
                    serde_json::Value::Array(a) => a
                        .iter()
                        .filter_map(|s| s.as_str().map(str::to_owned))
                        .collect(),
                    _ => Vec::new(),
                });
            return Writes::Paths(named.collect());
        }
        let root = &self.config.project_root;
        Writes::Roots(
            roots
                .iter()
                .map(|p| contain::policy::resolve(root, p))
                .collect(),
        )
    }

    /// Where the service `by` writes, as its runs' effects are its.
    fn service_writes(&self, snap: &Snapshot<'_>, by: &str) -> Result<Writes> {
        let Some(item) = snap.chunk(by)? else {
            return Ok(Writes::Nowhere);
        };
        let name = item.name.clone().unwrap_or_else(|| by.to_owned());
        let body = ProgramBody::parse(&name, &item.body_value()).map_err(EngineError::invalid)?;
        let capabilities = self.capabilities(&name, &body, &RunArgs::default())?;
        Ok(self.writes(&body, &capabilities, &RunArgs::default()))
    }
}

/// The service program `by` that program `name` names in `served_by`.
fn service_program(snap: &Snapshot<'_>, name: &str, by: &str) -> Result<String> {
    let id = resolve_program(snap, by).map_err(|e| {
        EngineError::not_found(format!("program `{name}` is served by `{by}`: {e}"))
    })?;
    let body = snap
        .chunk(&id)?
        .map(|item| ProgramBody::parse(by, &item.body_value()))
        .transpose()
        .map_err(EngineError::invalid)?;
    match body {
        Some(body) if body.runtime == Runtime::Service => Ok(id),
        _ => Err(EngineError::invalid(format!(
            "program `{name}` is served by `{by}`, which is not a service program (runtime `service`)"
        ))),
    }
}

/// Resolves `program` (an id, else a unique name) among the programs.
pub(crate) fn resolve_program(snap: &Snapshot<'_>, program: &str) -> Result<String> {
    if snap.is_instance_of(program, "engine/program")? {
        return Ok(program.to_owned());
    }
    let all = snap.scope(
        &["engine/program".to_owned()],
        &ScopeOpts {
            kind: TypeFilter::Instance,
            include: substrate::Include {
                body: false,
                dimensions: false,
            },
            ..ScopeOpts::default()
        },
    )?;
    let named: Vec<&str> = all
        .chunks
        .iter()
        .filter(|c| c.name.as_deref() == Some(program))
        .map(|c| c.id.as_str())
        .collect();
    match named.as_slice() {
        [one] => Ok((*one).to_owned()),
        [] => Err(EngineError::not_found(format!(
            "no program `{program}`: name a program chunk id or the name of one (see the members of `engine/program`)"
        ))),
        many => Err(EngineError::new(
            ErrorCode::InvalidRequest,
            format!(
                "program name `{program}` is ambiguous: it names {}; use an id",
                many.join(", ")
            ),
        )),
    }
}

/// The file `executable` names: a built-in (this binary), a path relative
/// to the project root, or a command found on `PATH`.
pub(crate) fn resolve_executable(
    config: &EngineConfig,
    executable: &str,
) -> std::io::Result<(PathBuf, Vec<String>)> {
    use std::os::unix::fs::PermissionsExt;
    let runnable = |p: &std::path::Path| {
        p.metadata()
            .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    let not_found = |what: String| std::io::Error::new(std::io::ErrorKind::NotFound, what);
    if let Some(name) = executable.strip_prefix("builtin:") {
        return Ok((
            config.builtin_exe.clone(),
            vec!["program".into(), name.into()],
        ));
    }
    if executable.contains('/') {
        let path = config.project_root.join(executable);
        return if runnable(&path) {
            Ok((path, Vec::new()))
        } else {
            Err(not_found(format!(
                "{} is not an executable file",
                path.display()
            )))
        };
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|dir| dir.join(executable))
        .find(|p| runnable(p))
        .map(|p| (p, Vec::new()))
        .ok_or_else(|| not_found(format!("no `{executable}` on PATH")))
}
