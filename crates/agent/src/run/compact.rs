//! Compaction (above 70 % of the context window, by default): the model
//! summarizes the session so far; the summary is committed as a
//! `compaction` chunk; the next call's messages start from it, then the
//! most recent turns verbatim (how many is in the chunk, so a rebuild
//! keeps the same). Nothing is deleted — the whole session stays in the
//! substrate, and `scope` still reaches it.

use super::{Run, Stop};
use crate::compact::{holds_text, recent_turns};
use crate::contract::{Compaction, Entry};
use std::time::Instant;

impl Run {
    /// Summarizes the session and starts the messages over from the summary.
    pub(super) async fn compact(&mut self) -> Result<(), Stop> {
        if self.toolbox.hooks().any("pre-compact") {
            let trigger = if self.config.compact_first {
                "manual"
            } else {
                "auto"
            };
            let payload = serde_json::json!({"trigger": trigger});
            let verdict = self.toolbox.hooks().run("pre-compact", None, payload).await;
            if let Some(why) = verdict.halt {
                return Err(Stop::Error(format!(
                    "a pre-compact hook stopped the run: {why}"
                )));
            }
        }
        self.writer.status("compacting the conversation");
        let provider = match &self.provider {
            Ok(p) => std::sync::Arc::clone(p),
            Err(why) => return Err(Stop::Error(why.clone())),
        };
        // `as_of` must hold every result the summary reads: a rebuild of
        // this call reads the session as of it.
        self.writer
            .settle()
            .await
            .map_err(|e| Stop::Error(format!("the session could not be recorded: {e}")))?;
        let started = Instant::now();
        let reply = provider
            .create(&self.request.summary())
            .await
            .map_err(|e| {
                Stop::Error(format!(
                    "the conversation could not be compacted ({e}); the session is intact — resume \
                 it with a model of a larger context window, or start a new one"
                ))
            })?;
        let cost = self.gates.add_usage(
            &reply.model,
            &reply.usage,
            started.elapsed().as_millis() as u64,
        );
        let kept = recent_turns(&self.request.messages(), self.gates.window());
        let mut text = format!(
            "[A summary of the conversation so far, which it replaces]\n\n{}",
            reply.text().trim()
        );
        if let Some(prompt) = self.prompt.as_deref().filter(|p| !holds_text(&kept, p)) {
            text.push_str(&format!(
                "\n\n[The user's latest request, verbatim]\n\n{prompt}"
            ));
        }
        text.push_str(&self.restored(&kept));
        let compaction = Compaction {
            text,
            usage: reply.usage,
            model: reply.model,
            cost_usd: cost,
            process: self.writer.me().to_owned(),
            as_of: Some(self.writer.as_of()),
            keep_messages: kept.len(),
        };
        // Recorded, it starts the request's messages over from the summary
        // and the kept turns, as a rebuild starts them.
        self.record(Entry::of(&compaction), false)
            .await
            .map_err(|e| Stop::Error(format!("cannot record the compaction: {e}")))?;
        self.gates.compacted();
        self.writer.status("compacted; going on from the summary");
        Ok(())
    }
}
