//! ACP v1's messages, as the agent reads and writes them: camelCase
//! fields, snake_case values, unknown fields ignored (an editor may send
//! more than this version knows).

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The protocol version spoken.
pub const PROTOCOL_VERSION: u16 = 1;

/// `initialize`'s params.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct InitializeRequest {
    /// The newest version the client speaks.
    pub protocol_version: u16,
    /// What the client offers.
    pub client_capabilities: ClientCapabilities,
}

/// What a client offers the agent.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ClientCapabilities {
    /// Its files (its unsaved buffers among them).
    pub fs: FsCapabilities,
    /// Terminals it runs and shows.
    pub terminal: bool,
}

/// The client's file methods.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct FsCapabilities {
    /// `fs/read_text_file`.
    pub read_text_file: bool,
    /// `fs/write_text_file`.
    pub write_text_file: bool,
}

/// `initialize`'s result.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct InitializeResponse {
    /// The version agreed.
    pub protocol_version: u16,
    /// What the agent can do.
    pub agent_capabilities: AgentCapabilities,
    /// How a person signs in, when a key is missing.
    pub auth_methods: Vec<AuthMethod>,
    /// Who answers.
    pub agent_info: Implementation,
}

/// What the agent can do.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentCapabilities {
    /// `session/load`.
    pub load_session: bool,
    /// What a prompt may hold.
    pub prompt_capabilities: PromptCapabilities,
    /// Which MCP transports `session/new` may pass.
    pub mcp_capabilities: McpCapabilities,
}

/// What a prompt may hold beyond text and resource links.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PromptCapabilities {
    /// Images.
    pub image: bool,
    /// Audio.
    pub audio: bool,
    /// Resources with their contents.
    pub embedded_context: bool,
}

/// MCP transports beyond stdio.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct McpCapabilities {
    /// Streamable HTTP.
    pub http: bool,
    /// Server-sent events.
    pub sse: bool,
}

/// A way to sign in.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct AuthMethod {
    /// Its id (`authenticate`'s `methodId`).
    pub id: String,
    /// Its name.
    pub name: String,
    /// What to do (the variable to set).
    pub description: String,
}

/// A program's name and version.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Implementation {
    /// Its name.
    pub name: String,
    /// Its version.
    pub version: String,
}

/// `session/new`'s params.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct NewSessionRequest {
    /// The working directory (absolute): the project.
    pub cwd: String,
    /// MCP servers for this session.
    pub mcp_servers: Vec<McpServer>,
}

/// `session/load`'s params.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct LoadSessionRequest {
    /// The session.
    pub session_id: String,
    /// The working directory.
    pub cwd: String,
    /// MCP servers for it.
    pub mcp_servers: Vec<McpServer>,
}

/// An MCP server the editor passes (stdio carries no `type`).
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(untagged)]
pub enum McpServer {
    /// Over HTTP or SSE.
    Remote {
        /// `http` or `sse`.
        #[serde(rename = "type")]
        kind: String,
        /// Its name.
        name: String,
        /// Its address.
        url: String,
        /// Headers sent to it.
        #[serde(default)]
        headers: Vec<NameValue>,
    },
    /// A command over stdio.
    Stdio {
        /// Its name.
        name: String,
        /// The command.
        command: String,
        /// Its arguments.
        #[serde(default)]
        args: Vec<String>,
        /// Its environment.
        #[serde(default)]
        env: Vec<NameValue>,
    },
}

/// A name and a value (a header, a variable).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NameValue {
    /// The name.
    pub name: String,
    /// The value.
    pub value: String,
}

/// `session/new`'s result.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NewSessionResponse {
    /// The session.
    pub session_id: String,
    /// Its modes.
    pub modes: ModeState,
    /// Its options (the model).
    pub config_options: Vec<ConfigOption>,
}

/// The modes a session may be in, and the one it is in.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ModeState {
    /// The mode now.
    pub current_mode_id: String,
    /// Every mode.
    pub available_modes: Vec<Mode>,
}

/// A session mode.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Mode {
    /// Its id.
    pub id: String,
    /// Its name.
    pub name: String,
    /// What it does.
    pub description: String,
}

/// A session option with a choice of values (`type: "select"`).
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ConfigOption {
    /// Its id.
    pub id: String,
    /// Its name.
    pub name: String,
    /// What it is (`model`).
    pub category: String,
    /// Always `select`.
    #[serde(rename = "type")]
    pub kind: String,
    /// The value now.
    pub current_value: String,
    /// The values to choose from.
    pub options: Vec<ConfigValue>,
}

/// A value of a config option.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ConfigValue {
    /// The value.
    pub value: String,
    /// Its name.
    pub name: String,
}

/// `session/prompt`'s params.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct PromptRequest {
    /// The session.
    pub session_id: String,
    /// What the person sent.
    pub prompt: Vec<ContentBlock>,
}

/// A piece of content.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ContentBlock {
    /// Text.
    Text {
        /// The text.
        text: String,
    },
    /// An image, base64.
    #[serde(rename_all = "camelCase")]
    Image {
        /// Its bytes, base64.
        data: String,
        /// Its type.
        mime_type: String,
    },
    /// A resource named, not given.
    #[serde(rename_all = "camelCase")]
    ResourceLink {
        /// Its address.
        uri: String,
        /// Its name.
        name: String,
    },
    /// A resource with its contents.
    Resource {
        /// The contents.
        resource: EmbeddedResource,
    },
    /// A kind this version does not read.
    #[serde(other)]
    Unknown,
}

/// An embedded resource's contents.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EmbeddedResource {
    /// Its address.
    pub uri: String,
    /// Its text, when it is text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// Its bytes (base64), when it is not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blob: Option<String>,
}

/// Why a turn ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// The model finished.
    EndTurn,
    /// The reply hit its token limit.
    MaxTokens,
    /// The turn hit its request limit.
    MaxTurnRequests,
    /// The model refused.
    Refusal,
    /// The client cancelled it.
    Cancelled,
}

/// `session/update`'s params.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionNotification {
    /// The session.
    pub session_id: String,
    /// What happened.
    pub update: SessionUpdate,
}

/// What happened in a session.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "sessionUpdate", rename_all = "snake_case")]
pub enum SessionUpdate {
    /// The person's prompt (a loaded session's, replayed).
    UserMessageChunk {
        /// Its content.
        content: ContentBlock,
    },
    /// The model's text, as it streams.
    AgentMessageChunk {
        /// Its content.
        content: ContentBlock,
    },
    /// The model's thinking, as it streams.
    AgentThoughtChunk {
        /// Its content.
        content: ContentBlock,
    },
    /// A tool call began.
    ToolCall(ToolCall),
    /// A tool call moved on.
    ToolCallUpdate(ToolCallUpdate),
    /// The agent's plan (the to-do list, whole).
    Plan {
        /// Its entries.
        entries: Vec<PlanEntry>,
    },
    /// The commands the person may type.
    #[serde(rename_all = "camelCase")]
    AvailableCommandsUpdate {
        /// The commands.
        available_commands: Vec<AvailableCommand>,
    },
    /// The session's mode changed.
    #[serde(rename_all = "camelCase")]
    CurrentModeUpdate {
        /// The mode now.
        current_mode_id: String,
    },
}

/// What a tool does, for the editor's icon.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolKind {
    /// Reads.
    Read,
    /// Edits.
    Edit,
    /// Deletes.
    Delete,
    /// Moves.
    Move,
    /// Searches.
    Search,
    /// Runs a command.
    Execute,
    /// Thinks (a sub-agent, a plan).
    Think,
    /// Fetches.
    Fetch,
    /// Anything else.
    Other,
}

/// Where a tool call stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolCallStatus {
    /// Not started (waiting for permission).
    Pending,
    /// Running.
    InProgress,
    /// Done.
    Completed,
    /// Failed (or refused).
    Failed,
}

/// A tool call as it begins.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolCall {
    /// The call's id (the model's).
    pub tool_call_id: String,
    /// In words.
    pub title: String,
    /// What it does.
    pub kind: ToolKind,
    /// Where it stands.
    pub status: ToolCallStatus,
    /// What it shows.
    pub content: Vec<ToolCallContent>,
    /// The files it touches.
    pub locations: Vec<Location>,
    /// Its input.
    pub raw_input: Value,
}

/// A tool call moving on (what is given replaces what was).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolCallUpdate {
    /// The call's id.
    pub tool_call_id: String,
    /// In words.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What it does.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kind: Option<ToolKind>,
    /// Where it stands.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<ToolCallStatus>,
    /// What it shows.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content: Option<Vec<ToolCallContent>>,
    /// The files it touches.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub locations: Option<Vec<Location>>,
    /// Its input.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub raw_input: Option<Value>,
    /// Its output.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub raw_output: Option<Value>,
}

/// What a tool call shows.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ToolCallContent {
    /// Content (its output's text).
    Content {
        /// The content.
        content: ContentBlock,
    },
    /// A file's change.
    #[serde(rename_all = "camelCase")]
    Diff {
        /// The file (absolute).
        path: String,
        /// Before (none: a new file).
        old_text: Option<String>,
        /// After.
        new_text: String,
    },
    /// A terminal the client shows.
    #[serde(rename_all = "camelCase")]
    Terminal {
        /// Its id.
        terminal_id: String,
    },
}

/// A file a tool call touches.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Location {
    /// The file (absolute).
    pub path: String,
    /// Its line (from 1), when one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<u64>,
}

/// An entry of a plan.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PlanEntry {
    /// What to do.
    pub content: String,
    /// `high`, `medium`, `low`.
    pub priority: String,
    /// `pending`, `in_progress`, `completed`.
    pub status: String,
}

/// A command the person may type (`/NAME`).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct AvailableCommand {
    /// Its name.
    pub name: String,
    /// What it does.
    pub description: String,
}

/// `session/request_permission`'s params.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RequestPermission {
    /// The session.
    pub session_id: String,
    /// The call asked about.
    pub tool_call: ToolCallUpdate,
    /// The answers offered.
    pub options: Vec<PermissionOption>,
}

/// An answer offered.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PermissionOption {
    /// Its id (what the client answers).
    pub option_id: String,
    /// In words.
    pub name: String,
    /// What it means.
    pub kind: PermissionKind,
}

/// What an answer means.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PermissionKind {
    /// This call.
    AllowOnce,
    /// Calls like it, from now on.
    AllowAlways,
    /// Not this call.
    RejectOnce,
    /// Not calls like it, from now on.
    RejectAlways,
}

/// The client's answer to a permission request.
#[derive(Clone, Debug, PartialEq, Deserialize)]
pub struct PermissionResponse {
    /// What it came to.
    pub outcome: PermissionOutcome,
}

/// What a permission request came to.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum PermissionOutcome {
    /// The turn was cancelled before an answer.
    Cancelled,
    /// An option was chosen.
    #[serde(rename_all = "camelCase")]
    Selected {
        /// Its id.
        option_id: String,
    },
}

/// A request that names only its session (`session/cancel`).
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct SessionRef {
    /// The session.
    pub session_id: String,
}

/// `session/set_mode`'s params.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct SetModeRequest {
    /// The session.
    pub session_id: String,
    /// The mode.
    pub mode_id: String,
}

/// `session/set_config_option`'s params.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct SetConfigOptionRequest {
    /// The session.
    pub session_id: String,
    /// The option.
    pub config_id: String,
    /// Its new value.
    pub value: Value,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_prompt_reads_every_kind_of_block() {
        let p: PromptRequest = serde_json::from_value(json!({
            "sessionId": "s_1",
            "prompt": [
                {"type": "text", "text": "fix it"},
                {"type": "image", "data": "iVBO", "mimeType": "image/png"},
                {"type": "resource_link", "uri": "file:///p/a.rs", "name": "a.rs"},
                {"type": "resource", "resource": {"uri": "file:///p/b.rs", "text": "fn b() {}"}},
                {"type": "audio", "data": "x", "mimeType": "audio/wav"}
            ]
        }))
        .unwrap();
        assert_eq!(p.prompt.len(), 5);
        assert_eq!(p.prompt[4], ContentBlock::Unknown);
        assert!(
            matches!(&p.prompt[3], ContentBlock::Resource { resource } if resource.text.as_deref() == Some("fn b() {}"))
        );
    }

    #[test]
    fn mcp_servers_read_with_and_without_a_type() {
        let n: NewSessionRequest = serde_json::from_value(json!({"cwd": "/p", "mcpServers": [
            {"name": "fs", "command": "npx", "args": ["-y", "x"], "env": [{"name": "A", "value": "1"}]},
            {"type": "http", "name": "web", "url": "https://m.example/mcp", "headers": []}
        ]}))
        .unwrap();
        assert!(matches!(&n.mcp_servers[0], McpServer::Stdio { command, .. } if command == "npx"));
        assert!(matches!(&n.mcp_servers[1], McpServer::Remote { kind, .. } if kind == "http"));
    }

    #[test]
    fn updates_are_written_in_the_protocols_shape() {
        let update = SessionNotification {
            session_id: "s_1".into(),
            update: SessionUpdate::ToolCallUpdate(ToolCallUpdate {
                tool_call_id: "t1".into(),
                status: Some(ToolCallStatus::Completed),
                content: Some(vec![ToolCallContent::Diff {
                    path: "/p/a.txt".into(),
                    old_text: None,
                    new_text: "b\n".into(),
                }]),
                ..ToolCallUpdate::default()
            }),
        };
        assert_eq!(
            serde_json::to_value(&update).unwrap(),
            json!({"sessionId": "s_1", "update": {"sessionUpdate": "tool_call_update", "toolCallId": "t1",
                "status": "completed", "content": [{"type": "diff", "path": "/p/a.txt", "oldText": null, "newText": "b\n"}]}})
        );
        let chunk = SessionUpdate::AgentMessageChunk {
            content: ContentBlock::Text { text: "hi".into() },
        };
        assert_eq!(
            serde_json::to_value(&chunk).unwrap(),
            json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "hi"}})
        );
    }

    #[test]
    fn a_permission_answer_reads_either_way() {
        let chosen: PermissionResponse = serde_json::from_value(
            json!({"outcome": {"outcome": "selected", "optionId": "allow_once"}}),
        )
        .unwrap();
        assert_eq!(
            chosen.outcome,
            PermissionOutcome::Selected {
                option_id: "allow_once".into()
            }
        );
        let gone: PermissionResponse =
            serde_json::from_value(json!({"outcome": {"outcome": "cancelled"}})).unwrap();
        assert_eq!(gone.outcome, PermissionOutcome::Cancelled);
    }
}
