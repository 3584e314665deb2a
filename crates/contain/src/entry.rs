//! The trampoline's entry: what its arguments ask it to be.

use crate::carried::{Carried, Carrier};
use crate::sandbox::{self, HOLD_NETNS};
use crate::{BUILD_ID, BUILD_ID_FLAG, zygote};
use std::process::ExitCode;

/// The trampoline's `main`: `args` is the policy as JSON, or
/// `--hold-netns`, `--zygote` or `--build-id`. `carried`: the programs
/// this executable runs itself (forked, not exec'd) when a policy names
/// this executable.
pub fn trampoline_main(args: &[String], carried: Option<Carried>) -> ExitCode {
    ExitCode::from(trampoline(args, carried))
}

/// The same as [`trampoline_main`], as the exit status itself (for an entry
/// point that returns it to the C runtime).
pub fn trampoline(args: &[String], carried: Option<Carried>) -> u8 {
    let carrier = || Carrier::of_self(carried);
    match args.first().map(String::as_str) {
        Some(HOLD_NETNS) => sandbox::hold_netns(),
        Some(zygote::ZYGOTE) => zygote::zygote_main(carrier().as_ref()),
        Some(BUILD_ID_FLAG) => {
            println!("{BUILD_ID:016x}");
            0
        }
        Some(policy) => match serde_json::from_str(policy) {
            Ok(policy) => sandbox::contain_policy(&policy, carrier().as_ref(), false),
            Err(e) => crate::failed::fail(&format!("bad policy: {e}")),
        },
        None => crate::failed::fail("no policy given (usage: hc __contain POLICY_JSON)"),
    }
}
