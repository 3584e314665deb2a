//! The editor's files, when it offers them (`fs.readTextFile`,
//! `fs.writeTextFile`): an MCP server named `editor`, hosted here and
//! bridged to the engine (`hc_web::bridge`, as an SDK program's servers
//! are), whose `read`, `write` and `edit` go to the editor as
//! `fs/read_text_file` and `fs/write_text_file` — so the agent reads the
//! buffer the person sees, unsaved changes included, and its edits land in
//! the editor. They stand in for the built-in tools of the same names;
//! each call is a recorded run like any MCP tool's, its program naming the
//! editor. Only paths inside the project are served.

use super::link::Link;
use hc_acp::schema::FsCapabilities;
use serde_json::{Value, json};
use std::fmt::Write as _;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

/// The server's name (its tools are `mcp__editor__read`, …).
pub const SERVER: &str = "editor";

/// The built-in tools the editor's stand in for, by what it offers —
/// none when the person's rules name one of them (a `read(secrets/**)`
/// deny keeps applying to the built-in, which stays).
pub fn replaced(fs: &FsCapabilities, config: &agent::AgentConfig) -> Vec<&'static str> {
    let offered = match (fs.read_text_file, fs.write_text_file) {
        (true, true) => vec!["read", "write", "edit"],
        (true, false) => vec!["read"],
        _ => return Vec::new(),
    };
    let rules = config.allow.iter().chain(&config.deny).chain(&config.ask);
    let named = |rule: &String| {
        let tool = rule.split('(').next().unwrap_or_default().trim();
        ["read", "write", "edit"].contains(&agent::names::program_of(tool))
    };
    if let Some(rule) = rules.into_iter().find(|r| named(r)) {
        eprintln!(
            "hc: the editor's files are not used: the rule `{rule}` names a file tool, and applies to hc's own"
        );
        return Vec::new();
    }
    offered
}

/// Why the editor's MCP servers cannot be taken (one is named as hc's
/// own, or asks to be bridged), if so.
pub fn reserved(servers: &[hc_acp::schema::McpServer]) -> Option<String> {
    use hc_acp::schema::McpServer;
    servers.iter().find_map(|server| match server {
        McpServer::Stdio { name, .. } | McpServer::Remote { name, .. } if name == SERVER => Some(
            format!("an MCP server may not be named `{SERVER}`: hc serves the editor's files by that name; rename it"),
        ),
        McpServer::Remote { kind, name, .. } if kind != "http" && kind != "sse" => Some(format!(
            "the MCP server `{name}` is of type `{kind}`; an editor passes http or sse servers, or stdio ones"
        )),
        _ => None,
    })
}

/// The rules a turn runs with for the editor's tools: reading always
/// (the server serves only the project's files, and no secrets),
/// writing and editing in `accept-edits` (as the built-ins are); none
/// when they are not there.
pub fn allowed(config: &agent::AgentConfig) -> Vec<String> {
    let served = |tool: &str| config.hidden.iter().any(|d| d == tool);
    let mut tools = vec!["read"];
    if config.permission_mode == agent::config::PermissionMode::AcceptEdits {
        tools.extend(["write", "edit"]);
    }
    (tools.into_iter())
        .filter(|t| served(t))
        .map(|t| mcp::config::tool_name(SERVER, t))
        .collect()
}

/// The `--mcp-config` value naming the server (bridged when started).
pub fn config() -> String {
    json!({"mcpServers": {SERVER: {"type": "sdk"}}}).to_string()
}

/// The server: MCP messages in, the editor's files behind them.
pub struct EditorFiles {
    /// The link to the editor.
    pub link: Arc<Link>,
    /// The project.
    pub root: PathBuf,
    /// The tools served.
    pub tools: Vec<&'static str>,
}

impl hc_web::bridge::Forward for EditorFiles {
    fn request(&self, request: Value) -> hc_web::bridge::Answer<'_> {
        Box::pin(async move {
            let message = &request["message"];
            let id = message["id"].clone();
            let outcome = match message["method"].as_str().unwrap_or_default() {
                "initialize" => Ok(json!({
                    "protocolVersion": message["params"]["protocolVersion"].as_str().unwrap_or("2025-06-18"),
                    "capabilities": {"tools": {}},
                    "serverInfo": {"name": SERVER, "version": env!("CARGO_PKG_VERSION")},
                })),
                "ping" => Ok(json!({})),
                "tools/list" => Ok(json!({"tools": self.list()})),
                "tools/call" => Ok(self.call(&message["params"]).await),
                // (notifications: acknowledged)
                _ if id.is_null() => Ok(Value::Null),
                other => Err(format!("the editor's server does not serve `{other}`")),
            };
            let response = match outcome {
                Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
                Err(why) => json!({"jsonrpc": "2.0", "id": id,
                    "error": {"code": -32601, "message": why}}),
            };
            Ok(json!({"mcp_response": response}))
        })
    }
}

impl EditorFiles {
    fn list(&self) -> Vec<Value> {
        let path = json!({"type": "string", "description": "The file's path (absolute, or relative to the project)."});
        let all = [
            json!({"name": "read", "description": "Read a file as the editor has it open (unsaved changes included), its lines numbered.",
                "annotations": {"readOnlyHint": true},
                "inputSchema": {"type": "object", "properties": {"file_path": path,
                    "offset": {"type": "integer", "minimum": 1, "description": "The line to start at (1-based)."},
                    "limit": {"type": "integer", "minimum": 1, "description": "How many lines to read."}},
                    "required": ["file_path"]}}),
            json!({"name": "write", "description": "Write a file through the editor (it shows the change, and saves it).",
                "inputSchema": {"type": "object", "properties": {"file_path": path,
                    "content": {"type": "string", "description": "The whole new content."}},
                    "required": ["file_path", "content"]}}),
            json!({"name": "edit", "description": "Replace exactly one occurrence of old_string (or every one, with replace_all) in a file as the editor has it, through the editor.",
                "inputSchema": {"type": "object", "properties": {"file_path": path,
                    "old_string": {"type": "string", "description": "The exact text to replace, without the line numbers `read` shows."},
                    "new_string": {"type": "string", "description": "The text to put in its place."},
                    "replace_all": {"type": "boolean", "default": false}},
                    "required": ["file_path", "old_string", "new_string"]}}),
        ];
        (all.into_iter())
            .filter(|t| self.tools.contains(&t["name"].as_str().unwrap_or_default()))
            .collect()
    }

    /// A `tools/call`: its result (a failure is a result with `isError`).
    async fn call(&self, params: &Value) -> Value {
        let input = &params["arguments"];
        let name = params["name"].as_str().unwrap_or_default();
        let done = match self.path(input) {
            Err(why) => Err(why),
            Ok(_) if !self.tools.contains(&name) => Err(format!("no tool `{name}` here")),
            Ok(path) => match name {
                "read" => self.read(&path, input).await,
                "write" => {
                    self.write(&path, input["content"].as_str().unwrap_or_default())
                        .await
                }
                _ => self.edit(&path, input).await,
            },
        };
        let (text, failed) = match done {
            Ok(text) => (text, false),
            Err(why) => (why, true),
        };
        json!({"content": [{"type": "text", "text": text}], "isError": failed})
    }

    /// The call's path, absolute, inside the project — as written and as
    /// links resolve it (the nearest part that exists) — and not a file of
    /// secrets (`.env`: the built-in read asks for one; this one refuses).
    fn path(&self, input: &Value) -> Result<PathBuf, String> {
        let given = input["file_path"].as_str().filter(|p| !p.is_empty());
        let given = given.ok_or("file_path is missing")?;
        let path = self.root.join(given);
        let outside = || {
            format!(
                "{given} is outside the project; the editor's files are served only inside {}",
                self.root.display()
            )
        };
        let up = path.components().any(|c| c == Component::ParentDir);
        if up || !path.starts_with(&self.root) {
            return Err(outside());
        }
        let root = std::fs::canonicalize(&self.root).unwrap_or_else(|_| self.root.clone());
        let real = path
            .ancestors()
            .find_map(|p| std::fs::canonicalize(p).ok())
            .unwrap_or_else(|| root.clone());
        if !real.starts_with(&root) {
            return Err(outside());
        }
        if agent::permissions::command::paths::is_secret(&path) {
            return Err(format!(
                "{given} holds secrets by convention; the editor's files do not serve it (ask the person)"
            ));
        }
        Ok(path)
    }

    /// Asks the editor; its answer's result.
    async fn ask(&self, method: &str, params: Value) -> Result<Value, String> {
        let session = self.link.current().ok_or("no session is running a turn")?;
        let mut params = params;
        params["sessionId"] = json!(session);
        (self.link.request(&session, method, params).await)
            .map_err(|why| format!("the editor did not answer {method}: {why}"))
    }

    async fn text_of(
        &self,
        path: &Path,
        line: Option<u64>,
        limit: Option<u64>,
    ) -> Result<String, String> {
        let mut params = json!({"path": path.display().to_string()});
        let clamp = |n: u64| u32::try_from(n).unwrap_or(u32::MAX);
        if let Some(line) = line.filter(|n| *n > 0) {
            params["line"] = json!(clamp(line));
        }
        if let Some(limit) = limit.filter(|n| *n > 0) {
            params["limit"] = json!(clamp(limit));
        }
        let read = self.ask("fs/read_text_file", params).await?;
        let content = read["content"].as_str();
        Ok(content
            .ok_or("the editor's answer has no content")?
            .to_owned())
    }

    async fn read(&self, path: &Path, input: &Value) -> Result<String, String> {
        let from = input["offset"].as_u64().filter(|n| *n > 0);
        let text = self.text_of(path, from, input["limit"].as_u64()).await?;
        let mut out = String::new();
        let first = from.unwrap_or(1);
        for (n, line) in text.lines().enumerate() {
            let _ = writeln!(out, "{:>6}\t{line}", first.saturating_add(n as u64));
        }
        if out.is_empty() {
            out = format!("{} is empty (in the editor)", path.display());
        }
        Ok(out)
    }

    async fn write(&self, path: &Path, content: &str) -> Result<String, String> {
        let params = json!({"path": path.display().to_string(), "content": content});
        self.ask("fs/write_text_file", params).await?;
        Ok(format!(
            "wrote {} ({} lines) through the editor",
            path.display(),
            content.lines().count()
        ))
    }

    async fn edit(&self, path: &Path, input: &Value) -> Result<String, String> {
        let old = input["old_string"].as_str().unwrap_or_default();
        let new = input["new_string"].as_str().unwrap_or_default();
        if old.is_empty() || old == new {
            return Err("old_string must be given and differ from new_string".into());
        }
        let text = self.text_of(path, None, None).await?;
        let found = text.matches(old).count();
        let all = input["replace_all"].as_bool().unwrap_or(false);
        let changed = match (found, all) {
            (0, _) => {
                return Err(format!(
                    "old_string is not in {} (as the editor has it)",
                    path.display()
                ));
            }
            (1, _) | (_, true) => text.replace(old, new),
            (n, false) => {
                return Err(format!(
                    "old_string is in {} {n} times: give more context to pick one, or replace_all",
                    path.display()
                ));
            }
        };
        self.write(path, &changed).await?;
        Ok(format!(
            "edited {} through the editor ({found} replaced)",
            path.display()
        ))
    }
}
