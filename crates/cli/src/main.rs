//! `hc`: the hermitcrab command line — the host. It finds the project,
//! opens the substrate, starts the engine, runs programs for the person,
//! and carries every built-in program (`hc program NAME`).

mod builtins;
mod config;
mod project;

use anyhow::{Context as _, Result};
use clap::{Parser, Subcommand};
use engine::{Engine, EngineConfig};
use project::Project;
use std::process::ExitCode;

/// hermitcrab: an agent runtime that keeps every step in one substrate.
#[derive(Parser)]
#[command(name = "hc", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Create .hermitcrab/ here and bootstrap the substrate (safe to re-run).
    Init,
    /// Run a built-in program on this process's stdio (the engine does this).
    Program {
        /// The built-in's name, e.g. `echo`.
        name: String,
    },
    /// Speak the protocol with host reach, for editors, scripts and tools.
    Serve {
        /// On stdin/stdout (the only transport for now).
        #[arg(long)]
        stdio: bool,
        /// Run programs uncontained, with all your privileges (every run
        /// records it). Also `containment = "off"` in .hermitcrab/config.toml.
        #[arg(long)]
        no_contain: bool,
    },
    /// The containment trampoline the engine runs programs through.
    #[command(name = "__contain", hide = true)]
    Contain {
        /// The policy (JSON).
        args: Vec<String>,
    },
}

fn main() -> ExitCode {
    // The trampoline runs before every contained program: no logging, no
    // argument parser, straight to work.
    let raw: Vec<String> = std::env::args().skip(1).collect();
    if raw.first().map(String::as_str) == Some("__contain") {
        return engine::contain::trampoline_main(&raw[1..]);
    }
    init_logging();
    let cli = Cli::parse();
    let outcome = match cli.command {
        Command::Init => init(),
        Command::Program { name } => program(&name),
        Command::Serve { stdio, no_contain } => serve(stdio, no_contain),
        Command::Contain { args } => return engine::contain::trampoline_main(&args),
    };
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("hc: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// Logs go to stderr, off unless `HC_LOG` says otherwise (`HC_LOG=debug`).
fn init_logging() {
    if let Ok(filter) = std::env::var("HC_LOG") {
        let _ = tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::new(filter))
            .with_writer(std::io::stderr)
            .try_init();
    }
}

fn runtime() -> Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")
}

fn init() -> Result<()> {
    let here = std::env::current_dir().context("cannot read the working directory")?;
    let (project, changed) = Project::init(&here)?;
    let what = if changed {
        "initialized"
    } else {
        "already up to date:"
    };
    println!(
        "{what} hermitcrab project in {}",
        project.root.join(project::DIR).display()
    );
    Ok(())
}

fn program(name: &str) -> Result<()> {
    let Some(builtin) = builtins::find(name) else {
        let names: Vec<&str> = builtins::all().map(|b| b.name).collect();
        anyhow::bail!(
            "no built-in program `{name}`; the built-ins are: {}",
            names.join(", ")
        );
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let outcome = rt.block_on((builtin.main)());
    // The stdin reader is a blocking thread parked in read(2) until the
    // engine closes the pipe; do not wait for it.
    rt.shutdown_background();
    outcome?;
    Ok(())
}

/// Contained programs go through the `hc-contain` built and installed with
/// `hc` when it is there and from the same source (`--build-id`; `cargo run
/// -p cli` rebuilds only `hc`, and could leave an older one beside it): a
/// small binary that skips Rust's runtime set-up, started as the engine's
/// zygote and namespace holder (and per run if the zygote is gone).
fn containment_beside_hc(default: engine::contain::Containment) -> engine::contain::Containment {
    let engine::contain::Containment::On { .. } = default else {
        return default;
    };
    let Some(sibling) = std::env::current_exe()
        .map(|exe| exe.with_file_name("hc-contain"))
        .ok()
        .filter(|p| p.is_file())
    else {
        return default;
    };
    let same_build = std::process::Command::new(&sibling)
        .arg(engine::contain::BUILD_ID_FLAG)
        .stderr(std::process::Stdio::null())
        .output()
        .ok()
        .and_then(|out| u64::from_str_radix(String::from_utf8_lossy(&out.stdout).trim(), 16).ok())
        == Some(engine::contain::BUILD_ID);
    if !same_build {
        tracing::debug!(
            ?sibling,
            "not from this build; containing through `hc __contain`"
        );
        return default;
    }
    engine::contain::Containment::On {
        exe: sibling,
        args: Vec::new(),
    }
}

/// The engine's configuration for `project`: containment (off when the
/// person said so, by flag or configuration) and what configuration grants
/// programs.
fn engine_config(project: &Project, no_contain: bool) -> Result<EngineConfig> {
    let files = project.config()?;
    let mut config = EngineConfig::new(&project.root);
    config.containment = containment_beside_hc(config.containment);
    if no_contain || files.containment_off()? {
        eprintln!("hc: containment is off: programs run with all of your privileges");
        config.containment = engine::contain::Containment::Off;
    }
    config.grants = files.grants()?;
    Ok(config)
}

fn serve(stdio: bool, no_contain: bool) -> Result<()> {
    if !stdio {
        anyhow::bail!("say how to serve: `hc serve --stdio` (the only transport for now)");
    }
    let here = std::env::current_dir().context("cannot read the working directory")?;
    let project = Project::find(&here)?;
    let config = engine_config(&project, no_contain)?;
    let (db, _) = project.open()?;
    runtime()?.block_on(async move {
        let engine = Engine::open_with(db, config)?;
        engine::serve_host(engine.clone(), tokio::io::stdin(), tokio::io::stdout()).await;
        engine.shutdown().await;
        Ok(())
    })
}
