//! The cycle (`design/agent.md`): check the gates, call the model
//! streaming (its text and tool input forwarded as `notify`), record the
//! answer, run the tools it asked for, and again — until the model ends
//! its turn or a gate, an interrupt or an error ends the run.

use crate::request::{Sent, mark_breakpoint};
use crate::run::{Run, Stop};
use model::{ContentBlock, MessageResponse, ModelError, StopReason, StreamEvent};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::time::Instant;

/// `max_tokens` continuations allowed in a row.
const MAX_CONTINUATIONS: u32 = 3;
/// Times `stop` hooks may send the model back to work in one run.
const MAX_STOP_HOOK_TURNS: u32 = 3;
/// Whole calls retried after a stream broke mid-reply.
const STREAM_RETRIES: u32 = 2;

/// What a reply has streamed so far.
#[derive(Default)]
struct Streamed {
    /// Its text, kept if the reply is cut off.
    text: String,
    /// Characters of text, thinking and tool input: what the output
    /// tokens are estimated from when the API has not counted them yet.
    chars: usize,
    /// Tool calls (id, name) by block index, for the input deltas.
    tool_ids: HashMap<usize, (String, String)>,
}

impl Streamed {
    /// The usage of a cut-off reply: what the API reported, its output no
    /// less than about four characters a token of what streamed.
    fn usage(&self, reported: model::Usage) -> model::Usage {
        let estimated = self.chars.div_ceil(4) as u64;
        model::Usage {
            output_tokens: reported.output_tokens.max(estimated),
            ..reported
        }
    }
}

/// How a model call ended, when not with a reply.
enum Failed {
    Stop(Stop),
    /// An interrupt cut the reply after the API began it: what streamed,
    /// and what it cost so far.
    Cut {
        text: String,
        usage: model::Usage,
    },
    /// The stream broke after some of the reply was shown.
    Broken(ModelError),
}

impl Run {
    /// Runs the cycle to its end.
    pub async fn cycle(&mut self) -> Stop {
        let mut continuations = 0;
        let mut warned_price = false;
        let (mut compacted, mut retried) = (false, false);
        let mut stop_hook_turns = 0;
        if let Some(stop) = self.user_prompt_hooks().await {
            return stop;
        }
        loop {
            if self.inbox.interrupted() {
                return Stop::Interrupted;
            }
            if self.client.is_closed() {
                return Stop::Error("the engine is gone; nothing more can be recorded".into());
            }
            if let Some(stop) = self.tally.gate(&self.config) {
                return stop;
            }
            if !self.tally.priced && !warned_price {
                warned_price = true;
                self.status(&format!(
                    "no price is known for model `{}`: counting tokens only{}",
                    self.config.model,
                    if self.config.max_budget_usd.is_some() {
                        "; the budget cannot be enforced"
                    } else {
                        ""
                    }
                ));
            }
            let first = self.tally.turns == 0 && !compacted;
            if (first && self.config.compact_first) || self.needs_compaction() {
                if let Err(stop) = self.compact().await {
                    return stop;
                }
                compacted = true;
            }
            let reply = match self.call_with_retries().await {
                Ok(reply) => reply,
                // Too long for the window: compact, and try once more.
                Err(Stop::PromptTooLong(_)) if !retried => {
                    retried = true;
                    if let Err(stop) = self.compact().await {
                        return stop;
                    }
                    compacted = true;
                    continue;
                }
                Err(stop) => return stop,
            };
            let stop_reason = reply.stop_reason.clone();
            let calls: Vec<model::ToolUseBlock> = reply.tool_uses().cloned().collect();
            if let Err(e) = self.record_answer(&reply, stop_reason.as_ref()).await {
                return Stop::Error(format!("cannot record the answer: {e}"));
            }
            match stop_reason {
                Some(StopReason::ToolUse) if !calls.is_empty() => {
                    continuations = 0;
                    if let Err(stop) = self.run_calls(calls).await {
                        return stop;
                    }
                }
                Some(StopReason::MaxTokens) if continuations < MAX_CONTINUATIONS => {
                    continuations += 1;
                    self.status("the reply hit max_tokens; asking the model to continue");
                }
                Some(StopReason::PauseTurn) => {}
                _ if stop_hook_turns < MAX_STOP_HOOK_TURNS && self.stop_hooks_go_on().await => {
                    stop_hook_turns += 1;
                }
                _ => return Stop::EndTurn,
            }
        }
    }

    /// A model call, made again (with a `discard` to hosts) when its stream
    /// breaks after text was shown.
    async fn call_with_retries(&mut self) -> Result<MessageResponse, Stop> {
        let mut attempt = 0;
        loop {
            match self.call_model().await {
                Ok(reply) => return Ok(reply),
                Err(Failed::Stop(stop)) => return Err(stop),
                // (`call_model` records a cut reply and answers Stop.)
                Err(Failed::Cut { .. }) => return Err(Stop::Interrupted),
                Err(Failed::Broken(e)) if attempt < STREAM_RETRIES => {
                    attempt += 1;
                    self.client.notify_now(json!({"kind": "discard"}));
                    self.status(&format!("the reply broke off ({e}); asking again"));
                }
                Err(Failed::Broken(e)) => return Err(Stop::Error(e.to_string())),
            }
        }
    }

    /// One streamed call; the request is the closed messages plus the open
    /// one, with the conversation's cache breakpoint on its last block.
    async fn call_model(&mut self) -> Result<MessageResponse, Failed> {
        let provider = match &self.provider {
            Ok(p) => std::sync::Arc::clone(p),
            Err(why) => return Err(Failed::Stop(Stop::Error(why.clone()))),
        };
        let closed = self.request.messages.len();
        self.request.messages.extend(self.conversation.tail());
        mark_breakpoint(&mut self.request.messages, true);
        let started = Instant::now();
        let outcome = self.stream(&provider).await;
        mark_breakpoint(&mut self.request.messages, false);
        self.request.messages.truncate(closed);
        let api_ms = started.elapsed().as_millis() as u64;
        match outcome {
            Ok(reply) => {
                self.last_cost = self.tally.add_call(&reply.model, &reply.usage, api_ms);
                Ok(reply)
            }
            Err(Failed::Cut { text, usage }) => {
                let model = self.config.model.clone();
                self.last_cost = self.tally.add_call(&model, &usage, api_ms);
                self.record_partial(&text, &usage).await;
                Err(Failed::Stop(Stop::Interrupted))
            }
            Err(other) => Err(other),
        }
    }

    /// Streams the current request, forwarding deltas; an interrupt stops
    /// it (a `Cut` once the API has begun to answer).
    async fn stream(&mut self, provider: &model::Provider) -> Result<MessageResponse, Failed> {
        let mut stream = match provider.stream(&self.request).await {
            Ok(s) => s,
            Err(e) => return Err(Failed::Stop(self.stop_for(e))),
        };
        let mut streamed = Streamed::default();
        loop {
            let event = tokio::select! {
                event = stream.next_event() => event,
                () = self.inbox.wait_interrupt() => {
                    let usage = streamed.usage(stream.usage());
                    if usage.total_input_tokens() + usage.output_tokens == 0 {
                        return Err(Failed::Stop(Stop::Interrupted));
                    }
                    return Err(Failed::Cut { text: streamed.text, usage });
                }
            };
            match event {
                Ok(Some(event)) => self.forward(event, &mut streamed),
                Ok(None) => break,
                Err(e) if retryable(&e) => return Err(Failed::Broken(e)),
                Err(e) => return Err(Failed::Stop(self.stop_for(e))),
            }
        }
        match stream.finish().await {
            Ok(reply) => Ok(reply),
            Err(e) if retryable(&e) => Err(Failed::Broken(e)),
            Err(e) => Err(Failed::Stop(self.stop_for(e))),
        }
    }

    fn forward(&self, event: StreamEvent, streamed: &mut Streamed) {
        let data = match event {
            StreamEvent::TextDelta { index, text } => {
                streamed.text.push_str(&text);
                streamed.chars += text.chars().count();
                json!({"kind": "text_delta", "index": index, "text": text})
            }
            StreamEvent::ThinkingDelta { index, thinking } => {
                streamed.chars += thinking.chars().count();
                json!({"kind": "thinking_delta", "index": index, "text": thinking})
            }
            StreamEvent::BlockStart {
                index,
                block: ContentBlock::ToolUse(tool),
            } => {
                streamed.tool_ids.insert(index, (tool.id, tool.name));
                return;
            }
            StreamEvent::InputJsonDelta {
                index,
                partial_json,
            } if !partial_json.is_empty() => {
                streamed.chars += partial_json.chars().count();
                json!({
                    "kind": "tool_input_delta",
                    "index": index,
                    "tool_use_id": streamed.tool_ids.get(&index).map(|t| t.0.as_str()),
                    "name": streamed.tool_ids.get(&index).map(|t| t.1.as_str()),
                    "json": partial_json,
                })
            }
            _ => return,
        };
        self.client.notify_now(data);
    }

    /// The stop an error means, with what to do.
    fn stop_for(&self, e: ModelError) -> Stop {
        if e.is_prompt_too_long() {
            return Stop::PromptTooLong(format!(
                "the conversation no longer fits the context window of `{}` ({e}); start a new session, or compact this one",
                self.config.model
            ));
        }
        match &e {
            ModelError::Api(api) if api.kind == model::ApiErrorKind::NotFound => {
                Stop::Error(format!(
                    "the model API does not know the model `{}` ({e}); choose another with --model or `model` in .hermitcrab/config.toml",
                    self.config.model
                ))
            }
            ModelError::Api(api) if api.kind == model::ApiErrorKind::Authentication => {
                Stop::Error(format!(
                    "the model API refused the credentials ({e}); check ANTHROPIC_API_KEY (or OPENAI_API_KEY)"
                ))
            }
            ModelError::Connect { .. } | ModelError::Timeout { .. } => Stop::Error(format!(
                "cannot reach the model API ({e}); check your network, or ANTHROPIC_BASE_URL / OPENAI_BASE_URL"
            )),
            _ => Stop::Error(e.to_string()),
        }
    }

    /// Commits the reply as an `answer` (its blocks verbatim, its usage and
    /// cost, the commit the request was built from), with the run's totals
    /// on the process, and maps it into the conversation.
    async fn record_answer(
        &mut self,
        reply: &MessageResponse,
        stop_reason: Option<&StopReason>,
    ) -> Result<(), protocol::ClientError> {
        // The results the request carried are committed by now: `as_of`
        // names the commit that holds them.
        self.settle().await;
        let mut body = self.answer_body(
            reply.text(),
            serde_json::to_value(&reply.content).unwrap_or(Value::Null),
            &reply.model,
            stop_reason.map(StopReason::as_str),
            &reply.usage,
        );
        body["message_id"] = json!(reply.id);
        let totals = self.tally.body(&self.config);
        self.commit_on_session(vec![("answer", body.clone())], Some(totals))
            .await?;
        self.remember(Sent::Answer, &body);
        let text = reply.text();
        if !text.trim().is_empty() {
            self.last_answer = text;
        }
        Ok(())
    }

    /// An `answer` body: the reply's text and blocks, its model, why it
    /// stopped, its usage and cost, the commit its request was built from
    /// and its number among the run's calls.
    fn answer_body(
        &self,
        text: String,
        content: Value,
        model: &str,
        stop_reason: Option<&str>,
        usage: &model::Usage,
    ) -> Value {
        json!({
            "text": text,
            "content": content,
            "model": model,
            "stop_reason": stop_reason,
            "usage": serde_json::to_value(usage).unwrap_or(Value::Null),
            "cost_usd": if self.tally.priced { json!(self.last_cost) } else { Value::Null },
            "process": self.me,
            "as_of": self.as_of,
            "call": self.tally.turns,
        })
    }

    /// What had streamed when an interrupt came, kept as an answer with
    /// what it cost so far (its output tokens estimated when the API had
    /// not said them yet).
    async fn record_partial(&mut self, shown: &str, usage: &model::Usage) {
        // As for a whole answer: `as_of` holds what the request carried.
        self.settle().await;
        let content = if shown.is_empty() {
            json!([])
        } else {
            json!([{"type": "text", "text": shown}])
        };
        let model = self.config.model.clone();
        let body = self.answer_body(
            shown.to_owned(),
            content,
            &model,
            Some("interrupted"),
            usage,
        );
        if self
            .commit_on_session(vec![("answer", body.clone())], None)
            .await
            .is_ok()
        {
            self.remember(Sent::Answer, &body);
        }
    }

    /// The `user-prompt` hooks, for a host's run: one that blocks ends it.
    async fn user_prompt_hooks(&mut self) -> Option<Stop> {
        if self.config.depth > 1 || !self.config.has_hooks("user-prompt") {
            return None;
        }
        let payload = json!({"prompt": self.last_prompt()});
        let verdict = self.run_hooks("user-prompt", None, payload).await;
        verdict
            .blocked
            .map(|said| Stop::Error(format!("a user-prompt hook blocked the prompt: {said}")))
    }

    /// The `stop` hooks, when the model would end its turn: one that blocks
    /// (exit 2) sends its stderr to the model as a message (a chunk on the
    /// session, like a prompt), and the run goes on.
    async fn stop_hooks_go_on(&mut self) -> bool {
        if !self.config.has_hooks("stop") {
            return false;
        }
        let payload = json!({"answer": self.last_answer});
        let Some(said) = self.run_hooks("stop", None, payload).await.blocked else {
            return false;
        };
        let body = json!({"text": format!("[stop hook] {said}"), "from": "hook"});
        if self
            .commit_on_session(vec![("prompt", body.clone())], None)
            .await
            .is_err()
        {
            return false;
        }
        self.remember(Sent::Prompt, &body);
        true
    }

    /// Tells hosts what the run is doing (never stored).
    pub(crate) fn status(&self, text: &str) {
        self.client
            .notify_now(json!({"kind": "status", "text": text}));
    }
}

/// Whether a failure after text was shown is worth a whole new call.
fn retryable(e: &ModelError) -> bool {
    match e {
        ModelError::Interrupted { .. }
        | ModelError::Timeout { .. }
        | ModelError::Connect { .. } => true,
        ModelError::Api(api) => matches!(
            api.kind,
            model::ApiErrorKind::Overloaded
                | model::ApiErrorKind::Server
                | model::ApiErrorKind::RateLimit
        ),
        _ => false,
    }
}
