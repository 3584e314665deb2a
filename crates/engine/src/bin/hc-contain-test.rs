//! The containment trampoline on its own, for the engine's tests and
//! benchmarks, which run every contained program through it as
//! `hc-contain-test` (the cli package ships `hc-contain`, the same code
//! with a lighter start).
//!
//! Started as the zygote, it carries one program as `hc` carries its
//! built-ins, `hc-contain-test program inside PATH…`: forked contained,
//! not exec'd, it says on stderr what it holds — each open descriptor's
//! target, its environment's names, its working directory, its command
//! line (the zygote's, as it was never exec'd) — and which of `PATH…` it
//! could create.

fn main() -> std::process::ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    contain::trampoline_main(&args, Some(CARRIED))
}

const CARRIED: contain::Carried = contain::Carried {
    carries: |args| matches!(args, [verb, name, ..] if verb == "program" && name == "inside"),
    run: inside,
};

fn inside(args: &[String]) -> u8 {
    let fds: Vec<String> = std::fs::read_dir("/proc/self/fd")
        .map(|dir| {
            dir.flatten()
                .filter_map(|e| {
                    let target = std::fs::read_link(e.path()).ok()?;
                    Some(format!(
                        "{}={}",
                        e.file_name().to_string_lossy(),
                        target.display()
                    ))
                })
                .collect()
        })
        .unwrap_or_default();
    let env: Vec<String> = std::env::vars_os()
        .map(|(k, _)| k.to_string_lossy().into_owned())
        .collect();
    let cwd = std::env::current_dir().unwrap_or_default();
    let cmdline = std::fs::read("/proc/self/cmdline").unwrap_or_default();
    let created: Vec<&String> = args[2..]
        .iter()
        .filter(|p| std::fs::write(p, "x").is_ok())
        .collect();
    eprintln!(
        "{}",
        serde_json::json!({
            "fds": fds,
            "env": env,
            "cwd": cwd,
            "cmdline": String::from_utf8_lossy(&cmdline).replace('\0', " ").trim(),
            "created": created,
        })
    );
    0
}
