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
            let by = super::auth::person_of(&app, &headers).map(|p| p.name.clone());
            ws.on_upgrade(move |socket| host(app, socket, by.unwrap_or_default()))
        }
        _ => (
            StatusCode::FORBIDDEN,
            "403: a WebSocket from another origin, or without the token",
        )
            .into_response(),
    }
}

async fn host(app: App, socket: WebSocket, by: String) {
    let engine = app.engine.clone();
    let serve = move |read, write| async move {
        engine::serve_host(engine, read, write).await;
        Ok(())
    };
    bridge(socket, Some(&by), serve).await;
}

async fn tile(app: App, socket: WebSocket, slot: String) {
    let engine = app.engine.clone();
    bridge(socket, None, move |read, write| async move {
        engine.serve_tile(&slot, read, write).await
    })
    .await;
}

/// The types whose chunks say who answered (`by`): a permission
/// decision, an answer to the agent's question.
const ANSWERS: [&str; 2] = ["permission-decision", "user-answer"];

/// Who answered, on what the page commits: every answer it declares (and
/// any chunk it gives a `by`) names the person signed in, whatever the
/// page said or left out — `alice (the page)`. A line that is no commit
/// request goes on as it is (the engine answers it).
fn signed(line: &mut serde_json::Value, person: &str) {
    let Ok(mut request) = protocol::Request::parse(line.to_string().as_bytes()) else {
        return;
    };
    let protocol::Op::Commit { declaration } = &mut request.op else {
        return;
    };
    let by = serde_json::Value::from(format!("{person} (the page)"));
    let mut changed = false;
    for chunk in &mut declaration.chunks {
        let answers = (chunk.placements.iter()).any(|p| ANSWERS.contains(&p.scope.as_str()));
        let says = chunk.body.as_ref().is_some_and(|b| b.get("by").is_some());
        let body = chunk.body.get_or_insert_with(|| serde_json::json!({}));
        if let Some(fields) = body.as_object_mut().filter(|_| answers || says) {
            fields.insert("by".into(), by.clone());
            changed = true;
        }
    }
    if changed && let Ok(out) = serde_json::to_value(&request) {
        *line = out;
    }
}

/// Carries frames to `serve` as lines and its lines back as frames, until
/// either side closes. A refusal `serve` answers at once (a bad slot
/// token) is sent as an error frame before the socket closes. On the
/// page's socket what it commits is signed by `by` ([`signed`]).
async fn bridge<F, Fut>(mut socket: WebSocket, by: Option<&str>, serve: F)
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
                    let line = one_line(text.as_str(), by);
                    if to_engine.write_all(line.as_bytes()).await.is_err() {
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
fn one_line(frame: &str, by: Option<&str>) -> String {
    let mut line = match serde_json::from_str::<serde_json::Value>(frame) {
        Ok(mut value) => {
            if let Some(person) = by.filter(|p| !p.is_empty()) {
                signed(&mut value, person);
            }
            value.to_string()
        }
        Err(_) => frame.replace(['\n', '\r'], " "),
    };
    line.push('\n');
    line
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn what_the_page_answers_is_signed_by_its_person_whatever_it_said() {
        let decision = |body: serde_json::Value| {
            json!({"id": 1, "op": "commit", "declaration": {"chunks": [{"body": body,
                "placements": [{"scope": "permission-decision", "type": "instance"}]}]}})
        };
        for body in [
            json!({"decision": "allow"}),
            json!({"decision": "allow", "by": "bob"}),
        ] {
            let mut line = decision(body);
            signed(&mut line, "alice");
            let by = &line["declaration"]["chunks"][0]["body"]["by"];
            assert_eq!(*by, "alice (the page)", "{line}");
        }
        let mut other = json!({"id": 2, "op": "scope", "scopes": ["s_1"]});
        let before = other.clone();
        signed(&mut other, "alice");
        assert_eq!(other, before);
    }
}
