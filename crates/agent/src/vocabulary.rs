//! The agent's vocabulary: the chunks `hc init` commits for it.

use crate::contract::{KNOWLEDGE_FILE, PROJECT_MEMORY, USER_MEMORY};
use protocol::program::{ProgramBody, Runtime};
use protocol::{Boundary, Capabilities, FilesystemAccess, ReadAccess};
use serde_json::{Value, json};
use substrate::{ChunkDecl, NewPlacement};

/// What every session accepts as members.
pub const SESSION_ACCEPTS: &[&str] = &[
    "prompt",
    "answer",
    "tool-call",
    "tool-result",
    "context",
    "compaction",
    "engine/process",
    "permission-request",
    "permission-decision",
    "user-question",
    "user-answer",
    "todo",
    "interrupt",
    "message",
    "hook-callback",
    "hook-answer",
    "llm-call",
    "block-save",
    "plan",
];

/// The default timeout of an agent run: an hour (real coding runs are
/// long; configuration overrides it per run).
pub const AGENT_TIMEOUT_MS: u64 = 3_600_000;

/// Variables the agent program receives from the host: the model API's
/// and the proxy and certificate ones. Nothing else reaches it.
pub const AGENT_ENV: &[&str] = &[
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_AUTH_TOKEN",
    "ANTHROPIC_BASE_URL",
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "NO_PROXY",
    "ALL_PROXY",
    "http_proxy",
    "https_proxy",
    "no_proxy",
    "all_proxy",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "HC_MAX_RETRIES",
    "CLAUDE_CODE_MAX_RETRIES",
    "API_TIMEOUT_MS",
    "HC_STREAM_IDLE_TIMEOUT_MS",
];

fn archetype(id: &str, spec: Value) -> ChunkDecl {
    ChunkDecl::with_id(id).name(id).spec(spec).body(json!({}))
}

/// A session content type: instance on `agent`, relates on `session`.
fn session_type(id: &str, spec: Value, body: Value) -> ChunkDecl {
    ChunkDecl::with_id(id)
        .name(id)
        .spec(spec)
        .body(body)
        .on(NewPlacement::instance("agent"))
        .on(NewPlacement::relates("session"))
}

/// The agent's types, in an order that commits in one declaration (after
/// the engine's); `program/agent` is [`agent_program`], in the table of
/// built-ins.
pub fn vocabulary() -> Vec<ChunkDecl> {
    let mut out = vec![
        archetype("agent", json!({})),
        archetype(
            "session",
            json!({"propagate": true, "ordered": true, "accepts": SESSION_ACCEPTS}),
        )
        .on(NewPlacement::instance("agent")),
        // The agent program's input type, related to it as `input/NAME`
        // is to a tool: the sub-agent tool's schema is read from there.
        session_type(
            "prompt",
            json!({"required": ["text"]}),
            json!({
                "text": "A task or message for the agent.",
                "schema": prompt_schema(),
            }),
        )
        .on(NewPlacement::relates("program/agent")),
        session_type("answer", json!({"required": ["text"]}), json!({})),
        session_type("tool-call", json!({"required": ["program"]}), json!({})),
        session_type("tool-result", json!({"required": ["program"]}), json!({})),
        session_type(
            "context",
            json!({"propagate": true, "ordered": true}),
            json!({}),
        ),
        session_type("compaction", json!({"required": ["text"]}), json!({})),
        // one delivered copy of each message, whichever host delivers it
        session_type(
            "message",
            json!({"required": ["text"], "unique": ["relayed_from"]}),
            json!({}),
        ),
    ];
    for id in [
        "permission-request",
        "user-question",
        "todo",
        "interrupt",
        "hook-callback",
        "llm-call",
        "block-save",
        "plan",
    ] {
        out.push(session_type(id, json!({}), json!({})));
    }
    // One answer per question, whoever answers: the store refuses a
    // second answer to the same request.
    for id in ["permission-decision", "user-answer", "hook-answer"] {
        out.push(session_type(id, json!({"unique": ["request"]}), json!({})));
    }
    out.push(archetype("agent-config", json!({})).on(NewPlacement::instance("agent")));
    // Culture's own text is the person's (`hc commit` it): bootstrap
    // leaves its body as it is.
    out.push(
        ChunkDecl::with_id("culture")
            .name("culture")
            .spec(json!({})),
    );
    // What outlives a session: memory (its entries placed instance on it)
    // and the files requests were given, each a chunk.
    for id in [PROJECT_MEMORY, USER_MEMORY, KNOWLEDGE_FILE] {
        out.push(archetype(id, json!({})).on(NewPlacement::instance("agent")));
    }
    // pscale blocks: each a `block`, on its identity's `blocks/NAME` scope
    out.push(archetype(crate::blocks::BLOCK, json!({})).on(NewPlacement::instance("agent")));
    out.push(
        archetype(
            crate::blocks::store::BLOCKS,
            json!({"propagate": true, "accepts": [crate::blocks::BLOCK]}),
        )
        .on(NewPlacement::instance("agent")),
    );
    out
}

/// Chunks made once, when missing, and then the person's: the
/// hermitcrab's constitution (`hc commit` or `hc blocks` rewrite it).
pub fn seeds() -> Vec<ChunkDecl> {
    vec![
        ChunkDecl::with_id(crate::blocks::store::CONSTITUTION)
            .name(crate::blocks::store::CONSTITUTION)
            .body(json!({"text": crate::blocks::crab::CONSTITUTION})),
    ]
}

/// The input of the agent as a tool (a sub-agent's task).
pub fn prompt_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "text": {"type": "string", "description": "The task, stated fully: the sub-agent sees nothing else of this conversation."},
            "description": {"type": "string", "description": "The task in three to five words, for the person watching."},
            "model": {"type": "string", "description": "A model for the sub-agent (default: this agent's)."},
            "subagent_type": {"type": "string", "description": "A custom agent to run the task (one listed in this tool's description); default: a general one."},
            "run_in_background": {"type": "boolean", "description": "Run it in the background: you get its id at once and go on; its result comes as a message when it ends."}
        },
        "required": ["text"]
    })
}

/// `program/agent`: accepts a prompt, context, configuration, and every
/// type a session accepts (a sub-agent's process is its own session).
pub fn agent_program() -> ChunkDecl {
    let mut accepts: Vec<&str> = vec!["prompt", "context", "agent-config"];
    for t in SESSION_ACCEPTS {
        if !accepts.contains(t) {
            accepts.push(t);
        }
    }
    let body = ProgramBody {
        executable: "builtin:agent".into(),
        args: Vec::new(),
        runtime: Runtime::Vm,
        entry: None,
        text: "Runs a sub-agent on a task: it reads, searches, plans, calls tools and answers \
               with its result. Give it the whole task in `text` — it sees nothing else of \
               this conversation. Use it for independent pieces of work (several may run at \
               once) and for searches whose details you do not need to keep."
            .into(),
        input_type: Some("prompt".into()),
        capabilities: Capabilities {
            filesystem: FilesystemAccess {
                read: ReadAccess::All,
                write: Vec::new(),
            },
            network: true,
            env: AGENT_ENV.iter().map(|s| (*s).to_owned()).collect(),
            programs: Vec::new(),
        },
        boundary: Boundary::Open,
        timeout_ms: Some(AGENT_TIMEOUT_MS),
        concurrency_safe: true,
        // It changes nothing itself (`write: []`): each call a sub-agent
        // makes is decided under the same mode and rules, so spawning one
        // needs no permission of its own (in plan mode too).
        read_only: true,
        tool: true,
        served_by: None,
        writes: None,
    };
    ChunkDecl::with_id("program/agent")
        .name("agent")
        .spec(json!({"propagate": true, "accepts": accepts}))
        .body(serde_json::to_value(body).unwrap_or_default())
        .on(NewPlacement::instance("engine/program"))
}
