//! The pre-forked trampoline: one small single-threaded process the engine
//! starts once (`hc-contain --zygote`), which forks a trampoline for each
//! contained run instead of the engine spawning and exec'ing one — an exec
//! and a program start-up fewer on every tool call.
//!
//! The engine and the zygote talk over a `SOCK_SEQPACKET` socket pair (the
//! zygote's stdin). A request is a [`Policy`] as JSON with three file
//! descriptors (the program's stdin, stdout and stderr) attached; the answer
//! is `pid N` (the forked trampoline, leader of its own process group) or
//! `fail WHY`. When a trampoline ends the zygote reaps it and reports
//! `exit N STATUS` (the raw wait status). The zygote ends when the engine
//! closes its end.

use crate::carried::Carrier;
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
use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Mutex, PoisonError};
use tokio::sync::oneshot;

/// The argument that makes the trampoline a zygote.
pub const ZYGOTE: &str = "--zygote";

/// The zygote's answer to a request: the trampoline's pid and its status
/// to come, or why not.
type Answer = Result<(u32, oneshot::Receiver<ExitStatus>), String>;

/// The largest request (a policy) the zygote reads.
const MAX_REQUEST: usize = 1 << 20;

// ---------------------------------------------------------------- zygote side

/// The zygote's `main`: serve fork requests on stdin until it closes.
pub(crate) fn zygote_main(carrier: Option<&Carrier>) -> u8 {
    match serve(carrier) {
        Ok(()) => 0,
        Err(why) => {
            eprintln!("hermitcrab containment zygote: {why}");
            crate::sandbox::CONTAIN_FAILED
        }
    }
}

fn serve(carrier: Option<&Carrier>) -> Result<(), String> {
    // SAFETY of what follows: this process is single-threaded (the zygote is
    // started fresh and starts no threads), so forking it is sound.
    let sock = std::io::stdin()
        .as_fd()
        .try_clone_to_owned()
        .map_err(|e| format!("stdin: {e}"))?;
    let mut chld = SigSet::empty();
    chld.add(Signal::SIGCHLD);
    sigprocmask(SigmaskHow::SIG_BLOCK, Some(&chld), None).map_err(|e| format!("sigmask: {e}"))?;
    let sfd = SignalFd::with_flags(&chld, SfdFlags::SFD_CLOEXEC | SfdFlags::SFD_NONBLOCK)
        .map_err(|e| format!("signalfd: {e}"))?;
    let mut buf = vec![0u8; MAX_REQUEST];
    loop {
        let mut fds = [
            nix::poll::PollFd::new(sock.as_fd(), nix::poll::PollFlags::POLLIN),
            nix::poll::PollFd::new(sfd.as_fd(), nix::poll::PollFlags::POLLIN),
        ];
        match nix::poll::poll(&mut fds, nix::poll::PollTimeout::NONE) {
            Err(nix::errno::Errno::EINTR) => continue,
            Err(e) => return Err(format!("poll: {e}")),
            Ok(_) => {}
        }
        let readable = |f: &nix::poll::PollFd| f.revents().is_some_and(|r| !r.is_empty());
        let (request, children) = (readable(&fds[0]), readable(&fds[1]));
        if children {
            while sfd.read_signal().ok().flatten().is_some() {}
            reap(&sock);
        }
        if request {
            let Some((len, stdio)) = receive(&sock, &mut buf)? else {
                return Ok(()); // the engine is gone
            };
            let answer = fork_trampoline(&buf[..len], stdio, &chld, carrier);
            // A policy carries its program's environment (a host's secrets
            // among it), and a carried program runs in a fork of this
            // process: no later fork may find an earlier request's bytes.
            buf[..len].fill(0);
            let _ = send(&sock, answer.as_bytes());
        }
    }
}

/// A request: its policy's length in the buffer (read as a policy only in
/// the fork, so this process never holds one parsed), and the program's
/// stdin, stdout and stderr.
type Request = (usize, Vec<OwnedFd>);

/// One request. `None` when the engine has closed its end.
fn receive(sock: &OwnedFd, buf: &mut [u8]) -> Result<Option<Request>, String> {
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
            Err(e) => return Err(format!("recvmsg: {e}")),
        }
    };
    let mut fds = Vec::new();
    for cmsg in msg.cmsgs().map_err(|e| format!("cmsgs: {e}"))? {
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

fn send(sock: &OwnedFd, bytes: &[u8]) -> nix::Result<usize> {
    sendmsg::<()>(
        sock.as_raw_fd(),
        &[std::io::IoSlice::new(bytes)],
        &[],
        MsgFlags::MSG_NOSIGNAL,
        None,
    )
}

/// Forks a trampoline for the policy in `request` on `stdio`; the answer
/// line.
fn fork_trampoline(
    request: &[u8],
    stdio: Vec<OwnedFd>,
    blocked: &SigSet,
    carrier: Option<&Carrier>,
) -> String {
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
            let code = become_trampoline(request, [stdin, stdout, stderr], blocked, carrier);
            std::process::exit(i32::from(code));
        }
        Ok(ForkResult::Parent { child }) => {
            // Also from this side, so the engine can signal the group as
            // soon as it has the pid.
            let _ = nix::unistd::setpgid(child, child);
            format!("pid {child}")
        }
    }
}

/// In the forked child: its own process group, the program's stdio, the
/// signal mask a program expects; then the policy read and applied.
fn become_trampoline(
    request: &[u8],
    [stdin, stdout, stderr]: [OwnedFd; 3],
    blocked: &SigSet,
    carrier: Option<&Carrier>,
) -> u8 {
    let _ = nix::unistd::setpgid(Pid::from_raw(0), Pid::from_raw(0));
    if nix::unistd::dup2_stdin(&stdin).is_err()
        || nix::unistd::dup2_stdout(&stdout).is_err()
        || nix::unistd::dup2_stderr(&stderr).is_err()
    {
        return crate::sandbox::CONTAIN_FAILED;
    }
    drop((stdin, stdout, stderr));
    let _ = sigprocmask(SigmaskHow::SIG_UNBLOCK, Some(blocked), None);
    match serde_json::from_slice::<Policy>(request) {
        Ok(policy) => crate::sandbox::contain_policy(&policy, carrier),
        Err(e) => crate::sandbox::fail(&format!("bad policy: {e}")),
    }
}

/// Reaps every ended trampoline and reports it.
fn reap(sock: &OwnedFd) {
    loop {
        let raw = match waitpid(None, Some(WaitPidFlag::WNOHANG)) {
            Ok(WaitStatus::Exited(pid, code)) => (pid, (code & 0xff) << 8),
            Ok(WaitStatus::Signaled(pid, signal, core)) => {
                (pid, signal as i32 | if core { 0x80 } else { 0 })
            }
            Ok(WaitStatus::StillAlive) | Err(_) => return,
            Ok(_) => continue,
        };
        let _ = send(sock, format!("exit {} {}", raw.0, raw.1).as_bytes());
    }
}

// ---------------------------------------------------------------- engine side

/// The engine's handle on its zygote.
pub struct Zygote {
    child: std::process::Child,
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
        let reading = ours.try_clone().ok()?;
        let (answer_tx, answer_rx) = mpsc::channel();
        let waiting = Arc::new(Mutex::new(Waiting::default()));
        std::thread::Builder::new()
            .name("hc-zygote".into())
            .spawn(move || read_reports(reading, answer_tx, waiting))
            .ok()?;
        Some(Zygote {
            child,
            sock: ours,
            asking: Mutex::new(()),
            answers: Mutex::new(answer_rx),
        })
    }

    /// Forks a trampoline for `policy`, its stdio three new pipes: the
    /// trampoline's pid, its exit status to come, and this side of each
    /// pipe (the program's stdin to write, its stdout and stderr to read).
    pub fn spawn(&self, policy: &Policy) -> std::io::Result<Forked> {
        let (in_r, in_w) = std::io::pipe()?;
        let (out_r, out_w) = std::io::pipe()?;
        let (err_r, err_w) = std::io::pipe()?;
        let json = serde_json::to_vec(policy).map_err(std::io::Error::other)?;
        let _turn = self.asking.lock().unwrap_or_else(PoisonError::into_inner);
        let raw = [in_r.as_raw_fd(), out_w.as_raw_fd(), err_w.as_raw_fd()];
        sendmsg::<()>(
            self.sock.as_raw_fd(),
            &[std::io::IoSlice::new(&json)],
            &[ControlMessage::ScmRights(&raw)],
            MsgFlags::MSG_NOSIGNAL,
            None,
        )
        .map_err(std::io::Error::from)?;
        // The far ends are the trampoline's now.
        drop((in_r, out_w, err_w));
        let answer = self
            .answers
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .recv()
            .map_err(|_| std::io::Error::other("the containment zygote is gone"))?;
        let (pid, status) = answer.map_err(std::io::Error::other)?;
        Ok(Forked {
            pid,
            status,
            stdin: OwnedFd::from(in_w),
            stdout: OwnedFd::from(out_r),
            stderr: OwnedFd::from(err_r),
        })
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
        let _ = nix::sys::socket::shutdown(self.sock.as_raw_fd(), nix::sys::socket::Shutdown::Both);
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The reader thread: answers go to the asker, exits to their waiters.
fn read_reports(sock: OwnedFd, answers: mpsc::Sender<Answer>, waiting: Arc<Mutex<Waiting>>) {
    let mut buf = [0u8; 4096];
    loop {
        let n = match nix::sys::socket::recv(sock.as_raw_fd(), &mut buf, MsgFlags::empty()) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        let text = String::from_utf8_lossy(&buf[..n]);
        let mut words = text.split(' ');
        let mut w = waiting.lock().unwrap_or_else(PoisonError::into_inner);
        match (words.next(), words.next(), words.next()) {
            (Some("pid"), Some(pid), None) => {
                let answer = match pid.parse::<u32>() {
                    Ok(pid) => {
                        let (tx, rx) = oneshot::channel();
                        w.exits.insert(pid, tx);
                        Ok((pid, rx))
                    }
                    Err(_) => Err(format!("the zygote answered {text:?}")),
                };
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
