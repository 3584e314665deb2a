//! Tool calls are runs (`design/agent.md`): each call is checked against
//! its schema, filled from the session (`expect_sha256`, `cwd`), decided by
//! the permissions, run as a program and awaited; its `tool-call` and
//! `tool-result` chunks go on the session. Consecutive calls of
//! `concurrency_safe` programs run together (all run, one await); any
//! other call runs alone, in order.

use crate::catalog::{ProgramTool, is_own_tool};
use crate::permissions::{Call, Decision};
use crate::request::Sent;
use crate::run::{Run, Stop};
use model::ToolUseBlock;
use protocol::{ChunkDecl, NewPlacement, PlacementType, RunArgs};
use serde_json::{Value, json};

/// The program that is a sub-agent.
pub(crate) const SUB_AGENT: &str = "agent";

/// What a call came to.
#[derive(Clone, Debug, Default)]
pub(crate) struct Outcome {
    pub text: String,
    pub is_error: bool,
    pub data: Value,
    pub process: Option<String>,
    /// Refused by the permissions.
    pub denied: bool,
}

impl Outcome {
    pub(crate) fn error(text: impl Into<String>) -> Outcome {
        Outcome {
            text: text.into(),
            is_error: true,
            ..Outcome::default()
        }
    }

    /// A call refused (by a rule, a person or a hook), not run.
    pub(crate) fn denied(text: impl Into<String>) -> Outcome {
        Outcome {
            denied: true,
            ..Outcome::error(text)
        }
    }
}

/// A call after its checks: answered already, or to be run.
enum Prepared {
    Done(Outcome),
    Run {
        tool: Box<ProgramTool>,
        input: Value,
    },
}

impl Run {
    /// Runs the calls of one reply, in batches.
    pub(crate) async fn run_calls(&mut self, calls: Vec<ToolUseBlock>) -> Result<(), Stop> {
        let mut start = 0;
        while start < calls.len() {
            if self.inbox.interrupted() {
                self.record_unfinished(&calls[start..]).await;
                return Err(Stop::Interrupted);
            }
            let end = if self.parallel(&calls[start]) {
                start
                    + calls[start..]
                        .iter()
                        .take_while(|c| self.parallel(c))
                        .count()
            } else {
                start + 1
            };
            if let Err(stop) = self.run_batch(&calls[start..end]).await {
                // Every call of the reply gets a result, so the session
                // stays a conversation the API accepts.
                self.record_unfinished(&calls[end..]).await;
                return Err(stop);
            }
            start = end;
        }
        Ok(())
    }

    /// Whether a call may run beside others.
    fn parallel(&self, call: &ToolUseBlock) -> bool {
        self.tool(&call.name)
            .is_some_and(|t| t.body.concurrency_safe)
    }

    fn tool(&self, name: &str) -> Option<&ProgramTool> {
        self.tools.iter().find(|t| t.def.name == name)
    }

    async fn run_batch(&mut self, calls: &[ToolUseBlock]) -> Result<(), Stop> {
        let mut prepared = Vec::with_capacity(calls.len());
        for call in calls {
            match self.prepare(call).await {
                Ok(p) => prepared.push(p),
                Err(stop) => {
                    self.record_unfinished(calls).await;
                    return Err(stop);
                }
            }
        }
        // Each call answered already, or its run started (its outcome, for
        // now, only its process).
        let mut finished = futures_util::future::join_all(prepared.iter().map(|p| async {
            match p {
                Prepared::Done(o) => o.clone(),
                Prepared::Run { tool, input } => match self.start_run(tool, input).await {
                    Ok(process) => Outcome {
                        process: Some(process),
                        ..Outcome::default()
                    },
                    Err(why) => Outcome::error(why),
                },
            }
        }))
        .await;
        let running: Vec<String> = finished.iter().filter_map(|o| o.process.clone()).collect();
        self.record_calls(calls, &prepared, &finished);
        let interrupted = self.await_runs(&running, &mut finished).await;
        if !interrupted {
            self.post_tool_hooks(calls, &mut finished).await;
        }
        self.record_results(calls, &finished).await;
        if interrupted {
            return Err(Stop::Interrupted);
        }
        Ok(())
    }

    /// Starts a program run for a call; answers its process id.
    async fn start_run(&self, tool: &ProgramTool, input: &Value) -> Result<String, String> {
        let input_type = tool.body.input_type.clone().unwrap_or_default();
        let mut args = RunArgs {
            chunks: vec![
                ChunkDecl::generated()
                    .body(input.clone())
                    .on(NewPlacement::instance(input_type)),
            ],
            ..RunArgs::default()
        };
        if tool.def.name == SUB_AGENT {
            self.sub_agent_args(&mut args, input);
        }
        self.client
            .run(&tool.def.name, args)
            .await
            .map_err(|e| format!("the `{}` program could not be started: {e}", tool.def.name))
    }

    /// Schema, fill, permission — or the agent's own tool, answered here.
    async fn prepare(&mut self, call: &ToolUseBlock) -> Result<Prepared, Stop> {
        let input = call.input_value();
        if is_own_tool(&call.name) {
            return Ok(Prepared::Done(self.own_tool(call, &input).await?));
        }
        let Some(tool) = self.tool(&call.name).cloned() else {
            let names: Vec<&str> = self.tools.iter().map(|t| t.def.name.as_str()).collect();
            return Ok(Prepared::Done(Outcome::error(format!(
                "there is no tool `{}`; the tools are: {}",
                call.name,
                names.join(", ")
            ))));
        };
        if call.name == SUB_AGENT
            && let Some(refusal) = self.depth_refusal()
        {
            return Ok(Prepared::Done(Outcome::error(refusal)));
        }
        if let Err(why) = protocol::schema::check(&tool.def.schema, &input) {
            return Ok(Prepared::Done(Outcome::error(format!(
                "invalid input for `{}`: {why}",
                call.name
            ))));
        }
        let (input, hooked) = match self.pre_tool_hooks(call, input, &tool).await {
            Ok(done) => done,
            Err(outcome) => return Ok(Prepared::Done(outcome)),
        };
        let mut decision = self.permissions.decide(&Call {
            program: &call.name,
            input: &input,
            root: &self.root,
            read_only: tool.body.read_only,
        });
        match (hooked.as_deref(), &decision) {
            // A hook's approval stands in for asking, never for a deny rule.
            (Some("allow"), Decision::Ask(_)) => decision = Decision::Allow,
            (Some("ask"), Decision::Allow) => {
                decision = Decision::Ask("a pre-tool hook asks first".into())
            }
            _ => {}
        }
        if let Some(refusal) = self.permit(call, &input, decision).await? {
            return Ok(Prepared::Done(refusal));
        }
        let input = self.fill(&call.name, input);
        Ok(Prepared::Run {
            tool: Box::new(tool),
            input,
        })
    }

    /// The `pre-tool` hooks of a call: the input (rewritten, when a hook
    /// rewrote it, and checked again) and a hook's decision; or the
    /// call's refusal.
    async fn pre_tool_hooks(
        &mut self,
        call: &ToolUseBlock,
        input: Value,
        tool: &ProgramTool,
    ) -> Result<(Value, Option<String>), Outcome> {
        if !self.config.has_hooks("pre-tool") {
            return Ok((input, None));
        }
        let root = self.root.clone();
        let probe = Call {
            program: &call.name,
            input: &input,
            root: &root,
            read_only: tool.body.read_only,
        };
        let payload =
            json!({"tool": {"program": call.name, "input": input, "tool_use_id": call.id}});
        let verdict = self.run_hooks("pre-tool", Some(&probe), payload).await;
        if let Some(said) = verdict.blocked {
            return Err(Outcome::denied(format!(
                "blocked by a pre-tool hook: {said}"
            )));
        }
        let input = match verdict.input {
            Some(rewritten) => {
                protocol::schema::check(&tool.def.schema, &rewritten).map_err(|why| {
                    Outcome::error(format!(
                        "a pre-tool hook rewrote the input into one that is not valid: {why}"
                    ))
                })?;
                rewritten
            }
            None => input,
        };
        match verdict.decision {
            Some((d, reason)) if d == "deny" => Err(Outcome::denied(if reason.is_empty() {
                "denied by a pre-tool hook".to_owned()
            } else {
                format!("denied by a pre-tool hook: {reason}")
            })),
            Some((d, _)) => Ok((input, Some(d))),
            None => Ok((input, None)),
        }
    }

    /// The `post-tool` hooks of each finished call: what they say is added
    /// to the result the model reads.
    async fn post_tool_hooks(&mut self, calls: &[ToolUseBlock], outcomes: &mut [Outcome]) {
        if !self.config.has_hooks("post-tool") {
            return;
        }
        let root = self.root.clone();
        for (call, o) in calls.iter().zip(outcomes.iter_mut()) {
            if o.process.is_none() {
                continue; // never ran
            }
            let input = call.input_value();
            let read_only = self.tool(&call.name).is_some_and(|t| t.body.read_only);
            let probe = Call {
                program: &call.name,
                input: &input,
                root: &root,
                read_only,
            };
            let payload = json!({
                "tool": {"program": call.name, "input": input, "tool_use_id": call.id},
                "result": {"text": o.text, "is_error": o.is_error, "data": o.data},
            });
            let verdict = self.run_hooks("post-tool", Some(&probe), payload).await;
            for said in verdict.blocked.iter().chain(&verdict.said) {
                o.text.push_str(&format!("\n\n[post-tool hook] {said}"));
            }
        }
    }

    /// What tools need from earlier calls: the hash of the last read of a
    /// file being written or edited, the directory the last command ended in.
    fn fill(&self, program: &str, mut input: Value) -> Value {
        match program {
            "write" | "edit" => {
                let path = input["file_path"].as_str().unwrap_or_default();
                let path = crate::permissions::absolute(&self.root, path);
                if let (Some(hash), Some(fields)) =
                    (self.derived.hashes.get(&path), input.as_object_mut())
                {
                    fields.insert("expect_sha256".into(), json!(hash));
                }
            }
            "shell" => {
                if let (Some(cwd), Some(fields)) = (&self.derived.cwd, input.as_object_mut())
                    && !fields.contains_key("cwd")
                {
                    fields.insert("cwd".into(), json!(cwd));
                }
            }
            _ => {}
        }
        input
    }

    /// `None` when the call may run; else its refusal. Asking commits a
    /// `permission-request` and waits for the host's decision.
    async fn permit(
        &mut self,
        call: &ToolUseBlock,
        input: &Value,
        decision: Decision,
    ) -> Result<Option<Outcome>, Stop> {
        let probe = Call {
            program: &call.name,
            input,
            root: &self.root,
            read_only: false,
        };
        let rule = probe.suggested_rule();
        let refusal = match decision {
            Decision::Allow => return Ok(None),
            Decision::Deny(why) => format!("permission denied: {why}"),
            Decision::Ask(why) if !self.config.interactive => format!(
                "permission denied: `{}` needs permission ({why}) and no one is attached to \
                 give it. To allow it, run with --allow '{rule}' or add \"{rule}\" to `allow` \
                 under [permissions] in .hermitcrab/config.toml",
                call.name
            ),
            Decision::Ask(why) => match self.ask_permission(call, input, &why, &rule).await? {
                None => return Ok(None),
                Some(refusal) => refusal,
            },
        };
        self.tally.denials.push(json!({
            "tool_use_id": call.id, "program": call.name, "input": input, "reason": refusal,
        }));
        Ok(Some(Outcome::denied(refusal)))
    }

    /// Asks the person; `None` when they allow it.
    async fn ask_permission(
        &mut self,
        call: &ToolUseBlock,
        input: &Value,
        why: &str,
        rule: &str,
    ) -> Result<Option<String>, Stop> {
        let body = json!({
            "tool_use_id": call.id, "program": call.name, "input": input,
            "reason": why, "rule": rule, "process": self.me,
        });
        let commit = self
            .commit_on_session(vec![("permission-request", body)], None)
            .await
            .map_err(|e| Stop::Error(format!("cannot ask for permission: {e}")))?;
        let Some(request) = commit.created.first().cloned() else {
            return Err(Stop::Error(
                "the permission request was not recorded".into(),
            ));
        };
        self.status(&format!("waiting for permission to run `{}`", call.name));
        let Some(answer) = self.inbox.answer_to(&request).await else {
            return Err(Stop::Interrupted);
        };
        match answer["decision"].as_str() {
            Some("allow") => Ok(None),
            Some("always") => {
                self.permissions
                    .allow_always(answer["rule"].as_str().unwrap_or(rule));
                Ok(None)
            }
            _ => Ok(Some(match answer["message"].as_str() {
                Some(m) if !m.is_empty() => format!("permission denied by the person: {m}"),
                _ => "permission denied by the person".to_owned(),
            })),
        }
    }

    /// Waits for the runs (one await); an interrupt cancels them. Answers
    /// whether it was interrupted.
    async fn await_runs(&self, running: &[String], outcomes: &mut [Outcome]) -> bool {
        if running.is_empty() {
            return false;
        }
        let ids: Vec<&str> = running.iter().map(String::as_str).collect();
        let done = tokio::select! {
            done = self.client.await_processes(&ids) => done,
            () = self.inbox.wait_interrupt() => {
                for id in &ids {
                    let _ = self.client.cancel(id).await;
                }
                for o in outcomes.iter_mut().filter(|o| o.process.is_some()) {
                    *o = Outcome { text: "interrupted: the person stopped the run".into(), is_error: true, process: o.process.clone(), ..Outcome::default() };
                }
                return true;
            }
        };
        let Ok(done) = done else {
            if self.client.is_closed() {
                return true; // the engine is gone: the run ends here
            }
            for o in outcomes.iter_mut().filter(|o| o.process.is_some()) {
                o.is_error = true;
                o.text = "the engine did not report how the run ended".into();
            }
            return false;
        };
        for o in outcomes.iter_mut() {
            if let Some(result) = o.process.as_ref().and_then(|p| done.get(p)) {
                *o = outcome_of(o.process.clone(), result);
            }
        }
        false
    }

    /// The `tool-call` chunks of a batch, with their processes.
    fn record_calls(
        &mut self,
        calls: &[ToolUseBlock],
        prepared: &[Prepared],
        outcomes: &[Outcome],
    ) {
        let mut chunks = Vec::new();
        for ((call, p), o) in calls.iter().zip(prepared).zip(outcomes) {
            let input = match p {
                Prepared::Run { input, .. } => input.clone(),
                Prepared::Done(_) => call.input_value(),
            };
            let process = o.process.clone();
            self.client.notify_now(json!({
                "kind": "tool_start", "tool_use_id": call.id, "program": call.name, "input": input,
            }));
            chunks.push(("tool-call", json!({
                "program": call.name, "process": process, "tool_use_id": call.id, "input": input,
            })));
        }
        // Committed while the calls run.
        self.commit_in_background(chunks);
    }

    /// The `tool-result` chunks of a batch, in call order.
    pub(crate) async fn record_results(&mut self, calls: &[ToolUseBlock], outcomes: &[Outcome]) {
        let mut chunks = Vec::new();
        for (call, o) in calls.iter().zip(outcomes) {
            let mut body = json!({
                "program": call.name, "process": o.process, "tool_use_id": call.id,
                "text": o.text, "is_error": o.is_error,
            });
            if !o.data.is_null() {
                body["data"] = o.data.clone();
            }
            if o.denied {
                body["denied"] = json!(true);
            }
            self.derived
                .observe(&self.root, &call.name, &o.data, o.is_error);
            if call.name == SUB_AGENT
                && let Some(process) = &o.process
            {
                self.tally.add_child(process, &o.data);
            }
            self.client.notify_now(json!({
                "kind": "tool_end", "tool_use_id": call.id, "process": o.process, "is_error": o.is_error,
            }));
            chunks.push(("tool-result", body));
        }
        for (_, body) in &chunks {
            self.remember(Sent::ToolResult, body);
        }
        // Committed while the next model call is made (after any commit
        // still in flight); settled before its answer, which records the
        // commit its request was built from.
        self.commit_in_background(chunks);
    }

    /// Calls a stop left without a run: each answered "interrupted".
    async fn record_unfinished(&mut self, calls: &[ToolUseBlock]) {
        let outcomes: Vec<Outcome> = calls
            .iter()
            .map(|_| Outcome::error("interrupted: the person stopped the run before this call"))
            .collect();
        self.record_results(calls, &outcomes).await;
    }
}

/// What a finished process answered: its output, or why it failed.
pub(crate) fn outcome_of(process: Option<String>, result: &substrate::ScopeResult) -> Outcome {
    let body = result
        .scopes
        .first()
        .map(|s| s.body_value())
        .unwrap_or_default();
    let output = result
        .chunks
        .iter()
        .find(|c| c.is_on("engine/output", PlacementType::Instance))
        .map(|c| c.body_value());
    let failed = body["status"] != "completed";
    match output {
        Some(out) => Outcome {
            text: out["text"].as_str().unwrap_or_default().to_owned(),
            is_error: failed || out["is_error"].as_bool().unwrap_or(false),
            data: out["data"].clone(),
            process,
            denied: false,
        },
        None => {
            let error = body["error"].as_str().unwrap_or("no answer");
            let tail = body["stderr_tail"].as_str().unwrap_or_default();
            let tail: String = tail
                .chars()
                .rev()
                .take(2000)
                .collect::<Vec<_>>()
                .into_iter()
                .rev()
                .collect();
            Outcome {
                text: format!(
                    "the program failed ({error}) without answering{}{}",
                    if tail.is_empty() { "" } else { ":\n" },
                    tail.trim_end()
                ),
                is_error: true,
                data: Value::Null,
                process,
                denied: false,
            }
        }
    }
}
