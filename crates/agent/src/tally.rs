//! What a run has used: model calls, tokens (input, output, cache write,
//! cache read), dollars from the price table, time spent in the API, and
//! how full the context window was at the last call. Checked before every
//! call against the run's gates; written on the process body.

use crate::config::AgentConfig;
use model::{LimitsTable, PriceTable, Usage};
use serde_json::{Value, json};

/// A reply's limit when neither the configuration nor the table gives one.
const FALLBACK_MAX_TOKENS: u32 = 8_192;
/// The most a reply is asked for by default, whatever the model allows:
/// longer replies are rare and a large `max_tokens` slows the first byte.
const DEFAULT_MAX_TOKENS_CAP: u32 = 32_000;
/// A context window assumed for a model the table does not know.
const FALLBACK_CONTEXT_WINDOW: u64 = 200_000;

/// The reply limit of a run: configured, else the model's (capped).
pub fn max_tokens(config: &AgentConfig) -> u32 {
    if let Some(n) = config.max_output_tokens {
        return n;
    }
    let base = LimitsTable::default()
        .get(&config.model)
        .map_or(FALLBACK_MAX_TOKENS, |l| {
            l.max_output.min(DEFAULT_MAX_TOKENS_CAP)
        });
    match config.thinking {
        Some(budget) if budget >= base => budget + FALLBACK_MAX_TOKENS,
        _ => base,
    }
}

/// A run's totals.
#[derive(Clone, Debug)]
pub struct Tally {
    /// Model calls made.
    pub turns: u32,
    /// Tokens, summed.
    pub usage: Usage,
    /// Dollars, when the model has a price.
    pub cost_usd: f64,
    /// Whether the model has a price (else tokens only).
    pub priced: bool,
    /// Milliseconds spent waiting for the API.
    pub api_ms: u64,
    /// Input tokens of the last call over the context window, in percent.
    pub context_percent: f64,
    /// Calls refused: `{tool_use_id, program, input, reason}`.
    pub denials: Vec<Value>,
    /// Sub-agents' totals, each: `{process, usage, cost_usd, turns}`
    /// (their usage and cost are also in this run's).
    pub children: Vec<Value>,
    prices: PriceTable,
    window: u64,
}

impl Tally {
    /// An empty tally for `config`'s model.
    pub fn new(config: &AgentConfig) -> Tally {
        let prices = PriceTable::default();
        let window = config.context_window.unwrap_or_else(|| {
            LimitsTable::default()
                .get(&config.model)
                .map_or(FALLBACK_CONTEXT_WINDOW, |l| l.context_window)
        });
        Tally {
            turns: 0,
            usage: Usage::default(),
            cost_usd: 0.0,
            priced: prices.price(&config.model).is_some(),
            api_ms: 0,
            context_percent: 0.0,
            denials: Vec::new(),
            children: Vec::new(),
            prices,
            window,
        }
    }

    /// The context window, in tokens.
    pub fn window(&self) -> u64 {
        self.window
    }

    /// Counts one call's usage; answers its cost (0 with no price).
    pub fn add_call(&mut self, model: &str, usage: &Usage, api_ms: u64) -> f64 {
        self.turns += 1;
        let cost = self.add_usage(model, usage, api_ms);
        self.context_percent = usage.total_input_tokens() as f64 * 100.0 / self.window as f64;
        cost
    }

    /// Counts usage that is not a turn (a compaction's summary).
    pub fn add_usage(&mut self, model: &str, usage: &Usage, api_ms: u64) -> f64 {
        self.usage.add(usage);
        self.api_ms += api_ms;
        let cost = self.prices.cost(model, usage).unwrap_or(0.0);
        self.cost_usd += cost;
        cost
    }

    /// Adds a sub-agent's totals (from its output's `data`) to this run's.
    pub fn add_child(&mut self, process: &str, data: &Value) {
        let Ok(usage) = serde_json::from_value::<Usage>(data["usage"].clone()) else {
            return;
        };
        self.usage.add(&usage);
        let cost = data["cost_usd"].as_f64().unwrap_or(0.0);
        self.cost_usd += cost;
        self.children.push(json!({
            "process": process, "usage": data["usage"], "cost_usd": data["cost_usd"],
            "turns": data["turns"], "model": data["model"],
        }));
    }

    /// The gate that stops the next call, if one does.
    pub fn gate(&self, config: &AgentConfig) -> Option<crate::run::Stop> {
        if let Some(max) = config.max_turns
            && self.turns >= max
        {
            return Some(crate::run::Stop::MaxTurns(max));
        }
        if let Some(budget) = config.max_budget_usd
            && self.priced
            && self.cost_usd >= budget
        {
            return Some(crate::run::Stop::MaxBudget(budget));
        }
        None
    }

    /// The totals as the process body carries them.
    pub fn body(&self, config: &AgentConfig) -> Value {
        json!({
            "model": config.model,
            "turns": self.turns,
            "usage": {
                "input_tokens": self.usage.input_tokens,
                "output_tokens": self.usage.output_tokens,
                "cache_creation_input_tokens": self.usage.cache_creation_input_tokens,
                "cache_read_input_tokens": self.usage.cache_read_input_tokens,
            },
            "cost_usd": if self.priced { json!(round(self.cost_usd)) } else { Value::Null },
            "context_percent": (self.context_percent * 10.0).round() / 10.0,
            "duration_api_ms": self.api_ms,
            "permission_denials": self.denials,
            "children": self.children,
        })
    }
}

/// Dollars to a millionth (the body stays readable; sums stay exact
/// enough).
fn round(usd: f64) -> f64 {
    (usd * 1e6).round() / 1e6
}
