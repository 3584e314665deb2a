//! What a run asks, put to the person on the terminal — a permission, a
//! question, a plan — and the answer committed where it was asked, once:
//! when another host answers first, the question is called off and who
//! answered is said.

use crate::describe::summary;
use crate::style::shown;
use agent::contract::{
    Body, Choice, Entry, PLAN_ACCEPT_EDITS, PLAN_APPROVE, PermissionDecision, PermissionRequest,
    UserAnswer, UserQuestion,
};
use hc_host::follow::answers::{answer_once, answered_elsewhere};
use hc_host::follow::{Answerer, Answering, Asked, Outcome, Question};
use serde_json::Value;

/// Who answers on the terminal, in the words every other host shows.
const BY_TERMINAL: &str = "the terminal";

/// The person at the terminal, answering what a run asks: permissions
/// and questions when `interactive`, a plan always (with no terminal, it
/// is not approved).
pub struct TerminalAnswerer {
    /// Whether there is a person to ask.
    pub interactive: bool,
}

impl Answerer for TerminalAnswerer {
    fn takes_questions(&self) -> bool {
        self.interactive
    }

    fn hears_ctrl_c(&self) -> bool {
        true
    }

    /// Esc, pressed while the run goes on (when its keys are read: a
    /// person at the terminal).
    fn interrupts(&self) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send + '_>> {
        // (no keys read — no person, or no run holding the terminal —
        // nothing to hear: the follower's loop pays nothing for it)
        if !self.interactive || !crate::tty::keys_held() {
            return Box::pin(std::future::pending());
        }
        Box::pin(async {
            // (looked at first: the follower makes this anew after each
            // event, and a stream's events come faster than the pause)
            while !crate::tty::esc_pressed() {
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            }
        })
    }

    fn answer<'a>(&'a self, asked: Asked<'a>, question: Question) -> Answering<'a> {
        Box::pin(async move {
            match question {
                Question::Permission(request) if self.interactive => {
                    ask_permission(asked, &request).await
                }
                Question::User(question) if self.interactive => {
                    ask_question(asked, &question).await
                }
                Question::Plan(_) => ask_plan(asked).await,
                Question::Permission(_) | Question::User(_) | Question::Hook(_) => Outcome::Done,
            }
        })
    }
}

/// Asks the person whether a call may run, and commits the decision
/// where it was asked.
pub async fn ask_permission(mut asked: Asked<'_>, request: &PermissionRequest) -> Outcome {
    let root = asked.engine.config().project_root.clone();
    for line in change_of(&root, &request.program, &request.input) {
        asked.sink.say(&format!("  {line}"));
    }
    let what = asked_words(&request.program, &request.input);
    let mut question = format!(
        "allow {} {what}? ({}) [y]es / [n]o / [a]lways for this session / no, [d]on't ask again: ",
        shown(&request.program),
        shown(&request.reason)
    );
    // One key answers (Enter alone, or no terminal at all, is no); a
    // line typed where keys are not read is taken as before, and a typo
    // is asked again.
    let decision = loop {
        let asking = ask_about(
            &mut asked,
            &question,
            PermissionDecision::TYPE,
            Some("ynad"),
        );
        let answer = match asking.await {
            Reply::Line(answer) => answer,
            Reply::Gone(outcome) => return outcome,
        };
        match answer.trim().to_lowercase().as_str() {
            "y" | "yes" => break Choice::Allow,
            "a" | "always" => break Choice::Always,
            "d" | "don't" | "dont" | "never" => break Choice::Never,
            "n" | "no" | "" => break Choice::Deny,
            other => {
                question = format!(
                    "`{}` is not an answer: type y (yes), n (no), a (always for this \
                     session) or d (no, and don't ask again this session): ",
                    shown(other)
                );
            }
        }
    };
    let decision = PermissionDecision {
        request: asked.id.to_owned(),
        decision,
        rule: Some(request.rule.clone()),
        message: None,
        by: Some(BY_TERMINAL.into()),
        ..PermissionDecision::default()
    };
    let entry = Entry::of(&decision);
    let (on, id) = (asked.on, asked.id);
    answer_once(
        asked.engine,
        asked.sink,
        on,
        PermissionDecision::TYPE,
        id,
        entry,
    );
    Outcome::Done
}

/// A plan the agent waits for: approved, approved with edits accepted,
/// or what to change, as the person types it.
pub async fn ask_plan(mut asked: Asked<'_>) -> Outcome {
    let mut question = "approve the plan? [y]es, ask before edits / [a]ccept edits too / \
                        or type what to change: "
        .to_owned();
    let mut empty = 0;
    let text = loop {
        let answer = match ask_about(&mut asked, &question, UserAnswer::TYPE, None).await {
            Reply::Line(answer) => answer,
            Reply::Gone(outcome) => return outcome,
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
    answer_with(asked, text)
}

/// Asks the person the agent's question, and commits the answer where
/// it was asked.
async fn ask_question(mut asked: Asked<'_>, from_agent: &UserQuestion) -> Outcome {
    let mut question = format!("? {}", shown(&from_agent.text));
    if let Some(options) = &from_agent.options {
        question.push_str(&format!(" ({})", shown(&options.join(" / "))));
    }
    question.push_str("\n> ");
    let text = match ask_about(&mut asked, &question, UserAnswer::TYPE, None).await {
        Reply::Line(text) => text,
        Reply::Gone(outcome) => return outcome,
    };
    answer_with(asked, text.trim_end().to_owned())
}

/// Commits the person's `text` as the answer to what `asked` asks.
fn answer_with(asked: Asked<'_>, text: String) -> Outcome {
    let answer = UserAnswer {
        request: asked.id.to_owned(),
        text,
        by: Some(BY_TERMINAL.into()),
    };
    let (on, id) = (asked.on, asked.id);
    answer_once(
        asked.engine,
        asked.sink,
        on,
        UserAnswer::TYPE,
        id,
        Entry::of(&answer),
    );
    Outcome::Done
}

/// What the terminal said to a question.
enum Reply {
    /// The line typed (empty when none).
    Line(String),
    /// No line: Ctrl-C, or another host answered first (said).
    Gone(Outcome),
}

/// Asks on the terminal what `asked` asks (answered by a `kind` chunk):
/// the line typed (or the key, of `keys`), or — at Ctrl-C (the run is then interrupted, as by a
/// Ctrl-C anywhere else), or when another host answered first (the
/// question is called off and who answered said) — none.
async fn ask_about(
    asked: &mut Asked<'_>,
    question: &str,
    kind: &'static str,
    keys: Option<&'static str>,
) -> Reply {
    asked.sink.pause();
    let (on, id) = (asked.on.to_owned(), asked.id.to_owned());
    let elsewhere = answered_elsewhere(asked.engine.clone(), on, kind, id);
    let read = match keys {
        Some(keys) => crate::tty::ask_key_until(question.to_owned(), keys, elsewhere).await,
        None => crate::tty::ask_until(question.to_owned(), elsewhere).await,
    };
    match read {
        Ok(Some(answer)) => Reply::Line(answer),
        Ok(None) => Reply::Gone(Outcome::CtrlC),
        Err(said) => {
            asked.sink.say(&said);
            Reply::Gone(Outcome::Done)
        }
    }
}

/// A call's input as a permission question shows it: a shell command
/// whole (what it does past a cut is asked about too), anything else in a
/// few words.
fn asked_words(program: &str, input: &Value) -> String {
    match input.get("command").and_then(Value::as_str) {
        Some(command) if program == "shell" => shown(command).into_owned(),
        _ => summary(program, input),
    }
}

/// What a `write` or `edit` would change, as diff lines, shown before the
/// person answers (a write's against the file as it is now).
fn change_of(root: &std::path::Path, program: &str, input: &Value) -> Vec<String> {
    /// A file bigger than this is not read for the diff.
    const MOST: u64 = 1 << 20;
    match program {
        "edit" => crate::term::calls::edit_diff(input),
        "write" => {
            let (Some(path), Some(content)) = (
                input.get("file_path").and_then(Value::as_str),
                input.get("content").and_then(Value::as_str),
            ) else {
                return Vec::new();
            };
            let path = agent::permissions::absolute(root, path);
            let old = match std::fs::metadata(&path) {
                Ok(meta) if meta.is_file() && meta.len() <= MOST => {
                    std::fs::read_to_string(&path).unwrap_or_default()
                }
                _ => String::new(),
            };
            crate::term::calls::diff_lines(&old, content)
        }
        _ => Vec::new(),
    }
}
