//! How much a model reads and writes: its context window and its largest
//! reply, by model-name prefix, as the price table does prices.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// A model's limits, in tokens.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Limits {
    /// The most input (prompt) tokens a request may carry.
    pub context_window: u64,
    /// The most tokens one reply may have.
    pub max_output: u32,
}

/// Limits by model-name prefix; the longest matching prefix wins.
/// [`LimitsTable::default`] holds the published limits of current Claude
/// models; configuration adds or replaces entries.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct LimitsTable {
    limits: BTreeMap<String, Limits>,
}

impl LimitsTable {
    /// A table with no limits.
    pub fn empty() -> LimitsTable {
        LimitsTable {
            limits: BTreeMap::new(),
        }
    }

    /// Sets the limits of models starting with `model`.
    pub fn set(&mut self, model: impl Into<String>, limits: Limits) {
        self.limits.insert(model.into(), limits);
    }

    /// The limits of `model`, if the table knows it.
    pub fn get(&self, model: &str) -> Option<Limits> {
        self.limits
            .iter()
            .filter(|(prefix, _)| model.starts_with(prefix.as_str()))
            .max_by_key(|(prefix, _)| prefix.len())
            .map(|(_, l)| *l)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_longest_prefix_wins_and_configuration_overrides() {
        let mut table = LimitsTable::default();
        assert_eq!(
            table.get("claude-sonnet-4-5-20250929").unwrap().max_output,
            64_000
        );
        assert_eq!(table.get("claude-opus-4-1-x").unwrap().max_output, 32_000);
        assert!(table.get("llama3").is_none());
        table.set(
            "llama3",
            Limits {
                context_window: 8192,
                max_output: 2048,
            },
        );
        assert_eq!(table.get("llama3:8b").unwrap().context_window, 8192);
    }
}
