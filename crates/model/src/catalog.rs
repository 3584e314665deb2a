//! The Claude models hc knows, as Claude Code's catalogue knows them
//! (2.1.337): each id (and its dated id, where the API has one), its
//! prices, context window and reply limits; the aliases a person types
//! (`opus`, `sonnet`, `haiku`, `fable`, `best`, a `[1m]` suffix,
//! `opusplan`) and what they resolve to today — or to what the person's
//! environment says (`ANTHROPIC_DEFAULT_OPUS_MODEL`, …). The price and
//! limits tables are built from it; configuration adds to them.

use crate::limits::Limits;
use crate::price::Price;

/// One model.
#[derive(Clone, Copy, Debug)]
pub struct Entry {
    /// Its id as a person names it (`claude-sonnet-5-5`).
    pub id: &'static str,
    /// Its dated id, when the API has one (`claude-sonnet-4-5-20250929`).
    pub dated: Option<&'static str>,
    /// Its name in words (`Sonnet 5.5`).
    pub display: &'static str,
    /// Its prices.
    pub price: Price,
    /// Its context window, in tokens.
    pub window: u64,
    /// Whether a million tokens of context are available with the beta
    /// (`[1m]`), its own window being smaller.
    pub beta_1m: bool,
    /// The reply limit asked by default, and the most it allows.
    pub max_output: (u32, u32),
}

/// `context-1m-2025-08-07`: a million tokens of context, for a model
/// whose own window is smaller (`sonnet[1m]`).
pub const BETA_1M: &str = "context-1m-2025-08-07";

/// The default model with an API key (Claude Code's), and the small, fast
/// one.
pub const DEFAULT_MODEL: &str = "claude-sonnet-5-5";
/// The small, fast model (judgements, compressions, `call_llm`'s `fast`).
pub const FAST_MODEL: &str = "claude-haiku-5-5";

/// A price in USD per million tokens: input, output, 5-minute and 1-hour
/// cache writes, cache reads; web searches $10 a thousand.
const fn price(input: f64, output: f64, w5m: f64, w1h: f64, read: f64) -> Price {
    Price {
        input,
        output,
        cache_write_5m: w5m,
        cache_write_1h: w1h,
        cache_read: read,
        web_search_per_1k: 10.0,
        long_prompt: None,
    }
}

const M: u64 = 1_000_000;
const K200: u64 = 200_000;

/// Every model hc knows, newest families first.
pub const MODELS: &[Entry] = &[
    entry(
        "claude-opus-5-5",
        None,
        "Opus 5.5",
        price(4.0, 20.0, 5.0, 8.0, 0.2),
        M,
        false,
        (128_000, 128_000),
    ),
    entry(
        "claude-opus-5",
        None,
        "Opus 5",
        price(5.0, 25.0, 6.25, 10.0, 0.5),
        M,
        false,
        (64_000, 128_000),
    ),
    entry(
        "claude-opus-4-8",
        None,
        "Opus 4.8",
        price(5.0, 25.0, 6.25, 10.0, 0.5),
        M,
        false,
        (64_000, 128_000),
    ),
    entry(
        "claude-opus-4-7",
        None,
        "Opus 4.7",
        price(5.0, 25.0, 6.25, 10.0, 0.5),
        M,
        false,
        (64_000, 128_000),
    ),
    entry(
        "claude-opus-4-6",
        None,
        "Opus 4.6",
        price(5.0, 25.0, 6.25, 10.0, 0.5),
        K200,
        true,
        (64_000, 128_000),
    ),
    entry(
        "claude-opus-4-5",
        Some("claude-opus-4-5-20251101"),
        "Opus 4.5",
        price(5.0, 25.0, 6.25, 10.0, 0.5),
        K200,
        false,
        (32_000, 64_000),
    ),
    entry(
        "claude-opus-4-1",
        Some("claude-opus-4-1-20250805"),
        "Opus 4.1",
        price(15.0, 75.0, 18.75, 30.0, 1.5),
        K200,
        false,
        (32_000, 32_000),
    ),
    entry(
        "claude-opus-4-0",
        Some("claude-opus-4-20250514"),
        "Opus 4",
        price(15.0, 75.0, 18.75, 30.0, 1.5),
        K200,
        false,
        (32_000, 32_000),
    ),
    entry(
        "claude-fable-5-2",
        None,
        "Fable 5.2",
        price(8.0, 40.0, 10.0, 16.0, 0.2),
        M,
        false,
        (128_000, 128_000),
    ),
    entry(
        "claude-fable-5-1",
        None,
        "Fable 5.1",
        price(10.0, 50.0, 12.5, 20.0, 0.25),
        M,
        false,
        (64_000, 128_000),
    ),
    entry(
        "claude-fable-5",
        None,
        "Fable 5",
        price(10.0, 50.0, 12.5, 20.0, 1.0),
        M,
        false,
        (64_000, 128_000),
    ),
    entry(
        "claude-sonnet-5-5",
        None,
        "Sonnet 5.5",
        price(2.0, 10.0, 2.5, 4.0, 0.1),
        M,
        false,
        (128_000, 128_000),
    ),
    entry(
        "claude-sonnet-5",
        None,
        "Sonnet 5",
        price(2.0, 10.0, 2.5, 4.0, 0.2),
        M,
        false,
        (64_000, 128_000),
    ),
    entry(
        "claude-sonnet-4-6",
        None,
        "Sonnet 4.6",
        price(3.0, 15.0, 3.75, 6.0, 0.3),
        K200,
        true,
        (32_000, 128_000),
    ),
    entry(
        "claude-sonnet-4-5",
        Some("claude-sonnet-4-5-20250929"),
        "Sonnet 4.5",
        price(3.0, 15.0, 3.75, 6.0, 0.3),
        K200,
        true,
        (32_000, 64_000),
    ),
    entry(
        "claude-sonnet-4-0",
        Some("claude-sonnet-4-20250514"),
        "Sonnet 4",
        price(3.0, 15.0, 3.75, 6.0, 0.3),
        K200,
        true,
        (32_000, 64_000),
    ),
    entry(
        "claude-3-7-sonnet",
        Some("claude-3-7-sonnet-20250219"),
        "Sonnet 3.7",
        price(3.0, 15.0, 3.75, 6.0, 0.3),
        K200,
        false,
        (32_000, 64_000),
    ),
    entry(
        "claude-haiku-5-5",
        None,
        "Haiku 5.5",
        haiku_55(),
        M,
        false,
        (128_000, 128_000),
    ),
    entry(
        "claude-haiku-4-5",
        Some("claude-haiku-4-5-20251001"),
        "Haiku 4.5",
        price(1.0, 5.0, 1.25, 2.0, 0.1),
        K200,
        false,
        (32_000, 64_000),
    ),
    entry(
        "claude-3-5-haiku",
        Some("claude-3-5-haiku-20241022"),
        "Haiku 3.5",
        price(0.8, 4.0, 1.0, 1.6, 0.08),
        K200,
        false,
        (8_192, 8_192),
    ),
    entry(
        "claude-3-haiku",
        Some("claude-3-haiku-20240307"),
        "Haiku 3",
        price(0.25, 1.25, 0.3, 0.5, 0.03),
        K200,
        false,
        (4_096, 4_096),
    ),
];

/// Haiku 5.5: five times its prices above 100,000 prompt tokens.
const fn haiku_55() -> Price {
    let mut p = price(0.1, 0.5, 0.125, 0.2, 0.01);
    p.long_prompt = Some((100_000, 5.0));
    p
}

#[allow(clippy::too_many_arguments)]
const fn entry(
    id: &'static str,
    dated: Option<&'static str>,
    display: &'static str,
    price: Price,
    window: u64,
    beta_1m: bool,
    max_output: (u32, u32),
) -> Entry {
    Entry {
        id,
        dated,
        display,
        price,
        window,
        beta_1m,
        max_output,
    }
}

/// The price kept for a model with no price when the person set a budget:
/// the dearest Claude model's (Opus 4.1), so the budget is never spent
/// past unawares.
pub const CONSERVATIVE_PRICE: Price = price(15.0, 75.0, 18.75, 30.0, 1.5);

/// The aliases and the model each names today.
pub const ALIASES: &[(&str, &str)] = &[
    ("opus", "claude-opus-5-5"),
    ("sonnet", "claude-sonnet-5-5"),
    ("haiku", "claude-haiku-5-5"),
    ("fable", "claude-fable-5-2"),
];

/// What the person's environment says each family's alias names
/// (`ANTHROPIC_DEFAULT_OPUS_MODEL`, … — proxies and clouds set them).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Overrides {
    /// Family (`opus`, `sonnet`, `haiku`, `fable`) → the id it names.
    pub families: Vec<(String, String)>,
}

impl Overrides {
    /// Read from the environment (`ANTHROPIC_DEFAULT_{OPUS,SONNET,HAIKU,FABLE}_MODEL`).
    pub fn from_env() -> Overrides {
        let families = ALIASES
            .iter()
            .filter_map(|(family, _)| {
                let var = format!("ANTHROPIC_DEFAULT_{}_MODEL", family.to_uppercase());
                let id = std::env::var(var).ok()?.trim().to_owned();
                (!id.is_empty()).then(|| ((*family).to_owned(), id))
            })
            .collect();
        Overrides { families }
    }

    /// The model `family` names.
    fn family(&self, family: &str) -> Option<String> {
        if let Some((_, id)) = self.families.iter().find(|(f, _)| f == family) {
            return Some(id.clone());
        }
        ALIASES
            .iter()
            .find(|(f, _)| *f == family)
            .map(|(_, id)| (*id).to_owned())
    }
}

/// A model name resolved.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Resolved {
    /// The model id to send.
    pub id: String,
    /// Whether a million tokens of context were asked (`[1m]`).
    pub one_m: bool,
}

/// The model `name` names: an alias (`opus`, `sonnet`, `haiku`, `fable`,
/// `best`; `opusplan`, whose model depends on the mode: `planning`), with
/// or without `[1m]`, resolved through `overrides`; anything else as it
/// is (an id, a dated id, another provider's model).
pub fn resolve(name: &str, overrides: &Overrides, planning: bool) -> Resolved {
    let name = name.trim();
    let (base, one_m) = match name
        .strip_suffix("[1m]")
        .or_else(|| name.strip_suffix("[1M]"))
    {
        Some(base) => (base.trim(), true),
        None => (name, false),
    };
    let family = match base {
        "best" => Some("opus"),
        "opusplan" if planning => Some("opus"),
        "opusplan" => Some("sonnet"),
        other => ALIASES.iter().map(|(f, _)| *f).find(|f| *f == other),
    };
    let id = family
        .and_then(|f| overrides.family(f))
        .unwrap_or_else(|| base.to_owned());
    Resolved { id, one_m }
}

/// Whether `name` is an alias (resolved by [`resolve`]), not an id.
pub fn is_alias(name: &str) -> bool {
    let base = name
        .trim()
        .trim_end_matches("[1m]")
        .trim_end_matches("[1M]");
    matches!(base, "best" | "opusplan") || ALIASES.iter().any(|(f, _)| *f == base)
}

/// The entry for `model` (an id or a dated id), if hc knows it.
pub fn find(model: &str) -> Option<&'static Entry> {
    MODELS
        .iter()
        .find(|e| e.id == model || e.dated == Some(model))
}

// (the tables' defaults are the catalogue's: here, so that the tables
// know nothing of it)
impl Default for crate::PriceTable {
    /// The prices of every model in the catalogue, by id and by dated id.
    fn default() -> Self {
        let mut prices = crate::PriceTable::empty();
        for e in MODELS {
            prices.set(e.id, e.price);
            if let Some(dated) = e.dated {
                prices.set(dated, e.price);
            }
        }
        prices
    }
}

impl Default for crate::LimitsTable {
    /// The limits of every model in the catalogue, by id and by dated id.
    fn default() -> Self {
        let mut limits = crate::LimitsTable::empty();
        for e in MODELS {
            limits.set(e.id, limits_of(e));
            if let Some(dated) = e.dated {
                limits.set(dated, limits_of(e));
            }
        }
        limits
    }
}

/// What configuration says of one model (`[models."ID"]`): its prices
/// in USD per million tokens (cache prices, when not given, Anthropic's
/// usual shares of the input price), its context window, its largest
/// reply. What it leaves out stays as the catalogue has it.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelSettings {
    /// Uncached input.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input: Option<f64>,
    /// Output.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<f64>,
    /// Five-minute cache writes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_write_5m: Option<f64>,
    /// One-hour cache writes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_write_1h: Option<f64>,
    /// Cache reads.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_read: Option<f64>,
    /// The context window, in tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_window: Option<u64>,
    /// The largest reply, in tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_output: Option<u32>,
}

impl ModelSettings {
    /// `model`'s entries in `prices` and `limits` as these settings say.
    pub fn apply(
        &self,
        model: &str,
        prices: &mut crate::PriceTable,
        limits: &mut crate::LimitsTable,
    ) {
        let known = prices.price(model).copied();
        let base = match (known, self.input, self.output) {
            (Some(known), _, _) => Some(Price {
                input: self.input.unwrap_or(known.input),
                output: self.output.unwrap_or(known.output),
                ..known
            }),
            (None, Some(input), Some(output)) => Some(Price::anthropic(input, output)),
            _ => None,
        };
        if let Some(base) = base {
            let price = Price {
                cache_write_5m: self.cache_write_5m.unwrap_or(base.cache_write_5m),
                cache_write_1h: self.cache_write_1h.unwrap_or(base.cache_write_1h),
                cache_read: self.cache_read.unwrap_or(base.cache_read),
                ..base
            };
            prices.set(model, price);
        }
        if self.context_window.is_some() || self.max_output.is_some() {
            let known = limits.get(model);
            limits.set(
                model,
                Limits {
                    context_window: self
                        .context_window
                        .or(known.map(|l| l.context_window))
                        .unwrap_or(200_000),
                    max_output: self
                        .max_output
                        .or(known.map(|l| l.max_output))
                        .unwrap_or(8_192),
                },
            );
        }
    }
}

/// The ids a model list names (`{"data": [{"id": …}, …]}`, Anthropic's
/// and OpenAI's alike).
pub(crate) fn listed_ids(body: &[u8]) -> Result<Vec<String>, crate::ModelError> {
    #[derive(serde::Deserialize)]
    struct Listed {
        data: Vec<Item>,
    }
    #[derive(serde::Deserialize)]
    struct Item {
        id: String,
    }
    let listed: Listed = serde_json::from_slice(body).map_err(|e| {
        crate::ModelError::protocol(format!("the model list does not read: {e}"), None)
    })?;
    Ok(listed.data.into_iter().map(|m| m.id).collect())
}

/// The limits of an entry (the most a reply may have).
pub(crate) fn limits_of(e: &Entry) -> Limits {
    Limits {
        context_window: e.window,
        max_output: e.max_output.1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aliases_resolve_to_todays_models_or_the_environments() {
        let none = Overrides::default();
        assert_eq!(resolve("opus", &none, false).id, "claude-opus-5-5");
        assert_eq!(resolve("sonnet", &none, false).id, "claude-sonnet-5-5");
        assert_eq!(resolve("haiku", &none, false).id, "claude-haiku-5-5");
        assert_eq!(resolve("fable", &none, false).id, "claude-fable-5-2");
        assert_eq!(resolve("best", &none, false).id, "claude-opus-5-5");
        assert_eq!(resolve("opusplan", &none, false).id, "claude-sonnet-5-5");
        assert_eq!(resolve("opusplan", &none, true).id, "claude-opus-5-5");
        let one_m = resolve("sonnet[1m]", &none, false);
        assert_eq!(
            (one_m.id.as_str(), one_m.one_m),
            ("claude-sonnet-5-5", true)
        );
        assert_eq!(
            resolve("claude-opus-4-6", &none, false).id,
            "claude-opus-4-6"
        );
        assert_eq!(resolve("llama3", &none, false).id, "llama3");
        let proxied = Overrides {
            families: vec![("sonnet".into(), "us.anthropic.claude-sonnet".into())],
        };
        assert_eq!(
            resolve("sonnet", &proxied, false).id,
            "us.anthropic.claude-sonnet"
        );
        assert!(is_alias("opus[1m]") && !is_alias("claude-opus-5-5"));
    }

    #[test]
    fn every_model_is_found_by_its_id_and_its_dated_id() {
        for e in MODELS {
            assert_eq!(find(e.id).map(|f| f.id), Some(e.id));
            if let Some(dated) = e.dated {
                assert_eq!(find(dated).map(|f| f.id), Some(e.id));
            }
        }
        for (_, id) in ALIASES {
            assert!(find(id).is_some(), "{id}");
        }
        assert!(find(DEFAULT_MODEL).is_some() && find(FAST_MODEL).is_some());
    }
}
