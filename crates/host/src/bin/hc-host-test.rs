//! The built-ins `hc` carries, without `hc`'s command line, for the host
//! crate's tests (`tests/it`): the engine runs a built-in as
//! `hc-host-test program NAME`, contains programs through
//! `hc-host-test __contain …`, and starts it as its zygote, which forks
//! the built-ins it carries as `hc`'s does.

use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.as_slice() {
        [first, rest @ ..] if first == "__contain" => contain::trampoline_main(rest, Some(CARRIED)),
        [verb, name] if verb == "program" => ExitCode::from(run(name)),
        _ => {
            eprintln!("hc-host-test: program NAME, or __contain …");
            ExitCode::from(2)
        }
    }
}

const CARRIED: contain::Carried = contain::Carried {
    carries: |args| matches!(args, [verb, name] if verb == "program" && hc_host::builtins::find(name).is_some()),
    run: |args| run(args.get(1).map_or("", String::as_str)),
};

fn run(name: &str) -> u8 {
    match hc_host::builtins::run_program(name) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("hc-host-test: {e:#}");
            1
        }
    }
}
