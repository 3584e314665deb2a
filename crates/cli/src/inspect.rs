//! Inspection and scripting, straight from the substrate: `hc sessions`,
//! `hc scope`, `hc log`, `hc ps`, `hc programs`, `hc commit`.

use crate::project::Project;
use crate::style::{bad, bold, cut, dim, ok, short_ids};
use anyhow::{Context as _, Result, bail};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::Arc;
use substrate::{ChunkItem, Declaration, PlacementType, ScopeOpts, Substrate, TypeFilter};

/// The project here and its substrate, brought up to date.
pub fn open_store() -> Result<(Project, Arc<Substrate>)> {
    let here = std::env::current_dir().context("cannot read the working directory")?;
    let project = Project::find(&here)?;
    let (db, _) = project.open()?;
    Ok((project, db))
}

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
    let mut by_session: HashMap<&str, Vec<Value>> = sessions
        .iter()
        .map(|s| (s.id.as_str(), Vec::new()))
        .collect();
    for run in &runs {
        let session = run.placements.iter().find(|p| {
            p.kind == PlacementType::Instance && by_session.contains_key(p.scope.as_str())
        });
        if let Some(list) = session.and_then(|p| by_session.get_mut(p.scope.as_str())) {
            list.push(run.body_value());
        }
    }
    Ok(sessions
        .iter()
        .map(|s| {
            let body = s.body_value();
            let runs = by_session
                .get(s.id.as_str())
                .map(Vec::as_slice)
                .unwrap_or(&[]);
            SessionRow {
                id: s.id.clone(),
                title: body["title"]
                    .as_str()
                    .or(s.name.as_deref())
                    .unwrap_or("")
                    .to_owned(),
                created: body["created"].as_str().unwrap_or("").to_owned(),
                totals: Totals::of(runs),
                status: runs.last().map_or("empty".to_owned(), status_of),
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
}

impl Totals {
    /// The totals of these runs' process bodies.
    fn of(runs: &[Value]) -> Totals {
        let mut totals = Totals::default();
        for body in runs {
            let usage = &body["usage"];
            totals.turns += body["turns"].as_u64().unwrap_or(0);
            totals.input_tokens += crate::output::input_tokens(usage);
            totals.output_tokens += usage["output_tokens"].as_u64().unwrap_or(0);
            if let Some(cost) = body["cost_usd"].as_f64() {
                totals.cost_usd = Some(totals.cost_usd.unwrap_or(0.0) + cost);
            }
        }
        totals
    }
}

/// The totals of every agent run on `session`.
pub fn session_totals(db: &Substrate, session: &str) -> Result<Totals> {
    let runs: Vec<Value> = db
        .scope(&[session, "program/agent"], &ScopeOpts::default())?
        .chunks
        .iter()
        .filter(|r| r.is_on(session, PlacementType::Instance))
        .map(|r| r.body_value())
        .collect();
    Ok(Totals::of(&runs))
}

/// What a run's process body says of how it went.
pub fn status_of(body: &Value) -> String {
    match (body["status"].as_str(), body["stop_reason"].as_str()) {
        (Some("running" | "pending"), _) => "running".into(),
        (_, Some("end_turn")) => "done".into(),
        (_, Some("interrupted")) => "interrupted".into(),
        (_, Some("max_turns" | "max_budget")) => "stopped".into(),
        (_, Some(_)) => "failed".into(),
        (_, None) => body["error"]
            .as_str()
            .map_or("failed".into(), |e| format!("failed ({e})")),
    }
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
            .map(|r| json!({"id": r.id, "title": r.title, "created": r.created, "turns": r.totals.turns, "cost_usd": r.totals.cost_usd, "status": r.status}))
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

/// `hc scope ID… [--as-of N] [--match Q] [--limit N] [--json]`.
pub fn scope(
    ids: &[String],
    as_of: Option<u64>,
    query: Option<String>,
    limit: Option<usize>,
    as_json: bool,
) -> Result<()> {
    let (_, db) = open_store()?;
    let opts = ScopeOpts {
        as_of,
        match_: query,
        limit,
        ..ScopeOpts::default()
    };
    // A session may be named by a unique prefix of its id, as everywhere.
    let mut whole = Vec::with_capacity(ids.len());
    for id in ids {
        let known = db.read(|s| s.exists(id))?;
        whole.push(if !known && id.starts_with("s_") {
            crate::trace::resolve_session(&db, id)?
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
        println!("{} {}", bold(&s.id), dim(s.name.as_deref().unwrap_or("")));
        if let Some(text) = s.body_value()["text"].as_str() {
            println!("  {}", cut(text, 100));
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
        let text = body["text"]
            .as_str()
            .map_or_else(|| cut(&body.to_string(), 80), |t| cut(t, 80));
        println!(
            "{}  {}  {}  {}",
            c.id,
            dim(&types.join(",")),
            c.name.as_deref().unwrap_or(""),
            text
        );
    }
    if let Some(next) = &read.next_after {
        println!("{}", dim(&format!("more: --after {next}")));
    }
    Ok(())
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
    let records: Vec<Value> = read.chunks.iter().map(|c| c.body_value()).collect();
    let mut names: HashMap<String, String> = HashMap::new();
    for r in &records {
        if let Some(p) = r["dispatch_id"].as_str()
            && !names.contains_key(p)
        {
            let name = db
                .read(|s| s.chunk(p))?
                .and_then(|c| c.name.clone())
                .unwrap_or_else(|| "?".into());
            names.insert(p.to_owned(), name);
        }
    }
    if as_json {
        let out: Vec<Value> = records
            .iter()
            .map(|r| {
                let mut r = r.clone();
                r["by"] = json!(
                    r["dispatch_id"]
                        .as_str()
                        .map(|p| format!("{} ({p})", names[p]))
                        .unwrap_or_else(|| "host".into())
                );
                r
            })
            .collect();
        println!("{}", serde_json::to_string_pretty(&out)?);
        return Ok(());
    }
    for r in &records {
        let by = match r["dispatch_id"].as_str() {
            Some(p) => format!("{} {}", names[p], dim(p)),
            None => "host".to_owned(),
        };
        let count = |k: &str| r[k].as_array().map_or(0, Vec::len);
        println!(
            "{}  {}  {by}  {} created, {} changed, {} placements",
            bold(&format!("commit {}", r["id"])),
            dim(r["timestamp"].as_str().unwrap_or("")),
            count("created"),
            count("chunks_modified") - count("created"),
            count("placements_modified")
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
    let live: Vec<&Arc<ChunkItem>> = found
        .chunks
        .iter()
        .filter(|c| {
            matches!(
                c.body_value()["status"].as_str(),
                Some("running" | "pending")
            )
        })
        .collect();
    let ids: Vec<&str> = live.iter().map(|c| c.id.as_str()).collect();
    let parent_of = |c: &ChunkItem| {
        c.placements
            .iter()
            .find(|p| p.kind == PlacementType::Instance && ids.contains(&p.scope.as_str()))
            .map(|p| p.scope.clone())
    };
    if as_json {
        let list: Vec<Value> = live
            .iter()
            .map(|c| {
                let b = c.body_value();
                json!({"id": c.id, "program": c.name, "pid": b["pid"], "started": b["started"], "status": b["status"], "parent": parent_of(c)})
            })
            .collect();
        println!("{}", serde_json::to_string_pretty(&list)?);
        return Ok(());
    }
    if live.is_empty() {
        println!("no process is running");
        return Ok(());
    }
    fn show(
        items: &[&Arc<ChunkItem>],
        parent: Option<&str>,
        depth: usize,
        parent_of: &dyn Fn(&ChunkItem) -> Option<String>,
    ) {
        for c in items.iter().filter(|c| parent_of(c).as_deref() == parent) {
            let b = c.body_value();
            println!(
                "{}{}  {}  pid {}  since {}",
                "  ".repeat(depth),
                bold(c.name.as_deref().unwrap_or("?")),
                c.id,
                b["pid"],
                b["started"].as_str().unwrap_or("-")
            );
            show(items, Some(&c.id), depth + 1, parent_of);
        }
    }
    show(&live, None, 0, &parent_of);
    Ok(())
}

/// `hc programs [--json]`.
pub fn programs(as_json: bool) -> Result<()> {
    let (_, db) = open_store()?;
    let all = instances(&db, "engine/program")?;
    let mut rows: Vec<(String, Value)> = all
        .iter()
        .map(|c| {
            (
                c.name.clone().unwrap_or_else(|| c.id.clone()),
                c.body_value(),
            )
        })
        .collect();
    rows.sort_by(|a, b| a.0.cmp(&b.0));
    if as_json {
        let list: Vec<Value> = rows
            .iter()
            .map(|(name, b)| json!({"name": name, "description": b["text"], "executable": b["executable"], "capabilities": b["capabilities"], "concurrency_safe": b["concurrency_safe"], "read_only": b["read_only"], "tool": b["tool"]}))
            .collect();
        println!("{}", serde_json::to_string_pretty(&list)?);
        return Ok(());
    }
    for (name, b) in rows {
        let caps = &b["capabilities"];
        let read = match &caps["filesystem"]["read"] {
            Value::String(s) => s.clone(),
            Value::Array(a) if a.is_empty() => "none".into(),
            other => other.to_string(),
        };
        let write = match caps["filesystem"]["write"].as_array() {
            Some(a) if !a.is_empty() => a
                .iter()
                .filter_map(Value::as_str)
                .collect::<Vec<_>>()
                .join(","),
            _ => "none".into(),
        };
        let mut traits = vec![format!("read {read}"), format!("write {write}")];
        if caps["network"] == true {
            traits.push("network".into());
        }
        if b["concurrency_safe"] == true {
            traits.push("runs alongside".into());
        }
        if b["tool"] == false {
            traits.push("not a tool".into());
        }
        println!(
            "{}  {}",
            bold(&format!("{name:<10}")),
            dim(&traits.join(" · "))
        );
        println!("            {}", cut(b["text"].as_str().unwrap_or(""), 100));
    }
    Ok(())
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
