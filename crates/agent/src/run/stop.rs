//! Why a run ended, and what a person is told of it.

use crate::contract::RunStop;

/// Why a run ended.
#[derive(Clone, Debug, PartialEq)]
pub enum Stop {
    /// The model finished.
    EndTurn,
    /// `max_turns` model calls were made.
    MaxTurns(u32),
    /// `max_budget_usd` was spent.
    MaxBudget(f64),
    /// A host interrupted it.
    Interrupted,
    /// The conversation no longer fits the context window.
    PromptTooLong(String),
    /// Something failed; the message says what to do.
    Error(String),
}

impl Stop {
    /// `stop_reason` on the process body.
    pub fn reason(&self) -> RunStop {
        match self {
            Stop::EndTurn => RunStop::EndTurn,
            Stop::MaxTurns(_) => RunStop::MaxTurns,
            Stop::MaxBudget(_) => RunStop::MaxBudget,
            Stop::Interrupted => RunStop::Interrupted,
            Stop::PromptTooLong(_) => RunStop::PromptTooLong,
            Stop::Error(_) => RunStop::Error,
        }
    }

    /// The process's exit code: 0 done, 1 an error, 3 a gate, 130 interrupted.
    pub fn exit_code(&self) -> i32 {
        i32::from(self.reason().exit_code())
    }

    /// What a person is told.
    pub fn message(&self) -> Option<String> {
        match self {
            Stop::EndTurn => None,
            Stop::MaxTurns(n) => Some(format!(
                "stopped after {n} model calls (max_turns); raise --max-turns to let it go on"
            )),
            Stop::MaxBudget(usd) => Some(format!(
                "stopped at the budget of ${usd:.2} (max_budget_usd); raise --max-budget-usd to let it go on"
            )),
            Stop::Interrupted => Some("interrupted".into()),
            Stop::PromptTooLong(m) | Stop::Error(m) => Some(m.clone()),
        }
    }
}
