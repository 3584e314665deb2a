//! One run of the agent: what it reads when it starts (its process, its
//! session, its configuration, the tools, the pinned context), the context
//! event it writes, and how it ends (its totals and `stop_reason` on its
//! own process, an exit code).

use crate::catalog::{self, ProgramTool};
use crate::config::{AgentConfig, ApiKind};
use crate::context::{self, ContextBody};
use crate::events::Inbox;
use crate::permissions::Permissions;
use crate::request::{Conversation, Prefix, Sent};
use crate::tally::Tally;
use protocol::program::{Program, ProgramError};
use protocol::{ChunkDecl, Client, Declaration, NewPlacement, PlacementType, ScopeOpts};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::path::PathBuf;
use substrate::{ChunkItem, PlacementDecl};

/// Why a run ended.
#[derive(Clone, Debug, PartialEq)]
pub enum Stop {
    /// The model finished.
    EndTurn,
    /// `max_turns` model calls were made.
    MaxTurns(u32),
    /// `max_budget_usd` was spent.
    MaxBudget(f64),
    /// A host interrupted it.
    Interrupted,
    /// The conversation no longer fits the context window.
    PromptTooLong(String),
    /// Something failed; the message says what to do.
    Error(String),
}

impl Stop {
    /// `stop_reason` on the process body.
    pub fn reason(&self) -> &'static str {
        match self {
            Stop::EndTurn => "end_turn",
            Stop::MaxTurns(_) => "max_turns",
            Stop::MaxBudget(_) => "max_budget",
            Stop::Interrupted => "interrupted",
            Stop::PromptTooLong(_) => "prompt_too_long",
            Stop::Error(_) => "error",
        }
    }

    /// The process's exit code: 0 done, 1 an error, 3 a gate, 130 interrupted.
    pub fn exit_code(&self) -> i32 {
        match self {
            Stop::EndTurn => 0,
            Stop::MaxTurns(_) | Stop::MaxBudget(_) => 3,
            Stop::Interrupted => 130,
            Stop::PromptTooLong(_) | Stop::Error(_) => 1,
        }
    }

    /// What a person is told.
    pub fn message(&self) -> Option<String> {
        match self {
            Stop::EndTurn => None,
            Stop::MaxTurns(n) => Some(format!(
                "stopped after {n} model calls (max_turns); raise --max-turns to let it go on"
            )),
            Stop::MaxBudget(usd) => Some(format!(
                "stopped at the budget of ${usd:.2} (max_budget_usd); raise --max-budget-usd to let it go on"
            )),
            Stop::Interrupted => Some("interrupted".into()),
            Stop::PromptTooLong(m) | Stop::Error(m) => Some(m.clone()),
        }
    }
}

/// What the agent keeps per session from earlier tool results: the hash
/// of the last read of each path (passed as `expect_sha256`), and where the
/// last shell command ended (passed as `cwd`).
#[derive(Clone, Debug, Default)]
pub struct Derived {
    /// Absolute path → SHA-256 of its last read (or write, or edit).
    pub hashes: HashMap<PathBuf, String>,
    /// Where the last shell command ended.
    pub cwd: Option<String>,
}

impl Derived {
    /// Learns from one tool result.
    pub fn observe(&mut self, root: &std::path::Path, program: &str, data: &Value, is_error: bool) {
        if is_error {
            return;
        }
        match program {
            "read" | "write" | "edit" => {
                if let (Some(path), Some(hash)) = (data["path"].as_str(), data["sha256"].as_str()) {
                    self.hashes
                        .insert(crate::permissions::absolute(root, path), hash.to_owned());
                }
            }
            "shell" => {
                if let Some(cwd) = data["cwd"].as_str() {
                    self.cwd = Some(cwd.to_owned());
                }
            }
            _ => {}
        }
    }
}

/// A run in progress.
pub struct Run {
    pub(crate) client: Client,
    pub(crate) me: String,
    pub(crate) session: String,
    pub(crate) root: PathBuf,
    pub(crate) config: AgentConfig,
    pub(crate) inbox: Inbox,
    pub(crate) provider: Result<std::sync::Arc<model::Provider>, String>,
    /// The cost of the last call.
    pub(crate) last_cost: f64,
    /// The model calls made when this run last compacted.
    pub(crate) compacted_at: Option<u32>,
    pub(crate) tools: Vec<ProgramTool>,
    pub(crate) prefix: Prefix,
    pub(crate) conversation: Conversation,
    /// The request so far: the prefix and every closed message.
    pub(crate) request: model::MessagesRequest,
    pub(crate) derived: Derived,
    pub(crate) permissions: Permissions,
    pub(crate) tally: Tally,
    /// The latest commit the agent made or read: requests are built from
    /// the session as of it.
    pub(crate) as_of: u64,
    /// The latest context event's body.
    pub(crate) context: ContextBody,
    /// The scopes it pins, in order.
    pub(crate) pins: Vec<String>,
    /// The text of the session's last prompt (kept verbatim by a compaction).
    pub(crate) prompt: Option<String>,
    /// The text of the run's last answer.
    pub(crate) last_answer: String,
    /// A commit sent and not yet answered.
    pub(crate) in_flight:
        Option<tokio::task::JoinHandle<Result<substrate::Commit, protocol::ClientError>>>,
}

impl Run {
    /// Reads everything a run starts from and writes its context event.
    pub async fn start(program: &mut Program) -> Result<Run, ProgramError> {
        let client = program.client().clone();
        let me = program.id().to_owned();
        let root = program.root().to_path_buf();
        let process = client.scope(&[me.as_str()], ScopeOpts::default()).await?;
        let arg = |ty: &str| {
            process
                .chunks
                .iter()
                .find(|c| {
                    c.is_on(ty, PlacementType::Instance) && c.is_on(&me, PlacementType::Instance)
                })
                .cloned()
        };
        let config = match arg("agent-config") {
            Some(item) => AgentConfig::parse(&item.body_value()).map_err(ProgramError::Other)?,
            None => return Err(ProgramError::Other(
                "no agent-config argument: run the agent through `hc run`, which resolves its configuration".into(),
            )),
        };
        let events = program
            .take_events()
            .ok_or_else(|| ProgramError::Other("the engine's events were taken".into()))?;
        // Independent reads go out together: the session (then the inbox on
        // it), the programs, the pins — one round trip's wait, not four.
        let context_arg = arg("context");
        let (found, catalog, pins) = tokio::join!(
            async {
                let (session, history, as_of) =
                    find_session(&client, &me, &process, config.depth > 1).await?;
                let inbox = Inbox::start(&client, events, &session, &me).await?;
                Ok::<_, ProgramError>((session, history, as_of, inbox))
            },
            catalog::program_tools(&client, None, None),
            async {
                match &context_arg {
                    Some(ctx) => catalog::related_ids(&client, &ctx.id)
                        .await
                        .map_err(ProgramError::from),
                    None => Ok(Vec::new()),
                }
            },
        );
        let (session, history, as_of, inbox) = found?;
        let (read_at, tools) = catalog?;
        let pins = pins?;
        let provider = connect(&config, &client);
        let context = ContextBody {
            as_of: read_at,
            system: context::BASE_INSTRUCTIONS.to_owned(),
            date: context::today(),
            cwd: root.to_string_lossy().into_owned(),
            platform: std::env::consts::OS.to_owned(),
            model: config.model.clone(),
            max_tokens: crate::tally::max_tokens(&config),
            instructions: context::read_instructions(
                &root,
                config.user_config_dir.as_deref().map(std::path::Path::new),
            ),
            tools: tools.iter().map(|t| t.def.name.clone()).collect(),
            own_tools: catalog::own_tools(),
            process: me.clone(),
        };
        let (commit, pinned) = write_context(&client, &session, &context, &pins).await?;
        let defs: Vec<_> = tools.iter().map(|t| t.def.clone()).collect();
        let prefix = Prefix::new(&config, &context, &pinned, &defs);
        let conversation = Conversation::since_compaction(&history);
        let mut derived = Derived::default();
        for item in &history {
            if item.is_on("tool-result", PlacementType::Instance) {
                let body = item.body_value();
                let program = body["program"].as_str().unwrap_or_default();
                let is_error = body["is_error"].as_bool().unwrap_or(false);
                derived.observe(&root, program, &body["data"], is_error);
            }
        }
        let mut permissions = Permissions::new(
            config.permission_mode,
            &config.allow,
            &config.deny,
            &config.ask,
        )
        .map_err(ProgramError::Other)?;
        for rule in allowed_always(&history) {
            permissions.allow_always(&rule);
        }
        let mut request = prefix.request();
        request.messages = conversation.closed().to_vec();
        Ok(Run {
            client,
            me,
            session,
            root,
            tally: Tally::new(&config),
            config,
            inbox,
            provider: provider.map(std::sync::Arc::new),
            last_cost: 0.0,
            compacted_at: None,
            tools,
            prefix,
            conversation,
            request,
            derived,
            permissions,
            as_of: as_of.max(commit.id),
            context,
            pins,
            in_flight: None,
            last_answer: String::new(),
            prompt: history
                .iter()
                .rev()
                .find(|c| c.is_on("prompt", PlacementType::Instance))
                .and_then(|c| c.body_value()["text"].as_str().map(str::to_owned)),
        })
    }

    /// Adds scopes to the knowledge layer: a new context event pinning them
    /// after the others, the programs and pins read anew as of one commit,
    /// and the request's prefix rebuilt from it.
    pub(crate) async fn pin(&mut self, ids: &[String]) -> Result<(), protocol::ClientError> {
        let mut pins = self.pins.clone();
        for id in ids {
            if !pins.contains(id) {
                pins.push(id.clone());
            }
        }
        if pins == self.pins {
            return Ok(());
        }
        let names = self.context.tools.clone();
        let (at, tools) = catalog::program_tools(&self.client, None, Some(&names)).await?;
        let mut context = self.context.clone();
        context.as_of = at;
        let (commit, pinned) = write_context(&self.client, &self.session, &context, &pins).await?;
        self.as_of = self.as_of.max(commit.id);
        let defs: Vec<_> = tools.iter().map(|t| t.def.clone()).collect();
        self.prefix = Prefix::new(&self.config, &context, &pinned, &defs);
        let fresh = self.prefix.request();
        self.request.system = fresh.system;
        self.request.tools = fresh.tools;
        self.tools = tools;
        self.context = context;
        self.pins = pins;
        Ok(())
    }

    /// The session's last prompt.
    pub(crate) fn last_prompt(&self) -> Option<&str> {
        self.prompt.as_deref()
    }

    /// Maps a chunk the agent committed into the conversation, keeping the
    /// request's closed messages in step.
    pub(crate) fn remember(&mut self, kind: Sent, body: &Value) {
        self.conversation.push_body(kind, body);
        let closed = self.conversation.closed();
        let have = self.request.messages.len();
        if closed.len() > have {
            self.request.messages.extend(closed[have..].iter().cloned());
        }
    }

    /// Commits on the session: each chunk is placed instance on it and on
    /// its type. Answers the commit. A commit sent earlier and not yet
    /// answered is settled first, so the session keeps their order.
    pub(crate) async fn commit_on_session(
        &mut self,
        chunks: Vec<(&str, Value)>,
        process_patch: Option<Value>,
    ) -> Result<substrate::Commit, protocol::ClientError> {
        self.settle().await;
        let commit = self.session_commit(chunks, process_patch).await?;
        self.as_of = self.as_of.max(commit.id);
        Ok(commit)
    }

    /// The same, sent now and answered later: the run goes on (a tool
    /// runs, the next model call is made) while the engine commits.
    /// [`settle`](Self::settle) collects it.
    /// One still in flight is waited for by the new one before it is
    /// sent, so the session keeps their order and none goes unwatched.
    pub(crate) fn commit_in_background(&mut self, chunks: Vec<(&str, Value)>) {
        let earlier = self.in_flight.take();
        let commit = self.session_commit(chunks, None);
        let sending = tokio::spawn(async move {
            if let Some(earlier) = earlier {
                report_lost(earlier.await);
            }
            commit.await
        });
        self.in_flight = Some(sending);
    }

    /// Waits for a commit sent in the background, if any.
    pub(crate) async fn settle(&mut self) {
        let Some(sending) = self.in_flight.take() else {
            return;
        };
        if let Some(commit) = report_lost(sending.await) {
            self.as_of = self.as_of.max(commit.id);
        }
    }

    /// The commit of `chunks` on the session (and a patch of the process).
    fn session_commit(
        &self,
        chunks: Vec<(&str, Value)>,
        process_patch: Option<Value>,
    ) -> impl std::future::Future<Output = Result<substrate::Commit, protocol::ClientError>>
    + Send
    + 'static {
        let mut decls: Vec<ChunkDecl> = chunks
            .into_iter()
            .map(|(ty, body)| {
                ChunkDecl::generated()
                    .body(body)
                    .on(NewPlacement::instance(&self.session))
                    .on(NewPlacement::instance(ty))
            })
            .collect();
        if let Some(patch) = process_patch {
            decls.push(ChunkDecl::with_id(&self.me).merge_body(patch));
        }
        let client = self.client.clone();
        async move { client.commit(Declaration::of(decls)).await }
    }

    /// Writes how the run ended on its process, and answers the exit.
    pub async fn finish(mut self, stop: Stop) -> Result<(), ProgramError> {
        self.settle().await;
        let mut patch = self.tally.body(&self.config);
        patch["stop_reason"] = json!(stop.reason());
        if let Some(message) = stop.message() {
            patch["stop_message"] = json!(message);
        }
        // Its answer, as any program's: what a parent agent reads as the
        // sub-agent's result, and what a host shows.
        let text = match (&stop, stop.message()) {
            (Stop::EndTurn, _) | (_, None) => self.last_answer.clone(),
            (_, Some(message)) if self.last_answer.is_empty() => message,
            (_, Some(message)) => format!("{}\n\n[{message}]", self.last_answer),
        };
        let output = protocol::program::Output {
            text,
            data: json!({
                "stop_reason": stop.reason(), "usage": patch["usage"], "cost_usd": patch["cost_usd"],
                "turns": patch["turns"], "model": patch["model"],
            }),
            is_error: stop != Stop::EndTurn,
        };
        let done = self
            .client
            .commit(Declaration::of(vec![
                ChunkDecl::with_id(&self.me).merge_body(patch),
                ChunkDecl::generated()
                    .body(output.body())
                    .on(NewPlacement::instance(&self.me))
                    .on(NewPlacement::instance("engine/output")),
            ]))
            .await;
        if let Err(e) = done {
            eprintln!("agent: cannot record how the run ended: {e}");
        }
        match stop.exit_code() {
            0 => Ok(()),
            code => Err(ProgramError::Exit(code, stop.message().unwrap_or_default())),
        }
    }
}

/// The rules a person answered "always" with earlier in the session:
/// "always" holds for the session, not only the run that asked.
fn allowed_always(history: &[ChunkItem]) -> Vec<String> {
    let asked: HashMap<&str, Value> = history
        .iter()
        .filter(|c| c.is_on("permission-request", PlacementType::Instance))
        .map(|c| (c.id.as_str(), c.body_value()))
        .collect();
    history
        .iter()
        .filter(|c| c.is_on("permission-decision", PlacementType::Instance))
        .map(|c| c.body_value())
        .filter(|d| d["decision"] == "always")
        .filter_map(|d| {
            let rule = d["rule"].as_str().map(str::to_owned);
            rule.or_else(|| {
                let request = asked.get(d["request"].as_str()?)?;
                request["rule"].as_str().map(str::to_owned)
            })
        })
        .collect()
}

/// Where the run's messages live: the session its process sits on, or —
/// for a sub-agent — its own process. Answers it, its members since the
/// start, and the commit read at.
async fn find_session(
    client: &Client,
    me: &str,
    process: &substrate::ScopeResult,
    sub_agent: bool,
) -> Result<(String, Vec<ChunkItem>, u64), ProgramError> {
    let Some(own) = process.scopes.first() else {
        return Err(ProgramError::Other(
            "cannot read the agent's own process".into(),
        ));
    };
    // A sub-agent's session is its own process: the scope it sits on is
    // its parent's run, not worth reading whole to find that out.
    let candidates = if sub_agent {
        &[][..]
    } else {
        &own.placements[..]
    };
    for placement in candidates {
        if placement.kind != PlacementType::Instance
            || placement.scope == "engine/process"
            || placement.scope.starts_with("program/")
        {
            continue;
        }
        let read = client
            .scope(&[placement.scope.as_str()], ScopeOpts::default())
            .await?;
        if read
            .scopes
            .first()
            .is_some_and(|s| s.is_on("session", PlacementType::Instance))
        {
            let history = read.chunks.iter().map(|c| (**c).clone()).collect();
            return Ok((placement.scope.clone(), history, read.as_of));
        }
    }
    let history = process.chunks.iter().map(|c| (**c).clone()).collect();
    Ok((me.to_owned(), history, process.as_of))
}

/// A background commit's outcome: the commit, or `None` once its failure
/// is said on stderr (the run goes on; the session lacks those chunks).
fn report_lost(
    sent: Result<Result<substrate::Commit, protocol::ClientError>, tokio::task::JoinError>,
) -> Option<substrate::Commit> {
    match sent {
        Ok(Ok(commit)) => Some(commit),
        Ok(Err(e)) => {
            eprintln!("agent: a commit failed: {e}");
            None
        }
        Err(e) => {
            eprintln!("agent: a commit was lost: {e}");
            None
        }
    }
}

/// Commits a context event for `context` pinning `pins`; answers the
/// commit and the pinned scopes as of `context.as_of`.
async fn write_context(
    client: &Client,
    session: &str,
    context: &ContextBody,
    pins: &[String],
) -> Result<(substrate::Commit, Vec<crate::request::Pinned>), protocol::ClientError> {
    let event = substrate::ids::new_id("c");
    let commit = client
        .commit(context_declaration(&event, session, context, pins))
        .await?;
    // The pins are the event's relates, in order: read them as a rebuild
    // would, as of the event, without reading the event back.
    let pinned = catalog::read_pinned(client, pins, context.as_of).await?;
    Ok((commit, pinned))
}

/// The agent's context event: on the session, typed `context`, each pinned
/// scope placed relates on it in order.
fn context_declaration(
    event: &str,
    session: &str,
    body: &ContextBody,
    pins: &[String],
) -> Declaration {
    let chunk = ChunkDecl::with_id(event)
        .create_only()
        .body(serde_json::to_value(body).unwrap_or_default())
        .on(NewPlacement::instance(session))
        .on(NewPlacement::instance("context"));
    Declaration {
        chunks: vec![chunk],
        placements: pins
            .iter()
            .map(|pin| PlacementDecl {
                chunk: pin.clone(),
                scope: event.to_owned(),
                kind: PlacementType::Relates,
                seq: None,
            })
            .collect(),
        ..Declaration::default()
    }
}

/// The model client the configuration names (an error says what to set);
/// its retries are shown to hosts as `status`.
fn connect(config: &AgentConfig, client: &Client) -> Result<model::Provider, String> {
    let status = client.clone();
    let observer = model::RetryObserver(std::sync::Arc::new(move |n: &model::RetryNotice| {
        status.notify_now(json!({
            "kind": "status",
            "text": format!("retrying the model call in {} ms ({})", n.wait.as_millis(), n.error),
        }));
    }));
    let provider = match config.api {
        ApiKind::Anthropic => {
            let mut api = model::AnthropicConfig::from_env();
            api.http.on_retry = Some(observer);
            api.validate().map_err(|e| e.to_string())?;
            model::ProviderConfig::Anthropic(api)
        }
        ApiKind::Openai => {
            let mut api = model::OpenAiConfig::from_env();
            api.http.on_retry = Some(observer);
            api.validate().map_err(|e| e.to_string())?;
            model::ProviderConfig::OpenAi(api)
        }
    };
    model::Provider::new(provider).map_err(|e| e.to_string())
}
