//! Programs the trampoline's own executable carries: when a contained run's
//! program is that executable itself (`hc program NAME`), the namespace's
//! init forks and calls it instead of exec'ing the same file again — an
//! exec, a dynamic load and a runtime start fewer on every built-in tool
//! call. Everything else about the run is the same: the fork happens after
//! Landlock and seccomp, so the program inherits both; its descriptors
//! are its stdio and nothing else (the zygote's socket above all), its
//! environment and working directory are the policy's.

use crate::policy::Policy;
use std::path::{Path, PathBuf};

/// What an executable carries: whether its arguments name one, and how to
/// run it (its exit code).
#[derive(Clone, Copy, Debug)]
pub struct Carried {
    /// Whether `args` (after the executable) name a program this binary
    /// runs in-process.
    pub carries: fn(&[String]) -> bool,
    /// Runs that program in this (forked, contained) process; its exit code.
    pub run: fn(&[String]) -> u8,
}

/// The carried programs of the running executable, and where it is.
#[derive(Clone, Debug)]
pub(crate) struct Carrier {
    exe: PathBuf,
    carried: Carried,
}

impl Carrier {
    /// This executable's carrier, when it carries anything and knows where
    /// it is (`/proc/self/exe`; a file replaced since it started reads as
    /// another path, and its runs exec the new one).
    pub(crate) fn of_self(carried: Option<Carried>) -> Option<Carrier> {
        let carried = carried?;
        let exe = std::fs::read_link("/proc/self/exe").ok()?;
        Some(Carrier { exe, carried })
    }

    /// The program's entry, when `policy` runs one of this executable's
    /// carried programs.
    pub(crate) fn entry(&self, policy: &Policy) -> Option<fn(&[String]) -> u8> {
        (Path::new(&policy.program) == self.exe && (self.carried.carries)(&policy.args))
            .then_some(self.carried.run)
    }
}

/// In the forked child that becomes the program: nothing but its stdio
/// open, the policy's environment and directory, then the program.
pub(crate) fn become_program(policy: &Policy, run: fn(&[String]) -> u8) -> u8 {
    // SAFETY: closes this process's descriptors from 3 up (the zygote's
    // socket, the init's report pipe, the signalfd); none is owned by
    // anything that will use it again in this process.
    #[allow(unsafe_code)]
    let closed = unsafe { libc::syscall(libc::SYS_close_range, 3u32, u32::MAX, 0u32) };
    if closed != 0 {
        return crate::failed::fail("cannot close the trampoline's descriptors");
    }
    let old: Vec<_> = std::env::vars_os().map(|(k, _)| k).collect();
    // SAFETY: this process is a fresh fork of a single-threaded one (the
    // namespace's init); no other thread reads the environment.
    #[allow(unsafe_code)]
    unsafe {
        for key in old {
            std::env::remove_var(key);
        }
        for (key, value) in &policy.env {
            std::env::set_var(key, value);
        }
    }
    if let Err(e) = std::env::set_current_dir(&policy.cwd) {
        return crate::failed::fail(&format!("cannot enter {}: {e}", policy.cwd.display()));
    }
    run(&policy.args)
}
