//! Sub-agents (`seeds/agent.txt`, "Sub-agents"): the `agent` program called
//! as a tool. Its process is its own session, under its parent's; it reads
//! what its parent reads and writes only its own tree; it inherits its
//! parent's configuration one level deeper; nesting stops at `max_depth`.

use crate::config::DEFAULT_MAX_DEPTH;
use crate::run::Run;
use protocol::{Boundary, ChunkDecl, NewPlacement, RunArgs};
use serde_json::Value;

impl Run {
    /// Why a sub-agent may not be started here, if it may not.
    pub(crate) fn depth_refusal(&self) -> Option<String> {
        let max = self.config.max_depth.unwrap_or(DEFAULT_MAX_DEPTH);
        (self.config.depth >= max).then(|| {
            format!(
                "sub-agents nest at most {max} deep and this agent is at depth {}: do this \
                 part of the task yourself",
                self.config.depth
            )
        })
    }

    /// A sub-agent's run: its configuration (the parent's, one level
    /// deeper, with the model the call names), and a write boundary of its
    /// own tree.
    pub(crate) fn sub_agent_args(&self, args: &mut RunArgs, input: &Value) {
        let mut config = self.config.clone();
        config.depth += 1;
        if let Some(model) = input["model"].as_str().filter(|m| !m.is_empty()) {
            config.model = model.to_owned();
        }
        config.max_turns = config.max_turns.or(Some(SUB_AGENT_TURNS));
        args.chunks.push(
            ChunkDecl::generated()
                .body(serde_json::to_value(&config).unwrap_or_default())
                .on(NewPlacement::instance("agent-config")),
        );
        args.write_boundary = Some(Boundary::Roots(Vec::new()));
    }
}

/// Model calls a sub-agent may make when its parent set no limit.
const SUB_AGENT_TURNS: u32 = 50;
