//! Signing in to an HTTP MCP server: a small real authorization server
//! (protected-resource metadata, authorization-server metadata, dynamic
//! registration, an authorization endpoint that approves at once, a token
//! endpoint that checks PKCE and the `resource`, refresh with rotation,
//! revocation) and an MCP server behind it that answers only a live
//! token — all on 127.0.0.1, written here. `hc mcp login` is driven as a
//! person would: the address it prints opened by a browser (an HTTP
//! client that follows redirects).

use crate::common::*;
use axum::extract::{Form, Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use base64::Engine as _;
use serde_json::{Value, json};
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

/// What the authorization server knows and saw.
#[derive(Default)]
struct Seen {
    base: String,
    registrations: Vec<Value>,
    /// code → (PKCE challenge, redirect_uri, resource)
    codes: HashMap<String, (String, String, String)>,
    authorize_queries: Vec<BTreeMap<String, String>>,
    token_forms: Vec<BTreeMap<String, String>>,
    access: Vec<String>,
    refresh: Vec<String>,
    revoked: Vec<String>,
    issued: u32,
}

type Shared = Arc<Mutex<Seen>>;

fn issue(seen: &mut Seen) -> Value {
    seen.issued += 1;
    let (access, refresh) = (
        format!("access-{}", seen.issued),
        format!("refresh-{}", seen.issued),
    );
    seen.access.push(access.clone());
    seen.refresh.push(refresh.clone());
    json!({"access_token": access, "token_type": "Bearer", "expires_in": 3600,
        "refresh_token": refresh, "scope": "docs"})
}

fn refused(error: &str) -> Response {
    (StatusCode::BAD_REQUEST, axum::Json(json!({"error": error}))).into_response()
}

async fn token(State(seen): State<Shared>, Form(form): Form<BTreeMap<String, String>>) -> Response {
    let mut seen = seen.lock().unwrap();
    seen.token_forms.push(form.clone());
    let resource = format!("{}/mcp", seen.base);
    if form.get("resource") != Some(&resource) {
        return refused("invalid_target");
    }
    match form.get("grant_type").map(String::as_str) {
        Some("authorization_code") => {
            let code = form.get("code").cloned().unwrap_or_default();
            let Some((challenge, redirect, _)) = seen.codes.remove(&code) else {
                return refused("invalid_grant");
            };
            let verifier = form.get("code_verifier").cloned().unwrap_or_default();
            let digest = ring::digest::digest(&ring::digest::SHA256, verifier.as_bytes());
            let derived = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(digest);
            if derived != challenge || form.get("redirect_uri") != Some(&redirect) {
                return refused("invalid_grant");
            }
            axum::Json(issue(&mut seen)).into_response()
        }
        Some("refresh_token") => {
            let given = form.get("refresh_token").cloned().unwrap_or_default();
            if !seen.refresh.contains(&given) {
                return refused("invalid_grant");
            }
            // rotated: the one spent is spent
            seen.refresh.retain(|r| *r != given);
            axum::Json(issue(&mut seen)).into_response()
        }
        _ => refused("unsupported_grant_type"),
    }
}

async fn authorize(
    State(seen): State<Shared>,
    Query(query): Query<BTreeMap<String, String>>,
) -> Response {
    let mut seen = seen.lock().unwrap();
    seen.authorize_queries.push(query.clone());
    let ok = query.get("response_type").map(String::as_str) == Some("code")
        && query.get("code_challenge_method").map(String::as_str) == Some("S256")
        && query.contains_key("client_id");
    if !ok {
        return refused("invalid_request");
    }
    let code = format!("code-{}", seen.codes.len() + 1);
    let redirect = query["redirect_uri"].clone();
    seen.codes.insert(
        code.clone(),
        (
            query["code_challenge"].clone(),
            redirect.clone(),
            query.get("resource").cloned().unwrap_or_default(),
        ),
    );
    let to = format!("{redirect}?code={code}&state={}", query["state"]);
    (StatusCode::FOUND, [(header::LOCATION, to)]).into_response()
}

/// The MCP server: JSON answers to JSON-RPC posts, for a live token only.
async fn mcp(State(seen): State<Shared>, headers: HeaderMap, body: axum::body::Bytes) -> Response {
    let (live, base) = {
        let seen = seen.lock().unwrap();
        let token = headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .map(str::to_owned);
        (token.filter(|t| seen.access.contains(t)), seen.base.clone())
    };
    let Some(token) = live else {
        let challenge =
            format!("Bearer resource_metadata=\"{base}/.well-known/oauth-protected-resource/mcp\"");
        return (
            StatusCode::UNAUTHORIZED,
            [(header::WWW_AUTHENTICATE, challenge)],
        )
            .into_response();
    };
    let Ok(request) = serde_json::from_slice::<Value>(&body) else {
        return StatusCode::BAD_REQUEST.into_response();
    };
    let Some(id) = request.get("id").cloned() else {
        return StatusCode::ACCEPTED.into_response();
    };
    let result = match request["method"].as_str() {
        Some("initialize") => json!({
            "protocolVersion": request["params"]["protocolVersion"],
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "docs", "version": "1.0.0"},
        }),
        Some("tools/list") => json!({"tools": [{"name": "whoami",
            "description": "Says which token the call came with.",
            "inputSchema": {"type": "object", "properties": {}}}]}),
        Some("tools/call") => {
            json!({"content": [{"type": "text", "text": format!("called with {token}")}]})
        }
        _ => {
            return axum::Json(json!({"jsonrpc": "2.0", "id": id,
                "error": {"code": -32601, "message": "method not found"}}))
            .into_response();
        }
    };
    axum::Json(json!({"jsonrpc": "2.0", "id": id, "result": result})).into_response()
}

/// The servers, listening: their base address and what they saw.
async fn servers() -> (String, Shared) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://127.0.0.1:{}", listener.local_addr().unwrap().port());
    let seen: Shared = Arc::new(Mutex::new(Seen {
        base: base.clone(),
        ..Seen::default()
    }));
    let b = base.clone();
    let resource = move || {
        let b = b.clone();
        async move {
            axum::Json(
                json!({"resource": format!("{b}/mcp"), "authorization_servers": [b],
                "scopes_supported": ["docs"]}),
            )
        }
    };
    let b = base.clone();
    let metadata = move || {
        let b = b.clone();
        async move {
            axum::Json(
                json!({"issuer": b, "authorization_endpoint": format!("{b}/authorize"),
                "token_endpoint": format!("{b}/token"), "registration_endpoint": format!("{b}/register"),
                "revocation_endpoint": format!("{b}/revoke"),
                "response_types_supported": ["code"], "code_challenge_methods_supported": ["S256"],
                "grant_types_supported": ["authorization_code", "refresh_token"],
                "token_endpoint_auth_methods_supported": ["none"]}),
            )
        }
    };
    let register = |State(seen): State<Shared>, axum::Json(body): axum::Json<Value>| async move {
        let mut seen = seen.lock().unwrap();
        seen.registrations.push(body.clone());
        let mut answer = body;
        answer["client_id"] = json!(format!("client-{}", seen.registrations.len()));
        (StatusCode::CREATED, axum::Json(answer))
    };
    let revoke = |State(seen): State<Shared>, Form(form): Form<BTreeMap<String, String>>| async move {
        let mut seen = seen.lock().unwrap();
        let token = form.get("token").cloned().unwrap_or_default();
        seen.access.retain(|t| *t != token);
        seen.refresh.retain(|t| *t != token);
        seen.revoked.push(token);
        StatusCode::OK
    };
    let app = axum::Router::new()
        .route(
            "/mcp",
            post(mcp).get(|| async { StatusCode::METHOD_NOT_ALLOWED }),
        )
        .route(
            "/.well-known/oauth-protected-resource/mcp",
            get(resource.clone()),
        )
        .route("/.well-known/oauth-protected-resource", get(resource))
        .route("/.well-known/oauth-authorization-server", get(metadata))
        .route("/register", post(register))
        .route("/authorize", get(authorize))
        .route("/token", post(token))
        .route("/revoke", post(revoke))
        .with_state(Arc::clone(&seen));
    tokio::spawn(async move { axum::serve(listener, app).await });
    (base, seen)
}

/// `hc mcp login NAME --no-browser`, the address it prints opened as a
/// browser would: what `hc` said.
async fn sign_in(s: &Setup, env: &[(&str, &str)], name: &str) -> Ran {
    use tokio::io::AsyncBufReadExt as _;
    let mut command = s.hc(&["mcp", "login", name, "--no-browser"]);
    command.envs(env.iter().copied());
    command
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut child = command.spawn().unwrap();
    let mut lines = tokio::io::BufReader::new(child.stderr.take().unwrap()).lines();
    let mut said = String::new();
    let address = loop {
        let Some(line) = lines.next_line().await.unwrap() else {
            panic!("hc printed no address: {said}");
        };
        said.push_str(&line);
        said.push('\n');
        if let Some(url) = line.trim().strip_prefix("http://127.0.0.1") {
            break format!("http://127.0.0.1{url}");
        }
    };
    // the browser: to the authorization server, and back to `hc`
    let page = reqwest::get(&address).await.unwrap();
    assert_eq!(page.status(), 200, "{address}");
    assert!(
        page.url().as_str().starts_with("http://localhost:"),
        "{}",
        page.url()
    );
    assert!(
        page.text()
            .await
            .unwrap()
            .contains("You may close this window")
    );
    while let Some(line) = lines.next_line().await.unwrap() {
        said.push_str(&line);
        said.push('\n');
    }
    let out = child.wait_with_output().await.unwrap();
    Ran {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: said,
    }
}

fn statuses(ran: &Ran) -> Value {
    serde_json::from_str(&ran.stdout).unwrap_or_else(|_| panic!("{ran:#?}"))
}

#[tokio::test(flavor = "multi_thread")]
async fn a_server_that_wants_sign_in_needs_auth_until_hc_mcp_login_then_refreshes_and_is_revoked() {
    let (base, seen) = servers().await;
    let s = Setup::new(json!({"turns": [
        reply(json!([call("t1", "mcp__docs__whoami", json!({}))]), "tool_use"),
        reply(json!([text("done")]), "end_turn"),
        reply(json!([text("later")]), "end_turn"),
        reply(json!([text("again")]), "end_turn"),
    ]}))
    .await;
    let url = format!("{base}/mcp");
    let config = s.root.join("person");
    let env = [("XDG_CONFIG_HOME", config.to_str().unwrap())];
    let added = s
        .out_with(
            &env,
            &["mcp", "add", "-s", "user", "-t", "http", "docs", &url],
        )
        .await;
    assert_eq!(added.code, 0, "{added:#?}");
    // not signed in: it needs authentication (not "failed")
    let listed = s.out_with(&env, &["mcp", "list", "--json"]).await;
    assert_eq!(statuses(&listed)[0]["status"], "needs-auth", "{listed:#?}");
    let shown = s.out_with(&env, &["mcp", "list"]).await;
    assert!(
        shown
            .stdout
            .contains("needs authentication: sign in with `hc mcp login docs`"),
        "{shown:#?}"
    );

    let signed = sign_in(&s, &env, "docs").await;
    assert_eq!(signed.code, 0, "{signed:#?}");
    assert!(signed.stdout.contains("signed in to `docs`"), "{signed:#?}");
    {
        let seen = seen.lock().unwrap();
        let registered = &seen.registrations[0];
        assert_eq!(registered["client_name"], "hermitcrab");
        assert_eq!(registered["token_endpoint_auth_method"], "none");
        let redirect = registered["redirect_uris"][0].as_str().unwrap();
        assert!(
            redirect.starts_with("http://localhost:") && redirect.ends_with("/callback"),
            "{redirect}"
        );
        let asked = &seen.authorize_queries[0];
        assert_eq!(asked["resource"], url, "the resource is the server");
        assert_eq!(asked["code_challenge_method"], "S256");
        assert_eq!(seen.token_forms[0]["grant_type"], "authorization_code");
    }
    let store = std::fs::read_dir(config.join("hermitcrab/mcp-auth"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    use std::os::unix::fs::PermissionsExt as _;
    let mode = std::fs::metadata(&store).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600, "the tokens are the person's alone");
    assert!(
        std::fs::read_to_string(&store)
            .unwrap()
            .contains("access-1")
    );

    // signed in: connected, and a run calls its tool with the token
    let listed = s.out_with(&env, &["mcp", "list", "--json"]).await;
    assert_eq!(statuses(&listed)[0]["status"], "connected", "{listed:#?}");
    let ran = s
        .out_with(&env, &["run", "--allow", "mcp__docs__whoami", "who am I"])
        .await;
    assert_eq!(ran.code, 0, "{ran:#?}");
    let session = s.sessions().pop().unwrap();
    let result = &s.of_type(&session, "tool-result")[0];
    assert_eq!(result["text"], "called with access-1", "{result}");

    // the access token refused (ended early at the server): refreshed
    // once, inside the service's containment, and the new tokens kept
    seen.lock().unwrap().access.clear();
    let listed = s.out_with(&env, &["mcp", "list", "--json"]).await;
    assert_eq!(statuses(&listed)[0]["status"], "connected", "{listed:#?}");
    let kept = std::fs::read_to_string(&store).unwrap();
    assert!(
        kept.contains("access-2") && kept.contains("refresh-2"),
        "the rotated tokens are kept: {kept}"
    );

    // every token revoked at the server: it needs authentication again,
    // in the init line too
    {
        let mut seen = seen.lock().unwrap();
        seen.access.clear();
        seen.refresh.clear();
    }
    let ran = s
        .out_with(
            &env,
            &["run", "--output-format", "stream-json", "--verbose", "hi"],
        )
        .await;
    assert_eq!(ran.code, 0, "{ran:#?}");
    let init: Value = serde_json::from_str(ran.stdout.lines().next().unwrap()).unwrap();
    assert_eq!(
        init["mcp_servers"],
        json!([{"name": "docs", "status": "needs-auth"}]),
        "{init}"
    );
    // and at a person's run, said so
    let ran = s.out_with(&env, &["run", "hi"]).await;
    assert!(
        ran.stderr
            .contains("MCP server `docs` needs you to sign in (`hc mcp login docs`)"),
        "{}",
        ran.stderr
    );

    // signed out: the tokens revoked where the server offers it, and gone
    let signed = sign_in(&s, &env, "docs").await;
    assert_eq!(signed.code, 0, "{signed:#?}");
    let out = s.out_with(&env, &["mcp", "logout", "docs"]).await;
    assert_eq!(out.code, 0, "{out:#?}");
    assert_eq!(
        std::fs::read_to_string(&store).unwrap(),
        "",
        "forgotten (emptied: the file stays the service's to rewrite)"
    );
    let seen = seen.lock().unwrap();
    assert!(
        seen.revoked.contains(&"access-3".to_owned()),
        "{:?}",
        seen.revoked
    );
    assert!(seen.refresh.is_empty(), "the refresh token revoked too");
}

#[tokio::test(flavor = "multi_thread")]
async fn sign_in_is_refused_for_servers_given_credentials_otherwise() {
    let s = Setup::new(json!({"turns": [reply(json!([text("unused")]), "end_turn")]})).await;
    s.file(
        ".mcp.json",
        &json!({"mcpServers": {
            "keyed": {"type": "http", "url": "http://127.0.0.1:9/mcp", "headers": {"Authorization": "Bearer x"}},
            "local": {"command": "true"},
        }})
        .to_string(),
    );
    let keyed = s.out(&["mcp", "login", "keyed"]).await;
    assert_eq!(keyed.code, 2, "{keyed:#?}");
    assert!(
        keyed.stderr.contains("given its credentials already"),
        "{keyed:#?}"
    );
    let local = s.out(&["mcp", "login", "local"]).await;
    assert_eq!(local.code, 2, "{local:#?}");
    assert!(local.stderr.contains("stdio server"), "{local:#?}");
    let none = s.out(&["mcp", "login", "nope"]).await;
    assert_eq!(none.code, 1, "{none:#?}");
}
