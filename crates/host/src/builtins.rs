//! The built-in programs `hc` carries (`hc program NAME`), and the chunks
//! every project is bootstrapped with.

use protocol::program::Builtin;
use substrate::{ChunkDecl, NewPlacement};

/// The webview programs `hc` carries (`builtin:NAME`): name, page.
pub const BUILTIN_VIEWS: &[(&str, &str)] = &[(
    "notes",
    include_str!("../../../examples/webview/notes/index.html"),
)];

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

/// The bootstrap chunks: the engine's vocabulary, the agent's, every
/// built-in program's, and the webview programs `hc` carries (shown by
/// `hc serve --http`).
pub fn vocabulary() -> Vec<ChunkDecl> {
    let mut out = engine::vocabulary();
    out.extend(agent::vocabulary());
    for builtin in all() {
        out.extend((builtin.chunks)());
    }
    for (name, _) in BUILTIN_VIEWS {
        out.push(
            ChunkDecl::with_id(format!("program/{name}"))
                .name(*name)
                .body(serde_json::json!({
                    "runtime": "webview",
                    "entry": format!("builtin:{name}"),
                    "text": "Notes kept on the tile's own process (an example webview program: \
                             examples/webview/notes/index.html)",
                    "tool": false,
                }))
                .on(NewPlacement::instance("engine/program")),
        );
    }
    out
}
