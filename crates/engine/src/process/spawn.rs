//! Starting a process's program: contained (forked by the zygote, or
//! through a trampoline of its own) or not, with its environment and its
//! stdio piped to the engine.

use crate::core::Core;
use crate::plan::{Plan, resolve_executable};
use serde_json::json;
use std::process::Stdio;

pub(super) fn spawn(core: &Core, id: &str, plan: &Plan) -> std::io::Result<Started> {
    let config = &core.config;
    let (program, mut argv) = resolve_executable(config, &plan.executable)?;
    argv.extend(plan.extra_args.iter().cloned());
    let command = match (plan.contained, &config.containment) {
        (true, contain::Containment::On { exe, args }) => {
            let mut policy = contained_policy(core, id, &plan.capabilities, &program, argv)?;
            policy.env.extend(host_values(core, plan));
            policy.env.extend(trace_env(plan));
            let mut group;
            (policy.bounds, group) = bounds(core, id, plan);
            // the group's stem (its trampoline born in the group)
            if let Some(stem) = group.as_ref().and_then(|g| g.stem.as_ref()) {
                match Started::forked(stem, &policy) {
                    Ok(started) => return Ok(started.bounded(group)),
                    // A stem that died: gone from its group, not asked again.
                    Err(e) => {
                        tracing::warn!("containment stem: {e}; forking from the zygote instead");
                        if let Some(g) = group.as_mut() {
                            g.stem = None;
                        }
                    }
                }
            }
            // else the zygote (its trampoline moves into the group)
            if let Some(zygote) = &core.zygote {
                match Started::forked(zygote, &policy) {
                    Ok(started) => return Ok(started.bounded(group)),
                    // A zygote that died: this run, and the next, start their own.
                    Err(e) => {
                        tracing::warn!("containment zygote: {e}; spawning the trampoline instead");
                    }
                }
            }
            let policy = serde_json::to_string(&policy).map_err(std::io::Error::other)?;
            let mut command = tokio::process::Command::new(exe);
            // The program's environment travels in the policy.
            command.args(args).arg(policy).env_clear();
            return spawn_command(command, core, id).map(|s| s.bounded(group));
        }
        _ => {
            let mut command = tokio::process::Command::new(program);
            let granted = granted_env(&config.project_root, &plan.capabilities);
            command.args(argv).env(protocol::env::CAPABILITIES, granted);
            command.envs(host_values(core, plan));
            command.envs(trace_env(plan));
            command
        }
    };
    spawn_command(command, core, id)
}

/// Starts `command` in the project, its stdio piped to the engine.
fn spawn_command(
    mut command: tokio::process::Command,
    core: &Core,
    id: &str,
) -> std::io::Result<Started> {
    let config = &core.config;
    command
        .current_dir(&config.project_root)
        .env(protocol::env::PROCESS_ID, id)
        .env(protocol::env::PROTOCOL, "1")
        .env(protocol::env::PROJECT_ROOT, &config.project_root)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        // Its own process group, so ending it ends whatever it forked.
        .process_group(0)
        .kill_on_drop(true);
    command.spawn().map(Started::child)
}

/// How many processes and how much memory a contained run may take
/// (configuration's, else the defaults), and — where the machine lets the
/// engine make them — its control groups.
fn bounds(
    core: &Core,
    id: &str,
    plan: &Plan,
) -> (contain::bounds::Bounds, Option<contain::bounds::Group>) {
    let grant = core.config.grants.get(&plan.program_name);
    let mut bounds = contain::bounds::Bounds {
        processes: grant
            .and_then(|g| g.processes)
            .unwrap_or(contain::bounds::DEFAULT_PROCESSES),
        memory: grant.and_then(|g| g.memory).unwrap_or(core.default_memory),
        cgroups: Vec::new(),
    };
    let mut group = core.cgroups.as_ref().and_then(|pool| {
        pool.take(&bounds)
            .inspect_err(|e| tracing::warn!("no control group for {id} ({e}): bounded by rlimits"))
            .ok()
    });
    if let Some(group) = &mut group {
        core.give_stem(group);
    }
    if let Some(group) = &group {
        bounds.cgroups = group.dirs.clone();
    }
    (bounds, group)
}

/// What the host gives this program's environment (its configuration's
/// values, secrets among them, never written to the substrate).
fn host_values(core: &Core, plan: &Plan) -> Vec<(String, String)> {
    let values = core.config.env_values.get(&plan.program_id);
    values.cloned().unwrap_or_default()
}

/// `TRACEPARENT`, naming the process's own span, when traces are on.
fn trace_env(plan: &Plan) -> Option<(String, String)> {
    let trace = plan.trace.as_ref()?;
    Some((protocol::trace::TRACEPARENT.to_owned(), trace.to_string()))
}

/// The policy of a contained run, its temp dir made: the capabilities made
/// concrete, and the program's whole environment (its temp dir, the
/// protocol's variables, and what the allowlist takes from the host's).
fn contained_policy(
    core: &Core,
    id: &str,
    caps: &protocol::Capabilities,
    program: &std::path::Path,
    argv: Vec<String>,
) -> std::io::Result<contain::policy::Policy> {
    let root = &core.config.project_root;
    let tmp = contain::make_temp_dir(id)?;
    let mut policy = contain::policy::policy(
        caps,
        root,
        tmp.clone(),
        program.to_string_lossy().into_owned(),
        argv,
        core.net_holder.as_ref().map(|h| h.pid()),
    );
    policy.env = vec![
        ("TMPDIR".into(), tmp.to_string_lossy().into_owned()),
        (protocol::env::CAPABILITIES.into(), granted_env(root, caps)),
        (protocol::env::PROCESS_ID.into(), id.to_owned()),
        (protocol::env::PROTOCOL.into(), "1".into()),
        (
            protocol::env::PROJECT_ROOT.into(),
            root.to_string_lossy().into_owned(),
        ),
    ];
    let allowed = contain::policy::BASE_ENV
        .iter()
        .copied()
        .chain(caps.env.iter().map(String::as_str));
    for name in allowed {
        if let Ok(value) = std::env::var(name) {
            policy.env.push((name.to_owned(), value));
        }
    }
    Ok(policy)
}

/// A program's capabilities for this run as it can check them itself,
/// containment or not: `{"read": "all" | [absolute paths], "write":
/// [absolute paths], "network": bool}`.
fn granted_env(root: &std::path::Path, caps: &protocol::Capabilities) -> String {
    let absolute = |paths: &[String]| -> Vec<String> {
        paths
            .iter()
            .map(|p| {
                contain::policy::resolve(root, p)
                    .to_string_lossy()
                    .into_owned()
            })
            .collect()
    };
    let read = match &caps.filesystem.read {
        protocol::ReadAccess::All => json!("all"),
        protocol::ReadAccess::Paths(paths) => json!(absolute(paths)),
    };
    json!({"read": read, "write": absolute(&caps.filesystem.write), "network": caps.network})
        .to_string()
}

/// A stream the engine reads from a program.
pub(super) type Input = Box<dyn tokio::io::AsyncRead + Send + Unpin>;

/// A started process: its pid, its stdio, and how its end is learnt.
pub(super) struct Started {
    pid: Option<u32>,
    pub(super) stdin: Option<Box<dyn tokio::io::AsyncWrite + Send + Unpin>>,
    pub(super) stdout: Option<Input>,
    pub(super) stderr: Option<Input>,
    pub(super) end: End,
    /// Its control groups, when contained where the engine has them.
    pub(super) group: Option<contain::bounds::Group>,
}

/// How a started process's end is learnt.
pub(super) enum End {
    /// The engine's own child.
    Child(tokio::process::Child),
    /// A trampoline the zygote forked: the zygote reports its status.
    Forked {
        pid: u32,
        status: tokio::sync::oneshot::Receiver<std::process::ExitStatus>,
        done: bool,
    },
}

impl Started {
    fn child(mut child: tokio::process::Child) -> Started {
        Started {
            pid: child.id(),
            stdin: child.stdin.take().map(|s| Box::new(s) as _),
            stdout: child.stdout.take().map(|s| Box::new(s) as Input),
            stderr: child.stderr.take().map(|s| Box::new(s) as Input),
            end: End::Child(child),
            group: None,
        }
    }

    /// With the control groups it runs in.
    fn bounded(self, group: Option<contain::bounds::Group>) -> Started {
        Started { group, ..self }
    }

    /// Through the zygote (or a stem of it): the program's pipes made
    /// there, their far ends the trampoline's.
    fn forked(
        zygote: &contain::Zygote,
        policy: &contain::policy::Policy,
    ) -> std::io::Result<Started> {
        use tokio::net::unix::pipe;
        let forked = zygote.spawn(policy)?;
        Ok(Started {
            pid: Some(forked.pid),
            stdin: Some(Box::new(pipe::Sender::from_owned_fd(forked.stdin)?)),
            stdout: Some(Box::new(pipe::Receiver::from_owned_fd(forked.stdout)?)),
            stderr: Some(Box::new(pipe::Receiver::from_owned_fd(forked.stderr)?)),
            end: End::Forked {
                pid: forked.pid,
                status: forked.status,
                done: false,
            },
            group: None,
        })
    }

    /// Its pid, when it has one.
    pub(super) fn pid(&self) -> Option<u32> {
        self.pid
    }
}

impl End {
    /// Its exit status, once it ends.
    pub(super) async fn wait(&mut self) -> std::io::Result<std::process::ExitStatus> {
        match self {
            End::Child(child) => child.wait().await,
            End::Forked { status, done, .. } => {
                let ended = status.await;
                *done = true;
                ended.map_err(|_| std::io::Error::other("the containment zygote is gone"))
            }
        }
    }
}

impl Drop for End {
    fn drop(&mut self) {
        // As `kill_on_drop` does for the engine's own children.
        if let End::Forked {
            pid, done: false, ..
        } = self
        {
            contain::kill_group(Some(*pid));
        }
    }
}
