//! `hc rewind` — the project's files back as they were before a turn
//! (whatever tool changed them, shell included), and/or the conversation
//! forked there; `--list` the turns with the files each changed; `--undo`
//! the last rewind — and `hc fork`. The record and the plan are
//! `hc_host::rewind`, the fork `hc_host::fork`.

use anyhow::{Result, bail};
use hc_host::exit::exit;
use hc_host::fork::{Cut, fork};
use hc_host::open::{Find, Host, Staged, runtime};
use hc_host::rewind::{Plan, PutBack, Record, To};
use std::io::Write as _;

/// What `hc rewind` was asked (its flags).
#[derive(Debug, Default, clap::Args)]
pub struct RewindRequest {
    /// The session id (or a unique prefix of it); none: the newest.
    pub session: Option<String>,
    /// Before this turn: a model call as `hc trace` numbers them (`answer #N`).
    #[arg(long, value_name = "TURN", conflicts_with = "prompt")]
    pub to: Option<usize>,
    /// Before the session's K-th prompt (as Claude Code checkpoints).
    #[arg(long, value_name = "K")]
    pub prompt: Option<usize>,
    /// The files only.
    #[arg(long, conflicts_with_all = ["conversation", "both"])]
    pub code: bool,
    /// The conversation only (forked there: a new session).
    #[arg(long, conflicts_with = "both")]
    pub conversation: bool,
    /// Files and conversation (the default when no one is at a terminal to ask).
    #[arg(long)]
    pub both: bool,
    /// Overwrite files changed since the session recorded them.
    #[arg(long, conflicts_with = "conversation")]
    pub force: bool,
    /// Undo the session's last rewind.
    #[arg(long, conflicts_with_all = ["to", "prompt", "code", "conversation", "both", "list"])]
    pub undo: bool,
    /// The turns, with the files each changed.
    #[arg(long, conflicts_with_all = ["to", "prompt", "code", "conversation", "both", "force"])]
    pub list: bool,
    /// As JSON (with --list).
    #[arg(long, requires = "list")]
    pub json: bool,
}

/// Which sides a rewind takes back.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Sides {
    code: bool,
    conversation: bool,
}

/// `hc rewind`.
pub fn rewind(asked: RewindRequest) -> Result<()> {
    let staged = Staged::here(Find::Existing, hc_host::trust::Ask::Never)?;
    let prepared = staged.prepare(false)?;
    runtime()?.block_on(async move {
        let host = prepared.open()?;
        let done = rewind_on(&host, &asked).await;
        host.close().await;
        done
    })
}

async fn rewind_on(host: &Host, asked: &RewindRequest) -> Result<()> {
    let engine = &host.engine;
    let session = match &asked.session {
        None => hc_host::sessions::newest(engine.db())?,
        Some(given) => hc_host::sessions::resolve(engine.db(), given)?,
    };
    if asked.undo {
        let plan = hc_host::rewind::undo_plan(engine, &session)?;
        println!("{}", put_back(engine, &session, &plan, asked.force).await?);
        return Ok(());
    }
    let record = Record::read(engine, &session)?;
    if asked.list {
        return list(&record, asked.json);
    }
    let to = match (asked.to, asked.prompt) {
        (Some(n), _) => To::Turn(n),
        (None, Some(k)) => To::Prompt(k),
        (None, None) => pick(&record)?,
    };
    let first = record.first_call(to)?;
    let sides = sides(asked)?;
    if sides.code {
        let plan = record.plan(first);
        println!("{}", put_back(engine, &session, &plan, asked.force).await?);
    }
    if sides.conversation {
        let forked = fork_before(engine, &session, to)?;
        println!(
            "conversation forked before {}: session {forked} (hc chat --resume {forked})",
            shown(to)
        );
    }
    Ok(())
}

/// A new session with `session`'s conversation up to before `to`.
fn fork_before(engine: &engine::Engine, session: &str, to: To) -> Result<String> {
    let cut = match to {
        To::Prompt(k) => Cut::BeforePrompt(k),
        To::Turn(n) => Cut::Before(n),
    };
    fork(engine, session, cut)
}

fn shown(to: To) -> String {
    match to {
        To::Prompt(k) => format!("prompt {k}"),
        To::Turn(n) => format!("turn {n}"),
    }
}

/// `/rewind [N]` in `hc chat`: what to say, and the session the chat
/// goes on with (a fork, when the conversation was rewound).
pub fn in_chat(
    engine: &engine::Engine,
    rt: &tokio::runtime::Runtime,
    session: &str,
    arg: &str,
) -> Result<(String, Option<String>)> {
    let record = Record::read(engine, session)?;
    let mut words = arg.split_whitespace();
    let (turn, side) = (words.next().unwrap_or(""), words.next());
    let to = match turn.trim_start_matches('#') {
        "" => pick(&record)?,
        n => To::Turn(n.parse().map_err(|_| {
            exit(
                2,
                format!("`{n}` is not a turn number: /rewind N, or /rewind to pick"),
            )
        })?),
    };
    let first = record.first_call(to)?;
    let asked = RewindRequest {
        code: matches!(side, Some("files" | "code")),
        conversation: side == Some("conversation"),
        both: side == Some("both"),
        ..RewindRequest::default()
    };
    if let Some(other) = side.filter(|s| !["files", "code", "conversation", "both"].contains(s)) {
        return Err(exit(
            2,
            format!("`{other}`: /rewind N files, conversation or both"),
        ));
    }
    let sides = sides(&asked)?;
    let mut said = Vec::new();
    let root = engine.config().project_root.clone();
    if sides.code {
        let plan = record.plan(first);
        let changed = plan.changed_since(&root);
        let force = !changed.is_empty()
            && ask(&format!(
                "{} changed since the session recorded {}: overwrite? [y/N] ",
                changed.join(", "),
                if changed.len() == 1 { "it" } else { "them" }
            ))?
            .trim()
            .eq_ignore_ascii_case("y");
        said.push(rt.block_on(put_back(engine, session, &plan, force))?);
    }
    let mut now = None;
    if sides.conversation {
        let forked = fork_before(engine, session, to)?;
        said.push(format!(
            "the conversation goes on from before {} (session {forked}; {session} is kept as it was)",
            shown(to)
        ));
        now = Some(forked);
    }
    Ok((said.join("\n"), now))
}

/// The sides asked for: one flag, else asked on a terminal, else both.
fn sides(asked: &RewindRequest) -> Result<Sides> {
    let given = match (asked.code, asked.conversation, asked.both) {
        (true, false, false) => Some((true, false)),
        (false, true, false) => Some((false, true)),
        (false, false, _) if asked.both => Some((true, true)),
        (false, false, false) => None,
        _ => bail!("give one of --code, --conversation and --both"),
    };
    let (code, conversation) = match given {
        Some(sides) => sides,
        None if crate::tty::person().0 => {
            let answer = ask(
                "Rewind [b]oth files and conversation, the [f]iles only, or the [c]onversation only? [b] ",
            )?;
            match answer.trim() {
                "" | "b" | "both" => (true, true),
                "f" | "files" | "code" => (true, false),
                "c" | "conversation" => (false, true),
                other => bail!("`{other}` is not b, f or c: nothing was rewound"),
            }
        }
        None => (true, true),
    };
    Ok(Sides { code, conversation })
}

/// A turn picked on the terminal (none given).
fn pick(record: &Record) -> Result<To> {
    if !crate::tty::person().0 {
        return Err(exit(
            2,
            "say where to rewind to: --to N (a turn, `answer #N` in hc trace) or --prompt K; \
             `hc rewind --list` shows the turns and the files each changed",
        ));
    }
    list(record, false)?;
    let answer = ask("Rewind to before which turn? ")?;
    answer
        .trim()
        .trim_start_matches('#')
        .parse()
        .map(To::Turn)
        .map_err(|_| {
            exit(
                2,
                format!(
                    "`{}` is not a turn number: nothing was rewound",
                    answer.trim()
                ),
            )
        })
}

/// A line typed at the terminal (Ctrl-D or none: nothing is rewound).
fn ask(question: &str) -> Result<String> {
    crate::tty::ask_now(question).ok_or_else(|| exit(2, "no answer: nothing was rewound"))
}

/// `--list`: each turn, the prompt it answered, and the files it changed.
fn list(record: &Record, json: bool) -> Result<()> {
    let mut out = std::io::stdout().lock();
    if json {
        let turns: Vec<_> = record
            .turns
            .iter()
            .map(|t| serde_json::json!({"turn": t.n, "prompt": t.prompt, "text": t.text, "files": t.files}))
            .collect();
        writeln!(out, "{}", serde_json::to_string_pretty(&turns)?)?;
        return Ok(());
    }
    if record.turns.is_empty() {
        writeln!(out, "no turns yet: nothing to rewind")?;
    }
    for t in &record.turns {
        let files = match t.files.len() {
            0 => crate::style::dim("no files"),
            _ => t.files.join(", "),
        };
        writeln!(
            out,
            "#{:<3} prompt {:<2} {}  — {files}",
            t.n,
            t.prompt,
            cut(&t.text, 60)
        )?;
    }
    Ok(())
}

fn cut(text: &str, n: usize) -> String {
    match text.char_indices().nth(n) {
        Some((i, _)) => format!("{}…", &text[..i]),
        None => text.to_owned(),
    }
}

/// Runs the rewind of `plan`, saying first what cannot be put back and
/// stopping on files changed since the record (unless `force`); what to
/// say of it.
async fn put_back(
    engine: &engine::Engine,
    session: &str,
    plan: &Plan,
    force: bool,
) -> Result<String> {
    for (path, why) in &plan.unrestorable {
        eprintln!("hc: cannot put back {path}: {why}");
    }
    match hc_host::rewind::put_back(engine, session, plan, force).await? {
        PutBack::Nothing => Ok("no file to put back".to_owned()),
        PutBack::ChangedSince(changed) => {
            let (what, it) = match changed.len() {
                1 => ("a file", "it"),
                _ => ("files", "them"),
            };
            Err(exit(
                1,
                format!(
                    "nothing was rewound: {what} changed since the session recorded {it} (by you \
                     or another session), and a rewind never overwrites that: {}\nLook at {it}, \
                     or rewind with --force to overwrite.",
                    changed.join(", ")
                ),
            ))
        }
        PutBack::Done(applied) => Ok(format!(
            "{} (rewind {}; `hc rewind --undo` undoes it)",
            applied.text, applied.process
        )),
    }
}

/// `hc fork SESSION [--at N] [--worktree]`: prints the new session's id
/// (the worktree's path on stderr).
pub fn fork_command(session: &str, at: Option<usize>, worktree: bool) -> Result<()> {
    let prepared = Staged::here(Find::Existing, hc_host::trust::Ask::Never)?.prepare(false)?;
    runtime()?.block_on(async move {
        let host = prepared.open()?;
        let made = (|| {
            let session = hc_host::sessions::resolve(host.engine.db(), session)?;
            let cut = at.map_or(Cut::Whole, Cut::After);
            let forked = fork(&host.engine, &session, cut)?;
            if worktree {
                let (path, said) = hc_host::fork::worktree(
                    &host.engine,
                    &host.project.root,
                    &session,
                    at,
                    &forked,
                )?;
                for line in said {
                    eprintln!("hc: {line}");
                }
                eprintln!(
                    "hc: its files are in {} (branch {}): cd there and `hc chat --resume {forked}`",
                    path.display(),
                    hc_host::worktree::branch_of(&forked)
                );
            }
            Ok::<_, anyhow::Error>(forked)
        })();
        host.close().await;
        println!("{}", made?);
        Ok(())
    })
}
