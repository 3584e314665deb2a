//! The part of a request a context event fixes for every call made under
//! it — model, reply limit, thinking, system blocks, tools — with the two
//! cache breakpoints that end the system and the tools.

use crate::config::AgentConfig;
use crate::contract::ContextBody;
use crate::sources::knowledge::Known;
use model::{CacheControl, MessagesRequest, SystemBlock, Thinking, Tool};
use serde_json::Value;

/// A program the model may call: its name, description and input schema,
/// as its chunks said at the context event's `as_of`.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolDef {
    /// The program's name (the tool's).
    pub name: String,
    /// Its `body.text`.
    pub description: String,
    /// Its input type's `body.schema`.
    pub schema: Value,
}

/// The beta the API's `output_config.effort` goes with.
const EFFORT_BETA: &str = "effort-2025-11-24";

/// What a context event fixes for every call made under it.
#[derive(Clone, Debug, PartialEq)]
pub struct Prefix {
    model: String,
    max_tokens: u32,
    thinking: Option<Thinking>,
    system: Vec<SystemBlock>,
    tools: Vec<Tool>,
    betas: Vec<String>,
    effort: Option<String>,
    /// Thinking's `display`, when given.
    display: Option<String>,
}

impl Prefix {
    /// The prefix of `context`, for a run configured by `config`, with
    /// what it pins and the memory it names (`known`).
    pub fn new(
        config: &AgentConfig,
        context: &ContextBody,
        known: &Known,
        tools: &[ToolDef],
    ) -> Prefix {
        let mut system = Vec::new();
        if let (Some(shell), Some(record)) = (&known.shell, &context.shell) {
            system.push(SystemBlock::text(shell.render(record.boot)));
        }
        system.push(SystemBlock::text(base_text(context)));
        if !known.pinned.is_empty() {
            system.push(SystemBlock::text(crate::sources::knowledge::render(
                &known.pinned,
            )));
        }
        if let Some(memory) = crate::memory::render(&known.memory) {
            system.push(SystemBlock::text(memory));
        }
        if let Some(extra) = config.system_append.as_deref().filter(|s| !s.is_empty()) {
            system.push(SystemBlock::text(extra));
        }
        if let Some(last) = system.pop() {
            system.push(last.cached(CacheControl::ephemeral()));
        }
        let names = config.tool_names;
        let mut all: Vec<Tool> = tools
            .iter()
            .map(|t| {
                let mut tool =
                    Tool::custom(names.show(&t.name), described(t, context), t.schema.clone());
                if let Tool::Custom(custom) = &mut tool {
                    custom.defer_loading = context.deferred.contains(&t.name);
                }
                tool
            })
            .collect();
        for server in &config.server_tools {
            if let Ok(tool) = serde_json::from_value::<Tool>(server.clone()) {
                all.push(tool);
            }
        }
        // programmatic tool calling: code the API runs may call the block
        // tools when server code execution is on
        let code = config.server_tools.iter().find_map(|t| {
            t["type"]
                .as_str()
                .filter(|t| t.starts_with("code_execution_"))
        });
        for own in &context.own_tools {
            let mut own = own.clone();
            if let Some(name) = own["name"].as_str().map(|n| names.show(n).to_owned()) {
                own["name"] = Value::String(name);
            }
            let block_tool = own["name"]
                .as_str()
                .is_some_and(|n| crate::toolbox::blocks::PROGRAMMATIC.contains(&n));
            if let (Some(code), true) = (code, block_tool) {
                own["allowed_callers"] = serde_json::json!([code]);
            }
            if let Ok(tool) = serde_json::from_value::<Tool>(own) {
                all.push(tool);
            }
        }
        // (the tools' breakpoint on the last one sent whole: a deferred
        // tool is not in the prompt)
        let last_is_custom = matches!(all.last(), Some(Tool::Custom(_)));
        let whole = all.iter_mut().rev().find_map(|t| match t {
            Tool::Custom(custom) if !custom.defer_loading => Some(custom),
            _ => None,
        });
        if let (Some(last), true) = (whole, last_is_custom) {
            last.cache_control = Some(CacheControl::ephemeral());
        }
        Prefix {
            model: context.model.clone(),
            max_tokens: context_max_tokens(context, config),
            thinking: match config.adaptive_thinking {
                true => Some(Thinking::Adaptive),
                false => config
                    .thinking
                    .filter(|b| *b > 0)
                    .map(|budget_tokens| Thinking::Enabled { budget_tokens }),
            },
            display: config.thinking_display.clone(),
            system,
            tools: all,
            betas: {
                let mut betas = config.betas.clone();
                let search = crate::toolbox::search::BETA;
                if !context.deferred.is_empty() && !betas.iter().any(|b| b == search) {
                    betas.push(search.to_owned());
                }
                betas
            },
            effort: config.effort.clone(),
        }
    }

    /// A request with this prefix and no messages yet.
    pub fn request(&self) -> MessagesRequest {
        let mut request = MessagesRequest::new(&self.model, self.max_tokens, Vec::new());
        request.system = self.system.clone();
        request.tools = self.tools.clone();
        request.thinking = self.thinking;
        if let (Some(thinking), Some(display)) = (self.thinking, &self.display) {
            // (the API's thinking object with its `display`, in its place)
            let mut value = serde_json::to_value(thinking).unwrap_or_default();
            value["display"] = serde_json::json!(display);
            request.extra.insert("thinking".into(), value);
            request.thinking = None;
        }
        request.betas = self.betas.clone();
        if let Some(effort) = &self.effort {
            request.extra.insert(
                "output_config".into(),
                serde_json::json!({"effort": effort}),
            );
            if !request.betas.iter().any(|b| b == EFFORT_BETA) {
                request.betas.push(EFFORT_BETA.to_owned());
            }
        }
        request
    }
}

/// A tool's description; the `agent` tool's lists the custom agents the
/// context event recorded.
fn described(tool: &ToolDef, context: &ContextBody) -> String {
    if tool.name != "agent" || context.agents.is_empty() {
        return tool.description.clone();
    }
    let mut text = tool.description.clone();
    text.push_str("\n\nCustom agents (give one's name as `subagent_type`):");
    for agent in &context.agents {
        text.push_str(&format!("\n- {}: {}", agent.name, agent.description));
    }
    text
}

/// The reply limit: configured, else what the context event recorded.
fn context_max_tokens(context: &ContextBody, config: &AgentConfig) -> u32 {
    config.max_output_tokens.unwrap_or(context.max_tokens)
}

/// The first system block: the base instructions, the environment, and
/// the project's instructions.
fn base_text(context: &ContextBody) -> String {
    // a program may give no base instructions at all (`--system-prompt ""`)
    let mut text = context.system.clone();
    if !text.is_empty() {
        text.push_str("\n\n");
    }
    text.push_str(&format!(
        "# Environment\nWorking directory: {}\nPlatform: {}\nToday's date: {}\nModel: {}",
        context.cwd, context.platform, context.date, context.model
    ));
    if !context.add_dirs.is_empty() {
        text.push_str(&format!(
            "\nAdditional working directories: {}",
            context.add_dirs.join(", ")
        ));
    }
    if let Some(git) = &context.git {
        text.push_str(&format!("\nGit branch: {}", git.branch));
        if !git.status.is_empty() {
            text.push_str(&format!("\nGit status (short):\n{}", git.status));
        }
        if !git.commits.is_empty() {
            text.push_str(&format!("\nRecent commits:\n{}", git.commits.join("\n")));
        }
    }
    for file in &context.instructions {
        text.push_str(&format!(
            "\n\n# Instructions from {}\n\n{}",
            file.path,
            file.text.trim_end()
        ));
    }
    if !context.deferred.is_empty() {
        text.push_str("\n\n");
        text.push_str(&crate::toolbox::search::listing(&context.deferred));
    }
    if !context.skills.is_empty() {
        text.push_str("\n\n# Skills\n\nLoad one with the `skill` tool when the task matches:");
        for skill in &context.skills {
            text.push_str(&format!("\n- {}: {}", skill.name, skill.description));
        }
    }
    text
}
