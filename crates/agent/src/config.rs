//! The `agent-config` chunk's body: the run's model and limits, resolved
//! by the host (flags over environment over the project's file over the
//! user's over the defaults) so a run can be understood — and rebuilt —
//! from the substrate alone.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// How tool calls are allowed (the rules and modes of the `permissions` module).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PermissionMode {
    /// Ask before anything that is not read-only.
    #[default]
    Default,
    /// File edits in the project are allowed; other changes ask.
    AcceptEdits,
    /// Nothing that is not read-only.
    Plan,
    /// Everything is allowed.
    Bypass,
    /// As the default, but what would ask is refused: only what the rules
    /// allow runs (Claude Code's `dontAsk`).
    DontAsk,
    /// As the default, but what would ask is judged by a small, fast
    /// model given the rules, the call and the person's request (Claude
    /// Code's `auto`); three denials in a row ask the person.
    Auto,
}

impl PermissionMode {
    /// Its name in configuration and flags.
    pub fn as_str(self) -> &'static str {
        match self {
            PermissionMode::Default => "default",
            PermissionMode::AcceptEdits => "accept-edits",
            PermissionMode::Plan => "plan",
            PermissionMode::Bypass => "bypass",
            PermissionMode::DontAsk => "dont-ask",
            PermissionMode::Auto => "auto",
        }
    }

    /// Its name in Claude Code (`acceptEdits`, `bypassPermissions`, …).
    pub fn claude_name(self) -> &'static str {
        match self {
            PermissionMode::Default => "default",
            PermissionMode::AcceptEdits => "acceptEdits",
            PermissionMode::Plan => "plan",
            PermissionMode::Bypass => "bypassPermissions",
            PermissionMode::DontAsk => "dontAsk",
            PermissionMode::Auto => "auto",
        }
    }

    /// The mode named `name`.
    pub fn parse(name: &str) -> Option<PermissionMode> {
        Some(match name {
            "default" => PermissionMode::Default,
            "accept-edits" | "acceptEdits" => PermissionMode::AcceptEdits,
            "plan" => PermissionMode::Plan,
            "bypass" | "bypassPermissions" => PermissionMode::Bypass,
            "dont-ask" | "dontAsk" => PermissionMode::DontAsk,
            "auto" => PermissionMode::Auto,
            _ => return None,
        })
    }
}

/// The sources whose settings apply (`--setting-sources`, Claude Code's):
/// the person's (`user`: their config file, instructions, skills, agents)
/// and the project's (`project` or `local`: its config file, `.mcp.json`,
/// instruction files, skills, agents).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SettingSources {
    /// The person's.
    pub user: bool,
    /// The project's.
    pub project: bool,
}

impl SettingSources {
    /// The sources `list` names (comma-separated; empty: none); an error
    /// names one that is not a source.
    pub fn parse(list: &str) -> Result<SettingSources, String> {
        let mut sources = SettingSources::default();
        for name in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            match name {
                "user" => sources.user = true,
                "project" | "local" => sources.project = true,
                bad => {
                    return Err(format!(
                        "`{bad}` is not a source; give user, project or local \
                         (comma-separated, or \"\" for none)"
                    ));
                }
            }
        }
        Ok(sources)
    }
}

/// Which API the model is reached through.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ApiKind {
    /// The Anthropic Messages API (`ANTHROPIC_*`).
    #[default]
    Anthropic,
    /// An OpenAI-compatible chat-completions server (`OPENAI_*`).
    Openai,
}

/// Whether MCP tools are deferred behind the `ToolSearch` tool (their
/// names listed, their schemas loaded when the model asks), as Claude
/// Code's `ENABLE_TOOL_SEARCH` says: `true`, `false`, `auto` (when their
/// definitions would take more than 10 % of the context window) or
/// `auto:N` (N %).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub enum ToolSearch {
    /// Always, whatever their size.
    On,
    /// Never.
    Off,
    /// When their definitions would take more than this share (in
    /// percent) of the context window.
    Auto(u8),
}

impl ToolSearch {
    /// The share `auto` defers at.
    pub const AUTO_PERCENT: u8 = 10;

    /// The setting `text` says (`ENABLE_TOOL_SEARCH`'s values).
    pub fn parse(text: &str) -> Result<ToolSearch, BadToolSearch> {
        match text.trim().to_ascii_lowercase().as_str() {
            "true" | "1" | "on" => Ok(ToolSearch::On),
            "false" | "0" | "off" => Ok(ToolSearch::Off),
            "auto" => Ok(ToolSearch::Auto(ToolSearch::AUTO_PERCENT)),
            other => other
                .strip_prefix("auto:")
                .and_then(|n| n.parse::<u8>().ok())
                .filter(|n| *n <= 100)
                .map(ToolSearch::Auto)
                .ok_or_else(|| BadToolSearch(text.to_owned())),
        }
    }
}

impl Default for ToolSearch {
    fn default() -> Self {
        ToolSearch::Auto(ToolSearch::AUTO_PERCENT)
    }
}

/// A tool search setting that is none of `ENABLE_TOOL_SEARCH`'s values.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{0}` is not a tool search setting; say true, false, auto or auto:N (N a percentage)")]
pub struct BadToolSearch(pub String);

impl TryFrom<String> for ToolSearch {
    type Error = BadToolSearch;
    fn try_from(text: String) -> Result<Self, Self::Error> {
        ToolSearch::parse(&text)
    }
}

impl From<ToolSearch> for String {
    fn from(setting: ToolSearch) -> String {
        match setting {
            ToolSearch::On => "true".into(),
            ToolSearch::Off => "false".into(),
            ToolSearch::Auto(ToolSearch::AUTO_PERCENT) => "auto".into(),
            ToolSearch::Auto(n) => format!("auto:{n}"),
        }
    }
}

/// The body of an `agent-config` chunk.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct AgentConfig {
    /// The model id.
    pub model: String,
    /// Which API serves it.
    pub api: ApiKind,
    /// Model calls this run may make.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_turns: Option<u32>,
    /// Dollars this run may spend.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_budget_usd: Option<f64>,
    /// The most tokens one reply may have (default: the model's, capped).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_output_tokens: Option<u32>,
    /// Extended thinking's budget in tokens (none: no thinking).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub thinking: Option<u32>,
    /// The model decides how much to think (`--thinking adaptive`; over
    /// a budget).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub adaptive_thinking: bool,
    /// How the API returns thinking (`--thinking-display`: summarized or
    /// omitted), with thinking on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thinking_display: Option<String>,
    /// How tool calls are allowed.
    pub permission_mode: PermissionMode,
    /// Rules that allow a call without asking (`shell(git status:*)`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub allow: Vec<String>,
    /// Rules that refuse a call.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub deny: Vec<String>,
    /// Rules that ask first.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub ask: Vec<String>,
    /// Directories beside the project the tools may read without asking
    /// (`--add-dir`), absolute.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub add_dirs: Vec<String>,
    /// The JSON Schema the run's structured output must match
    /// (`--json-schema`): the model is offered `StructuredOutput`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Value>,
    /// Which files' settings apply (`--setting-sources`); none: all.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub setting_sources: Option<SettingSources>,
    /// The effort the model spends (`--effort`): sent as the API's
    /// `output_config.effort`, with its beta.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub effort: Option<String>,
    /// `StructuredOutput` calls the model gets (default 5; Claude Code's
    /// `MAX_STRUCTURED_OUTPUT_RETRIES`, read by the host).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_attempts: Option<u32>,
    /// Models to go on with, in order, when the model is overloaded
    /// (after the client's retries) or not found (`--fallback-model`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub fallback_models: Vec<String>,
    /// Server-side tools, as the API takes them.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub server_tools: Vec<Value>,
    /// Text added at the end of the system prompt.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub system_append: Option<String>,
    /// Whether a person can answer questions.
    pub interactive: bool,
    /// Whether it runs in the background (`hc run --bg`): its end is a
    /// `notification` too.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub background: bool,
    /// The model's context window, when the built-in table does not know it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub context_window: Option<u64>,
    /// The user's configuration directory (its `AGENTS.md` is read).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub user_config_dir: Option<String>,
    /// Whether the person trusts the project: only then do its own skills'
    /// `allowed-tools` apply (a project may not grant itself power).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub project_trusted: bool,
    /// A custom agent's name, when this run is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent_type: Option<String>,
    /// The system prompt in place of the base instructions (a custom
    /// agent's).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub system: Option<String>,
    /// The only program tools offered (a custom agent's `tools`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<String>>,
    /// Built-in tools not offered because the host serves its own in
    /// their place (an editor's `read`, `write`, `edit` over ACP). Not a
    /// permission rule: nothing else a rule would reach is refused.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub hidden: Vec<String>,
    /// The person's working directory, when inside the project: the
    /// instruction files of every directory down to it are read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub working_dir: Option<String>,
    /// How deep this agent is: 1 for a host's run, one more for each
    /// agent it was spawned by.
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub depth: u32,
    /// How deep sub-agents may nest (default 3).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_depth: Option<u32>,
    /// How many sub-agents run at once, foreground and background
    /// together (default 8).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_parallel_agents: Option<u32>,
    /// Compact when a call's input fills this share of the context window
    /// (default 0.7).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub compact_at: Option<f64>,
    /// Commands run before and after tool calls, on the prompt, at the end.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub hooks: Vec<HookConfig>,
    /// Compact before the first call (a person asked for it).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub compact_first: bool,
    /// Whether a read-only call may start while the reply still streams
    /// (default on; off only to measure what it gains).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub early_tools: Option<bool>,
    /// Which tool names the model sees (`claude`: Claude Code's `Bash`,
    /// `Read`, …, as Agent SDK programs expect).
    #[serde(skip_serializing_if = "is_hermitcrab")]
    pub tool_names: crate::names::ToolNames,
    /// Custom agents the program driving the run defined (before any
    /// file's of the same name).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub agents: Vec<crate::sources::agents::AgentSpec>,
    /// Whether memory (the project's and the person's) is in every
    /// request and the `memory` tool offered (default true).
    #[serde(default = "yes", skip_serializing_if = "is_yes")]
    pub memory: bool,
    /// Whether the block tools are offered (`block_read`, `write_entry`,
    /// `call_llm`, …): any agent may keep pscale blocks.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub blocks: bool,
    /// The hermitcrab preset: its constitution, keystone, aperture and
    /// focus in the system prompt, its six blocks, history saved after
    /// every answer.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub hermitcrab: bool,
    /// Whose blocks (default `hermitcrab`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub identity: Option<String>,
    /// The model `call_llm` calls `fast` (and compressions use).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fast_model: Option<String>,
    /// Beta features sent as the `anthropic-beta` header.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub betas: Vec<String>,
    /// Replaying this session (`hc replay`): the model's answers are its
    /// recorded ones, served in order, and the facts of the machine the
    /// model is told (date, directory, platform, git) are the recorded
    /// run's; nothing goes to an API.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replay: Option<String>,
    /// What the person's environment says each alias names
    /// (`ANTHROPIC_DEFAULT_SONNET_MODEL`, …: family → id), for the models
    /// a sub-agent or an agent file names (`model: sonnet`).
    #[serde(skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub model_aliases: std::collections::BTreeMap<String, String>,
    /// The model sub-agents run on when neither their call nor their file
    /// names one (`CLAUDE_CODE_SUBAGENT_MODEL`; none: the parent's).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subagent_model: Option<String>,
    /// What configuration says of models (`[models."ID"]`): prices,
    /// context windows, reply limits, over the catalogue's.
    #[serde(skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub models: std::collections::BTreeMap<String, model::catalog::ModelSettings>,
    /// Whether MCP tools wait behind `ToolSearch` (`ENABLE_TOOL_SEARCH`).
    #[serde(skip_serializing_if = "is_auto")]
    pub tool_search: ToolSearch,
}

fn is_auto(setting: &ToolSearch) -> bool {
    *setting == ToolSearch::default()
}

/// A hook: a command run on an event, given it as JSON on stdin — or a
/// callback an Agent SDK program registered, which its host runs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HookConfig {
    /// `pre-tool`, `post-tool`, `user-prompt`, `stop`, `subagent-stop` or
    /// `pre-compact` (Claude Code's names are read as these).
    pub event: String,
    /// For tool events: a program name (either naming; several with `|`),
    /// or a rule pattern (`shell(git push:*)`); none or `*` matches every
    /// call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub matcher: Option<String>,
    /// The command (`bash -c`), run in the project root.
    #[serde(default)]
    pub command: String,
    /// Instead of a command: the id of a callback the host runs (an Agent
    /// SDK program's), asked with a `hook-callback` on the session.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub callback: Option<String>,
    /// Milliseconds before it is killed (default 60,000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
    /// What its failure does (Claude Code's `onFailure`): `block` counts
    /// a hook that could not run, timed out, or ended other than 0 or 2 —
    /// a callback that failed or answered no hook output — as a block of
    /// what the event guards; else it is said and the run goes on. Stop
    /// and sub-agent-stop hooks never block on failure.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on_failure: Option<OnFailure>,
}

/// What a hook's failure does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OnFailure {
    /// Said, and the run goes on (the default).
    Continue,
    /// A block, as exit 2 would be.
    Block,
}

impl HookConfig {
    /// Whether its failure on `event` blocks.
    pub fn blocks_on_failure(&self, event: &str) -> bool {
        self.on_failure == Some(OnFailure::Block) && !matches!(event, "stop" | "subagent-stop")
    }
}

/// The events a hook may be run on.
pub const HOOK_EVENTS: &[&str] = &[
    "pre-tool",
    "post-tool",
    "user-prompt",
    "stop",
    "subagent-stop",
    "pre-compact",
    "notification",
];

/// Each hook event with Claude Code's name for it.
pub const CLAUDE_HOOK_EVENTS: &[(&str, &str)] = &[
    ("pre-tool", "PreToolUse"),
    ("post-tool", "PostToolUse"),
    ("user-prompt", "UserPromptSubmit"),
    ("stop", "Stop"),
    ("subagent-stop", "SubagentStop"),
    ("pre-compact", "PreCompact"),
    ("notification", "Notification"),
];

/// The hook event named `name` (ours, or Claude Code's), if it is one.
pub fn hook_event(name: &str) -> Option<&'static str> {
    CLAUDE_HOOK_EVENTS
        .iter()
        .find(|(ours, theirs)| *ours == name || *theirs == name)
        .map(|(ours, _)| *ours)
}

/// Claude Code's name of hook event `event` (one of ours).
pub fn claude_hook_event(event: &str) -> &str {
    CLAUDE_HOOK_EVENTS
        .iter()
        .find(|(ours, _)| *ours == event)
        .map_or(event, |(_, theirs)| theirs)
}

/// The depth sub-agents may nest to when the configuration says nothing.
pub const DEFAULT_MAX_DEPTH: u32 = 3;

fn is_hermitcrab(names: &crate::names::ToolNames) -> bool {
    *names == crate::names::ToolNames::Hermitcrab
}

fn yes() -> bool {
    true
}

fn is_yes(b: &bool) -> bool {
    *b
}

fn one() -> u32 {
    1
}

fn is_one(n: &u32) -> bool {
    *n == 1
}

impl Default for AgentConfig {
    fn default() -> Self {
        AgentConfig {
            model: String::new(),
            api: ApiKind::default(),
            max_turns: None,
            max_budget_usd: None,
            max_output_tokens: None,
            thinking: None,
            adaptive_thinking: false,
            thinking_display: None,
            permission_mode: PermissionMode::default(),
            allow: Vec::new(),
            deny: Vec::new(),
            ask: Vec::new(),
            add_dirs: Vec::new(),
            server_tools: Vec::new(),
            system_append: None,
            interactive: false,
            background: false,
            context_window: None,
            user_config_dir: None,
            working_dir: None,
            project_trusted: false,
            agent_type: None,
            system: None,
            tools: None,
            hidden: Vec::new(),
            depth: 1,
            max_depth: None,
            max_parallel_agents: None,
            compact_at: None,
            compact_first: false,
            hooks: Vec::new(),
            tool_names: crate::names::ToolNames::Hermitcrab,
            agents: Vec::new(),
            memory: true,
            blocks: false,
            hermitcrab: false,
            identity: None,
            fast_model: None,
            betas: Vec::new(),
            fallback_models: Vec::new(),
            output_schema: None,
            setting_sources: None,
            effort: None,
            output_attempts: None,
            early_tools: None,
            replay: None,
            model_aliases: std::collections::BTreeMap::new(),
            subagent_model: None,
            models: std::collections::BTreeMap::new(),
            tool_search: ToolSearch::default(),
        }
    }
}

/// The model `fast` means when the configuration names none.
pub const FAST_MODEL: &str = model::catalog::FAST_MODEL;

impl AgentConfig {
    /// The identity whose blocks the run keeps.
    pub fn identity(&self) -> &str {
        self.identity
            .as_deref()
            .unwrap_or(crate::blocks::crab::IDENTITY)
    }

    /// The model `call_llm` calls `fast`.
    pub fn fast_model(&self) -> &str {
        self.fast_model.as_deref().unwrap_or(FAST_MODEL)
    }

    /// Whether `--setting-sources` keeps what was read from `path`: a
    /// path under the project `root` is the project's (`project`,
    /// `local`), any other the person's (`user`); no list keeps all.
    pub fn keeps_source(&self, root: &std::path::Path, path: &std::path::Path) -> bool {
        self.setting_sources
            .is_none_or(|s| match path.starts_with(root) {
                true => s.project,
                false => s.user,
            })
    }

    /// Whether the block tools are offered (the preset has them).
    pub fn has_blocks(&self) -> bool {
        self.blocks || self.hermitcrab
    }

    /// Whether any hook is configured for `event`.
    pub fn has_hooks(&self, event: &str) -> bool {
        self.hooks.iter().any(|h| h.event == event)
    }

    /// The model `name` names for this run: an alias (`sonnet`, `opus`,
    /// `haiku`, `fable`, `best`, `[1m]`, `opusplan`) resolved as the
    /// person's environment said when the run was asked, else today's
    /// catalogue; an id as it is.
    pub fn resolve_model(&self, name: &str) -> String {
        let overrides = model::catalog::Overrides {
            families: (self.model_aliases.iter())
                .map(|(f, id)| (f.clone(), id.clone()))
                .collect(),
        };
        let planning = self.permission_mode == PermissionMode::Plan;
        model::catalog::resolve(name, &overrides, planning).id
    }

    /// Reads a body, with a message naming the field at fault.
    pub fn parse(body: &Value) -> Result<AgentConfig, MalformedConfig> {
        serde_path_to_error::deserialize(body.clone()).map_err(|e| MalformedConfig {
            path: e.path().to_string(),
            reason: e.inner().to_string(),
        })
    }
}

/// An `agent-config` body that does not read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the agent-config chunk is malformed at `{path}`: {reason}")]
pub struct MalformedConfig {
    /// The field at fault.
    pub path: String,
    /// What is wrong with it.
    pub reason: String,
}
