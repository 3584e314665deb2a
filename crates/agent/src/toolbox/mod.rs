//! The toolbox: what the model may call, and how a call becomes a result.
//! Tool calls are runs: each call is checked against its schema, put to
//! the `pre-tool` hooks, decided by the permissions, filled from the
//! session (`expect_sha256`, `cwd`), run as a program and awaited; the
//! `post-tool` hooks see its result. Consecutive calls of
//! `concurrency_safe` programs run together (all run, one await); any
//! other call runs alone, in order. The agent's own tools (`scope`,
//! `todo`, `ask_user`) are answered here without a run; a sub-agent is a
//! run of the `agent` program.
//!
//! The toolbox never sees the request: it answers results, and the run
//! records them — so nothing here can change what the model is sent.

pub(crate) mod auto;
pub(crate) mod background;
pub(crate) mod blocks;
mod derived;
mod early;
mod hooks;
pub(crate) mod message;
mod outcome;
mod own;
mod permit;
pub(crate) mod plan;
mod remember;
pub(crate) mod resources;
pub(crate) mod search;
pub(crate) mod structured;
mod sub;

pub(crate) use hooks::Hooks;
pub(crate) use outcome::{Outcome, Turn, unfinished};

use crate::catalog::{ProgramTool, is_own_tool};
use crate::config::AgentConfig;
use crate::contract::{Entry, Notice, Prompt, RunOutcome, ToolCall, ToolResult};
use crate::run::gates::Gates;
use crate::run::inbox::Inbox;
use crate::run::stop::Stop;
use crate::run::writer::{Notifier, SessionWriter};
use derived::Derived;
use model::ToolUseBlock;
use outcome::outcome_of;
use own::OwnTools;
use permit::{Permit, Permitted};
use protocol::{ChunkDecl, Client, NewPlacement, RunArgs};
use serde::Deserialize;
use serde_json::Value;
use std::path::PathBuf;
use std::sync::Arc;

/// The program that is a sub-agent.
pub(crate) const SUB_AGENT: &str = "agent";

/// A call after its checks: answered already, or to be run.
enum Prepared {
    Done(Outcome),
    Run {
        tool: Box<ProgramTool>,
        input: Value,
    },
}

/// What the model may call, and what calls need from earlier ones.
pub(crate) struct Toolbox {
    client: Client,
    notifier: Notifier,
    root: PathBuf,
    config: Arc<AgentConfig>,
    tools: Vec<ProgramTool>,
    permit: Permit,
    derived: Derived,
    hooks: Hooks,
    own: OwnTools,
    /// The MCP servers up for this run, by name (whose resources it reads).
    servers: Vec<String>,
    /// The skills listed in the system prompt.
    skills: Vec<crate::contract::SkillIndex>,
    /// The scopes the run has pinned (a sub-agent starts with them).
    pins: Vec<String>,
    /// The custom agents `subagent_type` names.
    agents: Vec<crate::sources::agents::AgentDef>,
    /// What a sub-agent inherits besides the pins: the instruction files
    /// (by chunk) and the git facts of this run's request.
    inherit: Value,
    /// Whether the `memory` tool is offered.
    memory: bool,
    /// The block tools, when offered.
    blocks: Option<blocks::BlockTools>,
    /// Whether the run is in plan mode with `exit_plan` offered (until a
    /// plan is approved).
    planning: bool,
    /// The tools sent deferred, each with its description: what
    /// `ToolSearch` searches.
    deferred: Vec<(String, String)>,
    /// A plan no one could approve: the run ends with it.
    planned: Option<String>,
    /// Sub-agents running in the background.
    background: background::Background,
    /// The structured output (`--json-schema`) so far.
    structured: structured::Structured,
    /// The calls of the reply streaming now that started early.
    early: early::Early,
}

/// At most this many calls of one reply run at once (a reply of a
/// thousand reads runs them ten at a time, not a thousand processes).
pub const MAX_PARALLEL: usize = 10;

impl Toolbox {
    /// A toolbox of `tools`, for a run configured by `config` whose
    /// session holds `history` (what earlier results and "always"
    /// answers left).
    pub fn new(
        writer: &SessionWriter,
        client: Client,
        root: PathBuf,
        config: Arc<AgentConfig>,
        tools: Vec<ProgramTool>,
        history: &[crate::contract::Member],
        inbox: &Inbox,
    ) -> Result<Toolbox, String> {
        let notifier = writer.notifier();
        Ok(Toolbox {
            permit: Permit::new(&config, root.clone(), notifier.clone(), history)?,
            hooks: Hooks::new(client.clone(), writer, root.clone(), &config, inbox.clone()),
            own: OwnTools::new(client.clone(), notifier.clone(), config.interactive),
            derived: Derived::of(&root, history),
            notifier,
            client,
            root,
            config,
            tools,
            servers: Vec::new(),
            skills: Vec::new(),
            pins: Vec::new(),
            agents: Vec::new(),
            inherit: Value::Null,
            memory: false,
            blocks: None,
            planning: false,
            deferred: Vec::new(),
            planned: None,
            background: background::Background::default(),
            structured: structured::Structured::default(),
            early: early::Early::default(),
        })
    }

    /// What the model gave as structured output, if it matched.
    pub fn structured_output(&self) -> Option<&Value> {
        self.structured.output()
    }

    /// The custom agents a sub-agent may be.
    pub fn set_agents(&mut self, agents: Vec<crate::sources::agents::AgentDef>) {
        self.agents = agents;
    }

    /// The scopes pinned now (a sub-agent started from here knows them).
    pub fn set_pins(&mut self, pins: Vec<String>) {
        self.pins = pins;
    }

    /// Offers the block tools.
    pub fn set_blocks(&mut self, tools: blocks::BlockTools) {
        self.blocks = Some(tools);
    }

    /// Offers `exit_plan` (a run in plan mode).
    pub fn set_planning(&mut self, offered: bool) {
        self.planning = offered;
    }

    /// The tools sent deferred (`names`), which `ToolSearch` loads.
    pub fn set_deferred(&mut self, names: &[String]) {
        self.deferred = (self.tools.iter())
            .filter(|t| names.contains(&t.def.name))
            .map(|t| (t.def.name.clone(), t.def.description.clone()))
            .collect();
    }

    /// `exit_plan`: the plan presented; approved, the run goes on in the
    /// mode the person chose; with no one to approve it, it ends the run.
    async fn exit_plan(
        &mut self,
        call: &ToolUseBlock,
        input: &Value,
        turn: &mut Turn<'_>,
    ) -> Result<Outcome, Stop> {
        if !self.planning {
            return Ok(Outcome::error(
                "not in plan mode (or the plan was approved already): carry out the work",
            ));
        }
        let interactive = self.config.interactive;
        let (outcome, verdict) = plan::present(call, input, interactive, turn).await?;
        match verdict {
            Some(plan::Verdict::Approved(mode)) => {
                // From now on in this run: its own calls, the sub-agents it
                // starts (their configuration is a copy of its) and what its
                // hooks are told.
                self.permit.set_mode(mode);
                Arc::make_mut(&mut self.config).permission_mode = mode;
                self.hooks.set_mode(mode);
                self.planning = false;
            }
            Some(plan::Verdict::Feedback(_)) => {}
            None if !outcome.is_error => {
                self.planned = input["plan"].as_str().map(str::to_owned);
            }
            None => {}
        }
        Ok(outcome)
    }

    /// Offers the `memory` tool.
    pub fn set_memory(&mut self, offered: bool) {
        self.memory = offered;
    }

    /// What a sub-agent inherits besides the pins.
    pub fn set_inherit(&mut self, inherit: Value) {
        self.inherit = inherit;
    }

    /// The skills the `skill` tool loads.
    pub fn set_skills(&mut self, skills: Vec<crate::contract::SkillIndex>) {
        self.skills = skills;
    }

    /// `skill`: the skill's body and files; its allowed tools allowed from
    /// now on in this run.
    fn load_skill(&mut self, input: &Value) -> Outcome {
        let name = input["name"].as_str().unwrap_or_default();
        let trusted = self.config.project_trusted;
        match crate::sources::skills::load(&self.skills, name, trusted) {
            Ok(text) => {
                let allowed = self
                    .skills
                    .iter()
                    .find(|s| s.name == name)
                    .map(|s| crate::sources::skills::granted(s, trusted).to_vec())
                    .unwrap_or_default();
                for rule in &allowed {
                    self.permit.allow(rule);
                }
                Outcome {
                    text,
                    ..Outcome::default()
                }
            }
            Err(why) => Outcome::error(why),
        }
    }

    /// Auto mode's judge: `provider` and the fast model, judging calls of
    /// a run answering `request`.
    pub fn set_judge(
        &mut self,
        provider: Result<Arc<model::Provider>, String>,
        request: Option<&str>,
        task: Option<&str>,
    ) {
        let rules = [
            ("allow", &self.config.allow),
            ("deny", &self.config.deny),
            ("ask", &self.config.ask),
        ]
        .iter()
        .map(|(name, list)| {
            format!(
                "{name}: {}",
                if list.is_empty() {
                    "(none)".to_owned()
                } else {
                    list.join(", ")
                }
            )
        })
        .collect::<Vec<_>>()
        .join("\n");
        self.permit.set_judge(auto::Judge {
            provider,
            model: self.config.fast_model().to_owned(),
            request: request.map(str::to_owned),
            task: task.map(str::to_owned),
            rules,
        });
    }

    /// Whether reading `path` now would run without asking (a compaction
    /// reads again only such files).
    pub fn reads_quietly(&self, path: &str) -> bool {
        self.permit.reads_quietly(path)
    }

    /// The text of skill `name` as loading it gives it (a compaction
    /// gives it back).
    pub fn skill_text(&self, name: &str) -> Option<String> {
        crate::sources::skills::load(&self.skills, name, self.config.project_trusted).ok()
    }

    /// The MCP servers up for this run (their resource tools offered).
    pub fn set_servers(&mut self, servers: Vec<String>) {
        self.servers = servers;
    }

    /// The hooks.
    pub fn hooks(&self) -> &Hooks {
        &self.hooks
    }

    /// Offers `tools` from now on (a new context event read them).
    pub fn set_tools(&mut self, tools: Vec<ProgramTool>) {
        self.tools = tools;
    }

    /// The reply's calls cut into batches: a run of at most
    /// [`MAX_PARALLEL`] calls that may run beside each other, or one call
    /// alone.
    pub fn batches(&self, calls: &[ToolUseBlock]) -> Vec<std::ops::Range<usize>> {
        let mut out = Vec::new();
        let mut start = 0;
        while start < calls.len() {
            let end = if self.parallel(&calls[start]) {
                start
                    + calls[start..]
                        .iter()
                        .take(MAX_PARALLEL)
                        .take_while(|c| self.parallel(c))
                        .count()
            } else {
                start + 1
            };
            out.push(start..end);
            start = end;
        }
        out
    }

    /// Whether a call may run beside others.
    fn parallel(&self, call: &ToolUseBlock) -> bool {
        self.tool(&call.name)
            .is_some_and(|t| t.body.concurrency_safe)
    }

    fn tool(&self, name: &str) -> Option<&ProgramTool> {
        self.tools.iter().find(|t| t.def.name == name)
    }

    /// Runs one batch: each call's outcome, in order, and the stop that
    /// ends the run, if one came (every call still has an outcome).
    pub async fn run_batch(
        &mut self,
        calls: &[ToolUseBlock],
        turn: &mut Turn<'_>,
    ) -> (Vec<Outcome>, Option<Stop>) {
        let mut prepared = Vec::with_capacity(calls.len());
        // the runs that started while the reply streamed, by call
        let mut started = Vec::with_capacity(calls.len());
        for call in calls {
            if let Some((p, start)) = self.take_early(call) {
                prepared.push(p);
                started.push(Some(start));
                continue;
            }
            started.push(None);
            match self.prepare(call, turn).await {
                Ok(p) => prepared.push(p),
                Err(stop) => {
                    for start in started.into_iter().flatten() {
                        early::cancel(&self.client, start).await;
                    }
                    return (unfinished(calls.len()), Some(stop));
                }
            }
        }
        // (an early run no call of the reply took — its input changed
        // after its block stopped — is not the call's)
        self.cancel_early().await;
        self.cap_agents(&mut prepared);
        // Each call answered already, or its run started (its outcome, for
        // now, only its process).
        let me = &*self;
        let runs = prepared.iter().zip(started).map(|(p, start)| async move {
            let begun = match (p, start) {
                (Prepared::Done(o), _) => return o.clone(),
                (Prepared::Run { .. }, Some(start)) => start
                    .await
                    .unwrap_or_else(|e| Err(format!("the run's start was lost: {e}"))),
                (Prepared::Run { tool, input }, None) => me.start_run(tool, input).await,
            };
            match begun {
                Ok(process) => Outcome {
                    process: Some(process),
                    ..Outcome::default()
                },
                Err(why) => Outcome::error(why),
            }
        });
        let mut finished = futures_util::future::join_all(runs).await;
        // a sub-agent asked to run in the background answers now
        for (p, outcome) in prepared.iter().zip(finished.iter_mut()) {
            if let (Prepared::Run { tool, input }, Some(process)) = (p, &outcome.process)
                && tool.def.name == SUB_AGENT
                && background::asked(input)
            {
                *outcome = self.background.started(process.clone(), input);
            }
        }
        let running: Vec<String> = finished
            .iter()
            .filter(|o| o.data["background"] != serde_json::json!(true))
            .filter_map(|o| o.process.clone())
            .collect();
        self.record_calls(calls, &prepared, &finished, turn.writer);
        let interrupted = self.await_runs(&running, &mut finished, turn.inbox).await;
        if !interrupted {
            let read_only = |name: &str| self.tool(name).is_some_and(|t| t.body.read_only);
            self.hooks.post_tool(calls, &mut finished, read_only).await;
        }
        for (call, outcome) in calls.iter().zip(&finished) {
            self.permit.noted(&call.id, &outcome.text);
        }
        let stop = match interrupted {
            true => Some(Stop::Interrupted),
            false => self.planned.take().map(Stop::Planned),
        };
        (finished, stop)
    }

    /// Sub-agents past `max_parallel_agents` (those of this batch beside
    /// those in the background) are refused, saying so.
    fn cap_agents(&self, prepared: &mut [Prepared]) {
        let most = self
            .config
            .max_parallel_agents
            .unwrap_or(background::MAX_PARALLEL_AGENTS) as usize;
        let mut running = self.background.count();
        for p in prepared.iter_mut() {
            let Prepared::Run { tool, .. } = p else {
                continue;
            };
            if tool.def.name != SUB_AGENT {
                continue;
            }
            if running >= most {
                *p = Prepared::Done(Outcome::error(format!(
                    "not started: at most {most} sub-agents run at once (max_parallel_agents), \
                     and {running} are running; wait for one to end, then start this one"
                )));
            } else {
                running += 1;
            }
        }
    }

    /// The results of background sub-agents that have ended (all of
    /// them, waited for, when `wait`), as prompts for the model.
    pub async fn background_results(&mut self, wait: bool, inbox: &Inbox) -> Vec<Prompt> {
        self.background.ended(&self.client, wait, inbox).await
    }

    /// Whether sub-agents still run in the background.
    pub fn background_running(&self) -> bool {
        self.background.count() > 0
    }

    /// Starts a program run for a call; answers its process id.
    async fn start_run(&self, tool: &ProgramTool, input: &Value) -> Result<String, String> {
        self.client
            .run(&tool.def.name, self.run_args(tool, input))
            .await
            .map_err(|e| format!("the `{}` program could not be started: {e}", tool.def.name))
    }

    /// The arguments of a call's run: its input, and what a sub-agent is
    /// handed.
    fn run_args(&self, tool: &ProgramTool, input: &Value) -> RunArgs {
        let input_type = tool.body.input_type.clone().unwrap_or_default();
        let mut args = RunArgs {
            chunks: vec![
                ChunkDecl::generated()
                    .body(input.clone())
                    .on(NewPlacement::instance(input_type)),
            ],
            ..RunArgs::default()
        };
        if tool.def.name == SUB_AGENT {
            let kind = input["subagent_type"].as_str();
            let def = kind.and_then(|k| self.agents.iter().find(|a| a.name == k));
            let handed = sub::Handed {
                pins: &self.pins,
                inherit: &self.inherit,
            };
            sub::sub_agent_args(&self.config, &mut args, input, handed, def);
        }
        args
    }

    /// A permitted call's input as its run gets it: what the agent fills
    /// in, and what the run must leave out.
    fn finish_input(&self, name: &str, input: Value) -> Value {
        let mut input = self.derived.fill(&self.root, name, input);
        let skip = self.permit.exclusions(name);
        if let (false, Some(fields)) = (skip.is_empty(), input.as_object_mut()) {
            fields.insert("exclude".into(), serde_json::json!(skip));
        }
        input
    }

    /// Schema, hooks, permission, fill — or the agent's own tool,
    /// answered here.
    async fn prepare(
        &mut self,
        call: &ToolUseBlock,
        turn: &mut Turn<'_>,
    ) -> Result<Prepared, Stop> {
        let input = call.input_value();
        if is_own_tool(&call.name) {
            return Ok(Prepared::Done(
                self.own.answer(call, &input, &self.hooks, turn).await?,
            ));
        }
        if let Some(tools) = &self.blocks
            && blocks::TOOLS.contains(&call.name.as_str())
        {
            return Ok(Prepared::Done(tools.answer(call, &input, turn).await));
        }
        if call.name == "memory" && self.memory {
            return Ok(Prepared::Done(
                self.change_memory(call, &input, turn).await?,
            ));
        }
        if call.name == message::TOOL && self.config.background && self.config.depth <= 1 {
            let sent = message::send(&self.client, turn.writer, &input).await;
            return Ok(Prepared::Done(sent));
        }
        if let Some(schema) = self
            .config
            .output_schema
            .as_ref()
            .filter(|_| call.name == structured::TOOL)
        {
            let attempts = self
                .config
                .output_attempts
                .unwrap_or(structured::MAX_ATTEMPTS);
            let answered = self.structured.answer(schema, &input, attempts)?;
            return Ok(Prepared::Done(answered));
        }
        if call.name == plan::TOOL {
            return Ok(Prepared::Done(self.exit_plan(call, &input, turn).await?));
        }
        if call.name == search::TOOL && !self.deferred.is_empty() {
            return Ok(Prepared::Done(search::answer(&input, &self.deferred)));
        }
        if call.name == "skill" && !self.skills.is_empty() {
            return Ok(Prepared::Done(self.load_skill(&input)));
        }
        if resources::RESOURCE_TOOLS.contains(&call.name.as_str()) && !self.servers.is_empty() {
            return Ok(
                match resources::prepare(&call.name, &input, &self.servers) {
                    Ok((tool, input)) => Prepared::Run {
                        tool: Box::new(tool),
                        input,
                    },
                    Err(outcome) => Prepared::Done(outcome),
                },
            );
        }
        let Some(tool) = self.tool(&call.name).cloned() else {
            let names: Vec<&str> = self.tools.iter().map(|t| t.def.name.as_str()).collect();
            return Ok(Prepared::Done(Outcome::error(format!(
                "there is no tool `{}`; the tools are: {}",
                call.name,
                names.join(", ")
            ))));
        };
        if call.name == SUB_AGENT
            && let Some(refusal) =
                sub::depth_refusal(&self.config).or_else(|| sub::unknown_kind(&input, &self.agents))
        {
            return Ok(Prepared::Done(Outcome::error(refusal)));
        }
        if let Err(why) = protocol::schema::check(&tool.def.schema, &input) {
            return Ok(Prepared::Done(Outcome::error(format!(
                "invalid input for `{}`: {why}",
                call.name
            ))));
        }
        let asked = input.clone();
        let (input, hooked) = match self.hooks.pre_tool(call, input, &tool).await {
            Ok(done) => done,
            Err(outcome) => return Ok(Prepared::Done(outcome)),
        };
        // a hook's input instead of the model's: checked as any
        if input != asked
            && let Err(why) = protocol::schema::check(&tool.def.schema, &input)
        {
            return Ok(Prepared::Done(Outcome::error(format!(
                "the input a pre-tool hook gave for `{}` is not valid: {why}",
                call.name
            ))));
        }
        // (a call that cannot succeed fails before anyone is asked)
        if let Some(why) = self.derived.cannot_succeed(&self.root, &call.name, &input) {
            return Ok(Prepared::Done(Outcome::error(why)));
        }
        let input = match self
            .permit
            .check(call, &input, &tool, hooked, &self.hooks, turn)
            .await?
        {
            Permitted::No(refusal) => return Ok(Prepared::Done(refusal)),
            Permitted::Yes(None) => input,
            // what the person (or program) gave instead: judged and checked
            Permitted::Yes(Some(instead)) => instead,
        };
        let input = self.finish_input(&call.name, input);
        Ok(Prepared::Run {
            tool: Box::new(tool),
            input,
        })
    }

    /// Waits for the runs (one await); an interrupt cancels them. Answers
    /// whether it was interrupted.
    async fn await_runs(
        &self,
        running: &[String],
        outcomes: &mut [Outcome],
        inbox: &Inbox,
    ) -> bool {
        if running.is_empty() {
            return false;
        }
        let ids: Vec<&str> = running.iter().map(String::as_str).collect();
        let done = tokio::select! {
            done = self.client.await_processes(&ids) => done,
            () = inbox.wait_interrupt() => {
                for id in &ids {
                    let _ = self.client.cancel(id).await;
                }
                for o in outcomes.iter_mut().filter(|o| o.process.is_some()) {
                    *o = Outcome {
                        process: o.process.clone(),
                        ..Outcome::error("interrupted: the person stopped the run")
                    };
                }
                return true;
            }
        };
        let Ok(done) = done else {
            if self.client.is_closed() {
                return true; // the engine is gone: the run ends here
            }
            for o in outcomes.iter_mut().filter(|o| o.process.is_some()) {
                o.is_error = true;
                o.text = "the engine did not report how the run ended".into();
            }
            return false;
        };
        for o in outcomes.iter_mut() {
            if let Some(result) = o.process.as_ref().and_then(|p| done.get(p)) {
                *o = outcome_of(o.process.clone(), result);
            }
        }
        false
    }

    /// The `tool-call` chunks of a batch, with their processes: told to
    /// hosts, and committed while the calls run.
    fn record_calls(
        &self,
        calls: &[ToolUseBlock],
        prepared: &[Prepared],
        outcomes: &[Outcome],
        writer: &mut SessionWriter,
    ) {
        let mut entries = Vec::new();
        for ((call, p), o) in calls.iter().zip(prepared).zip(outcomes) {
            let input = match p {
                Prepared::Run { input, .. } => input.clone(),
                Prepared::Done(_) => call.input_value(),
            };
            self.notifier.notify(&Notice::ToolStart {
                tool_use_id: call.id.clone(),
                program: call.name.clone(),
                input: input.clone(),
            });
            entries.push(Entry::of(&ToolCall {
                program: call.name.clone(),
                process: o.process.clone(),
                tool_use_id: call.id.clone(),
                input,
            }));
        }
        writer.commit_in_background(entries, false);
    }

    /// The `tool-result` bodies of a batch, in call order: learnt from
    /// (hashes, the shell's directory, sub-agents' totals) and told to
    /// hosts.
    pub fn results(
        &mut self,
        calls: &[ToolUseBlock],
        outcomes: Vec<Outcome>,
        gates: &mut Gates,
    ) -> Vec<ToolResult> {
        let mut results = Vec::with_capacity(calls.len());
        for (call, o) in calls.iter().zip(outcomes) {
            self.derived
                .observe(&self.root, &call.name, &o.data, o.is_error);
            if let Some(work) = &o.work {
                gates.add_tool(work);
            }
            if call.name == SUB_AGENT
                && let Some(process) = &o.process
                && let Ok(child) = RunOutcome::deserialize(&o.data)
            {
                gates.add_child(process, &child);
            }
            let shell = crate::names::program_of(&call.name) == "shell";
            self.notifier.notify(&Notice::ToolEnd {
                tool_use_id: call.id.clone(),
                process: o.process.clone(),
                is_error: o.is_error,
                denied: o.denied,
                allow: o.allow.into_vec(),
                // (a failure's reason is said; a denial's only when auto
                // mode's judge gave one)
                said: said_of(
                    &o.text,
                    shell,
                    o.is_error && (!o.denied || o.text.starts_with(auto::DENIED)),
                ),
                exit_code: shell.then(|| o.data["exit_code"].as_i64()).flatten(),
                timed_out: shell && o.data["timed_out"] == true,
            });
            results.push(ToolResult {
                program: call.name.clone(),
                process: o.process,
                tool_use_id: call.id.clone(),
                text: o.text,
                is_error: o.is_error,
                data: Some(o.data).filter(|d| !d.is_null()),
                denied: o.denied,
            });
        }
        results
    }
}

/// What a person sees under a call's line: a shell's output's end, a
/// failure's reason's start, each at most `SAID_BYTES` (cut at a
/// character's edge).
fn said_of(text: &str, shell: bool, failed: bool) -> Option<String> {
    use crate::contract::SAID_BYTES;
    if shell {
        let mut from = text.len().saturating_sub(SAID_BYTES);
        while !text.is_char_boundary(from) {
            from += 1;
        }
        return Some(text[from..].to_owned());
    }
    if failed {
        let mut to = text.len().min(SAID_BYTES);
        while !text.is_char_boundary(to) {
            to -= 1;
        }
        return Some(text[..to].to_owned());
    }
    None
}
