//! The built-in programs `hc` carries (`hc program NAME`), and the chunks
//! every project is bootstrapped with.

use protocol::program::Builtin;
use substrate::ChunkDecl;

/// Every built-in program: the tools, then the agent.
pub fn all() -> impl Iterator<Item = &'static Builtin> {
    programs::BUILTINS
        .iter()
        .chain(agent::BUILTINS)
        .chain(mcp::BUILTINS)
}

/// The built-in called `name`.
pub fn find(name: &str) -> Option<&'static Builtin> {
    all().find(|b| b.name == name)
}

/// The bootstrap chunks: the engine's vocabulary, the agent's, and every
/// built-in program's.
pub fn vocabulary() -> Vec<ChunkDecl> {
    let mut out = engine::vocabulary();
    out.extend(agent::vocabulary());
    for builtin in all() {
        out.extend((builtin.chunks)());
    }
    out
}
