//! Hooks a host answers: the agent asks with a `hook-callback` on its
//! session (a callback an Agent SDK program registered, by its id, with
//! the event's input in Claude Code's shape) and waits for the host's
//! `hook-answer` — Claude Code's hook output, as the program returned it.
//! Both are recorded, so `hc trace` shows what every hook was asked and
//! said.

use super::bodies::Body;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// `hook-callback`: the agent asks a host to run a registered callback.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct HookCallback {
    /// The callback's id, as the program registered it.
    pub callback_id: String,
    /// The event, in Claude Code's name (`PreToolUse`, …).
    pub event: String,
    /// The hook input, in Claude Code's shape.
    pub input: Value,
    /// The call it is about, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_use_id: Option<String>,
    /// The agent process that asks.
    pub process: String,
}

impl Body for HookCallback {
    const TYPE: &'static str = "hook-callback";
}

/// `hook-answer`: a host's answer to a `hook-callback`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct HookAnswer {
    /// The callback's chunk id.
    pub request: String,
    /// What the callback returned (Claude Code's hook output), as it came.
    pub output: Value,
    /// Why there is no output (the callback failed), if so.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl Body for HookAnswer {
    const TYPE: &'static str = "hook-answer";
}

/// Claude Code's hook output, read: what the agent does with it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct HookOutput {
    /// `continue: false`: the run stops, with this reason.
    pub stop: Option<String>,
    /// `decision: "block"` (or exit-2-like): what blocks, with its reason.
    pub block: Option<String>,
    /// `hookSpecificOutput.permissionDecision` (`allow`, `deny`, `ask`)
    /// and its reason.
    pub permission: Option<(String, String)>,
    /// `hookSpecificOutput.updatedInput`.
    pub updated_input: Option<Value>,
    /// `hookSpecificOutput.updatedMCPToolOutput` (a post-tool hook's):
    /// what the model reads instead of the tool's result.
    pub updated_output: Option<Value>,
    /// `hookSpecificOutput.additionalContext`, `systemMessage`: told to the model.
    pub context: Vec<String>,
}

impl HookOutput {
    /// Reads `output`; `None` when it is not an object (a callback that
    /// answered garbage decides nothing).
    pub fn read(output: &Value) -> Option<HookOutput> {
        let fields = output.as_object()?;
        let text = |v: Option<&Value>| v.and_then(Value::as_str).map(str::to_owned);
        let specific = fields.get("hookSpecificOutput").and_then(Value::as_object);
        let reason = text(fields.get("reason")).unwrap_or_default();
        let mut out = HookOutput::default();
        if fields.get("continue").and_then(Value::as_bool) == Some(false) {
            out.stop = Some(
                text(fields.get("stopReason")).unwrap_or_else(|| "a hook stopped the run".into()),
            );
        }
        match text(fields.get("decision")).as_deref() {
            Some("block") => out.block = Some(reason.clone()),
            Some("approve") => out.permission = Some(("allow".into(), reason.clone())),
            _ => {}
        }
        if let Some(specific) = specific {
            if let Some(decision) = text(specific.get("permissionDecision")) {
                let why = text(specific.get("permissionDecisionReason")).unwrap_or_default();
                out.permission = Some((decision, why));
            }
            out.updated_input = specific
                .get("updatedInput")
                .filter(|v| v.is_object())
                .cloned();
            out.updated_output = specific
                .get("updatedMCPToolOutput")
                .filter(|v| !v.is_null())
                .cloned();
            out.context.extend(text(specific.get("additionalContext")));
        }
        out.context.extend(text(fields.get("systemMessage")));
        Some(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn claude_codes_hook_output_reads_as_what_to_do() {
        let out = HookOutput::read(&json!({
            "hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny",
                "permissionDecisionReason": "no rm", "updatedInput": {"command": "ls"},
                "additionalContext": "be careful"},
            "systemMessage": "noted"
        }))
        .unwrap();
        assert_eq!(out.permission, Some(("deny".into(), "no rm".into())));
        assert_eq!(out.updated_input, Some(json!({"command": "ls"})));
        assert_eq!(out.context, vec!["be careful", "noted"]);
        let stop = HookOutput::read(&json!({"continue": false, "stopReason": "enough"})).unwrap();
        assert_eq!(stop.stop.as_deref(), Some("enough"));
        let block =
            HookOutput::read(&json!({"decision": "block", "reason": "tests fail"})).unwrap();
        assert_eq!(block.block.as_deref(), Some("tests fail"));
        assert_eq!(HookOutput::read(&json!("garbage")), None);
        assert_eq!(HookOutput::read(&json!({})), Some(HookOutput::default()));
    }
}
