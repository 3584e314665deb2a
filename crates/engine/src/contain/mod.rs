//! Containment (`seeds/engine.txt`, "Containment"; DESIGN.md decision 7):
//! every `vm` program runs behind Landlock, seccomp and namespaces,
//! configured from the capabilities its chunk declares, narrowed by the run.
//! See `sandbox.rs` for what the trampoline does, `policy.rs` for how
//! capabilities become a policy.

pub mod grant;
pub mod policy;
mod sandbox;
mod zygote;

pub(crate) use zygote::Zygote;

pub use sandbox::{
    CONTAIN_FAILED, HOLD_NETNS, landlock_available, landlock_scopes_available, trampoline,
    trampoline_main,
};

use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

/// Identifies the trampoline's code — this module's policy format and the
/// sandbox — so `hc` can tell a `hc-contain` from the same source from one
/// left by another build (`hc-contain --build-id` prints it).
pub const BUILD_ID: u64 = fnv1a(include_bytes!("policy.rs"))
    ^ fnv1a(include_bytes!("sandbox.rs")).rotate_left(17)
    ^ fnv1a(env!("CARGO_PKG_VERSION").as_bytes()).rotate_left(41);

/// The argument that makes the trampoline print [`BUILD_ID`].
pub const BUILD_ID_FLAG: &str = "--build-id";

/// FNV-1a, at compile time.
const fn fnv1a(bytes: &[u8]) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    let mut i = 0;
    while i < bytes.len() {
        hash ^= bytes[i] as u64;
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
        i += 1;
    }
    hash
}

/// Whether and how the engine contains programs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Containment {
    /// Every `vm` program runs through the trampoline `exe args… POLICY`.
    On {
        /// The trampoline executable (`hc-contain` beside `hc`, or `hc` itself).
        exe: PathBuf,
        /// Arguments before the policy (`["__contain"]` for `hc`).
        args: Vec<String>,
    },
    /// Programs run with the host's full privileges (the person opted out);
    /// every run records it.
    Off,
}

/// The message when containment is required and this kernel cannot do it.
pub const NO_LANDLOCK: &str = "this kernel does not enforce Landlock (Linux 5.13 or later, with \
     `landlock` in the `lsm=` boot list), so hermitcrab will not run programs: they would run with \
     all your privileges. To run them uncontained anyway, set `containment = \"off\"` in \
     .hermitcrab/config.toml or pass --no-contain";

/// The process holding the empty network namespace that contained runs
/// without `network` share (`hc __contain --hold-netns`; see `sandbox.rs`).
/// It ends when this is dropped, or when the engine's process ends and its
/// stdin closes.
pub(crate) struct NetHolder {
    child: Child,
}

impl NetHolder {
    /// Starts the holder and waits for its namespace; `None` when it cannot
    /// make one, and every run then makes its own.
    pub(crate) fn start(exe: &Path, args: &[String]) -> Option<NetHolder> {
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
    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for NetHolder {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
