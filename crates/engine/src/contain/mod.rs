//! Containment (`seeds/engine.txt`, "Containment"; DESIGN.md decision 7):
//! every `vm` program runs behind Landlock, seccomp and namespaces,
//! configured from the capabilities its chunk declares, narrowed by the run.
//! See `sandbox.rs` for what the trampoline does, `policy.rs` for how
//! capabilities become a policy.

pub mod policy;
mod sandbox;

pub use sandbox::{CONTAIN_FAILED, landlock_available, trampoline_main};

use std::path::PathBuf;

/// Whether and how the engine contains programs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Containment {
    /// Every `vm` program runs through the trampoline `exe args… POLICY`.
    On {
        /// The trampoline executable (`hc`, or the engine's `hc-contain`).
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
