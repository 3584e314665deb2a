//! The link to the program driving `hc` over stdin/stdout (an Agent SDK
//! program): control requests `hc` sends it — `can_use_tool`,
//! `hook_callback`, `mcp_message` — each answered by a `control_response`
//! line, matched by `request_id`; and what it asks of a running turn (an
//! interrupt). Every line goes out whole, under stdout's lock.

use super::wire::{Response, ToolAnswer, read};
use agent::contract::{Choice, HookAnswer, HookCallback, PermissionDecision, PermissionRequest};
use agent::names::ToolNames;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::Duration;
use tokio::sync::{Notify, oneshot};

/// How long a hook callback may take when its matcher says nothing
/// (Claude Code's default).
const HOOK_TIMEOUT: Duration = Duration::from_secs(60);

/// Who answers through the program driving the run.
pub(crate) const BY_PROGRAM: &str = "the SDK program";

/// Who decided when the program says its configuration did (`config`):
/// no person was asked.
pub(crate) const BY_CONFIG: &str = "the SDK program's configuration (no one asked)";

/// The link to the driving program.
pub struct Link {
    next: AtomicU64,
    pending: Mutex<HashMap<String, oneshot::Sender<Result<Value, String>>>>,
    interrupt: Notify,
    /// Permission questions go to the program (`--permission-prompt-tool stdio`).
    pub prompts: bool,
    /// The tool names the program knows.
    pub names: ToolNames,
    /// The session's id as the program knows it (its `--session-id`, else ours).
    shown_session: Mutex<Option<String>>,
    /// Each registered callback's timeout.
    timeouts: Mutex<HashMap<String, Duration>>,
    /// The program closed its input: it can answer nothing more.
    closed: std::sync::atomic::AtomicBool,
}

/// Writes one JSON line to stdout, whole.
pub fn emit(value: &Value) {
    use std::io::Write as _;
    let mut out = std::io::stdout().lock();
    let _ = serde_json::to_writer(&mut out, value);
    let _ = out.write_all(b"\n");
    let _ = out.flush();
}

impl Link {
    /// A link whose permission questions go to the program when `prompts`.
    pub fn new(prompts: bool, names: ToolNames) -> Link {
        Link {
            next: AtomicU64::new(1),
            pending: Mutex::default(),
            interrupt: Notify::new(),
            prompts,
            names,
            shown_session: Mutex::default(),
            timeouts: Mutex::default(),
            closed: std::sync::atomic::AtomicBool::new(false),
        }
    }

    /// Names the session as the program knows it.
    pub fn set_session(&self, shown: &str) {
        *self
            .shown_session
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(shown.to_owned());
    }

    /// Keeps a callback's timeout (from its matcher).
    pub fn set_timeout(&self, callback: &str, timeout: Duration) {
        self.timeouts
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(callback.to_owned(), timeout);
    }

    /// Asks the running turn to stop (as a Ctrl-C would).
    pub fn interrupt(&self) {
        self.interrupt.notify_one();
    }

    /// Resolves when the program asked the running turn to stop.
    pub async fn interrupted(&self) {
        self.interrupt.notified().await;
    }

    /// Sends control request `request` and waits for its answer (at most
    /// `timeout`): its `response`, or the error it said.
    pub async fn request(
        &self,
        request: Value,
        timeout: Option<Duration>,
    ) -> Result<Value, String> {
        if self.closed.load(Ordering::Acquire) {
            return Err("the program closed its input: it cannot answer".into());
        }
        let id = format!("hc_req_{}", self.next.fetch_add(1, Ordering::Relaxed));
        let (tx, rx) = oneshot::channel();
        self.pending
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(id.clone(), tx);
        emit(&json!({"type": "control_request", "request_id": id, "request": request}));
        let answer = match timeout {
            Some(limit) => match tokio::time::timeout(limit, rx).await {
                Ok(answer) => answer,
                Err(_) => {
                    self.forget(&id);
                    emit(&json!({"type": "control_cancel_request", "request_id": id}));
                    return Err(format!("no answer within {} s", limit.as_secs()));
                }
            },
            None => rx.await,
        };
        answer.unwrap_or_else(|_| Err("the program closed its input before it answered".into()))
    }

    fn forget(&self, id: &str) {
        self.pending
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(id);
    }

    /// A `control_response` line from the program: to whoever waits for it.
    pub fn resolve(&self, response: &Value) {
        let response: Response = read(response).unwrap_or_default();
        let Some(id) = response.request_id.as_deref() else {
            eprintln!("hc: a control_response with no request_id is ignored");
            return;
        };
        let waiter = self
            .pending
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(id);
        let Some(waiter) = waiter else {
            eprintln!("hc: a control_response to no request of hc's ({id}) is ignored");
            return;
        };
        let answer = match response.subtype.as_str() {
            "error" => Err(response
                .error
                .unwrap_or_else(|| "the program answered with an error".to_owned())),
            _ => Ok(response.response),
        };
        let _ = waiter.send(answer);
    }

    /// The program closed its input: every request waiting fails, and
    /// every later one at once.
    pub fn close(&self) {
        self.closed.store(true, Ordering::Release);
        self.pending
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clear();
    }

    /// A permission question, put to the program as `can_use_tool`; its
    /// answer as the decision to commit (no answer, or one that says
    /// nothing: a denial naming why).
    pub async fn can_use_tool(&self, id: &str, asked: &PermissionRequest) -> PermissionDecision {
        let request = json!({
            "subtype": "can_use_tool",
            "tool_name": self.names.show(&asked.program),
            "input": asked.input,
            "tool_use_id": asked.tool_use_id,
            "decision_reason": asked.reason,
            "permission_suggestions": [{"type": "addRules", "behavior": "allow",
                "destination": "session", "rules": [{"toolName": self.names.show(&asked.program)}]}],
        });
        let mut decision = PermissionDecision {
            request: id.to_owned(),
            by: Some(BY_PROGRAM.into()),
            ..PermissionDecision::default()
        };
        let answer = match self.request(request, None).await {
            Ok(answer) => answer,
            Err(why) => {
                decision.message = Some(format!("the program did not answer: {why}"));
                return decision;
            }
        };
        let said = read::<ToolAnswer>(&answer).unwrap_or_default();
        // (the program decided by its own configuration: no person did)
        if said.decision_classification.as_deref() == Some("config") {
            decision.by = Some(BY_CONFIG.into());
        }
        match said.behavior.as_deref() {
            Some("allow") => {
                decision.decision = Choice::Allow;
                if let Some(rule) = said.added_rule("allow") {
                    decision.decision = Choice::Always;
                    decision.rule = Some(rule);
                }
                decision.updated_input = said
                    .updated_input
                    .filter(|i| i.is_object() && *i != asked.input);
            }
            Some("deny") => {
                if let Some(rule) = said.added_rule("deny") {
                    decision.decision = Choice::Never;
                    decision.rule = Some(rule);
                }
                decision.message = said.message.clone();
                decision.interrupt = said.interrupt;
            }
            _ => {
                decision.message = Some(format!(
                    "the program's answer to can_use_tool has no behavior allow or deny: {answer}"
                ));
            }
        }
        decision
    }

    /// A hook callback, run by the program as `hook_callback`; its output
    /// as the answer to commit.
    pub async fn hook_callback(&self, id: &str, asked: &HookCallback) -> HookAnswer {
        let mut input = asked.input.clone();
        if let Some(shown) = self
            .shown_session
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
        {
            if input.is_null() {
                input = json!({});
            }
            if let Some(fields) = input.as_object_mut() {
                fields.insert("session_id".to_owned(), json!(shown));
            }
        }
        let timeout = self
            .timeouts
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&asked.callback_id)
            .copied()
            .unwrap_or(HOOK_TIMEOUT);
        let request = json!({
            "subtype": "hook_callback", "callback_id": asked.callback_id,
            "input": input, "tool_use_id": asked.tool_use_id,
        });
        match self.request(request, Some(timeout)).await {
            Ok(output) => HookAnswer {
                request: id.to_owned(),
                output,
                error: None,
            },
            Err(why) => HookAnswer {
                request: id.to_owned(),
                output: Value::Null,
                error: Some(why),
            },
        }
    }
}

/// The bridge to the program's own MCP servers sends their messages here.
impl hc_web::bridge::Forward for Link {
    fn request(&self, request: Value) -> hc_web::bridge::Answer<'_> {
        Box::pin(Link::request(self, request, None))
    }
}
