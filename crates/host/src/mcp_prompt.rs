//! MCP prompts as slash commands: `/mcp__SERVER__PROMPT ARGS…` as `hc
//! run`'s prompt or a line of `hc chat` becomes the prompt the server
//! gives — got by a recorded run of the server's hidden `mcp/SERVER/prompt`
//! program, the words after the command filling the prompt's arguments in
//! order (the last takes the rest).

use anyhow::{Result, anyhow, bail};
use engine::{Context, Engine};
use mcp::body::{McpProgram, Prompt};
use mcp::config::tool_name;
use mcp::extras::prompt_program;
use serde_json::{Map, Value, json};

/// The prompt `text` stands for, when it is an MCP prompt's slash command.
pub async fn expand(engine: &Engine, text: &str) -> Result<Option<String>> {
    let Some(command) = text.trim_start().strip_prefix("/mcp__") else {
        return Ok(None);
    };
    let (called, words) = command
        .split_once(char::is_whitespace)
        .map_or((command, ""), |(c, w)| (c, w.trim()));
    let Some((server, _)) = called.split_once("__") else {
        bail!("/mcp__{called}: an MCP prompt is /mcp__SERVER__PROMPT");
    };
    let host = Context::host();
    let program = prompt_program(server);
    engine
        .service(&host, &mcp::config::service_name(server), None)
        .await
        .map_err(|e| anyhow!("MCP server `{server}`: {}", e.message))?;
    let body = engine
        .db()
        .read(|snap| snap.body(&format!("program/{program}")))?
        .ok_or_else(|| anyhow!("MCP server `{server}` offers no prompts"))?;
    let wanted = format!("mcp__{called}");
    let prompts = McpProgram::parse(&body).prompts;
    let Some(prompt) = prompts
        .iter()
        .find(|p| tool_name(server, &p.name) == wanted)
    else {
        let names: Vec<String> = prompts
            .iter()
            .map(|p| format!("/{}", tool_name(server, &p.name)))
            .collect();
        bail!(
            "MCP server `{server}` has no prompt /{wanted}; its prompts: {}",
            names.join(", ")
        );
    };
    let input = json!({"name": prompt.name, "arguments": arguments(prompt, words)?});
    let output = crate::commands::run_for_output(engine, &program, input)
        .await?
        .ok_or_else(|| anyhow!("MCP server `{server}` did not answer for the prompt"))?;
    if output.is_error {
        bail!("MCP prompt /{wanted}: {}", output.text);
    }
    Ok(Some(output.text))
}

/// The prompt's arguments from the words after the command: in the order
/// declared, the last one taking the rest; a required one missing is an
/// error naming it.
fn arguments(prompt: &Prompt, words: &str) -> Result<Map<String, Value>> {
    let declared = &prompt.arguments;
    let mut rest = words;
    let mut out = Map::new();
    for (i, arg) in declared.iter().enumerate() {
        let name = &arg.name;
        let value = if i + 1 == declared.len() {
            std::mem::take(&mut rest)
        } else {
            let (first, more) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
            rest = more.trim_start();
            first
        };
        if value.is_empty() {
            if arg.required {
                let usage: Vec<String> = declared.iter().map(|a| a.name.to_uppercase()).collect();
                bail!(
                    "the prompt needs `{name}`: /{} {}",
                    prompt.name,
                    usage.join(" ")
                );
            }
            continue;
        }
        out.insert(name.to_owned(), json!(value));
    }
    Ok(out)
}
