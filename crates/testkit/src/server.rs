//! [`FakeModel`]: the HTTP server, its recording, and fault injection.

use crate::render::{self, Names};
use crate::script::{Fault, Pace, Script, Turn, error_type_for};
use axum::Router;
use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::Response;
use axum::routing::post;
use axum::serve::ListenerExt;
use bytes::Bytes;
use serde::Deserialize;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// One request the fake received.
#[derive(Debug, Clone)]
pub struct RecordedRequest {
    /// Its arrival number (0 for the first request the fake ever got).
    pub seq: usize,
    /// The path, e.g. `/v1/messages`.
    pub path: String,
    /// Headers, names in lower case.
    pub headers: BTreeMap<String, String>,
    /// The body as JSON (`Null` if it was not JSON).
    pub body: Value,
    /// The body as received.
    pub raw_body: Bytes,
    /// When it arrived.
    pub received: Instant,
    /// From arrival to the last byte of the answer handed to the
    /// connection; `None` while in flight, or when the answer was cut.
    pub served_in: Option<Duration>,
    /// The script turn that answered (0-based), if one did.
    pub turn: Option<usize>,
}

impl RecordedRequest {
    /// A header's value.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .get(&name.to_ascii_lowercase())
            .map(String::as_str)
    }
}

struct Shared {
    script: Mutex<Script>,
    /// How many requests took a turn; which turns are taken this round.
    next_turn: Mutex<(usize, Vec<bool>)>,
    records: Mutex<Vec<RecordedRequest>>,
    arrivals: std::sync::atomic::AtomicUsize,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// A fake model API on 127.0.0.1: answers `POST /v1/messages`,
/// `POST /v1/messages/count_tokens` and `POST /v1/chat/completions` from a
/// [`Script`], and records every request.
///
/// Dropping it stops the server.
pub struct FakeModel {
    addr: SocketAddr,
    shared: Arc<Shared>,
    stop: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for FakeModel {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.debug_struct("FakeModel")
            .field("addr", &self.addr)
            .finish()
    }
}

impl FakeModel {
    /// Starts a fake on a free port of 127.0.0.1 (in the current Tokio
    /// runtime).
    ///
    /// # Errors
    /// When the port cannot be bound.
    pub async fn start(script: Script) -> std::io::Result<FakeModel> {
        FakeModel::start_on(0, script).await
    }

    /// Starts a fake on `port` of 127.0.0.1 (0 for any free port).
    ///
    /// # Errors
    /// When the port cannot be bound.
    pub async fn start_on(port: u16, script: Script) -> std::io::Result<FakeModel> {
        FakeModel::start_at(Ipv4Addr::LOCALHOST, port, script).await
    }

    /// Starts a fake on `port` of `ip` (0 for any free port): an address
    /// of this machine's other hosts reach ([`crate::Net::gateway`]).
    ///
    /// # Errors
    /// When the port cannot be bound.
    pub async fn start_at(ip: Ipv4Addr, port: u16, script: Script) -> std::io::Result<FakeModel> {
        let listener = tokio::net::TcpListener::bind((ip, port)).await?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared {
            script: Mutex::new(script),
            next_turn: Mutex::new((0, Vec::new())),
            records: Mutex::new(Vec::new()),
            arrivals: std::sync::atomic::AtomicUsize::new(0),
        });
        let app = Router::new()
            .route("/v1/messages", post(messages))
            .route("/v1/messages/count_tokens", post(count_tokens))
            .route("/v1/chat/completions", post(chat_completions))
            .route("/v1/models", axum::routing::get(list_models))
            .route("/v1/models/{id}", axum::routing::get(one_model))
            .fallback(not_found)
            .with_state(shared.clone());
        let (stop, stopped) = oneshot::channel::<()>();
        // Small writes go out at once, as from a real API server.
        let listener = listener.tap_io(|tcp| {
            let _ = tcp.set_nodelay(true);
        });
        let task = tokio::spawn(async move {
            let serve = axum::serve(listener, app).with_graceful_shutdown(async {
                let _ = stopped.await;
            });
            if let Err(e) = serve.await {
                tracing::warn!(error = %e, "the fake model server stopped");
            }
        });
        Ok(FakeModel {
            addr,
            shared,
            stop: Some(stop),
            task: Some(task),
        })
    }

    /// The address it listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The base URL for an Anthropic client: `http://127.0.0.1:PORT`.
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The base URL for an OpenAI-compatible client: `…/v1`.
    pub fn openai_base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// Every request so far, in order of arrival.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        lock(&self.shared.records).clone()
    }

    /// The requests to `path`, in order of arrival.
    pub fn requests_to(&self, path: &str) -> Vec<RecordedRequest> {
        self.requests()
            .into_iter()
            .filter(|r| r.path == path)
            .collect()
    }

    /// Forgets the requests recorded so far (a long benchmark's record
    /// would otherwise grow without end).
    pub fn clear_requests(&self) {
        lock(&self.shared.records).clear();
    }

    /// Appends a turn to the script.
    pub fn push_turn(&self, turn: Turn) {
        lock(&self.shared.script).turns.push(turn);
    }

    /// Stops the server and waits for it.
    pub async fn shutdown(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(task) = self.task.take() {
            task.abort();
            let _ = task.await;
        }
    }
}

impl Drop for FakeModel {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(task) = self.task.take() {
            task.abort();
        }
    }
}

/// The endpoint a request came to.
#[derive(Clone, Copy, PartialEq)]
enum Api {
    Anthropic,
    OpenAi,
}

impl Shared {
    fn record(&self, path: &str, headers: &HeaderMap, body: &Bytes) -> usize {
        // Arrival, before the fake's own work on the body (parsing a long
        // session's body takes milliseconds that are not the client's).
        let received = Instant::now();
        let headers = headers
            .iter()
            .map(|(k, v)| {
                (
                    k.as_str().to_owned(),
                    String::from_utf8_lossy(v.as_bytes()).into_owned(),
                )
            })
            .collect();
        let seq = self
            .arrivals
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let mut records = lock(&self.records);
        records.push(RecordedRequest {
            seq,
            path: path.to_owned(),
            headers,
            body: serde_json::from_slice(body).unwrap_or(Value::Null),
            raw_body: body.clone(),
            received,
            served_in: None,
            turn: None,
        });
        seq
    }

    fn served(&self, seq: usize, turn: Option<usize>, done: Option<Instant>) {
        let mut records = lock(&self.records);
        if let Some(r) = records.iter_mut().rev().find(|r| r.seq == seq) {
            if turn.is_some() {
                r.turn = turn;
            }
            r.served_in = done.map(|d| d.duration_since(r.received));
        }
    }

    /// The turn for `request`, its number and its pacing; or why there is
    /// none. Turns are taken in order, each once (all again, with `cycle`,
    /// once every one is taken); a turn with `when` is taken only by a
    /// request whose last message holds that text.
    fn next_turn(&self, request: &Value) -> Result<(usize, Turn, Pace), String> {
        let script = lock(&self.script);
        let mut state = lock(&self.next_turn);
        let (count, taken) = &mut *state;
        let n = script.turns.len();
        taken.resize(n, false);
        if script.cycle && n > 0 && taken.iter().all(|t| *t) {
            taken.iter_mut().for_each(|t| *t = false);
        }
        let last = request["messages"]
            .as_array()
            .and_then(|m| m.last())
            .map(|m| m.to_string())
            .unwrap_or_default();
        let found = script.turns.iter().enumerate().position(|(i, turn)| {
            !taken[i] && turn.when.as_ref().is_none_or(|w| last.contains(w.as_str()))
        });
        let Some(index) = found else {
            return Err(format!(
                "the fake model's script has no turn left for request {} ({n} turn(s)); add turns or set \"cycle\": true",
                *count + 1
            ));
        };
        taken[index] = true;
        *count += 1;
        let turn = &script.turns[index];
        Ok((index, turn.clone(), turn.pace.over(script.pace)))
    }

    fn check_key(&self, headers: &HeaderMap) -> Result<(), Box<Response>> {
        let Some(key) = lock(&self.script).api_key.clone() else {
            return Ok(());
        };
        let given = header(headers, "x-api-key").or_else(|| {
            header(headers, "authorization")
                .and_then(|a| a.strip_prefix("Bearer ").map(str::to_owned))
        });
        if given.as_deref() == Some(key.as_str()) {
            Ok(())
        } else {
            Err(Box::new(error_response(
                401,
                "authentication_error",
                "invalid x-api-key",
                &BTreeMap::new(),
            )))
        }
    }
}

fn header(headers: &HeaderMap, name: &str) -> Option<String> {
    headers.get(name)?.to_str().ok().map(str::to_owned)
}

async fn messages(State(shared): State<Arc<Shared>>, headers: HeaderMap, body: Bytes) -> Response {
    answer(shared, Api::Anthropic, "/v1/messages", headers, body).await
}

async fn chat_completions(
    State(shared): State<Arc<Shared>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    answer(shared, Api::OpenAi, "/v1/chat/completions", headers, body).await
}

async fn count_tokens(
    State(shared): State<Arc<Shared>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let record = shared.record("/v1/messages/count_tokens", &headers, &body);
    let response = match check_request(&shared, Api::Anthropic, &headers, &body, false) {
        Err(r) => *r,
        Ok(request) => json_response(
            200,
            &json!({"input_tokens": crate::estimate_tokens(&request)}),
        ),
    };
    shared.served(record, None, Some(Instant::now()));
    response
}

/// The models the fake serves, as the API lists them (newest first):
/// `GET /v1/models`.
async fn list_models(State(shared): State<Arc<Shared>>, headers: HeaderMap) -> Response {
    let record = shared.record("/v1/models", &headers, &Bytes::new());
    shared.served(record, None, Some(Instant::now()));
    if let Err(refused) = shared.check_key(&headers) {
        return *refused;
    }
    let extra = lock(&shared.script).models.clone();
    let mut data: Vec<Value> = crate::models::KNOWN.iter().map(model_entry).collect();
    data.extend(extra.iter().map(|id| {
        json!({"type": "model", "id": id, "display_name": id, "created_at": "2026-01-01T00:00:00Z"})
    }));
    let first = data.first().map(|m| m["id"].clone());
    let last = data.last().map(|m| m["id"].clone());
    json_response(
        200,
        &json!({"data": data, "has_more": false, "first_id": first, "last_id": last}),
    )
}

/// One model (by id, dated id or `-latest` name): `GET /v1/models/{id}`.
async fn one_model(
    State(shared): State<Arc<Shared>>,
    axum::extract::Path(id): axum::extract::Path<String>,
    headers: HeaderMap,
) -> Response {
    if let Err(refused) = shared.check_key(&headers) {
        return *refused;
    }
    let found = crate::models::KNOWN.iter().find(|k| {
        k.id == id || k.dated == Some(id.as_str()) || id.strip_suffix("-latest") == Some(k.id)
    });
    match found {
        Some(known) => json_response(200, &model_entry(known)),
        None => error_response(
            404,
            "not_found_error",
            &format!("model: {id}"),
            &BTreeMap::new(),
        ),
    }
}

/// A model as the API describes it.
fn model_entry(known: &crate::models::Known) -> Value {
    json!({"type": "model", "id": known.dated.unwrap_or(known.id),
        "display_name": known.display, "created_at": known.created_at})
}

async fn not_found() -> Response {
    error_response(
        404,
        "not_found_error",
        // (as the API: a wrong path is "Not Found", never about a model)
        "Not Found (this server answers POST /v1/messages, /v1/messages/count_tokens and /v1/chat/completions)",
        &BTreeMap::new(),
    )
}

/// Checks a request as the real API would; the parsed body, or the error.
fn check_request(
    shared: &Shared,
    api: Api,
    headers: &HeaderMap,
    body: &Bytes,
    needs_max_tokens: bool,
) -> Result<Value, Box<Response>> {
    let bad = |m: &str| {
        Box::new(error_response(
            400,
            "invalid_request_error",
            m,
            &BTreeMap::new(),
        ))
    };
    if api == Api::Anthropic && headers.get("anthropic-version").is_none() {
        return Err(bad("anthropic-version: header is required"));
    }
    shared.check_key(headers)?;
    let request: Value =
        serde_json::from_slice(body).map_err(|e| bad(&format!("the body is not JSON: {e}")))?;
    if !request["model"].is_string() {
        return Err(bad("model: Field required"));
    }
    if !request["messages"].is_array() {
        return Err(bad("messages: Field required"));
    }
    if needs_max_tokens && api == Api::Anthropic && !request["max_tokens"].is_u64() {
        return Err(bad("max_tokens: Field required"));
    }
    if needs_max_tokens && api == Api::Anthropic && request["max_tokens"].as_u64() == Some(0) {
        return Err(bad(
            "max_tokens: Input should be greater than or equal to 1",
        ));
    }
    check_messages(api, &request)?;
    if api == Api::Anthropic {
        check_deferred(headers, &request)?;
    }
    let model = request["model"].as_str().unwrap_or_default();
    let extra = lock(&shared.script).models.clone();
    let served = match api {
        Api::Anthropic => crate::models::serves(model, &extra),
        // (a local server serves what it has: any, unless the script says)
        Api::OpenAi => extra.is_empty() || extra.iter().any(|m| m == model),
    };
    if !served {
        let (kind, message) = match api {
            Api::Anthropic => ("not_found_error", format!("model: {model}")),
            Api::OpenAi => (
                "invalid_request_error",
                format!("The model `{model}` does not exist or you do not have access to it."),
            ),
        };
        return Err(Box::new(api_error_response(
            api,
            404,
            kind,
            &message,
            &BTreeMap::new(),
        )));
    }
    Ok(request)
}

/// What the fake reads of a request to judge it as the API does: each
/// part as sent (its kind judged here, as the API judges it).
#[derive(Deserialize, Default)]
#[serde(default)]
struct Sent {
    messages: Value,
    tools: Value,
}

/// A message of a request.
#[derive(Deserialize, Default)]
#[serde(default)]
struct SentMessage {
    role: Value,
    content: Value,
}

/// A content block, or a tool, of a request: what the checks read of it.
#[derive(Deserialize, Default)]
#[serde(default)]
struct SentPart {
    #[serde(rename = "type")]
    kind: Value,
    name: Value,
    content: Value,
    tool_name: Value,
    defer_loading: bool,
}

/// The items of `list` as `T` (none when it is no list; an item that does
/// not read as `T`: its default).
fn items<T: for<'de> Deserialize<'de> + Default>(list: &Value) -> Vec<T> {
    let list = list.as_array().map_or(&[][..], Vec::as_slice);
    list.iter()
        .map(|item| T::deserialize(item).unwrap_or_default())
        .collect()
}

/// The API's 400 for a request it refuses, saying why.
fn refused(message: String) -> Box<Response> {
    Box::new(error_response(
        400,
        "invalid_request_error",
        &message,
        &BTreeMap::new(),
    ))
}

/// What the real API refuses of a request's messages, surely: none at
/// all, a role that is neither `user` nor `assistant`, content that is
/// neither text nor a list of typed blocks.
fn check_messages(api: Api, request: &Value) -> Result<(), Box<Response>> {
    let sent = Sent::deserialize(request).unwrap_or_default();
    let messages: Vec<SentMessage> = items(&sent.messages);
    if messages.is_empty() {
        return Err(refused("messages: at least one message is required".into()));
    }
    // (OpenAI's also has `system`, `tool` and `developer` turns)
    let roles: &[&str] = match api {
        Api::Anthropic => &["user", "assistant"],
        Api::OpenAi => &["user", "assistant", "system", "tool", "developer"],
    };
    for (i, message) in messages.iter().enumerate() {
        if !roles.contains(&message.role.as_str().unwrap_or_default()) {
            return Err(refused(format!(
                "messages.{i}.role: Input should be 'user' or 'assistant'"
            )));
        }
        let content = &message.content;
        let blocks: Vec<SentPart> = items(content);
        let typed = content.is_array() && blocks.iter().all(|b| b.kind.is_string());
        if !(content.is_string() || typed || content.is_null()) {
            return Err(refused(format!(
                "messages.{i}.content: Input should be a valid string or a list of content blocks"
            )));
        }
    }
    Ok(())
}

/// What the real API refuses of deferred tools (tool search): a deferred
/// tool without the beta, no tool sent whole, a reference to a tool the
/// request does not defer, a reference beside other content.
fn check_deferred(headers: &HeaderMap, request: &Value) -> Result<(), Box<Response>> {
    const BETA: &str = "advanced-tool-use-2025-11-20";
    let sent = Sent::deserialize(request).unwrap_or_default();
    let tools: Vec<SentPart> = items(&sent.tools);
    let betas = headers
        .get_all("anthropic-beta")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|b| b.trim() == BETA);
    if let Some(i) = tools
        .iter()
        .position(|t| t.defer_loading)
        .filter(|_| !betas)
    {
        return Err(refused(format!(
            "tools.{i}.defer_loading: Extra inputs are not permitted"
        )));
    }
    if !tools.is_empty() && tools.iter().all(|t| t.defer_loading) {
        return Err(refused(
            "tools: at least one tool must not be deferred (defer_loading)".into(),
        ));
    }
    let messages: Vec<SentMessage> = items(&sent.messages);
    for (i, message) in messages.iter().enumerate() {
        for (j, block) in items::<SentPart>(&message.content).iter().enumerate() {
            let inner: Vec<SentPart> = items(&block.content);
            let references: Vec<&SentPart> = inner
                .iter()
                .filter(|b| b.kind == "tool_reference")
                .collect();
            for reference in &references {
                let name = reference.tool_name.as_str().unwrap_or_default();
                if !tools.iter().any(|t| t.name == name && t.defer_loading) {
                    return Err(refused(format!(
                        "messages.{i}.content.{j}: Tool reference '{name}' not found in available tools"
                    )));
                }
            }
            if !references.is_empty() && references.len() < inner.len() {
                return Err(refused(format!(
                    "messages.{i}.content.{j}.content: a tool result with tool_reference blocks may hold nothing else"
                )));
            }
        }
    }
    Ok(())
}

async fn answer(
    shared: Arc<Shared>,
    api: Api,
    path: &str,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let record = shared.record(path, &headers, &body);
    let request = match check_request(&shared, api, &headers, &body, true) {
        Ok(r) => r,
        Err(response) => {
            shared.served(record, None, Some(Instant::now()));
            return *response;
        }
    };
    let (index, turn, pace) = match shared.next_turn(&request) {
        Ok(t) => t,
        Err(message) => {
            shared.served(record, None, Some(Instant::now()));
            return error_response(400, "invalid_request_error", &message, &BTreeMap::new());
        }
    };
    if let Some(ms) = pace.first_byte_delay_ms.filter(|ms| *ms > 0) {
        tokio::time::sleep(Duration::from_millis(ms)).await;
    }
    let stream = request["stream"].as_bool().unwrap_or(false);
    let reply = Answer {
        shared: shared.clone(),
        record,
        turn: index,
        api,
        pace,
    };
    if let Some(e) = &turn.error {
        let error_type = e
            .error_type
            .clone()
            .unwrap_or_else(|| error_type_for(e.status).to_owned());
        reply.done(Some(Instant::now()));
        return api_error_response(api, e.status, &error_type, &e.message, &e.headers);
    }
    let model = request["model"].as_str().unwrap_or_default().to_owned();
    if let Some(sse) = &turn.sse {
        let pieces = split_events(sse);
        return reply.stream(pieces, turn.fault.as_ref());
    }
    let Some(scripted) = &turn.reply else {
        return error_response(
            500,
            "api_error",
            "the fake's turn has nothing to send",
            &BTreeMap::new(),
        );
    };
    let id = scripted
        .id
        .clone()
        .unwrap_or_else(|| format!("msg_fake_{}", index + 1));
    let names = Names {
        id: &id,
        model: scripted.model.as_deref().unwrap_or(&model),
    };
    let include_usage = request["stream_options"]["include_usage"]
        .as_bool()
        .unwrap_or(false);
    match (api, stream) {
        (Api::Anthropic, true) => reply.stream(
            render::anthropic_events(scripted, &names, &pace),
            turn.fault.as_ref(),
        ),
        (Api::OpenAi, true) => reply.stream(
            render::openai_chunks(scripted, &names, &pace, include_usage),
            turn.fault.as_ref(),
        ),
        (Api::Anthropic, false) => reply.whole(
            &render::anthropic_message(scripted, &names),
            turn.fault.as_ref(),
        ),
        (Api::OpenAi, false) => reply.whole(
            &render::openai_completion(scripted, &names),
            turn.fault.as_ref(),
        ),
    }
}

/// An `sse` turn's body, one piece per event (the blank line kept).
fn split_events(sse: &str) -> Vec<Bytes> {
    let mut pieces = Vec::new();
    let mut rest = sse;
    while let Some(at) = rest.find("\n\n") {
        pieces.push(Bytes::copy_from_slice(&rest.as_bytes()[..at + 2]));
        rest = &rest[at + 2..];
    }
    if !rest.is_empty() {
        pieces.push(Bytes::copy_from_slice(rest.as_bytes()));
    }
    pieces
}

/// A piece of a streamed body: bytes, a pause, or the cut.
enum Piece {
    Data(Bytes),
    Pause(Duration),
    Cut,
}

/// Runs of data re-split into pieces of `n` bytes (across events, lines
/// and characters); pauses and cuts stay where they were.
fn rechunk(pieces: Vec<Piece>, n: usize) -> Vec<Piece> {
    let mut out = Vec::new();
    let mut run: Vec<u8> = Vec::new();
    let flush = |run: &mut Vec<u8>, out: &mut Vec<Piece>| {
        out.extend(
            run.chunks(n)
                .map(|c| Piece::Data(Bytes::copy_from_slice(c))),
        );
        run.clear();
    };
    for piece in pieces {
        match piece {
            Piece::Data(b) => run.extend_from_slice(&b),
            other => {
                flush(&mut run, &mut out);
                out.push(other);
            }
        }
    }
    flush(&mut run, &mut out);
    out
}

/// Answers one request from a turn.
struct Answer {
    shared: Arc<Shared>,
    record: usize,
    turn: usize,
    api: Api,
    pace: Pace,
}

impl Answer {
    fn done(&self, at: Option<Instant>) {
        self.shared.served(self.record, Some(self.turn), at);
    }

    /// A whole JSON body; faults make it an error or cut it.
    fn whole(self, body: &Value, fault: Option<&Fault>) -> Response {
        match fault {
            Some(Fault::ErrorEvent {
                error_type,
                message,
                ..
            }) => {
                self.done(Some(Instant::now()));
                let status = status_for(error_type);
                api_error_response(self.api, status, error_type, message, &BTreeMap::new())
            }
            Some(Fault::Drop { .. }) => self.send(vec![Piece::Cut], "application/json"),
            Some(Fault::Stall { ms, .. }) => {
                let pause = Piece::Pause(Duration::from_millis(*ms));
                let data = Piece::Data(Bytes::from(body.to_string()));
                self.send(vec![pause, data], "application/json")
            }
            Some(Fault::Malformed { .. }) => {
                let text = body.to_string();
                let half = Bytes::copy_from_slice(&text.as_bytes()[..text.len() / 2]);
                self.send(vec![Piece::Data(half)], "application/json")
            }
            None => self.send(
                vec![Piece::Data(Bytes::from(body.to_string()))],
                "application/json",
            ),
        }
    }

    /// A streamed body of `events`, with the fault applied.
    fn stream(self, events: Vec<Bytes>, fault: Option<&Fault>) -> Response {
        let mut pieces: Vec<Piece> = events.into_iter().map(Piece::Data).collect();
        match fault {
            None => {}
            Some(Fault::Drop { after_events }) => {
                pieces.truncate(*after_events);
                pieces.push(Piece::Cut);
            }
            Some(Fault::ErrorEvent {
                after_events,
                error_type,
                message,
            }) => {
                pieces.truncate(*after_events);
                pieces.push(Piece::Data(match self.api {
                    Api::Anthropic => render::anthropic_error_event(error_type, message),
                    Api::OpenAi => render::openai_error_event(error_type, message),
                }));
            }
            Some(Fault::Malformed { after_events }) => {
                let bad = Bytes::from_static(b"event: content_block_delta\ndata: {\"type\": \"content_block_delta\", \"index\": 0, \"delta\": {\"type\": \"text_de\n\n");
                pieces.insert((*after_events).min(pieces.len()), Piece::Data(bad));
            }
            Some(Fault::Stall { after_events, ms }) => {
                let at = (*after_events).min(pieces.len());
                pieces.insert(at, Piece::Pause(Duration::from_millis(*ms)));
            }
        }
        if let Some(n) = self.pace.chunk_bytes.filter(|n| *n > 0) {
            pieces = rechunk(pieces, n);
        }
        self.send(pieces, "text/event-stream")
    }

    /// Sends `pieces`, one every `delay_ms`, and records when done.
    fn send(self, pieces: Vec<Piece>, content_type: &'static str) -> Response {
        let delay = Duration::from_millis(self.pace.delay_ms.unwrap_or(0));
        let state = (pieces.into_iter(), self, false);
        let body =
            futures_util::stream::unfold(state, move |(mut pieces, answer, started)| async move {
                loop {
                    let item = match pieces.next() {
                        None => {
                            answer.done(Some(Instant::now()));
                            return None;
                        }
                        Some(Piece::Pause(pause)) => {
                            tokio::time::sleep(pause).await;
                            continue;
                        }
                        Some(Piece::Data(bytes)) => {
                            if started && !delay.is_zero() {
                                tokio::time::sleep(delay).await;
                            }
                            Ok(bytes)
                        }
                        Some(Piece::Cut) => {
                            // Let the connection flush what was written, so the
                            // client sees exactly the events before the cut.
                            tokio::time::sleep(Duration::from_millis(20)).await;
                            answer.done(None);
                            Err(std::io::Error::other("fault: the connection is cut"))
                        }
                    };
                    return Some((item, (pieces, answer, true)));
                }
            });
        let mut response = Response::new(Body::from_stream(body));
        let h = response.headers_mut();
        h.insert("content-type", HeaderValue::from_static(content_type));
        h.insert("cache-control", HeaderValue::from_static("no-cache"));
        if let Ok(id) = HeaderValue::from_str(&format!("req_fake_{}", next_request_id())) {
            h.insert("request-id", id);
        }
        response
    }
}

/// A request id that differs between responses.
fn next_request_id() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(1);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

/// The status the API uses for an error type.
fn status_for(error_type: &str) -> u16 {
    match error_type {
        "invalid_request_error" => 400,
        "authentication_error" => 401,
        "permission_error" => 403,
        "not_found_error" => 404,
        "request_too_large" => 413,
        "rate_limit_error" => 429,
        "timeout_error" => 504,
        "overloaded_error" => 529,
        _ => 500,
    }
}

fn json_response(status: u16, body: &Value) -> Response {
    let mut response = Response::new(Body::from(body.to_string()));
    *response.status_mut() =
        StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let h = response.headers_mut();
    h.insert("content-type", HeaderValue::from_static("application/json"));
    if let Ok(id) = HeaderValue::from_str(&format!("req_fake_{}", next_request_id())) {
        h.insert("request-id", id);
    }
    response
}

/// An error in the Anthropic API's shape, with extra headers.
fn error_response(
    status: u16,
    error_type: &str,
    message: &str,
    headers: &BTreeMap<String, String>,
) -> Response {
    api_error_response(Api::Anthropic, status, error_type, message, headers)
}

/// An error in the shape of `api`, with extra headers.
fn api_error_response(
    api: Api,
    status: u16,
    error_type: &str,
    message: &str,
    headers: &BTreeMap<String, String>,
) -> Response {
    let body = match api {
        Api::Anthropic => {
            json!({"type": "error", "error": {"type": error_type, "message": message}})
        }
        Api::OpenAi => json!({"error": {"message": message, "type": error_type, "code": null}}),
    };
    let mut response = json_response(status, &body);
    for (k, v) in headers {
        if let (Ok(name), Ok(value)) = (
            axum::http::HeaderName::from_bytes(k.as_bytes()),
            HeaderValue::from_str(v),
        ) {
            response.headers_mut().insert(name, value);
        }
    }
    response
}
