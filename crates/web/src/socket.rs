//! `/ws`: the protocol over WebSocket, one JSON object per text frame. The
//! page's socket (cookie and `Origin` checked) is a host; a tile's socket
//! (`/ws?slot=TOKEN`) is bound to the process its one-time slot token was
//! issued for, and judged against that process's boundaries. A frame that
//! is not JSON is answered `INVALID_REQUEST` and the socket goes on.

use super::App;
use axum::extract::ws::{Message, WebSocket, WebSocketUpgrade};
use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use std::collections::HashMap;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, DuplexStream, ReadHalf, WriteHalf};

/// The upgrade of `/ws` (the page's) or `/ws?slot=TOKEN` (a tile's).
pub async fn upgrade(
    State(app): State<App>,
    Query(params): Query<HashMap<String, String>>,
    headers: HeaderMap,
    ws: WebSocketUpgrade,
) -> Response {
    let origin = headers
        .get(header::ORIGIN)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    let ours = app.origins.contains(&origin);
    match params.get("slot").cloned() {
        // a sandboxed frame's origin is opaque ("null"): the token is its proof
        Some(slot) if ours || origin == "null" => {
            ws.on_upgrade(move |socket| tile(app, socket, slot))
        }
        None if ours && super::auth::has_cookie(&app, &headers) => {
            match super::auth::person_of(&app, &headers).cloned() {
                Some(person) => ws.on_upgrade(move |socket| host(app, socket, person)),
                None => super::auth::refused(),
            }
        }
        _ => (
            StatusCode::FORBIDDEN,
            "403: a WebSocket from another origin, or without the token",
        )
            .into_response(),
    }
}

/// The page's socket: the protocol with the host's reach, acting for the
/// person signed in — each frame judged by their role first
/// ([`crate::roles`]), what they commit signed as theirs.
async fn host(app: App, socket: WebSocket, person: crate::auth::Person) {
    let engine = app.engine.clone();
    let ctx = engine::Context::host_for(person.name.clone());
    let serve = move |read, write| async move {
        engine::serve_host_as(engine, ctx, read, write).await;
        Ok(())
    };
    bridge(socket, Some((&app, &person)), serve).await;
}

async fn tile(app: App, socket: WebSocket, slot: String) {
    let engine = app.engine.clone();
    bridge(socket, None, move |read, write| async move {
        engine.serve_tile(&slot, read, write).await
    })
    .await;
}

/// Carries frames to `serve` as lines and its lines back as frames, until
/// either side closes. A refusal `serve` answers at once (a bad slot
/// token) is sent as an error frame before the socket closes. On the
/// page's socket each frame is judged by the person's role first, what
/// they commit signed as theirs ([`crate::roles::judge`]); a frame refused
/// is answered here and goes no further.
async fn bridge<F, Fut>(mut socket: WebSocket, by: Option<(&App, &crate::auth::Person)>, serve: F)
where
    F: FnOnce(ReadHalf<DuplexStream>, WriteHalf<DuplexStream>) -> Fut,
    Fut: Future<Output = engine::Result<()>> + Send + 'static,
{
    let (ours, theirs) = tokio::io::duplex(1 << 20);
    let (read, write) = tokio::io::split(theirs);
    let serving = tokio::spawn(serve(read, write));
    let (from_engine, mut to_engine) = tokio::io::split(ours);
    let mut lines = tokio::io::BufReader::new(from_engine).lines();
    loop {
        tokio::select! {
            frame = socket.recv() => match frame {
                Some(Ok(Message::Text(text))) => {
                    let line = match by {
                        Some((app, person)) => crate::roles::judge(app, person, text.as_str()),
                        None => Ok(one_line(text.as_str())),
                    };
                    let sent = match line {
                        Ok(line) => to_engine.write_all(line.as_bytes()).await.is_ok(),
                        Err(refusal) => socket.send(Message::Text(refusal.into())).await.is_ok(),
                    };
                    if !sent {
                        break;
                    }
                }
                Some(Ok(Message::Binary(_))) => {
                    let refusal = r#"{"id":null,"error":{"code":"INVALID_REQUEST","message":"frames are text: one JSON object each"}}"#;
                    if socket.send(Message::Text(refusal.into())).await.is_err() {
                        break;
                    }
                }
                Some(Ok(_)) => {}
                Some(Err(_)) | None => break,
            },
            line = lines.next_line() => match line {
                Ok(Some(line)) => {
                    if socket.send(Message::Text(line.into())).await.is_err() {
                        break;
                    }
                }
                _ => break,
            },
        }
    }
    let _ = to_engine.shutdown().await;
    if let Ok(Err(refused)) = serving.await {
        let body = protocol::ErrorBody::from(refused);
        let frame = serde_json::json!({"id": null, "error": body});
        let _ = socket.send(Message::Text(frame.to_string().into())).await;
    }
    let _ = socket.send(Message::Close(None)).await;
}

/// A frame as one protocol line: JSON made compact (a pretty-printed
/// object spans lines), anything else kept on one line for the engine to
/// refuse.
pub(crate) fn one_line(frame: &str) -> String {
    let mut line = match serde_json::from_str::<serde_json::Value>(frame) {
        Ok(value) => value.to_string(),
        Err(_) => frame.replace(['\n', '\r'], " "),
    };
    line.push('\n');
    line
}
