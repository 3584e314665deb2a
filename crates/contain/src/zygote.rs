//! The pre-forked trampoline: one small single-threaded process the engine
//! starts once (`hc-contain --zygote`), which forks a trampoline for each
//! contained run instead of the engine spawning and exec'ing one — an exec
//! and a program start-up fewer on every tool call.
//!
//! The engine and the zygote talk over a `SOCK_SEQPACKET` socket pair (the
//! zygote's stdin). A request is a line naming it, then its body:
//!
//! * `run`, then a [`Policy`] as JSON, with three file descriptors (the
//!   program's stdin, stdout and stderr) attached: the answer is `pid N`
//!   (the trampoline, leader of its own process group) or `fail WHY`.
//! * `prepare`, then a JSON list of control group directories: a *stem* is
//!   forked — a zygote of its own that moves into those groups once and
//!   serves `run` there, so every trampoline it forks is born in them
//!   (moving a process into a group costs the kernel a grace period,
//!   several milliseconds in which nothing on the machine forks; being
//!   born there costs nothing). The answer is `stem N`, the engine's end
//!   of the stem's own socket attached.
//!
//! When a trampoline (or stem) ends its parent reaps it and reports
//! `exit N STATUS` (the raw wait status). A zygote or stem ends when the
//! engine closes its end.

use crate::carried::Carrier;
use crate::error::{ContainError, sys};
use crate::policy::Policy;
use nix::sys::signal::{SigSet, SigmaskHow, Signal, sigprocmask};
use nix::sys::signalfd::{SfdFlags, SignalFd};
use nix::sys::socket::{
    AddressFamily, ControlMessage, ControlMessageOwned, MsgFlags, SockFlag, SockType, recvmsg,
    sendmsg, socketpair,
};
use nix::sys::wait::{WaitPidFlag, WaitStatus, waitpid};
use nix::unistd::{ForkResult, Pid};
use std::collections::HashMap;
use std::io::IoSliceMut;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Mutex, PoisonError};
use tokio::sync::oneshot;

/// The argument that makes the trampoline a zygote.
pub const ZYGOTE: &str = "--zygote";

/// The zygote's answer to a request, or why not.
type Answer = Result<Reply, String>;

/// What a request comes to.
enum Reply {
    /// A trampoline's pid and its status to come.
    Forked(u32, oneshot::Receiver<ExitStatus>),
    /// A stem's pid and the engine's end of its socket.
    Stem(u32, OwnedFd),
}

/// The largest request (a policy) the zygote reads.
const MAX_REQUEST: usize = 1 << 20;

// ---------------------------------------------------------------- zygote side

/// The zygote's `main`: serve fork requests on stdin until it closes.
pub(crate) fn zygote_main(carrier: Option<&Carrier>) -> u8 {
    // Stdin itself, not a copy: each fork puts its own there, so none
    // holds the engine's socket.
    match serve(std::io::stdin().as_fd(), carrier, &[]) {
        Ok(()) => 0,
        Err(why) => {
            eprintln!("hermitcrab containment zygote: {why}");
            crate::failed::CONTAIN_FAILED
        }
    }
}

/// Serves requests on `sock` until it closes; `joined`: the control
/// groups this process is in (a stem's), else none.
fn serve(
    sock: BorrowedFd<'_>,
    carrier: Option<&Carrier>,
    joined: &[PathBuf],
) -> Result<(), ContainError> {
    // SAFETY of what follows: this process is single-threaded (the zygote is
    // started fresh and starts no threads; a stem is its fork), so forking
    // it is sound.
    let mut chld = SigSet::empty();
    chld.add(Signal::SIGCHLD);
    sigprocmask(SigmaskHow::SIG_BLOCK, Some(&chld), None).map_err(sys("sigmask"))?;
    let sfd = SignalFd::with_flags(&chld, SfdFlags::SFD_CLOEXEC | SfdFlags::SFD_NONBLOCK)
        .map_err(sys("signalfd"))?;
    let mut buf = vec![0u8; MAX_REQUEST];
    let forks = Forks {
        blocked: &chld,
        carrier,
        joined,
    };
    loop {
        let mut fds = [
            nix::poll::PollFd::new(sock, nix::poll::PollFlags::POLLIN),
            nix::poll::PollFd::new(sfd.as_fd(), nix::poll::PollFlags::POLLIN),
        ];
        match nix::poll::poll(&mut fds, nix::poll::PollTimeout::NONE) {
            Err(nix::errno::Errno::EINTR) => continue,
            Err(e) => return Err(sys("poll")(e)),
            Ok(_) => {}
        }
        let readable = |f: &nix::poll::PollFd| f.revents().is_some_and(|r| !r.is_empty());
        let (request, children) = (readable(&fds[0]), readable(&fds[1]));
        if children {
            while sfd.read_signal().ok().flatten().is_some() {}
            reap(sock);
        }
        if request {
            let Some((len, stdio)) = receive(sock, &mut buf)? else {
                return Ok(()); // the engine is gone
            };
            let (answer, handed) = forks.answer(&buf[..len], stdio);
            // A policy carries its program's environment (a host's secrets
            // among it), and a carried program runs in a fork of this
            // process: no later fork may find an earlier request's bytes.
            buf[..len].fill(0);
            let _ = send(sock, answer.as_bytes(), handed.as_ref());
        }
    }
}

/// What every fork of this process starts from.
struct Forks<'a> {
    blocked: &'a SigSet,
    carrier: Option<&'a Carrier>,
    /// The control groups this process is in (so its forks are).
    joined: &'a [PathBuf],
}

impl Forks<'_> {
    /// One request, answered (and a descriptor handed with the answer).
    fn answer(&self, request: &[u8], stdio: Vec<OwnedFd>) -> (String, Option<OwnedFd>) {
        let Some(end) = request.iter().position(|&b| b == b'\n') else {
            return ("fail a request without its line".into(), None);
        };
        let (head, body) = (&request[..end], &request[end + 1..]);
        match head {
            b"run" => (self.trampoline(body, stdio), None),
            b"prepare" if self.joined.is_empty() => match self.stem(body) {
                Ok((pid, theirs)) => (format!("stem {pid}"), Some(theirs)),
                Err(why) => (format!("fail {why}"), None),
            },
            _ => (
                format!("fail an unknown request: {}", String::from_utf8_lossy(head)),
                None,
            ),
        }
    }

    /// Forks a stem: a process that joins the control groups `request`
    /// lists and serves requests there, on the socket whose other end is
    /// returned (with its pid).
    fn stem(&self, request: &[u8]) -> Result<(Pid, OwnedFd), ContainError> {
        let dirs: Vec<PathBuf> = serde_json::from_slice(request)
            .map_err(|e| ContainError::Request(format!("bad groups: {e}")))?;
        let (theirs, ours) = socketpair(
            AddressFamily::Unix,
            SockType::SeqPacket,
            None,
            SockFlag::SOCK_CLOEXEC,
        )
        .map_err(sys("socketpair"))?;
        // SAFETY: single-threaded process (see `serve`).
        #[allow(unsafe_code)]
        let forked = unsafe { nix::unistd::fork() }.map_err(sys("fork"))?;
        match forked {
            ForkResult::Child => {
                drop(theirs);
                let code = be_stem(ours.as_fd(), self.carrier, &dirs);
                std::process::exit(i32::from(code));
            }
            ForkResult::Parent { child } => Ok((child, theirs)),
        }
    }

    /// Forks a trampoline for the policy in `request` on `stdio`; the
    /// answer line.
    fn trampoline(&self, request: &[u8], stdio: Vec<OwnedFd>) -> String {
        let [stdin, stdout, stderr]: [OwnedFd; 3] = match stdio.try_into() {
            Ok(fds) => fds,
            Err(_) => return "fail a request carries exactly three descriptors".into(),
        };
        // SAFETY: single-threaded process (see `serve`).
        #[allow(unsafe_code)]
        let forked = unsafe { nix::unistd::fork() };
        match forked {
            Err(e) => format!("fail fork: {e}"),
            Ok(ForkResult::Child) => {
                let code = become_trampoline(request, [stdin, stdout, stderr], self);
                std::process::exit(i32::from(code));
            }
            Ok(ForkResult::Parent { child }) => {
                // Also from this side, so the engine can signal the group
                // as soon as it has the pid.
                let _ = nix::unistd::setpgid(child, child);
                format!("pid {child}")
            }
        }
    }
}

/// In a stem: joins `dirs` (the one move into a group it costs: every
/// trampoline it forks is born there), then serves on `sock`.
fn be_stem(sock: BorrowedFd<'_>, carrier: Option<&Carrier>, dirs: &[PathBuf]) -> u8 {
    // The engine's socket to the zygote is not a stem's to hold.
    match std::fs::File::open("/dev/null") {
        Ok(null) if nix::unistd::dup2_stdin(&null).is_ok() => {}
        _ => return crate::failed::CONTAIN_FAILED,
    }
    if !crate::bounds::join(dirs) {
        return crate::failed::CONTAIN_FAILED;
    }
    match serve(sock, carrier, dirs) {
        Ok(()) => 0,
        Err(why) => {
            eprintln!("hermitcrab containment stem: {why}");
            crate::failed::CONTAIN_FAILED
        }
    }
}

/// A request: its policy's length in the buffer (read as a policy only in
/// the fork, so this process never holds one parsed), and the program's
/// stdin, stdout and stderr.
type Request = (usize, Vec<OwnedFd>);

/// One request (or, engine side, one report). `None` when the other end
/// is closed.
fn receive(sock: BorrowedFd<'_>, buf: &mut [u8]) -> Result<Option<Request>, ContainError> {
    let mut space = nix::cmsg_space!([RawFd; 3]);
    let mut iov = [IoSliceMut::new(buf)];
    // A signal cannot interrupt it (SIGCHLD is blocked), but if one did, the
    // request is still there to read: never answer one that was not read.
    let msg = loop {
        match recvmsg::<()>(
            sock.as_raw_fd(),
            &mut iov,
            Some(&mut space),
            MsgFlags::MSG_CMSG_CLOEXEC,
        ) {
            Ok(msg) => break msg,
            Err(nix::errno::Errno::EINTR) => {}
            // the other end closed with reports still unread: gone too
            Err(nix::errno::Errno::ECONNRESET) => return Ok(None),
            Err(e) => return Err(sys("recvmsg")(e)),
        }
    };
    let mut fds = Vec::new();
    for cmsg in msg.cmsgs().map_err(sys("cmsgs"))? {
        if let ControlMessageOwned::ScmRights(raw) = cmsg {
            // SAFETY: the kernel just installed these descriptors in this
            // process for this message; nothing else owns them.
            #[allow(unsafe_code)]
            fds.extend(
                raw.into_iter()
                    .map(|fd| unsafe { OwnedFd::from_raw_fd(fd) }),
            );
        }
    }
    let len = msg.bytes;
    if len == 0 && fds.is_empty() {
        return Ok(None);
    }
    Ok(Some((len, fds)))
}

fn send(sock: BorrowedFd<'_>, bytes: &[u8], fd: Option<&OwnedFd>) -> nix::Result<usize> {
    let raw = fd.map(AsRawFd::as_raw_fd);
    let rights = raw.as_slice();
    let cmsgs = [ControlMessage::ScmRights(rights)];
    sendmsg::<()>(
        sock.as_raw_fd(),
        &[std::io::IoSlice::new(bytes)],
        if rights.is_empty() { &[] } else { &cmsgs },
        MsgFlags::MSG_NOSIGNAL,
        None,
    )
}

/// In the forked child: its own process group, the program's stdio, the
/// signal mask a program expects; then the policy read and applied.
fn become_trampoline(
    request: &[u8],
    [stdin, stdout, stderr]: [OwnedFd; 3],
    forks: &Forks<'_>,
) -> u8 {
    let _ = nix::unistd::setpgid(Pid::from_raw(0), Pid::from_raw(0));
    if nix::unistd::dup2_stdin(&stdin).is_err()
        || nix::unistd::dup2_stdout(&stdout).is_err()
        || nix::unistd::dup2_stderr(&stderr).is_err()
    {
        return crate::failed::CONTAIN_FAILED;
    }
    drop((stdin, stdout, stderr));
    let _ = sigprocmask(SigmaskHow::SIG_UNBLOCK, Some(forks.blocked), None);
    match serde_json::from_slice::<Policy>(request) {
        Ok(policy) => {
            // born in the run's groups when its stem forked it
            let joined = !forks.joined.is_empty() && forks.joined == policy.bounds.cgroups;
            crate::sandbox::contain_policy(&policy, forks.carrier, joined)
        }
        Err(e) => crate::failed::fail(&format!("bad policy: {e}")),
    }
}

/// Reaps every ended trampoline (or stem) and reports it.
fn reap(sock: BorrowedFd<'_>) {
    loop {
        let raw = match waitpid(None, Some(WaitPidFlag::WNOHANG)) {
            Ok(WaitStatus::Exited(pid, code)) => (pid, (code & 0xff) << 8),
            Ok(WaitStatus::Signaled(pid, signal, core)) => {
                (pid, signal as i32 | if core { 0x80 } else { 0 })
            }
            Ok(WaitStatus::StillAlive) | Err(_) => return,
            Ok(_) => continue,
        };
        let _ = send(sock, format!("exit {} {}", raw.0, raw.1).as_bytes(), None);
    }
}

// ---------------------------------------------------------------- engine side

/// The engine's handle on its zygote (or on a stem of it).
pub struct Zygote {
    /// The zygote's process (a stem is the zygote's child, not ours).
    child: Option<std::process::Child>,
    pid: u32,
    sock: OwnedFd,
    /// Serialises requests, so each answer goes to its asker.
    asking: Mutex<()>,
    answers: Mutex<mpsc::Receiver<Answer>>,
}

/// What the reader thread shares: who waits for which pid.
#[derive(Default)]
struct Waiting {
    exits: HashMap<u32, oneshot::Sender<ExitStatus>>,
}

impl Zygote {
    /// Starts `exe args… --zygote`; `None` when it cannot (runs then spawn
    /// their own trampoline).
    pub fn start(exe: &Path, args: &[String]) -> Option<Zygote> {
        let (ours, theirs) = socketpair(
            AddressFamily::Unix,
            SockType::SeqPacket,
            None,
            SockFlag::SOCK_CLOEXEC,
        )
        .ok()?;
        // Nothing of the engine's environment: the trampolines it forks,
        // and their inits (visible in a program's /proc), inherit it.
        let child = Command::new(exe)
            .args(args)
            .arg(ZYGOTE)
            .env_clear()
            .stdin(Stdio::from(theirs))
            .stdout(Stdio::null())
            .spawn()
            .ok()?;
        let pid = child.id();
        Zygote::over(ours, pid, Some(child))
    }

    /// The engine's handle on the zygote (or stem) `pid` at the other end
    /// of `sock`.
    fn over(sock: OwnedFd, pid: u32, child: Option<std::process::Child>) -> Option<Zygote> {
        let reading = sock.try_clone().ok()?;
        let (answer_tx, answer_rx) = mpsc::channel();
        let waiting = Arc::new(Mutex::new(Waiting::default()));
        std::thread::Builder::new()
            .name("hc-zygote".into())
            .spawn(move || read_reports(reading, answer_tx, waiting))
            .ok()?;
        Some(Zygote {
            child,
            pid,
            sock,
            asking: Mutex::new(()),
            answers: Mutex::new(answer_rx),
        })
    }

    /// Its pid.
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// Forks a trampoline for `policy`, its stdio three new pipes: the
    /// trampoline's pid, its exit status to come, and this side of each
    /// pipe (the program's stdin to write, its stdout and stderr to read).
    pub fn spawn(&self, policy: &Policy) -> std::io::Result<Forked> {
        let (in_r, in_w) = std::io::pipe()?;
        let (out_r, out_w) = std::io::pipe()?;
        let (err_r, err_w) = std::io::pipe()?;
        let mut request = b"run\n".to_vec();
        serde_json::to_writer(&mut request, policy).map_err(std::io::Error::other)?;
        let raw = [in_r.as_raw_fd(), out_w.as_raw_fd(), err_w.as_raw_fd()];
        let answer = self.ask(&request, &raw);
        // The far ends are the trampoline's now.
        drop((in_r, out_w, err_w));
        let Reply::Forked(pid, status) = answer? else {
            return Err(std::io::Error::other(
                "the zygote answered a run with a stem",
            ));
        };
        Ok(Forked {
            pid,
            status,
            stdin: OwnedFd::from(in_w),
            stdout: OwnedFd::from(out_r),
            stderr: OwnedFd::from(err_r),
        })
    }

    /// Forks a stem: a zygote of its own in the control groups `dirs`
    /// (moved there once; every trampoline it forks is born there, so a
    /// run in those groups costs no move — a move costs the kernel a grace
    /// period, several milliseconds, in which nothing on the machine
    /// forks). It ends when the handle is dropped.
    pub fn stem(&self, dirs: &[PathBuf]) -> std::io::Result<Zygote> {
        let mut request = b"prepare\n".to_vec();
        serde_json::to_writer(&mut request, dirs).map_err(std::io::Error::other)?;
        match self.ask(&request, &[])? {
            Reply::Stem(pid, sock) => Zygote::over(sock, pid, None)
                .ok_or_else(|| std::io::Error::other("no thread to read a stem's reports")),
            Reply::Forked(..) => Err(std::io::Error::other(
                "the zygote answered a stem with a run",
            )),
        }
    }

    /// Sends `request` with `fds` and waits for its answer.
    fn ask(&self, request: &[u8], fds: &[RawFd]) -> std::io::Result<Reply> {
        let _turn = self.asking.lock().unwrap_or_else(PoisonError::into_inner);
        let rights = [ControlMessage::ScmRights(fds)];
        sendmsg::<()>(
            self.sock.as_raw_fd(),
            &[std::io::IoSlice::new(request)],
            if fds.is_empty() { &[] } else { &rights },
            MsgFlags::MSG_NOSIGNAL,
            None,
        )
        .map_err(std::io::Error::from)?;
        let answer = self
            .answers
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .recv()
            .map_err(|_| std::io::Error::other("the containment zygote is gone"))?;
        answer.map_err(std::io::Error::other)
    }
}

impl std::fmt::Debug for Zygote {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Zygote").field("pid", &self.pid).finish()
    }
}

/// A trampoline the zygote forked.
pub struct Forked {
    /// Its pid (the leader of its own process group).
    pub pid: u32,
    /// Its exit status, once it ends (reaped by the zygote).
    pub status: oneshot::Receiver<ExitStatus>,
    /// The program's stdin, to write.
    pub stdin: OwnedFd,
    /// Its stdout, to read.
    pub stdout: OwnedFd,
    /// Its stderr, to read.
    pub stderr: OwnedFd,
}

impl Drop for Zygote {
    fn drop(&mut self) {
        // A stem ends when its socket closes (and its zygote reaps it).
        let _ = nix::sys::socket::shutdown(self.sock.as_raw_fd(), nix::sys::socket::Shutdown::Both);
        if let Some(child) = &mut self.child {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// The reader thread: answers go to the asker, exits to their waiters.
fn read_reports(sock: OwnedFd, answers: mpsc::Sender<Answer>, waiting: Arc<Mutex<Waiting>>) {
    let mut buf = [0u8; 4096];
    loop {
        let Some((n, handed)) = report(&sock, &mut buf) else {
            break;
        };
        let text = String::from_utf8_lossy(&buf[..n]);
        let mut words = text.split(' ');
        let mut w = waiting.lock().unwrap_or_else(PoisonError::into_inner);
        let pid = |word: Option<&str>| {
            word.and_then(|p| p.parse::<u32>().ok())
                .ok_or_else(|| format!("the zygote answered {text:?}"))
        };
        match (words.next(), words.next(), words.next()) {
            (Some("pid"), n, None) => {
                let answer = pid(n).map(|pid| {
                    let (tx, rx) = oneshot::channel();
                    w.exits.insert(pid, tx);
                    Reply::Forked(pid, rx)
                });
                let _ = answers.send(answer);
            }
            (Some("stem"), n, None) => {
                let answer = pid(n).and_then(|pid| {
                    let sock = handed.ok_or("the zygote handed no socket for its stem")?;
                    Ok(Reply::Stem(pid, sock))
                });
                let _ = answers.send(answer);
            }
            (Some("fail"), ..) => {
                let _ = answers.send(Err(text.trim_start_matches("fail ").to_owned()));
            }
            (Some("exit"), Some(pid), Some(status)) => {
                if let (Ok(pid), Ok(status)) = (pid.parse::<u32>(), status.parse::<i32>())
                    && let Some(tx) = w.exits.remove(&pid)
                {
                    let _ = tx.send(ExitStatus::from_raw(status));
                }
            }
            _ => tracing::debug!(report = %text, "an unknown report from the zygote"),
        }
    }
    // Gone: every waiter learns its process was killed.
    let mut w = waiting.lock().unwrap_or_else(PoisonError::into_inner);
    for (_, tx) in w.exits.drain() {
        let _ = tx.send(ExitStatus::from_raw(libc::SIGKILL));
    }
}

/// One report from a zygote or stem: its length in `buf`, and the
/// descriptor handed with it. `None` once it is gone.
fn report(sock: &OwnedFd, buf: &mut [u8]) -> Option<(usize, Option<OwnedFd>)> {
    let (len, fds) = receive(sock.as_fd(), buf).ok()??;
    Some((len, fds.into_iter().next()))
}
