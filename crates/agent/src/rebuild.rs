//! Rebuilding the request of any past model call from the substrate alone
//! (`hc trace --request N`): the same function the agent built it with,
//! fed by reads as of the commit the agent recorded on the call's answer.

use crate::catalog;
use crate::config::AgentConfig;
use crate::context::ContextBody;
use crate::request::{Prefix, build, mark_breakpoint};
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
    if item.is_on("answer", PlacementType::Instance) {
        item.body_value()["call"].is_u64()
    } else {
        is_summary(item) && item.body_value()["as_of"].is_u64()
    }
}

/// Whether `item` is a compaction: its call was the summary's.
fn is_summary(item: &ChunkItem) -> bool {
    item.is_on("compaction", PlacementType::Instance)
}

/// The exact body sent for call `n` (from 1) of `session`, as the API it
/// went to received it (the agent always streams).
pub async fn request_body(client: &Client, session: &str, n: usize) -> Result<Vec<u8>, String> {
    let (request, config, summary) = rebuild_request(client, session, n).await?;
    // Every call streams but the summary's.
    let streamed = !summary;
    let body = match config.api {
        crate::ApiKind::Anthropic => model::AnthropicClient::body(&request, streamed),
        crate::ApiKind::Openai => model::OpenAiClient::body(&request, streamed),
    };
    body.map_err(|e| e.to_string())
}

/// The exact request of call `n` (from 1) of `session`, the
/// configuration of the run that made it, and whether the call was a
/// compaction's summary (the one call sent unstreamed).
pub async fn rebuild_request(
    client: &Client,
    session: &str,
    n: usize,
) -> Result<(MessagesRequest, AgentConfig, bool), String> {
    let fail = |e: protocol::ClientError| e.to_string();
    let head = client
        .scope(&[session], ScopeOpts::default())
        .await
        .map_err(fail)?;
    let all = calls(&head.chunks);
    let Some(answer) = n.checked_sub(1).and_then(|i| all.get(i)) else {
        return Err(format!(
            "session `{session}` has {} model call{}; ask for one from 1 to {}",
            all.len(),
            if all.len() == 1 { "" } else { "s" },
            all.len()
        ));
    };
    let body = answer.body_value();
    let (Some(at), Some(process)) = (body["as_of"].as_u64(), body["process"].as_str()) else {
        return Err(format!(
            "answer `{}` does not record how its request was built",
            answer.id
        ));
    };
    let as_of = |n| ScopeOpts {
        as_of: Some(n),
        ..ScopeOpts::default()
    };
    let history = client.scope(&[session], as_of(at)).await.map_err(fail)?;
    let history: Vec<ChunkItem> = history.chunks.iter().map(|c| (**c).clone()).collect();
    let event = history
        .iter()
        .rev()
        .find(|c| {
            c.is_on("context", PlacementType::Instance) && c.body_value()["system"].is_string()
        })
        .ok_or_else(|| format!("no context event before call {n} of `{session}`"))?;
    let context: ContextBody =
        serde_json::from_value(event.body_value()).map_err(|e| e.to_string())?;
    let run = client.scope(&[process], as_of(at)).await.map_err(fail)?;
    let config = run
        .chunks
        .iter()
        .find(|c| c.is_on("agent-config", PlacementType::Instance))
        .map(|c| AgentConfig::parse(&c.body_value()))
        .transpose()?
        .ok_or_else(|| format!("process `{process}` has no agent-config argument"))?;
    let (_, tools) = catalog::program_tools(client, Some(context.as_of), Some(&context.tools))
        .await
        .map_err(fail)?;
    let pinned = catalog::pinned(client, &event.id, context.as_of)
        .await
        .map_err(fail)?;
    let defs: Vec<_> = tools.into_iter().map(|t| t.def).collect();
    let mut request = build(&Prefix::new(&config, &context, &pinned, &defs), &history);
    let summary = is_summary(answer);
    if summary {
        mark_breakpoint(&mut request.messages, false);
        request = crate::compact::summary_request(request);
    }
    Ok((request, config, summary))
}
