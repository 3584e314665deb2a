//! `echo`: commits its input's `text` back as its output. The smallest
//! complete program: read arguments, commit an output, exit 0.

use crate::ProgramError;
use protocol::Client;
use serde_json::json;
use substrate::bootstrap::{ProgramDef, TOOL_TIMEOUT_MS};
use substrate::{ChunkDecl, Declaration, NewPlacement, PlacementType, ScopeOpts};

pub(crate) fn definition() -> ProgramDef {
    ProgramDef {
        name: "echo".into(),
        text: "Echoes its input's text back as its output.".into(),
        schema: json!({
            "type": "object",
            "properties": {"text": {"type": "string", "description": "The text to echo."}},
            "required": ["text"]
        }),
        capabilities: json!({"filesystem": {"read": [], "write": []}, "network": false, "env": []}),
        boundary: json!([]),
        timeout_ms: TOOL_TIMEOUT_MS,
        concurrency_safe: true,
    }
}

pub(crate) async fn run(me: &str) -> Result<(), ProgramError> {
    let (engine, _events) = Client::from_stdio();
    let process = engine.scope(&[me], ScopeOpts::default()).await?;
    let texts: Vec<String> = process
        .chunks
        .iter()
        .filter(|c| c.is_on("input/echo", PlacementType::Instance))
        .filter_map(|c| c.body_value()["text"].as_str().map(str::to_owned))
        .collect();
    if texts.is_empty() {
        return Err(ProgramError::BadInput(
            "echo needs an `input/echo` argument with `text`".into(),
        ));
    }
    let output = ChunkDecl::generated()
        .body(json!({"text": texts.join("\n")}))
        .on(NewPlacement::instance(me))
        .on(NewPlacement::instance("engine/output"));
    engine.commit(Declaration::of(vec![output])).await?;
    Ok(())
}
