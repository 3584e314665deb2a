//! How many processes and how much memory a contained run may take, so
//! that no tool can take the host's (a fork bomb, a runaway allocation).
//!
//! Where the machine lets `hc` make control groups — cgroup v2 with the
//! `pids` and `memory` controllers delegated to the cgroup `hc` runs in, or
//! the v1 `pids` and `memory` hierarchies writable — each run gets one of
//! its own at a time (`hc-ENGINE-N` under `hc`'s, from the engine's
//! [`Pool`]), its `pids.max` and memory limit written before the run
//! starts; the run's trampoline is forked there by the group's stem (or
//! joins it first thing), so everything the program starts is in it. The
//! engine reads afterwards whether a bound was hit (the `pids` controller's
//! `max` events, the memory controller's OOM kills), says so in the run's
//! result, and gives the group back for the next run. Elsewhere the init sets `RLIMIT_NPROC`
//! (counted per user namespace, so per run for a person who is not root)
//! and `RLIMIT_DATA` on the program.

use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// A run's processes when configuration says nothing: what a build needs.
pub const DEFAULT_PROCESSES: u64 = 4096;

/// The bounds of one run, as its policy carries them.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Bounds {
    /// Processes (and threads) at once; 0: unbounded.
    pub processes: u64,
    /// Bytes of memory; 0: unbounded.
    pub memory: u64,
    /// The run's own control groups, made by the engine (each joined by
    /// the trampoline); empty: bounded by resource limits instead.
    #[serde(default)]
    pub cgroups: Vec<PathBuf>,
}

/// A run's memory when configuration says nothing: half the machine's.
pub fn default_memory() -> u64 {
    let total = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|m| {
            m.lines()
                .find_map(|l| l.strip_prefix("MemTotal:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        })
        .map_or(0, |kb| kb * 1024);
    total / 2
}

/// Reads `512MiB`, `2GiB`, `1G`, `300M`, `4096K` or a plain number of
/// bytes.
pub fn parse_size(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (digits, unit) = t.split_at(split);
    let n: u64 = digits
        .parse()
        .map_err(|_| format!("`{text}` is not a size; write bytes or e.g. `512MiB`, `2GiB`"))?;
    let shift = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kb" | "kib" => 10,
        "m" | "mb" | "mib" => 20,
        "g" | "gb" | "gib" => 30,
        "t" | "tb" | "tib" => 40,
        other => {
            return Err(format!(
                "`{other}` in `{text}` is not a unit; use KiB, MiB or GiB"
            ));
        }
    };
    n.checked_mul(1 << shift)
        .ok_or_else(|| format!("`{text}` is too large"))
}

/// A size as a person reads it.
pub fn show_size(bytes: u64) -> String {
    match bytes {
        0 => "unbounded".into(),
        b if b % (1 << 30) == 0 => format!("{} GiB", b >> 30),
        b if b >= 1 << 30 => format!("{:.1} GiB", b as f64 / (1u64 << 30) as f64),
        b => format!("{} MiB", b >> 20),
    }
}

/// Where runs' control groups are made on this machine.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Cgroups {
    /// cgroup v2: the directory (hc's own group) runs' groups go in.
    V2(PathBuf),
    /// cgroup v1: hc's group in the `pids` and the `memory` hierarchies.
    V1 {
        /// In the `pids` hierarchy.
        pids: PathBuf,
        /// In the `memory` hierarchy.
        memory: PathBuf,
    },
}

impl Cgroups {
    /// What this machine offers, tried by making (and removing) a group:
    /// `None` when runs are bounded by resource limits instead.
    pub fn detect() -> Option<Cgroups> {
        let found = Cgroups::find()?;
        let probe = format!("hc-probe{}-0", std::process::id());
        let made = found.dirs(&probe);
        let ok = made.iter().all(|d| std::fs::create_dir(d).is_ok());
        for dir in &made {
            let _ = std::fs::remove_dir(dir);
        }
        ok.then_some(found)
    }

    /// Where groups would go on this machine, untried (a [`Pool`] tries
    /// by making its first).
    pub fn find() -> Option<Cgroups> {
        let mounts = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
        let own = std::fs::read_to_string("/proc/self/cgroup").ok()?;
        v2(&mounts, &own).or_else(|| v1(&mounts, &own))
    }

    /// The mechanism, in words (for `hc config`).
    pub fn describe(found: Option<&Cgroups>) -> &'static str {
        match found {
            Some(Cgroups::V2(_)) => "a cgroup v2 group per run",
            Some(Cgroups::V1 { .. }) => "a cgroup v1 pids and memory group per run",
            None => "resource limits (RLIMIT_NPROC, RLIMIT_DATA) per run",
        }
    }

    /// Removes the groups engines that are gone left (a `hc` killed
    /// before it could): every `hc-ENGINE-N` group whose engine `gone`
    /// says is gone (and any other `hc-` group), when empty — one in use
    /// is left as it is.
    pub fn sweep(&self, gone: impl Fn(&str) -> bool) {
        let bases = match self {
            Cgroups::V2(dir) => vec![dir],
            Cgroups::V1 { pids, memory } => vec![pids, memory],
        };
        for base in bases {
            let Ok(entries) = std::fs::read_dir(base) else {
                continue;
            };
            for entry in entries.flatten() {
                let name = entry.file_name().to_string_lossy().into_owned();
                let Some(rest) = name.strip_prefix("hc-") else {
                    continue;
                };
                let engine = rest.rsplit_once('-').map(|(e, _)| e);
                if engine.is_none_or(&gone) {
                    let _ = std::fs::remove_dir(entry.path());
                }
            }
        }
    }

    fn dirs(&self, name: &str) -> Vec<PathBuf> {
        match self {
            Cgroups::V2(dir) => vec![dir.join(name)],
            Cgroups::V1 { pids, memory } => vec![pids.join(name), memory.join(name)],
        }
    }

    /// Makes run `name`'s groups with `bounds`' limits: the directories to
    /// join (and, after the run, to read and remove).
    pub fn make(&self, name: &str, bounds: &Bounds) -> std::io::Result<Vec<PathBuf>> {
        let dirs = self.dirs(name);
        let made = dirs
            .iter()
            .try_for_each(std::fs::create_dir)
            .and_then(|()| self.limit(&dirs, bounds));
        match made {
            Ok(()) => Ok(dirs),
            Err(e) => {
                remove(&dirs);
                Err(e)
            }
        }
    }

    /// Writes `bounds`' limits in groups `dirs`.
    fn limit(&self, dirs: &[PathBuf], bounds: &Bounds) -> std::io::Result<()> {
        let limit = |n: u64| {
            if n == 0 {
                "max".to_owned()
            } else {
                n.to_string()
            }
        };
        // one process more than the run's: the group's stem
        let processes = limit(
            bounds
                .processes
                .saturating_add(u64::from(bounds.processes > 0)),
        );
        match self {
            Cgroups::V2(_) => {
                std::fs::write(dirs[0].join("pids.max"), &processes)?;
                std::fs::write(dirs[0].join("memory.max"), limit(bounds.memory))?;
                // no swap beyond it: the bound is the memory it may hold
                let _ = std::fs::write(dirs[0].join("memory.swap.max"), "0");
            }
            Cgroups::V1 { .. } => {
                std::fs::write(dirs[0].join("pids.max"), &processes)?;
                let bytes = limit(bounds.memory).replace("max", "-1");
                let memory = dirs[1].join("memory.limit_in_bytes");
                // The swap limit (absent where swap is not counted) may not
                // be below the memory limit: raising, the memory limit is
                // written again once the swap limit is.
                let first = std::fs::write(&memory, &bytes);
                let _ = std::fs::write(dirs[1].join("memory.memsw.limit_in_bytes"), &bytes);
                if first.is_err() {
                    std::fs::write(&memory, &bytes)?;
                }
            }
        }
        Ok(())
    }
}

/// One run's groups, as the engine keeps them: their directories, the
/// limits written there, the counters of hits seen so far, and the stem
/// living there. A group is used again by the next run once its run is
/// gone: making and removing a memory group costs more than the run it
/// bounds, and moving a process into one costs the kernel a grace period
/// (several milliseconds in which nothing on the machine forks) — paid
/// once, by the group's stem, whose forks are born there.
#[derive(Debug)]
pub struct Group {
    /// The directories (one per hierarchy).
    pub dirs: Vec<PathBuf>,
    /// The zygote's stem in these groups (see
    /// [`Zygote::stem`](crate::Zygote::stem)), once one is forked.
    pub stem: Option<crate::Zygote>,
    limits: (u64, u64),
    /// Bound hits counted before this run: (`pids` at its max, OOM kills).
    seen: (u64, u64),
}

/// The groups an engine made for its runs: one taken per run, given back
/// when the run is done, removed when the engine is.
pub struct Pool {
    cgroups: Cgroups,
    /// `hc-ENGINE-`: whose groups these are.
    prefix: String,
    made: std::sync::atomic::AtomicU64,
    idle: std::sync::Mutex<Vec<Group>>,
}

impl Pool {
    /// The groups of engine `engine`, made under `cgroups`, the first
    /// made now with `first`'s limits; `None` when it cannot be (runs are
    /// then bounded by resource limits).
    pub fn new(cgroups: Cgroups, engine: &str, first: &Bounds) -> Option<Pool> {
        let pool = Pool {
            cgroups,
            prefix: format!("hc-{engine}-"),
            made: std::sync::atomic::AtomicU64::new(0),
            idle: std::sync::Mutex::default(),
        };
        let group = pool.make(first).ok()?;
        pool.lock().push(group);
        Some(pool)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Group>> {
        self.idle
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn make(&self, bounds: &Bounds) -> std::io::Result<Group> {
        let n = self.made.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dirs = self.cgroups.make(&format!("{}{n}", self.prefix), bounds)?;
        Ok(Group {
            dirs,
            stem: None,
            limits: (bounds.processes, bounds.memory),
            seen: (0, 0),
        })
    }

    /// A group for a run under `bounds`: an idle one (one with a stem
    /// first, one with the same limits next; its limits written anew when
    /// they differ), else a new one.
    pub fn take(&self, bounds: &Bounds) -> std::io::Result<Group> {
        let limits = (bounds.processes, bounds.memory);
        let reused = {
            let mut idle = self.lock();
            let rank = |g: &Group| (g.stem.is_some(), g.limits == limits);
            let best = (0..idle.len()).max_by_key(|&i| rank(&idle[i]));
            best.map(|i| idle.swap_remove(i))
        };
        if let Some(mut group) = reused.filter(|g| g.dirs.iter().all(|d| d.is_dir())) {
            if group.limits != limits {
                self.cgroups.limit(&group.dirs, bounds)?;
                group.limits = limits;
            }
            return Ok(group);
        }
        self.make(bounds)
    }

    /// Does `prepare` to an idle group (one with `bounds`' limits), the
    /// pool held meanwhile: a run that needs a group then waits for this
    /// one rather than making its own.
    pub fn prepare_idle(&self, bounds: &Bounds, prepare: impl FnOnce(&mut Group)) {
        let limits = (bounds.processes, bounds.memory);
        let mut idle = self.lock();
        if let Some(group) = idle.iter_mut().find(|g| g.limits == limits) {
            prepare(group);
        }
    }

    /// A run is done with `group`: kept for the next when nothing but its
    /// stem is left there, else removed (as soon as it empties).
    pub fn give_back(&self, group: Group) {
        let stem = group.stem.as_ref().map(|s| s.pid().to_string());
        let empty = group.dirs.iter().all(|d| {
            std::fs::read_to_string(d.join("cgroup.procs"))
                .is_ok_and(|p| p.split_whitespace().all(|pid| Some(pid) == stem.as_deref()))
        });
        if empty {
            let mut idle = self.lock();
            if idle.len() < MAX_IDLE {
                idle.push(group);
                return;
            }
        }
        discard(group);
    }
}

impl Drop for Pool {
    fn drop(&mut self) {
        let idle = std::mem::take(
            self.idle
                .get_mut()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        );
        // every stem told to end first, then each group removed once empty
        let dirs: Vec<Vec<PathBuf>> = idle.into_iter().map(|g| g.dirs).collect();
        for group in dirs {
            remove(&group);
        }
    }
}

/// Ends `group`'s stem and removes the group (once empty).
fn discard(group: Group) {
    drop(group.stem);
    remove(&group.dirs);
}

/// Idle groups an engine keeps at most (as many as runs it had at once,
/// up to this).
const MAX_IDLE: usize = 32;

/// The v2 group hc runs in, when `pids` and `memory` may be enabled for
/// groups made under it.
fn v2(mounts: &str, own: &str) -> Option<Cgroups> {
    let path = own.lines().find_map(|l| l.strip_prefix("0::"))?;
    let mount = mounts
        .lines()
        .find(|l| {
            l.split(" - ")
                .nth(1)
                .is_some_and(|r| r.starts_with("cgroup2 "))
        })?
        .split(' ')
        .nth(4)?;
    let dir = Path::new(mount).join(path.trim_start_matches('/'));
    let enabled = std::fs::read_to_string(dir.join("cgroup.subtree_control")).ok()?;
    let has = |c: &str| enabled.split_whitespace().any(|w| w == c);
    (has("pids") && has("memory")).then_some(Cgroups::V2(dir))
}

/// hc's groups in the v1 `pids` and `memory` hierarchies.
fn v1(mounts: &str, own: &str) -> Option<Cgroups> {
    let hierarchy = |controller: &str| -> Option<PathBuf> {
        let mount = mounts.lines().find(|l| {
            l.split(" - ").nth(1).is_some_and(|r| {
                r.starts_with("cgroup ")
                    && r.rsplit(' ')
                        .next()
                        .is_some_and(|o| o.split(',').any(|x| x == controller))
            })
        })?;
        let at = mount.split(' ').nth(4)?;
        let path = own.lines().find_map(|l| {
            let mut parts = l.splitn(3, ':');
            let (_, names, path) = (parts.next()?, parts.next()?, parts.next()?);
            names.split(',').any(|n| n == controller).then_some(path)
        })?;
        Some(Path::new(at).join(path.trim_start_matches('/')))
    };
    Some(Cgroups::V1 {
        pids: hierarchy("pids")?,
        memory: hierarchy("memory")?,
    })
}

/// Which bound the run just done in `group` hit, in words: the groups'
/// counters against what they had counted before it.
pub fn hit(group: &mut Group) -> Option<String> {
    let read = |dir: &Path, file: &str| std::fs::read_to_string(dir.join(file)).ok();
    let count = |text: &str, key: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(key))
            .and_then(|v| v.trim().parse::<u64>().ok())
            .unwrap_or(0)
    };
    let mut now = (0, 0);
    for dir in &group.dirs {
        if let Some(events) = read(dir, "pids.events") {
            now.0 += count(&events, "max ");
        }
        now.1 += read(dir, "memory.events")
            .or_else(|| read(dir, "memory.oom_control"))
            .map_or(0, |e| count(&e, "oom_kill "));
    }
    let before = std::mem::replace(&mut group.seen, now);
    let (processes, memory) = group.limits;
    if now.0 > before.0 {
        return Some(format!(
            "the run reached its bound of {processes} processes (and threads) at once: what \
             it started beyond that could not start. If a build needs more, raise \
             `processes` under [programs.NAME] in your configuration"
        ));
    }
    if now.1 > before.1 {
        return Some(format!(
            "the run reached its memory bound of {}: the kernel ended a process of it. If \
             it needs more, raise `memory` under [programs.NAME] in your configuration",
            show_size(memory)
        ));
    }
    None
}

/// Removes a run's groups (each once empty; a group a process still holds
/// — a stem ending, a run's last process being reaped — is tried again
/// for a moment).
pub fn remove(dirs: &[PathBuf]) {
    for dir in dirs {
        for _ in 0..500 {
            match std::fs::remove_dir(dir) {
                Err(e) if e.raw_os_error() == Some(libc::EBUSY) => {
                    std::thread::sleep(std::time::Duration::from_millis(1));
                }
                _ => break,
            }
        }
    }
}

/// In the trampoline, first thing (or before its run, when it waits for
/// one): joins the run's groups `dirs` (so everything it starts is in
/// them). False when it could not.
pub(crate) fn join(dirs: &[PathBuf]) -> bool {
    dirs.iter()
        .all(|dir| std::fs::write(dir.join("cgroup.procs"), "0").is_ok())
}

/// In the init, before the program starts, when no group bounds the run:
/// the resource limits instead.
pub(crate) fn limit(bounds: &Bounds) {
    let set = |resource, value: u64| {
        if value > 0 {
            let _ = nix::sys::resource::setrlimit(resource, value, value);
        }
    };
    set(nix::sys::resource::Resource::RLIMIT_NPROC, bounds.processes);
    set(nix::sys::resource::Resource::RLIMIT_DATA, bounds.memory);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_as_people_write_them() {
        assert_eq!(parse_size("512MiB"), Ok(512 << 20));
        assert_eq!(parse_size("2GiB"), Ok(2 << 30));
        assert_eq!(parse_size("1G"), Ok(1 << 30));
        assert_eq!(parse_size("4096"), Ok(4096));
        assert!(parse_size("lots").is_err());
        assert!(parse_size("3 parsecs").is_err());
        assert_eq!(show_size(2 << 30), "2 GiB");
        assert_eq!(show_size(256 << 20), "256 MiB");
    }

    #[test]
    fn the_groups_are_found_in_either_layout() {
        let v1_mounts = "35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n\
                         39 31 0:36 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids\n";
        let own = "8:pids:/\n4:memory:/a/b\n0::/\n";
        assert_eq!(
            v1(v1_mounts, own),
            Some(Cgroups::V1 {
                pids: "/sys/fs/cgroup/pids".into(),
                memory: "/sys/fs/cgroup/memory/a/b".into(),
            })
        );
        assert_eq!(v1("", own), None);
        assert_eq!(v2("", "0::/x\n"), None);
    }
}
