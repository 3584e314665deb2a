//! What `hc` is asked: its commands and flags (clap), each with examples.

use crate::print::OutputFormat;
use crate::settings;
use clap::{Parser, Subcommand};

/// hermitcrab: an agent runtime that keeps every step in one substrate.
#[derive(Parser)]
#[command(name = "hc", version, about, after_help = MAIN_HELP)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
    /// Keep the project's substrate on this PostgreSQL server
    /// (postgres://USER@HOST/DATABASE[?schema=NAME]) instead of .hermitcrab/.
    #[arg(long, global = true, value_name = "URL")]
    pub store: Option<String>,
    /// The project's name on a shared store: checkouts on many hosts that
    /// name the same project share its record (also HC_PROJECT).
    #[arg(long, global = true, value_name = "NAME", value_parser = project_name)]
    pub project: Option<String>,
}

/// A project's name: letters, digits, `-` and `_`, at most 50.
fn project_name(name: &str) -> Result<String, String> {
    let plain = name
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    if name.is_empty() || name.len() > 50 || !plain {
        return Err("a project's name is letters, digits, `-` and `_` (at most 50)".into());
    }
    Ok(name.to_owned())
}

const MAIN_HELP: &str = "\
Start with `hc run \"fix the failing test\"` (an API key in ANTHROPIC_API_KEY) or `hc chat`.
Every step is kept in the project's substrate (.hermitcrab/): `hc sessions`, `hc trace`.

Examples:
  hc run \"fix the failing test\"
  hc chat
  hc sessions
  hc trace s_01J9 --request 1";

#[derive(Subcommand)]
pub enum Command {
    /// Run the agent on a prompt and print its answer.
    #[command(after_help = RUN_HELP)]
    Run(Box<RunFlags>),
    /// Talk with the agent in the terminal: each message is a run on the chat's session.
    #[command(after_help = CHAT_HELP)]
    Chat(ChatFlags),
    /// List the project's sessions: time, title, turns, cost, status.
    #[command(
        after_help = "Examples:\n  hc sessions\n  hc sessions --json | jq '.[0].id'   # the newest"
    )]
    Sessions {
        /// As JSON.
        #[arg(long)]
        json: bool,
    },
    /// Show a session as a tree; --request N prints the exact body of its N-th model call.
    #[command(after_help = TRACE_HELP)]
    Trace {
        /// The session id (or a unique prefix of it); none: the newest. With --otel, any number of them.
        #[arg(value_name = "SESSION")]
        sessions: Vec<String>,
        /// Send the sessions to the OpenTelemetry collector (OTEL_EXPORTER_OTLP_ENDPOINT or [telemetry]) as spans and events, with the times they happened.
        #[arg(long, conflicts_with_all = ["request", "diff", "full", "json"])]
        otel: bool,
        /// With --otel: every session made since DATE (2026-11-01, an RFC 3339 time, or an age such as 7d).
        #[arg(long, value_name = "DATE", requires = "otel")]
        since: Option<String>,
        /// The model call to rebuild (from 1), printed as the JSON body that was sent.
        #[arg(long, conflicts_with = "diff")]
        request: Option<usize>,
        /// What changed in the request of call N from call N-1.
        #[arg(long)]
        diff: Option<usize>,
        /// Texts and results whole, not cut to a line.
        #[arg(long)]
        full: bool,
        /// As JSON.
        #[arg(long)]
        json: bool,
    },
    /// Put the project's files back as they were before a turn (whatever tool changed them), and/or fork the conversation there.
    #[command(after_help = REWIND_HELP)]
    Rewind(crate::cmd::rewind::RewindRequest),
    /// A new session whose history is SESSION's up to a turn (referenced, not copied); prints its id.
    #[command(
        after_help = "Examples:\n  hc fork s_01J9…            # the whole history\n  hc fork s_01J9… --at 3     # up to and including answer #3\n  hc chat --resume $(hc fork s_01J9… --at 3)"
    )]
    Fork {
        /// The session id (or a unique prefix of it).
        session: String,
        /// Up to and including this turn (`answer #N` in `hc trace`); none: all of it.
        #[arg(long, value_name = "TURN")]
        at: Option<usize>,
        /// In a git worktree of its own (.hermitcrab/worktrees/ID, branch hc/ID), its files as they were at that turn.
        #[arg(long)]
        worktree: bool,
    },
    /// Run a recorded session again through today's harness with the model's recorded answers; report what differs.
    #[command(
        after_help = "Examples:\n  hc replay s_01J9…             # every call and tool result against the record\n  hc replay s_01J9… --at 4      # through answer #4\n\nNo key and no network: the model's answers come from the substrate. The replay runs in a\nscratch copy of the project at the files the session started from, with today's hooks,\nrules, tools and MCP servers; exit code 1 when anything differs from the record."
    )]
    Replay {
        /// The session id (or a unique prefix of it); none: the newest.
        session: Option<String>,
        /// Through this turn (`answer #N` in `hc trace`).
        #[arg(long, value_name = "TURN")]
        at: Option<usize>,
        #[command(flatten)]
        settings: SettingFlags,
    },
    /// Read scopes of the substrate (their intersection), or search it.
    #[command(
        after_help = "Examples:\n  hc scope s_01J9…\n  hc scope s_01J9… prompt      # the prompts of a session\n  hc scope --match 'failing test'\n  hc scope s_01J9… --as-of 120 --json"
    )]
    Scope {
        /// Scope ids (none: the whole substrate).
        ids: Vec<String>,
        /// Read as the substrate stood right after this commit.
        #[arg(long)]
        as_of: Option<u64>,
        /// Full-text query.
        #[arg(long = "match")]
        query: Option<String>,
        /// At most this many members.
        #[arg(long)]
        limit: Option<usize>,
        /// The next page: the cursor a `--limit` read printed after `more:`.
        #[arg(long)]
        after: Option<String>,
        /// As JSON (the protocol's ScopeResult).
        #[arg(long)]
        json: bool,
    },
    /// The commits, newest first, with who made them.
    #[command(after_help = "Examples:\n  hc log\n  hc log --limit 100 --json")]
    Log {
        /// How many (0: all of them).
        #[arg(long, default_value_t = 20)]
        limit: usize,
        /// As JSON.
        #[arg(long)]
        json: bool,
    },
    /// The processes running now, as a tree.
    #[command(after_help = "Examples:\n  hc ps\n  hc ps --json | jq '.[].pid'")]
    Ps {
        /// As JSON.
        #[arg(long)]
        json: bool,
    },
    /// The programs: name, description, capabilities, concurrency.
    #[command(
        after_help = "Examples:\n  hc programs\n  hc programs --json | jq '.[] | select(.read_only)'"
    )]
    Programs {
        /// As JSON.
        #[arg(long)]
        json: bool,
    },
    /// The models: the aliases and what they name today, prices, windows, and
    /// which this key may use (the API asked, its answer kept a day).
    #[command(
        after_help = "Examples:\n  hc models\n  hc models --json | jq '.models[] | select(.available)'"
    )]
    Models {
        /// As JSON.
        #[arg(long)]
        json: bool,
        /// Ask the API again now, not from what it said within the day.
        #[arg(long)]
        refresh: bool,
    },
    /// MCP servers: list, get, add, remove (the shape of `claude mcp`).
    #[command(after_help = MCP_HELP)]
    Mcp {
        #[command(subcommand)]
        command: McpCommand,
    },
    /// The substrate: which backend, where, how big (`hc store info`).
    #[command(
        after_help = "Example:\n  hc store info          # sqlite .hermitcrab/substrate.db, or the server HC_STORE names"
    )]
    Store {
        #[command(subcommand)]
        command: StoreCommand,
    },
    /// Memory: facts and rules every later session is given (this project's and yours).
    #[command(after_help = MEMORY_HELP)]
    Memory {
        #[command(subcommand)]
        command: Option<crate::cmd::memory::MemoryCommand>,
    },
    /// pscale blocks: an agent's structured memory (`--agent hermitcrab` keeps them).
    #[command(after_help = BLOCKS_HELP)]
    Blocks {
        #[command(subcommand)]
        command: Option<crate::cmd::blocks::BlocksCommand>,
        #[command(flatten)]
        flags: crate::cmd::blocks::BlocksFlags,
    },
    /// Commit a declaration (JSON) from a file or stdin, as the host.
    #[command(
        after_help = "Examples:\n  hc commit decl.json\n  echo '{\"chunks\":[{\"id\":\"culture\",\"body\":{\"text\":\"Prefer small commits.\"}}]}' | hc commit"
    )]
    Commit {
        /// The file (none or `-`: stdin).
        file: Option<String>,
    },
    /// Every resolved setting with its value and where it came from.
    #[command(
        after_help = "Examples:\n  hc config\n  hc config --edit\n  HC_MODEL=opus hc config --json"
    )]
    Config {
        /// As JSON.
        #[arg(long)]
        json: bool,
        /// Open the project's config.toml in $EDITOR first.
        #[arg(long)]
        edit: bool,
        /// Settings as `hc run` would be given them (shown as from a flag).
        #[command(flatten)]
        settings: SettingFlags,
    },
    /// Trust this project: let its own files grant power (hooks, grants, wider permissions).
    #[command(after_help = TRUST_HELP)]
    Trust {
        /// Stop trusting it.
        #[arg(long, conflicts_with = "list")]
        revoke: bool,
        /// The trusted projects.
        #[arg(long)]
        list: bool,
    },
    /// Create .hermitcrab/ here and bootstrap the substrate (safe to re-run).
    #[command(
        after_help = "Example:\n  cd my-project && hc init   # `hc run` and `hc chat` do it when needed"
    )]
    Init,
    /// Serve the project: the protocol on stdio (--stdio), or the page in a browser (--http).
    #[command(after_help = SERVE_HELP)]
    Serve(ServeFlags),
    /// Be an editor's agent: the Agent Client Protocol (ACP) on stdin and stdout, for Zed, JetBrains IDEs and Neovim.
    #[command(after_help = ACP_HELP)]
    Acp {
        #[command(flatten)]
        settings: SettingFlags,
    },
    /// The project's agents: running, waiting for you, done, failed, stopped.
    #[command(after_help = AGENTS_HELP)]
    Agents {
        #[command(subcommand)]
        command: Option<AgentsCommand>,
        /// As JSON.
        #[arg(long)]
        json: bool,
        /// Keep the list up to date until Ctrl-C (the terminal told when
        /// one ends or asks).
        #[arg(long, conflicts_with = "json")]
        watch: bool,
    },
    /// Follow a session live, as `hc run` shows it, and answer its questions; Ctrl-C detaches.
    #[command(
        after_help = "Examples:\n  hc attach s_01J9…      # an id or a unique prefix\n  hc agents              # the ids"
    )]
    Attach {
        /// The session (an id or a unique prefix of one).
        session: String,
    },
    /// Send a message to a session: its agent reads it at its next turn (or when it next runs).
    #[command(
        after_help = "Examples:\n  hc send s_01J9… \"also update the changelog\"\n  hc agents              # the ids"
    )]
    Send {
        /// The session (an id or a unique prefix of one).
        session: String,
        /// What to tell it.
        text: String,
    },
    /// Stop a session's run (a background one too, wherever it runs).
    #[command(after_help = "Example:\n  hc stop s_01J9…")]
    Stop {
        /// The session (an id or a unique prefix of one).
        session: String,
    },
    /// Take the project's queued runs (`hc run --bg`) and run them here.
    #[command(after_help = WORKER_HELP)]
    Worker {
        /// End once nothing is queued and nothing runs.
        #[arg(long)]
        until_idle: bool,
        /// At most N runs at once (default: `max_background`, else 4).
        #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
        max: Option<u32>,
        /// Take only runs asking for these labels (hc run --bg --labels); without, only runs asking for none.
        #[arg(long, value_name = "A,B", value_delimiter = ',', value_parser = label)]
        labels: Vec<String>,
        /// Also take the runs these people queue (`*`: anyone's), run under your own settings,
        /// never wider than theirs; without, only your own.
        #[arg(long = "for", value_name = "PERSON,…", value_delimiter = ',')]
        serves: Vec<String>,
    },
    /// Run a built-in program on this process's stdio (the engine does this).
    #[command(
        after_help = "Example:\n  hc program echo   # as the engine starts it; `hc programs` lists them"
    )]
    Program {
        /// The built-in's name, e.g. `echo`.
        name: String,
    },
    /// The containment trampoline the engine runs programs through.
    #[command(name = "__contain", hide = true)]
    Contain {
        /// The policy (JSON).
        args: Vec<String>,
    },
}

impl Command {
    /// Whether the command opens the project's substrate (what `--store`
    /// names is used).
    pub fn uses_store(&self) -> bool {
        !matches!(
            self,
            Command::Program { .. }
                | Command::Contain { .. }
                | Command::Trust { list: true, .. }
                | Command::Trust { revoke: true, .. }
                | Command::Mcp {
                    command: McpCommand::Add(_)
                        | McpCommand::Remove { .. }
                        | McpCommand::Login { .. }
                        | McpCommand::Logout { .. }
                }
        )
    }

    /// Whether the command does its work where there is no project (it
    /// opens a substrate only in one).
    pub fn goes_on_without_a_project(&self) -> bool {
        matches!(self, Command::Mcp { .. } | Command::Memory { .. })
    }

    /// Whether the command only reads and prints (it runs no program).
    pub fn only_prints(&self) -> bool {
        matches!(
            self,
            Command::Sessions { .. }
                | Command::Trace { .. }
                | Command::Scope { .. }
                | Command::Log { .. }
                | Command::Ps { .. }
                | Command::Programs { .. }
                | Command::Commit { .. }
                | Command::Blocks { .. }
                | Command::Store { .. }
                | Command::Agents { watch: false, .. }
        )
    }
}

const REWIND_HELP: &str = "\
Examples:
  hc rewind --list               # the newest session's turns, and the files each changed
  hc rewind --to 3               # before answer #3: files back, conversation forked
  hc rewind --to 3 --code        # the files only
  hc rewind --prompt 2 --conversation
  hc rewind --undo               # the last rewind undone

Every file any run of the session changed is put back — shell commands' too. A file changed
since (by you or another session) is never overwritten: the rewind lists it and stops, unless
--force. Files git ignores (build output) are not recorded; files over 3 MiB are recorded by
hash only and said not restorable.";

const AGENTS_HELP: &str = "\
Examples:
  hc run --bg \"add tests for the parser\"   # queued; a worker takes it
  hc agents                      # every session: status, branch, turns, cost, question
  hc agents --watch              # kept up to date; the terminal rings when one ends or asks
  hc agents diff s_01J9…         # what its branch changed
  hc agents merge s_01J9…        # merge its branch into yours (its worktree removed)
  hc agents rm s_01J9…           # remove its worktree; its branch stays
  hc attach s_01J9…              # follow it, answer its questions; Ctrl-C detaches";

const WORKER_HELP: &str = "\
Examples:
  hc worker                      # until Ctrl-C
  hc worker --until-idle --max 2

`hc run --bg` starts one (`hc worker --until-idle`, its output in .hermitcrab/logs/) when
none is running. Each run works in a git worktree of its own (.hermitcrab/worktrees/SESSION,
branch hc/SESSION); its changes are committed on that branch when it ends.";

const ACP_HELP: &str = "\
The editor starts `hc acp` and speaks ACP v1 with it (JSON-RPC, one message a line). Each
session the editor makes is an hc session in the project its `cwd` names (`hc sessions`,
`hc trace`); the flags apply to every session.

Zed (settings.json):
  \"agent_servers\": {\"hermitcrab\": {\"command\": \"hc\", \"args\": [\"acp\"],
                                   \"env\": {\"ANTHROPIC_API_KEY\": \"…\"}}}";

const SERVE_HELP: &str = "\
Examples:
  hc serve --http                      # prints http://127.0.0.1:8420/?token=…; open it
  hc serve --http --open --port 9000
  hc serve --http --host 0.0.0.0 --token-file ~/.hc-token   # a team's server: still needs the token
  echo '{\"id\":1,\"op\":\"scope\",\"scopes\":[\"engine/program\"]}' | hc serve --stdio

The page shows everything the substrate holds, live, and drives agents from it; webview
programs run in it as tiles. Every request needs the token (once in the address, then a
cookie); only loopback is served unless --host says otherwise.";

const BLOCKS_HELP: &str = "\
Examples:
  hc blocks                              # list: name, decimal, pscale-0 text
  hc blocks show history                 # the whole tree, a line per node
  hc blocks show keystone 2.2            # one node: its spindle and children
  hc blocks spindle history 0.3          # each text from the root down, with its pscale
  hc blocks show history --as-of 120 --json

Blocks are kept by `hc run --agent hermitcrab` (and any agent with `blocks = true`):
history is saved after every answer; every write is a new version.";

const MEMORY_HELP: &str = "\
Examples:
  hc memory                                  # list: this project's, then yours
  hc memory add run the tests with cargo nextest
  hc memory add --user answer in British English
  hc memory rm m_01JC                        # an id, or a unique prefix of one
  hc memory edit                             # all of this project's memory in $EDITOR
  hc memory list --json

Every request shows the memory under `# Memory` (newest first, 25 KB at most); the
agent keeps its own with its `memory` tool, and `# TEXT` in hc chat adds to the
project's. Set `memory = false` in config.toml to leave it out.";

const RUN_HELP: &str = "\
Examples:
  hc run \"fix the failing test\"
  git diff | hc run \"review this change\"
  hc run --permission-mode accept-edits --allow 'shell(cargo test:*)' \"make the tests pass\"
  hc run --continue \"now add a test for it\"
  hc run --output-format stream-json \"list the TODOs\" | jq -c 'select(.type == \"result\")'

Exit codes: 0 success, 1 run error, 2 usage error (a bad flag, an empty prompt, a session that is not there), 3 stopped by a gate (turns, budget), 130 interrupted.
The API key comes from the environment or the project's .env (ANTHROPIC_API_KEY, or OPENAI_API_KEY with HC_API=openai); `hc config` says which.";

const CHAT_HELP: &str = "\
Examples:
  hc chat
  hc chat --continue                       # go on with the latest session
  hc chat --permission-mode accept-edits --model opus

In the chat: /help, /clear (a new session), /compact, /cost, /model [NAME], /resume [SESSION],
/sessions, /trace, /exit. Ctrl-C interrupts the answer; twice at the prompt leaves.";

const TRUST_HELP: &str = "\
A project's own files (.hermitcrab/config.toml, .env) come with a checkout, so what in them
widens power — hooks, permission_mode bypass or accept-edits, allow rules, [programs.NAME]
grants, containment = \"off\", an API base URL in .env — applies only once you trust the
project. Trust is kept by path and by a hash of those files: a change to them asks again.
Deny and ask rules always apply.

Examples:
  hc trust            # trust the project here, as its files are now
  hc trust --list
  hc trust --revoke";

const TRACE_HELP: &str = "\
Examples:
  hc trace                   # the newest session
  hc trace --request 1       # the exact body of its first model call
  hc trace s_01J9            # a unique prefix of the id will do
  hc trace s_01J9 --full     # texts and tool results whole
  hc trace s_01J9 --request 3 | jq .messages
  hc trace s_01J9 --diff 3   # what call 3 added to call 2
  hc trace --otel s_01J9     # sent to the OpenTelemetry collector, as it happened
  hc trace --otel --since 7d # every session of the last week, sent";

const MCP_HELP: &str = "Examples:
  hc mcp add github -- npx -y @modelcontextprotocol/server-github
  hc mcp add --transport http docs https://example.com/mcp --header 'Authorization: Bearer ${DOCS_TOKEN}'
  hc mcp add --scope user -e API_KEY=${API_KEY} tools -- ./bin/tools-server
  hc mcp list
  hc mcp get github --json
  hc mcp remove github";

/// `hc store`'s commands.
#[derive(clap::Subcommand)]
pub enum StoreCommand {
    /// Which backend, where (no password), its schema version, its latest
    /// commit, how many bytes it takes.
    Info {
        /// As JSON.
        #[arg(long)]
        json: bool,
    },
    /// Copy the whole record — every commit in order, ids and times kept —
    /// into an empty store, or from one into the project's (empty) store;
    /// then rebuild every session's requests on the copy and compare.
    #[command(
        after_help = "Examples:\n  hc store copy --to postgres://me@db.internal/team      # then: store = \"postgres://…\" in your config\n  hc store copy --to /tmp/backup.db                      # a SQLite file\n  HC_STORE=postgres://me@db/team hc store copy --from .hermitcrab/substrate.db"
    )]
    Copy {
        /// Where to copy to: a PostgreSQL URL (the project's schema there,
        /// or ?schema=NAME) or a SQLite file; it must hold no commits.
        #[arg(
            long,
            value_name = "URL|FILE",
            required_unless_present = "from",
            conflicts_with = "from"
        )]
        to: Option<String>,
        /// Where to copy from, into the project's store (which must hold no
        /// commits yet).
        #[arg(long, value_name = "URL|FILE")]
        from: Option<String>,
    },
}

/// `hc mcp`'s commands.
#[derive(clap::Subcommand)]
pub enum McpCommand {
    /// Every configured server: whether it connects, and its tools.
    List {
        /// As JSON.
        #[arg(long)]
        json: bool,
    },
    /// One server: its configuration (no secret values), status and tools.
    Get {
        /// The server's name.
        name: String,
        /// As JSON.
        #[arg(long)]
        json: bool,
    },
    /// Add a server: `NAME -- COMMAND ARGS…` (stdio), or `--transport http NAME URL`.
    Add(crate::cmd::mcp::Add),
    /// Sign in to an HTTP server (OAuth, in the browser); its tokens are kept for you alone.
    Login {
        /// The server's name.
        name: String,
        /// Print the address to open; do not start a browser.
        #[arg(long)]
        no_browser: bool,
        /// The loopback port the browser comes back to (else the entry's `oauth.callbackPort`, MCP_OAUTH_CALLBACK_PORT, any free one).
        #[arg(long)]
        callback_port: Option<u16>,
    },
    /// Sign out of a server: its tokens revoked and forgotten.
    Logout {
        /// The server's name.
        name: String,
    },
    /// Remove a server (from --scope, else whichever file has it).
    Remove {
        /// The server's name.
        name: String,
        /// project (.mcp.json) or user (your config.toml).
        #[arg(long, short = 's', value_enum)]
        scope: Option<crate::cmd::mcp::Scope>,
    },
}

/// The settings a flag may give: `hc run`, `hc chat`, `hc config`.
#[derive(clap::Args, Default)]
pub struct SettingFlags {
    /// The model (else HC_MODEL, the config files, the default).
    #[arg(long)]
    model: Option<String>,
    /// Stop after this many model calls.
    #[arg(long)]
    max_turns: Option<u32>,
    /// Stop once this many dollars are spent.
    #[arg(long)]
    max_budget_usd: Option<f64>,
    /// default | accept-edits | plan | auto | bypass | dont-ask (also Claude Code's acceptEdits, bypassPermissions, dontAsk).
    #[arg(long)]
    permission_mode: Option<String>,
    /// Allow calls matching RULE without asking, e.g. 'shell(git status:*)' (repeatable).
    #[arg(long = "allow", value_name = "RULE")]
    allow: Vec<String>,
    /// Refuse calls matching RULE (repeatable).
    #[arg(long = "deny", value_name = "RULE")]
    deny: Vec<String>,
    /// MCP servers from FILE_OR_JSON (`{"mcpServers": {…}}`; repeatable).
    #[arg(long = "mcp-config", value_name = "FILE_OR_JSON")]
    mcp_config: Vec<String>,
    /// Only the servers of --mcp-config, none from the config files.
    #[arg(long)]
    strict_mcp_config: bool,
    /// Run as an agent preset: `hermitcrab` (its pscale blocks, its
    /// constitution, history saved after every answer, server tools).
    #[arg(long, value_name = "NAME")]
    agent: Option<String>,
    /// A directory beside the project the tools may read and write, as
    /// the project (repeatable; Claude Code's --add-dir).
    #[arg(long = "add-dir", value_name = "DIR")]
    add_dir: Vec<String>,
}

impl SettingFlags {
    /// As the settings resolver takes them.
    pub fn into_flags(self) -> settings::Flags {
        let mut flags = settings::Flags::default();
        let scalars = [
            ("model", self.model),
            ("max_turns", self.max_turns.map(|n| n.to_string())),
            ("max_budget_usd", self.max_budget_usd.map(|n| n.to_string())),
            ("permission_mode", self.permission_mode),
        ];
        for (name, value) in scalars {
            if let Some(value) = value {
                flags.scalars.push((name, value));
            }
        }
        flags
            .rules
            .extend(self.allow.into_iter().map(|r| ("allow", r)));
        flags
            .rules
            .extend(self.deny.into_iter().map(|r| ("deny", r)));
        flags.mcp_config = self.mcp_config;
        flags.strict_mcp_config = self.strict_mcp_config;
        flags.agent = self.agent;
        flags.add_dirs = self.add_dir;
        flags
    }
}

/// `hc run`'s flags.
#[derive(clap::Args)]
pub struct RunFlags {
    /// What to do (`-` or none: read it from stdin).
    pub(crate) prompt: Option<String>,
    #[command(flatten)]
    pub(crate) settings: SettingFlags,
    /// Go on with the latest session (its history is the agent's).
    #[arg(long = "continue", short = 'c', conflicts_with = "resume")]
    pub(crate) continue_: bool,
    /// Go on with the session SESSION (an id, or a unique prefix of one).
    #[arg(long, value_name = "SESSION")]
    pub(crate) resume: Option<String>,
    /// With --resume/--continue of a session last run on another host: check out the branch and commit its files were left at first.
    #[arg(long)]
    pub(crate) checkout: bool,
    /// Compact the session's conversation into a summary before going on
    /// (with --continue or --resume).
    #[arg(long)]
    pub(crate) compact: bool,
    /// Pin a scope of the substrate into the agent's knowledge (repeatable).
    #[arg(long = "context", value_name = "ID")]
    pub(crate) context: Vec<String>,
    /// Send an image with the prompt: PNG, JPEG, GIF or WebP, at most
    /// 3.75 MB (repeatable).
    #[arg(long = "image", value_name = "FILE")]
    pub(crate) images: Vec<std::path::PathBuf>,
    /// Run programs uncontained, with all your privileges.
    #[arg(long)]
    pub(crate) no_contain: bool,
    /// text (the answer as it streams), json (one object at the end) or
    /// stream-json (one object per line as things happen).
    #[arg(long, value_enum, default_value = "text")]
    pub(crate) output_format: OutputFormat,
    /// With stream-json: also the model's deltas as `stream_event` lines.
    #[arg(long)]
    pub(crate) include_partial_messages: bool,
    /// Claude Code's print-mode flags (the Agent SDK's).
    #[command(flatten)]
    pub(crate) sdk: crate::compat::SdkFlags,
    /// Start it in the background: queued for a worker, in a git worktree
    /// of its own (branch hc/SESSION); prints the session's id.
    #[arg(long)]
    pub(crate) bg: bool,
    /// With --bg: the commit its worktree starts from (default: HEAD).
    #[arg(long, value_name = "REF", requires = "bg")]
    pub(crate) base: Option<String>,
    /// With --bg: work in this directory, not a worktree of its own.
    #[arg(long, requires = "bg", conflicts_with = "base")]
    pub(crate) no_worktree: bool,
    /// With --bg: only a worker carrying these labels takes it (hc worker --labels).
    #[arg(long, requires = "bg", value_name = "A,B", value_delimiter = ',', value_parser = label)]
    pub(crate) labels: Vec<String>,
    /// With --bg: `turn` queues it again from its last whole turn when the host running it is lost (default: `retry` in the configuration, else off).
    #[arg(long, requires = "bg", value_name = "turn|off", value_parser = ["turn", "off"])]
    pub(crate) retry: Option<String>,
}

/// A worker's label (see `hc_host::worker::check_label`).
pub(crate) fn label(text: &str) -> Result<String, String> {
    hc_host::worker::check_label(text).map(str::to_owned)
}

/// `hc agents`' subcommands.
#[derive(Subcommand)]
pub enum AgentsCommand {
    /// What a background session's branch changed (against your current branch).
    Diff {
        /// The session (an id or a unique prefix of one).
        session: String,
        /// Only the files and their counts.
        #[arg(long)]
        stat: bool,
    },
    /// Merge a background session's branch into your current branch (its
    /// worktree removed after; the branch stays).
    Merge {
        /// The session (an id or a unique prefix of one).
        session: String,
    },
    /// Remove a background session's worktree (refused while it holds
    /// changes not on its branch; the branch and the record stay).
    Rm {
        /// The session (an id or a unique prefix of one).
        session: String,
    },
}

/// `hc chat`'s flags.
#[derive(clap::Args)]
pub struct ChatFlags {
    #[command(flatten)]
    pub settings: SettingFlags,
    /// Go on with the latest session.
    #[arg(long = "continue", short = 'c', conflicts_with = "resume")]
    pub continue_: bool,
    /// Go on with the session SESSION.
    #[arg(long, value_name = "SESSION")]
    pub resume: Option<String>,
    /// With --resume/--continue of a session last run on another host: check out the branch and commit its files were left at first.
    #[arg(long)]
    pub checkout: bool,
    /// With --resume/--continue: go on in a new session forked from it (the old one stays as it was).
    #[arg(long)]
    pub fork_session: bool,
    /// Run programs uncontained, with all your privileges.
    #[arg(long)]
    pub no_contain: bool,
}

/// `hc serve`'s flags.
#[derive(clap::Args, Debug, Clone)]
pub struct ServeFlags {
    /// The page, in a browser: an HTTP server on --host:--port.
    #[arg(long, conflicts_with = "stdio")]
    pub http: bool,
    /// The protocol on stdin/stdout, with host reach.
    #[arg(long)]
    pub stdio: bool,
    /// The port (with --http; default 8420).
    #[arg(long)]
    pub port: Option<u16>,
    /// The address to listen on (with --http). Anything but loopback must
    /// be said here, and still needs the token.
    /// (Default 127.0.0.1.)
    #[arg(long)]
    pub host: Option<String>,
    /// Open the address in the browser (with --http).
    #[arg(long)]
    pub open: bool,
    /// Keep the token in FILE (made, 0600, when missing) instead of a fresh
    /// one each start. Repeat it for a team: one file per person, named by
    /// the file's name (alice.token: alice), recorded on what each does.
    #[arg(long, value_name = "FILE")]
    pub token_file: Vec<std::path::PathBuf>,
    /// Run programs uncontained, with all your privileges (every run
    /// records it). Also `containment = "off"` in .hermitcrab/config.toml.
    #[arg(long)]
    pub no_contain: bool,
    /// Runs from the page use this agent preset (`hermitcrab`) unless the
    /// page names one.
    #[arg(long, value_name = "NAME")]
    pub agent: Option<String>,
    /// A name this server is reached by (besides its IP addresses,
    /// `localhost` and this machine's name); any other `Host` is refused.
    #[arg(long = "allow-host", value_name = "NAME")]
    pub allow_host: Vec<String>,
}

impl ServeFlags {
    /// The flag of the page's (`--http`'s) given without `--http`, if one
    /// is: a usage error, not a flag ignored.
    pub fn page_flag_without_http(&self) -> Option<&'static str> {
        if self.http {
            return None;
        }
        let given = [
            ("--port", self.port.is_some()),
            ("--host", self.host.is_some()),
            ("--open", self.open),
            ("--token-file", !self.token_file.is_empty()),
            ("--agent", self.agent.is_some()),
            ("--allow-host", !self.allow_host.is_empty()),
        ];
        given.into_iter().find(|(_, on)| *on).map(|(flag, _)| flag)
    }

    /// The page's options (`--http`).
    pub fn into_options(self) -> hc_web::Options {
        hc_web::Options {
            port: self.port.unwrap_or(8420),
            host: self.host.unwrap_or_else(|| "127.0.0.1".to_owned()),
            open: self.open,
            token_files: self.token_file,
            no_contain: self.no_contain,
            agent: self.agent,
            allow_host: self.allow_host,
        }
    }
}
