//! Before a project is open: `initialize` and `authenticate` (answered
//! the same after), and the project the first session names staged —
//! its configuration resolved, the editor's MCP servers and files added —
//! then started inside the runtime.

use super::files;
use super::link::Link;
use super::prompt;
use hc_acp::rpc::{self, RpcError};
use hc_acp::schema::{InitializeRequest, McpServer, NewSessionRequest};
use serde_json::{Value, json};
use std::path::Path;
use std::sync::Arc;

fn invalid(why: impl Into<String>) -> RpcError {
    RpcError::new(rpc::INVALID_PARAMS, why)
}

/// `params` read as `T`, or the error saying why not.
pub fn params<T: serde::de::DeserializeOwned>(method: &str, params: Value) -> Result<T, RpcError> {
    serde_json::from_value(params).map_err(|e| invalid(format!("{method}: {e}")))
}

/// The requests answered the same before and after a project is open:
/// `initialize`, `authenticate` (none for another method).
pub fn stateless(
    method: &str,
    params: &Value,
    client: &mut InitializeRequest,
) -> Option<Result<Value, RpcError>> {
    match method {
        "initialize" => Some(initialize(params, client)),
        "authenticate" => Some(match missing_key() {
            Some(var) => Err(auth_required(var)),
            None => Ok(json!({})),
        }),
        _ => None,
    }
}

fn initialize(params: &Value, client: &mut InitializeRequest) -> Result<Value, RpcError> {
    *client = self::params("initialize", params.clone())?;
    let auth_methods: Vec<Value> = (missing_key().into_iter())
        .map(|var| {
            json!({"id": format!("env:{var}"), "name": var,
                "description": format!("Set {var} in the environment the editor starts `hc acp` with (Zed: the agent server's \"env\"), then start it again")})
        })
        .collect();
    Ok(json!({
        "protocolVersion": hc_acp::schema::PROTOCOL_VERSION,
        "agentCapabilities": {
            "loadSession": true,
            "promptCapabilities": {"image": true, "audio": false, "embeddedContext": true},
            "mcpCapabilities": {"http": true, "sse": true},
        },
        "authMethods": auth_methods,
        "agentInfo": {"name": "hermitcrab", "title": "hermitcrab", "version": env!("CARGO_PKG_VERSION")},
    }))
}

/// The variable to set when no model API can be reached (none: one can).
fn missing_key() -> Option<&'static str> {
    use hc_host::turn::missing_key;
    missing_key(agent::ApiKind::Openai).and(missing_key(agent::ApiKind::Anthropic))
}

/// The error saying which variable to set.
pub fn auth_required(var: &str) -> RpcError {
    RpcError::new(
        rpc::AUTH_REQUIRED,
        format!("no API key: set {var} in the environment the editor starts `hc acp` with"),
    )
}

/// The project a session names, staged before the runtime starts.
pub struct Opened {
    prepared: hc_host::open::Prepared,
    flags: crate::settings::Flags,
    /// The configuration its runs start from.
    pub config: agent::AgentConfig,
    /// The MCP servers the editor passed.
    pub servers: Vec<McpServer>,
    /// The built-in tools the editor's files stand in for.
    editor_tools: Vec<&'static str>,
}

/// Stages the project `params`'s `cwd` names, with the MCP servers it
/// passes (the person's, from the editor's settings, as `--mcp-config`
/// would be); the project's own files need trust as always.
pub fn open(
    params: &Value,
    flags: &crate::settings::Flags,
    client: &InitializeRequest,
) -> Result<Opened, RpcError> {
    let asked: NewSessionRequest = self::params("session", params.clone())?;
    let cwd = Path::new(&asked.cwd);
    if !cwd.is_absolute() || !cwd.is_dir() {
        return Err(invalid(format!(
            "cwd `{}` is not an absolute path to a directory",
            asked.cwd
        )));
    }
    if let Some(taken) = files::reserved(&asked.mcp_servers) {
        return Err(invalid(taken));
    }
    let mut flags = flags.clone();
    if !asked.mcp_servers.is_empty() {
        flags
            .mcp_config
            .push(prompt::mcp_config(&asked.mcp_servers).to_string());
    }
    let failed = |e: anyhow::Error| RpcError::new(rpc::INTERNAL_ERROR, format!("{e:#}"));
    let ask = crate::trust::Ask::Never;
    let staged =
        hc_host::open::Staged::at(cwd, hc_host::open::Find::OrInit, ask).map_err(failed)?;
    let (_, mut config) = crate::settings::resolve(&staged.files, &flags, true)
        .map_err(|e| invalid(format!("{e:#}")))?;
    // the editor's files stand in for the built-ins (those are then not
    // offered), unless the person's rules name them
    let editor_tools = files::replaced(&client.client_capabilities.fs, &config);
    if !editor_tools.is_empty() {
        flags.mcp_config.push(files::config());
        config
            .hidden
            .extend(editor_tools.iter().map(|t| (*t).to_owned()));
    }
    if let Some(var) = hc_host::turn::missing_key(config.api) {
        return Err(auth_required(var));
    }
    let mut prepared = staged.prepare(false).map_err(failed)?;
    if editor_tools.contains(&"write") {
        // what the editor writes for a call is that call's file effects,
        // recorded as any tool's (rewind puts them back): its server's
        // runs are looked at over the project
        let service = mcp::config::service_name(files::SERVER);
        let grant = prepared.config.grants.entry(service).or_default();
        grant.write.push(".".into());
    }
    Ok(Opened {
        prepared,
        flags,
        config,
        servers: asked.mcp_servers,
        editor_tools,
    })
}

/// A started project: its host, the configuration its runs start from,
/// the editor's MCP servers, and the bridge to the editor's files (while
/// it serves them).
type Started = (
    hc_host::open::Host,
    agent::AgentConfig,
    Vec<McpServer>,
    Option<tokio::task::JoinHandle<()>>,
);

impl Opened {
    /// The project's engine started (inside the runtime), the editor's
    /// files bridged when it offers them.
    pub async fn start(mut self, link: &Arc<Link>) -> anyhow::Result<Started> {
        let files = files::EditorFiles {
            link: Arc::clone(link),
            root: self.prepared.config.project_root.clone(),
            tools: self.editor_tools,
        };
        let bridge = match files.tools.is_empty() {
            true => None,
            false => hc_web::bridge::start(Arc::new(files), &mut self.flags.mcp_config).await?,
        };
        let host = self.prepared.register(&self.flags, true)?.open()?;
        Ok((host, self.config, self.servers, bridge))
    }
}
