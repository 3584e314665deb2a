//! The run's gates: what it has used — model calls, tokens (input, output,
//! cache write, cache read), dollars from the price table, time in the
//! API, how full the context window was at the last call — checked before
//! every call against its limits (turns, budget) and the compaction
//! threshold; written on its process as its totals.

use super::stop::Stop;
use crate::config::AgentConfig;
use crate::contract::{ChildTotals, Denial, ModelTotals, RunOutcome, RunTotals, Tokens, Work};
use model::{LimitsTable, PriceTable, Usage};

/// A reply's limit when neither the configuration nor the table gives one.
const FALLBACK_MAX_TOKENS: u32 = 8_192;
/// The most a reply is asked for by default, whatever the model allows:
/// longer replies are rare and a large `max_tokens` slows the first byte.
const DEFAULT_MAX_TOKENS_CAP: u32 = 32_000;
/// A context window assumed for a model the table does not know.
const FALLBACK_CONTEXT_WINDOW: u64 = 200_000;
/// Compaction starts above this share of the context window, unless the
/// configuration says otherwise.
pub const DEFAULT_COMPACT_AT: f64 = 0.7;

/// The price and limits tables of a run: the catalogue's, and what its
/// configuration says of models (`[models."ID"]`).
pub(crate) fn tables(config: &AgentConfig) -> (PriceTable, LimitsTable) {
    let (mut prices, mut limits) = (PriceTable::default(), LimitsTable::default());
    for (model, settings) in &config.models {
        settings.apply(model, &mut prices, &mut limits);
    }
    (prices, limits)
}

/// The reply limit of a run: configured, else the model's (capped).
pub fn max_tokens(config: &AgentConfig) -> u32 {
    if let Some(n) = config.max_output_tokens {
        return n;
    }
    let base = tables(config)
        .1
        .get(&config.model)
        .map_or(FALLBACK_MAX_TOKENS, |l| {
            l.max_output.min(DEFAULT_MAX_TOKENS_CAP)
        });
    match config.thinking {
        Some(budget) if budget >= base => budget + FALLBACK_MAX_TOKENS,
        _ => base,
    }
}

/// The limits a run is held to.
#[derive(Clone, Debug)]
struct Limits {
    model: String,
    max_turns: Option<u32>,
    max_budget_usd: Option<f64>,
    compact_at: f64,
    window: u64,
}

/// A run's totals and its limits.
#[derive(Clone, Debug)]
pub(crate) struct Gates {
    limits: Limits,
    prices: PriceTable,
    priced: bool,
    turns: u32,
    usage: Tokens,
    cost_usd: f64,
    api_ms: u64,
    /// Input tokens of the last call over the context window, in percent.
    context_percent: f64,
    denials: Vec<Denial>,
    children: Vec<ChildTotals>,
    /// Its own calls by model.
    models: Vec<ModelTotals>,
    /// The cost of the last call.
    last_cost: f64,
    /// The model calls made when the run last compacted.
    compacted_at: Option<u32>,
    /// Whether the person was told the model has no price.
    warned_price: bool,
    /// A model with no price whose calls are counted at
    /// [`model::catalog::CONSERVATIVE_PRICE`], for the budget's sake.
    conservative: Option<String>,
    /// Its tools' time and lines.
    work: Work,
}

impl Gates {
    /// Empty totals for `config`'s model and limits.
    pub fn new(config: &AgentConfig) -> Gates {
        let (mut prices, _) = tables(config);
        let window = window_of(config);
        let conservative = conservatively(&mut prices, config);
        Gates {
            conservative,
            limits: Limits {
                model: config.model.clone(),
                max_turns: config.max_turns,
                max_budget_usd: config.max_budget_usd,
                compact_at: config.compact_at.unwrap_or(DEFAULT_COMPACT_AT),
                window,
            },
            priced: prices.price(&config.model).is_some(),
            prices,
            turns: 0,
            usage: Tokens::default(),
            cost_usd: 0.0,
            api_ms: 0,
            context_percent: 0.0,
            denials: Vec::new(),
            children: Vec::new(),
            models: Vec::new(),
            last_cost: 0.0,
            compacted_at: None,
            warned_price: false,
            work: Work::default(),
        }
    }

    /// Goes on from `recorded`: what a run claimed again counted under its
    /// earlier claims (its calls, tokens, cost, refusals, sub-agents).
    pub fn resume(&mut self, recorded: &RunTotals) {
        self.turns = recorded.turns;
        self.usage = recorded.usage;
        self.cost_usd = recorded.cost_usd.unwrap_or(0.0);
        self.api_ms = recorded.duration_api_ms;
        self.denials = recorded.permission_denials.clone();
        self.children = recorded.children.clone();
        self.models = recorded.models.clone();
        if self.models.is_empty() && recorded.turns > 0 {
            // (one model: recorded as the run's, less its sub-agents')
            let mut own = recorded.usage;
            let mut cost = recorded.cost_usd;
            for child in &recorded.children {
                own = own.less(&child.usage);
                cost = cost.map(|c| round(c - child.cost_usd.unwrap_or(0.0)));
            }
            self.models.push(ModelTotals {
                model: recorded.model.clone(),
                turns: recorded.turns,
                usage: own,
                cost_usd: cost,
            });
        }
    }

    /// The run goes on with `config`'s model (a fallback): its window
    /// and its price from now on.
    pub fn set_model(&mut self, config: &AgentConfig) {
        self.limits.model = config.model.clone();
        self.limits.window = window_of(config);
        if let Some(model) = conservatively(&mut self.prices, config) {
            self.conservative = Some(model);
            self.warned_price = false;
        }
        self.priced = self.priced && self.prices.price(&config.model).is_some();
    }

    /// The gate that stops the next call, if one does.
    pub fn check(&self) -> Option<Stop> {
        if let Some(max) = self.limits.max_turns
            && self.turns >= max
        {
            return Some(Stop::MaxTurns(max));
        }
        if let Some(budget) = self.limits.max_budget_usd
            && self.priced
            && self.cost_usd >= budget
        {
            return Some(Stop::MaxBudget(budget));
        }
        None
    }

    /// Once: what to tell a person when the model has no price (a
    /// budget is then kept at the dearest Claude model's prices).
    pub fn price_warning(&mut self) -> Option<String> {
        if let (Some(model), false) = (&self.conservative, self.warned_price) {
            self.warned_price = true;
            let p = model::catalog::CONSERVATIVE_PRICE;
            return Some(format!(
                "no price is known for model `{model}`: its calls are counted at the dearest Claude \
                 model's prices (${} in, ${} out per million tokens), so the budget of ${:.2} \
                 holds; name its own in the configuration ([models.\"{model}\"] input = …, \
                 output = …)",
                p.input,
                p.output,
                self.limits.max_budget_usd.unwrap_or_default()
            ));
        }
        if self.priced || self.warned_price {
            return None;
        }
        self.warned_price = true;
        Some(format!(
            "no price is known for model `{}`: counting tokens only (name its prices in the \
             configuration: [models.\"{}\"] input = …, output = …)",
            self.limits.model, self.limits.model
        ))
    }

    /// Whether the last call filled the context window past the threshold.
    /// Not right after a compaction: the one call since (the summary, the
    /// kept turns, the prefix) shows what compacting can free, and
    /// compacting again would pay for a summary each call; a window that
    /// really overflows is compacted on the API's prompt-too-long.
    pub fn needs_compaction(&self) -> bool {
        let just_compacted = self
            .compacted_at
            .is_some_and(|turns| self.turns <= turns + 1);
        !just_compacted && self.context_percent > self.limits.compact_at * 100.0
    }

    /// Records a compaction: the window starts empty again.
    pub fn compacted(&mut self) {
        self.context_percent = 0.0;
        self.compacted_at = Some(self.turns);
    }

    /// Counts one call's usage; answers its cost (0 with no price).
    pub fn add_call(&mut self, model: &str, usage: &Usage, api_ms: u64) -> f64 {
        self.turns += 1;
        let cost = self.add_usage(model, usage, api_ms);
        if let Some(entry) = self.models.iter_mut().find(|m| m.model == model) {
            entry.turns += 1;
        }
        self.context_percent =
            usage.total_input_tokens() as f64 * 100.0 / self.limits.window as f64;
        self.last_cost = cost;
        cost
    }

    /// Counts usage that is not a turn (a compaction's summary).
    pub fn add_usage(&mut self, model: &str, usage: &Usage, api_ms: u64) -> f64 {
        self.usage.add(&Tokens::from(usage));
        self.api_ms += api_ms;
        let priced = self.prices.cost(model, usage).ok();
        let cost = priced.unwrap_or(0.0);
        self.cost_usd += cost;
        let at = match self.models.iter().position(|m| m.model == model) {
            Some(at) => at,
            None => {
                self.models.push(ModelTotals {
                    model: model.to_owned(),
                    ..ModelTotals::default()
                });
                self.models.len() - 1
            }
        };
        let entry = &mut self.models[at];
        entry.usage.add(&Tokens::from(usage));
        entry.cost_usd = priced.map(|c| round(entry.cost_usd.unwrap_or(0.0) + c));
        cost
    }

    /// Adds a sub-agent's totals (from its answer's data) to this run's.
    pub fn add_child(&mut self, process: &str, outcome: &RunOutcome) {
        self.work.add_lines(&outcome.work);
        self.usage.add(&outcome.usage);
        self.cost_usd += outcome.cost_usd.unwrap_or(0.0);
        self.children.push(ChildTotals {
            process: process.to_owned(),
            usage: outcome.usage,
            cost_usd: outcome.cost_usd,
            turns: outcome.turns,
            model: outcome.model.clone(),
        });
    }

    /// Adds a tool run's time and the lines it changed.
    pub fn add_tool(&mut self, work: &Work) {
        self.work.add(work);
    }

    /// Records a refused call.
    pub fn deny(&mut self, denial: Denial) {
        self.denials.push(denial);
    }

    /// Model calls made.
    pub fn turns(&self) -> u32 {
        self.turns
    }

    /// The last call's cost, when the model has a price.
    pub fn last_cost(&self) -> Option<f64> {
        self.priced.then_some(self.last_cost)
    }

    /// The context window, in tokens.
    pub fn window(&self) -> u64 {
        self.limits.window
    }

    /// The totals as the process body carries them.
    pub fn totals(&self) -> RunTotals {
        RunTotals {
            model: self.limits.model.clone(),
            turns: self.turns,
            usage: self.usage,
            cost_usd: self.priced.then(|| round(self.cost_usd)),
            context_percent: (self.context_percent * 10.0).round() / 10.0,
            duration_api_ms: self.api_ms,
            work: self.work,
            permission_denials: self.denials.clone(),
            children: self.children.clone(),
            models: self.models.clone(),
            structured_output: None,
            stop_reason: None,
            stop_message: None,
        }
    }

    /// The totals with how the run ended.
    pub fn final_totals(&self, stop: &Stop) -> RunTotals {
        RunTotals {
            stop_reason: Some(stop.reason()),
            stop_message: stop.message(),
            ..self.totals()
        }
    }

    /// What a parent (or a host) reads of this run from its answer.
    pub fn outcome(&self, stop: &Stop) -> RunOutcome {
        RunOutcome {
            stop_reason: Some(stop.reason()),
            usage: self.usage,
            cost_usd: self.priced.then(|| round(self.cost_usd)),
            turns: self.turns,
            model: self.limits.model.clone(),
            work: self.work,
        }
    }
}

/// With a budget and no price for `config`'s model: the dearest Claude
/// model's prices kept for it in `prices` (a limit the person set is
/// enforced); the model, when so.
fn conservatively(prices: &mut PriceTable, config: &AgentConfig) -> Option<String> {
    if config.max_budget_usd.is_none() || prices.price(&config.model).is_some() {
        return None;
    }
    prices.set(config.model.clone(), model::catalog::CONSERVATIVE_PRICE);
    Some(config.model.clone())
}

/// The context window of `config`'s model.
pub(crate) fn window_of(config: &AgentConfig) -> u64 {
    config.context_window.unwrap_or_else(|| {
        tables(config)
            .1
            .get(&config.model)
            .map_or(FALLBACK_CONTEXT_WINDOW, |l| l.context_window)
    })
}

/// Dollars to a millionth (the body stays readable; sums stay exact
/// enough).
fn round(usd: f64) -> f64 {
    (usd * 1e6).round() / 1e6
}
