//! The context event: what the agent was reading at a turn. Its body
//! records, verbatim, every input of the request from outside the
//! substrate — the base instructions, the date, the working directory, the
//! platform, the model, the project's instruction files, the tool list and
//! the agent's own tool definitions — and the commit (`as_of`) its pinned
//! scopes and the programs were read at. With it, any request is a
//! function of the substrate.

use super::bodies::Body;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// An instruction file as it was read. The context event records the
/// `knowledge-file` chunk that holds its text (`chunk`, `sha256`); the
/// text itself is filled in from that chunk when the event is read back.
/// (Events written before files were chunks hold the text itself.)
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Instructions {
    /// Where it was read from.
    pub path: String,
    /// Its text.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub text: String,
    /// The `knowledge-file` chunk holding its text.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub chunk: Option<String>,
    /// The SHA-256 of its text.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sha256: Option<String>,
}

/// A custom agent as the `agent` tool's description lists it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct AgentIndex {
    /// Its name (`subagent_type`).
    pub name: String,
    /// When to use it.
    pub description: String,
}

/// A skill as the system prompt lists it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct SkillIndex {
    /// Its name.
    pub name: String,
    /// When to use it.
    pub description: String,
    /// Its `SKILL.md`.
    pub path: String,
    /// Rules allowed without asking once it is loaded.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub allowed_tools: Vec<String>,
    /// It is the project's (not the person's own).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub project: bool,
}

/// What the environment section says of a git repository.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct GitFacts {
    /// The current branch (empty when detached).
    pub branch: String,
    /// `git status --short`, its first 50 lines.
    pub status: String,
    /// The last five commits, `HASH TITLE`.
    pub commits: Vec<String>,
}

/// What a hermitcrab's system prompt was read from: its identity's
/// blocks and the constitution, as of `at`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct ShellRecord {
    /// Whose blocks.
    pub identity: String,
    /// The commit the blocks and the constitution were read at.
    pub at: u64,
    /// The session's first run: the keystone whole, and the focus.
    pub boot: bool,
}

/// The body of a `context` event the agent writes. (A host's own event,
/// the one that pins scopes at a run's start, has an empty body.)
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ContextBody {
    /// The commit the pinned scopes and the programs were read at.
    pub as_of: u64,
    /// The base instructions (the start of the system prompt).
    pub system: String,
    /// Today, as the model is told it.
    pub date: String,
    /// The working directory (the project root).
    pub cwd: String,
    /// Directories beside it the tools may read and write (`--add-dir`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub add_dirs: Vec<String>,
    /// The operating system.
    pub platform: String,
    /// The model.
    pub model: String,
    /// The most tokens a reply may have (from the model's limits, unless
    /// the configuration says otherwise).
    pub max_tokens: u32,
    /// `AGENTS.md` / `CLAUDE.md` of the project and the user.
    pub instructions: Vec<Instructions>,
    /// The program tools, by name, in the order sent.
    pub tools: Vec<String>,
    /// The agent's own tools (scope, todo, ask_user), as sent.
    pub own_tools: Vec<Value>,
    /// The program tools sent deferred (`defer_loading`): named to the
    /// model, loaded when its `ToolSearch` finds them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub deferred: Vec<String>,
    /// The agent process that wrote it.
    pub process: String,
    /// The MCP servers configured, and where each stood when the tools
    /// were read (a failed one's tools are not among `tools`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub mcp_servers: Vec<crate::sources::servers::ServerStatus>,
    /// The git repository's facts, when the project is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub git: Option<GitFacts>,
    /// The skills found, listed in the system prompt.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub skills: Vec<SkillIndex>,
    /// The custom agents found, listed in the `agent` tool's description.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub agents: Vec<AgentIndex>,
    /// The memory scopes (`memory`, `user-memory`) rendered under
    /// `# Memory` (none: memory is off), read as of `memory_at`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub memory: Vec<String>,
    /// The commit the memory was read at (none: `as_of`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory_at: Option<u64>,
    /// The hermitcrab preset's shell, when the run is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shell: Option<ShellRecord>,
}

impl Body for ContextBody {
    const TYPE: &'static str = "context";
}

impl ContextBody {
    /// Whether the agent wrote it (a host's placeholder is empty; the
    /// base instructions may be, when a program replaced them with none).
    pub fn is_written(&self) -> bool {
        !self.model.is_empty()
    }

    /// The body as committed: each instruction file named by its chunk,
    /// its text left to the chunk.
    pub fn as_recorded(&self) -> ContextBody {
        let mut out = self.clone();
        for file in &mut out.instructions {
            if file.chunk.is_some() {
                file.text.clear();
            }
        }
        out
    }

    /// The `knowledge-file` chunks its instruction files are in.
    pub fn file_chunks(&self) -> Vec<String> {
        self.instructions
            .iter()
            .filter_map(|f| f.chunk.clone())
            .collect()
    }
}
