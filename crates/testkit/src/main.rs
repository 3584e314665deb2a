//! `hc-fake-model`: serves a script file (or, with `--demo`, the built-in
//! demo) as a fake model API on 127.0.0.1, so hermitcrab runs end to end
//! without an API key. The script format is
//! in the testkit crate's documentation.

use anyhow::{Context as _, Result};
use clap::Parser;
use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;
use testkit::{FakeModel, Script};

/// Serve a scripted fake of the Anthropic Messages API (and OpenAI chat
/// completions) on 127.0.0.1.
#[derive(Parser)]
#[command(name = "hc-fake-model", version, about)]
#[command(group = clap::ArgGroup::new("source").required(true).args(["script", "demo"]))]
struct Args {
    /// The script: a JSON file of turns (see the testkit crate docs).
    script: Option<PathBuf>,
    /// Serve the built-in demo script instead (it lists the project's
    /// files, reads its README and answers), so `hc` runs without a key.
    #[arg(long)]
    demo: bool,
    /// The port to listen on (0 picks a free one).
    #[arg(long, default_value_t = 0)]
    port: u16,
}

fn main() -> ExitCode {
    if let Ok(filter) = std::env::var("HC_LOG") {
        let _ = tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::new(filter))
            .with_writer(std::io::stderr)
            .try_init();
    }
    match run(Args::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("hc-fake-model: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// The demo script, compiled in so the installed binary needs no file.
const DEMO: &str = include_str!("../scripts/demo.json");

fn run(args: Args) -> Result<()> {
    let (script, source) = match &args.script {
        Some(path) => (Script::load(path)?, path.display().to_string()),
        None => (
            Script::from_json(DEMO).context("the built-in demo script")?,
            "the built-in demo".to_owned(),
        ),
    };
    let turns = script.turns.len();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    runtime.block_on(async move {
        let fake = FakeModel::start_on(args.port, script)
            .await
            .with_context(|| format!("cannot listen on 127.0.0.1:{}", args.port))?;
        // One write, and none of it fatal: whoever started the server may
        // read the first line and close the pipe (`| head -1`), and the
        // server must go on serving.
        let said = format!(
            "hc-fake-model listening on {}\nANTHROPIC_BASE_URL={}\nOPENAI_BASE_URL={}\n",
            fake.base_url(),
            fake.base_url(),
            fake.openai_base_url()
        );
        let mut out = std::io::stdout().lock();
        let _ = out.write_all(said.as_bytes()).and_then(|()| out.flush());
        drop(out);
        let _ = writeln!(
            std::io::stderr(),
            "serving {turns} turn(s) from {source}; Ctrl-C stops"
        );
        tokio::signal::ctrl_c()
            .await
            .context("cannot wait for Ctrl-C")?;
        fake.shutdown().await;
        Ok(())
    })
}
