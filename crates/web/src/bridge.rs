//! MCP servers hosted by the driving program (`"type": "sdk"` in
//! `--mcp-config`): each becomes, for the engine, a streamable-HTTP server
//! at `http://127.0.0.1:PORT/sdk/NAME` served here, which hands every
//! JSON-RPC message to the program (through the [`Forward`] the SDK front
//! end gives: an `mcp_message` control request) and answers with its
//! `mcp_response`. So the server's tools are programs
//! and every call a recorded, contained run like any MCP tool's; the
//! bearer token that guards the address never reaches the substrate.

use anyhow::{Context as _, Result};
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

/// An answer from the driving program, to come: its response, or why
/// there is none.
pub type Answer<'a> = Pin<Box<dyn Future<Output = Result<Value, String>> + Send + 'a>>;

/// Who carries a control request to the driving program and its answer
/// back (the SDK's link).
pub trait Forward: Send + Sync + 'static {
    /// Sends `request` (a control request's body) and waits for its answer.
    fn request(&self, request: Value) -> Answer<'_>;
}

/// What a request to the bridge needs.
#[derive(Clone)]
struct Bridge {
    link: Arc<dyn Forward>,
    token: String,
}

/// The program's servers among `flags` (`--mcp-config` values), each
/// replaced by the address of this bridge; the bridge is started only
/// when there is one. Answers the server task, to keep while the engine
/// runs.
pub async fn start(
    link: Arc<dyn Forward>,
    flags: &mut [String],
) -> Result<Option<tokio::task::JoinHandle<()>>> {
    let mut parsed: Vec<(usize, ConfigFile)> = Vec::new();
    for (i, given) in flags.iter().enumerate() {
        let text = if given.trim_start().starts_with('{') {
            given.clone()
        } else {
            match std::fs::read_to_string(given) {
                Ok(text) => text,
                Err(_) => continue, // said where the configuration is read
            }
        };
        if let Ok(file) = serde_json::from_str::<ConfigFile>(&text)
            && file.servers.values().any(is_sdk)
        {
            parsed.push((i, file));
        }
    }
    if parsed.is_empty() {
        return Ok(None);
    }
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .context("cannot listen on 127.0.0.1 for the program's MCP servers")?;
    let base = format!("http://{}", listener.local_addr()?);
    let token = substrate::ids::new_id("tok");
    for (i, mut file) in parsed {
        for (name, entry) in file.servers.iter_mut() {
            if is_sdk(entry) {
                *entry = json!({
                    "type": "http",
                    "url": format!("{base}/sdk/{name}"),
                    "headers": {"Authorization": format!("Bearer {token}")},
                });
            }
        }
        flags[i] = serde_json::to_string(&file)?;
    }
    let bridge = Bridge { link, token };
    let app = axum::Router::new()
        .route(
            "/sdk/{name}",
            axum::routing::post(message)
                .get(|| async { StatusCode::METHOD_NOT_ALLOWED })
                .delete(|| async { StatusCode::OK }),
        )
        .with_state(bridge);
    Ok(Some(tokio::spawn(async move {
        if let Err(e) = axum::serve(listener, app).await {
            eprintln!("hc: the bridge to the program's MCP servers stopped: {e}");
        }
    })))
}

/// An `--mcp-config` value: its servers, and whatever else it holds
/// (kept as given).
#[derive(Deserialize, Serialize)]
struct ConfigFile {
    #[serde(rename = "mcpServers")]
    servers: serde_json::Map<String, Value>,
    #[serde(flatten)]
    rest: serde_json::Map<String, Value>,
}

/// A server entry's transport, as far as the bridge reads it.
#[derive(Deserialize, Default)]
#[serde(default)]
struct Transport {
    #[serde(rename = "type")]
    kind: Option<String>,
}

/// Whether a server entry is the driving program's own (`"type": "sdk"`).
fn is_sdk(entry: &Value) -> bool {
    Transport::deserialize(entry).is_ok_and(|t| t.kind.as_deref() == Some("sdk"))
}

/// A JSON-RPC message, as far as the bridge reads it: whether it has an
/// id and a method (present, whatever their values: `"id": null` too).
#[derive(Deserialize, Default)]
#[serde(default)]
struct Rpc {
    #[serde(deserialize_with = "present")]
    id: Option<Value>,
    #[serde(deserialize_with = "present")]
    method: Option<Value>,
}

/// A field that is there, whatever its value (`null` included).
fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(d).map(Some)
}

/// The program's answer to an `mcp_message`.
#[derive(Deserialize, Default)]
#[serde(default)]
struct McpAnswer {
    mcp_response: Value,
}

/// One JSON-RPC message for server `name`: to the program, and its answer
/// back (a notification is only acknowledged).
async fn message(
    State(bridge): State<Bridge>,
    Path(name): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let authorized = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .is_some_and(|t| t == bridge.token);
    if !authorized {
        return StatusCode::UNAUTHORIZED.into_response();
    }
    let Ok(message) = serde_json::from_slice::<Value>(&body) else {
        return (StatusCode::BAD_REQUEST, "not a JSON-RPC message").into_response();
    };
    let rpc = Rpc::deserialize(&message).unwrap_or_default();
    let is_request = rpc.id.is_some() && rpc.method.is_some();
    let answer = bridge
        .link
        .request(json!({"subtype": "mcp_message", "server_name": name, "message": message}))
        .await;
    if !is_request {
        return StatusCode::ACCEPTED.into_response();
    }
    let reply = match answer {
        Ok(answer) => {
            McpAnswer::deserialize(&answer)
                .unwrap_or_default()
                .mcp_response
        }
        Err(why) => json!({"jsonrpc": "2.0", "id": rpc.id,
                           "error": {"code": -32603, "message": why}}),
    };
    (
        [(axum::http::header::CONTENT_TYPE, "application/json")],
        reply.to_string(),
    )
        .into_response()
}
