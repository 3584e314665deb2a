//! The containment trampoline on its own, for the engine's tests and
//! benchmarks, which run every contained program through it as
//! `hc-contain-test` (the cli package ships `hc-contain`, the same code
//! with a lighter start).

fn main() -> std::process::ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    contain::trampoline_main(&args)
}
