//! Sub-agents: the `agent` program called as a tool. Its process is its
//! own session, under its parent's; it reads what its parent reads and
//! writes only its own tree; it inherits its parent's configuration one
//! level deeper; nesting stops at `max_depth`.

use crate::config::{AgentConfig, DEFAULT_MAX_DEPTH};
use protocol::{Boundary, ChunkDecl, NewPlacement, RunArgs};
use serde_json::Value;

/// Model calls a sub-agent may make when its parent set no limit.
const SUB_AGENT_TURNS: u32 = 50;

/// Why a sub-agent may not be started by an agent configured so, if it
/// may not.
pub(super) fn depth_refusal(config: &AgentConfig) -> Option<String> {
    let max = config.max_depth.unwrap_or(DEFAULT_MAX_DEPTH);
    (config.depth >= max).then(|| {
        format!(
            "sub-agents nest at most {max} deep and this agent is at depth {}: do this \
             part of the task yourself",
            config.depth
        )
    })
}

/// What a parent hands its sub-agent of its knowledge.
pub(super) struct Handed<'a> {
    /// The scopes it pins (culture among them when pinned).
    pub pins: &'a [String],
    /// Its instruction files (by chunk) and git facts.
    pub inherit: &'a Value,
}

/// A sub-agent's run: its configuration (the parent's, one level deeper,
/// with the model the call names), its parent's knowledge (a `context`
/// argument: the pins, the instruction files, the git facts — memory it
/// reads itself, as its parent did), and a write boundary of its own tree.
pub(super) fn sub_agent_args(
    parent: &AgentConfig,
    args: &mut RunArgs,
    input: &Value,
    handed: Handed<'_>,
    def: Option<&crate::sources::agents::AgentDef>,
) {
    let mut config = parent.clone();
    config.depth += 1;
    // the block tools carry over; the hermitcrab's shell and history are
    // its top run's
    config.hermitcrab = false;
    // a custom agent: its prompt, its tools, its model — recorded on the
    // sub-agent's process with the rest of its configuration
    // its model, as Claude Code picks it: the call's, else its file's,
    // else `CLAUDE_CODE_SUBAGENT_MODEL`, else its parent's — an alias
    // (`sonnet`) resolved; one naming the parent's own family keeps the
    // parent's exact model
    let mut named = parent.subagent_model.clone();
    if let Some(def) = def {
        config.agent_type = Some(def.name.clone());
        config.system = Some(def.prompt.clone()).filter(|p| !p.is_empty());
        config.tools = def.tools.clone();
        named = def.model.clone().or(named);
    }
    if let Some(model) = input["model"].as_str().filter(|m| !m.is_empty()) {
        named = Some(model.to_owned());
    }
    if let Some(model) = named.filter(|m| m != "inherit") {
        config.model = sub_agent_model(parent, &model);
    }
    config.max_turns = config.max_turns.or(Some(SUB_AGENT_TURNS));
    args.chunks.push(
        ChunkDecl::generated()
            .body(serde_json::to_value(&config).unwrap_or_default())
            .on(NewPlacement::instance("agent-config")),
    );
    // It starts knowing what its parent knows.
    let mut context = serde_json::json!({"pins": handed.pins});
    if let (Some(fields), Some(inherit)) = (context.as_object_mut(), handed.inherit.as_object()) {
        fields.extend(inherit.clone());
    }
    args.chunks.push(
        ChunkDecl::generated()
            .body(context)
            .on(NewPlacement::instance("context")),
    );
    args.write_boundary = Some(Boundary::Roots(Vec::new()));
}

/// The refusal of a `subagent_type` no custom agent has, naming those
/// there are.
pub(super) fn unknown_kind(
    input: &Value,
    agents: &[crate::sources::agents::AgentDef],
) -> Option<String> {
    let kind = input["subagent_type"].as_str().filter(|k| !k.is_empty())?;
    if agents.iter().any(|a| a.name == kind) {
        return None;
    }
    let known: Vec<&str> = agents.iter().map(|a| a.name.as_str()).collect();
    Some(format!(
        "no custom agent `{kind}`; {}",
        if known.is_empty() {
            "there are none: leave out `subagent_type`".to_owned()
        } else {
            format!("the custom agents are: {}", known.join(", "))
        }
    ))
}

/// The model a sub-agent of `parent` runs on when `named`: the parent's
/// own when `named` is the alias of its family (`opus` under
/// `claude-opus-5-5[1m]`'s parent keeps the parent's), else `named`
/// resolved.
fn sub_agent_model(parent: &crate::config::AgentConfig, named: &str) -> String {
    let resolved = parent.resolve_model(named);
    let family = |id: &str| {
        ["opus", "sonnet", "haiku", "fable"]
            .into_iter()
            .find(|f| id.contains(&format!("-{f}")))
    };
    match (model::catalog::is_alias(named), family(&parent.model)) {
        (true, Some(f)) if family(&resolved) == Some(f) => parent.model.clone(),
        _ => resolved,
    }
}
