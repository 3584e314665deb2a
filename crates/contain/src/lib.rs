//! # contain
//!
//! Containment for hermitcrab's programs: every `vm` program runs behind
//! Landlock (what it may read and write), seccomp (no network unless it
//! declares it; no ptrace and other escape routes) and namespaces, made
//! from the capabilities its program chunk declares, narrowed by the run.
//!
//! Main parts:
//!
//! * [`policy`] — capabilities (declared, widened by configuration's
//!   [`grant::Grant`], narrowed by the run) made concrete: a [`policy::Policy`].
//! * the trampoline ([`trampoline`], run as `hc-contain POLICY` or
//!   `hc __contain POLICY`) that applies a policy: namespaces, read-only
//!   bind mounts of `.git` and `.hermitcrab`, then a forked PID-1 init that
//!   applies Landlock and seccomp, runs the program, reaps orphans and
//!   relays its exit code or signal (`sandbox.rs`);
//! * [`Zygote`] — the pre-forked trampoline: started once, it forks one
//!   trampoline per run, over a `SOCK_SEQPACKET` socket carrying each
//!   program's stdio descriptors;
//! * [`Carried`] — the programs the trampoline's own executable carries
//!   (`hc program NAME`): forked by the namespace's init, after Landlock
//!   and seccomp, instead of exec'ing the same file again;
//! * [`NetHolder`] — the one empty network namespace programs without
//!   `network` share;
//! * [`BUILD_ID`] — a hash of every source file of this crate, so a
//!   trampoline binary from other sources is never taken for this one.
//!
//! Invariants: a program runs contained or not at all (a kernel without
//! Landlock is refused, unless the person opted out); the trampoline, the
//! zygote and the holder are single-threaded processes, which is what
//! makes their `fork`s sound. All of the workspace's `fork`s and
//! descriptor passing are here. It knows nothing of the engine, the
//! substrate or agents: only the protocol's capability types.

pub mod bounds;
/// How [`BUILD_ID`] is computed (by `build.rs`, and by tests that check it).
pub mod build_id;
mod carried;
mod entry;
pub mod error;
mod failed;
pub mod git;
pub mod grant;
mod holder;
mod os;
pub mod policy;
mod sandbox;
mod zygote;

pub use carried::Carried;
pub use entry::{trampoline, trampoline_main};
pub use failed::CONTAIN_FAILED;
pub use holder::NetHolder;
pub use os::{kill_group, make_temp_dir, remove_temp_dirs};
pub use sandbox::{HOLD_NETNS, landlock_available, landlock_scopes_available};
pub use zygote::{Forked, ZYGOTE, Zygote};

use std::path::PathBuf;

/// Identifies the trampoline's code — every source file of this crate
/// (`build_id::of_sources`, computed by `build.rs`) — so `hc` can tell a
/// `hc-contain` from the same source from one left by another build
/// (`hc-contain --build-id` prints it).
pub const BUILD_ID: u64 = parse_hex(env!("HC_CONTAIN_BUILD_ID"));

/// The argument that makes the trampoline print [`BUILD_ID`].
pub const BUILD_ID_FLAG: &str = "--build-id";

/// A hexadecimal `u64`, at compile time (0 for anything else).
const fn parse_hex(text: &str) -> u64 {
    let bytes = text.as_bytes();
    let mut out: u64 = 0;
    let mut i = 0;
    while i < bytes.len() {
        let digit = match bytes[i] {
            b'0'..=b'9' => bytes[i] - b'0',
            b'a'..=b'f' => bytes[i] - b'a' + 10,
            _ => return 0,
        };
        out = (out << 4) | digit as u64;
        i += 1;
    }
    out
}

/// Whether and how programs are contained.
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

pub use error::ContainError;
