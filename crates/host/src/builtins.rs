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

/// Runs the built-in called `name` in this process (`hc program NAME`,
/// or forked from the zygote): its own runtime, left without waiting for
/// the stdin reader parked in `read(2)`. A program that answered and
/// chose its exit code exits with it here.
pub fn run_program(name: &str) -> anyhow::Result<()> {
    let Some(builtin) = find(name) else {
        let names: Vec<&str> = all().map(|b| b.name).collect();
        anyhow::bail!(
            "no built-in program `{name}`; the built-ins are: {}",
            names.join(", ")
        );
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| anyhow::anyhow!("cannot start the async runtime: {e}"))?;
    let outcome = rt.block_on((builtin.main)());
    // The stdin reader is a blocking thread parked in read(2) until the
    // engine closes the pipe; do not wait for it.
    rt.shutdown_background();
    match outcome {
        Ok(()) => Ok(()),
        // The program answered and chose its exit code.
        Err(protocol::program::ProgramError::Exit(code, message)) => {
            if !message.is_empty() {
                eprintln!("{message}");
            }
            std::process::exit(code)
        }
        Err(e) => Err(e.into()),
    }
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
