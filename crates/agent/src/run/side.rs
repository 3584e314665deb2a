//! Model calls beside the conversation — `call_llm`, and the summary a
//! block's compression asks for — each counted in the run's cost and
//! recorded on the session as an `llm-call` (whose request a rebuild makes
//! again from it); and an entry added to a block with the compressions it
//! needs on the way.

use super::gates::Gates;
use super::writer::SessionWriter;
use crate::blocks::{Block, Path, Placed, dotted, grow::compression_prompt};
use crate::contract::{Entry, LlmCall, LlmPurpose};
use std::sync::Arc;
use std::time::Instant;

/// The most tokens a compression's summary may have.
const SUMMARY_TOKENS: u32 = 1024;

/// What a side call needs of the run.
pub(crate) struct Side<'a> {
    /// The model client (or why there is none).
    pub provider: &'a Result<Arc<model::Provider>, String>,
    /// The session's writer (each call is recorded there).
    pub writer: &'a mut SessionWriter,
    /// The totals (each call is counted there).
    pub gates: &'a mut Gates,
    /// The model `fast` names.
    pub fast_model: &'a str,
}

impl Side<'_> {
    /// Makes `call` as [`Side::call`] does, with the decision `decide`
    /// draws from its answer recorded on it; answers that decision.
    pub async fn call_deciding<T>(
        &mut self,
        call: LlmCall,
        decide: impl FnOnce(&LlmCall) -> (&'static str, T),
    ) -> T {
        let step = |done: &mut LlmCall| {
            let (word, value) = decide(done);
            done.decision = Some(word.to_owned());
            value
        };
        self.call_then(call, step).await.1
    }

    /// Makes `call` (its request from its own fields), counts and records
    /// it; answers it with its text, or its error.
    pub async fn call(&mut self, call: LlmCall) -> LlmCall {
        self.call_then(call, |_| ()).await.0
    }

    /// [`Side::call`], with `step` given the answered call before it is
    /// recorded; answers the call and what `step` made of it.
    async fn call_then<R>(
        &mut self,
        mut call: LlmCall,
        step: impl FnOnce(&mut LlmCall) -> R,
    ) -> (LlmCall, R) {
        call.process = self.writer.me().to_owned();
        let started = Instant::now();
        match self.provider {
            Ok(provider) => match provider.create(&call.request()).await {
                Ok(reply) => {
                    call.text = reply.text();
                    call.cost_usd = self.gates.add_usage(
                        &reply.model,
                        &reply.usage,
                        started.elapsed().as_millis() as u64,
                    );
                    call.usage = reply.usage;
                }
                Err(e) => call.error = Some(e.to_string()),
            },
            Err(why) => call.error = Some(why.clone()),
        }
        let made = step(&mut call);
        let totals = self.gates.totals();
        if let Err(e) = self
            .writer
            .commit(vec![Entry::of(&call)], Some(&totals))
            .await
        {
            self.writer
                .status(format!("a model call could not be recorded: {e}"));
        }
        (call, made)
    }

    /// Summarizes the entries under `path` of `block` into its own text;
    /// answers whether it could.
    async fn compress(&mut self, block: &mut Block, path: &[u8]) -> bool {
        if block.entries_of(path).is_empty() {
            return true;
        }
        let call = LlmCall {
            purpose: LlmPurpose::Compression,
            model: self.fast_model.to_owned(),
            prompt: compression_prompt(block, path),
            max_tokens: SUMMARY_TOKENS,
            block: Some(block.name.clone()),
            path: Some(dotted(path)),
            ..LlmCall::default()
        };
        let done = self.call(call).await;
        match (&done.error, done.text.trim()) {
            (None, summary) if !summary.is_empty() => {
                block.set_summary(path, summary);
                true
            }
            (error, _) => {
                let why = error.as_deref().unwrap_or("the summary came back empty");
                self.writer.status(format!(
                    "block `{}`: the nine entries under `{}` are kept uncompressed ({why}); \
                     compression is tried again at the next entry",
                    block.name,
                    dotted(path)
                ));
                block.defer(path);
                false
            }
        }
    }

    /// Adds `entry` under `at` — first compressing what waits, then each
    /// full node it moves past. Never refuses: a failed compression is
    /// deferred.
    pub async fn add_entry(&mut self, block: &mut Block, at: &[u8], entry: &str) -> Added {
        let mut added = Added::default();
        for pending in block.pending.clone() {
            let path: Path = pending
                .split('.')
                .filter_map(|k| k.bytes().next().filter(u8::is_ascii_digit))
                .map(|b| b - b'0')
                .collect();
            if self.compress(block, &path).await {
                added.compressed.push(pending);
            }
        }
        added.placed = block.add_entry(at, entry);
        for left in added.placed.left.clone() {
            match self.compress(block, &left).await {
                true => added.compressed.push(dotted(&left)),
                false => added.deferred.push(dotted(&left)),
            }
        }
        added
    }
}

/// What adding an entry did.
#[derive(Clone, Debug, Default)]
pub(crate) struct Added {
    /// Where it went, and what it moved past.
    pub placed: Placed,
    /// Nodes summarized.
    pub compressed: Vec<String>,
    /// Nodes whose compression failed (tried again next time).
    pub deferred: Vec<String>,
}
