//! `GET /api/sessions`: the sidebar's rows — each session with when it
//! was last active, how its last run stands (`queued`, `running`,
//! `waiting` on a person, `done`, `failed`…), where it runs and what its
//! runs spent: the rows `hc agents` lists ([`hc_host::agents`]).

use super::App;
use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use std::sync::Arc;

/// `GET /api/sessions`: every session, newest first.
pub async fn list(State(app): State<App>) -> Response {
    let db = Arc::clone(app.engine.db());
    let rows = tokio::task::spawn_blocking(move || hc_host::agents::rows(&db)).await;
    match rows {
        Ok(Ok(rows)) => Json(rows).into_response(),
        Ok(Err(e)) => super::api::failed(StatusCode::INTERNAL_SERVER_ERROR, e),
        Err(e) => super::api::failed(StatusCode::INTERNAL_SERVER_ERROR, e),
    }
}
