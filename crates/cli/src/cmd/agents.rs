//! `hc agents`: the project's sessions as agents — queued, running,
//! waiting for you (with the question), done, failed, stopped — with their
//! host, branch, turns and cost; `--json`; `--watch` (the terminal told
//! when one ends or asks); `hc agents diff|merge ID` to bring a background
//! run's branch back; `hc stop ID`.

use crate::args::AgentsCommand;
use crate::project::open_store;
use crate::style::{bad, bold, cut, dim, ok, short_ids, shown, warn};
use anyhow::{Result, bail};
use hc_host::agents::{AgentRow, rows};
use std::collections::HashMap;
use std::time::Duration;
use substrate::Substrate;

/// How often `--watch` looks again (it also follows other processes'
/// commits as they land).
const WATCH_EVERY: Duration = Duration::from_millis(500);

/// `hc agents [diff|merge ID] [--json] [--watch]`.
pub fn agents(command: Option<AgentsCommand>, json: bool, watch: bool) -> Result<()> {
    if command.is_some() && (json || watch) {
        let flag = if json { "--json" } else { "--watch" };
        return Err(crate::exit::exit(
            2,
            format!("{flag} goes with `hc agents` alone (the list), not with diff, merge or rm"),
        ));
    }
    let (project, db) = open_store()?;
    match command {
        Some(AgentsCommand::Diff { session, stat }) => {
            let session = hc_host::sessions::resolve(&db, &session)?;
            if let Some(row) = rows(&db)?.into_iter().find(|r| r.id == session)
                && !matches!(row.status.as_str(), "queued" | "running" | "waiting")
            {
                hc_host::worktree::settle(&project.root, &session, &row.title)?;
            }
            let patch = hc_host::worktree::diff(&project.root, &session, stat)?;
            if patch.is_empty() {
                eprintln!(
                    "hc: {} changed nothing yet",
                    hc_host::worktree::branch_of(&session)
                );
            }
            // (a patch holds what the agent wrote: on a terminal, its
            // control characters are shown, never acted on)
            match std::io::IsTerminal::is_terminal(&std::io::stdout()) {
                true => println!("{}", shown(&patch)),
                false => println!("{patch}"),
            }
            Ok(())
        }
        Some(AgentsCommand::Merge { session }) => merge(&project.root, &db, &session),
        Some(AgentsCommand::Rm { session }) => {
            let session = ended(&db, &session, "remove its worktree")?;
            match hc_host::worktree::remove(&project.root, &session.id)? {
                true => println!("removed {}", hc_host::worktree::relative_path(&session.id)),
                false => println!("{} has no worktree", session.id),
            }
            Ok(())
        }
        None if watch => watch_rows(&db),
        None => {
            // an engine found gone is said as the record will have it
            let _ = engine::fail_gone(&db);
            print_rows(&rows(&db)?, json)
        }
    }
}

/// The row of session `given`, whose run has ended (a usage error
/// otherwise: `what` waits for its end).
fn ended(db: &Substrate, given: &str, what: &str) -> Result<AgentRow> {
    let session = hc_host::sessions::resolve(db, given)?;
    let row = rows(db)?.into_iter().find(|r| r.id == session);
    let Some(row) = row else {
        bail!("no session `{given}`");
    };
    if matches!(row.status.as_str(), "queued" | "running" | "waiting") {
        return Err(crate::exit::exit(
            2,
            format!(
                "{session} is {}: {what} once it has ended (hc attach {session} follows it; \
                 hc stop {session} ends it)",
                row.status
            ),
        ));
    }
    Ok(row)
}

/// `hc agents merge ID`: its branch merged into the current one, once its
/// run has ended; its worktree removed after (when it holds nothing more).
fn merge(root: &std::path::Path, db: &Substrate, given: &str) -> Result<()> {
    let row = ended(db, given, "merge it")?;
    hc_host::worktree::settle(root, &row.id, &row.title)?;
    let said = hc_host::worktree::merge(root, &row.id, &row.title)?;
    println!("{said}");
    match hc_host::worktree::remove(root, &row.id) {
        Ok(true) => eprintln!(
            "hc: removed its worktree {} (its branch stays)",
            hc_host::worktree::relative_path(&row.id)
        ),
        Ok(false) => {}
        Err(e) => eprintln!("hc: its worktree stays: {}", shown(&format!("{e:#}"))),
    }
    Ok(())
}

/// The project's agents as a table (`/agents` in `hc chat`).
pub fn print(db: &Substrate) -> Result<()> {
    let _ = engine::fail_gone(db);
    print_rows(&rows(db)?, false)
}

/// The rows, as a table or JSON.
fn print_rows(rows: &[AgentRow], as_json: bool) -> Result<()> {
    if as_json {
        println!("{}", serde_json::to_string_pretty(rows)?);
        return Ok(());
    }
    if rows.is_empty() {
        println!("no agents yet: start one with `hc run --bg \"…\"` (or `hc run`, `hc chat`)");
        return Ok(());
    }
    let ids: Vec<String> = rows.iter().map(|r| r.id.clone()).collect();
    let short = short_ids(&ids, 10);
    let width = short.iter().map(String::len).max().unwrap_or(10);
    println!(
        "{}",
        bold(&format!(
            "{:<width$}  {:<11}  {:<16}  {:>5}  {:>9}  {:>11}  {:<14}  {:<12}  TITLE",
            "ID", "STATUS", "STARTED", "TURNS", "COST", "LINES", "BRANCH", "HOST"
        ))
    );
    for (row, id) in rows.iter().zip(short) {
        let started = row
            .started
            .as_deref()
            .unwrap_or(&row.created)
            .replace('T', " ");
        let cost = row.cost_usd.map_or("—".to_owned(), |c| format!("${c:.4}"));
        let lines = match row.lines_added + row.lines_removed {
            0 => "—".to_owned(),
            _ => format!("+{} −{}", row.lines_added, row.lines_removed),
        };
        let status = match row.status.as_str() {
            "done" => ok(&format!("{:<11}", row.status)),
            "waiting" => warn(&format!("{:<11}", row.status)),
            "running" | "queued" | "empty" => format!("{:<11}", row.status),
            other => bad(&format!("{other:<11}")),
        };
        // a branch is hc/ and the session's id: as short as the id shown
        let branch = row.branch.as_ref().map_or("—".to_owned(), |b| {
            b.strip_prefix("hc/")
                .map_or(b.clone(), |_| format!("hc/{id}"))
        });
        let host = row.host.as_deref().unwrap_or("—");
        println!(
            "{id:<width$}  {status}  {:<16}  {:>5}  {cost:>9}  {lines:>11}  {:<14}  {:<12}  {}",
            started.get(..16).unwrap_or(&started),
            row.turns,
            cut(&branch, 14),
            cut(host, 12),
            cut(&row.title, 50)
        );
        if let Some(question) = &row.question {
            println!(
                "{:<width$}  {}",
                "",
                warn(&format!("↳ {}", cut(question, 100)))
            );
        }
        if let Some(error) = &row.error {
            println!("{:<width$}  {}", "", dim(&format!("↳ {}", cut(error, 100))));
        }
        if let Some(note) = &row.note {
            println!("{:<width$}  {}", "", dim(&format!("↳ {}", cut(note, 100))));
        }
        // (a run asked for on one host, or by one person, and run on or
        // by another says who asked and who ran it)
        let elsewhere = row.host.is_some() && row.asked_on != row.host;
        let another = row.asked_by.is_some() && row.person.is_some() && row.asked_by != row.person;
        if let (Some(by), Some(on), true) = (&row.asked_by, &row.asked_on, elsewhere || another) {
            let ran = match (&row.person, another) {
                (Some(person), true) => format!(", run by {person}"),
                _ => String::new(),
            };
            let asked = format!("↳ asked by {by} on {on}{ran}");
            println!("{:<width$}  {}", "", dim(&cut(&asked, 100)));
        }
    }
    Ok(())
}

/// `hc agents --watch`: the table redrawn as it changes, the terminal
/// told (bell, OSC 9 / OSC 777, `notify-send`) when an agent ends or
/// starts waiting for an answer; until Ctrl-C.
fn watch_rows(db: &Substrate) -> Result<()> {
    let mut seen: HashMap<String, String> = HashMap::new();
    let mut first = true;
    let mut shown_last = String::new();
    loop {
        let _ = db.follow();
        let _ = engine::fail_gone(db);
        let now = rows(db)?;
        for row in &now {
            let before = seen.insert(row.id.clone(), row.status.clone());
            if !first && before.as_deref() != Some(row.status.as_str()) {
                crate::notify::changed(row);
            }
        }
        first = false;
        let key = serde_json::to_string(&now)?;
        if key != shown_last {
            // clear the screen, then the table
            print!("\x1b[H\x1b[2J");
            print_rows(&now, false)?;
            println!("{}", dim("(watching; Ctrl-C to stop)"));
            shown_last = key;
        }
        std::thread::sleep(WATCH_EVERY);
    }
}

/// `hc send ID TEXT`: a message on the session, which its agent reads at
/// its next turn — now, when it runs; else when it next runs.
pub fn send(given: &str, text: &str) -> Result<()> {
    if text.trim().is_empty() {
        return Err(crate::exit::exit(2, "say something: hc send ID \"TEXT\""));
    }
    let (_, db) = open_store()?;
    let session = hc_host::sessions::resolve(&db, given)?;
    let person = db.person();
    let message = agent::contract::Message {
        text: text.to_owned(),
        from: Some(format!("{person} (hc send)")),
        sender: Some(agent::contract::Sender::person(&person, "hc send")),
        ..Default::default()
    };
    let entry = agent::contract::Entry::of(&message);
    let chunk = substrate::ChunkDecl::generated()
        .body(entry.body)
        .on(substrate::NewPlacement::instance(&session))
        .on(substrate::NewPlacement::instance(entry.kind));
    db.commit(substrate::Declaration::of(vec![chunk]), None)?;
    let running = rows(&db)?
        .into_iter()
        .find(|r| r.id == session)
        .is_some_and(|r| matches!(r.status.as_str(), "queued" | "running" | "waiting"));
    match running {
        true => println!("sent to {session}: its agent reads it at its next turn"),
        false => println!(
            "sent to {session}: its agent reads it when it next runs (hc run --resume {session} …)"
        ),
    }
    Ok(())
}

/// `hc stop ID`: its run ended wherever it runs (a queued one before it
/// starts); a session whose run has ended is said so.
pub fn stop(given: &str) -> Result<()> {
    let (_, db) = open_store()?;
    let session = hc_host::sessions::resolve(&db, given)?;
    let row = rows(&db)?.into_iter().find(|r| r.id == session);
    let (Some(row), true) = (
        row.clone(),
        row.as_ref()
            .is_some_and(|r| matches!(r.status.as_str(), "queued" | "running" | "waiting")),
    ) else {
        let status = row.map_or("empty".to_owned(), |r| r.status);
        println!("{session} is not running ({status}): nothing to stop");
        return Ok(());
    };
    let Some(process) = row.process else {
        bail!("{session} has no run to stop");
    };
    engine::stop_run(&db, &process)?;
    eprintln!("hc: stopping {}…", shown(&session));
    for _ in 0..300 {
        let _ = db.follow();
        let _ = engine::fail_gone(&db);
        let now = rows(&db)?.into_iter().find(|r| r.id == session);
        if let Some(now) = now
            && !matches!(now.status.as_str(), "queued" | "running" | "waiting")
        {
            println!("{session} {}", now.status);
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    bail!("{session} was asked to stop and has not yet; `hc agents` shows when it has")
}
