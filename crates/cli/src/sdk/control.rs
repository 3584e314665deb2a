//! Control requests the driving program sends (`{"type":
//! "control_request", "request_id", "request": {"subtype", …}}`), each
//! answered with a `control_response`: `initialize` (its hooks and agents),
//! `interrupt`, `set_permission_mode`, `set_model`, `mcp_status`,
//! `get_context_usage`, `rewind_files` (`rewind.rs`), and
//! an error naming any other subtype.

use super::link::emit;
use super::wire::{HookMatcher, Line, Request, read};
use agent::contract::{Answer, Body, SessionItem};
use agent::{AgentConfig, HookConfig, PermissionMode};
use engine::{Context, Engine};
use serde_json::{Value, json};
use std::time::Duration;

/// What the loop keeps between turns that control requests change.
pub struct State {
    /// The configuration the next turn runs with.
    pub config: AgentConfig,
    /// The session, once the first turn made it.
    pub session: Option<String>,
    /// Host-level hook callbacks (`SessionStart`, `SessionEnd`): event → ids.
    pub host_hooks: Vec<(String, String)>,
    /// Whether a turn is running now.
    pub running: bool,
    /// What the `initialize` read at launch (`--await-initialize`) applied,
    /// until it is answered.
    pub launched: Option<super::Launched>,
    /// Whether the program interrupted the turn under way.
    pub interrupted: bool,
}

/// Answers one control request (`interrupt` is the caller's: it knows
/// the running turn).
pub fn answer(engine: &Engine, state: &mut State, link: &super::Link, line: &Line) {
    let id = line.request_id.clone();
    if line.request["subtype"] == "rewind_files" {
        // a run of its own: answered when it ends, the loop going on
        let request = read::<Request>(&line.request).unwrap_or_default();
        let (engine, session) = (engine.clone(), state.session.clone());
        tokio::spawn(async move {
            let outcome = super::rewind::rewind_files(&engine, session.as_deref(), &request).await;
            respond(id, outcome);
        });
        return;
    }
    let outcome = match read::<Request>(&line.request) {
        Ok(request) => outcome(engine, state, link, &request),
        Err(why) => Err(format!("the control request does not read: {why}")),
    };
    respond(id, outcome);
}

/// The `control_response` to request `id`.
fn respond(id: Value, outcome: Result<Value, String>) {
    let response = match outcome {
        Ok(response) => json!({"subtype": "success", "request_id": id, "response": response}),
        Err(error) => json!({"subtype": "error", "request_id": id, "error": error}),
    };
    emit(&json!({"type": "control_response", "response": response}));
}

/// What a control request is answered: its response, or the error.
fn outcome(
    engine: &Engine,
    state: &mut State,
    link: &super::Link,
    request: &Request,
) -> Result<Value, String> {
    match request.subtype.as_str() {
        "initialize" => initialize(state, link, request),
        "interrupt" => {
            if state.running {
                state.interrupted = true;
                link.interrupt();
            }
            Ok(json!({}))
        }
        "set_permission_mode" => set_permission_mode(state, request),
        "set_model" => {
            let default = crate::settings::DEFAULTS
                .iter()
                .find(|(n, _)| *n == "model")
                .map_or("", |(_, m)| m);
            let named = request.model.as_deref().filter(|m| *m != "default");
            state.config.model = state.config.resolve_model(named.unwrap_or(default));
            Ok(json!({}))
        }
        "mcp_status" => crate::mcp_config::statuses(engine.db())
            .map(|servers| json!({"mcpServers": servers}))
            .map_err(|e| e.to_string()),
        "get_context_usage" => Ok(context_usage(engine, state)),
        "" => Err("a control_request needs `request.subtype`".to_owned()),
        other => Err(format!(
            "unknown control request subtype `{other}`; hermitcrab answers initialize, \
             interrupt, set_permission_mode, set_model, mcp_status, get_context_usage and \
             rewind_files"
        )),
    }
}

/// `initialize`: the program's hook callbacks (by event, each matcher's
/// callback ids) and its agents; answers the commands and models.
fn initialize(state: &mut State, link: &super::Link, request: &Request) -> Result<Value, String> {
    for (event, matchers) in &request.hooks {
        for matcher in matchers {
            register(state, link, event, matcher);
        }
    }
    for (name, def) in &request.agents {
        state.config.agents.push(agent::sources::agents::AgentSpec {
            name: name.clone(),
            description: def.description.clone(),
            prompt: def.prompt.clone(),
            tools: def.tools.as_ref().map(|tools| {
                tools
                    .iter()
                    .map(|t| agent::names::program_of(t).to_owned())
                    .collect()
            }),
            model: def
                .model
                .clone()
                .filter(|m| !m.is_empty() && m != "inherit"),
        });
    }
    let commands: Vec<Value> = crate::commands::BUILT_IN
        .iter()
        .map(|c| json!({"name": c.trim_start_matches('/'), "description": "", "argumentHint": ""}))
        .collect();
    let answer = initialized(state, request, commands);
    serde_json::to_value(answer).map_err(|e| e.to_string())
}

/// The answer to `request`: what this request carried that only a launch
/// applies is applied when it is the request read at launch, else not.
fn initialized(state: &mut State, request: &Request, commands: Vec<Value>) -> Initialized {
    let launched = state.launched.take();
    let applied = |field: &str| {
        let applied = launched
            .as_ref()
            .is_some_and(|l| l.fields.iter().any(|f| f == field));
        request.extra.contains_key(field).then_some(applied)
    };
    Initialized {
        commands,
        output_style: "default",
        available_output_styles: ["default"],
        models: vec![
            json!({"value": state.config.model, "displayName": state.config.model, "description": ""}),
        ],
        account: json!({}),
        pid: std::process::id(),
        claude_code_version: super::SPOKEN_VERSION,
        // a hook set to block on failure blocks when it fails
        hook_on_failure_supported: true,
        hooks_applied: (!request.hooks.is_empty()).then_some(true),
        mcp_servers_applied: applied("mcpServers"),
        settings_applied: applied("settings"),
        disallowed_tools_applied: applied("disallowedTools"),
        additional_directories_applied: applied("additionalDirectories"),
        managed_settings_applied: applied("managedSettings"),
        // (hc has no plugins yet: never applied)
        plugins_applied: request.extra.contains_key("plugins").then_some(false),
    }
}

/// The answer to `initialize`, as Claude Code gives it: each `*_applied`
/// said only for a field the request carried.
#[derive(serde::Serialize)]
struct Initialized {
    commands: Vec<Value>,
    output_style: &'static str,
    available_output_styles: [&'static str; 1],
    models: Vec<Value>,
    account: Value,
    pid: u32,
    claude_code_version: &'static str,
    hook_on_failure_supported: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    hooks_applied: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    mcp_servers_applied: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    settings_applied: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    disallowed_tools_applied: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    additional_directories_applied: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    managed_settings_applied: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    plugins_applied: Option<bool>,
}

/// One hook matcher of `initialize`: each callback a hook of the agent's
/// (or the host's, for the session's start and end).
fn register(state: &mut State, link: &super::Link, event: &str, matcher: &HookMatcher) {
    let timeout = matcher.timeout.filter(|t| *t > 0.0);
    for id in &matcher.hook_callback_ids {
        if let Some(secs) = timeout {
            link.set_timeout(id, Duration::from_secs_f64(secs));
        }
        match (agent::hook_event(event), event) {
            (Some(ours), _) => state.config.hooks.push(HookConfig {
                event: ours.to_owned(),
                matcher: matcher.matcher.clone(),
                command: String::new(),
                callback: Some(id.to_owned()),
                timeout_ms: timeout.map(|t| (t * 1000.0) as u64),
                on_failure: matcher.on_failure,
            }),
            (None, "SessionStart" | "SessionEnd" | "Interrupt") => {
                state.host_hooks.push((event.to_owned(), id.to_owned()));
            }
            (None, other) => eprintln!(
                "hc: {other} hooks are not run by hermitcrab yet; callback {id} is ignored"
            ),
        }
    }
}

/// `set_permission_mode`: from the next turn on.
fn set_permission_mode(state: &mut State, request: &Request) -> Result<Value, String> {
    let mode = request.mode.as_deref().unwrap_or_default();
    state.config.permission_mode = PermissionMode::parse(mode).ok_or_else(|| {
        format!(
            "set_permission_mode: `{mode}` is not a mode; give default, acceptEdits, plan, \
             bypassPermissions or dontAsk"
        )
    })?;
    Ok(json!({}))
}

/// `get_context_usage`: what the session's last call took of the model's
/// context window.
fn context_usage(engine: &Engine, state: &State) -> Value {
    let model = &state.config.model;
    let window = state.config.context_window.unwrap_or_else(|| {
        model::LimitsTable::default()
            .get(model)
            .map_or(200_000, |l| l.context_window)
    });
    let used = state
        .session
        .as_ref()
        .and_then(|session| last_answer(engine, session))
        .map_or(0, |a| a.usage.total_input_tokens() + a.usage.output_tokens);
    let percentage = if window == 0 {
        0.0
    } else {
        (used as f64 * 100.0 / window as f64 * 10.0).round() / 10.0
    };
    json!({
        "categories": [{"name": "Messages", "tokens": used, "color": "purple"}],
        "totalTokens": used,
        "maxTokens": window,
        "rawMaxTokens": window,
        "percentage": percentage,
        "model": model,
        "isAutoCompactEnabled": true,
        "memoryFiles": [],
        "mcpTools": [],
        "agents": [],
        "gridRows": [],
    })
}

/// The session's last answer.
fn last_answer(engine: &Engine, session: &str) -> Option<Answer> {
    let read = engine
        .scope(
            &Context::host(),
            &[session.to_owned(), Answer::TYPE.to_owned()],
            &protocol::ScopeOpts::default(),
        )
        .ok()?;
    read.chunks
        .iter()
        .rev()
        .find_map(|c| match SessionItem::of(c) {
            SessionItem::Answer(a) => Some(*a),
            _ => None,
        })
}
