//! A worker: an engine that takes the project's queued runs (`hc worker`,
//! the one `hc run --bg` starts, `hc serve`). Each run it claims gets an
//! engine of its own rooted where the run works — its git worktree, made
//! here from the run's base commit, or the project — so its boundaries
//! and containment are that directory's; at most `max` at once. When a
//! run ends, what it changed in its worktree is committed on its branch.
//! Meanwhile the worker follows the commits other processes make (an
//! answer from `hc attach` reaches the agent it runs) and fails the runs
//! of engines found gone (`engine lost`).

use crate::worktree;
use anyhow::{Context as _, Result};
use engine::{Context, Engine, EngineConfig, EngineError};
use protocol::ErrorCode;
use protocol::process::{ProcessBody, WorktreeAsk};
use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};
use substrate::Substrate;
use tokio::task::JoinSet;

/// How often a worker follows other processes' commits (a run queued by
/// `hc run --bg` is one); the queue is read again when a commit came.
const POLL: Duration = Duration::from_millis(25);

/// How often it reads the queue regardless.
const REREAD: Duration = Duration::from_secs(1);

/// How often it looks for gone engines.
const SWEEP: Duration = Duration::from_secs(1);

/// How long a worker started to empty the queue (`--until-idle`, as `hc
/// run --bg` starts one) waits for a store that is away before it ends:
/// no one is there to stop it, and the next `hc run --bg` starts another.
const AWAY_UNTIL_IDLE: Duration = Duration::from_secs(30);

pub use crate::config::MAX_BACKGROUND;

/// What a worker is asked.
#[derive(Clone, Debug)]
pub struct Opts {
    /// End once nothing is queued and nothing runs.
    pub until_idle: bool,
    /// At most this many runs at once.
    pub max: usize,
    /// The labels this worker carries (`--labels`): it takes only runs
    /// asking for them; none: only runs asking for none.
    pub labels: Vec<String>,
    /// Whose runs it takes, and what it runs another person's within.
    pub serving: crate::serving::Serving,
}

/// How long a run a worker left for another is left before it looks at
/// it again (its base commit may have been pushed meanwhile).
const PASSED: Duration = Duration::from_secs(30);

/// `text` when it is a worker's label: letters, digits, `-`, `_` and
/// `.`, at most 40; else what a label is.
pub fn check_label(text: &str) -> Result<&str, String> {
    let plain = text
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b));
    if text.is_empty() || text.len() > 40 || !plain {
        return Err(format!(
            "`{}` is not a label: a label is letters, digits, `-`, `_` and `.` (at most 40)",
            crate::text::shown(text)
        ));
    }
    Ok(text)
}

/// What a worker did.
#[derive(Debug, Default)]
pub struct Worked {
    /// The runs it claimed.
    pub claimed: usize,
    /// The queued runs it could not start (their worktree), failed.
    pub refused: usize,
}

/// A run queued for a worker.
#[derive(Debug)]
pub struct Queued {
    /// Its new session.
    pub session: String,
    /// Its process, `pending`.
    pub process: String,
    /// The worktree it asked for, when it works in one.
    pub worktree: Option<protocol::process::WorktreeAsk>,
}

/// What a queued run of the agent is: its prompt, its resolved
/// configuration, its images and pins, and where it works (`worktree`:
/// `Some(base)` in a worktree of its own from `base`, none: `HEAD`;
/// `None`: the project's directory).
pub struct Asked<'a> {
    /// The prompt.
    pub prompt: &'a str,
    /// The configuration (made interactive and marked background here).
    pub config: &'a agent::AgentConfig,
    /// Images sent with it.
    pub images: &'a [agent::contract::PromptImage],
    /// The scopes it pins.
    pub pins: &'a [String],
    /// Its worktree's base, when it works in one.
    pub worktree: Option<Option<&'a str>>,
    /// The name a driving program gave the session (`--session-id`).
    pub name: Option<&'a str>,
    /// The labels a worker must carry to take it (`--labels`).
    pub labels: &'a [String],
    /// `turn`: queued again from its last whole turn when its engine is
    /// lost (`--retry`, `retry` in the configuration).
    pub retry: Option<&'a str>,
    /// Who asks (none: the user `hc` runs as).
    pub by: Option<&'a str>,
}

/// The person `hc` acts for on this host (see [`crate::principal`]).
pub fn person() -> String {
    crate::principal::person()
}

/// Queues a run of the agent on a new session of the project at `root`
/// (its substrate `db`, planned as `config` plans): the session, what the
/// run commits first, and the run `pending` — no engine opened. A worktree
/// that cannot be made is refused (exit 2) before anything is committed.
pub fn enqueue(
    db: &Substrate,
    config: &EngineConfig,
    root: &Path,
    asked: Asked<'_>,
) -> Result<Queued> {
    let mut agent = asked.config.clone();
    // its questions wait in the substrate for whoever attaches
    agent.interactive = true;
    agent.background = true;
    let (session, make) = agent::launch::new_named_session(asked.prompt, asked.name);
    let worktree = match asked.worktree {
        Some(base) => Some(
            worktree::ask(root, &session, base)
                .map_err(|e| crate::exit::exit(2, format!("{e:#}")))?,
        ),
        None => None,
    };
    let launch = agent::launch::Launch {
        session: &session,
        prompt: asked.prompt,
        images: asked.images,
        config: &agent,
        pins: asked.pins,
        uuid: None,
    };
    let (before, mut args) = launch.plan();
    args.placement = Some(protocol::process::Placement {
        labels: asked.labels.to_vec(),
        retry: asked.retry.map(str::to_owned),
        asked_on: Some(engine::host_name()),
        asked_by: Some(asked.by.map_or_else(|| db.person(), str::to_owned)),
        worktree: worktree.clone(),
    });
    db.commit(make, None)?;
    if let Some(before) = before {
        db.commit(before, None)?;
    }
    let process = engine::queue_run(db, config, "agent", args)?;
    Ok(Queued {
        session,
        process,
        worktree,
    })
}

/// The lock a live worker holds: `.hermitcrab/worker.lock`.
pub fn lock_path(root: &Path) -> PathBuf {
    root.join(crate::project::DIR).join("worker.lock")
}

/// Whether a worker holds the project's lock now.
pub fn running(root: &Path) -> bool {
    let Ok(file) = File::options().write(true).open(lock_path(root)) else {
        return false;
    };
    match file.try_lock() {
        Ok(()) => false,
        Err(std::fs::TryLockError::WouldBlock) => true,
        Err(std::fs::TryLockError::Error(_)) => false,
    }
}

/// Takes the project's worker lock (held while the file is open), or
/// `None` when another worker holds it.
fn take_lock(root: &Path) -> Result<Option<File>> {
    let path = lock_path(root);
    let file = File::options()
        .write(true)
        .create(true)
        .truncate(false)
        .open(&path)
        .with_context(|| format!("cannot open {}", path.display()))?;
    match file.try_lock() {
        Ok(()) => Ok(Some(file)),
        Err(std::fs::TryLockError::WouldBlock) => Ok(None),
        Err(std::fs::TryLockError::Error(e)) => Err(e.into()),
    }
}

/// Takes and runs the queued runs of the project at `root` (its substrate
/// `db`; each run's engine configured as `template`, rooted where it
/// works) until `stop` resolves — or, with `until_idle`, until nothing is
/// queued or running. `say` hears what it does, a line at a time.
pub async fn work(
    root: &Path,
    db: &Arc<Substrate>,
    template: &EngineConfig,
    opts: &Opts,
    stop: impl std::future::Future<Output = ()>,
    say: &(dyn Fn(&str) + Sync),
) -> Result<Worked> {
    let mut running: JoinSet<Result<Outcome>> = JoinSet::new();
    let mut worked = Worked::default();
    // a stop is heard whatever the worker waits for (a store away
    // included): the service manager's SIGTERM never waits for a retry
    let served = tokio::select! {
        served = serve(root, db, template, opts, say, &mut running, &mut worked) => Some(served),
        () = stop => None,
    };
    if served.is_none() && !running.is_empty() {
        say(&format!(
            "stopping: {} run(s) under way stop here; each is taken up again by a worker once \
             its lease lapses",
            running.len()
        ));
    }
    running.shutdown().await;
    served.unwrap_or(Ok(()))?;
    Ok(worked)
}

/// The worker's loop: the queue read as it changes, runs taken while
/// there is room, their ends heard; ends only `--until-idle`.
async fn serve(
    root: &Path,
    db: &Arc<Substrate>,
    template: &EngineConfig,
    opts: &Opts,
    say: &(dyn Fn(&str) + Sync),
    running: &mut JoinSet<Result<Outcome>>,
    worked: &mut Worked,
) -> Result<()> {
    let mut lock = take_lock(root)?;
    crate::relay::start(Arc::clone(db));
    if lock.is_none() && opts.until_idle {
        say("another worker takes this project's runs: nothing for this one to do");
        return Ok(());
    }
    let mut mine: HashSet<String> = HashSet::new();
    let mut passed: HashMap<String, Instant> = HashMap::new();
    let contains = template.can_contain();
    let mut swept = Instant::now() - SWEEP;
    let mut commits = db.subscribe();
    let mut read = Instant::now() - REREAD;
    let mut ended = true;
    let mut away: Option<Instant> = None;
    loop {
        follow(db).await;
        sweep(db, &mut swept).await;
        // the queue read again only when something may have changed it
        let came = drain(&mut commits);
        if !(came || std::mem::take(&mut ended) || read.elapsed() >= REREAD) {
            tokio::time::sleep(POLL).await;
            continue;
        }
        read = Instant::now();
        let (waiting, busy) = match queued(db) {
            Ok(queued) => {
                away = None;
                queued
            }
            Err(e) => {
                say(&format!("cannot read the queue now: {e:#}"));
                let since = *away.get_or_insert_with(Instant::now);
                if opts.until_idle && running.is_empty() && since.elapsed() >= AWAY_UNTIL_IDLE {
                    anyhow::bail!(
                        "the store has been away for {} s: this worker, started to empty the \
                         queue, ends (the next `hc run --bg` starts another; `hc worker` waits \
                         for the store as long as it takes)",
                        AWAY_UNTIL_IDLE.as_secs()
                    );
                }
                tokio::time::sleep(REREAD).await;
                continue;
            }
        };
        let job = |id, body| Job {
            root: root.to_path_buf(),
            db: Arc::clone(db),
            template: template.clone(),
            serving: opts.serving.clone(),
            id,
            body,
        };
        let room = opts.max.max(1).saturating_sub(busy.max(running.len()));
        let fresh = Chosen {
            mine: &mine,
            passed: &mut passed,
            labels: &opts.labels,
            serving: &opts.serving,
            contains,
        }
        .choose(db, waiting, room, say);
        for (id, body) in fresh {
            mine.insert(id.clone());
            running.spawn(job(id, body).run());
        }
        if opts.until_idle && running.is_empty() {
            match idle_ends(root, db, &opts.serving, &mut lock) {
                true => return Ok(()),
                false => continue,
            }
        }
        tokio::select! {
            Some(done) = running.join_next() => {
                ended = true;
                forget(&done, &mut mine, &mut passed, db, say);
                heard(worked, done, say);
            }
            () = tokio::time::sleep(POLL) => {}
        }
    }
}

/// What a worker looks at as it chooses the runs it takes next.
struct Chosen<'a> {
    /// The runs it holds.
    mine: &'a HashSet<String>,
    /// The runs it left for another, and since when.
    passed: &'a mut HashMap<String, Instant>,
    labels: &'a [String],
    serving: &'a crate::serving::Serving,
    /// Whether it can contain programs.
    contains: bool,
}

impl Chosen<'_> {
    /// At most `room` of the `waiting` runs it takes, oldest first; those
    /// it cannot take are said and noted once (and looked at again after
    /// `PASSED`).
    fn choose(
        self,
        db: &Substrate,
        waiting: Vec<(String, ProcessBody)>,
        room: usize,
        say: &(dyn Fn(&str) + Sync),
    ) -> Vec<(String, ProcessBody)> {
        self.passed.retain(|_, when| when.elapsed() < PASSED);
        let mut fresh = Vec::new();
        for (id, body) in waiting {
            if fresh.len() >= room {
                break;
            }
            if self.mine.contains(&id) || self.passed.contains_key(&id) {
                continue;
            }
            let served = match self.serving.refuses(db, &id, &body) {
                Some(why) => Err(why),
                None => takes(&body, self.labels, self.contains),
            };
            match served {
                Ok(()) => fresh.push((id, body)),
                Err(why) => {
                    pass(db, &id, &why, say);
                    self.passed.insert(id, Instant::now());
                }
            }
        }
        fresh
    }
}

/// Whether a worker carrying `labels` (and able to contain programs, or
/// not) takes a queued run, or why not. A run it does not take waits for
/// another worker.
fn takes(body: &ProcessBody, labels: &[String], contains: bool) -> Result<(), String> {
    if let Some(why) = body.placement.as_ref().and_then(|p| p.refused_by(labels)) {
        return Err(why);
    }
    if body.containment.as_deref() == Some("on") && !contains {
        return Err(
            "its tools run contained, and this host cannot contain them (no Landlock in its \
             kernel, or containment off here)"
                .into(),
        );
    }
    Ok(())
}

/// Says why this worker leaves run `id` for another, and notes it on the
/// run (`hc agents` shows it) unless it said the same already.
fn pass(db: &Substrate, id: &str, why: &str, say: &(dyn Fn(&str) + Sync)) {
    let note = format!("{}: {why}", engine::host_name());
    let said = db.read(|snap| snap.body(id)).ok().flatten();
    if said.is_some_and(|b| ProcessBody::parse(&b).note.as_deref() == Some(note.as_str())) {
        return;
    }
    say(&format!("{id}: left for another worker: {why}"));
    if let Err(e) = engine::note_queued(db, id, &note) {
        tracing::debug!("{id}: not noted: {e}");
    }
}

/// The runs of gone engines failed, once a `SWEEP`.
async fn sweep(db: &Arc<Substrate>, swept: &mut Instant) {
    if swept.elapsed() >= SWEEP {
        let db = Arc::clone(db);
        let _ = tokio::task::spawn_blocking(move || engine::fail_gone(&db)).await;
        *swept = Instant::now();
    }
}

/// Whether an idle `--until-idle` worker ends: it lets go of the lock
/// before its last look (a run queued after it finds no worker and starts
/// one; one before it is seen), and ends too when another worker took the
/// lock meanwhile (the queue is that one's).
fn idle_ends(
    root: &Path,
    db: &Substrate,
    serving: &crate::serving::Serving,
    lock: &mut Option<File>,
) -> bool {
    drop(lock.take());
    // (runs only another person's worker takes are not this one's to wait for)
    let none = |waiting: Vec<(String, ProcessBody)>| {
        (waiting.iter()).all(|(id, body)| serving.refuses(db, id, body).is_some())
    };
    if queued(db).is_ok_and(|(waiting, _)| none(waiting)) {
        return true;
    }
    *lock = take_lock(root).unwrap_or(None);
    lock.is_none()
}

/// A job ended: its run is no longer this worker's (a run lost here and
/// queued again may be taken anew); one it left for another is noted and
/// not looked at again for a while.
fn forget(
    done: &Result<Result<Outcome>, tokio::task::JoinError>,
    mine: &mut HashSet<String>,
    passed: &mut HashMap<String, Instant>,
    db: &Substrate,
    say: &(dyn Fn(&str) + Sync),
) {
    let Ok(Ok(outcome)) = done else {
        return;
    };
    let (Outcome::Ran { id, .. }
    | Outcome::Refused { id, .. }
    | Outcome::Taken { id }
    | Outcome::Unsettled { id, .. }
    | Outcome::Lost { id, .. }
    | Outcome::Passed { id, .. }) = outcome;
    mine.remove(id);
    if let Outcome::Passed { id, why } = outcome {
        pass(db, id, why, say);
        passed.insert(id.clone(), Instant::now());
    }
}

/// What a job's end means for the worker's count, said.
fn heard(
    worked: &mut Worked,
    done: Result<Result<Outcome>, tokio::task::JoinError>,
    say: &(dyn Fn(&str) + Sync),
) {
    match done {
        Ok(Ok(Outcome::Ran { id, committed })) => {
            worked.claimed += 1;
            let branch = if committed {
                "; its changes committed on its branch"
            } else {
                ""
            };
            say(&format!("{id}: ended{branch}"));
        }
        Ok(Ok(Outcome::Refused { id, why })) => {
            worked.refused += 1;
            say(&format!("{id}: not started: {why}"));
        }
        Ok(Ok(Outcome::Unsettled { id, why })) => {
            say(&format!("{id}: not carried now ({why}); looked at again"));
        }
        Ok(Ok(Outcome::Lost { id, why })) => say(&format!(
            "{id}: lost: this host's lease on it expired and another host took it over ({why}); \
             nothing more was recorded from here (fenced)"
        )),
        Ok(Ok(Outcome::Taken { .. } | Outcome::Passed { .. })) => {}
        Ok(Err(e)) => say(&format!("a run: {e:#}")),
        Err(e) => say(&format!("a run's task: {e}")),
    }
}

/// Whether any commit came on `commits` since it was last drained.
fn drain(commits: &mut tokio::sync::broadcast::Receiver<Arc<substrate::Commit>>) -> bool {
    use tokio::sync::broadcast::error::TryRecvError;
    let mut came = false;
    loop {
        match commits.try_recv() {
            Ok(_) | Err(TryRecvError::Lagged(_)) => came = true,
            Err(TryRecvError::Empty | TryRecvError::Closed) => return came,
        }
    }
}

/// The commits other processes made, broadcast here.
async fn follow(db: &Arc<Substrate>) {
    let db = Arc::clone(db);
    let _ = tokio::task::spawn_blocking(move || db.follow()).await;
}

/// The runs waiting for an engine, oldest first; and how many queued runs
/// engines hold now.
fn queued(db: &Substrate) -> Result<(Vec<(String, ProcessBody)>, usize)> {
    let found = db.read(|snap| {
        if !snap.exists("engine/process")? {
            return Ok::<_, substrate::Error>(Vec::new());
        }
        let read = snap.scope(
            &["engine/process".to_owned()],
            &substrate::ScopeOpts {
                match_: Some("pending OR running".into()),
                limit: Some(usize::MAX),
                ..substrate::ScopeOpts::default()
            },
        )?;
        Ok(read
            .chunks
            .iter()
            .map(|c| (c.id.clone(), ProcessBody::parse(&c.body_value())))
            .filter(|(_, b)| b.placement.is_some() && !b.status.ended())
            .collect())
    })?;
    let (mut waiting, held): (Vec<(String, ProcessBody)>, Vec<_>) =
        found.into_iter().partition(|(_, b)| b.queued());
    waiting.sort_by(|a, b| a.0.cmp(&b.0));
    Ok((waiting, held.len()))
}

/// How one run went.
enum Outcome {
    /// Claimed here and carried to its end.
    Ran { id: String, committed: bool },
    /// Another engine claimed it first.
    Taken { id: String },
    /// It could not start here (its worktree): failed, saying why.
    Refused { id: String, why: String },
    /// This host cannot run it (its base commit is not here): left
    /// queued for another worker.
    Passed { id: String, why: String },
    /// It could not be carried now (the store away): left as it is, looked
    /// at again.
    Unsettled { id: String, why: String },
    /// This host's lease on it expired (cut off, too slow): another host
    /// failed it or queued it again, and what this one still tried to
    /// commit for it was refused (`FENCED`).
    Lost { id: String, why: String },
}

/// One queued run to take.
struct Job {
    root: PathBuf,
    db: Arc<Substrate>,
    template: EngineConfig,
    serving: crate::serving::Serving,
    id: String,
    body: ProcessBody,
}

impl Job {
    /// Claims and carries the run; anything that stops it before the claim
    /// fails it, saying why (never left queued for this worker to skip).
    async fn run(self) -> Result<Outcome> {
        let (db, id) = (Arc::clone(&self.db), self.id.clone());
        match self.carry().await {
            // the store away (a server restarting): left queued, tried again
            Err(e) if store_away(&e) => Ok(Outcome::Unsettled {
                id,
                why: format!("{e:#}"),
            }),
            Err(e) => {
                let why = format!("{e:#}");
                match engine::refuse_queued(&db, &id, &why) {
                    Ok(()) => Ok(Outcome::Refused { id, why }),
                    // claimed: its end is its engine's to record
                    Err(_) => Ok(Outcome::Unsettled { id, why }),
                }
            }
            done => done,
        }
    }

    async fn carry(self) -> Result<Outcome> {
        let ask = (self.body.placement.as_ref()).and_then(|p| p.worktree.clone());
        let at = match self.place(ask.as_ref()).await? {
            Ok(at) => at,
            Err(outcome) => return Ok(outcome),
        };
        // another person's run: within this worker's person's settings
        if let Err(e) = self.serving.restate(&self.db, &self.id, &self.body) {
            return Ok(Outcome::Unsettled {
                id: self.id,
                why: format!("{e:#}"),
            });
        }
        let mut config = self.template.clone();
        config.project_root = at;
        let engine = Engine::open_with(Arc::clone(&self.db), config)?;
        if let Err(e) = engine.claim(&self.id) {
            crate::open::close(&engine).await;
            if e.code == ErrorCode::Fenced {
                return Ok(Outcome::Taken { id: self.id });
            }
            let why = e.to_string();
            engine::refuse_queued(&self.db, &self.id, &why)?;
            return Ok(Outcome::Refused { id: self.id, why });
        }
        let since = std::time::SystemTime::now();
        let ids = [self.id.clone()];
        let ended = engine.await_processes(&Context::host(), &ids).await;
        if let Some(session) = session_of(&self.db, &self.id) {
            crate::telemetry::run_ended(&self.db, &session, &self.id);
        }
        crate::turn::sweep_git(&engine, since).await;
        let held_by = engine.id().to_owned();
        crate::open::close(&engine).await;
        if let Some(why) = self.lost_from(&held_by) {
            return Ok(Outcome::Lost { id: self.id, why });
        }
        ended?;
        let committed = match ask {
            Some(_) => self.settle().await?,
            None => false,
        };
        Ok(Outcome::Ran {
            id: self.id,
            committed,
        })
    }

    /// Where the run works here: its worktree (checked to be its
    /// session's own, its base commit found, made) or the project's
    /// directory — or the outcome that it cannot work here.
    async fn place(&self, ask: Option<&WorktreeAsk>) -> Result<Result<PathBuf, Outcome>> {
        let Some(ask) = ask else {
            return Ok(Ok(self.root.clone()));
        };
        // (a worktree is the session's own: its place and branch)
        let session = session_of(&self.db, &self.id).unwrap_or_default();
        if ask.path != worktree::relative_path(&session)
            || ask.branch != worktree::branch_of(&session)
        {
            anyhow::bail!(
                "its worktree is not its session's own ({} on {})",
                crate::text::shown(&ask.path),
                crate::text::shown(&ask.branch)
            );
        }
        let (root, base) = (self.root.clone(), ask.base.clone());
        let found = tokio::task::spawn_blocking(move || worktree::find_base(&root, &base));
        if let Err(e) = found.await? {
            let why = format!("{e:#}");
            return Ok(Err(Outcome::Passed {
                id: self.id.clone(),
                why,
            }));
        }
        let (root, ask) = (self.root.clone(), ask.clone());
        match tokio::task::spawn_blocking(move || worktree::make(&root, &ask)).await? {
            Ok(path) => Ok(Ok(path)),
            Err(e) => {
                let why = format!("{e:#}");
                engine::refuse_queued(&self.db, &self.id, &format!("worktree: {why}"))?;
                Ok(Err(Outcome::Refused {
                    id: self.id.clone(),
                    why,
                }))
            }
        }
    }

    /// Why the run is no longer this host's, when its engine (`held_by`)
    /// lost it — its lease expired and another host failed it or queued
    /// it again.
    fn lost_from(&self, held_by: &str) -> Option<String> {
        let now = self.db.read(|snap| snap.body(&self.id)).ok().flatten();
        let now = ProcessBody::parse(&now.unwrap_or_default());
        let lost = now.engine.as_deref() != Some(held_by)
            || now.status.as_str() == "pending"
            || now.error.as_deref() == Some("engine lost");
        lost.then(|| match now.status.as_str() {
            "pending" => "queued again for another worker".to_owned(),
            _ => now
                .error
                .unwrap_or_else(|| "taken by another engine".into()),
        })
    }

    /// What the run changed committed on its branch (whether there was
    /// anything), and on a shared store its place noted and its branch
    /// shared.
    async fn settle(&self) -> Result<bool> {
        let (title, root) = (self.title(), self.root.clone());
        let session = session_of(&self.db, &self.id).unwrap_or_default();
        let (db, asked_on) = (Arc::clone(&self.db), self.asked_on());
        tokio::task::spawn_blocking(move || {
            let committed = worktree::settle(&root, &session, &title)?;
            if db.is_shared() {
                crate::place::share(&db, &root, &session, asked_on.as_deref())?;
            }
            Ok::<_, anyhow::Error>(committed)
        })
        .await?
    }

    /// The host the run was queued on, when not this one.
    fn asked_on(&self) -> Option<String> {
        let placement = self.body.placement.as_ref()?;
        placement
            .asked_on
            .clone()
            .filter(|h| *h != engine::host_name())
    }

    /// The title of the run's session (its branch's commit message).
    fn title(&self) -> String {
        let title = session_of(&self.db, &self.id).and_then(|s| {
            let body = self.db.read(|snap| snap.body(&s)).ok().flatten()?;
            Some(agent::contract::SessionBody::parse(&body).title)
        });
        title
            .filter(|t| !t.is_empty())
            .unwrap_or_else(|| format!("hc: background run {}", self.id))
    }
}

/// Whether `e` says the store is away (its server unreachable or
/// restarting), not that the run is wrong.
fn store_away(e: &anyhow::Error) -> bool {
    e.chain().any(|cause| {
        cause
            .downcast_ref::<EngineError>()
            .is_some_and(|e| e.code == ErrorCode::Internal)
            || matches!(
                cause.downcast_ref::<substrate::Error>(),
                Some(substrate::Error::Storage(_))
            )
    })
}

/// The session process `id` runs on.
fn session_of(db: &Substrate, id: &str) -> Option<String> {
    let item = db.read(|snap| snap.chunk(id)).ok().flatten()?;
    item.placements
        .iter()
        .find(|p| p.scope.starts_with("s_"))
        .map(|p| p.scope.clone())
}
