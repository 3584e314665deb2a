//! Inspection and scripting, straight from the substrate: `hc sessions`,
//! `hc scope`, `hc log`, `hc ps`, `hc programs`, `hc commit`.

use crate::project::open_store;
use crate::style::{bad, bold, cut, dim, ok, short_ids, shown};
use agent::contract::{RunBody, SessionBody};
use anyhow::{Context as _, Result, bail};
use hc_host::sessions::Gone;
use protocol::process::{ProcessBody, ProcessStatus};
use protocol::program::ProgramBody;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::Arc;
use substrate::{ChunkItem, Commit, Declaration, PlacementType, ScopeOpts, Substrate, TypeFilter};

fn instances(db: &Substrate, scope: &str) -> Result<Vec<Arc<ChunkItem>>> {
    Ok(db
        .scope(
            &[scope],
            &ScopeOpts {
                kind: TypeFilter::Instance,
                ..ScopeOpts::default()
            },
        )?
        .chunks)
}

/// One session as `hc sessions` shows it.
struct SessionRow {
    id: String,
    title: String,
    created: String,
    totals: Totals,
    status: String,
}

fn session_rows(db: &Substrate) -> Result<Vec<SessionRow>> {
    let sessions = instances(db, "session")?;
    let runs = instances(db, "program/agent")?;
    let mut gone = Gone::new(db);
    let mut by_session: HashMap<&str, Vec<RunBody>> = sessions
        .iter()
        .map(|s| (s.id.as_str(), Vec::new()))
        .collect();
    for run in &runs {
        let session = run.placements.iter().find(|p| {
            p.kind == PlacementType::Instance && by_session.contains_key(p.scope.as_str())
        });
        if let Some(list) = session.and_then(|p| by_session.get_mut(p.scope.as_str())) {
            let mut body = RunBody::parse(&run.body_value());
            if gone.judge(&body.process) {
                // As the next engine will record it.
                body.process.status = protocol::process::ProcessStatus::Failed;
                body.process.error = Some("hc was killed".into());
            }
            list.push(body);
        }
    }
    Ok(sessions
        .iter()
        .map(|s| {
            let body = SessionBody::parse(&s.body_value());
            let runs = by_session
                .get(s.id.as_str())
                .map(Vec::as_slice)
                .unwrap_or(&[]);
            let title = match body.title.is_empty() {
                true => s.name.clone().unwrap_or_default(),
                false => body.title,
            };
            SessionRow {
                id: s.id.clone(),
                title,
                created: body.created,
                totals: Totals::of(runs),
                status: runs.last().map_or("empty".to_owned(), RunBody::status),
            }
        })
        .collect())
}

/// What agent runs spent, together (a run's body counts its sub-agents).
#[derive(Default)]
pub struct Totals {
    /// Model calls.
    pub turns: u64,
    /// Input tokens, cache reads and writes included.
    pub input_tokens: u64,
    /// Output tokens.
    pub output_tokens: u64,
    /// Dollars, over the runs whose model had a price (`None`: none had).
    pub cost_usd: Option<f64>,
    /// Its tools' time and the lines they changed.
    pub work: agent::contract::Work,
}

impl Totals {
    /// The totals of these runs.
    fn of(runs: &[RunBody]) -> Totals {
        let mut totals = Totals::default();
        for run in runs {
            let run = &run.totals;
            totals.turns += u64::from(run.turns);
            totals.input_tokens += run.usage.input();
            totals.output_tokens += run.usage.output_tokens;
            totals.work.add(&run.work);
            if let Some(cost) = run.cost_usd {
                totals.cost_usd = Some(totals.cost_usd.unwrap_or(0.0) + cost);
            }
        }
        totals
    }
}

/// The totals of every agent run on `session`.
pub fn session_totals(db: &Substrate, session: &str) -> Result<Totals> {
    let runs: Vec<RunBody> = db
        .scope(&[session, "program/agent"], &ScopeOpts::default())?
        .chunks
        .iter()
        .filter(|r| r.is_on(session, PlacementType::Instance))
        .map(|r| RunBody::parse(&r.body_value()))
        .collect();
    Ok(Totals::of(&runs))
}

/// `hc sessions`.
pub fn sessions(as_json: bool) -> Result<()> {
    let (_, db) = open_store()?;
    print_sessions(&db, as_json)
}

/// The sessions of `db`, as a table or JSON.
pub fn print_sessions(db: &Substrate, as_json: bool) -> Result<()> {
    let rows = session_rows(db)?;
    if as_json {
        // Newest first, as the table lists them.
        let list: Vec<Value> = rows
            .iter()
            .rev()
            .map(|r| json!({"id": r.id, "title": r.title, "created": r.created, "turns": r.totals.turns, "cost_usd": r.totals.cost_usd, "tool_ms": r.totals.work.tool_ms, "lines_added": r.totals.work.lines_added, "lines_removed": r.totals.work.lines_removed, "status": r.status}))
            .collect();
        println!("{}", serde_json::to_string_pretty(&list)?);
        return Ok(());
    }
    if rows.is_empty() {
        println!("no sessions yet: start one with `hc run \"…\"` or `hc chat`");
        return Ok(());
    }
    let ids: Vec<String> = rows.iter().map(|r| r.id.clone()).collect();
    let short = short_ids(&ids, 10);
    let width = short.iter().map(String::len).max().unwrap_or(10);
    println!(
        "{}",
        bold(&format!(
            "{:<width$}  {:<16}  {:>5}  {:>9}  {:<11}  TITLE",
            "ID", "CREATED", "TURNS", "COST", "STATUS"
        ))
    );
    for (row, id) in rows.iter().zip(short).rev() {
        let created = row.created.replace('T', " ");
        let cost = row
            .totals
            .cost_usd
            .map_or("—".to_owned(), |c| format!("${c:.4}"));
        let status = match row.status.as_str() {
            "done" => ok(&format!("{:<11}", row.status)),
            "running" | "empty" => format!("{:<11}", row.status),
            other => bad(&format!("{other:<11}")),
        };
        println!(
            "{id:<width$}  {:<16}  {:>5}  {cost:>9}  {status}  {}",
            created.get(..16).unwrap_or(&created),
            row.totals.turns,
            cut(&row.title, 60)
        );
    }
    Ok(())
}

/// `hc scope ID… [--as-of N] [--match Q] [--limit N] [--after CURSOR]
/// [--json]`.
pub fn scope(ids: &[String], opts: ScopeOpts, as_json: bool) -> Result<()> {
    let (_, db) = open_store()?;
    // A session may be named by a unique prefix of its id, as everywhere.
    let mut whole = Vec::with_capacity(ids.len());
    for id in ids {
        let known = db.read(|s| s.exists(id))?;
        whole.push(if !known && id.starts_with("s_") {
            crate::sessions::resolve(&db, id)?
        } else {
            id.clone()
        });
    }
    let read = db.scope(&whole, &opts)?;
    if as_json {
        println!("{}", serde_json::to_string_pretty(&read)?);
        return Ok(());
    }
    for s in &read.scopes {
        println!(
            "{} {}",
            bold(&s.id),
            dim(&shown(s.name.as_deref().unwrap_or("")))
        );
        if let Some(text) = text_of(&s.body_value()) {
            println!("  {}", cut(&text, 100));
        }
    }
    println!(
        "{}",
        dim(&format!(
            "{} of {} members, as of commit {}",
            read.chunks.len(),
            read.total,
            read.as_of
        ))
    );
    for c in &read.chunks {
        let types: Vec<&str> = c
            .placements
            .iter()
            .filter(|p| p.kind == PlacementType::Instance && !ids.contains(&p.scope))
            .map(|p| p.scope.as_str())
            .collect();
        let body = c.body_value();
        let text = text_of(&body).map_or_else(|| cut(&body.to_string(), 80), |t| cut(&t, 80));
        println!(
            "{}  {}  {}  {}",
            c.id,
            dim(&types.join(",")),
            shown(c.name.as_deref().unwrap_or("")),
            text
        );
    }
    if let Some(next) = &read.next_after {
        // The same read, the next page: at the same commit, so nothing
        // committed meanwhile shifts the pages.
        println!(
            "{}",
            dim(&format!(
                "more: --after {next} --as-of {} (the same command with these)",
                read.as_of
            ))
        );
    }
    Ok(())
}

/// A chunk's `text`, when its body has one (any chunk: the substrate's
/// own convention for a readable body).
fn text_of(body: &Value) -> Option<String> {
    body.get("text").and_then(Value::as_str).map(str::to_owned)
}

/// `hc log [--limit N] [--json]`: commits, newest first, with who made them.
pub fn log(limit: usize, as_json: bool) -> Result<()> {
    let (_, db) = open_store()?;
    let read = db.scope(
        &["commits_root"],
        &ScopeOpts {
            limit: (limit > 0).then_some(limit),
            ..ScopeOpts::default()
        },
    )?;
    let records: Vec<Commit> = read
        .chunks
        .iter()
        .filter_map(|c| serde_json::from_value(c.body_value()).ok())
        .collect();
    let mut names: HashMap<String, String> = HashMap::new();
    for r in &records {
        if let Some(p) = &r.dispatch_id
            && !names.contains_key(p)
        {
            let name = db
                .read(|s| s.chunk(p))?
                .and_then(|c| c.name.clone())
                .unwrap_or_else(|| "?".into());
            names.insert(p.clone(), name);
        }
    }
    let by = |r: &Commit| match &r.dispatch_id {
        Some(p) => (names.get(p).cloned().unwrap_or_default(), Some(p.clone())),
        None => ("host".to_owned(), None),
    };
    if as_json {
        let out: Vec<Value> = records
            .iter()
            .map(|r| {
                let mut shown = serde_json::to_value(r).unwrap_or_default();
                let (name, process) = by(r);
                let who = process.map_or(name.clone(), |p| format!("{name} ({p})"));
                if let Some(fields) = shown.as_object_mut() {
                    fields.insert("by".into(), json!(who));
                }
                shown
            })
            .collect();
        println!("{}", serde_json::to_string_pretty(&out)?);
        return Ok(());
    }
    for r in &records {
        let who = match by(r) {
            (name, Some(p)) => format!("{name} {}", dim(&p)),
            (name, None) => name,
        };
        println!(
            "{}  {}  {who}  {} created, {} changed, {} placements",
            bold(&format!("commit {}", r.id)),
            dim(&r.timestamp),
            r.created.len(),
            r.chunks_modified.len() - r.created.len(),
            r.placements_modified.len()
        );
    }
    Ok(())
}

/// `hc ps [--json]`: processes still running, as a tree.
pub fn ps(as_json: bool) -> Result<()> {
    let (_, db) = open_store()?;
    let found = db.scope(
        &["engine/process"],
        &ScopeOpts {
            match_: Some("running OR pending".into()),
            limit: Some(100_000),
            ..ScopeOpts::default()
        },
    )?;
    let live: Vec<(&Arc<ChunkItem>, ProcessBody)> = found
        .chunks
        .iter()
        .map(|c| (c, ProcessBody::parse(&c.body_value())))
        .filter(|(_, b)| matches!(b.status, ProcessStatus::Running | ProcessStatus::Pending))
        .collect();
    // What an `hc` that is gone (killed) left marked running is not: the
    // next engine fails it; until then it is left out, and counted.
    let mut gone = Gone::new(&db);
    let (live, left): (Vec<_>, Vec<_>) = live.into_iter().partition(|(_, b)| !gone.judge(b));
    let ids: Vec<&str> = live.iter().map(|(c, _)| c.id.as_str()).collect();
    let parent_of = |c: &ChunkItem| {
        c.placements
            .iter()
            .find(|p| p.kind == PlacementType::Instance && ids.contains(&p.scope.as_str()))
            .map(|p| p.scope.clone())
    };
    if as_json {
        let list: Vec<Value> = live
            .iter()
            .map(|(c, b)| {
                json!({"id": c.id, "program": c.name, "pid": b.pid, "started": b.started, "status": b.status, "parent": parent_of(c)})
            })
            .collect();
        println!("{}", serde_json::to_string_pretty(&list)?);
        return Ok(());
    }
    if live.is_empty() {
        println!("no process is running");
    }
    show_processes(&live, None, 0, &parent_of);
    if !left.is_empty() {
        println!(
            "{}",
            dim(&format!(
                "{} process{} left marked running by an hc that was killed (not running; \
                 the next hc run marks {} failed)",
                left.len(),
                if left.len() == 1 { "" } else { "es" },
                if left.len() == 1 { "it" } else { "them" }
            ))
        );
    }
    Ok(())
}

/// The processes under `parent`, each a line, their children below.
fn show_processes(
    items: &[(&Arc<ChunkItem>, ProcessBody)],
    parent: Option<&str>,
    depth: usize,
    parent_of: &dyn Fn(&ChunkItem) -> Option<String>,
) {
    for (c, b) in items
        .iter()
        .filter(|(c, _)| parent_of(c).as_deref() == parent)
    {
        println!(
            "{}{}  {}  pid {}  since {}",
            "  ".repeat(depth),
            bold(&shown(c.name.as_deref().unwrap_or("?"))),
            c.id,
            b.pid.map_or("null".to_owned(), |p| p.to_string()),
            b.started.as_deref().unwrap_or("-")
        );
        show_processes(items, Some(&c.id), depth + 1, parent_of);
    }
}

/// `hc programs [--json]`.
pub fn programs(as_json: bool) -> Result<()> {
    let (_, db) = open_store()?;
    let all = instances(&db, "engine/program")?;
    let mut rows: Vec<(String, ProgramBody)> = all
        .iter()
        .filter_map(|c| {
            let name = c.name.clone().unwrap_or_else(|| c.id.clone());
            let body = ProgramBody::parse(&name, &c.body_value()).ok()?;
            Some((name, body))
        })
        .collect();
    rows.sort_by(|a, b| a.0.cmp(&b.0));
    if as_json {
        let list: Vec<Value> = rows
            .iter()
            .map(|(name, b)| json!({"name": name, "description": b.text, "executable": b.executable, "capabilities": b.capabilities, "concurrency_safe": b.concurrency_safe, "read_only": b.read_only, "tool": b.tool, "runtime": b.runtime, "served_by": b.served_by}))
            .collect();
        println!("{}", serde_json::to_string_pretty(&list)?);
        return Ok(());
    }
    for (name, b) in rows {
        println!(
            "{}  {}",
            bold(&format!("{name:<10}")),
            dim(&traits(&b).join(" · "))
        );
        println!("            {}", cut(&b.text, 100));
    }
    Ok(())
}

/// What a program may do, in a few words each.
fn traits(b: &ProgramBody) -> Vec<String> {
    let fs = &b.capabilities.filesystem;
    let read = match &fs.read {
        protocol::ReadAccess::All => "all".to_owned(),
        protocol::ReadAccess::Paths(p) if p.is_empty() => "none".to_owned(),
        protocol::ReadAccess::Paths(p) => serde_json::to_string(p).unwrap_or_default(),
    };
    let write = match fs.write.as_slice() {
        [] => "none".to_owned(),
        paths => paths.join(","),
    };
    let mut traits = vec![format!("read {read}"), format!("write {write}")];
    if b.capabilities.network {
        traits.push("network".into());
    }
    if b.concurrency_safe {
        traits.push("runs alongside".into());
    }
    if !b.tool {
        traits.push("not a tool".into());
    }
    if let Some(service) = &b.served_by {
        traits.push(format!("served by {service}"));
    }
    if b.runtime == protocol::program::Runtime::Service {
        traits.push("service".into());
    }
    traits
}

/// `hc commit [FILE]`: a declaration from a file, or stdin, committed by
/// the host; prints the commit record.
pub fn commit(file: Option<&str>) -> Result<()> {
    let text = match file.filter(|f| *f != "-") {
        Some(path) => {
            std::fs::read_to_string(path).with_context(|| format!("cannot read {path}"))?
        }
        None => {
            let mut text = String::new();
            std::io::Read::read_to_string(&mut std::io::stdin(), &mut text)
                .context("cannot read the declaration from stdin")?;
            text
        }
    };
    if text.trim().is_empty() {
        bail!(
            "no declaration: give a file, or pipe one in (JSON: {{\"chunks\": […], \"placements\": […], \"remove\": {{…}}}})"
        );
    }
    let declaration = Declaration::from_json(&text)
        .map_err(|e| anyhow::anyhow!("the declaration is not valid: {e}"))?;
    let (_, db) = open_store()?;
    let record = db.commit(declaration, None)?;
    println!("{}", serde_json::to_string_pretty(&record)?);
    db.checkpoint()?;
    Ok(())
}
