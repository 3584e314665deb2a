//! The service: connect to the server, commit its tools as programs, say
//! `ready`, then carry out each run the engine hands over — a `tools/call`
//! with the run's input, its progress as the run's notices, its result as
//! the run's output — reconnecting when the server has gone.

use crate::client::{
    Connection, Handler, NOTES, Note, Progress, Refused, Tokens, connect, token_key,
};
use crate::config::{Handed, Server, Transport, redact, service_name};
use crate::elicit;
use crate::extras;
use crate::guard::{MALFORMED, MESSAGE_BYTES, TOO_LARGE};
use crate::output::{cut, output_of};
use crate::tools::{Tool, sync};
use protocol::program::{Output, Program, ProgramError};
use protocol::{ChunkDecl, Client, Event, NewPlacement, PlacementType, ScopeOpts};
use rmcp::model::{
    CallToolRequestParams, CancelledNotificationParam, ClientRequest, Request, ServerResult,
};
use rmcp::service::PeerRequestOptions;
use serde_json::{Value, json};
use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use tokio::sync::{Mutex, mpsc, oneshot};

/// What every call shares.
struct Shared {
    server: Server,
    /// Each secret of the server's configuration and its stand-in, longest
    /// first: taken out of everything the service says.
    redact: Vec<(String, String)>,
    client: Client,
    root: PathBuf,
    notes: mpsc::Sender<Note>,
    progress: Arc<Progress>,
    tokens: Tokens,
    /// The live connection (none: gone, made again by the next need).
    connection: Mutex<Option<Arc<Connection>>>,
    /// Program name → the tool's name on the server.
    names: std::sync::Mutex<HashMap<String, String>>,
    /// The server said its tools changed, and they are not listed again yet.
    changed: Arc<AtomicBool>,
    /// Held while the tools are listed again (one listing at a time).
    listing: Mutex<()>,
    /// This service's process.
    me: String,
}

/// Runs the service for the server in [`SERVER_ENV`](crate::SERVER_ENV).
pub async fn run() -> Result<(), ProgramError> {
    // HTTPS to a server goes through rustls with ring, as every other
    // client of `hc` does (no second crypto library).
    let _ = rustls::crypto::ring::default_provider().install_default();
    let mut program = Program::connect()?;
    let handed: Handed = std::env::var(crate::SERVER_ENV)
        .map_err(|_| format!("no {} (the host configures the server)", crate::SERVER_ENV))
        .and_then(|s| {
            serde_json::from_str(&s).map_err(|e| format!("bad {}: {e}", crate::SERVER_ENV))
        })
        .map_err(|why| ProgramError::Exit(2, why))?;
    let Some(mut events) = program.take_events() else {
        return Err(ProgramError::Exit(2, "no events".into()));
    };
    let (notes, mut notes_rx) = mpsc::channel(NOTES);
    let shared = Arc::new(Shared {
        redact: redactions(&handed),
        server: handed.server,
        client: program.client().clone(),
        root: program.root().to_owned(),
        notes,
        progress: Arc::default(),
        tokens: Tokens::default(),
        connection: Mutex::new(None),
        names: std::sync::Mutex::default(),
        changed: Arc::default(),
        listing: Mutex::new(()),
        me: program.id().to_owned(),
    });
    let startup = std::time::Duration::from_millis(shared.server.startup_timeout_ms);
    match tokio::time::timeout(startup, shared.connected()).await {
        Ok(Ok(_)) => {}
        Ok(Err(refused)) => {
            // a server that wants the person to sign in says so in its
            // exit code: hosts show it as `needs-auth`, not `failed`
            let code = match refused.needs_auth {
                true => protocol::process::EXIT_NEEDS_AUTH,
                false => 1,
            };
            return Err(ProgramError::Exit(code, shared.said(&refused.why)));
        }
        Err(_) => {
            let why = format!("the server did not start within {} ms", startup.as_millis());
            return Err(ProgramError::Exit(1, why));
        }
    }
    shared.client.ready().await?;
    let mut calls: HashMap<String, oneshot::Sender<()>> = HashMap::new();
    loop {
        tokio::select! {
            event = events.recv() => match event {
                Some(Event::Run { process, program }) => {
                    let (cancel, cancelled) = oneshot::channel();
                    calls.retain(|_, c| !c.is_closed());
                    calls.insert(process.clone(), cancel);
                    tokio::spawn(Arc::clone(&shared).call(process, program, cancelled));
                }
                Some(Event::Cancel { process }) => {
                    if let Some(cancel) = calls.remove(&process) {
                        let _ = cancel.send(());
                    }
                }
                Some(_) => {}
                None => return Ok(()),
            },
            () = shared.progress.wake.notified() => shared.pass_progress().await,
            Some(note) = notes_rx.recv() => shared.on_note(note),
        }
    }
}

/// The stand-ins of `handed`: those the host made, and the server's env
/// and header values besides (for a host that made none), longest first.
fn redactions(handed: &Handed) -> Vec<(String, String)> {
    let mut out = handed.redact.clone();
    // the tokens of a server signed in to, as they are when it starts
    if let Some(store) = &handed.server.oauth_store {
        for secret in crate::oauth::FileStore::new(store.clone()).secrets() {
            out.push((secret, "<oauth token>".into()));
        }
    }
    let (kind, values) = match &handed.server.transport {
        Transport::Stdio { env, .. } => ("env", env),
        Transport::Http { headers, .. } => ("header", headers),
    };
    for (key, value) in values {
        if value.chars().count() >= crate::config::SECRET_MIN_CHARS
            && !out.iter().any(|(secret, _)| secret == value)
        {
            out.push((value.clone(), format!("<{kind} {key}>")));
        }
    }
    out.sort_by_key(|(secret, _)| std::cmp::Reverse(secret.len()));
    out
}

impl Shared {
    /// The live connection, made (and the tools synced) when there is none.
    async fn connected(&self) -> Result<Arc<Connection>, Refused> {
        let mut slot = self.connection.lock().await;
        if let Some(live) = slot.as_ref().filter(|c| !c.is_transport_closed()) {
            return Ok(Arc::clone(live));
        }
        let handler = Handler::new(
            self.notes.clone(),
            Arc::clone(&self.progress),
            Arc::clone(&self.tokens),
            Arc::clone(&self.changed),
            self.server.interactive,
        );
        let connection = Arc::new(connect(&self.server, handler, &self.root).await?);
        self.sync_tools(&connection).await?;
        *slot = Some(Arc::clone(&connection));
        Ok(connection)
    }

    /// Lists the server's tools (every page) and commits what changed.
    async fn sync_tools(&self, connection: &Connection) -> Result<(), String> {
        let listed = connection
            .list_all_tools()
            .await
            .map_err(|e| format!("tools/list failed: {e}"))?;
        let mut tools: Vec<Tool> = Vec::new();
        let mut skipped: Vec<String> = Vec::new();
        for listed in listed.iter().filter_map(|t| serde_json::to_value(t).ok()) {
            match Tool::of(&self.server, &listed) {
                // two tools one program (listed twice, or names that agree
                // once made a program's): the first is the program's
                Ok(tool) => match tools.iter().find(|t| t.program == tool.program) {
                    Some(first) if first.name == tool.name => {
                        skipped.push(format!("the tool `{}` is listed twice", tool.name));
                    }
                    Some(first) => skipped.push(format!(
                        "the tool `{}` would be the program `{}`, which the tool `{}` is",
                        tool.name, tool.program, first.name
                    )),
                    None => tools.push(tool),
                },
                Err(why) => skipped.push(why.to_string()),
            }
        }
        if !skipped.is_empty() {
            self.say_skipped(&skipped).await;
        }
        // a server without prompts answers prompts/list with an error
        let prompts: Vec<Value> = connection
            .list_all_prompts()
            .await
            .unwrap_or_default()
            .iter()
            .filter_map(|p| serde_json::to_value(p).ok())
            .collect();
        tools.extend(extras::programs(&self.server, &prompts));
        {
            let mut names = self.names.lock().unwrap_or_else(|e| e.into_inner());
            names.clear();
            names.extend(tools.iter().map(|t| (t.program.clone(), t.name.clone())));
        }
        let live = self.live_tools().await.map_err(|e| e.to_string())?;
        if let Some(decl) = sync(&self.server, &tools, &live) {
            self.client
                .commit(decl)
                .await
                .map_err(|e| format!("cannot record the tools: {e}"))?;
        }
        Ok(())
    }

    /// `text` as the service says it: no secret in it, and cut to the
    /// size of a tool's text.
    fn said(&self, text: &str) -> String {
        cut(&redact(text, &self.redact))
    }

    /// Says `text` on the service's stderr (its log).
    fn say(&self, text: &str) {
        eprintln!("hermitcrab: {}", self.said(text));
    }

    /// Records on the service's own process the tools it could not offer
    /// (whoever starts it says so), and logs them.
    async fn say_skipped(&self, skipped: &[String]) {
        self.say(&format!("skipped: {}", skipped.join("; ")));
        let text = format!("skipped {} tool(s): {}", skipped.len(), skipped.join("; "));
        let chunk = ChunkDecl::generated()
            .body(Output::ok(text, json!({"skipped_tools": skipped})).body())
            .on(NewPlacement::instance(self.client_process()))
            .on(NewPlacement::instance("engine/output"));
        if let Err(e) = self
            .client
            .commit(protocol::Declaration::of(vec![chunk]))
            .await
        {
            self.say(&format!("cannot record the skipped tools: {e}"));
        }
    }

    /// This service's own process.
    fn client_process(&self) -> &str {
        &self.me
    }

    /// The bodies of this server's tool programs on `engine/program`.
    async fn live_tools(&self) -> Result<BTreeMap<String, Value>, protocol::ClientError> {
        let opts = ScopeOpts {
            kind: substrate::TypeFilter::Instance,
            limit: Some(usize::MAX),
            ..ScopeOpts::default()
        };
        let programs = self.client.scope(&["engine/program"], opts).await?;
        let mine = service_name(&self.server.name);
        Ok(programs
            .chunks
            .iter()
            .map(|c| (c.name.clone().unwrap_or_default(), c.body_value()))
            .filter(|(_, body)| body["served_by"] == json!(mine))
            .collect())
    }

    /// Passes on the newest progress of each call.
    async fn pass_progress(&self) {
        for (process, param) in self.progress.take() {
            let data = json!({"kind": "progress", "progress": param.progress,
                              "total": param.total, "message": param.message});
            let _ = self.client.for_run(&process).notify(data).await;
        }
    }

    /// Acts on `note`, never waiting for the server: the service goes on
    /// taking runs and cancels meanwhile.
    fn on_note(self: &Arc<Self>, note: Note) {
        match note {
            Note::ToolsChanged => {
                let me = Arc::clone(self);
                tokio::spawn(async move { me.relist().await });
            }
            Note::Elicit {
                process,
                request,
                reply,
            } => {
                let me = Arc::clone(self);
                tokio::spawn(async move {
                    let _ = reply.send(me.ask(&process, &request).await);
                });
            }
        }
    }

    /// Asks the person the server's question on run `process`, and waits
    /// for the answer the host commits there: the server's reply (cancel
    /// when the run ends first).
    async fn ask(&self, process: &str, request: &Value) -> Value {
        let run = self.client.for_run(process);
        let chunk = ChunkDecl::generated()
            .body(json!({"text": elicit::question(request), "tool_use_id": "", "process": process}))
            .on(NewPlacement::instance(process))
            .on(NewPlacement::instance("user-question"));
        let asked = match run.commit(protocol::Declaration::of(vec![chunk])).await {
            Ok(commit) => commit.created.first().cloned(),
            Err(e) => {
                self.say(&format!("cannot ask the person: {e}"));
                None
            }
        };
        let Some(asked) = asked else {
            return json!({"action": "decline"});
        };
        loop {
            let Ok(read) = run.scope(&[process], ScopeOpts::default()).await else {
                return json!({"action": "cancel"}); // the run is over
            };
            let answer = read.chunks.iter().find(|c| {
                c.is_on("user-answer", PlacementType::Instance)
                    && c.body_value()["request"] == json!(asked)
            });
            if let Some(answer) = answer {
                let text = answer.body_value()["text"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned();
                return elicit::reply(request, &text);
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
    }

    /// Lists the tools again when the server said they changed (once per
    /// notice, whoever comes first: the notice, or a call that it came
    /// before), one listing at a time — each, and the wait for the one
    /// under way, within the server's startup limit (the time it has to
    /// list its tools): a server that says its tools changed and then
    /// does not list them holds up no answer for longer.
    async fn relist(&self) {
        let limit = std::time::Duration::from_millis(self.server.startup_timeout_ms);
        let listed = tokio::time::timeout(limit, async {
            let _one = self.listing.lock().await;
            if !self.changed.swap(false, Ordering::SeqCst) {
                return Ok(());
            }
            let live = self.connection.lock().await.clone();
            match live {
                Some(connection) => self.sync_tools(&connection).await,
                None => Ok(()),
            }
        })
        .await;
        match listed {
            Ok(Ok(())) => {}
            Ok(Err(why)) => self.say(&why),
            Err(_) => self.say(&format!(
                "the server said its tools changed, and did not list them within {} ms; \
                 they stay as they were",
                limit.as_millis()
            )),
        }
    }

    /// Carries out run `process` of `program`: its output, then its end.
    async fn call(
        self: Arc<Self>,
        process: String,
        program: String,
        cancelled: oneshot::Receiver<()>,
    ) {
        let run = self.client.for_run(&process);
        let outcome = tokio::select! {
            outcome = self.call_tool(&process, &program) => outcome,
            _ = cancelled => return, // the run has ended: nothing more is said for it
        };
        // A tool that changed the server's tools: they are recorded before
        // its answer, so whoever reads the answer finds them.
        self.relist().await;
        let (output, error) = match outcome {
            Ok(output) => (output, None),
            Err(why) => {
                let why = self.said(&why);
                (Output::error(why.clone()), Some(why))
            }
        };
        let output_chunk = |body: Value| {
            let chunk = ChunkDecl::generated()
                .body(body)
                .on(NewPlacement::instance(&process))
                .on(NewPlacement::instance("engine/output"));
            protocol::Declaration::of(vec![chunk])
        };
        // The output is in before the end; one the engine refuses is
        // replaced by an error saying why, never an empty completion.
        let error = match run.commit(output_chunk(recordable(output))).await {
            Ok(_) => error,
            Err(e) => {
                let why = self.said(&format!("the tool's answer could not be recorded: {e}"));
                self.say(&why);
                let _ = run
                    .commit(output_chunk(Output::error(why.clone()).body()))
                    .await;
                Some(why)
            }
        };
        let _ = run.finish(error).await;
    }

    /// The run's request to the server: a resources or prompt request for
    /// the hidden programs, else `tools/call`.
    async fn call_tool(&self, process: &str, program: &str) -> Result<Output, String> {
        let server = &self.server.name;
        if program == extras::resources_program(server) || program == extras::prompt_program(server)
        {
            let input = self.input(process, program).await?;
            let connection = self.connected().await.map_err(|r| r.why)?;
            return self.extra(&connection, program, &input).await;
        }
        let name = self
            .names
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(program)
            .cloned()
            .ok_or_else(|| format!("the server no longer has the tool `{program}`"))?;
        let arguments = self.input(process, program).await?;
        let connection = self.connected().await.map_err(|r| r.why)?;
        let mut params = CallToolRequestParams::new(name);
        params.arguments = arguments.as_object().cloned();
        let request = ClientRequest::CallToolRequest(Request::new(params));
        let handle = connection
            .send_cancellable_request(request, PeerRequestOptions::no_options())
            .await
            .map_err(|e| self.lost(&e))?;
        let key = token_key(&handle.progress_token);
        self.tokens
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(key.clone(), process.to_owned());
        let guard = CancelOnDrop {
            peer: handle.peer.clone(),
            id: Some(handle.id.clone()),
            tokens: Arc::clone(&self.tokens),
            key,
        };
        let answer = handle.await_response().await;
        guard.disarm();
        match answer.map_err(|e| self.lost(&e))? {
            ServerResult::CallToolResult(result) => {
                let value = serde_json::to_value(&result).map_err(|e| e.to_string())?;
                Ok(output_of(&value))
            }
            other => Err(format!(
                "the server answered tools/call with something else: {}",
                serde_json::to_string(&other).unwrap_or_default()
            )),
        }
    }

    /// A resources or prompt request.
    async fn extra(
        &self,
        connection: &Connection,
        program: &str,
        input: &Value,
    ) -> Result<Output, String> {
        use rmcp::model::{GetPromptRequestParams, ReadResourceRequestParams};
        if program == extras::prompt_program(&self.server.name) {
            let mut params =
                GetPromptRequestParams::new(input["name"].as_str().unwrap_or_default());
            params.arguments = input["arguments"].as_object().cloned();
            let got = connection
                .get_prompt(params)
                .await
                .map_err(|e| self.lost(&e))?;
            return Ok(extras::got_prompt(
                &serde_json::to_value(&got).unwrap_or_default(),
            ));
        }
        match (input["op"].as_str(), input["uri"].as_str()) {
            (Some("read"), Some(uri)) => {
                let read = connection
                    .read_resource(ReadResourceRequestParams::new(uri))
                    .await
                    .map_err(|e| self.lost(&e))?;
                Ok(extras::read_resource(
                    &serde_json::to_value(&read).unwrap_or_default(),
                ))
            }
            (Some("read"), None) => Ok(Output::error("say which resource: `uri`")),
            _ => {
                let listed = connection
                    .list_all_resources()
                    .await
                    .map_err(|e| self.lost(&e))?;
                let listed: Vec<Value> = listed
                    .iter()
                    .filter_map(|r| serde_json::to_value(r).ok())
                    .collect();
                Ok(extras::listed_resources(&self.server.name, &listed))
            }
        }
    }

    /// What a failed request says.
    fn lost(&self, error: &rmcp::ServiceError) -> String {
        let http = matches!(self.server.transport, Transport::Http { .. });
        lost(&self.server.name, http, error)
    }

    /// The run's input object.
    async fn input(&self, process: &str, program: &str) -> Result<Value, String> {
        let read = self
            .client
            .for_run(process)
            .scope(&[process], ScopeOpts::default())
            .await
            .map_err(|e| format!("cannot read the run's input: {e}"))?;
        let input = format!("input/{program}");
        Ok(read
            .chunks
            .iter()
            .find(|c| c.is_on(&input, PlacementType::Instance))
            .map(|c| c.body_value())
            .unwrap_or_else(|| json!({})))
    }
}

/// `output`'s body, or, when it is more than a chunk may hold, an error
/// saying so.
fn recordable(output: Output) -> Value {
    let body = output.body();
    let size = serde_json::to_vec(&body).map_or(usize::MAX, |b| b.len());
    // the substrate's limit for a body (`MAX_BODY_BYTES`, 8 MiB), less
    // room for the rest of the chunk
    let limit = 8 * 1024 * 1024 - 64 * 1024;
    if size <= limit {
        return body;
    }
    Output::error(format!(
        "the tool's answer is {size} bytes once recorded, over the {limit} a result may be: \
         ask for less"
    ))
    .body()
}

/// What a failed request to server `name` says (`http`: over streamable
/// HTTP).
fn lost(name: &str, http: bool, error: &rmcp::ServiceError) -> String {
    use rmcp::ServiceError;
    let log = format!(".hermitcrab/logs/mcp-{name}.log");
    match error {
        ServiceError::TransportSend(e) if too_large(e) => format!(
            "the MCP server `{name}` answered with more than {} MiB, the most hermitcrab takes in \
             one message, so the answer was refused: ask for less",
            MESSAGE_BYTES >> 20
        ),
        ServiceError::TransportClosed if http => format!(
            "the MCP server `{name}` ended its answer before it was whole: the connection \
             dropped, or it answered with more than {} MiB, the most hermitcrab takes in one \
             message; the next call connects again",
            MESSAGE_BYTES >> 20
        ),
        ServiceError::TransportClosed | ServiceError::TransportSend(_) => format!(
            "the MCP server `{name}` closed the connection during the call (it may have \
             crashed; its log is {log}); the next call starts it again"
        ),
        ServiceError::McpError(e)
            if e.data
                .as_ref()
                .is_some_and(|d| d["hermitcrab"] == TOO_LARGE) =>
        {
            format!(
                "the MCP server `{name}` answered with too much: {}; ask for less",
                e.message
            )
        }
        ServiceError::McpError(e)
            if e.data
                .as_ref()
                .is_some_and(|d| d["hermitcrab"] == MALFORMED) =>
        {
            format!(
                "the MCP server `{name}` answered the call with {}",
                e.message
            )
        }
        ServiceError::McpError(e) => {
            format!("the MCP server `{name}` refused the call: {}", e.message)
        }
        other => format!("the call to the MCP server `{name}` failed: {other}"),
    }
}

/// Whether a transport error is an answer over the size limit.
fn too_large(error: &rmcp::transport::DynamicTransportError) -> bool {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(error.error.as_ref());
    while let Some(e) = source {
        if e.to_string().contains("exceeded the maximum size") {
            return true;
        }
        source = e.source();
    }
    false
}

/// Tells the server a call was abandoned (the run cancelled, or timed out)
/// when the call's future is dropped before its answer.
struct CancelOnDrop {
    peer: rmcp::service::Peer<rmcp::service::RoleClient>,
    id: Option<rmcp::model::RequestId>,
    /// The call's progress token, forgotten either way.
    tokens: Tokens,
    key: String,
}

impl CancelOnDrop {
    fn disarm(mut self) {
        self.id = None;
    }
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        self.tokens
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&self.key);
        if let Some(id) = self.id.take() {
            let peer = self.peer.clone();
            tokio::spawn(async move {
                let reason = Some("cancelled by hermitcrab".into());
                let param = CancelledNotificationParam::new(Some(id), reason);
                let _ = peer.notify_cancelled(param).await;
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::ServiceError;
    use rmcp::transport::DynamicTransportError;
    use rmcp::transport::streamable_http_client::StreamableHttpError;

    #[test]
    fn an_answer_too_large_is_said_plainly_not_as_a_crash() {
        let refused = StreamableHttpError::<std::io::Error>::ResponseBodyTooLarge {
            max_size: MESSAGE_BYTES,
        };
        let send = ServiceError::TransportSend(DynamicTransportError::from_parts(
            "http",
            std::any::TypeId::of::<()>(),
            Box::new(refused),
        ));
        let said = lost("web", true, &send);
        assert!(said.contains("answered with more than 32 MiB"), "{said}");
        assert!(!said.contains("crashed"), "{said}");
        let closed = lost("web", true, &ServiceError::TransportClosed);
        assert!(closed.contains("more than 32 MiB"), "{closed}");
        let crashed = lost("py", false, &ServiceError::TransportClosed);
        assert!(crashed.contains("closed the connection"), "{crashed}");
        let guarded = rmcp::ErrorData::internal_error(
            "its answer is over 33554432 bytes",
            Some(json!({"hermitcrab": TOO_LARGE})),
        );
        let said = lost("py", false, &ServiceError::McpError(guarded));
        assert!(
            said.starts_with("the MCP server `py` answered with too much: its answer is over"),
            "{said}"
        );
    }

    #[test]
    fn an_output_too_large_to_record_becomes_an_error_saying_so() {
        let small = recordable(Output::ok("fine", Value::Null));
        assert_eq!(small["text"], "fine");
        let huge = recordable(Output::ok("x".repeat(9 * 1024 * 1024), Value::Null));
        assert_eq!(huge["is_error"], true);
        assert!(
            huge["text"]
                .as_str()
                .unwrap()
                .contains("bytes once recorded")
        );
    }
}
