//! `hc replay SESSION [--at TURN]`: a recorded session run again through
//! today's harness — hooks, rules, tools, MCP servers as configured now —
//! with the model's recorded answers (no key, no network), in a scratch
//! copy of the project at the files the session started from; each model
//! request and tool result that differs from the record is reported, the
//! first as a diff, and the exit code is 1 when any does. The replay's
//! session stays, to look at (`hc trace`). The work is `hc_host::replay`.

use crate::args::SettingFlags;
use anyhow::Result;
use hc_host::exit::exit;
use hc_host::open::{Find, Staged, runtime};
use hc_host::sessions::Choice;
use hc_host::turn::Turn;

/// `hc replay`.
pub fn replay(session: Option<String>, at: Option<usize>, flags: SettingFlags) -> Result<()> {
    let staged = Staged::here(Find::Existing, hc_host::trust::Ask::Never)?;
    let flags = flags.into_flags();
    let (_, mut config) = hc_host::settings::resolve(&staged.files, &flags, false)
        .map_err(|e| exit(2, format!("{e:#}")))?;
    let root = staged.project.root.clone();
    let scratch = tempfile::Builder::new().prefix("hc-replay-").tempdir()?;
    let mut prepared = staged.prepare(false)?;
    prepared.config.project_root = scratch.path().to_path_buf();
    prepared.config.effects_dir = None;
    let prepared = prepared.register(&flags, false)?;
    let code = runtime()?.block_on(async move {
        let host = prepared.open()?;
        let engine = &host.engine;
        let done = async {
            let session = match &session {
                None => hc_host::sessions::newest_recorded(engine.db())?,
                Some(given) => hc_host::sessions::resolve(engine.db(), given)?,
            };
            if let Some(n) = at {
                hc_host::replay::check_turn(engine, &session, n)?;
            }
            for said in hc_host::replay::scratch(engine, &root, &session, scratch.path())? {
                eprintln!("hc: {said}");
            }
            config.replay = Some(session.clone());
            let replayed = run_prompts(engine, &session, &config).await?;
            let roots = (root.as_path(), scratch.path());
            let (calls, differences) =
                hc_host::replay::compare(engine, &session, &replayed, roots, at).await?;
            Ok::<_, anyhow::Error>(report(&session, &replayed, calls, &differences))
        }
        .await;
        host.close().await;
        done
    })?;
    if code != 0 {
        return Err(exit(code, ""));
    }
    Ok(())
}

/// The prompts of `session` run again, in order, on a new session: its id.
async fn run_prompts(
    engine: &engine::Engine,
    session: &str,
    config: &agent::AgentConfig,
) -> Result<String> {
    let mut replayed: Option<String> = None;
    for prompt in hc_host::replay::prompts(engine, session)? {
        // (its session says it is a replay, and of what)
        let id = match &replayed {
            Some(id) => id.clone(),
            None => {
                let (id, made) = agent::launch::replay_session(&prompt, session);
                engine.commit(&engine::Context::host(), made)?;
                id
            }
        };
        let choice = Choice::Known(id);
        let turn = Turn::of(&prompt, config, &choice, &hc_host::confirm::NoOne);
        let mut sink = hc_host::replay::Quiet;
        let answerer = hc_host::replay::answerer();
        let finished = hc_host::turn::turn(engine, turn, &mut sink, &answerer).await?;
        replayed = Some(finished.session);
    }
    replayed.ok_or_else(|| exit(2, format!("session {session} has no prompt to replay")))
}

/// Says what differed (the first as a diff); the exit code it means.
fn report(
    session: &str,
    replayed: &str,
    calls: usize,
    differences: &[hc_host::replay::Difference],
) -> u8 {
    let Some(first) = differences.first() else {
        println!(
            "replayed {session} as {replayed}: {calls} model call{}, every request and tool \
             result as recorded",
            if calls == 1 { "" } else { "s" }
        );
        return 0;
    };
    println!(
        "replayed {session} as {replayed}: {} difference{} from the record",
        differences.len(),
        if differences.len() == 1 { "" } else { "s" }
    );
    for d in differences {
        println!("  {}", d.what);
    }
    println!("\nfirst: {} (--- recorded, +++ replayed)", first.what);
    let diff = similar::TextDiff::from_lines(&first.recorded, &first.replayed);
    let text = diff
        .unified_diff()
        .context_radius(3)
        .header("recorded", "replayed")
        .to_string();
    crate::cmd::trace::print_diff(&text);
    1
}
