//! What a host says of what happened, in words: a call's input in a few
//! words, one rebuilt request against the one before it; and what it
//! reads of a run to say so (whether a program only reads, a finished
//! run's answer, a session's model calls, the tools a run offers).

use anyhow::{Context as _, Result};
use serde_json::Value;

/// A call's input in a few words.
pub fn summary(program: &str, input: &Value) -> String {
    let pick = |k: &str| input[k].as_str().map(str::to_owned);
    let text = match program {
        "read" | "write" | "edit" => pick("file_path"),
        "glob" | "grep" => pick("pattern").map(|p| match pick("path") {
            Some(path) => format!("{p} in {path}"),
            None => p,
        }),
        "shell" => pick("command"),
        "web-fetch" => pick("url"),
        "agent" => pick("description").or_else(|| pick("text")),
        "skill" => pick("name"),
        // a block tool: the block, the address, what is written
        "block_read" | "block_write" | "write_entry" | "block_create" => pick("name").map(|name| {
            let at = pick("path").map_or(String::new(), |p| format!(" {p}"));
            match pick("content").or_else(|| pick("pscale0")) {
                Some(text) => format!("{name}{at}: {text}"),
                None => format!("{name}{at}"),
            }
        }),
        "call_llm" => pick("prompt"),
        // a memory change: what, where, the text or the entry
        "memory" => pick("action").map(|action| {
            let scope = pick("scope").unwrap_or_else(|| "project".into());
            let what = pick("text").or_else(|| pick("id")).unwrap_or_default();
            format!("{action} ({scope}): {what}")
        }),
        _ => None,
    }
    .unwrap_or_else(|| input.to_string());
    crate::text::cut(&text, 80)
}

/// Request `n` against request `n − 1` (their bodies), as a unified diff
/// of their pretty-printed JSON.
pub fn diff_text(before: &[u8], after: &[u8], n: usize) -> Result<String> {
    let pretty = |b: &[u8]| -> Result<String> {
        let v: serde_json::Value =
            serde_json::from_slice(b).context("a rebuilt request is not JSON")?;
        Ok(serde_json::to_string_pretty(&v)? + "\n")
    };
    let (before, after) = (pretty(before)?, pretty(after)?);
    Ok(similar::TextDiff::from_lines(&before, &after)
        .unified_diff()
        .context_radius(3)
        .header(&format!("request {}", n - 1), &format!("request {n}"))
        .to_string())
}

/// Whether `program` only reads (by its registration; an own tool or
/// one not found counts as reading).
pub fn read_only(engine: &engine::Engine, program: &str) -> bool {
    let name = agent::names::program_of(program);
    let read = engine.scope(
        &engine::Context::host(),
        &[format!("program/{name}")],
        &protocol::ScopeOpts::default(),
    );
    read.ok()
        .and_then(|r| r.scopes.first().map(|c| c.body_value()))
        .and_then(|body| protocol::program::ProgramBody::parse(name, &body).ok())
        .is_none_or(|b| b.read_only)
}

/// A finished run's answer: its `engine/output` text.
pub fn answer_of(done: &substrate::ScopeResult) -> String {
    done.chunks
        .iter()
        .find(|c| c.is_on("engine/output", substrate::PlacementType::Instance))
        .map(|c| protocol::program::Output::parse(&c.body_value()).text)
        .unwrap_or_default()
}

/// How many model calls `session` has made (over all its runs).
pub fn model_calls(engine: &engine::Engine, session: &str) -> Result<usize> {
    let chunks = engine.scope(
        &engine::Context::host(),
        &[session.to_owned()],
        &protocol::ScopeOpts::default(),
    )?;
    Ok(agent::calls(&chunks.chunks).len())
}

/// The tools a run offers: the programs models may call, and the agent's own.
pub fn tool_names(engine: &engine::Engine) -> Vec<String> {
    let programs = engine
        .scope(
            &engine::Context::host(),
            &["engine/program".to_owned()],
            &protocol::ScopeOpts {
                kind: substrate::TypeFilter::Instance,
                ..protocol::ScopeOpts::default()
            },
        )
        .map(|r| r.chunks)
        .unwrap_or_default();
    let mut names: Vec<String> = programs
        .iter()
        .filter_map(|c| {
            let name = c.name.clone()?;
            let body = protocol::program::ProgramBody::parse(&name, &c.body_value()).ok()?;
            body.offered_as_tool().then_some(name)
        })
        .collect();
    names.sort();
    names.extend(agent::catalog::OWN_TOOLS.map(str::to_owned));
    names
}
