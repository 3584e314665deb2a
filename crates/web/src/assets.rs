//! What the browser loads: the page and its script and style (compiled
//! into `hc`: no Node, no CDN, offline), and a tile's files — its entry
//! page with `window.hc` injected, and what the page loads beside it —
//! under the tile's own key (a sandboxed frame has no cookie to show).

use super::App;
use axum::extract::{Path, Query, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use hc_host::builtins::BUILTIN_VIEWS;
use std::collections::HashMap;

const INDEX: &str = include_str!("../assets/index.html");
const APP_CSS: &str = include_str!("../assets/app.css");
const HC_JS: &str = include_str!("../assets/hc.js");

/// The page's script: `app.js` and the modules it imports.
const SCRIPTS: &[(&str, &str)] = &[
    ("app.js", include_str!("../assets/app.js")),
    ("core.js", include_str!("../assets/core.js")),
    ("markdown.js", include_str!("../assets/markdown.js")),
    ("conversation.js", include_str!("../assets/conversation.js")),
    ("questions.js", include_str!("../assets/questions.js")),
    ("trace.js", include_str!("../assets/trace.js")),
    ("sidebar.js", include_str!("../assets/sidebar.js")),
    ("panels.js", include_str!("../assets/panels.js")),
];

/// A compiled-in file, with the headers every one carries.
fn respond(content_type: &'static str, body: &'static str) -> Response {
    (
        [
            (header::CONTENT_TYPE, content_type),
            (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
            (header::CACHE_CONTROL, "no-store"),
        ],
        body,
    )
        .into_response()
}

/// `/`: the page.
pub async fn page() -> Response {
    respond("text/html; charset=utf-8", INDEX)
}

/// `/assets/FILE`.
pub async fn asset(Path(file): Path<String>) -> Response {
    if file == "app.css" {
        return respond("text/css; charset=utf-8", APP_CSS);
    }
    match SCRIPTS.iter().find(|(name, _)| *name == file) {
        Some((_, script)) => respond("text/javascript; charset=utf-8", script),
        None => (StatusCode::NOT_FOUND, "no such asset").into_response(),
    }
}

/// `/tile/PROCESS/KEY/PATH`: a file of the tile of webview run PROCESS —
/// its entry page (with `window.hc` for its slot token) or a file beside
/// it in the project. The key is the tile's own, given when it was
/// mounted; anything else is refused.
pub async fn tile_file(
    State(app): State<App>,
    Path((process, key, path)): Path<(String, String, String)>,
    Query(params): Query<HashMap<String, String>>,
) -> Response {
    let known = app.views().get(&process).cloned();
    if known.as_deref() != Some(key.as_str()) {
        return super::auth::refused();
    }
    let entry = app
        .engine
        .db()
        .read(|s| s.body(&process))
        .ok()
        .flatten()
        .and_then(|b| protocol::process::ProcessBody::parse(&b).webview);
    let Some(entry) = entry else {
        return (StatusCode::NOT_FOUND, "not a webview run").into_response();
    };
    let (html, file) = match entry.strip_prefix("builtin:") {
        Some(name) => {
            let Some((_, html)) = BUILTIN_VIEWS.iter().find(|(n, _)| *n == name) else {
                return (StatusCode::NOT_FOUND, "no such built-in view").into_response();
            };
            ((*html).to_owned(), None)
        }
        None => match project_file(&app, &entry, &path) {
            Ok(found) => found,
            Err(response) => return *response,
        },
    };
    // the entry page (or any page asked with its slot token) gets window.hc
    let is_entry = file.as_ref().is_none_or(|f| f.ends_with(&entry)) || path.ends_with(".html");
    match (params.get("slot"), is_entry) {
        (Some(slot), true) => {
            // (`<` escaped: a slot given as `</script>…` stays a string)
            let setup = serde_json::json!({"process": process, "slot": slot})
                .to_string()
                .replace('<', "\\u003c");
            let injected =
                format!("<script>window.__hc = {setup};</script><script>{HC_JS}</script>");
            let html = match html.find("<head>") {
                Some(at) => format!("{}{injected}{}", &html[..at + 6], &html[at + 6..]),
                None => format!("{injected}{html}"),
            };
            (
                [
                    (header::CONTENT_TYPE, "text/html; charset=utf-8"),
                    (header::CACHE_CONTROL, "no-store"),
                    (header::CONTENT_SECURITY_POLICY, TILE_SANDBOX),
                    (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
                ],
                html,
            )
                .into_response()
        }
        _ => {
            let content_type = content_type(&path);
            (
                [
                    (header::CONTENT_TYPE, content_type),
                    (header::CONTENT_SECURITY_POLICY, TILE_SANDBOX),
                    (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
                ],
                html,
            )
                .into_response()
        }
    }
}

/// A tile's files are sandboxed wherever they are opened (a tile's frame
/// opened in a tab of its own must not run as the page).
const TILE_SANDBOX: &str = "sandbox allow-scripts";

/// The file `path` of the tile whose entry is `entry` (relative to the
/// project root): its text, and where it is. Only files under the entry's
/// own directory, inside the project.
fn project_file(
    app: &App,
    entry: &str,
    path: &str,
) -> Result<(String, Option<std::path::PathBuf>), Box<Response>> {
    let root = &app.engine.config().project_root;
    let not_found =
        || Box::new((StatusCode::NOT_FOUND, "no such file for this tile").into_response());
    // No hidden file or directory (`.env`, `.git`, `.hermitcrab`).
    if path.split('/').any(|segment| segment.starts_with('.')) {
        return Err(not_found());
    }
    let entry_path = root.join(entry);
    let dir = entry_path.parent().ok_or_else(not_found)?;
    let wanted = if path.is_empty() || path.ends_with(".html") && !dir.join(path).exists() {
        entry_path.clone()
    } else {
        dir.join(path)
    };
    let real = wanted.canonicalize().map_err(|_| not_found())?;
    let inside = dir.canonicalize().is_ok_and(|d| real.starts_with(d))
        && root.canonicalize().is_ok_and(|r| real.starts_with(r));
    if !inside || !real.is_file() {
        return Err(not_found());
    }
    let text = std::fs::read_to_string(&real).map_err(|_| not_found())?;
    Ok((text, Some(real)))
}

fn content_type(path: &str) -> &'static str {
    match path.rsplit('.').next() {
        Some("html") => "text/html; charset=utf-8",
        Some("js" | "mjs") => "text/javascript; charset=utf-8",
        Some("css") => "text/css; charset=utf-8",
        Some("json") => "application/json",
        Some("svg") => "image/svg+xml",
        _ => "text/plain; charset=utf-8",
    }
}
