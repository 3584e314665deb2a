//! The bootstrap chunks: the archetypes the seeds name and the agent
//! program, committed idempotently by [`Substrate::init`].

use crate::types::{ChunkDecl, NewPlacement};
use serde_json::{Value, json};

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
];

/// The default timeout of an agent run: an hour (real coding runs are long;
/// configuration overrides it).
pub const AGENT_TIMEOUT_MS: u64 = 3_600_000;

/// The default timeout of a tool run.
pub const TOOL_TIMEOUT_MS: u64 = 30_000;

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

/// A built-in tool program: its program chunk and its argument type.
#[derive(Clone, Debug)]
pub struct ProgramDef {
    /// The program's name (`filesystem`); its id is `program/NAME`.
    pub name: String,
    /// What it does, for people and for the model (the tool description).
    pub text: String,
    /// The JSON Schema object of its input.
    pub schema: Value,
    /// `{filesystem, network, env}` as the containment issue defines.
    pub capabilities: Value,
    /// Its intrinsic boundary: `"open"` or a list of roots.
    pub boundary: Value,
    /// Default run timeout.
    pub timeout_ms: u64,
    /// Read-only tools may run in parallel.
    pub concurrency_safe: bool,
}

impl ProgramDef {
    /// The two chunks: `program/NAME` (instance on `engine/program`) and
    /// `input/NAME` (relates on the program), in declaration order.
    pub fn chunks(&self) -> Vec<ChunkDecl> {
        let name = &self.name;
        let program = format!("program/{name}");
        let input = format!("input/{name}");
        let required = self
            .schema
            .get("required")
            .cloned()
            .unwrap_or_else(|| json!([]));
        vec![
            ChunkDecl::with_id(&program)
                .name(name)
                .spec(json!({"propagate": true, "accepts": [input]}))
                .body(json!({
                    "executable": format!("builtin:{name}"),
                    "runtime": "vm",
                    "text": self.text,
                    "input_type": input,
                    "capabilities": self.capabilities,
                    "boundary": self.boundary,
                    "timeout_ms": self.timeout_ms,
                    "concurrency_safe": self.concurrency_safe,
                }))
                .on(NewPlacement::instance("engine/program")),
            ChunkDecl::with_id(&input)
                .name(input.clone())
                .spec(json!({"required": required}))
                .body(json!({
                    "text": format!("The input of the {name} program."),
                    "schema": self.schema,
                }))
                .on(NewPlacement::relates(&program)),
        ]
    }
}

/// Every bootstrap chunk, in an order that commits in one declaration.
pub fn archetypes() -> Vec<ChunkDecl> {
    let mut out = vec![
        archetype("engine/program", json!({"required": ["executable"]})),
        archetype(
            "engine/process",
            json!({"propagate": true, "ordered": true, "accepts": ["engine/process", "engine/output"]}),
        ),
        archetype("engine/output", json!({})),
        archetype("read-boundary", json!({})),
        archetype("write-boundary", json!({})),
        archetype("agent", json!({})),
        archetype(
            "session",
            json!({"propagate": true, "ordered": true, "accepts": SESSION_ACCEPTS}),
        )
        .on(NewPlacement::instance("agent")),
        session_type(
            "prompt",
            json!({"required": ["text"]}),
            json!({
                "text": "A task or message for the agent.",
                "schema": {
                    "type": "object",
                    "properties": {"text": {"type": "string", "description": "The task, stated fully: the agent sees nothing else."}},
                    "required": ["text"]
                }
            }),
        ),
        session_type("answer", json!({"required": ["text"]}), json!({})),
        session_type("tool-call", json!({"required": ["program"]}), json!({})),
        session_type("tool-result", json!({"required": ["program"]}), json!({})),
        session_type(
            "context",
            json!({"propagate": true, "ordered": true}),
            json!({}),
        ),
        session_type("compaction", json!({"required": ["text"]}), json!({})),
    ];
    for id in [
        "permission-request",
        "permission-decision",
        "user-question",
        "user-answer",
    ] {
        out.push(session_type(id, json!({}), json!({})));
    }
    out.push(archetype("agent-config", json!({})).on(NewPlacement::instance("agent")));
    out.push(archetype("culture", json!({})));
    out.push(agent_program());
    out
}

/// `program/agent`: accepts a prompt, context, configuration, and every
/// type a session accepts (a sub-agent's process is its own session).
fn agent_program() -> ChunkDecl {
    let mut accepts: Vec<&str> = vec!["prompt", "context", "agent-config"];
    for t in SESSION_ACCEPTS {
        if !accepts.contains(t) {
            accepts.push(t);
        }
    }
    ChunkDecl::with_id("program/agent")
        .name("agent")
        .spec(json!({"propagate": true, "accepts": accepts}))
        .body(json!({
            "executable": "builtin:agent",
            "runtime": "vm",
            "text": "Runs an agent on a task: it reads, plans, calls tools and answers. \
                     Give it the whole task; it sees nothing else.",
            "input_type": "prompt",
            "boundary": "open",
            "timeout_ms": AGENT_TIMEOUT_MS,
            "concurrency_safe": false,
        }))
        .on(NewPlacement::instance("engine/program"))
}

#[cfg(feature = "storage")]
mod init {
    use super::archetypes;
    use crate::error::{Error, Result};
    use crate::store::Substrate;
    use crate::types::{ChunkDecl, Commit, Declaration};

    impl Substrate {
        /// Commits the bootstrap chunks and `extra` (built-in programs),
        /// changing only what differs from what is stored: a second call
        /// with the same chunks commits nothing and returns `None`; a call
        /// with newer definitions upgrades them.
        pub fn init(&self, extra: Vec<ChunkDecl>) -> Result<Option<Commit>> {
            let wanted: Vec<ChunkDecl> = archetypes().into_iter().chain(extra).collect();
            let missing = self.read(|snap| {
                let mut out = Vec::new();
                for mut decl in wanted {
                    let Some(id) = decl.id.clone() else {
                        return Err(Error::InvalidRequest(
                            "bootstrap chunks need explicit ids".into(),
                        ));
                    };
                    if let Some(current) = snap.chunk(&id)? {
                        if decl.name.as_ref().is_none_or(|n| *n == current.name) {
                            decl.name = None;
                        }
                        if decl.spec.as_ref().is_none_or(|s| current.spec == *s) {
                            decl.spec = None;
                        }
                        if decl
                            .body
                            .as_ref()
                            .is_none_or(|b| current.body_value() == *b)
                        {
                            decl.body = None;
                        }
                        decl.placements.retain(|p| !current.is_on(&p.scope, p.kind));
                        if decl.name.is_none()
                            && decl.spec.is_none()
                            && decl.body.is_none()
                            && decl.placements.is_empty()
                        {
                            continue;
                        }
                    }
                    out.push(decl);
                }
                Ok(out)
            })?;
            if missing.is_empty() {
                return Ok(None);
            }
            self.commit(Declaration::of(missing), None).map(Some)
        }
    }
}
