//! The cycle: check the gates, call the model streaming (its text and
//! tool input forwarded as notices), record the answer, run the tools it
//! asked for, and again — until the model ends its turn or a gate, an
//! interrupt or an error ends the run.

use super::inbox::Inbox;
use super::writer::Notifier;
use super::{Run, Stop};
use crate::contract::{Answer, CallTiming, Entry, Notice, Prompt, PromptSource};
use crate::toolbox::{Turn, unfinished};
use model::{
    ContentBlock, MessageResponse, MessagesRequest, ModelError, StopReason, StreamEvent,
    ToolUseBlock,
};
use serde_json::json;
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

    /// Learns from one stream event; answers the notice it makes, if any.
    fn notice(&mut self, event: StreamEvent) -> Option<Notice> {
        match event {
            StreamEvent::TextDelta { index, text } => {
                self.text.push_str(&text);
                self.chars += text.chars().count();
                Some(Notice::TextDelta { index, text })
            }
            StreamEvent::ThinkingDelta { index, thinking } => {
                self.chars += thinking.chars().count();
                Some(Notice::ThinkingDelta {
                    index,
                    text: thinking,
                })
            }
            StreamEvent::BlockStart {
                index,
                block: ContentBlock::ToolUse(tool),
            } => {
                self.tool_ids.insert(index, (tool.id, tool.name));
                None
            }
            StreamEvent::InputJsonDelta {
                index,
                partial_json,
            } if !partial_json.is_empty() => {
                self.chars += partial_json.chars().count();
                let call = self.tool_ids.get(&index);
                Some(Notice::ToolInputDelta {
                    index,
                    tool_use_id: call.map(|t| t.0.clone()),
                    name: call.map(|t| t.1.clone()),
                    json: partial_json,
                })
            }
            _ => None,
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
    /// The model could not take the call (overloaded after the client's
    /// retries, or unknown): a fallback model may.
    Unavailable(ModelError),
}

impl Run {
    /// Runs the cycle to its end.
    pub async fn cycle(&mut self) -> Stop {
        let mut continuations = 0;
        let (mut compacted, mut retried) = (false, false);
        let (mut stop_hook_turns, mut nudged) = (0, false);
        if self.ended {
            return Stop::EndTurn;
        }
        if !self.resumed
            && let Some(stop) = self.user_prompt_hooks().await
        {
            return stop;
        }
        loop {
            if let Some(stop) = self.gate() {
                return stop;
            }
            // what background sub-agents ended with, and what was sent
            // to the session, before the call
            self.background_results(false).await;
            self.messages().await;
            let first = self.gates.turns() == 0 && !compacted;
            if (first && self.config.compact_first) || self.gates.needs_compaction() {
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
            let calls: Vec<ToolUseBlock> = reply.tool_uses().cloned().collect();
            let runs_calls = reply.stop_reason == Some(StopReason::ToolUse) && !calls.is_empty();
            if !runs_calls {
                self.toolbox.cancel_early().await;
            }
            if let Err(e) = self.record_answer(&reply).await {
                self.toolbox.cancel_early().await;
                return Stop::Error(format!("cannot record the answer: {e}"));
            }
            match reply.stop_reason {
                Some(StopReason::ToolUse) if !calls.is_empty() => {
                    continuations = 0;
                    if let Err(stop) = self.run_calls(calls).await {
                        return stop;
                    }
                }
                Some(StopReason::MaxTokens) if continuations < MAX_CONTINUATIONS => {
                    continuations += 1;
                    self.writer
                        .status("the reply hit max_tokens; asking the model to continue");
                }
                Some(StopReason::PauseTurn) => {}
                // children still in the background die with this run:
                // their results first, and the model reads them
                _ if self.toolbox.background_running() => {
                    self.writer
                        .status("waiting for the sub-agents running in the background");
                    self.background_results(true).await;
                }
                _ if stop_hook_turns < MAX_STOP_HOOK_TURNS && self.stop_hooks_go_on().await => {
                    stop_hook_turns += 1;
                }
                _ if self.lacks_structured_output() => {
                    if nudged {
                        return Stop::StructuredOutput(
                            "the model ended without calling StructuredOutput, even when asked to"
                                .into(),
                        );
                    }
                    nudged = true;
                    self.nudge_structured_output().await;
                }
                _ => return Stop::EndTurn,
            }
        }
    }

    /// Records the results of the background sub-agents that have ended
    /// (all of them, waited for, when `wait`) as prompts the next call
    /// sends.
    async fn background_results(&mut self, wait: bool) {
        let ended = self.toolbox.background_results(wait, &self.inbox).await;
        for prompt in ended {
            self.record_prompt(prompt).await;
        }
    }

    /// Records each message sent to the session and not yet read as a
    /// prompt bringing it, which the next call sends.
    async fn messages(&mut self) {
        for (id, message) in self.inbox.take_messages() {
            self.record_prompt(Prompt {
                text: message.framed(),
                from: Some(PromptSource::Message),
                images: Vec::new(),
                message: Some(id),
                uuid: None,
            })
            .await;
        }
    }

    /// What stops the next call before it is made: an interrupt, a gone
    /// engine, a gate. (A model without a price is said once.)
    fn gate(&mut self) -> Option<Stop> {
        if self.inbox.interrupted() {
            return Some(Stop::Interrupted);
        }
        if self.client.is_closed() {
            return Some(Stop::Error(
                "the engine is gone; nothing more can be recorded".into(),
            ));
        }
        if let Some(stop) = self.gates.check() {
            return Some(stop);
        }
        if let Some(warning) = self.gates.price_warning() {
            self.writer.status(warning);
        }
        None
    }

    /// Runs the calls of one reply, batch by batch, recording each
    /// batch's results; every call of the reply gets a result, so the
    /// session stays a conversation the API accepts.
    async fn run_calls(&mut self, mut calls: Vec<ToolUseBlock>) -> Result<(), Stop> {
        // the model names tools as it was shown them; calls run programs
        if self.config.tool_names == crate::names::ToolNames::Claude {
            for call in &mut calls {
                call.name = crate::names::program_of(&call.name).to_owned();
            }
        }
        let ran = self.run_batches(&calls).await;
        // (a call whose input changed after its block stopped: its early
        // run is not the call's)
        self.toolbox.cancel_early().await;
        ran
    }

    /// [`Run::run_calls`]'s batches, one after another.
    async fn run_batches(&mut self, calls: &[ToolUseBlock]) -> Result<(), Stop> {
        for batch in self.toolbox.batches(calls) {
            if self.inbox.interrupted() {
                let rest = &calls[batch.start..];
                self.record_results(rest, unfinished(rest.len()));
                return Err(Stop::Interrupted);
            }
            let mut turn = Turn {
                writer: &mut self.writer,
                inbox: &self.inbox,
                gates: &mut self.gates,
            };
            let (mut outcomes, stop) = self
                .toolbox
                .run_batch(&calls[batch.clone()], &mut turn)
                .await;
            self.pin_read_scopes(&mut outcomes).await;
            self.record_results(&calls[batch.clone()], outcomes);
            if let Some(stop) = stop {
                let rest = &calls[batch.end..];
                self.record_results(rest, unfinished(rest.len()));
                return Err(stop);
            }
        }
        Ok(())
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
                    self.writer.notify(&Notice::Discard);
                    self.writer
                        .status(format!("the reply broke off ({e}); asking again"));
                }
                Err(Failed::Broken(e)) => return Err(stop_for(self.model(), e)),
                Err(Failed::Unavailable(e)) => {
                    if !self.fall_back(&e).await {
                        return Err(stop_for(self.model(), e));
                    }
                }
            }
        }
    }

    /// One streamed call of the request as it stands.
    async fn call_model(&mut self) -> Result<MessageResponse, Failed> {
        let provider = match &self.provider {
            Ok(p) => std::sync::Arc::clone(p),
            Err(why) => return Err(Failed::Stop(Stop::Error(why.clone()))),
        };
        self.prefetch_history();
        let started = Instant::now();
        let sent = crate::contract::now();
        let retried = super::start::retries();
        let model = self.model().to_owned();
        self.toolbox.open_early();
        let (outcome, first) = {
            let request = self.request.next_call();
            let mut call = Call {
                provider: &provider,
                inbox: &self.inbox,
                notifier: self.writer.notifier(),
                model: &model,
                toolbox: &mut self.toolbox,
                first: None,
            };
            (call.stream(&request).await, call.first)
        };
        let api_ms = started.elapsed().as_millis() as u64;
        self.timing = Some(CallTiming {
            started: sent,
            duration_ms: api_ms,
            first_token_ms: first.map(|t| t.duration_since(started).as_millis() as u64),
            retries: super::start::retries().saturating_sub(retried),
        });
        match &outcome {
            Ok(_) => self.toolbox.close_early(),
            // what started while it streamed is not wanted now
            Err(_) => self.toolbox.cancel_early().await,
        }
        match outcome {
            Ok(reply) => {
                self.gates.add_call(&reply.model, &reply.usage, api_ms);
                Ok(reply)
            }
            Err(Failed::Cut { text, usage }) => {
                self.gates.add_call(&model, &usage, api_ms);
                self.record_partial(&text, &usage).await;
                Err(Failed::Stop(Stop::Interrupted))
            }
            Err(other) => Err(other),
        }
    }

    /// Commits the reply as an `answer` (its blocks verbatim, its usage and
    /// cost, the commit the request was built from), with the run's totals
    /// on the process, and maps it into the request.
    async fn record_answer(
        &mut self,
        reply: &MessageResponse,
    ) -> Result<(), protocol::ClientError> {
        // The results the request carried are committed by now: `as_of`
        // names the commit that holds them.
        self.writer.settle().await?;
        /// The code-execution container a reply names (its id is what
        /// the next request goes on in).
        #[derive(serde::Deserialize)]
        struct Container {
            id: String,
        }
        let container = (reply.container.as_ref())
            .and_then(|c| serde_json::from_str::<Container>(c.get()).ok())
            .map(|c| c.id);
        let answer = Answer {
            message_id: Some(reply.id.clone()),
            container,
            ..self.answer(
                reply.text(),
                reply.content.clone(),
                &reply.model,
                reply.stop_reason.clone(),
                &reply.usage,
            )
        };
        // a hermitcrab's exchange is saved to history with it
        match self.config.hermitcrab && !answer.text.trim().is_empty() {
            true => self.record_saving(Entry::of(&answer), &answer.text).await?,
            false => {
                self.record(Entry::of(&answer), true).await?;
            }
        }
        if !answer.text.trim().is_empty() {
            self.last_answer = answer.text;
        }
        Ok(())
    }

    /// An `answer`: the reply's text and blocks, its model, why it
    /// stopped, its usage and cost, the commit its request was built from
    /// and its number among the run's calls.
    fn answer(
        &self,
        text: String,
        content: Vec<ContentBlock>,
        model: &str,
        stop_reason: Option<StopReason>,
        usage: &model::Usage,
    ) -> Answer {
        Answer {
            text,
            content,
            model: model.to_owned(),
            stop_reason,
            usage: usage.clone(),
            cost_usd: self.gates.last_cost(),
            process: self.writer.me().to_owned(),
            as_of: Some(self.writer.as_of()),
            call: Some(self.gates.turns()),
            message_id: None,
            container: None,
            timing: self.timing.clone(),
        }
    }

    /// What had streamed when an interrupt came, kept as an answer with
    /// what it cost so far (its output tokens estimated when the API had
    /// not said them yet).
    async fn record_partial(&mut self, shown: &str, usage: &model::Usage) {
        // As for a whole answer: `as_of` holds what the request carried.
        if self.writer.settle().await.is_err() {
            return;
        }
        let content = match shown {
            "" => Vec::new(),
            text => vec![ContentBlock::text(text)],
        };
        let model = self.model().to_owned();
        let stop = Some(StopReason::Other("interrupted".into()));
        let answer = self.answer(shown.to_owned(), content, &model, stop, usage);
        let _ = self.record(Entry::of(&answer), false).await;
    }

    /// The `user-prompt` hooks, for a host's run: one that blocks ends it.
    async fn user_prompt_hooks(&mut self) -> Option<Stop> {
        if self.config.depth > 1 || !self.toolbox.hooks().any("user-prompt") {
            return None;
        }
        let payload = json!({"prompt": self.prompt});
        let verdict = self.toolbox.hooks().run("user-prompt", None, payload).await;
        if let Some(said) = verdict.blocked {
            return Some(Stop::Error(format!(
                "a user-prompt hook blocked the prompt: {said}"
            )));
        }
        // what a hook adds for the model goes with the prompt
        if !verdict.said.is_empty() {
            let text = format!("[user-prompt hook] {}", verdict.said.join("\n"));
            self.record_hook_prompt(text).await;
        }
        None
    }

    /// Whether the run must give structured output (`--json-schema`) and
    /// has not.
    fn lacks_structured_output(&self) -> bool {
        self.config.output_schema.is_some() && self.toolbox.structured_output().is_none()
    }

    /// Asks the model, once, to call `StructuredOutput` (as Claude Code's
    /// stop hook does).
    async fn nudge_structured_output(&mut self) {
        let text = crate::toolbox::structured::NUDGE.to_owned();
        self.record_hook_prompt(text).await;
    }

    /// The `stop` hooks, when the model would end its turn: one that blocks
    /// (exit 2) sends its stderr to the model as a message (a prompt on the
    /// session), and the run goes on.
    async fn stop_hooks_go_on(&mut self) -> bool {
        // a sub-agent's end is `subagent-stop` (Claude Code's SubagentStop)
        let event = if self.config.depth > 1 {
            "subagent-stop"
        } else {
            "stop"
        };
        if !self.toolbox.hooks().any(event) {
            return false;
        }
        let payload = json!({"answer": self.last_answer});
        let verdict = self.toolbox.hooks().run(event, None, payload).await;
        let (None, Some(said)) = (verdict.halt, verdict.blocked) else {
            return false;
        };
        self.record_hook_prompt(format!("[stop hook] {said}")).await
    }

    /// A prompt a hook (or the run in a hook's place) gives the model,
    /// recorded.
    async fn record_hook_prompt(&mut self, text: String) -> bool {
        self.record_prompt(Prompt {
            text,
            from: Some(PromptSource::Hook),
            images: Vec::new(),
            message: None,
            uuid: None,
        })
        .await
    }
}

/// What streaming one call takes.
struct Call<'a> {
    provider: &'a model::Provider,
    inbox: &'a Inbox,
    notifier: Notifier,
    model: &'a str,
    /// Where a complete call is offered to start early.
    toolbox: &'a mut crate::toolbox::Toolbox,
    /// When the reply's first content came.
    first: Option<Instant>,
}

impl Call<'_> {
    /// Streams `request`, forwarding deltas and offering each complete
    /// call to start early; an interrupt stops it (a `Cut` once the API
    /// has begun to answer).
    async fn stream(&mut self, request: &MessagesRequest) -> Result<MessageResponse, Failed> {
        let mut stream = match self.provider.stream(request).await {
            Ok(s) => s,
            Err(e) if super::fallback::trigger(&e).is_some() => {
                return Err(Failed::Unavailable(e));
            }
            Err(e) => return Err(Failed::Stop(stop_for(self.model, e))),
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
                Ok(Some(event)) => {
                    if self.first.is_none() && is_content(&event) {
                        self.first = Some(Instant::now());
                    }
                    if let model::StreamEvent::BlockStop {
                        block: ContentBlock::ToolUse(call),
                        ..
                    } = &event
                    {
                        self.toolbox.offer_early(call);
                    }
                    if let Some(notice) = streamed.notice(event) {
                        self.notifier.notify(&notice);
                    }
                }
                Ok(None) => break,
                Err(e) if retryable(&e) => return Err(Failed::Broken(e)),
                Err(e) => return Err(Failed::Stop(stop_for(self.model, e))),
            }
        }
        match stream.finish().await {
            Ok(reply) => Ok(reply),
            Err(e) if retryable(&e) => Err(Failed::Broken(e)),
            Err(e) => Err(Failed::Stop(stop_for(self.model, e))),
        }
    }
}

/// Whether `event` carries the reply's content (its first is the time to
/// first token).
fn is_content(event: &model::StreamEvent) -> bool {
    matches!(
        event,
        model::StreamEvent::BlockStart { .. }
            | model::StreamEvent::TextDelta { .. }
            | model::StreamEvent::ThinkingDelta { .. }
    )
}

/// The stop a model error means, with what to do.
pub(super) fn stop_for(model: &str, e: ModelError) -> Stop {
    if e.is_prompt_too_long() {
        return Stop::PromptTooLong(format!(
            "the conversation no longer fits the context window of `{model}` ({e}); start a new session, or compact this one"
        ));
    }
    match &e {
        ModelError::Api(api) if api.is_model_not_found() => Stop::Error(format!(
            "the model API does not know the model `{model}` ({e}); choose another with --model or `model` in .hermitcrab/config.toml"
        )),
        ModelError::Api(api) if api.kind == model::ApiErrorKind::Authentication => {
            Stop::Error(format!(
                "the model API refused the credentials ({e}); check ANTHROPIC_API_KEY (or OPENAI_API_KEY)"
            ))
        }
        ModelError::Timeout { .. } if e.is_stall() => {
            Stop::Error(format!("the model's reply stalled ({e})"))
        }
        // (it says where, why and what to check already)
        ModelError::Connect { .. } => Stop::Error(e.to_string()),
        ModelError::Timeout { .. } => Stop::Error(format!(
            "cannot reach the model API ({e}); check your network, or ANTHROPIC_BASE_URL / OPENAI_BASE_URL"
        )),
        _ => Stop::Error(e.to_string()),
    }
}

/// Whether a failure after text was shown is worth a whole new call: a
/// stream cut, or an overload said inside one. (A failure before anything
/// arrived was already retried by the client, as often as its policy
/// allows; asking again here would multiply those tries.)
fn retryable(e: &ModelError) -> bool {
    match e {
        ModelError::Interrupted { .. } => true,
        ModelError::Api(api) => {
            api.status.is_none()
                && matches!(
                    api.kind,
                    model::ApiErrorKind::Overloaded
                        | model::ApiErrorKind::Server
                        | model::ApiErrorKind::RateLimit
                )
        }
        _ => false,
    }
}
