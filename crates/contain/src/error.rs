//! Why a contained run could not start, as a type: which step failed and
//! the system's own error where there is one. Its text is what the
//! trampoline says on stderr (`hermitcrab containment: …`), word for word
//! what it said when it was a string.

use nix::errno::Errno;
use std::path::PathBuf;

/// A step of containment that failed.
#[derive(Debug, thiserror::Error)]
pub enum ContainError {
    /// A system call failed: the step, and its errno.
    #[error("{step}: {errno}")]
    Sys {
        /// What was being done (`fork`, `pipe`, `private mounts`…).
        step: &'static str,
        /// The system's error.
        #[source]
        errno: Errno,
    },
    /// A protected directory could not be made read-only.
    #[error("cannot make {} read-only: {errno}", dir.display())]
    ReadOnly {
        /// The directory.
        dir: PathBuf,
        /// The system's error.
        #[source]
        errno: Errno,
    },
    /// No mount namespace here, so directories cannot be kept read-only.
    #[error(
        "cannot keep {} read-only: this kernel allows no mount namespace here",
        dirs.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", ")
    )]
    NoMountNamespace {
        /// The directories that were to be kept read-only.
        dirs: Vec<PathBuf>,
    },
    /// The program could not be started.
    #[error("cannot start `{program}`: {source}")]
    Start {
        /// The program.
        program: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// Landlock refused the rules.
    #[error("Landlock: {0}")]
    Landlock(String),
    /// This kernel does not enforce Landlock (the rules made, nothing
    /// restricted).
    #[error("Landlock is not enforced on this kernel")]
    LandlockNotEnforced,
    /// seccomp refused the filter.
    #[error("seccomp: {0}")]
    Seccomp(String),
    /// The program's init failed (what it reported), or ended without a
    /// report.
    #[error("{0}")]
    Init(String),
    /// A request the zygote could not read.
    #[error("{0}")]
    Request(String),
}

/// A failed system call of `step`, as a [`ContainError`].
pub(crate) fn sys(step: &'static str) -> impl FnOnce(Errno) -> ContainError {
    move |errno| ContainError::Sys { step, errno }
}
