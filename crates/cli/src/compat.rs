//! Claude Code's print-mode invocation, as programs on the Agent SDK make
//! it: `hc --output-format stream-json --verbose --input-format
//! stream-json …` (print-mode flags and no command) is `hc run …`; every
//! flag `hc run` takes is applied, or refused with a usage error that
//! says why — never accepted and ignored. (A flag it does not know at all
//! is a usage error too, unless an Agent SDK drives it: then a newer
//! SDK's flag is said on stderr and left out.)

use agent::AgentConfig;
use agent::names::ToolNames;
use std::ffi::OsString;

/// The levels `--effort` takes (Claude Code's, and the Agent SDK's).
const EFFORTS: &[&str] = &["low", "medium", "high", "xhigh", "max"];

/// Extended thinking's budget with `--thinking enabled` and none given.
const DEFAULT_THINKING: u32 = 10_000;

/// `--input-format`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum InputFormat {
    /// The prompt as an argument or on stdin.
    #[default]
    Text,
    /// JSON lines on stdin: user messages and control requests.
    StreamJson,
}

/// The flags of Claude Code's print mode that `hc run` takes beside its own.
#[derive(clap::Args, Clone, Debug, Default)]
pub struct SdkFlags {
    /// Print mode (the only mode of `hc run`; accepted for Claude Code's `-p`).
    #[arg(short = 'p', long = "print")]
    pub print: bool,
    /// Every line of a shell's output and of a failed tool's reason (text
    /// output; stream-json always says everything).
    #[arg(long)]
    pub verbose: bool,
    /// text, or stream-json: user messages and control requests as JSON
    /// lines on stdin, one turn per message (the Agent SDK's way).
    #[arg(long, value_enum, default_value = "text")]
    pub input_format: InputFormat,
    /// The system prompt in place of hermitcrab's base instructions ("" for none).
    #[arg(long, value_name = "TEXT")]
    pub system_prompt: Option<String>,
    /// The system prompt from a file.
    #[arg(long, value_name = "FILE", conflicts_with = "system_prompt")]
    pub system_prompt_file: Option<std::path::PathBuf>,
    /// Text added at the end of the system prompt.
    #[arg(long, value_name = "TEXT")]
    pub append_system_prompt: Option<String>,
    /// The only tools offered (comma-separated, either naming; "" none, "default" all).
    #[arg(long, value_name = "LIST")]
    pub tools: Option<String>,
    /// Rules allowed without asking (comma- or space-separated), e.g. "Read,Bash(git:*)".
    #[arg(
        long = "allowedTools",
        visible_alias = "allowed-tools",
        value_name = "RULES"
    )]
    pub allowed_tools: Vec<String>,
    /// Rules refused; a bare tool name is not offered at all.
    #[arg(
        long = "disallowedTools",
        visible_alias = "disallowed-tools",
        value_name = "RULES"
    )]
    pub disallowed_tools: Vec<String>,
    /// Permission questions go to the program driving the run: `stdio`
    /// (`can_use_tool` control requests).
    #[arg(long, value_name = "TOOL")]
    pub permission_prompt_tool: Option<String>,
    /// A name (a UUID) for a new session, kept on it: `--resume` and `hc
    /// trace` take it, and stream-json lines carry it as `session_id`.
    #[arg(long, value_name = "UUID")]
    pub session_id: Option<String>,
    /// Extended thinking's budget in tokens.
    #[arg(long, value_name = "N")]
    pub max_thinking_tokens: Option<u32>,
    /// Extended thinking: a budget in tokens (`--thinking 8000`), or
    /// enabled | disabled | adaptive.
    #[arg(long, value_name = "TOKENS|MODE")]
    pub thinking: Option<String>,
    /// The tool names the model sees: claude (Bash, Read, …) or hermitcrab
    /// (shell, read, …); claude by default with --input-format stream-json.
    #[arg(long, value_name = "NAMES")]
    pub tool_names: Option<String>,
    /// Models to go on with, in order (comma-separated), when the model
    /// is overloaded after the retries or not found.
    #[arg(long, value_name = "MODEL[,MODEL…]")]
    pub fallback_model: Option<String>,
    /// Claude Code's settings (a settings.json, or the JSON itself):
    /// permissions, model, hooks applied; any other key refused.
    #[arg(long, value_name = "FILE_OR_JSON")]
    pub settings: Option<String>,
    /// With --resume/--continue: go on in a new session forked from it.
    #[arg(long)]
    pub fork_session: bool,
    /// Echo each user message read on stdin (stream-json), with its `uuid`.
    #[arg(long)]
    pub replay_user_messages: bool,
    /// Which files' settings apply (comma-separated: user, project,
    /// local; "" none): config files, instructions, skills, agents.
    #[arg(long, value_name = "LIST")]
    pub setting_sources: Option<String>,
    /// How much effort the model spends: low, medium, high, xhigh or max
    /// (the API's `output_config.effort`).
    #[arg(long, value_name = "LEVEL")]
    pub effort: Option<String>,
    /// Structured output: the JSON Schema (as JSON) the run's answer must
    /// match; the model gives it by calling `StructuredOutput`, and it is
    /// `structured_output` in the JSON result.
    #[arg(long, value_name = "SCHEMA")]
    pub json_schema: Option<String>,
    /// Refused: hook runs are not streamed as events yet (they are in
    /// the session: `hc trace`).
    #[arg(long)]
    pub include_hook_events: bool,
    /// Beta features for the `anthropic-beta` header (comma or space separated).
    #[arg(long, value_name = "LIST")]
    pub betas: Option<String>,
    /// How thinking comes back: summarized or omitted (with thinking on).
    #[arg(long, value_name = "MODE")]
    pub thinking_display: Option<String>,
    /// The program's first line is its `initialize` request, read before
    /// anything starts: the MCP servers in it (and the fields
    /// `--initialize-fields` names) apply from the start, as flags would.
    #[arg(long)]
    pub await_initialize: bool,
    /// What else `initialize` carries that flags would have: `settings`,
    /// `disallowedTools`, `additionalDirectories` (comma-separated).
    #[arg(long, value_name = "LIST")]
    pub initialize_fields: Option<String>,
}

/// `hc FLAGS…` with print-mode flags and no command is `hc run FLAGS…`,
/// as Claude Code's `claude -p …` and the Agent SDK's spawn; `hc "a
/// prompt"` (words, not a command) is `hc run "a prompt"`; and, for
/// `hc run`, a long flag it does not know is left out with a line on
/// stderr (with its value, when it has one and no prompt can follow).
pub fn rewrite(args: Vec<OsString>, known: &[String]) -> Vec<OsString> {
    // `hc --store URL …`: hc's own flag before any command, set aside and
    // put back after the command the rest makes
    let (args, lead) = leading_store(args);
    let mut out = rewrite_command(args, known);
    let at = out.len().min(2);
    out.splice(at..at, lead);
    out
}

/// `args` without their leading `--store URL` (or `--store=URL`), and it.
fn leading_store(mut args: Vec<OsString>) -> (Vec<OsString>, Vec<OsString>) {
    let mut lead = Vec::new();
    loop {
        match args.get(1).map(|a| a.to_string_lossy().into_owned()) {
            Some(a) if a == "--store" && args.len() > 2 => lead.extend(args.drain(1..3)),
            Some(a) if a.starts_with("--store=") => lead.push(args.remove(1)),
            _ => return (args, lead),
        }
    }
}

/// [`rewrite`] once a leading `--store` is set aside.
fn rewrite_command(args: Vec<OsString>, known: &[String]) -> Vec<OsString> {
    let mut args = args;
    let first = args.get(1).map(|a| a.to_string_lossy().into_owned());
    if let Some(first) = first
        && ((first.starts_with('-')
            && !["-h", "--help", "-V", "--version"].contains(&first.as_str()))
            || (!first.starts_with('-') && first.trim().contains(char::is_whitespace)))
    {
        // (A single word is left to be a command, so a typo of one is
        // said, not sent to the model.)
        args.insert(1, OsString::from("run"));
    }
    if args.get(1).is_none_or(|a| a != "run") {
        return args;
    }
    let streaming = args.iter().any(|a| a == "stream-json")
        && args
            .iter()
            .any(|a| a.to_string_lossy().starts_with("--input-format"));
    // Driven by an Agent SDK (its input stream-json, or its entrypoint
    // variable): a flag a newer SDK passes is said and left out, so the
    // program still works. Anyone else's unknown flag is a usage error
    // (clap's, naming the nearest flag): a typo never reaches the model.
    let driven =
        streaming || std::env::var("CLAUDE_CODE_ENTRYPOINT").is_ok_and(|e| e.starts_with("sdk"));
    if !driven {
        return args;
    }
    let mut out: Vec<OsString> = args[..2].to_vec();
    let mut rest = args.into_iter().skip(2).peekable();
    while let Some(arg) = rest.next() {
        let text = arg.to_string_lossy().into_owned();
        if text == "--" {
            out.push(arg);
            out.extend(rest);
            break;
        }
        let Some(name) = text
            .strip_prefix("--")
            .map(|n| n.split('=').next().unwrap_or(n))
        else {
            out.push(arg);
            continue;
        };
        if known.iter().any(|k| k == name) {
            out.push(arg);
            continue;
        }
        eprintln!("hc: --{name} is not supported by hermitcrab yet; it is ignored");
        let valued = !text.contains('=')
            && streaming
            && rest
                .peek()
                .is_some_and(|next| !next.to_string_lossy().starts_with('-'));
        if valued {
            rest.next();
        }
    }
    out
}

/// The schema `--json-schema` gives: a JSON object that is a valid JSON
/// Schema (an error says what is wrong with it).
fn output_schema(text: &str) -> Result<serde_json::Value, String> {
    let schema: serde_json::Value = serde_json::from_str(text).map_err(|e| {
        format!(
            "--json-schema: not JSON ({e}); give the schema itself, e.g. '{{\"type\":\"object\"}}'"
        )
    })?;
    if !schema.is_object() {
        return Err("--json-schema: the schema must be a JSON object".to_owned());
    }
    protocol::schema::check_schema(&schema)
        .map_err(|e| format!("--json-schema: not a valid JSON Schema ({e})"))?;
    Ok(schema)
}

/// Splits a list of rules as Claude Code takes them: commas or spaces,
/// but not inside a rule's parentheses.
pub fn rules(lists: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    for list in lists {
        let mut depth = 0usize;
        let mut current = String::new();
        for c in list.chars() {
            match c {
                '(' => depth += 1,
                ')' => depth = depth.saturating_sub(1),
                ',' | ' ' if depth == 0 => {
                    if !current.trim().is_empty() {
                        out.push(current.trim().to_owned());
                    }
                    current.clear();
                    continue;
                }
                _ => {}
            }
            current.push(c);
        }
        if !current.trim().is_empty() {
            out.push(current.trim().to_owned());
        }
    }
    out
}

impl SdkFlags {
    /// Whether the run is driven over stdin (`--input-format stream-json`).
    pub fn streaming(&self) -> bool {
        self.input_format == InputFormat::StreamJson
    }

    /// `--setting-sources`, read.
    pub fn sources(&self) -> Result<Option<agent::SettingSources>, String> {
        self.setting_sources
            .as_deref()
            .map(agent::SettingSources::parse)
            .transpose()
            .map_err(|e| format!("--setting-sources: {e}"))
    }

    /// Leaves out of `files` those `--setting-sources` does not name.
    pub fn keep_sources(&self, files: &mut hc_host::config::Files) -> Result<(), String> {
        let Some(sources) = self.sources()? else {
            return Ok(());
        };
        files.files.retain(|f| match f.project {
            true => sources.project,
            false => sources.user,
        });
        if !sources.project {
            files.mcp_json = None;
        }
        Ok(())
    }

    /// Whether permission questions go to the program (`stdio`).
    pub fn prompts_over_stdio(&self) -> bool {
        self.permission_prompt_tool.as_deref() == Some("stdio")
    }

    /// Applies what hermitcrab honours to `config`; says on stderr what it
    /// does not yet. An error is a usage error (a file that cannot be read,
    /// a value that is not one).
    pub fn apply(&self, config: &mut AgentConfig) -> Result<(), String> {
        if self.replay_user_messages && !self.streaming() {
            return Err(
                "--replay-user-messages echoes the user messages read as stream-json: \
                 give it with --input-format stream-json"
                    .to_owned(),
            );
        }
        if let Some(text) = &self.system_prompt {
            config.system = Some(text.clone());
        }
        if let Some(path) = &self.system_prompt_file {
            let text = std::fs::read_to_string(path).map_err(|e| {
                format!(
                    "--system-prompt-file {}: cannot be read ({e})",
                    path.display()
                )
            })?;
            config.system = Some(text);
        }
        if let Some(text) = &self.append_system_prompt {
            config.system_append = Some(match config.system_append.take() {
                Some(before) => format!("{before}\n\n{text}"),
                None => text.clone(),
            });
        }
        match self.tools.as_deref().map(str::trim) {
            None | Some("default") => {}
            Some(list) => {
                config.tools = Some(
                    rules(&[list.to_owned()])
                        .iter()
                        .map(|t| agent::names::program_of(t).to_owned())
                        .collect(),
                );
            }
        }
        for rule in rules(&self.allowed_tools) {
            agent::permissions::Rule::parse(&rule).map_err(|e| e.to_string())?;
            config.allow.push(rule);
        }
        for rule in rules(&self.disallowed_tools) {
            agent::permissions::Rule::parse(&rule).map_err(|e| e.to_string())?;
            config.deny.push(rule);
        }
        for beta in self
            .betas
            .iter()
            .flat_map(|b| b.split([',', ' ']))
            .filter(|b| !b.trim().is_empty())
        {
            if !config.betas.iter().any(|have| have == beta.trim()) {
                config.betas.push(beta.trim().to_owned());
            }
        }
        for model in self
            .fallback_model
            .iter()
            .flat_map(|m| m.split(','))
            .map(str::trim)
            .filter(|m| !m.is_empty())
        {
            // (an alias — `sonnet` — names today's model, as `--model` does)
            let model = config.resolve_model(model);
            if model == config.model {
                return Err(format!(
                    "--fallback-model {model}: it is the model itself; give another model to go on with"
                ));
            }
            if !config.fallback_models.contains(&model) {
                config.fallback_models.push(model);
            }
        }
        config.setting_sources = self.sources()?;
        if self.include_hook_events {
            return Err(
                "--include-hook-events: hermitcrab does not stream hook runs as events yet; \
                 leave it out (each hook run is in the session: `hc trace SESSION`)"
                    .to_owned(),
            );
        }
        if let Some(text) = &self.json_schema {
            config.output_schema = Some(output_schema(text)?);
            config.output_attempts = std::env::var("MAX_STRUCTURED_OUTPUT_RETRIES")
                .ok()
                .and_then(|n| n.trim().parse().ok())
                .filter(|n| *n > 0);
        }
        if let Some(level) = &self.effort {
            let level = level.trim().to_ascii_lowercase();
            if !EFFORTS.contains(&level.as_str()) {
                return Err(format!(
                    "--effort {level}: give one of {}",
                    EFFORTS.join(", ")
                ));
            }
            config.effort = Some(level);
        }
        if let Some(budget) = self.max_thinking_tokens {
            config.thinking = Some(budget).filter(|b| *b > 0);
        }
        match self.thinking.as_deref() {
            None => {}
            Some(n) if n.parse::<u32>().is_ok() => {
                config.thinking = n.parse::<u32>().ok().filter(|b| *b > 0);
            }
            Some("enabled") => {
                config.thinking = config.thinking.or(Some(DEFAULT_THINKING));
            }
            Some("disabled") => {
                config.thinking = None;
                config.adaptive_thinking = false;
            }
            Some("adaptive") => config.adaptive_thinking = true,
            Some(other) => {
                return Err(format!(
                    "--thinking {other}: give a budget in tokens (such as 8000), or enabled, \
                     disabled or adaptive"
                ));
            }
        }
        if let Some(display) = &self.thinking_display {
            if !["summarized", "omitted"].contains(&display.as_str()) {
                return Err(format!(
                    "--thinking-display {display}: give summarized or omitted"
                ));
            }
            if config.thinking.is_none() && !config.adaptive_thinking {
                return Err(format!(
                    "--thinking-display {display} says how thinking comes back, and thinking is \
                     off: give --thinking adaptive, --thinking N or --max-thinking-tokens N"
                ));
            }
            config.thinking_display = Some(display.clone());
        }
        if let Some(tool) = self
            .permission_prompt_tool
            .as_deref()
            .filter(|t| *t != "stdio")
        {
            return Err(format!(
                "--permission-prompt-tool {tool}: hermitcrab asks the driving program over \
                 `stdio` (its can_use_tool), or a person on a terminal; give stdio, or leave it out"
            ));
        }
        config.tool_names = match self.tool_names.as_deref() {
            Some(name) => ToolNames::parse(name)
                .ok_or_else(|| format!("--tool-names {name}: give claude or hermitcrab"))?,
            None if self.streaming() => ToolNames::Claude,
            None => config.tool_names,
        };
        if self.prompts_over_stdio() {
            config.interactive = true;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn os(args: &[&str]) -> Vec<OsString> {
        args.iter().map(OsString::from).collect()
    }

    #[test]
    fn print_mode_flags_with_no_command_are_run_and_unknown_flags_are_left_out() {
        let known: Vec<String> = ["output-format", "input-format", "verbose", "model"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let got = rewrite(
            os(&[
                "hc",
                "--output-format",
                "stream-json",
                "--some-new",
                "x",
                "--input-format",
                "stream-json",
                "--other=1",
                "--verbose",
            ]),
            &known,
        );
        assert_eq!(
            got,
            os(&[
                "hc",
                "run",
                "--output-format",
                "stream-json",
                "--input-format",
                "stream-json",
                "--verbose"
            ])
        );
        assert_eq!(
            rewrite(os(&["hc", "--version"]), &known),
            os(&["hc", "--version"])
        );
        assert_eq!(
            rewrite(os(&["hc", "sessions"]), &known),
            os(&["hc", "sessions"])
        );
        assert_eq!(
            rewrite(os(&["hc", "fix the failing test"]), &known),
            os(&["hc", "run", "fix the failing test"])
        );
        assert_eq!(
            rewrite(os(&["hc", "sesions"]), &known),
            os(&["hc", "sesions"])
        );
        // not driven by an SDK: an unknown flag stays, for clap to refuse
        assert_eq!(
            rewrite(os(&["hc", "-p", "--odd", "say hi"]), &known),
            os(&["hc", "run", "-p", "--odd", "say hi"])
        );
    }

    #[test]
    fn rule_lists_split_outside_parentheses() {
        assert_eq!(
            rules(&["Read,Bash(git commit -m a,b) Edit".into(), "Grep".into()]),
            vec!["Read", "Bash(git commit -m a,b)", "Edit", "Grep"]
        );
    }
}
