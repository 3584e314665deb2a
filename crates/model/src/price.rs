//! Prices per model and the cost of a call.

use crate::response::Usage;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// What a model costs, in US dollars per million tokens (and per thousand
/// web searches).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Price {
    /// Uncached input.
    pub input: f64,
    /// Output (thinking included).
    pub output: f64,
    /// Cache writes with the five-minute lifetime.
    pub cache_write_5m: f64,
    /// Cache writes with the one-hour lifetime.
    pub cache_write_1h: f64,
    /// Cache reads.
    pub cache_read: f64,
    /// Web searches, per thousand.
    #[serde(default)]
    pub web_search_per_1k: f64,
    /// Above this many prompt tokens (input, cache reads and writes), every
    /// price times this (Haiku 5.5's long prompts).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub long_prompt: Option<(u64, f64)>,
}

impl Price {
    /// The usual shape of Anthropic prices: cache writes at 1.25× (5 min)
    /// and 2× (1 h) the input price, cache reads at 0.1×, web search $10
    /// per thousand.
    pub fn anthropic(input: f64, output: f64) -> Price {
        Price {
            input,
            output,
            cache_write_5m: input * 1.25,
            cache_write_1h: input * 2.0,
            cache_read: input * 0.1,
            web_search_per_1k: 10.0,
            long_prompt: None,
        }
    }

    /// The cost of `usage` at this price, in US dollars. Cache writes
    /// without a breakdown by lifetime count as five-minute writes.
    pub fn cost(&self, usage: &Usage) -> f64 {
        let (write_5m, write_1h) = match usage.cache_creation {
            Some(c) => (c.ephemeral_5m_input_tokens, c.ephemeral_1h_input_tokens),
            None => (usage.cache_creation_input_tokens, 0),
        };
        let prompt = usage.input_tokens + usage.cache_read_input_tokens + write_5m + write_1h;
        let scale = match self.long_prompt {
            Some((above, factor)) if prompt > above => factor,
            _ => 1.0,
        };
        let per_token = |n: u64, price: f64| n as f64 * price * scale / 1_000_000.0;
        let searches = usage.server_tool_use.map_or(0, |s| s.web_search_requests);
        per_token(usage.input_tokens, self.input)
            + per_token(usage.output_tokens, self.output)
            + per_token(write_5m, self.cache_write_5m)
            + per_token(write_1h, self.cache_write_1h)
            + per_token(usage.cache_read_input_tokens, self.cache_read)
            + searches as f64 * self.web_search_per_1k / 1000.0
    }
}

/// Prices by model id prefix: `claude-sonnet-4-5-20250929` is priced by
/// the longest key it starts with (`claude-sonnet-4-5`, else
/// `claude-sonnet-4`, …).
///
/// [`PriceTable::default`] holds the published prices of current Claude
/// models; configuration adds or replaces entries with
/// [`set`](Self::set) (the table also deserializes from a map of model to
/// [`Price`], to merge with [`merge`](Self::merge)).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct PriceTable {
    prices: BTreeMap<String, Price>,
}

impl PriceTable {
    /// A table with no prices.
    pub fn empty() -> PriceTable {
        PriceTable {
            prices: BTreeMap::new(),
        }
    }

    /// Sets the price for models starting with `model`.
    pub fn set(&mut self, model: impl Into<String>, price: Price) {
        self.prices.insert(model.into(), price);
    }

    /// Adds or replaces every entry of `overrides`.
    pub fn merge(&mut self, overrides: PriceTable) {
        self.prices.extend(overrides.prices);
    }

    /// The price of `model`: the entry with the longest matching prefix.
    pub fn price(&self, model: &str) -> Option<&Price> {
        self.prices
            .iter()
            .filter(|(prefix, _)| model.starts_with(prefix.as_str()))
            .max_by_key(|(prefix, _)| prefix.len())
            .map(|(_, p)| p)
    }

    /// The cost of `usage` on `model`, in US dollars.
    ///
    /// # Errors
    /// When the table has no price for `model`, with what to add.
    pub fn cost(&self, model: &str, usage: &Usage) -> Result<f64, String> {
        self.price(model).map(|p| p.cost(usage)).ok_or_else(|| {
            format!(
                "no price for model `{model}`; add one to the configuration's price table (input, output, cache_write_5m, cache_write_1h, cache_read in USD per million tokens)"
            )
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::response::{CacheCreation, ServerToolUsage};

    #[test]
    fn longest_prefix_wins() {
        let t = PriceTable::default();
        assert_eq!(t.price("claude-opus-4-1-20250805").unwrap().input, 15.0);
        assert_eq!(t.price("claude-opus-4-5-20251101").unwrap().input, 5.0);
        assert_eq!(t.price("claude-sonnet-4-5").unwrap().output, 15.0);
        assert_eq!(t.price("claude-opus-5-5").unwrap().cache_read, 0.2);
        assert_eq!(t.price("claude-sonnet-5-5").unwrap().input, 2.0);
        assert!(t.price("gpt-oss:20b").is_none());
        let err = t.cost("gpt-oss:20b", &Usage::default()).unwrap_err();
        assert!(err.contains("price table"), "{err}");
    }

    #[test]
    fn cost_counts_every_kind_of_token() {
        let p = Price {
            input: 1.0,
            output: 2.0,
            cache_write_5m: 3.0,
            cache_write_1h: 4.0,
            cache_read: 5.0,
            web_search_per_1k: 10.0,
            long_prompt: None,
        };
        let usage = Usage {
            input_tokens: 1_000_000,
            output_tokens: 1_000_000,
            cache_creation_input_tokens: 3_000_000,
            cache_read_input_tokens: 1_000_000,
            cache_creation: Some(CacheCreation {
                ephemeral_5m_input_tokens: 1_000_000,
                ephemeral_1h_input_tokens: 2_000_000,
            }),
            server_tool_use: Some(ServerToolUsage {
                web_search_requests: 100,
                web_fetch_requests: 0,
            }),
        };
        assert!((p.cost(&usage) - (1.0 + 2.0 + 3.0 + 8.0 + 5.0 + 1.0)).abs() < 1e-9);
        let no_breakdown = Usage {
            cache_creation: None,
            server_tool_use: None,
            ..usage
        };
        assert!((p.cost(&no_breakdown) - (1.0 + 2.0 + 9.0 + 5.0)).abs() < 1e-9);
    }

    #[test]
    fn overrides_merge_from_configuration() {
        let mut t = PriceTable::default();
        let o: PriceTable = serde_json::from_str(
            r#"{"claude-sonnet-4-5": {"input": 6, "output": 22.5, "cache_write_5m": 7.5, "cache_write_1h": 12, "cache_read": 0.6}}"#,
        )
        .unwrap();
        t.merge(o);
        assert_eq!(t.price("claude-sonnet-4-5").unwrap().input, 6.0);
        assert_eq!(t.price("claude-opus-4-1").unwrap().input, 15.0);
    }

    #[test]
    fn a_long_prompt_on_haiku_5_5_costs_five_times() {
        let t = PriceTable::default();
        let usage = |input| Usage {
            input_tokens: input,
            output_tokens: 1_000,
            ..Usage::default()
        };
        let short = t.cost("claude-haiku-5-5", &usage(100_000)).unwrap();
        let long = t.cost("claude-haiku-5-5", &usage(100_001)).unwrap();
        assert!((short - (0.01 + 0.0005)).abs() < 1e-9, "{short}");
        assert!((long - 5.0 * (0.0100001 + 0.0005)).abs() < 1e-9, "{long}");
    }
}
