//! The trampoline that contains a program (`hc __contain POLICY`), run as a
//! fresh single-threaded process between the engine and the program:
//!
//! 1. new mount and PID namespaces and, without `network`, a network
//!    namespace with nothing in it — and a user namespace when not root —
//!    where the kernel allows. Creating a network namespace is the dearest
//!    step (0.5–0.9 ms here, timed by hand), so when Landlock can scope abstract Unix sockets
//!    (ABI 6) the engine keeps one empty network namespace, held by
//!    `hc __contain --hold-netns`, and every run joins it: no program can
//!    reach another's sockets there (seccomp refuses every socket but Unix
//!    stream ones and refuses `connect` and addressed `sendto` outright, so
//!    a socket file outside — the host's docker or ssh-agent socket, which
//!    Landlock's file rules do not cover — is out of reach; Landlock refuses
//!    abstract Unix sockets made outside the program's own sandbox);
//! 2. in the mount namespace, `.git` and `.hermitcrab` inside writable roots
//!    bind-mounted read-only (Landlock only grants, it cannot carve out);
//! 3. a fork: the child is PID 1 of the new namespace, an init that applies
//!    Landlock (reads and writes as declared, plus its temp dir) and seccomp
//!    (no ptrace and other escape routes; no non-Unix sockets without
//!    `network`), runs the program, reaps orphans, and reports how the
//!    program ended. When it dies, the kernel kills all left in the namespace.
//! 4. the parent relays that ending: the same exit code, or the same signal.

use crate::carried::{self, Carrier};
use crate::error::{ContainError, sys};
use crate::policy::{Policy, SYSTEM_READ};
use landlock::{
    ABI, Access, AccessFs, CompatLevel, Compatible, PathBeneath, PathFd, Ruleset, RulesetAttr,
    RulesetCreatedAttr, RulesetStatus, Scope,
};
use nix::sched::CloneFlags;
use nix::sys::wait::{WaitStatus, waitpid};
use nix::unistd::{ForkResult, Pid};
use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule,
};
use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::os::fd::OwnedFd;
use std::path::Path;

/// The Landlock ABI the rules are written for (kernels with less get what
/// they support; a kernel with none is refused before any spawn).
const LANDLOCK_ABI: ABI = ABI::V5;

/// Whether this kernel enforces Landlock (a ruleset is created, never applied).
pub fn landlock_available() -> bool {
    landlock_creates(|r| r.handle_access(AccessFs::from_all(ABI::V1)))
}

/// Whether this kernel's Landlock can keep a program from abstract Unix
/// sockets made outside its sandbox (ABI 6), which is what makes one
/// network namespace safe to share between contained programs.
pub fn landlock_scopes_available() -> bool {
    landlock_creates(|r| {
        r.handle_access(AccessFs::from_all(ABI::V1))?
            .scope(Scope::AbstractUnixSocket)
    })
}

/// Whether the kernel creates the ruleset `build` makes, exactly as asked
/// (nothing dropped as unsupported).
fn landlock_creates(
    build: impl FnOnce(Ruleset) -> Result<Ruleset, landlock::RulesetError>,
) -> bool {
    build(Ruleset::default().set_compatibility(CompatLevel::HardRequirement))
        .and_then(|r| r.create())
        .is_ok()
}

/// The argument that makes the trampoline hold the shared network
/// namespace instead of running a program.
pub const HOLD_NETNS: &str = "--hold-netns";

/// Contains and runs the program `policy` names; the exit status.
/// `joined`: this trampoline is in the run's groups already (it waited
/// there for the run).
pub(crate) fn contain_policy(policy: &Policy, carrier: Option<&Carrier>, joined: bool) -> u8 {
    match contain(policy, carrier, joined) {
        Ok(code) => code,
        Err(e) => crate::failed::fail(&e.to_string()),
    }
}

/// Makes an empty network namespace (in a user namespace of its own when not
/// root), says `ready` on stdout, and keeps it until stdin closes — that is,
/// until the engine that started it is gone.
pub(crate) fn hold_netns() -> u8 {
    let made =
        own_user_namespace().and_then(|()| nix::sched::unshare(CloneFlags::CLONE_NEWNET).ok());
    if made.is_none() {
        return crate::failed::fail("cannot make a network namespace here");
    }
    let mut out = std::io::stdout();
    if writeln!(out, "ready").and_then(|()| out.flush()).is_err() {
        return crate::failed::CONTAIN_FAILED;
    }
    let mut sink = [0u8; 64];
    let mut stdin = std::io::stdin();
    while matches!(stdin.read(&mut sink), Ok(n) if n > 0) {}
    0
}

fn contain(policy: &Policy, carrier: Option<&Carrier>, joined: bool) -> Result<u8, ContainError> {
    // First: everything this trampoline starts is in the run's groups.
    let groups = &policy.bounds.cgroups;
    let grouped = !groups.is_empty() && (joined || crate::bounds::join(groups));
    let namespaces = enter_namespaces(policy);
    if namespaces.is_none() && !policy.protect.is_empty() {
        return Err(ContainError::NoMountNamespace {
            dirs: policy.protect.clone(),
        });
    }
    if namespaces.is_some() {
        protect(policy)?;
    }
    let (from_init, to_parent) = nix::unistd::pipe().map_err(sys("pipe"))?;
    // SAFETY: this process is the trampoline — single-threaded, started
    // fresh by the engine — so the child may do anything after fork.
    #[allow(unsafe_code)]
    let forked = unsafe { nix::unistd::fork() }.map_err(sys("fork"))?;
    match forked {
        ForkResult::Child => {
            drop(from_init);
            if !grouped {
                crate::bounds::limit(&policy.bounds);
            }
            let code = init(policy, namespaces.is_some(), to_parent, carrier);
            std::process::exit(code);
        }
        ForkResult::Parent { child } => {
            drop(to_parent);
            relay(child, from_init)
        }
    }
}

/// Unshares what it can; `Some` when a mount namespace (and so the
/// protections) is in place.
fn enter_namespaces(policy: &Policy) -> Option<()> {
    let mut flags = CloneFlags::CLONE_NEWNS | CloneFlags::CLONE_NEWPID;
    let joined = !policy.network && policy.shared_net.is_some_and(join_network);
    if !joined {
        own_user_namespace()?;
        if !policy.network {
            flags |= CloneFlags::CLONE_NEWNET;
        }
    }
    nix::sched::unshare(flags)
        .or_else(|_| nix::sched::unshare(CloneFlags::CLONE_NEWNS))
        .ok()
}

/// A user namespace of its own, mapping this user to itself, unless root
/// (who needs none).
fn own_user_namespace() -> Option<()> {
    if nix::unistd::geteuid().is_root() {
        return Some(());
    }
    let (uid, gid) = (nix::unistd::getuid(), nix::unistd::getgid());
    nix::sched::unshare(CloneFlags::CLONE_NEWUSER).ok()?;
    std::fs::write("/proc/self/setgroups", "deny").ok()?;
    std::fs::write("/proc/self/uid_map", format!("{uid} {uid} 1")).ok()?;
    std::fs::write("/proc/self/gid_map", format!("{gid} {gid} 1")).ok()?;
    Some(())
}

/// Joins the shared network namespace held by process `holder` (and, when
/// not root, the user namespace that owns it). False if it cannot, and the
/// run makes its own instead.
fn join_network(holder: u32) -> bool {
    let join = |kind: &str, flag: CloneFlags| {
        std::fs::File::open(format!("/proc/{holder}/ns/{kind}"))
            .ok()
            .and_then(|ns| nix::sched::setns(ns, flag).ok())
    };
    let user =
        nix::unistd::geteuid().is_root() || join("user", CloneFlags::CLONE_NEWUSER).is_some();
    user && join("net", CloneFlags::CLONE_NEWNET).is_some()
}

/// Bind-mounts each protected directory read-only onto itself.
fn protect(policy: &Policy) -> Result<(), ContainError> {
    use nix::mount::{MsFlags, mount};
    let none: Option<&str> = None;
    mount(none, "/", none, MsFlags::MS_REC | MsFlags::MS_PRIVATE, none)
        .map_err(sys("private mounts"))?;
    for dir in &policy.protect {
        mount(
            Some(dir),
            dir,
            none,
            MsFlags::MS_BIND | MsFlags::MS_REC,
            none,
        )
        .and_then(|()| {
            mount(
                none,
                dir,
                none,
                MsFlags::MS_BIND | MsFlags::MS_REMOUNT | MsFlags::MS_RDONLY,
                none,
            )
        })
        .map_err(|errno| ContainError::ReadOnly {
            dir: dir.clone(),
            errno,
        })?;
    }
    Ok(())
}

/// PID 1 of the namespace: sandbox, run, reap, report. Returns the exit code.
fn init(policy: &Policy, own_mounts: bool, report: OwnedFd, carrier: Option<&Carrier>) -> i32 {
    let mut report = std::fs::File::from(report);
    let _ = nix::sys::prctl::set_pdeathsig(nix::sys::signal::Signal::SIGKILL);
    if own_mounts {
        // A /proc that shows this namespace's processes only (best effort).
        let none: Option<&str> = None;
        let _ = nix::mount::mount(
            Some("proc"),
            "/proc",
            Some("proc"),
            nix::mount::MsFlags::empty(),
            none,
        );
    }
    let outcome = landlock(policy)
        .and_then(|()| seccomp(policy))
        .and_then(|()| start(policy, carrier));
    let child = match outcome {
        Ok(child) => child,
        Err(e) => {
            let _ = write!(report, "fail {e}");
            return 0;
        }
    };
    loop {
        match waitpid(None, None) {
            Ok(WaitStatus::Exited(pid, code)) if pid == child => {
                let _ = write!(report, "exit {code}");
                return 0;
            }
            Ok(WaitStatus::Signaled(pid, signal, _)) if pid == child => {
                let _ = write!(report, "signal {}", signal as i32);
                return 0;
            }
            Ok(_) => continue, // an orphan reaped
            Err(nix::errno::Errno::EINTR) => continue,
            Err(e) => {
                let _ = write!(report, "fail waiting for the program: {e}");
                return 0;
            }
        }
    }
}

/// Starts the program, sandboxed already: forked, when this executable
/// carries it, else exec'd.
fn start(policy: &Policy, carrier: Option<&Carrier>) -> Result<Pid, ContainError> {
    if let Some(run) = carrier.and_then(|c| c.entry(policy)) {
        // SAFETY: the init is single-threaded (a fork of the trampoline).
        #[allow(unsafe_code)]
        let forked = unsafe { nix::unistd::fork() }.map_err(sys("fork"))?;
        return match forked {
            ForkResult::Child => {
                std::process::exit(i32::from(carried::become_program(policy, run)))
            }
            ForkResult::Parent { child } => Ok(child),
        };
    }
    std::process::Command::new(&policy.program)
        .args(&policy.args)
        .env_clear()
        .envs(policy.env.iter().map(|(k, v)| (k, v)))
        .current_dir(&policy.cwd)
        .spawn()
        .map(|child| Pid::from_raw(child.id() as i32))
        .map_err(|source| ContainError::Start {
            program: policy.program.clone(),
            source,
        })
}

/// The trampoline's own ending mirrors the program's.
fn relay(init: Pid, from_init: OwnedFd) -> Result<u8, ContainError> {
    let mut report = String::new();
    let _ = std::fs::File::from(from_init).read_to_string(&mut report);
    let _ = waitpid(init, None);
    let mut words = report.splitn(2, ' ');
    match (words.next(), words.next()) {
        (Some("exit"), Some(code)) => Ok(code.trim().parse::<u8>().unwrap_or(1)),
        (Some("signal"), Some(number)) => {
            let number: i32 = number.trim().parse().unwrap_or(libc::SIGKILL);
            if let Ok(signal) = nix::sys::signal::Signal::try_from(number) {
                let _ = std::io::stderr().flush();
                let _ = nix::sys::signal::raise(signal);
            }
            Ok(128u8.saturating_add(number as u8))
        }
        (Some("fail"), Some(why)) => Err(ContainError::Init(why.to_owned())),
        _ => Err(ContainError::Init(
            "the program's init ended without a report".into(),
        )),
    }
}

/// Landlock: reads as declared (or everywhere), writes to the writable
/// roots, the temp dir and the null devices.
fn landlock(policy: &Policy) -> Result<(), ContainError> {
    let abi = LANDLOCK_ABI;
    let read = AccessFs::from_read(abi);
    let all = AccessFs::from_all(abi);
    let err = |e: &dyn std::fmt::Display| ContainError::Landlock(e.to_string());
    let mut rules: Vec<(std::path::PathBuf, landlock::BitFlags<AccessFs>)> = Vec::new();
    match &policy.read {
        None => rules.push(("/".into(), read)),
        Some(paths) => {
            for p in SYSTEM_READ
                .iter()
                .map(Path::new)
                .chain(paths.iter().map(|p| p.as_path()))
            {
                rules.push((p.to_path_buf(), read));
            }
        }
    }
    for p in &policy.write {
        rules.push((p.clone(), all));
    }
    for dev in ["/dev/null", "/dev/zero", "/dev/full", "/dev/tty"] {
        rules.push((dev.into(), AccessFs::from_file(abi)));
    }
    let mut ruleset = Ruleset::default().handle_access(all).map_err(|e| err(&e))?;
    if !policy.network {
        // Without the network, no abstract Unix socket made outside this
        // sandbox (the host's, or another program's) is reachable.
        ruleset = ruleset
            .scope(Scope::AbstractUnixSocket)
            .map_err(|e| err(&e))?;
    }
    let mut ruleset = ruleset.create().map_err(|e| err(&e))?;
    for (path, access) in rules {
        let Ok(fd) = PathFd::new(&path) else { continue };
        let access = if path.is_dir() {
            access
        } else {
            access & AccessFs::from_file(abi)
        };
        ruleset = ruleset
            .add_rule(PathBeneath::new(fd, access))
            .map_err(|e| err(&e))?;
    }
    // the temp dir opened once, never through a link, and only when it is
    // this user's alone: the rule binds the directory checked
    let tmp = private_dir(&policy.tmp)?;
    ruleset = ruleset
        .add_rule(PathBeneath::new(tmp, all))
        .map_err(|e| err(&e))?;
    let status = ruleset.restrict_self().map_err(|e| err(&e))?;
    if status.ruleset == RulesetStatus::NotEnforced {
        return Err(ContainError::LandlockNotEnforced);
    }
    Ok(())
}

/// `dir` opened without following a link, when it is a directory of this
/// user's that no one else can reach (mode 0700).
fn private_dir(dir: &Path) -> Result<std::os::fd::OwnedFd, ContainError> {
    use nix::fcntl::OFlag;
    let why = |what: String| ContainError::Init(format!("the temp dir {}: {what}", dir.display()));
    let fd = nix::fcntl::open(
        dir,
        OFlag::O_PATH | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC,
        nix::sys::stat::Mode::empty(),
    )
    .map_err(|e| why(format!("cannot open it ({e})")))?;
    let stat = nix::sys::stat::fstat(&fd).map_err(|e| why(e.to_string()))?;
    if stat.st_uid != nix::unistd::getuid().as_raw() || stat.st_mode & 0o077 != 0 {
        return Err(why(format!(
            "it is not this user's alone (uid {}, mode {:o})",
            stat.st_uid,
            stat.st_mode & 0o7777
        )));
    }
    Ok(fd)
}

/// Syscalls no contained program may make: tracing and reading other
/// processes, loading code into the kernel, changing mounts and namespaces,
/// and io_uring (which would bypass the rest).
const DENIED: &[libc::c_long] = &[
    libc::SYS_ptrace,
    libc::SYS_process_vm_readv,
    libc::SYS_process_vm_writev,
    libc::SYS_kexec_load,
    libc::SYS_init_module,
    libc::SYS_finit_module,
    libc::SYS_delete_module,
    libc::SYS_bpf,
    libc::SYS_perf_event_open,
    libc::SYS_keyctl,
    libc::SYS_add_key,
    libc::SYS_request_key,
    libc::SYS_mount,
    libc::SYS_umount2,
    libc::SYS_pivot_root,
    libc::SYS_chroot,
    libc::SYS_setns,
    libc::SYS_unshare,
    libc::SYS_userfaultfd,
    libc::SYS_open_by_handle_at,
    libc::SYS_io_uring_setup,
    libc::SYS_io_uring_enter,
    libc::SYS_io_uring_register,
    libc::SYS_reboot,
    libc::SYS_swapon,
    libc::SYS_swapoff,
    libc::SYS_acct,
];

/// What a program without `network` may not do with sockets: make any
/// but a Unix stream socket (no datagram socket can name a receiver
/// then), connect anything (a Unix socket file outside — a container
/// runtime's, an ssh-agent's, D-Bus — would be a way out), or send to a
/// named address. Socket pairs, which connect nothing, still work.
fn offline_rules() -> Result<Vec<(i64, Vec<SeccompRule>)>, seccompiler::BackendError> {
    let arg = |n, op, v| SeccompCondition::new(n, SeccompCmpArgLen::Dword, op, v);
    let mut socket = vec![SeccompRule::new(vec![arg(
        0,
        SeccompCmpOp::Ne,
        libc::AF_UNIX as u64,
    )?])?];
    for kind in [
        libc::SOCK_DGRAM,
        libc::SOCK_RAW,
        libc::SOCK_RDM,
        libc::SOCK_SEQPACKET,
    ] {
        socket.push(SeccompRule::new(vec![arg(
            1,
            SeccompCmpOp::MaskedEq(0xf),
            kind as u64,
        )?])?);
    }
    let named = SeccompCondition::new(4, SeccompCmpArgLen::Qword, SeccompCmpOp::Ne, 0)?;
    Ok(vec![
        (libc::SYS_socket, socket),
        (libc::SYS_connect, Vec::new()),
        (libc::SYS_sendto, vec![SeccompRule::new(vec![named])?]),
    ])
}

fn seccomp(policy: &Policy) -> Result<(), ContainError> {
    let err = |e: &dyn std::fmt::Display| ContainError::Seccomp(e.to_string());
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> =
        DENIED.iter().map(|s| (*s, Vec::new())).collect();
    if !policy.network {
        for (syscall, rules_of) in offline_rules().map_err(|e| err(&e))? {
            rules.insert(syscall, rules_of);
        }
    }
    let arch = std::env::consts::ARCH.try_into().map_err(|e| err(&e))?;
    let filter = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EPERM as u32),
        arch,
    )
    .map_err(|e| err(&e))?;
    let program: BpfProgram = filter
        .try_into()
        .map_err(|e: seccompiler::BackendError| err(&e))?;
    seccompiler::apply_filter(&program).map_err(|e| err(&e))
}
