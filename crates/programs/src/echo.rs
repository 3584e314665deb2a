//! `echo`: answers with its input's `text`. The smallest complete program;
//! not a tool the model sees.

use protocol::program::{Output, ProgramDef, ProgramFuture, TOOL_TIMEOUT_MS, serve};
use protocol::{Capabilities, FilesystemAccess, ReadAccess};
use serde::Deserialize;
use serde_json::{Value, json};

fn schema() -> Value {
    json!({
        "type": "object",
        "properties": {"text": {"type": "string", "description": "The text to echo."}},
        "required": ["text"]
    })
}

fn definition() -> ProgramDef {
    ProgramDef {
        name: "echo",
        text: "Answers with its input's text. For trying the engine out; not a tool for models.",
        schema: schema(),
        capabilities: Capabilities {
            filesystem: FilesystemAccess {
                read: ReadAccess::Paths(Vec::new()),
                write: Vec::new(),
            },
            network: false,
            env: Vec::new(),
            programs: Vec::new(),
        },
        timeout_ms: TOOL_TIMEOUT_MS,
        concurrency_safe: true,
        read_only: true,
        tool: false,
    }
}

pub(crate) fn chunks() -> Vec<substrate::ChunkDecl> {
    definition().chunks()
}

#[derive(Deserialize)]
struct Input {
    text: String,
}

pub(crate) fn main() -> ProgramFuture {
    Box::pin(serve("input/echo", async |_, input: Input| {
        Output::ok(input.text, Value::Null)
    }))
}
