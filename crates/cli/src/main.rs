//! `hc`: the hermitcrab command line — the host. It finds the project,
//! opens the substrate, starts the engine, runs programs for the person,
//! and carries every built-in program (`hc program NAME`).

mod acp;
mod args;

use hc_host::open::{Find, Staged, close, runtime};
use hc_host::{
    builtins, commands, config, confirm, describe, exit, mcp_config, origin, project, sessions,
    settings, text, trust, user_memory,
};
mod claude_settings;
mod cmd;
mod compat;
mod notify;
mod print;
mod sdk;
mod style;
mod term;
mod tty;

use cmd::{blocks, config as config_cmd, inspect, mcp as mcp_cmd, memory, trace};
use term::{chat, run};

use anyhow::{Context as _, Result};
use args::{Cli, Command};
use project::Project;
use std::process::ExitCode;

/// The command line's parser: `--store` and `--project` (on every
/// command) left out of the help of those that open no substrate (they
/// refuse them).
fn parser() -> clap::Command {
    let command = <Cli as clap::CommandFactory>::command();
    let hidden: Vec<clap::Arg> = command
        .get_arguments()
        .filter(|a| matches!(a.get_id().as_str(), "store" | "project"))
        .map(|a| a.clone().global(false).hide(true))
        .collect();
    // (a subcommand with an argument of its own by the name is not given
    // the global one)
    let local = move |c: clap::Command| c.args(hidden.clone());
    command
        .mut_subcommand("program", local.clone())
        .mut_subcommand("mcp", |mcp| {
            mcp.mut_subcommand("add", local.clone())
                .mut_subcommand("remove", local)
        })
}

/// Whether the flag `id` (`store`, `project`) was given to the command or
/// any subcommand (where it is hidden it is an argument of that
/// subcommand's own, not the global).
fn flag_given(matches: &clap::ArgMatches, id: &str) -> bool {
    let here = matches.try_get_one::<String>(id).ok().flatten().is_some();
    here || matches
        .subcommand()
        .is_some_and(|(_, inner)| flag_given(inner, id))
}

/// Every long flag `hc run` takes (aliases too).
fn run_flags() -> Vec<String> {
    let command = <Cli as clap::CommandFactory>::command();
    let Some(run) = command.find_subcommand("run") else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for arg in run.get_arguments() {
        out.extend(arg.get_long().map(str::to_owned));
        out.extend(
            arg.get_all_aliases()
                .into_iter()
                .flatten()
                .map(str::to_owned),
        );
    }
    // (hc's own, on every command)
    out.extend(["help".to_owned(), "store".to_owned()]);
    out
}

fn main() -> ExitCode {
    // The trampoline runs before every contained program: no logging, no
    // argument parser, straight to work.
    // Arguments as the OS gives them: one that is not UTF-8 is clap's
    // usage error (exit 2) below, not a panic here.
    let mut raw = std::env::args_os().skip(1);
    match raw.next() {
        Some(first) if first == "__contain" => {
            let rest: Vec<String> = raw.map(|a| a.to_string_lossy().into_owned()).collect();
            return contain::trampoline_main(&rest, Some(CARRIED));
        }
        // The engine starts a built-in as `hc program NAME` on every tool
        // call: straight to it, without building the whole command line's
        // parser (twice: the print-mode rewrite reads it too).
        Some(first) if first == "program" => {
            // (`hc program --help`: clap's)
            if let (Some(name), None) = (raw.next(), raw.next())
                && !name.to_string_lossy().starts_with('-')
            {
                init_logging();
                return exit_code(program(&name.to_string_lossy()).map(|()| 0));
            }
        }
        _ => {}
    }
    init_logging();
    output_errors_end_quietly();
    let args = compat::rewrite(std::env::args_os().collect(), &run_flags());
    let matches = parser().get_matches_from(args);
    let cli = match <Cli as clap::FromArgMatches>::from_arg_matches(&matches) {
        Ok(cli) => cli,
        Err(e) => e.exit(),
    };
    if cli.command.only_prints() {
        default_sigpipe();
    }
    if flag_given(&matches, "store") && !cli.command.uses_store() {
        return exit_code(Err(crate::exit::exit(
            2,
            "--store names where a project's substrate is kept; this command opens none \
             (leave it out)",
        )));
    }
    if flag_given(&matches, "project") && !cli.command.uses_store() {
        return exit_code(Err(crate::exit::exit(
            2,
            "--project names a project on a shared store; this command opens none (leave it \
             out)",
        )));
    }
    if let Some(name) = cli.project {
        hc_host::project::project_flag(name);
    }
    if let Some(url) = cli.store {
        // (commands that go on without a project would ignore it there)
        let here = std::env::current_dir().unwrap_or_default();
        if cli.command.goes_on_without_a_project() && Project::find(&here).is_err() {
            return exit_code(Err(crate::exit::exit(
                2,
                "--store names where a project's substrate is kept, and there is no project \
                 here (hc init makes one)",
            )));
        }
        hc_host::project::store_flag(url);
    }
    hc_host::principal::front_end(front_end(&cli.command));
    let outcome = match cli.command {
        Command::Run(flags) => {
            let (request, printed) = run::RunRequest::from_flags(*flags);
            // driven by a program over stdin (the Agent SDK's way)
            if request.sdk.streaming() {
                let started = std::time::Instant::now();
                let served =
                    run::reporting(printed.format, started, || sdk::serve(request, printed));
                return exit_code(served);
            }
            return exit_code(run::run(request, printed));
        }
        Command::Chat(flags) => chat::chat(flags),
        Command::Sessions { json } => inspect::sessions(json),
        Command::Trace {
            sessions,
            otel: true,
            since,
            ..
        } => crate::cmd::otel::send(&sessions, since.as_deref()),
        Command::Trace {
            sessions,
            request,
            diff,
            full,
            json,
            ..
        } => trace::one_session(sessions).and_then(|session| {
            trace::trace(trace::TraceRequest {
                session,
                request,
                diff,
                full,
                json,
            })
        }),
        Command::Rewind(asked) => crate::cmd::rewind::rewind(asked),
        Command::Replay {
            session,
            at,
            settings,
        } => crate::cmd::replay::replay(session, at, settings),
        Command::Fork {
            session,
            at,
            worktree,
        } => crate::cmd::rewind::fork_command(&session, at, worktree),
        Command::Scope {
            ids,
            as_of,
            query,
            limit,
            after,
            json,
        } => {
            let opts = substrate::ScopeOpts {
                as_of,
                match_: query,
                limit,
                after,
                ..Default::default()
            };
            inspect::scope(&ids, opts, json)
        }
        Command::Log { limit, json } => inspect::log(limit, json),
        Command::Ps { json } => inspect::ps(json),
        Command::Programs { json } => inspect::programs(json),
        Command::Models { json, refresh } => crate::cmd::models::models(json, refresh),
        Command::Commit { file } => inspect::commit(file.as_deref()),
        Command::Mcp { command } => mcp(command),
        Command::Store { command } => match command {
            args::StoreCommand::Info { json } => crate::cmd::store::info(json),
            args::StoreCommand::Copy { to, from } => crate::cmd::store::copy(to, from),
        },
        Command::Memory { command } => memory::memory(command),
        Command::Blocks { command, flags } => blocks::blocks(command, flags),
        Command::Config {
            json,
            edit,
            settings,
        } => config_cmd::config(json, edit, settings.into_flags()),
        Command::Init => init(),
        Command::Agents {
            command,
            json,
            watch,
        } => crate::cmd::agents::agents(command, json, watch),
        Command::Attach { session } => return exit_code(term::attach::attach(&session)),
        Command::Stop { session } => crate::cmd::agents::stop(&session),
        Command::Send { session, text } => crate::cmd::agents::send(&session, &text),
        Command::Worker {
            until_idle,
            max,
            labels,
            serves,
        } => term::background::work(until_idle, max, labels, serves),
        Command::Trust { revoke, list } => config_cmd::trust(revoke, list),
        Command::Program { name } => program(&name),
        Command::Acp { settings } => return exit_code(acp::serve(settings.into_flags())),
        Command::Serve(flags) if flags.http => hc_web::serve(flags.into_options(), &tty::Tty),
        Command::Serve(flags) => match flags.page_flag_without_http() {
            Some(flag) => Err(crate::exit::exit(
                2,
                format!("{flag} is the page's: give it with --http"),
            )),
            None => serve(flags.stdio, flags.no_contain),
        },
        Command::Contain { args } => return contain::trampoline_main(&args, Some(CARRIED)),
    };
    exit_code(outcome.map(|()| 0))
}

/// The front end a command is, as its commits record it (decision 19).
fn front_end(command: &Command) -> &'static str {
    match command {
        Command::Run(flags) if flags.sdk.streaming() => "sdk",
        Command::Run(flags) if flags.output_format != crate::print::OutputFormat::Text => "print",
        Command::Acp { .. } => "acp",
        Command::Worker { .. } => "worker",
        Command::Serve(flags) if flags.http => "page",
        Command::Serve(_) => "serve",
        _ => "terminal",
    }
}

/// The exit code of a command that chooses its own: its errors say what
/// to do, with the code they carry (else 1).
fn mcp(command: args::McpCommand) -> Result<()> {
    use args::McpCommand;
    match command {
        McpCommand::List { json } => mcp_cmd::list(json),
        McpCommand::Get { name, json } => mcp_cmd::get(&name, json),
        McpCommand::Add(add) => mcp_cmd::add(add),
        McpCommand::Remove { name, scope } => mcp_cmd::remove(&name, scope),
        McpCommand::Login {
            name,
            no_browser,
            callback_port,
        } => cmd::mcp_auth::login(&name, no_browser, callback_port),
        McpCommand::Logout { name } => cmd::mcp_auth::logout(&name),
    }
}

fn exit_code(outcome: Result<u8>) -> ExitCode {
    ExitCode::from(exit_status(outcome))
}

/// The exit status of `outcome`, its error said on stderr.
fn exit_status(outcome: Result<u8>) -> u8 {
    match outcome {
        Ok(code) => code,
        Err(e) => {
            // An error may quote a file, the model API or a tool: shown,
            // never acted on by the terminal.
            eprintln!("hc: {}", style::shown(&format!("{e:#}")));
            e.downcast_ref::<exit::Exit>().map_or(1, |x| x.code)
        }
    }
}

/// A command that only reads and prints ends quietly when its reader
/// goes (`hc sessions | head -3`), as other Unix tools do, instead of
/// failing on a broken pipe. Commands that run programs keep Rust's
/// default (an error on a write to a gone program, never a signal).
fn default_sigpipe() {
    // SAFETY: setting a signal's disposition to its default, before any
    // thread is started.
    #[allow(unsafe_code)]
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

/// A write to stdout or stderr that fails — a full disk (`hc sessions >
/// /dev/full`), a reader gone where SIGPIPE is not the default — ends `hc`
/// with a line saying why (or quietly, for a reader gone, as ripgrep
/// does), not a panic: `println!` panics on a failed write.
fn output_errors_end_quietly() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let payload = info.payload();
        let message = (payload.downcast_ref::<String>().map(String::as_str))
            .or_else(|| payload.downcast_ref::<&str>().copied())
            .unwrap_or_default();
        let failed = ["failed printing to stdout: ", "failed printing to stderr: "]
            .iter()
            .find_map(|prefix| message.strip_prefix(prefix));
        if let Some(why) = refused_thread(message) {
            use std::io::Write as _;
            let line = format!(
                "hc: the system refused to start a thread ({why}): too many processes or threads \
                 are running, or a limit is reached (ulimit -u, a cgroup's pids.max); end some, \
                 or raise the limit, and try again\n"
            );
            let _ = std::io::stderr().write_all(line.as_bytes());
            std::process::exit(1)
        }
        match failed {
            Some(why) if why.contains("Broken pipe") => std::process::exit(0),
            Some(why) => {
                use std::io::Write as _;
                let line = format!("hc: cannot write the output: {why}\n");
                let _ = std::io::stderr().write_all(line.as_bytes());
                std::process::exit(1)
            }
            None => default(info),
        }
    }));
}

/// Why the system refused a thread, when `message` is the panic of a
/// thread that could not be started (std's `thread::spawn`, tokio's
/// workers and blocking pool): the OS's words.
fn refused_thread(message: &str) -> Option<&str> {
    ["failed to spawn thread: ", "OS can't spawn worker thread: "]
        .iter()
        .find_map(|prefix| message.split_once(prefix).map(|(_, why)| why))
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

/// The programs `hc` runs itself when it is a run's trampoline or zygote:
/// the built-ins, forked from it (contained already) instead of exec'ing
/// `hc program NAME`.
const CARRIED: contain::Carried = contain::Carried {
    carries: |args| matches!(args, [verb, name] if verb == "program" && builtins::find(name).is_some()),
    run: |args| {
        init_logging();
        let name = args.get(1).map_or("", String::as_str);
        exit_status(program(name).map(|()| 0))
    },
};

fn program(name: &str) -> Result<()> {
    builtins::run_program(name)
}

fn serve(stdio: bool, no_contain: bool) -> Result<()> {
    if !stdio {
        anyhow::bail!(
            "say how to serve: `hc serve --http` (the page) or `hc serve --stdio` (the protocol)"
        );
    }
    let prepared = Staged::here(Find::Existing, trust::Ask::Never)?.prepare(no_contain)?;
    // a host over stdio answers questions as it answers permissions
    let prepared = prepared.register(&settings::Flags::default(), true)?;
    let since = std::time::SystemTime::now();
    runtime()?.block_on(async move {
        let host = prepared.open()?;
        let engine = host.engine.clone();
        engine::serve_host(engine.clone(), tokio::io::stdin(), tokio::io::stdout()).await;
        host.close().await;
        hc_host::turn::sweep_git(&engine, since).await;
        Ok(())
    })
}
