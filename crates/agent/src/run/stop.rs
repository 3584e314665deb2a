//! Why a run ended, and what a person is told of it.

use crate::contract::RunStop;

/// Why a run ended.
#[derive(Clone, Debug, PartialEq)]
pub enum Stop {
    /// The model finished.
    EndTurn,
    /// A plan mode run made its plan and no one is attached to approve
    /// it: the plan is the run's result.
    Planned(String),
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
    /// The model did not give structured output that matches the schema
    /// (`--json-schema`) in the calls it had.
    StructuredOutput(String),
}

impl Stop {
    /// `stop_reason` on the process body.
    pub fn reason(&self) -> RunStop {
        match self {
            Stop::EndTurn | Stop::Planned(_) => RunStop::EndTurn,
            Stop::MaxTurns(_) => RunStop::MaxTurns,
            Stop::MaxBudget(_) => RunStop::MaxBudget,
            Stop::Interrupted => RunStop::Interrupted,
            Stop::PromptTooLong(_) => RunStop::PromptTooLong,
            Stop::Error(_) => RunStop::Error,
            Stop::StructuredOutput(_) => RunStop::StructuredOutputRetries,
        }
    }

    /// The process's exit code: 0 done, 1 an error, 3 a gate, 130 interrupted.
    pub fn exit_code(&self) -> i32 {
        i32::from(self.reason().exit_code())
    }

    /// What a person is told.
    pub fn message(&self) -> Option<String> {
        match self {
            Stop::EndTurn | Stop::Planned(_) => None,
            Stop::MaxTurns(n) => Some(format!(
                "stopped after {n} model calls (max_turns); raise --max-turns to let it go on"
            )),
            Stop::MaxBudget(usd) => Some(format!(
                "stopped at the budget of ${} (max_budget_usd); raise --max-budget-usd to let it go on",
                dollars(*usd)
            )),
            Stop::Interrupted => Some("interrupted".into()),
            Stop::PromptTooLong(m) | Stop::Error(m) | Stop::StructuredOutput(m) => Some(m.clone()),
        }
    }
}

/// Dollars as the person wrote them: cents when whole cents, else every
/// digit (`0.001`, not `0.00`).
pub fn dollars(usd: f64) -> String {
    let cents = usd * 100.0;
    if (cents - cents.round()).abs() < 1e-9 {
        format!("{usd:.2}")
    } else {
        format!("{usd}")
    }
}

#[cfg(test)]
mod dollar_tests {
    use super::dollars;

    #[test]
    fn a_budget_below_a_cent_keeps_its_digits() {
        assert_eq!(dollars(0.001), "0.001");
        assert_eq!(dollars(0.25), "0.25");
        assert_eq!(dollars(5.0), "5.00");
        assert_eq!(dollars(0.0125), "0.0125");
    }
}
