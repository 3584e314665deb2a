//! The containment trampoline on its own, shipped beside `hc` as
//! `hc-contain`: `hc` runs contained programs through it (or through
//! `hc __contain`, the same code, when it is missing or from another
//! build — `--build-id` tells).
//!
//! It starts without Rust's runtime set-up (`no_main`): that set-up finds
//! the main thread's stack by reading `/proc/self/maps` and installs
//! stack-overflow handlers, which costs about 0.3 ms here (timed by hand)
//! each time it starts — as the zygote, the namespace holder, or a
//! trampoline when there is no zygote — for a process that runs no deep
//! recursion. Arguments still come from `std::env::args` (glibc hands
//! them to std before `main`); a stack overflow would end it by SIGSEGV
//! instead of a message.
#![no_main]

/// The C entry point.
// SAFETY: `no_mangle` exports this as the C `main` the C runtime calls with
// the process's arguments; the signature is the one it expects and nothing
// else in the binary is named `main`.
#[allow(unsafe_code)]
#[unsafe(no_mangle)]
extern "C" fn main(
    _argc: std::ffi::c_int,
    _argv: *const *const std::ffi::c_char,
) -> std::ffi::c_int {
    let args: Vec<String> = std::env::args().skip(1).collect();
    std::ffi::c_int::from(contain::trampoline(&args, None))
}
