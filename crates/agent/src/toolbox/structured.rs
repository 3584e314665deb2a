//! Structured output (`--json-schema`, the SDK's `output_format`), as
//! Claude Code does it: the model is offered `StructuredOutput`, whose
//! input schema is the schema; a call that matches it is the run's
//! `structured_output`; one that does not gets the validation errors as
//! its (error) result and the model tries again — at most
//! [`max_attempts`] calls. A run that would end without one is asked once
//! ([`NUDGE`]).

use super::outcome::Outcome;
use crate::run::stop::Stop;
use serde_json::{Value, json};

/// The tool's name, Claude Code's, in either naming.
pub const TOOL: &str = "StructuredOutput";

/// What the model is told when it ends without calling the tool.
pub const NUDGE: &str =
    "You MUST call the StructuredOutput tool to complete this request. Call this tool now.";

/// Calls allowed when the configuration does not say.
pub const MAX_ATTEMPTS: u32 = 5;

/// The tool's definition for `schema`.
pub fn definition(schema: &Value) -> Value {
    json!({
        "name": TOOL,
        "description": "Use this tool to return your final response in the requested structured \
            format. You MUST call this tool exactly once at the end of your response to provide \
            the structured output.",
        "input_schema": schema,
    })
}

/// The run's structured output so far.
#[derive(Debug, Default)]
pub(crate) struct Structured {
    calls: u32,
    output: Option<Value>,
}

impl Structured {
    /// The output a valid call gave, if one did.
    pub fn output(&self) -> Option<&Value> {
        self.output.as_ref()
    }

    /// Answers a call with `input` against `schema`: kept when it
    /// matches; the problems otherwise — and the run stopped once the
    /// model has had its tries.
    pub fn answer(
        &mut self,
        schema: &Value,
        input: &Value,
        attempts: u32,
    ) -> Result<Outcome, Stop> {
        self.calls += 1;
        match protocol::schema::check(schema, input) {
            Ok(()) => {
                self.output = Some(input.clone());
                Ok(Outcome {
                    text: "Structured output provided successfully".into(),
                    data: json!({"structured_output": input}),
                    ..Outcome::default()
                })
            }
            Err(_) if self.calls >= attempts => Err(Stop::StructuredOutput(format!(
                "Failed to provide valid structured output after {} attempts",
                self.calls
            ))),
            Err(problems) => Ok(Outcome::error(format!(
                "Output does not match required schema: {problems}"
            ))),
        }
    }
}
