//! Rebuilding the request of any past model call from the substrate alone
//! (`hc trace --request N`): the same [`Request`] the agent built it with,
//! fed by reads as of the commit the agent recorded on the call's answer.

use crate::catalog;
use crate::config::AgentConfig;
use crate::contract::{SessionItem, kind_of};
use crate::request::{Prefix, Request};
use model::MessagesRequest;
use protocol::{Client, PlacementType, ScopeOpts};
use substrate::ChunkItem;

/// The model calls of a session, in order: its `answer` chunks that record
/// the commit their request was built from, and its `compaction` chunks
/// (the summary call). Numbered from 1.
pub fn calls(session: &[std::sync::Arc<ChunkItem>]) -> Vec<&ChunkItem> {
    session
        .iter()
        .map(|c| c.as_ref())
        .filter(|c| is_call(c))
        .collect()
}

/// Whether `item` records a model call of its session (its type first:
/// only an answer's or a compaction's body is read).
pub fn is_call(item: &ChunkItem) -> bool {
    matches!(kind_of(item), Some("answer" | "compaction" | "llm-call"))
        && SessionItem::of(item).is_call()
}

/// Why a call's request cannot be rebuilt.
#[derive(Debug, thiserror::Error)]
pub enum RebuildError {
    /// There is no call `n`.
    #[error(
        "session `{session}` has {count} model call{}; ask for one from 1 to {count}",
        if *count == 1 { "" } else { "s" }
    )]
    NoSuchCall {
        /// The session.
        session: String,
        /// How many calls it has.
        count: usize,
    },
    /// The call's chunk does not say how its request was built.
    #[error("answer `{chunk}` does not record how its request was built")]
    NotRecorded {
        /// The call's chunk.
        chunk: String,
    },
    /// No context event before the call.
    #[error("no context event before call {n} of `{session}`")]
    NoContext {
        /// The call.
        n: usize,
        /// The session.
        session: String,
    },
    /// The run that made it has no configuration.
    #[error("process `{process}` has no agent-config argument")]
    NoConfig {
        /// The run's process.
        process: String,
    },
    /// Its configuration does not read.
    #[error(transparent)]
    Config(#[from] crate::config::MalformedConfig),
    /// Reading the substrate failed.
    #[error(transparent)]
    Read(#[from] protocol::ClientError),
    /// The request does not encode.
    #[error(transparent)]
    Encode(#[from] model::ModelError),
}

/// The exact body sent for call `n` (from 1) of `session`, as the API it
/// went to received it (the agent always streams).
pub async fn request_body(
    client: &Client,
    session: &str,
    n: usize,
) -> Result<Vec<u8>, RebuildError> {
    let (request, config, summary) = rebuild_request(client, session, n).await?;
    // Every call streams but the summary's.
    let streamed = !summary;
    let body = match config.api {
        crate::ApiKind::Anthropic => model::AnthropicClient::body(&request, streamed),
        crate::ApiKind::Openai => model::OpenAiClient::body(&request, streamed),
    };
    Ok(body?)
}

/// What a call's chunk records of how its request was built.
struct Recorded {
    /// The commit it was built from.
    as_of: u64,
    /// The agent process that made it.
    process: String,
    /// Whether it was a compaction's summary call.
    summary: bool,
    /// A call beside the conversation: its request is its own.
    side: Option<Box<crate::contract::LlmCall>>,
}

/// The exact request of call `n` (from 1) of `session`, the
/// configuration of the run that made it, and whether the call was a
/// compaction's summary (the one call sent unstreamed).
pub async fn rebuild_request(
    client: &Client,
    session: &str,
    n: usize,
) -> Result<(MessagesRequest, AgentConfig, bool), RebuildError> {
    // a fork's first calls are the session's it was forked from, made there
    let mut session = session.to_owned();
    while let Some(from) = forked_from(client, &session).await?
        && n <= from.calls
    {
        session = from.session;
    }
    let session = session.as_str();
    let call = find_call(client, session, n).await?;
    let as_of = |n| ScopeOpts {
        as_of: Some(n),
        ..ScopeOpts::default()
    };
    if let Some(side) = &call.side {
        // its configuration never changes: read at head
        let config = config_of(client, &call.process, None).await?;
        return Ok((side.request(), config, true));
    }
    let history = client.scope(&[session], as_of(call.as_of)).await?;
    let history: Vec<ChunkItem> = history.chunks.iter().map(|c| (**c).clone()).collect();
    let (event, mut context) = history
        .iter()
        .rev()
        .find_map(|c| match SessionItem::of(c) {
            SessionItem::Context(Some(body)) => Some((c.id.clone(), body)),
            _ => None,
        })
        .ok_or_else(|| RebuildError::NoContext {
            n,
            session: session.to_owned(),
        })?;
    let config = config_of(client, &call.process, Some(call.as_of)).await?;
    let (_, tools) =
        catalog::program_tools(client, Some(context.as_of), Some(&context.tools), &[]).await?;
    catalog::fill_files(client, &mut context).await?;
    let known = catalog::known(client, &event, &context).await?;
    let defs: Vec<_> = tools.into_iter().map(|t| t.def).collect();
    let request = Request::of_session(Prefix::new(&config, &context, &known, &defs), &history);
    let request = match call.summary {
        true => request.summary(),
        false => request.into_next_call(),
    };
    Ok((request, config, call.summary))
}

/// The configuration of agent process `process`, as of `at` (none: head).
async fn config_of(
    client: &Client,
    process: &str,
    at: Option<u64>,
) -> Result<AgentConfig, RebuildError> {
    let opts = ScopeOpts {
        as_of: at,
        ..ScopeOpts::default()
    };
    let run = client.scope(&[process], opts).await?;
    let listed = crate::contract::arguments_of(&run);
    run.chunks
        .iter()
        .find(|c| c.is_on("agent-config", PlacementType::Instance) && listed.contains(&c.id))
        .map(|c| AgentConfig::parse(&c.body_value()))
        .transpose()?
        .ok_or_else(|| RebuildError::NoConfig {
            process: process.to_owned(),
        })
}

/// Call `n` of `session`: what its chunk records.
/// Where `session` was forked from, when it was.
async fn forked_from(
    client: &Client,
    session: &str,
) -> Result<Option<crate::contract::Forked>, RebuildError> {
    let read = client
        .scope(
            &[session],
            ScopeOpts {
                limit: Some(1),
                ..ScopeOpts::default()
            },
        )
        .await?;
    Ok(read
        .scopes
        .first()
        .and_then(|s| crate::contract::SessionBody::parse(&s.body_value()).forked_from))
}

async fn find_call(client: &Client, session: &str, n: usize) -> Result<Recorded, RebuildError> {
    let head = client.scope(&[session], ScopeOpts::default()).await?;
    let all = calls(&head.chunks);
    let Some(chunk) = n.checked_sub(1).and_then(|i| all.get(i)) else {
        return Err(RebuildError::NoSuchCall {
            session: session.to_owned(),
            count: all.len(),
        });
    };
    let recorded = match SessionItem::of(chunk) {
        SessionItem::Answer(a) => a.as_of.map(|at| (at, a.process, false, None)),
        SessionItem::Compaction(c) => c.as_of.map(|at| (at, c.process, true, None)),
        SessionItem::LlmCall(c) => Some((0, c.process.clone(), true, Some(c))),
        _ => None,
    };
    match recorded {
        Some((as_of, process, summary, side)) if !process.is_empty() => Ok(Recorded {
            as_of,
            process,
            summary,
            side,
        }),
        _ => Err(RebuildError::NotRecorded {
            chunk: chunk.id.clone(),
        }),
    }
}
