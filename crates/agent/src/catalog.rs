//! The tools a model is offered, read from the substrate: every program
//! in the read boundary with `runtime: vm` and `tool` true (its name, its
//! `body.text`, its input type's `body.schema`), sorted by name; and the
//! agent's own tools. Also the pinned scopes of a context event. Both are
//! read as of the context event's commit, by the live agent and by a
//! rebuild alike.

use crate::contract::{ContextBody, KnowledgeFile};
use crate::request::ToolDef;
use crate::sources::knowledge::{Known, Pinned};
use protocol::program::ProgramBody;
use protocol::{Client, ClientError, ScopeOpts, ScopeResult};
use serde_json::{Value, json};
use substrate::TypeFilter;

/// A program offered as a tool: how it is described, and its body.
#[derive(Clone, Debug)]
pub struct ProgramTool {
    /// What the model is told.
    pub def: ToolDef,
    /// The program chunk's body (`concurrency_safe`, `read_only`, …).
    pub body: ProgramBody,
    /// The program chunk's id.
    pub id: String,
    /// Declared by a substrate made elsewhere, or by another person on a
    /// shared store, and not trusted ([`protocol::origin`], the engine's
    /// `Principal`): it runs only when the person says yes.
    pub untrusted: bool,
}

impl ProgramTool {
    /// One of the agent's own tools as permissions see it: it changes
    /// things, and its input is checked against `schema`.
    pub fn own(name: &str, schema: Value) -> Result<ProgramTool, String> {
        let body = json!({"executable": "own", "read_only": false, "tool": false});
        Ok(ProgramTool {
            def: ToolDef {
                name: name.to_owned(),
                description: String::new(),
                schema,
            },
            body: ProgramBody::parse(name, &body)?,
            id: String::new(),
            untrusted: false,
        })
    }
}

/// The program tools as of `as_of` (head when `None`): the built-ins by
/// name, then the served ones (an MCP server's) by name, so the cached
/// prefix stays stable — only those named in `only`, when given, else a
/// served program only when its service is among `services` (up for this
/// run). Answers the commit read at.
pub async fn program_tools(
    client: &Client,
    as_of: Option<u64>,
    only: Option<&[String]>,
    services: &[String],
) -> Result<(u64, Vec<ProgramTool>), ClientError> {
    let programs = programs(client, as_of).await?;
    tools_of(client, &programs, only, services).await
}

/// Every program on `engine/program` as of `as_of` (head when `None`),
/// bodies included.
pub async fn programs(client: &Client, as_of: Option<u64>) -> Result<ScopeResult, ClientError> {
    client
        .scope(
            &["engine/program"],
            ScopeOpts {
                kind: TypeFilter::Instance,
                as_of,
                limit: Some(usize::MAX),
                ..ScopeOpts::default()
            },
        )
        .await
}

/// Where the substrate was made and what in it is not trusted
/// ([`protocol::origin::ORIGIN`]); none recorded: nothing distrusted.
pub async fn origin(client: &Client) -> Result<protocol::origin::Origin, ClientError> {
    let read = client
        .scope(
            &[protocol::origin::ORIGIN],
            ScopeOpts {
                limit: Some(1),
                ..ScopeOpts::default()
            },
        )
        .await;
    match read {
        Ok(read) => Ok(read
            .scopes
            .first()
            .map(|c| protocol::origin::Origin::parse(&c.body_value()))
            .unwrap_or_default()),
        Err(e) if e.code() == Some(protocol::ErrorCode::NotFound) => Ok(Default::default()),
        Err(e) => Err(e),
    }
}

/// The tools among `programs` (a read of `engine/program`), as
/// [`program_tools`] answers them.
pub async fn tools_of(
    client: &Client,
    programs: &ScopeResult,
    only: Option<&[String]>,
    services: &[String],
) -> Result<(u64, Vec<ProgramTool>), ClientError> {
    let at = programs.as_of;
    let mut wanted = Vec::new();
    for item in &programs.chunks {
        let Some(name) = item.name.clone() else {
            continue;
        };
        let Ok(body) = ProgramBody::parse(&name, &item.body_value()) else {
            continue;
        };
        let eligible = match only {
            Some(names) => names.contains(&name),
            None => {
                body.offered_as_tool()
                    && body.served_by.as_ref().is_none_or(|s| services.contains(s))
            }
        };
        if let (true, Some(input_type)) = (eligible, body.input_type.clone()) {
            wanted.push((item.id.clone(), name, input_type, body));
        }
    }
    let schemas = futures_util::future::join_all(
        wanted
            .iter()
            .map(|(id, _, input_type, _)| input_schema(client, id, input_type, at)),
    )
    .await;
    let mut tools = Vec::new();
    for ((id, name, _, body), schema) in wanted.into_iter().zip(schemas) {
        if let Some(schema) = schema? {
            tools.push(ProgramTool {
                def: ToolDef {
                    name,
                    description: body.text.clone(),
                    schema,
                },
                body,
                id,
                untrusted: false,
            });
        }
    }
    tools.sort_by(|a, b| {
        let key = |t: &ProgramTool| (t.body.served_by.is_some(), t.def.name.clone());
        key(a).cmp(&key(b))
    });
    Ok((at, tools))
}

/// The `body.schema` of `program`'s input type (related to it).
async fn input_schema(
    client: &Client,
    program: &str,
    input_type: &str,
    at: u64,
) -> Result<Option<Value>, ClientError> {
    let related = client
        .scope(
            &[program],
            ScopeOpts {
                kind: TypeFilter::Relates,
                as_of: Some(at),
                ..ScopeOpts::default()
            },
        )
        .await?;
    Ok(related
        .chunks
        .iter()
        .find(|c| c.id == input_type)
        .map(|c| c.body_value()["schema"].clone())
        .filter(Value::is_object))
}

/// The pinned scopes of context event `event` (placed relates on it, in
/// order), each read as of `at`.
pub async fn pinned(client: &Client, event: &str, at: u64) -> Result<Vec<Pinned>, ClientError> {
    let ids = related_ids(client, event).await?;
    read_pinned(client, &ids, at).await
}

/// What context event `event` (whose body is `context`) gives a request
/// from the substrate: its pins and its memory, read as of its `as_of`.
pub async fn known(
    client: &Client,
    event: &str,
    context: &ContextBody,
) -> Result<Known, ClientError> {
    let (pinned, memory, shell) = futures_util::future::join3(
        pinned(client, event, context.as_of),
        read_memory(
            client,
            &context.memory,
            context.memory_at.unwrap_or(context.as_of),
        ),
        read_shell(client, context.shell.as_ref()),
    )
    .await;
    Ok(Known {
        pinned: pinned?,
        memory: memory?,
        shell: shell?,
    })
}

/// A hermitcrab's shell as its context event recorded it: the identity's
/// blocks and the constitution, as of the commit named (an invalid block
/// is left out, as it was when the run read it).
pub async fn read_shell(
    client: &Client,
    record: Option<&crate::contract::ShellRecord>,
) -> Result<Option<crate::blocks::crab::Crab>, ClientError> {
    let Some(record) = record else {
        return Ok(None);
    };
    let store = crate::blocks::store::BlockStore::new(client.clone(), &record.identity);
    let (blocks, constitution) = futures_util::future::join(
        store.all(Some(record.at)),
        store.constitution(Some(record.at)),
    )
    .await;
    Ok(Some(crate::blocks::crab::Crab {
        constitution: constitution?,
        blocks: blocks?.0.into_iter().filter_map(|s| s.block.ok()).collect(),
    }))
}

/// The memory scopes `scopes`, every entry of each, as of `at`.
pub async fn read_memory(
    client: &Client,
    scopes: &[String],
    at: u64,
) -> Result<Vec<Pinned>, ClientError> {
    read_pinned(client, scopes, at).await
}

/// The memory scopes of `scopes` this run may read, each whole, as they
/// are now — the first at head, the rest as of that same commit; answers
/// those read and the commit.
pub async fn read_memory_now(
    client: &Client,
    scopes: &[&str],
) -> (Vec<String>, Vec<Pinned>, Option<u64>) {
    let (mut names, mut read, mut at) = (Vec::new(), Vec::new(), None);
    for scope in scopes {
        let opts = ScopeOpts {
            as_of: at,
            ..ScopeOpts::default()
        };
        let Ok(result) = client.scope(&[*scope], opts).await else {
            continue; // outside this run's reach: no memory of that kind
        };
        at = Some(result.as_of);
        if let Some(own) = result.scopes.into_iter().next() {
            names.push((*scope).to_owned());
            read.push(Pinned {
                scope: (*own).clone(),
                members: result.chunks.iter().map(|c| (**c).clone()).collect(),
            });
        }
    }
    (names, read, at)
}

/// Fills in the text of each instruction file `context` names by its
/// `knowledge-file` chunk (read together).
pub async fn fill_files(client: &Client, context: &mut ContextBody) -> Result<(), ClientError> {
    let reads = futures_util::future::join_all(context.instructions.iter().map(|file| async {
        match &file.chunk {
            Some(id) => client
                .scope(
                    &[id.as_str()],
                    ScopeOpts {
                        limit: Some(1),
                        ..ScopeOpts::default()
                    },
                )
                .await
                .map(Some),
            None => Ok(None),
        }
    }))
    .await;
    for (file, read) in context.instructions.iter_mut().zip(reads) {
        if let Some(read) = read? {
            let chunk = read
                .scopes
                .first()
                .map(|c| c.body_value())
                .unwrap_or_default();
            let recorded: KnowledgeFile = serde_json::from_value(chunk).unwrap_or_default();
            file.text = recorded.text;
        }
    }
    Ok(())
}

/// The chunks placed relates on `scope`, in order.
pub async fn related_ids(client: &Client, scope: &str) -> Result<Vec<String>, ClientError> {
    let related = client
        .scope(
            &[scope],
            ScopeOpts {
                kind: TypeFilter::Relates,
                ..ScopeOpts::default()
            },
        )
        .await?;
    Ok(related.chunks.iter().map(|c| c.id.clone()).collect())
}

/// Scopes `ids`, read together, each whole as of `at`.
pub async fn read_pinned(
    client: &Client,
    ids: &[String],
    at: u64,
) -> Result<Vec<Pinned>, ClientError> {
    let reads = futures_util::future::join_all(ids.iter().map(|id| async move {
        let opts = ScopeOpts {
            as_of: Some(at),
            ..ScopeOpts::default()
        };
        client.scope(&[id.as_str()], opts).await
    }))
    .await;
    let mut out = Vec::new();
    for read in reads {
        let read = read?;
        if let Some(scope) = read.scopes.into_iter().next() {
            out.push(Pinned {
                scope: (*scope).clone(),
                members: read.chunks.iter().map(|c| (**c).clone()).collect(),
            });
        }
    }
    Ok(out)
}

/// The agent's own tools, answered without a run.
pub fn own_tools() -> Vec<Value> {
    vec![
        json!({
            "name": "ask_user",
            "description": "Asks the person a question and waits for the answer. Use it when \
                you cannot go on without a decision only they can make; not for permission \
                (tools ask for that themselves). When no one is attached, the answer says so \
                and you must decide yourself.",
            "input_schema": {
                "type": "object",
                "properties": {
                    "question": {"type": "string", "description": "The question, complete on its own."},
                    "options": {"type": "array", "items": {"type": "string"}, "description": "Suggested answers, if there are a few."}
                },
                "required": ["question"]
            }
        }),
        json!({
            "name": "scope",
            "description": "Reads the substrate hermitcrab keeps, within what this run may \
                read (this session, its processes, the programs, and any scope the person \
                gave with --context): scopes by id, or a full-text search with `match` — \
                within `ids`, or this session's whole history when no ids are given (older \
                turns stay here after a compaction). A scope you read by id is added to your \
                knowledge from the next turn on, and stays in it for the session's next \
                runs until you `unpin` it.",
            "input_schema": {
                "type": "object",
                "properties": {
                    "ids": {"type": "array", "items": {"type": "string"}, "description": "Scope ids; several mean their intersection. Default: this session (with `match`)."},
                    "match": {"type": "string", "description": "Full-text query."},
                    "as_of": {"type": "integer", "minimum": 1, "description": "Read as the substrate was at this commit (a number from an earlier answer's `as_of`); default now."},
                    "limit": {"type": "integer", "minimum": 1, "description": "At most this many members (default 50)."},
                    "unpin": {"type": "array", "items": {"type": "string"}, "description": "Scope ids to drop from your knowledge (from the next turn on)."}
                }
            }
        }),
        json!({
            "name": "todo",
            "description": "Keeps your plan for multi-step work: the whole list each call \
                (it replaces the previous one), each item pending, in_progress or completed. \
                The person sees it. Use it for work of three steps or more.",
            "input_schema": {
                "type": "object",
                "properties": {
                    "items": {"type": "array", "items": {
                        "type": "object",
                        "properties": {
                            "content": {"type": "string"},
                            "status": {"type": "string", "enum": ["pending", "in_progress", "completed"]}
                        },
                        "required": ["content", "status"]
                    }}
                },
                "required": ["items"]
            }
        }),
    ]
}

/// The names of the agent's own tools (`own_tools` defines them).
pub const OWN_TOOLS: [&str; 3] = ["ask_user", "scope", "todo"];

/// Whether `name` is one of the agent's own tools.
pub fn is_own_tool(name: &str) -> bool {
    OWN_TOOLS.contains(&name)
}
