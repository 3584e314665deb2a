//! What a run reads before its first call, from outside its session:
//! the instruction files, git facts and date (`context.rs`), the pinned
//! scopes (`knowledge.rs`), the skills (`skills.rs`), the custom
//! sub-agents (`agents.rs`), and the MCP servers it starts before reading
//! its tools (`servers.rs`).

pub mod agents;
pub mod context;
pub mod knowledge;
pub mod servers;
pub mod skills;
