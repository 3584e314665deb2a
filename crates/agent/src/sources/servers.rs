//! The services a run starts before it reads its tools: each MCP server's
//! service program (`mcp/NAME`, `runtime: "service"`, its `mcp` facts in
//! its body) started in parallel, each bounded by its `startup_timeout_ms`.
//! A server that fails is a status line and its tools are not offered.

use protocol::{Client, ScopeOpts, ScopeResult};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Where one server stands for this run (stream-json's `mcp_servers`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServerStatus {
    /// The server's name.
    pub name: String,
    /// `connected`, `failed`, `needs-auth`, `disabled` or `pending`.
    pub status: String,
    /// Why it failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The tools it lists that cannot be offered, and why.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub skipped_tools: Vec<String>,
}

/// The servers of this run: their statuses, and the service programs
/// connected (whose tools are offered).
#[derive(Clone, Debug, Default)]
pub struct Servers {
    /// Each configured server, by name.
    pub statuses: Vec<ServerStatus>,
    /// Service program names (`mcp/NAME`) that are up.
    pub connected: Vec<String>,
}

/// One server the host configured: its service program and its facts.
struct Configured {
    id: String,
    program: String,
    name: String,
    enabled: bool,
    error: Option<String>,
    startup_timeout_ms: u64,
}

fn configured(id: &str, name: &str, body: &Value) -> Option<Configured> {
    let mcp = body.get("mcp")?;
    (body["runtime"] == "service").then(|| Configured {
        id: id.to_owned(),
        program: name.to_owned(),
        name: mcp["server"].as_str().unwrap_or(name).to_owned(),
        enabled: mcp["enabled"].as_bool().unwrap_or(true),
        error: mcp["error"].as_str().map(str::to_owned),
        startup_timeout_ms: mcp["startup_timeout_ms"].as_u64().unwrap_or(10_000),
    })
}

/// Starts every enabled server the host configured among `programs` (a
/// read of `engine/program`), together.
pub async fn start(
    client: &Client,
    programs: &ScopeResult,
    origin: &protocol::origin::Origin,
) -> Servers {
    let all: Vec<Configured> = programs
        .chunks
        .iter()
        .filter_map(|c| {
            let mut server = configured(&c.id, c.name.as_deref()?, &c.body_value())?;
            if origin.distrusts(&c.id) {
                server.error = Some(
                    "not started: untrusted — it comes from a substrate made elsewhere \
                     (shipped with the project); `hc trust` to allow it"
                        .into(),
                );
            }
            if let Some(other) = programs.foreign.iter().find(|f| f.id == c.id) {
                server.error = Some(format!(
                    "not started: untrusted — {} declared it on this shared store, not you; \
                     configure it yourself, or trust them for this project ([team] trust)",
                    other.by.as_deref().unwrap_or("someone")
                ));
            }
            Some(server)
        })
        .collect();
    let started = futures_util::future::join_all(all.iter().map(|s| start_one(client, s))).await;
    let mut servers = Servers::default();
    for (server, status) in all.iter().zip(started) {
        if status.status == "connected" {
            servers.connected.push(server.program.clone());
        }
        servers.statuses.push(status);
    }
    servers
}

/// Starts one server (when enabled and configured well): where it stands.
async fn start_one(client: &Client, s: &Configured) -> ServerStatus {
    let status = |status: &str, error: Option<String>| ServerStatus {
        name: s.name.clone(),
        status: status.to_owned(),
        error,
        skipped_tools: Vec::new(),
    };
    match (&s.error, s.enabled) {
        (_, false) => status("disabled", None),
        (Some(error), _) => status("failed", Some(error.clone())),
        (None, true) => match client.service(&s.program, Some(s.startup_timeout_ms)).await {
            Ok(process) => ServerStatus {
                skipped_tools: skipped(client, &process).await,
                ..status("connected", None)
            },
            Err(e) if needs_auth(client, &s.id).await => status("needs-auth", Some(e.to_string())),
            Err(e) => status("failed", Some(e.to_string())),
        },
    }
}

/// Whether the last process of service program `id` ended because its
/// server wants the person to sign in.
async fn needs_auth(client: &Client, id: &str) -> bool {
    let opts = ScopeOpts {
        kind: substrate::TypeFilter::Instance,
        limit: Some(usize::MAX),
        ..ScopeOpts::default()
    };
    let Ok(read) = client.scope(&[id], opts).await else {
        return false;
    };
    let processes = read
        .chunks
        .iter()
        .filter(|c| c.is_on("engine/process", substrate::PlacementType::Instance))
        .map(|c| protocol::process::ProcessBody::parse(&c.body_value()));
    protocol::process::last_needs_auth(processes)
}

/// The tools the service `process` said it could not offer (its last
/// word on it, an output on its process).
async fn skipped(client: &Client, process: &str) -> Vec<String> {
    let Ok(read) = client.scope(&[process], ScopeOpts::default()).await else {
        return Vec::new();
    };
    read.chunks
        .iter()
        .filter(|c| c.is_on("engine/output", substrate::PlacementType::Instance))
        .filter_map(|c| {
            serde_json::from_value(c.body_value()["data"]["skipped_tools"].clone()).ok()
        })
        .next_back()
        .unwrap_or_default()
}
