//! A run shown as JSON lines (`--output-format json | stream-json`): the
//! sink that writes [`JsonOut`]'s lines — `system`/`init` when the run
//! starts, messages and stream events as they come, the `result` last.

use crate::print::{Init, JsonOut, OutputFormat};
use agent::contract::{Answer, Notice, ToolResult};
use anyhow::Result;
use hc_host::follow::{Begun, Ended, Sink};

/// Told the session's name as the lines show it.
type Told = Box<dyn Fn(&str) + Send>;

/// Shows one run as JSON lines.
pub struct JsonSink {
    /// Every line (stream-json), or only the result (json).
    stream: bool,
    /// Also `stream_event` lines.
    partial: bool,
    /// Told the session's name as lines show it, once known.
    on_session: Option<Told>,
    /// The writer, once the run started.
    out: Option<JsonOut>,
    /// The user line to echo when the run starts (`--replay-user-messages`).
    replay: Option<serde_json::Value>,
}

impl JsonSink {
    /// A sink printing `format` (JSON or stream-json), with stream events
    /// when `partial`.
    pub fn new(format: OutputFormat, partial: bool) -> JsonSink {
        JsonSink {
            stream: format == OutputFormat::StreamJson,
            partial,
            on_session: None,
            out: None,
            replay: None,
        }
    }

    /// Echoes `line` (the user message that started the run, with its
    /// `uuid`) once the run starts, as Claude Code's
    /// `--replay-user-messages` does.
    pub fn replaying(mut self, line: serde_json::Value) -> JsonSink {
        self.replay = Some(line);
        self
    }

    /// Tells `told` the session's name as the lines show it, when the run
    /// starts (the driving program's link answers control requests with it).
    pub fn telling(mut self, told: impl Fn(&str) + Send + 'static) -> JsonSink {
        self.on_session = Some(Box::new(told));
        self
    }
}

impl Sink for JsonSink {
    fn begin(&mut self, run: &Begun<'_>) -> Result<()> {
        let shown = crate::sessions::shown(run.engine.db(), run.session);
        if let Some(told) = &self.on_session {
            told(&shown);
        }
        let json = JsonOut::new(self.stream, self.partial, shown, run.config.model.clone());
        emit_init(&json, run)?;
        if let Some(line) = self.replay.take() {
            json.line(line);
        }
        self.out = Some(json);
        Ok(())
    }

    fn wants_servers(&self) -> bool {
        self.stream
    }

    fn notice(&mut self, notice: &Notice) {
        let Some(out) = &self.out else {
            return;
        };
        if let Notice::ModelFallback {
            trigger,
            original_model,
            fallback_model,
        } = notice
        {
            out.line(serde_json::json!({
                "type": "system", "subtype": "model_fallback", "trigger": trigger,
                "original_model": original_model, "fallback_model": fallback_model,
            }));
        }
        out.partial(notice);
    }

    fn wants_answers(&self) -> bool {
        self.stream
    }

    fn wants_results(&self) -> bool {
        self.stream
    }

    fn wants_sub_agents(&self) -> bool {
        true
    }

    fn answer(&mut self, answer: &Answer, parent: Option<&str>) {
        if let Some(out) = &self.out {
            out.assistant(answer, parent);
        }
    }

    fn results(&mut self, results: &[ToolResult], parent: Option<&str>) {
        if let Some(out) = &self.out {
            out.user(results, parent);
        }
    }

    fn ended(&mut self, ended: &Ended<'_>) -> Result<()> {
        let Some(out) = &self.out else {
            return Ok(());
        };
        let calls = hc_host::describe::model_calls(ended.engine, ended.session)?;
        let result = crate::print::result(
            ended.body,
            &hc_host::describe::answer_of(ended.done),
            ended.process,
            ended.session,
            calls,
            ended.started.elapsed().as_millis(),
            ended.config.tool_names,
        );
        out.result(result);
        Ok(())
    }
}

/// The `system`/`init` line: the tools, the servers, the slash commands
/// (chat's, the command files', the MCP prompts'), the skills, the agents.
fn emit_init(json: &JsonOut, run: &Begun<'_>) -> Result<()> {
    let (engine, config, process) = (run.engine, run.config, run.process);
    let cwd = engine.config().project_root.to_string_lossy().into_owned();
    let root = &engine.config().project_root;
    let (commands, _) = crate::commands::find(root);
    let mut slash_commands: Vec<String> = crate::commands::BUILT_IN
        .iter()
        .map(|c| c.trim_start_matches('/').to_owned())
        .collect();
    slash_commands.extend(commands.into_iter().map(|c| c.name));
    slash_commands.extend(crate::mcp_config::prompt_commands(engine.db())?);
    let home = std::env::var_os("HOME").map(std::path::PathBuf::from);
    let user = config.user_config_dir.as_deref().map(std::path::Path::new);
    let (skills, _) = agent::sources::skills::find(root, user, home.as_deref());
    let skills: Vec<String> = skills
        .into_iter()
        .filter(|s| config.keeps_source(root, std::path::Path::new(&s.path)))
        .map(|s| s.name)
        .collect();
    // the general sub-agent, then the custom ones (`subagent_type`)
    let (custom, _) = agent::sources::agents::find(root, user, home.as_deref());
    let mut agents = vec!["agent".to_owned()];
    agents.extend(config.agents.iter().map(|a| a.name.clone()));
    agents.extend(
        custom
            .into_iter()
            .filter(|a| config.keeps_source(root, &a.path))
            .map(|a| a.name)
            .filter(|n| !config.agents.iter().any(|a| a.name == *n)),
    );
    let tools: Vec<String> = hc_host::describe::tool_names(engine)
        .iter()
        .map(|t| config.tool_names.show(t).to_owned())
        .collect();
    json.init(&Init {
        tools: &tools,
        cwd: &cwd,
        mode: config.permission_mode,
        process,
        mcp_servers: &match run.servers {
            Some(servers) => servers.to_vec(),
            None => crate::mcp_config::statuses(engine.db())?,
        },
        slash_commands: &slash_commands,
        skills: &skills,
        agents: &agents,
    });
    Ok(())
}
