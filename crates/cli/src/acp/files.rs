//! The editor's files, when it offers them (`fs.readTextFile`,
//! `fs.writeTextFile`): an MCP server named `editor`, hosted here and
//! bridged to the engine (`hc_web::bridge`, as an SDK program's servers
//! are), whose `read`, `write` and `edit` go to the editor as
//! `fs/read_text_file` and `fs/write_text_file` — so the agent reads the
//! buffer the person sees, unsaved changes included, and its edits land in
//! the editor. They stand in for the built-in tools of the same names;
//! each call is a recorded run like any MCP tool's, its program naming the
//! editor. Only paths inside the project are served.

use super::input::Input;
use super::link::Link;
use hc_acp::schema::FsCapabilities;
use serde::Deserialize;
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

/// The path `given` names, absolute, if the editor's files serve it: inside
/// the project as written and as links resolve it (the nearest part that
/// exists), not a file of secrets (`.env`: the built-in read asks for one;
/// this refuses), and — to be written — not in a directory every tool is
/// kept from writing (`.git`, `.hermitcrab`: the editor writes outside
/// hc's containment, so its rule is kept here).
pub fn served(root: &Path, given: &str, writes: bool) -> Result<PathBuf, String> {
    if given.is_empty() {
        return Err("file_path is missing".into());
    }
    let path = root.join(given);
    let outside = || {
        format!(
            "{given} is outside the project; the editor's files are served only inside {}",
            root.display()
        )
    };
    if path.components().any(|c| c == Component::ParentDir) || !path.starts_with(root) {
        return Err(outside());
    }
    let real_root = std::fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf());
    let real = (path.ancestors())
        .find_map(|p| std::fs::canonicalize(p).ok())
        .unwrap_or_else(|| real_root.clone());
    if !real.starts_with(&real_root) {
        return Err(outside());
    }
    if agent::permissions::command::paths::is_secret(&path)
        || agent::permissions::command::paths::is_secret(&real)
    {
        return Err(format!(
            "{given} holds secrets by convention; the editor's files do not serve it (ask the person)"
        ));
    }
    let kept = |under: &Path, p: &Path| {
        (p.strip_prefix(under).into_iter())
            .flat_map(Path::components)
            .any(|c| {
                contain::policy::PROTECTED_NAMES
                    .iter()
                    .any(|n| c.as_os_str() == *n)
            })
    };
    if writes && (kept(root, &path) || kept(&real_root, &real)) {
        return Err(format!(
            "{given} is in .git or .hermitcrab, which no tool may write; the editor's files do not write it"
        ));
    }
    if writes && let Some(link) = linked(root, &path) {
        return Err(format!(
            "{given} goes through the symbolic link {}: the editor writes outside hc's containment, \
             so its files are never written through a link (write the file the link names)",
            link.display()
        ));
    }
    Ok(path)
}

/// The first part of `path` below `root` that is a symbolic link — the
/// last part included, and whether or not what it names exists (a
/// dangling link is written through as surely as any).
fn linked(root: &Path, path: &Path) -> Option<PathBuf> {
    let below = path.strip_prefix(root).ok()?;
    let mut at = root.to_path_buf();
    for part in below.components() {
        at.push(part);
        match std::fs::symlink_metadata(&at) {
            Ok(meta) if meta.file_type().is_symlink() => return Some(at),
            Ok(_) => {}
            // nothing there: nothing further down is there either
            Err(_) => return None,
        }
    }
    None
}

/// What the bridge forwards: an MCP message for the server.
#[derive(Default, Deserialize)]
#[serde(default)]
struct Forwarded {
    message: Message,
}

/// An MCP message, as far as the server reads it.
#[derive(Default, Deserialize)]
#[serde(default)]
struct Message {
    /// Its id (`null`: a notification).
    id: Value,
    method: String,
    params: Params,
}

/// An MCP message's params: `initialize`'s version, a `tools/call`'s
/// tool and arguments.
#[derive(Default, Deserialize)]
#[serde(default)]
struct Params {
    #[serde(rename = "protocolVersion")]
    protocol_version: Option<String>,
    name: String,
    arguments: Input,
}

/// The editor's answer to `fs/read_text_file`.
#[derive(Deserialize)]
struct ReadAnswer {
    content: String,
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
            let message = Forwarded::deserialize(&request).unwrap_or_default().message;
            let id = message.id;
            let outcome = match message.method.as_str() {
                "initialize" => Ok(json!({
                    "protocolVersion": message.params.protocol_version.as_deref().unwrap_or("2025-06-18"),
                    "capabilities": {"tools": {}},
                    "serverInfo": {"name": SERVER, "version": env!("CARGO_PKG_VERSION")},
                })),
                "ping" => Ok(json!({})),
                "tools/list" => Ok(json!({"tools": self.list()})),
                "tools/call" => Ok(self.call(&message.params).await),
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
    async fn call(&self, params: &Params) -> Value {
        let input = &params.arguments;
        let name = params.name.as_str();
        let given = input.file_path.as_deref().unwrap_or_default();
        let writes = name != "read";
        let done = match served(&self.root, given, writes) {
            Err(why) => Err(why),
            Ok(_) if !self.tools.contains(&name) => Err(format!("no tool `{name}` here")),
            Ok(path) => match name {
                "read" => self.read(&path, input).await,
                "write" => {
                    self.write(&path, input.content.as_deref().unwrap_or_default())
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
        let read = ReadAnswer::deserialize(&read)
            .map_err(|e| format!("the editor's answer to fs/read_text_file: {e}"))?;
        Ok(read.content)
    }

    async fn read(&self, path: &Path, input: &Input) -> Result<String, String> {
        let from = input.offset.filter(|n| *n > 0);
        let text = self.text_of(path, from, input.limit).await?;
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

    async fn edit(&self, path: &Path, input: &Input) -> Result<String, String> {
        let old = input.old_string.as_deref().unwrap_or_default();
        let new = input.new_string.as_deref().unwrap_or_default();
        if old.is_empty() || old == new {
            return Err("old_string must be given and differ from new_string".into());
        }
        let text = self.text_of(path, None, None).await?;
        let found = text.matches(old).count();
        let changed = match (found, input.replace_all) {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_projects_files_are_served_and_none_kept_from_writing() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join(".git/hooks")).unwrap();
        std::fs::write(root.join("a.txt"), "a").unwrap();
        assert_eq!(served(&root, "a.txt", true).unwrap(), root.join("a.txt"));
        assert!(served(&root, "new/b.txt", true).is_ok());
        // reading .git is a read; writing it is refused, by name or by link
        assert!(served(&root, ".git/config", false).is_ok());
        assert!(served(&root, ".git/hooks/post-checkout", true).is_err());
        std::os::unix::fs::symlink(root.join(".git"), root.join("docs")).unwrap();
        assert!(served(&root, "docs/hooks/post-checkout", true).is_err());
        // outside, by path or by link; secrets
        let away = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(away.path(), root.join("away")).unwrap();
        assert!(served(&root, "away/x", false).is_err());
        assert!(served(&root, "../x", false).is_err());
        assert!(served(&root, "/etc/passwd", false).is_err());
        assert!(served(&root, ".env", false).is_err());
        assert!(served(&root, "", false).is_err());
    }

    #[test]
    fn a_write_through_any_link_is_refused_dangling_or_not() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join(".git/hooks")).unwrap();
        std::fs::create_dir_all(root.join("notes")).unwrap();
        std::fs::write(root.join("real.md"), "r").unwrap();
        // a dangling link into .git, the last part of the path
        std::os::unix::fs::symlink("../.git/hooks/pre-commit", root.join("notes/hook.md")).unwrap();
        assert!(served(&root, "notes/hook.md", true).is_err());
        // a link out of the project, made by a tool, not yet pointing at anything
        std::os::unix::fs::symlink("/nonexistent-home/.bash_aliases", root.join("notes/a.md"))
            .unwrap();
        assert!(served(&root, "notes/a.md", true).is_err());
        // even a link inside the project is not written through
        std::os::unix::fs::symlink("../real.md", root.join("notes/r.md")).unwrap();
        assert!(served(&root, "notes/r.md", true).is_err());
        assert!(served(&root, "notes/r.md", false).is_ok());
        assert!(served(&root, "notes/new.md", true).is_ok());
    }
}
