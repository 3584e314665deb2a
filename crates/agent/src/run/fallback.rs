//! `--fallback-model`: when the model cannot take a call — overloaded
//! after the client's retries, or not known to the API — the run goes on
//! with the next fallback model, for the rest of the run (the next run
//! starts on the model again, as Claude Code's next query does). The
//! switch is a new context event naming the model, so `hc trace
//! --request N` rebuilds every call with the model it went to; hosts are
//! told with a `model_fallback` notice.

use super::Run;
use crate::contract::Notice;
use model::ModelError;

/// Why `e` moves a run to a fallback model, if it does: `overloaded`
/// or `model_not_found`.
pub(super) fn trigger(e: &ModelError) -> Option<&'static str> {
    match e {
        ModelError::Api(api) if api.kind == model::ApiErrorKind::Overloaded => Some("overloaded"),
        ModelError::Api(api) if api.is_model_not_found() => Some("model_not_found"),
        _ => None,
    }
}

/// The model after `current` among `first` and then `fallbacks`.
fn next_after<'a>(first: &'a str, fallbacks: &'a [String], current: &str) -> Option<&'a str> {
    let mut chain = std::iter::once(first).chain(fallbacks.iter().map(String::as_str));
    chain.find(|m| *m == current)?;
    chain.next()
}

impl Run {
    /// The model the run calls now.
    pub(super) fn model(&self) -> &str {
        &self.knowledge.context.model
    }

    /// Moves the run to the next fallback model because of `e`; answers
    /// whether it did (none left, or `e` is not a reason to).
    pub(super) async fn fall_back(&mut self, e: &ModelError) -> bool {
        let Some(trigger) = trigger(e) else {
            return false;
        };
        let current = self.model().to_owned();
        let fallbacks = &self.config.fallback_models;
        let Some(next) = next_after(&self.config.model, fallbacks, &current) else {
            return false;
        };
        let next = next.to_owned();
        let mut context = self.knowledge.context.clone();
        context.model = next.clone();
        let mut config = (*self.config).clone();
        config.model = next.clone();
        context.max_tokens = super::gates::max_tokens(&config);
        let pins = self.knowledge.pins.clone();
        if let Err(why) = self.new_context(context, pins).await {
            self.writer.status(format!(
                "cannot go on with the fallback model {next}: {why}"
            ));
            return false;
        }
        self.gates.set_model(&config);
        self.writer.notify(&Notice::ModelFallback {
            trigger: trigger.to_owned(),
            original_model: current,
            fallback_model: next,
        });
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_model_falls_back_to_the_next_and_the_last_to_none() {
        let fallbacks = vec!["b".to_owned(), "c".to_owned()];
        assert_eq!(next_after("a", &fallbacks, "a"), Some("b"));
        assert_eq!(next_after("a", &fallbacks, "b"), Some("c"));
        assert_eq!(next_after("a", &fallbacks, "c"), None);
        assert_eq!(next_after("a", &[], "a"), None);
    }
}
