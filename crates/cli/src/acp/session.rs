//! The sessions an editor keeps on one project: made, loaded, prompted,
//! cancelled, their mode and model set — each request answered as ACP v1
//! says, every turn a run through the host core.

use super::answerer::EditorAnswerer;
use super::link::{self, Link, fail};
use super::sink::EditorSink;
use super::{history, prompt};
use agent::config::PermissionMode;
use agent::contract::RunStop;
use engine::Engine;
use futures_util::StreamExt;
use futures_util::stream::FuturesUnordered;
use hc_acp::rpc::{self, Incoming, RpcError};
use hc_acp::schema::{
    AvailableCommand, ConfigOption, ConfigValue, InitializeRequest, LoadSessionRequest, McpServer,
    Mode, ModeState, NewSessionRequest, NewSessionResponse, PromptRequest, SessionRef,
    SessionUpdate, SetConfigOptionRequest, SetModeRequest, StopReason,
};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use tokio::sync::mpsc::UnboundedReceiver;

/// The methods that name a session.
pub const METHODS: &[&str] = &[
    "session/prompt",
    "session/set_mode",
    "session/set_config_option",
];

/// A turn's end.
pub struct Done {
    session: String,
    id: Value,
    outcome: anyhow::Result<hc_host::turn::Finished>,
    stop: Option<RunStop>,
    message: Option<String>,
}

type Turns = FuturesUnordered<Pin<Box<dyn Future<Output = Done>>>>;

/// One session the editor knows.
struct Session {
    /// Made in the substrate (at its first prompt, or loaded).
    made: bool,
    mode: Arc<Mutex<PermissionMode>>,
    model: String,
    /// The prompt request a turn answers, while one runs.
    running: Option<Value>,
    /// The editor cancelled the running turn.
    cancelled: bool,
}

impl Session {
    fn new(made: bool, base: &agent::AgentConfig) -> Session {
        Session {
            made,
            mode: Arc::new(Mutex::new(base.permission_mode)),
            model: base.model.clone(),
            running: None,
            cancelled: false,
        }
    }

    fn mode(&self) -> PermissionMode {
        *self.mode.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Serves one project's sessions.
pub struct Driver {
    engine: Engine,
    root: PathBuf,
    link: Arc<Link>,
    base: agent::AgentConfig,
    /// The MCP servers the project was opened with.
    servers: Vec<McpServer>,
    sessions: HashMap<String, Session>,
}

fn invalid(why: impl Into<String>) -> RpcError {
    RpcError::new(rpc::INVALID_PARAMS, why)
}

use super::start::params as read;

impl Driver {
    /// A driver of sessions on `engine`, configured as `base`.
    pub fn new(
        engine: Engine,
        link: Arc<Link>,
        base: agent::AgentConfig,
        servers: Vec<McpServer>,
    ) -> Driver {
        Driver {
            root: engine.config().project_root.clone(),
            engine,
            link,
            base,
            servers,
            sessions: HashMap::new(),
        }
    }

    /// Serves lines until stdin closes and the turns running then end.
    pub async fn run(
        &mut self,
        first: (Value, String, Value),
        lines: &mut UnboundedReceiver<String>,
        client: &mut InitializeRequest,
    ) {
        let mut turns = Turns::new();
        let (id, method, params) = first;
        self.request(id, &method, params, client, &mut turns);
        let mut closed = false;
        while !(closed && turns.is_empty()) {
            tokio::select! {
                line = lines.recv(), if !closed => match line {
                    Some(line) => self.line(&line, client, &mut turns),
                    None => {
                        // the editor is gone: what runs is interrupted,
                        // recorded, and ends
                        closed = true;
                        self.link.interrupt_all();
                        self.link.close();
                    }
                },
                Some(done) = turns.next(), if !turns.is_empty() => self.ended(done),
            }
        }
    }

    fn line(&mut self, line: &str, client: &mut InitializeRequest, turns: &mut Turns) {
        match Incoming::parse(line) {
            Incoming::Request { id, method, params } => {
                self.request(id, &method, params, client, turns);
            }
            Incoming::Notification { method, params } if method == "session/cancel" => {
                self.cancel(params);
            }
            Incoming::Notification { method, .. } => {
                eprintln!("hc: the notification `{method}` is not one hc serves; ignored");
            }
            Incoming::Response { id, outcome } => self.link.resolve(&id, outcome),
            Incoming::Invalid { id, error } => fail(&id, &error),
        }
    }

    fn request(
        &mut self,
        id: Value,
        method: &str,
        params: Value,
        client: &mut InitializeRequest,
        turns: &mut Turns,
    ) {
        if let Some(answered) = super::start::stateless(method, &params, client) {
            return answer(&id, answered);
        }
        match method {
            "session/new" => match self.new_session(params) {
                Ok((session, result)) => {
                    link::answer(&id, result);
                    self.commands(&session);
                }
                Err(error) => fail(&id, &error),
            },
            "session/load" => match self.load(params) {
                Ok((session, result)) => {
                    link::answer(&id, result);
                    self.commands(&session);
                }
                Err(error) => fail(&id, &error),
            },
            "session/prompt" => {
                if let Err(error) = self.prompt(&id, params, turns) {
                    fail(&id, &error);
                }
            }
            "session/set_mode" => answer(&id, self.set_mode(params)),
            "session/set_config_option" => answer(&id, self.set_config(params)),
            other => fail(&id, &super::not_found(other)),
        }
    }

    /// The session named, known here.
    fn session(&mut self, id: &str) -> Result<&mut Session, RpcError> {
        self.sessions.get_mut(id).ok_or_else(|| {
            RpcError::new(
                rpc::RESOURCE_NOT_FOUND,
                format!(
                    "no session {id} here: make one with session/new, or load it with session/load"
                ),
            )
            .with_data(json!({"sessionId": id}))
        })
    }

    /// `cwd` in this project, and `servers` those it was opened with.
    fn same_project(&self, cwd: &str, servers: &[McpServer]) -> Result<(), RpcError> {
        let at = std::fs::canonicalize(cwd).map_err(|e| invalid(format!("cwd {cwd}: {e}")))?;
        let root = std::fs::canonicalize(&self.root).unwrap_or_else(|_| self.root.clone());
        if !at.starts_with(&root) {
            return Err(invalid(format!(
                "this hc acp serves the project at {}; start another for {cwd}",
                root.display()
            )));
        }
        if servers != self.servers {
            return Err(invalid(
                "the MCP servers differ from those this hc acp started with; start another \
                 for a session with other servers",
            ));
        }
        Ok(())
    }

    fn new_session(&mut self, params: Value) -> Result<(String, Value), RpcError> {
        let asked: NewSessionRequest = read("session/new", params)?;
        self.same_project(&asked.cwd, &asked.mcp_servers)?;
        let id = agent::launch::new_session_id();
        let session = Session::new(false, &self.base);
        let result = NewSessionResponse {
            session_id: id.clone(),
            modes: modes(session.mode()),
            config_options: self.options(&session.model),
        };
        self.sessions.insert(id.clone(), session);
        let result = serde_json::to_value(&result).unwrap_or(Value::Null);
        Ok((id, result))
    }

    /// `session/load`: the session's history told, then answered.
    fn load(&mut self, params: Value) -> Result<(String, Value), RpcError> {
        let asked: LoadSessionRequest = read("session/load", params)?;
        self.same_project(&asked.cwd, &asked.mcp_servers)?;
        let id = asked.session_id;
        let exists = hc_host::sessions::exists(self.engine.db(), &id)
            .map_err(|e| RpcError::new(rpc::INTERNAL_ERROR, format!("{e:#}")))?;
        if !exists && !self.sessions.contains_key(&id) {
            return Err(RpcError::new(
                rpc::RESOURCE_NOT_FOUND,
                format!("no session {id} in the project at {}", self.root.display()),
            )
            .with_data(json!({"sessionId": id})));
        }
        let told = history::updates(self.engine.db(), &self.root, &id)
            .map_err(|e| RpcError::new(rpc::INTERNAL_ERROR, format!("{e:#}")))?;
        for update in told {
            link::update(&id, update);
        }
        let session = self
            .sessions
            .remove(&id)
            .unwrap_or_else(|| Session::new(true, &self.base));
        let result = json!({
            "modes": modes(session.mode()),
            "configOptions": self.options(&session.model),
        });
        self.sessions.insert(id.clone(), session);
        Ok((id, result))
    }

    /// `session/prompt`: a turn started (answered when it ends).
    fn prompt(&mut self, id: &Value, params: Value, turns: &mut Turns) -> Result<(), RpcError> {
        let asked: PromptRequest = read("session/prompt", params)?;
        let sid = asked.session_id.clone();
        let busy = |why: String| RpcError::new(rpc::INVALID_REQUEST, why);
        if let Some(other) = self.editor_files_busy(&sid) {
            return Err(busy(format!(
                "a turn is running on session {other}, and the editor's files are read for one turn \
                 at a time: wait for its answer, or cancel it with session/cancel"
            )));
        }
        let (engine, root) = (self.engine.clone(), self.root.clone());
        let mut config = self.base.clone();
        let session = self.session(&sid)?;
        if session.running.is_some() {
            return Err(busy(format!(
                "a turn is running on session {sid}: wait for its answer, or cancel it with session/cancel"
            )));
        }
        let (text, images) = prompt::read(&asked.prompt, &root)?;
        let text = prompt::skill_call(&text, &root, &config).unwrap_or(text);
        if !session.made {
            hc_host::sessions::create_as(&engine, &sid, &text)
                .map_err(|e| RpcError::new(rpc::INTERNAL_ERROR, format!("{e:#}")))?;
            session.made = true;
        }
        config.permission_mode = session.mode();
        config.model.clone_from(&session.model);
        config.allow.extend(super::files::allowed(&config));
        session.running = Some(id.clone());
        session.cancelled = false;
        let mode = Arc::clone(&session.mode);
        self.link.set_current(&sid);
        let answerer = EditorAnswerer {
            interrupt: self.link.interrupt_for(&sid),
            link: Arc::clone(&self.link),
            session: sid.clone(),
            mode,
        };
        let sink = EditorSink::new(&sid, root, Arc::clone(&self.link));
        let asked = Asked {
            id: id.clone(),
            session: sid,
            text,
            images,
            config,
        };
        turns.push(Box::pin(turn(engine, asked, sink, answerer)));
        Ok(())
    }

    /// Another session's turn, while one runs and the editor's files are
    /// served (they are read for the turn that began last).
    fn editor_files_busy(&self, sid: &str) -> Option<&str> {
        if self.base.hidden.is_empty() {
            return None;
        }
        (self.sessions.iter())
            .find(|(other, s)| s.running.is_some() && other.as_str() != sid)
            .map(|(other, _)| other.as_str())
    }

    /// A turn's end: its prompt answered with how it stopped.
    fn ended(&mut self, done: Done) {
        self.link.ended(&done.session);
        let cancelled = match self.sessions.get_mut(&done.session) {
            Some(session) => {
                session.running = None;
                std::mem::take(&mut session.cancelled)
            }
            None => false,
        };
        let stop = match (cancelled, done.outcome) {
            // (cancelled is cancelled, whatever the cancel made fail)
            (true, _) => Ok(StopReason::Cancelled),
            (false, Err(e)) => Err(format!("{e:#}")),
            (false, Ok(_)) => match done.stop {
                Some(RunStop::EndTurn | RunStop::Other) | None => Ok(StopReason::EndTurn),
                Some(RunStop::Interrupted) => Ok(StopReason::Cancelled),
                Some(RunStop::MaxTurns | RunStop::MaxBudget) => Ok(StopReason::MaxTurnRequests),
                Some(RunStop::PromptTooLong) => Ok(StopReason::MaxTokens),
                Some(RunStop::Error | RunStop::StructuredOutputRetries) => {
                    Err(done.message.unwrap_or_else(|| "the run failed".to_owned()))
                }
            },
        };
        match stop {
            Ok(reason) => link::answer(&done.id, json!({"stopReason": reason})),
            Err(why) => fail(&done.id, &RpcError::new(rpc::INTERNAL_ERROR, why)),
        }
    }

    /// `session/cancel`: the running turn interrupted, what it waits for
    /// from the editor withdrawn.
    fn cancel(&mut self, params: Value) {
        let Ok(asked) = serde_json::from_value::<SessionRef>(params) else {
            eprintln!("hc: a session/cancel without a sessionId is ignored");
            return;
        };
        let Some(session) = self.sessions.get_mut(&asked.session_id) else {
            eprintln!(
                "hc: session/cancel names no session here ({})",
                asked.session_id
            );
            return;
        };
        if session.running.is_some() {
            session.cancelled = true;
            self.link.interrupt(&asked.session_id);
            self.link.withdraw(&asked.session_id);
        }
    }

    fn set_mode(&mut self, params: Value) -> Result<Value, RpcError> {
        let asked: SetModeRequest = read("session/set_mode", params)?;
        let session = self.session(&asked.session_id)?;
        let mode = PermissionMode::parse(&asked.mode_id).ok_or_else(|| {
            let ids: Vec<&str> = ALL_MODES.iter().map(|m| m.as_str()).collect();
            invalid(format!(
                "`{}` is not a mode; give one of {}",
                asked.mode_id,
                ids.join(", ")
            ))
        })?;
        *session.mode.lock().unwrap_or_else(PoisonError::into_inner) = mode;
        Ok(json!({}))
    }

    fn set_config(&mut self, params: Value) -> Result<Value, RpcError> {
        let asked: SetConfigOptionRequest = read("session/set_config_option", params)?;
        if asked.config_id != "model" {
            return Err(invalid(format!(
                "`{}` is not an option; hc has `model`",
                asked.config_id
            )));
        }
        let named = (asked.value.as_str())
            .filter(|m| !m.trim().is_empty())
            .ok_or_else(|| invalid("the model is a model's name, as a string"))?;
        // (an alias — `sonnet`, `opus` — names today's model)
        let model = self.base.resolve_model(named);
        let offered = self.models();
        if !offered.contains(&model) {
            return Err(invalid(format!(
                "`{model}` is not one of the models offered ({})",
                offered.join(", ")
            )));
        }
        self.session(&asked.session_id)?.model.clone_from(&model);
        Ok(json!({"configOptions": self.options(&model)}))
    }

    /// The models a session may run on: the configured one, its
    /// fallbacks, and Anthropic's current ones on Anthropic's API.
    fn models(&self) -> Vec<String> {
        let mut names: Vec<String> = vec![self.base.model.clone()];
        names.extend(self.base.fallback_models.iter().cloned());
        if self.base.api == agent::ApiKind::Anthropic {
            let current = model::catalog::ALIASES.iter();
            names.extend(current.map(|(alias, _)| self.base.resolve_model(alias)));
        }
        let mut seen = std::collections::HashSet::new();
        names.retain(|n| seen.insert(n.clone()));
        names
    }

    /// The model as a config option, `current` chosen.
    fn options(&self, current: &str) -> Vec<ConfigOption> {
        let names = self.models();
        vec![ConfigOption {
            id: "model".into(),
            name: "Model".into(),
            category: "model".into(),
            kind: "select".into(),
            current_value: current.to_owned(),
            options: (names.into_iter())
                .map(|n| ConfigValue {
                    value: n.clone(),
                    name: n,
                })
                .collect(),
        }]
    }

    /// The slash commands a prompt may start with: the command files',
    /// the MCP servers' prompts, the skills.
    fn commands(&self, session: &str) {
        let (files, _) = hc_host::commands::find(&self.root);
        let mut commands: Vec<AvailableCommand> = (files.into_iter())
            .map(|c| AvailableCommand {
                name: c.name,
                description: c.description,
            })
            .collect();
        let prompts = hc_host::mcp_config::prompt_commands(self.engine.db()).unwrap_or_default();
        commands.extend(prompts.into_iter().map(|name| AvailableCommand {
            name,
            description: "an MCP server's prompt".into(),
        }));
        commands.extend(
            prompt::skills(&self.root, &self.base)
                .into_iter()
                .map(|(name, description)| AvailableCommand { name, description }),
        );
        let update = SessionUpdate::AvailableCommandsUpdate {
            available_commands: commands,
        };
        link::update(session, update);
    }
}

/// A prompt, as its turn takes it.
struct Asked {
    id: Value,
    session: String,
    text: String,
    images: Vec<agent::contract::PromptImage>,
    config: agent::AgentConfig,
}

/// One turn of `asked`, shown on `sink`, its questions put to `answerer`.
async fn turn(
    engine: Engine,
    asked: Asked,
    mut sink: EditorSink,
    answerer: EditorAnswerer,
) -> Done {
    let choice = hc_host::sessions::Choice::Known(asked.session.clone());
    let turn = hc_host::turn::Turn {
        attached: &asked.images,
        ..hc_host::turn::Turn::of(
            &asked.text,
            &asked.config,
            &choice,
            &hc_host::confirm::NoOne,
        )
    };
    let outcome = hc_host::turn::turn(&engine, turn, &mut sink, &answerer).await;
    Done {
        session: asked.session,
        id: asked.id,
        outcome,
        stop: sink.stop,
        message: sink.stop_message,
    }
}

/// A request's answer, given.
pub fn answer(id: &Value, answered: Result<Value, RpcError>) {
    match answered {
        Ok(result) => link::answer(id, result),
        Err(error) => fail(id, &error),
    }
}

/// Every permission mode, as the editor offers them.
const ALL_MODES: [PermissionMode; 6] = [
    PermissionMode::Default,
    PermissionMode::AcceptEdits,
    PermissionMode::Plan,
    PermissionMode::DontAsk,
    PermissionMode::Auto,
    PermissionMode::Bypass,
];

/// hc's permission modes as ACP modes, `current` chosen.
fn modes(current: PermissionMode) -> ModeState {
    let describe = |mode: PermissionMode| match mode {
        PermissionMode::Default => ("Default", "Ask before anything that is not read-only"),
        PermissionMode::AcceptEdits => (
            "Accept edits",
            "Edits in the project run; other changes ask",
        ),
        PermissionMode::Plan => (
            "Plan",
            "Read and plan; change nothing until the plan is approved",
        ),
        PermissionMode::DontAsk => ("Don't ask", "Only what the rules allow runs; nothing asks"),
        PermissionMode::Auto => ("Auto", "A small model judges what would ask"),
        PermissionMode::Bypass => ("Bypass permissions", "Everything runs without asking"),
    };
    ModeState {
        current_mode_id: current.as_str().to_owned(),
        available_modes: (ALL_MODES.iter())
            .map(|m| {
                let (name, description) = describe(*m);
                Mode {
                    id: m.as_str().to_owned(),
                    name: name.to_owned(),
                    description: description.to_owned(),
                }
            })
            .collect(),
    }
}
