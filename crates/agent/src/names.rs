//! Tool names: hermitcrab's (the program names) and Claude Code's (`Bash`,
//! `Read`, …), which programs written for the Agent SDK expect. Which of
//! the two the model sees is the run's `tool_names` setting, recorded in
//! its `agent-config`; rules, matchers and tool lists take both, always.

use serde::{Deserialize, Serialize};

/// Which names the model sees and events report.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ToolNames {
    /// The program names (`shell`, `read`, …).
    #[default]
    Hermitcrab,
    /// Claude Code's (`Bash`, `Read`, …).
    Claude,
}

impl ToolNames {
    /// Its name in configuration and flags.
    pub fn as_str(self) -> &'static str {
        match self {
            ToolNames::Hermitcrab => "hermitcrab",
            ToolNames::Claude => "claude",
        }
    }

    /// The naming called `name`.
    pub fn parse(name: &str) -> Option<ToolNames> {
        match name {
            "hermitcrab" => Some(ToolNames::Hermitcrab),
            "claude" => Some(ToolNames::Claude),
            _ => None,
        }
    }

    /// How a tool whose program is `program` is named.
    pub fn show(self, program: &str) -> &str {
        match self {
            ToolNames::Hermitcrab => program,
            ToolNames::Claude => TABLE
                .iter()
                .find(|(p, _)| *p == program)
                .map_or(program, |(_, c)| c),
        }
    }
}

/// Program ↔ Claude Code's name.
const TABLE: &[(&str, &str)] = &[
    ("shell", "Bash"),
    ("read", "Read"),
    ("write", "Write"),
    ("edit", "Edit"),
    ("glob", "Glob"),
    ("grep", "Grep"),
    ("web-fetch", "WebFetch"),
    ("agent", "Task"),
    ("todo", "TodoWrite"),
    ("skill", "Skill"),
    ("ask_user", "AskUserQuestion"),
    ("exit_plan", "ExitPlanMode"),
];

/// The program a tool named `name` is — by Claude Code's name or its own
/// (`MultiEdit` and `Agent`, Claude Code's other names, too).
pub fn program_of(name: &str) -> &str {
    match name {
        "MultiEdit" => "edit",
        "Agent" => "agent",
        _ => TABLE
            .iter()
            .find(|(_, c)| *c == name)
            .map_or(name, |(p, _)| p),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_names_lead_to_the_program_and_back() {
        for (program, claude) in TABLE {
            assert_eq!(program_of(claude), *program);
            assert_eq!(program_of(program), *program);
            assert_eq!(ToolNames::Claude.show(program), *claude);
            assert_eq!(ToolNames::Hermitcrab.show(program), *program);
        }
        assert_eq!(program_of("mcp__x__y"), "mcp__x__y");
        assert_eq!(ToolNames::Claude.show("mcp__x__y"), "mcp__x__y");
    }
}
