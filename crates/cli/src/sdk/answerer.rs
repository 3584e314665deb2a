//! What a run asks, put to the program driving it (an Agent SDK
//! program): permissions and plans when it prompts for them
//! (`--permission-prompt-tool stdio`; else the terminal, as without it),
//! hook callbacks always; the agent's questions answered at once (the
//! program cannot answer them); its interrupts.

use super::link::{BY_PROGRAM, Link};
use crate::term::answerer::TerminalAnswerer;
use agent::contract::{Entry, PLAN_APPROVE, PermissionRequest, Plan, UserAnswer, UserQuestion};
use engine::Engine;
use hc_host::follow::answers::{answer, commit_on};
use hc_host::follow::{Answerer, Answering, Asked, Outcome, Question};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

/// The driving program as the run's answerer.
pub struct LinkAnswerer {
    /// The link to the program.
    pub link: Arc<Link>,
    /// Who answers what the program is not asked.
    pub terminal: TerminalAnswerer,
}

impl Answerer for LinkAnswerer {
    fn takes_questions(&self) -> bool {
        true
    }

    fn takes_hooks(&self) -> bool {
        true
    }

    fn hears_ctrl_c(&self) -> bool {
        true
    }

    fn interrupts(&self) -> Pin<Box<dyn Future<Output = ()> + Send + '_>> {
        Box::pin(self.link.interrupted())
    }

    fn answer<'a>(&'a self, asked: Asked<'a>, question: Question) -> Answering<'a> {
        match question {
            Question::Permission(_) | Question::Plan(_) if !self.link.prompts => {
                self.terminal.answer(asked, question)
            }
            // (put to the program as Claude Code's AskUserQuestion)
            Question::User(_) if self.link.prompts => {
                self.ask_program(asked.engine, asked.id, asked.on, question);
                Box::pin(async { Outcome::Done })
            }
            Question::User(_) => {
                let text = "(no one can answer questions through the program driving this run: \
                            decide yourself, and say what you assumed)";
                let answer_ = UserAnswer {
                    by: Some(BY_PROGRAM.into()),
                    request: asked.id.to_owned(),
                    text: text.into(),
                };
                answer(asked.engine, asked.sink, asked.on, Entry::of(&answer_));
                Box::pin(async { Outcome::Done })
            }
            Question::Permission(_) | Question::Plan(_) | Question::Hook(_) => {
                self.ask_program(asked.engine, asked.id, asked.on, question);
                Box::pin(async { Outcome::Done })
            }
        }
    }
}

impl LinkAnswerer {
    /// Puts a question to the program, off the follower's loop (the
    /// turn's other events go on meanwhile), and commits its answer where
    /// it was asked.
    fn ask_program(&self, engine: &Engine, id: &str, on: &str, question: Question) {
        let link = Arc::clone(&self.link);
        let (engine, id, on) = (engine.clone(), id.to_owned(), on.to_owned());
        tokio::spawn(async move {
            let entry = match &question {
                Question::Permission(request) => Entry::of(&link.can_use_tool(&id, request).await),
                Question::Hook(callback) => Entry::of(&link.hook_callback(&id, callback).await),
                Question::Plan(plan) => Entry::of(&plan_to_program(&link, &id, plan).await),
                Question::User(asked) => Entry::of(&question_to_program(&link, &id, asked).await),
            };
            if let Err(e) = commit_on(&engine, &on, entry) {
                eprintln!("hc: the program's answer could not be recorded: {e}");
            }
        });
    }
}

/// The agent's question put to the program driving the run as Claude
/// Code puts one: a `can_use_tool` for `AskUserQuestion` (`questions` of
/// `question`, `header`, `options` of `label`, `multiSelect`); the answer
/// is what the program's `updatedInput.answers` gives the question, a
/// denial's message saying it was not answered.
async fn question_to_program(link: &Link, id: &str, asked: &UserQuestion) -> UserAnswer {
    let options: Vec<serde_json::Value> = asked
        .options
        .iter()
        .flatten()
        .map(|o| serde_json::json!({"label": o, "description": ""}))
        .collect();
    let request = PermissionRequest {
        tool_use_id: asked.tool_use_id.clone(),
        program: "ask_user".to_owned(),
        input: serde_json::json!({"questions": [{
            "question": asked.text, "header": "Question", "options": options, "multiSelect": false,
        }]}),
        reason: "the agent asks the person".into(),
        rule: "ask_user".to_owned(),
        rules: Vec::new(),
        process: asked.process.clone(),
    };
    let decision = link.can_use_tool(id, &request).await;
    /// What the program gives back for AskUserQuestion: each question's
    /// answer, by its text.
    #[derive(serde::Deserialize, Default)]
    struct Answered {
        #[serde(default)]
        answers: std::collections::BTreeMap<String, serde_json::Value>,
    }
    let answered: Answered = (decision.updated_input.clone())
        .and_then(|i| serde_json::from_value(i).ok())
        .unwrap_or_default();
    let answers = &answered.answers;
    let given = (answers.get(&asked.text).and_then(|v| v.as_str()))
        .or_else(|| answers.values().find_map(|v| v.as_str()));
    let text = match (decision.decision, given) {
        (agent::contract::Choice::Deny | agent::contract::Choice::Never, _) => format!(
            "(the person did not answer{})",
            decision
                .message
                .filter(|m| !m.is_empty())
                .map(|m| format!(": {m}"))
                .unwrap_or_default()
        ),
        (_, Some(answer)) => answer.to_owned(),
        (_, None) => "(the program allowed the question but gave no answer)".to_owned(),
    };
    UserAnswer {
        request: id.to_owned(),
        text,
        by: Some(BY_PROGRAM.into()),
    }
}

/// A plan put to the program driving the run as Claude Code puts it: a
/// `can_use_tool` for `ExitPlanMode`; allowed is approved, a denial's
/// message the feedback.
async fn plan_to_program(link: &Link, id: &str, plan: &Plan) -> UserAnswer {
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
        by: Some(BY_PROGRAM.into()),
    }
}
