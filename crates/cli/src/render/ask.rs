//! What a run asks, put to the person on the terminal or to the program
//! driving the run — a permission, a question, a plan — and the answer
//! committed where it was asked.

use super::{Renderer, shown, summary};
use agent::contract::{
    Body, Choice, Entry, PLAN_ACCEPT_EDITS, PLAN_APPROVE, PermissionDecision, PermissionRequest,
    Plan, UserAnswer, UserQuestion,
};
use engine::Context;
use protocol::{ChunkDecl, Declaration, NewPlacement, PlacementType};
use serde_json::Value;

impl Renderer {
    /// Puts a question to the program driving the run, off this loop (the
    /// turn's other events go on meanwhile), and commits its answer where
    /// it was asked.
    pub(super) fn ask_program(&self, id: &str, chunk: &substrate::ChunkItem, asked: Asked) {
        let Some(link) = self.sdk.clone() else {
            return;
        };
        let on = asked_on(chunk, &self.session);
        let (engine, id) = (self.engine.clone(), id.to_owned());
        tokio::spawn(async move {
            let entry = match &asked {
                Asked::Permission(request) => Entry::of(&link.can_use_tool(&id, request).await),
                Asked::Hook(callback) => Entry::of(&link.hook_callback(&id, callback).await),
                Asked::Plan(plan) => Entry::of(&plan_to_program(&link, &id, plan).await),
            };
            let chunk = ChunkDecl::generated()
                .body(entry.body)
                .on(NewPlacement::instance(&on))
                .on(NewPlacement::instance(entry.kind));
            if let Err(e) = engine.commit(&Context::host(), Declaration::of(vec![chunk])) {
                eprintln!("hc: the program's answer could not be recorded: {e}");
            }
        });
    }

    /// Asks the person whether a call may run, and commits the decision
    /// where it was asked.
    pub(super) async fn ask_permission(&mut self, id: &str, on: &str, request: &PermissionRequest) {
        let what = asked(&request.program, &request.input);
        let mut question = format!(
            "allow {} {what}? ({}) [y]es / [n]o / [a]lways for this session: ",
            shown(&request.program),
            shown(&request.reason)
        );
        // Only a clear answer decides: a typo is asked again (an empty
        // line, or no terminal at all, is no).
        let decision = loop {
            let Some(answer) = self
                .ask_about(&question, on, PermissionDecision::TYPE, id)
                .await
            else {
                return;
            };
            match answer.trim().to_lowercase().as_str() {
                "y" | "yes" => break Choice::Allow,
                "a" | "always" => break Choice::Always,
                "n" | "no" | "" => break Choice::Deny,
                other => {
                    question = format!(
                        "`{}` is not an answer: type y (yes), n (no) or a (always for this \
                         session): ",
                        shown(other)
                    );
                }
            }
        };
        let decision = PermissionDecision {
            request: id.to_owned(),
            decision,
            rule: Some(request.rule.clone()),
            message: None,
            by: Some(BY_TERMINAL.into()),
            ..PermissionDecision::default()
        };
        self.answer_once(on, PermissionDecision::TYPE, id, Entry::of(&decision));
    }

    /// A plan: printed (on stdout, as an answer is), then — when the agent
    /// waits for it — put to the person or the program driving the run.
    pub(super) async fn plan(
        &mut self,
        id: &str,
        chunk: &substrate::ChunkItem,
        plan: Plan,
        own: bool,
    ) {
        if own && self.json.is_none() {
            self.gap = true;
            self.print(&format!("Plan:\n\n{}\n", plan.text.trim_end()));
        }
        if !plan.ask {
            return;
        }
        let on = asked_on(chunk, &self.session);
        if self.sdk.as_ref().is_some_and(|l| l.prompts) {
            self.ask_program(id, chunk, Asked::Plan(plan));
            return;
        }
        let mut question = "approve the plan? [y]es, ask before edits / [a]ccept edits too / \
                            or type what to change: "
            .to_owned();
        let mut empty = 0;
        let text = loop {
            let Some(answer) = self.ask_about(&question, &on, UserAnswer::TYPE, id).await else {
                return;
            };
            match answer.trim() {
                "y" | "Y" | "yes" => break PLAN_APPROVE.to_owned(),
                "a" | "A" | "accept-edits" => break PLAN_ACCEPT_EDITS.to_owned(),
                // (the terminal gone: not approved)
                "" if empty > 0 => break String::new(),
                "" => {
                    empty += 1;
                    question = "type y (approve), a (approve, accept edits) or what to \
                                change: "
                        .to_owned()
                }
                feedback => break feedback.to_owned(),
            }
        };
        let answer = UserAnswer {
            request: id.to_owned(),
            text,
            by: Some(BY_TERMINAL.into()),
        };
        self.answer_once(&on, UserAnswer::TYPE, id, Entry::of(&answer));
    }

    /// Asks the person the agent's question, and commits the answer where
    /// it was asked.
    pub(super) async fn ask_question(&mut self, id: &str, on: &str, asked: &UserQuestion) {
        let mut question = format!("? {}", shown(&asked.text));
        if let Some(options) = &asked.options {
            question.push_str(&format!(" ({})", shown(&options.join(" / "))));
        }
        question.push_str("\n> ");
        let Some(text) = self.ask_about(&question, on, UserAnswer::TYPE, id).await else {
            return;
        };
        let answer = UserAnswer {
            request: id.to_owned(),
            text: text.trim_end().to_owned(),
            by: Some(BY_TERMINAL.into()),
        };
        self.answer_once(on, UserAnswer::TYPE, id, Entry::of(&answer));
    }

    pub(super) fn answer(&mut self, on: &str, entry: Entry) {
        if let Err(e) = self.commit_on(on, entry) {
            self.line(&format!("cannot answer: {e}"));
        }
    }

    /// Commits `entry` on `scope` (the session, or the process that is a
    /// sub-agent's session), as the host.
    pub(super) fn commit_on(&self, scope: &str, entry: Entry) -> engine::Result<substrate::Commit> {
        let chunk = ChunkDecl::generated()
            .body(entry.body)
            .on(NewPlacement::instance(scope))
            .on(NewPlacement::instance(entry.kind));
        self.engine
            .commit(&Context::host(), Declaration::of(vec![chunk]))
    }

    /// Commits the terminal's answer to `id` — unless another host
    /// answered first (the store keeps one answer per question): then
    /// says who did.
    fn answer_once(&mut self, on: &str, kind: &str, id: &str, entry: Entry) {
        if let Err(e) = self.commit_on(on, entry) {
            match answered(&self.engine, on, kind, id) {
                Some(said) => self.line(&said),
                None => self.line(&format!("cannot answer: {e}")),
            }
        }
    }

    /// Asks on the terminal what `id` (a chunk of `on`, answered by a
    /// `kind` chunk) asks; answers the line typed (empty when none), or
    /// `None` when the person pressed Ctrl-C instead (the run is then
    /// interrupted, as by a Ctrl-C anywhere else) — or when another host
    /// answered first: the question is called off and who answered said.
    pub(super) async fn ask_about(
        &mut self,
        question: &str,
        on: &str,
        kind: &'static str,
        id: &str,
    ) -> Option<String> {
        self.spinner.clear();
        self.end_line();
        let elsewhere = answered_elsewhere(self.engine.clone(), on.to_owned(), kind, id.to_owned());
        match crate::tty::ask_until(question.to_owned(), elsewhere).await {
            Ok(Some(answer)) => Some(answer),
            Ok(None) => {
                self.asked_ctrl_c = true;
                None
            }
            Err(said) => {
                self.line(&said);
                None
            }
        }
    }
}

/// Who answers on the terminal, in the words every other host shows.
const BY_TERMINAL: &str = "the terminal";

/// How often a question asked here looks whether another host answered.
const ELSEWHERE_EVERY: std::time::Duration = std::time::Duration::from_millis(100);

/// Waits until another host (the page, another terminal — another
/// process) answers `id`: what to say of it. Meanwhile the commits other
/// processes made are followed, so the agent this engine runs hears the
/// answer too.
async fn answered_elsewhere(engine: engine::Engine, on: String, kind: &str, id: String) -> String {
    loop {
        tokio::time::sleep(ELSEWHERE_EVERY).await;
        let db = std::sync::Arc::clone(engine.db());
        let _ = tokio::task::spawn_blocking(move || db.follow()).await;
        if let Some(said) = answered(&engine, &on, kind, &id) {
            return said;
        }
    }
}

/// The answer to `id` already recorded, in words: "answered on the page:
/// allow".
fn answered(engine: &engine::Engine, on: &str, kind: &str, id: &str) -> Option<String> {
    let scopes = [on.to_owned(), kind.to_owned()];
    let read = engine
        .scope(&Context::host(), &scopes, &Default::default())
        .ok()?;
    let body = read
        .chunks
        .iter()
        .map(|c| c.body_value())
        .find(|b| b["request"] == id)?;
    let by = body["by"].as_str().unwrap_or("another host");
    let what = body["decision"]
        .as_str()
        .or(body["text"].as_str())
        .unwrap_or("answered");
    let by = match by {
        "the page" => "on the page".to_owned(),
        other => format!("by {other}"),
    };
    Some(format!("answered {by}: {}", shown(what)))
}

/// What is put to the program driving the run.
pub(super) enum Asked {
    Permission(PermissionRequest),
    Hook(agent::contract::HookCallback),
    Plan(Plan),
}

/// A plan put to the program driving the run as Claude Code puts it: a
/// `can_use_tool` for `ExitPlanMode`; allowed is approved, a denial's
/// message the feedback.
async fn plan_to_program(link: &crate::sdk::Link, id: &str, plan: &Plan) -> UserAnswer {
    let request = PermissionRequest {
        tool_use_id: plan.tool_use_id.clone(),
        program: agent::EXIT_PLAN.to_owned(),
        input: serde_json::json!({"plan": plan.text}),
        reason: "the plan is ready to carry out".into(),
        rule: agent::EXIT_PLAN.to_owned(),
        rules: Vec::new(),
        process: plan.process.clone(),
    };
    let decision = link.can_use_tool(id, &request).await;
    let text = match decision.decision {
        agent::contract::Choice::Deny => decision.message.unwrap_or_default(),
        _ => PLAN_APPROVE.to_owned(),
    };
    UserAnswer {
        request: id.to_owned(),
        text,
        by: Some(crate::sdk::BY_PROGRAM.into()),
    }
}

/// A call's input as a permission question shows it: a shell command
/// whole (what it does past a cut is asked about too), anything else in a
/// few words.
fn asked(program: &str, input: &Value) -> String {
    match input.get("command").and_then(Value::as_str) {
        Some(command) if program == "shell" => shown(command).into_owned(),
        _ => summary(program, input),
    }
}

/// Where a question was asked: the session, or the process that is a
/// sub-agent's session.
pub(super) fn asked_on(chunk: &substrate::ChunkItem, session: &str) -> String {
    chunk
        .placements
        .iter()
        .find(|p| {
            p.kind == PlacementType::Instance
                && ![PermissionRequest::TYPE, UserQuestion::TYPE, Plan::TYPE]
                    .contains(&p.scope.as_str())
        })
        .map_or_else(|| session.to_owned(), |p| p.scope.clone())
}
