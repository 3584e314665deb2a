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
    let mut parsed: Vec<(usize, Value)> = Vec::new();
    for (i, given) in flags.iter().enumerate() {
        let text = if given.trim_start().starts_with('{') {
            given.clone()
        } else {
            match std::fs::read_to_string(given) {
                Ok(text) => text,
                Err(_) => continue, // said where the configuration is read
            }
        };
        if let Ok(value) = serde_json::from_str::<Value>(&text)
            && has_sdk_server(&value)
        {
            parsed.push((i, value));
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
    for (i, mut value) in parsed {
        if let Some(servers) = value["mcpServers"].as_object_mut() {
            for (name, entry) in servers.iter_mut() {
                if entry["type"] == "sdk" {
                    *entry = json!({
                        "type": "http",
                        "url": format!("{base}/sdk/{name}"),
                        "headers": {"Authorization": format!("Bearer {token}")},
                    });
                }
            }
        }
        flags[i] = value.to_string();
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

fn has_sdk_server(value: &Value) -> bool {
    value["mcpServers"]
        .as_object()
        .is_some_and(|servers| servers.values().any(|s| s["type"] == "sdk"))
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
    let is_request = message.get("id").is_some() && message.get("method").is_some();
    let answer = bridge
        .link
        .request(json!({"subtype": "mcp_message", "server_name": name, "message": message}))
        .await;
    if !is_request {
        return StatusCode::ACCEPTED.into_response();
    }
    let reply = match answer {
        Ok(answer) => answer["mcp_response"].clone(),
        Err(why) => json!({"jsonrpc": "2.0", "id": message["id"],
                           "error": {"code": -32603, "message": why}}),
    };
    (
        [(axum::http::header::CONTENT_TYPE, "application/json")],
        reply.to_string(),
    )
        .into_response()
}
