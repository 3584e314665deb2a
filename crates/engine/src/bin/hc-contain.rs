//! The containment trampoline on its own (the `hc` binary carries the same
//! as `hc __contain`): the engine's tests and benchmarks run programs
//! through it.

fn main() -> std::process::ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    engine::contain::trampoline_main(&args)
}
