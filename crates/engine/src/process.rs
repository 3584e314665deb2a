//! Processes: `run`, the slot each live process holds, and its supervisor —
//! spawn, `running`, the protocol on its stdio, timeout (paused while it
//! awaits its own children), cancel, and the terminal transition with its
//! cascade to children.

use crate::boundary::{Reach, View, judge_write};
use crate::connection::{Connection, ReadEnd};
use crate::engine::{Context, Engine, ProcessId};
use crate::error::{EngineError, Result};
use crate::plan::{Plan, Planner, resolve_executable};
use protocol::RunArgs;
use serde_json::json;
use std::collections::HashMap;
use std::os::unix::process::ExitStatusExt;
use std::process::Stdio;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};
use substrate::ids::new_id;
use substrate::{ChunkDecl, Declaration, NewPlacement};
use tokio::io::AsyncReadExt;
use tokio::sync::{mpsc, watch};

/// How much of a program's stderr the process chunk keeps.
pub const STDERR_TAIL_BYTES: usize = 64 * 1024;

/// How long a program that has exited gets to have its last lines read.
const DRAIN_GRACE: Duration = Duration::from_secs(2);

/// RFC 3339 UTC with milliseconds, now.
pub(crate) fn now() -> String {
    humantime::format_rfc3339_millis(std::time::SystemTime::now()).to_string()
}

/// A live process: created before its process chunk is committed, removed
/// after its terminal status is.
pub(crate) struct Slot {
    pub id: ProcessId,
    pub parent: Option<ProcessId>,
    pub reach: Reach,
    end: watch::Sender<Option<String>>,
    done: watch::Sender<bool>,
    paused: watch::Sender<usize>,
}

impl Slot {
    /// Asks the supervisor to end the process with `reason` (first reason wins).
    pub fn request_end(&self, reason: &str) {
        self.end.send_if_modified(|current| {
            if current.is_none() {
                *current = Some(reason.to_owned());
                true
            } else {
                false
            }
        });
    }

    /// Resolves once the terminal status is committed.
    pub async fn ended(&self) {
        let mut rx = self.done.subscribe();
        let _ = rx.wait_for(|done| *done).await;
    }

    /// Stops the timeout clock until the guard drops.
    pub fn pause(self: &Arc<Self>) -> PauseGuard {
        self.paused.send_modify(|n| *n += 1);
        PauseGuard(Arc::clone(self))
    }
}

/// Holds a process's timeout clock still.
pub(crate) struct PauseGuard(Arc<Slot>);

impl Drop for PauseGuard {
    fn drop(&mut self) {
        self.0.paused.send_modify(|n| *n = n.saturating_sub(1));
    }
}

/// Every live process.
#[derive(Default)]
pub(crate) struct Slots(Mutex<HashMap<ProcessId, Arc<Slot>>>);

impl Slots {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<ProcessId, Arc<Slot>>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub fn get(&self, id: &str) -> Option<Arc<Slot>> {
        self.lock().get(id).cloned()
    }

    pub fn all(&self) -> Vec<Arc<Slot>> {
        self.lock().values().cloned().collect()
    }

    fn children(&self, parent: &str) -> Vec<Arc<Slot>> {
        self.lock()
            .values()
            .filter(|s| s.parent.as_deref() == Some(parent))
            .cloned()
            .collect()
    }

    fn insert(&self, slot: Arc<Slot>) {
        self.lock().insert(slot.id.clone(), slot);
    }

    fn remove(&self, id: &str) {
        self.lock().remove(id);
    }
}

/// The process's own temp dir (writable when contained; removed at its end).
pub(crate) fn temp_dir(id: &str) -> std::path::PathBuf {
    // One directory per user: a shared one would belong to whoever made it
    // first, and no one else could run a contained program.
    let uid = nix::unistd::getuid();
    std::env::temp_dir()
        .join(format!("hermitcrab-{uid}"))
        .join(id)
}

/// Makes a process's temp dir (and the user's directory above it) private.
fn make_temp_dir(dir: &std::path::Path) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
}

/// `run`, in the seed's order: slot, one atomic commit, spawn, `running`.
pub(crate) fn run(
    engine: &Engine,
    ctx: &Context,
    program: &str,
    args: RunArgs,
) -> Result<ProcessId> {
    let caller = engine.reach(ctx)?;
    let id = new_id("p");
    let planner = Planner {
        config: &engine.inner.config,
        landlock: engine.inner.landlock,
    };
    let plan = engine
        .inner
        .db
        .read(|snap| planner.plan(snap, ctx, &caller, program, &args, &id))?;
    if ctx.process_id.is_some() && args.session.is_some() {
        return Err(EngineError::invalid(
            "`session` is for host runs: a program's runs are placed on its own process",
        ));
    }
    let (decl, arguments) = declaration(&id, ctx, &plan, &args);
    let slot = Arc::new(Slot {
        id: id.clone(),
        parent: ctx.process_id.clone(),
        reach: plan.reach.clone(),
        end: watch::channel(None).0,
        done: watch::channel(false).0,
        paused: watch::channel(0).0,
    });
    engine.inner.slots.insert(Arc::clone(&slot));
    // The caller is judged for its arguments as placed — on the new process
    // (inside its own tree) and typed — with the process's own placements
    // being the engine's.
    let judged = Declaration::of(
        decl.chunks
            .iter()
            .filter(|c| {
                c.id.as_ref()
                    .is_some_and(|c| *c == id || arguments.contains(c))
            })
            .cloned()
            .collect(),
    );
    let committed = engine
        .inner
        .db
        .commit_with(decl, ctx.process_id.as_deref(), |snap| {
            judge_write(&mut View::new(snap), &judged, &caller, &[id.as_str()])
        });
    if let Err(e) = committed {
        engine.inner.slots.remove(&id);
        return Err(e);
    }
    let started = spawn(engine, &id, &plan);
    let child = match started {
        Ok(child) => child,
        Err(e) => {
            let engine = engine.clone();
            let reason = format!("spawn failed: {e}");
            tokio::spawn(async move {
                finish(&engine, &slot, Ending::failed(reason), String::new()).await
            });
            return Ok(id);
        }
    };
    let pid = child.pid;
    engine.inner.db.commit(
        Declaration::of(vec![
            ChunkDecl::with_id(&id)
                .merge_body(json!({"status": "running", "started": now(), "pid": pid})),
        ]),
        None,
    )?;
    tracing::debug!(process = %id, program = %plan.program_name, ?pid, ?arguments, "running");
    let engine = engine.clone();
    let budget = Duration::from_millis(plan.timeout_ms);
    tokio::spawn(async move { supervise(engine, slot, child, budget).await });
    Ok(id)
}

/// Placements of a new process: its program, `engine/process`, and the
/// caller's process or the host's session.
fn process_placements(program: &str, parent: Option<&str>) -> Vec<NewPlacement> {
    let mut out = vec![
        NewPlacement::instance(program),
        NewPlacement::instance("engine/process"),
    ];
    if let Some(parent) = parent {
        out.push(NewPlacement::instance(parent));
    }
    out
}

/// The one commit that creates a process: its chunk, its two boundary
/// chunks (relates on it, their levels in their bodies) and its argument
/// chunks (instance on it).
fn declaration(id: &str, ctx: &Context, plan: &Plan, args: &RunArgs) -> (Declaration, Vec<String>) {
    let parent = ctx.process_id.as_deref().or(args.session.as_deref());
    let mut arguments = Vec::new();
    let mut chunks = Vec::new();
    let mut argument_chunks = Vec::new();
    for chunk in &args.chunks {
        let mut chunk = chunk.clone();
        let arg_id = chunk.id.clone().unwrap_or_else(|| new_id("c"));
        chunk.id = Some(arg_id.clone());
        chunk.placements.push(NewPlacement::instance(id));
        arguments.push(arg_id);
        argument_chunks.push(chunk);
    }
    let mut process = ChunkDecl::with_id(id)
        .name(plan.program_name.clone())
        .create_only()
        .body(json!({
            "status": "pending",
            "program": plan.program_id,
            "timeout_ms": plan.timeout_ms,
            "arguments": arguments,
            "containment": if plan.contained { "on" } else { "off" },
        }));
    process.placements = process_placements(&plan.program_id, parent);
    chunks.push(process);
    // The levels are the boundary, in the body. The roots are not placed
    // on the boundary chunk: a root (`culture`, `engine/program`) reached by
    // every run would gain a placement each run, and its every version and
    // read would grow with the number of runs.
    for (kind, side) in [
        ("read-boundary", &plan.reach.read),
        ("write-boundary", &plan.reach.write),
    ] {
        chunks.push(
            ChunkDecl::with_id(new_id("c"))
                .name(format!("{kind} of {id}"))
                .body(json!({"levels": side.levels}))
                .on(NewPlacement::instance(kind))
                .on(NewPlacement::relates(id)),
        );
    }
    chunks.extend(argument_chunks);
    (
        Declaration {
            chunks,
            ..Declaration::default()
        },
        arguments,
    )
}

fn spawn(engine: &Engine, id: &str, plan: &Plan) -> std::io::Result<Started> {
    let config = &engine.inner.config;
    let (program, mut argv) = resolve_executable(config, &plan.executable)?;
    argv.extend(plan.extra_args.iter().cloned());
    let mut command = match (plan.contained, &config.containment) {
        (true, crate::contain::Containment::On { exe, args }) => {
            let policy = contained_policy(engine, id, &plan.capabilities, &program, argv)?;
            if let Some(zygote) = &engine.inner.zygote {
                match Started::forked(zygote, &policy) {
                    Ok(started) => return Ok(started),
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
            command
        }
        _ => {
            let mut command = tokio::process::Command::new(program);
            let granted = granted_env(&config.project_root, &plan.capabilities);
            command.args(argv).env(protocol::env::CAPABILITIES, granted);
            command
        }
    };
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

/// The policy of a contained run, its temp dir made: the capabilities made
/// concrete, and the program's whole environment (its temp dir, the
/// protocol's variables, and what the allowlist takes from the host's).
fn contained_policy(
    engine: &Engine,
    id: &str,
    caps: &protocol::Capabilities,
    program: &std::path::Path,
    argv: Vec<String>,
) -> std::io::Result<crate::contain::policy::Policy> {
    let root = &engine.inner.config.project_root;
    let tmp = temp_dir(id);
    make_temp_dir(&tmp)?;
    let mut policy = crate::contain::policy::policy(
        caps,
        root,
        tmp.clone(),
        program.to_string_lossy().into_owned(),
        argv,
        engine.inner.net_holder.as_ref().map(|h| h.pid()),
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
    let allowed = crate::contain::policy::BASE_ENV
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
                crate::contain::policy::resolve(root, p)
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

type Input = Box<dyn tokio::io::AsyncRead + Send + Unpin>;

/// A started process: its pid, its stdio, and how its end is learnt.
pub(crate) struct Started {
    pid: Option<u32>,
    stdin: Option<Box<dyn tokio::io::AsyncWrite + Send + Unpin>>,
    stdout: Option<Input>,
    stderr: Option<Input>,
    end: End,
}

enum End {
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
        }
    }

    /// Through the zygote: the program's pipes made here, their far ends
    /// handed over.
    fn forked(
        zygote: &crate::contain::Zygote,
        policy: &crate::contain::policy::Policy,
    ) -> std::io::Result<Started> {
        use nix::fcntl::OFlag;
        use tokio::net::unix::pipe;
        let cloexec = |p: nix::Result<(std::os::fd::OwnedFd, std::os::fd::OwnedFd)>| {
            p.map_err(std::io::Error::from)
        };
        let (in_r, in_w) = cloexec(nix::unistd::pipe2(OFlag::O_CLOEXEC))?;
        let (out_r, out_w) = cloexec(nix::unistd::pipe2(OFlag::O_CLOEXEC))?;
        let (err_r, err_w) = cloexec(nix::unistd::pipe2(OFlag::O_CLOEXEC))?;
        let (pid, status) = zygote.spawn(policy, [&in_r, &out_w, &err_w])?;
        drop((in_r, out_w, err_w));
        Ok(Started {
            pid: Some(pid),
            stdin: Some(Box::new(pipe::Sender::from_owned_fd(in_w)?)),
            stdout: Some(Box::new(pipe::Receiver::from_owned_fd(out_r)?)),
            stderr: Some(Box::new(pipe::Receiver::from_owned_fd(err_r)?)),
            end: End::Forked {
                pid,
                status,
                done: false,
            },
        })
    }
}

impl End {
    async fn wait(&mut self) -> std::io::Result<std::process::ExitStatus> {
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
            kill_group(Some(*pid));
        }
    }
}

/// Kills the process group `pid` leads (the program and what it forked).
fn kill_group(pid: Option<u32>) {
    if let Some(pid) = pid.and_then(|p| i32::try_from(p).ok()) {
        // ESRCH (already gone) is fine.
        let _ = nix::sys::signal::killpg(
            nix::unistd::Pid::from_raw(pid),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
}

/// How a process ended.
pub(crate) struct Ending {
    status: &'static str,
    error: Option<String>,
    exit_code: Option<i32>,
}

impl Ending {
    fn failed(error: impl Into<String>) -> Ending {
        Ending {
            status: "failed",
            error: Some(error.into()),
            exit_code: None,
        }
    }

    fn exited(status: std::process::ExitStatus) -> Ending {
        match (status.code(), status.signal()) {
            (Some(0), _) => Ending {
                status: "completed",
                error: None,
                exit_code: Some(0),
            },
            (Some(code), _) => Ending {
                status: "failed",
                error: Some(format!("exit code {code}")),
                exit_code: Some(code),
            },
            (None, Some(signal)) => Ending::failed(format!("killed by signal {signal}")),
            (None, None) => Ending::failed("killed"),
        }
    }
}

/// Watches one process from spawn to its terminal commit.
async fn supervise(engine: Engine, slot: Arc<Slot>, mut child: Started, budget: Duration) {
    let pid = child.pid;
    let (out_tx, out_rx) = mpsc::channel::<String>(crate::connection::OUT_QUEUE);
    let writer = match child.stdin.take() {
        Some(stdin) => tokio::spawn(crate::connection::pump(out_rx, stdin)),
        None => tokio::spawn(async {}),
    };
    let stderr_tail = tokio::spawn(read_tail(child.stderr.take()));
    let connection = Arc::new(Connection::new(
        engine.clone(),
        Context::process(&slot.id),
        out_tx,
        false,
    ));
    let stdout = child.stdout.take();
    let reading = Arc::clone(&connection);
    let mut reader = Box::pin(async move {
        match stdout {
            Some(out) => reading.serve(out).await,
            None => ReadEnd::Eof,
        }
    });
    let mut deadline = Box::pin(expiry(slot.paused.subscribe(), budget));
    let mut end_rx = slot.end.subscribe();
    let mut ending: Option<Ending> = None;
    let mut exit: Option<std::process::ExitStatus> = None;
    let mut reader_done = false;
    let mut exited_at: Option<Instant> = None;
    while !(reader_done && exit.is_some()) {
        let grace = exited_at.map_or(DRAIN_GRACE, |t| DRAIN_GRACE.saturating_sub(t.elapsed()));
        tokio::select! {
            end = &mut reader, if !reader_done => {
                reader_done = true;
                if let ReadEnd::Malformed(why) = end {
                    tracing::debug!(process = %slot.id, "malformed output: {why}");
                    ending.get_or_insert(Ending::failed("protocol: malformed output"));
                    kill_group(pid);
                }
            }
            status = child.end.wait(), if exit.is_none() => {
                exit = Some(status.unwrap_or_else(|_| std::process::ExitStatus::from_raw(9)));
                exited_at = Some(Instant::now());
                kill_group(pid); // whatever it forked and left behind
            }
            reason = end_rx.wait_for(Option::is_some), if ending.is_none() => {
                let reason = reason.map(|r| r.clone().unwrap_or_default()).unwrap_or_else(|_| "cancelled".into());
                ending = Some(Ending::failed(reason));
                kill_group(pid);
            }
            () = &mut deadline, if ending.is_none() && exit.is_none() => {
                ending = Some(Ending::failed("timeout"));
                kill_group(pid);
            }
            () = tokio::time::sleep(grace), if exit.is_some() && !reader_done => {
                reader_done = true; // a grandchild holds stdout open; stop waiting
            }
        }
    }
    drop(reader);
    connection.close();
    writer.abort();
    let ending = match (ending, exit) {
        (Some(ending), _) => ending,
        (None, Some(status)) => Ending::exited(status),
        (None, None) => Ending::failed("killed"),
    };
    let tail = stderr_tail.await.unwrap_or_default();
    finish(&engine, &slot, ending, tail).await;
}

/// Resolves when `budget` of unpaused time has passed.
async fn expiry(mut paused: watch::Receiver<usize>, budget: Duration) {
    let mut left = budget;
    loop {
        if *paused.borrow_and_update() > 0 {
            if paused.changed().await.is_err() {
                std::future::pending::<()>().await;
            }
            continue;
        }
        let started = Instant::now();
        tokio::select! {
            () = tokio::time::sleep(left) => return,
            changed = paused.changed() => {
                left = left.saturating_sub(started.elapsed());
                if changed.is_err() {
                    std::future::pending::<()>().await;
                }
            }
        }
    }
}

/// The last [`STDERR_TAIL_BYTES`] of a stream, as text.
async fn read_tail(stderr: Option<Input>) -> String {
    let Some(mut stderr) = stderr else {
        return String::new();
    };
    let mut tail: Vec<u8> = Vec::new();
    let mut buf = [0u8; 8192];
    while let Ok(n) = stderr.read(&mut buf).await {
        if n == 0 {
            break;
        }
        tail.extend_from_slice(&buf[..n]);
        if tail.len() > 2 * STDERR_TAIL_BYTES {
            tail.drain(..tail.len() - STDERR_TAIL_BYTES);
        }
    }
    if tail.len() > STDERR_TAIL_BYTES {
        tail.drain(..tail.len() - STDERR_TAIL_BYTES);
    }
    String::from_utf8_lossy(&tail).into_owned()
}

/// The terminal transition: commit the ending, drop the process's
/// subscriptions, fail its live children (`"parent ended"`, recursively),
/// then wake its awaiters and forget the slot.
pub(crate) async fn finish(engine: &Engine, slot: &Arc<Slot>, ending: Ending, stderr_tail: String) {
    let mut body = json!({"status": ending.status, "ended": now(), "exit_code": ending.exit_code});
    if let Some(error) = &ending.error {
        body["error"] = json!(error);
    }
    if !stderr_tail.is_empty() {
        body["stderr_tail"] = json!(stderr_tail);
    }
    let decl = Declaration::of(vec![ChunkDecl::with_id(&slot.id).merge_body(body)]);
    if let Err(e) = engine.inner.db.commit(decl, None) {
        tracing::error!(process = %slot.id, "cannot record the end of the process: {e}");
    }
    engine.inner.subs.remove_owner(&slot.id);
    let _ = std::fs::remove_dir_all(temp_dir(&slot.id));
    let children = engine.inner.slots.children(&slot.id);
    for child in &children {
        child.request_end("parent ended");
    }
    for child in &children {
        child.ended().await;
    }
    slot.done.send_replace(true);
    engine.inner.slots.remove(&slot.id);
    tracing::debug!(process = %slot.id, status = ending.status, error = ?ending.error, "ended");
}
