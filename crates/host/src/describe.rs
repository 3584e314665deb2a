//! What a host says of what happened, in words: a call's input in a few
//! words, one rebuilt request against the one before it.

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
