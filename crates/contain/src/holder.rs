//! The process holding the empty network namespace that contained runs
//! without `network` share (`hc-contain --hold-netns`): creating a network
//! namespace is the dearest step of containment, so one is made per engine
//! instead of one per run.

use crate::sandbox::HOLD_NETNS;
use std::io::BufRead;
use std::path::Path;
use std::process::{Child, Command, Stdio};

/// The holder. It ends when this is dropped, or when the process that
/// started it ends and its stdin closes.
pub struct NetHolder {
    child: Child,
}

impl NetHolder {
    /// Starts the holder (`exe args… --hold-netns`) and waits for its
    /// namespace; `None` when it cannot make one, and every run then
    /// makes its own.
    pub fn start(exe: &Path, args: &[String]) -> Option<NetHolder> {
        let mut child = Command::new(exe)
            .args(args)
            .arg(HOLD_NETNS)
            .env_clear()
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .ok()?;
        let mut line = String::new();
        let ready = child
            .stdout
            .take()
            .map(std::io::BufReader::new)
            .is_some_and(|mut out| out.read_line(&mut line).is_ok() && line.trim() == "ready");
        let holder = NetHolder { child };
        if !ready {
            tracing::debug!("no shared network namespace: each contained run makes its own");
        }
        ready.then_some(holder)
    }

    /// Its process id (the namespace is `/proc/PID/ns/net`).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for NetHolder {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
