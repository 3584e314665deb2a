//! What a run reads when it starts — its process and configuration, its
//! session and that session's history, the tools, the pinned context —
//! and the context event it writes before its first call.

use super::files::{FromFiles, Inherited};
use super::gates::{Gates, max_tokens};
use super::inbox::Inbox;
use super::writer::SessionWriter;
use super::{Knowledge, Run};
use crate::catalog;
use crate::config::{AgentConfig, ApiKind};
use crate::contract::{ContextBody, Member, Notice, PROJECT_MEMORY, SessionItem, USER_MEMORY};
use crate::request::{Conversation, Prefix, Request};
use crate::sources::servers::Servers;
use crate::toolbox::Toolbox;
use protocol::program::{Program, ProgramError};
use protocol::{Client, PlacementType, ScopeOpts};
use std::sync::Arc;
use substrate::ChunkItem;

/// Where a run's messages live, and what they were when it started.
struct Found {
    session: String,
    history: Vec<ChunkItem>,
    as_of: u64,
    inbox: Inbox,
}

impl Run {
    /// Reads everything a run starts from and writes its context event.
    pub async fn start(program: &mut Program) -> Result<Run, ProgramError> {
        let client = program.client().clone();
        let me = program.id().to_owned();
        let root = program.root().to_path_buf();
        let process = client.scope(&[me.as_str()], ScopeOpts::default()).await?;
        // (its arguments are the ones its process lists: a chunk placed on
        // it afterwards is not one, whoever placed it)
        let listed = crate::contract::arguments_of(&process);
        let arg = |ty: &str| {
            process.chunks.iter().find(|c| {
                c.is_on(ty, PlacementType::Instance)
                    && c.is_on(&me, PlacementType::Instance)
                    && listed.contains(&c.id)
            })
        };
        let config = match arg("agent-config") {
            Some(item) => AgentConfig::parse(&item.body_value()).map_err(|e| ProgramError::Other(e.to_string()))?,
            None => return Err(ProgramError::Other(
                "no agent-config argument: run the agent through `hc run`, which resolves its configuration".into(),
            )),
        };
        let config = Arc::new(config);
        let events = program
            .take_events()
            .ok_or_else(|| ProgramError::Other("the engine's events were taken".into()))?;
        // Independent reads go out together: the session (then the inbox on
        // it), the programs, the pins — one round trip's wait, not four.
        let context_arg = arg("context").map(|c| (c.id.clone(), c.body_value()));
        let inherited = context_arg
            .as_ref()
            .and_then(|(_, body)| Inherited::of(body));
        let home = std::env::var_os("HOME").map(std::path::PathBuf::from);
        let (found, catalog, pins, memory, files) = tokio::join!(
            async {
                let (session, history, as_of) =
                    find_session(&client, &me, &process, config.depth > 1).await?;
                let inbox = Inbox::start(&client, events, &session, &me, &history).await?;
                Ok::<_, ProgramError>(Found {
                    session,
                    history,
                    as_of,
                    inbox,
                })
            },
            async {
                // The servers first: their tools are programs they commit
                // (read again when one started).
                let (programs, origin) =
                    tokio::join!(catalog::programs(&client, None), catalog::origin(&client));
                let (mut programs, origin) = (programs?, origin?);
                let servers = crate::sources::servers::start(&client, &programs, &origin).await;
                if !servers.statuses.is_empty() {
                    programs = catalog::programs(&client, None).await?;
                }
                let tools = catalog::tools_of(&client, &programs, None, &servers.connected).await;
                let foreign = |id: &str| programs.foreign.iter().any(|f| f.id == id);
                tools.map(|(at, mut tools)| {
                    for tool in &mut tools {
                        tool.untrusted = origin.distrusts(&tool.id) || foreign(&tool.id);
                    }
                    ((at, tools), servers, origin.decisions)
                })
            },
            async {
                match &context_arg {
                    // a sub-agent's: its parent's pins, named
                    Some((_, body)) if body["pins"].is_array() => {
                        Ok(serde_json::from_value(body["pins"].clone()).unwrap_or_default())
                    }
                    Some((event, _)) => catalog::related_ids(&client, event).await,
                    None => Ok(Vec::new()),
                }
            },
            async {
                match config.memory {
                    true => catalog::read_memory_now(&client, &[PROJECT_MEMORY, USER_MEMORY]).await,
                    false => (Vec::new(), Vec::new(), None),
                }
            },
            FromFiles::read(&client, &config, &root, home, inherited),
        );
        let found = found?;
        let ((read_at, tools), servers, distrusted) = catalog?;
        let tools = offered(tools, &config);
        // what the person or the parent pinned (culture among it) stays
        // pinned: the model may add to it, never take from it
        let fixed: Vec<String> = pins?;
        let pins = with_carried(&client, fixed.clone(), &found.history).await?;
        let names = tools.iter().map(|t| t.def.name.clone()).collect();
        let mut context = context_body(&config, &root, read_at, names, &me);
        let mut replayed = match &config.replay {
            Some(original) => Some(
                super::replay::recorded(&client, original, &found.history, config.depth)
                    .await
                    .map_err(ProgramError::Other)?,
            ),
            None => None,
        };
        let files = files?;
        let (memory_scopes, memory, memory_at) = memory;
        context.memory = memory_scopes;
        context.memory_at = memory_at;
        if !context.memory.is_empty() && config.depth == 1 {
            context.own_tools.push(crate::memory::definition());
        }
        let planning =
            config.permission_mode == crate::config::PermissionMode::Plan && config.depth == 1;
        if planning {
            context.own_tools.push(crate::toolbox::plan::definition());
        }
        // a run in the background may write to other sessions
        if config.background && config.depth == 1 {
            context
                .own_tools
                .push(crate::toolbox::message::definition());
        }
        let up = with_servers(&mut context, &servers);
        let (agents, chunks, skipped) = files.record(&mut context);
        // a replay is told the facts the recorded run was told (its date,
        // directory, platform, git), over what was read here
        if let Some((_, Some(recorded))) = &replayed {
            super::replay::as_recorded(&mut context, recorded);
        }
        let shell = match config.hermitcrab {
            true => {
                let have = super::crab::operable(&config, &tools);
                Some(super::crab::prepare(&client, &config, &have, &found.history).await?)
            }
            false => None,
        };
        if config.has_blocks() {
            context
                .own_tools
                .extend(crate::toolbox::blocks::definitions());
        }
        if let Some(schema) = &config.output_schema {
            let tool = crate::toolbox::structured::definition(schema);
            context.own_tools.push(tool);
        }
        context.shell = shell.as_ref().map(|(_, record)| record.clone());
        let defs: Vec<_> = tools.iter().map(|t| t.def.clone()).collect();
        // many MCP tools wait behind a search (recorded: a rebuild defers
        // what was deferred)
        context.deferred = crate::toolbox::search::deferred(&config, &defs);
        if !context.deferred.is_empty() {
            context.own_tools.push(crate::toolbox::search::definition());
        }
        let mut writer = SessionWriter::new(client.clone(), me, found.session, found.as_of);
        announce(&writer, &servers, &skipped);
        let mut known = writer
            .write_context(&context, &pins, &chunks, memory)
            .await?;
        known.shell = shell.map(|(shell, _)| shell);
        let prefix = Prefix::new(&config, &context, &known, &defs);
        let history: Vec<Member> = found.history.iter().map(Member::of).collect();
        // an "always" a stranger's substrate recorded allows nothing
        let answered: Vec<Member> = history
            .iter()
            .filter(|m| !distrusted.contains(&m.id))
            .cloned()
            .collect();
        let mut toolbox = Toolbox::new(
            &writer,
            client.clone(),
            root,
            Arc::clone(&config),
            tools,
            &answered,
            &found.inbox,
        )
        .map_err(ProgramError::Other)?;
        toolbox.set_servers(up);
        toolbox.set_planning(planning);
        toolbox.set_deferred(&context.deferred);
        toolbox.set_pins(pins.clone());
        toolbox.set_memory(
            context
                .own_tools
                .iter()
                .any(|t| t["name"] == crate::memory::TOOL),
        );
        // the person's request: the root session's own prompt, as its
        // person wrote it — a sub-agent's is its parent's (its own task is
        // the parent agent's words, never the person's)
        let request = match (config.depth > 1, &context_arg) {
            (true, Some((_, body))) => body["request"].as_str().map(str::to_owned),
            (true, None) => None,
            (false, _) => last_person_prompt(&history),
        };
        let task = (config.depth > 1).then(|| last_prompt(&history)).flatten();
        toolbox.set_inherit(serde_json::json!({
            "instructions": context.as_recorded().instructions,
            "git": context.git,
            "request": request,
        }));
        toolbox.set_agents(agents);
        toolbox.set_skills(context.skills.clone());
        let provider = match replayed.take() {
            Some((recorded, _)) => Ok(Arc::new(recorded)),
            None => connect(&config, &client).map(Arc::new),
        };
        // (a replay serves recorded answers in order: no judge takes one)
        if config.permission_mode == crate::config::PermissionMode::Auto && config.replay.is_none()
        {
            toolbox.set_judge(provider.clone(), request.as_deref(), task.as_deref());
        }
        if config.has_blocks() {
            toolbox.set_blocks(crate::toolbox::blocks::BlockTools {
                store: crate::blocks::store::BlockStore::new(client.clone(), config.identity()),
                provider: provider.clone(),
                model: config.model.clone(),
                fast_model: config.fast_model().to_owned(),
            });
        }
        // a run claimed again (its engine was lost) goes on counting from
        // what its first claim recorded
        let mut gates = Gates::new(&config);
        let mine = process.scopes.iter().find(|c| c.id == writer.me());
        let recorded = mine.map(|m| crate::contract::RunBody::parse(&m.body_value()));
        let resumed = recorded.filter(|r| r.process.epoch.is_some_and(|e| e > 1));
        if let Some(recorded) = &resumed {
            gates.resume(&recorded.totals);
        }
        // (and one whose last answer was recorded has only its end left)
        let answered = resumed
            .as_ref()
            .and_then(|_| match history.last().map(|m| &m.item) {
                Some(SessionItem::Answer(a))
                    if a.stop_reason == Some(model::StopReason::EndTurn) =>
                {
                    Some(a.text.clone())
                }
                _ => None,
            });
        Ok(Run {
            provider,
            gates,
            request: Request::new(prefix, Conversation::of_items(&history)),
            prompt: last_prompt(&history),
            knowledge: Knowledge {
                context,
                pins,
                fixed,
                shell: known.shell.clone(),
            },
            inbox: found.inbox,
            client,
            config,
            writer,
            toolbox,
            ended: answered.is_some(),
            last_answer: answered.unwrap_or_default(),
            resumed: resumed.is_some(),
            history_read: None,
            timing: None,
        })
    }
}

/// `pins`, then those the model added in the session's last run (they
/// carry on).
async fn with_carried(
    client: &Client,
    mut pins: Vec<String>,
    history: &[ChunkItem],
) -> Result<Vec<String>, ProgramError> {
    for id in carried_pins(client, history).await? {
        if !pins.contains(&id) {
            pins.push(id);
        }
    }
    Ok(pins)
}

/// The scopes the session's last context event written by an agent
/// pinned — what the model chose to keep knowing carries into the next
/// run — those this run may still read.
async fn carried_pins(client: &Client, history: &[ChunkItem]) -> Result<Vec<String>, ProgramError> {
    let last = history
        .iter()
        .rev()
        .find(|c| matches!(SessionItem::of(c), SessionItem::Context(Some(_))));
    let Some(event) = last else {
        return Ok(Vec::new());
    };
    let mut out = Vec::new();
    for id in catalog::related_ids(client, &event.id).await? {
        let opts = ScopeOpts {
            limit: Some(1),
            ..ScopeOpts::default()
        };
        if client.scope(&[id.as_str()], opts).await.is_ok() {
            out.push(id);
        }
    }
    Ok(out)
}

/// Says which servers failed to start (their tools are absent).
fn announce(writer: &SessionWriter, servers: &Servers, skipped: &[String]) {
    for why in skipped {
        let text = format!("a skill is skipped: {why}");
        writer.notify(&Notice::Status {
            text,
            waiting: false,
        });
    }
    for failed in servers.statuses.iter().filter(|s| s.status == "failed") {
        let why = failed.error.as_deref().unwrap_or("it did not start");
        let text = format!(
            "MCP server `{}` failed: {why}; its tools are not available",
            failed.name
        );
        writer.notify(&Notice::Status {
            text,
            waiting: false,
        });
    }
    for server in servers.statuses.iter().filter(|s| s.status == "needs-auth") {
        let text = format!(
            "MCP server `{}` needs you to sign in (`hc mcp login {}`); its tools are not \
             available",
            server.name, server.name
        );
        writer.notify(&Notice::Status {
            text,
            waiting: false,
        });
    }
    for server in &servers.statuses {
        for why in &server.skipped_tools {
            let text = format!("MCP server `{}`: {why}; that tool is skipped", server.name);
            writer.notify(&Notice::Status {
                text,
                waiting: false,
            });
        }
    }
}

/// The program tools this run is offered: a custom agent's (or `--tools`)
/// only, and none a bare deny rule refuses whole (`--disallowedTools
/// Bash`: the model is not offered what it may never call).
fn offered(
    mut tools: Vec<catalog::ProgramTool>,
    config: &AgentConfig,
) -> Vec<catalog::ProgramTool> {
    if let Some(only) = &config.tools {
        tools.retain(|t| only.contains(&t.def.name));
    }
    tools.retain(|t| !config.hidden.contains(&t.def.name));
    let refused: Vec<&str> = config
        .deny
        .iter()
        .filter(|rule| !rule.contains('('))
        .map(|rule| crate::names::program_of(rule.trim()))
        .collect();
    tools.retain(|t| !refused.contains(&t.def.name.as_str()));
    tools
}

/// Records where the servers stand on the context, with the resource
/// tools when one is up; answers the names of those up.
fn with_servers(context: &mut ContextBody, servers: &Servers) -> Vec<String> {
    context.mcp_servers = servers.statuses.clone();
    let up: Vec<String> = servers
        .connected
        .iter()
        .filter_map(|s| s.strip_prefix("mcp/").map(str::to_owned))
        .collect();
    if !up.is_empty() {
        context
            .own_tools
            .extend(crate::toolbox::resources::definitions());
    }
    up
}

/// The context event's body: every input of the request from outside
/// the substrate, read now, and the commit the programs were read at.
fn context_body(
    config: &AgentConfig,
    root: &std::path::Path,
    read_at: u64,
    tools: Vec<String>,
    me: &str,
) -> ContextBody {
    ContextBody {
        as_of: read_at,
        // the hermitcrab's constitution stands in for the base instructions
        system: match (&config.system, config.hermitcrab) {
            (Some(system), _) => system.clone(),
            (None, true) => String::new(),
            (None, false) => crate::sources::context::BASE_INSTRUCTIONS.to_owned(),
        },
        date: crate::sources::context::today(),
        cwd: root.to_string_lossy().into_owned(),
        add_dirs: config.add_dirs.clone(),
        platform: std::env::consts::OS.to_owned(),
        model: config.model.clone(),
        max_tokens: max_tokens(config),
        instructions: Vec::new(),
        tools,
        own_tools: catalog::own_tools(),
        process: me.to_owned(),
        mcp_servers: Vec::new(),
        git: None,
        skills: Vec::new(),
        agents: Vec::new(),
        memory: Vec::new(),
        memory_at: None,
        shell: None,
        deferred: Vec::new(),
    }
}

/// The text of the session's last prompt.
fn last_prompt(history: &[Member]) -> Option<String> {
    history.iter().rev().find_map(|m| match &m.item {
        SessionItem::Prompt(p) => Some(p.text.clone()),
        _ => None,
    })
}

/// The text of the session's last prompt a person wrote (not a message,
/// a hook's or a sub-agent's result brought as a prompt).
fn last_person_prompt(history: &[Member]) -> Option<String> {
    history.iter().rev().find_map(|m| match &m.item {
        SessionItem::Prompt(p) if p.from.is_none() => Some(p.text.clone()),
        _ => None,
    })
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

/// A retry or a silent stream, as a status line says it (Claude Code's
/// "Retrying in Ns · attempt x/y").
fn http_status(notice: &model::HttpNotice) -> String {
    match notice {
        model::HttpNotice::Retry(r) => format!(
            "retrying in {} · attempt {}/{} · {}",
            seconds(r.wait),
            r.attempt,
            r.of,
            r.error
        ),
        model::HttpNotice::Silent { silent_for, limit } => format!(
            "the model has sent nothing for {}; waiting up to {}",
            seconds(*silent_for),
            seconds(*limit)
        ),
    }
}

fn seconds(d: std::time::Duration) -> String {
    if d < std::time::Duration::from_secs(1) {
        format!("{} ms", d.as_millis())
    } else if d < std::time::Duration::from_secs(10) {
        format!("{:.1} s", d.as_secs_f64())
    } else {
        format!("{} s", d.as_secs())
    }
}

/// The client's retries in this process so far.
static RETRIES: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

/// How many times the model client has retried in this process.
pub(super) fn retries() -> u32 {
    RETRIES.load(std::sync::atomic::Ordering::Relaxed)
}

/// The model client the configuration names (an error says what to set);
/// its retries are shown to hosts as `status`.
fn connect(config: &AgentConfig, client: &Client) -> Result<model::Provider, String> {
    let status = client.clone();
    let observer = model::RetryObserver(Arc::new(move |n: &model::HttpNotice| {
        if let model::HttpNotice::Retry(_) = n {
            RETRIES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
        // (a silence is a wait: a terminal says it in place, its time
        // running on, not a new line every few seconds)
        let notice = Notice::Status {
            text: http_status(n),
            waiting: matches!(n, model::HttpNotice::Silent { .. }),
        };
        status.notify_now(notice.to_value());
    }));
    // with a fallback model, an overloaded model is left after three
    // overloaded answers in a row (as Claude Code), not the whole budget
    // of retries
    let overloaded_limit = (!config.fallback_models.is_empty()).then_some(3);
    let provider = match config.api {
        ApiKind::Anthropic => {
            let mut api = model::AnthropicConfig::from_env();
            api.http.on_retry = Some(observer);
            api.http.retry.overloaded_limit = overloaded_limit;
            api.validate().map_err(|e| e.to_string())?;
            model::ProviderConfig::Anthropic(api)
        }
        ApiKind::Openai => {
            let mut api = model::OpenAiConfig::from_env();
            api.http.on_retry = Some(observer);
            api.http.retry.overloaded_limit = overloaded_limit;
            api.validate().map_err(|e| e.to_string())?;
            model::ProviderConfig::OpenAi(api)
        }
    };
    model::Provider::new(provider).map_err(|e| e.to_string())
}
