//! The baseline (`.ci/quality.toml`) and the counts against it: a count
//! above its baseline fails, naming the crate, the count and where each
//! is; a count below it asks for the baseline to be lowered (`--update`
//! lowers it, and never raises one).

use crate::{Counts, MEASURES};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// What `.ci/quality.toml` holds.
#[derive(Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Baseline {
    /// The measurement switches counted outside the `bench` feature.
    #[serde(default)]
    pub levers: Vec<String>,
    /// Crate → measure → the most it may have.
    #[serde(default)]
    pub baseline: BTreeMap<String, BTreeMap<String, u64>>,
}

impl Baseline {
    /// The baseline of `measure` in `krate` (0 when not given).
    pub fn of(&self, krate: &str, measure: &str) -> u64 {
        self.baseline
            .get(krate)
            .and_then(|m| m.get(measure))
            .copied()
            .unwrap_or(0)
    }
}

/// The counts against the baseline.
#[derive(Debug, Default)]
pub struct Verdict {
    /// What rose above its baseline, each said whole.
    pub rose: Vec<String>,
    /// What fell below it: (crate, measure, now).
    pub fell: Vec<(String, String, u64)>,
}

impl Verdict {
    /// Whether the counts are the baseline's.
    pub fn holds(&self) -> bool {
        self.rose.is_empty() && self.fell.is_empty()
    }
}

/// `counts` against `baseline`.
pub fn check(counts: &Counts, baseline: &Baseline) -> Verdict {
    let mut crates: Vec<&String> = counts
        .totals
        .keys()
        .chain(baseline.baseline.keys())
        .collect();
    crates.sort();
    crates.dedup();
    let mut verdict = Verdict::default();
    for krate in crates {
        for measure in MEASURES {
            let (now, most) = (counts.of(krate, measure), baseline.of(krate, measure));
            if now > most {
                verdict.rose.push(rose(counts, krate, measure, now, most));
            } else if now < most {
                verdict.fell.push((krate.clone(), measure.to_owned(), now));
            }
        }
    }
    verdict
}

/// A rise, said with where each count is.
fn rose(counts: &Counts, krate: &str, measure: &str, now: u64, most: u64) -> String {
    let mut said = format!(
        "{krate}: {measure} is {now}, above its baseline of {most} — bring it back to {most} \
         (what each measure asks is in .ci/quality.toml); where:"
    );
    let places = counts
        .places
        .get(krate)
        .and_then(|m| m.get(measure))
        .map_or(&[][..], Vec::as_slice);
    let mut by_file: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for (file, what) in places {
        by_file.entry(file).or_default().push(what);
    }
    for (file, whats) in by_file {
        said.push_str(&format!(
            "\n  {file}: {} ({})",
            whats.len(),
            whats.join(", ")
        ));
    }
    said
}

impl Baseline {
    /// The baseline lowered to what `verdict` found fell (never raised).
    pub fn lowered(mut self, verdict: &Verdict) -> Baseline {
        for (krate, measure, now) in &verdict.fell {
            self.baseline
                .entry(krate.clone())
                .or_default()
                .insert(measure.clone(), *now);
        }
        for measures in self.baseline.values_mut() {
            measures.retain(|_, n| *n > 0);
        }
        self.baseline.retain(|_, m| !m.is_empty());
        self
    }
}
