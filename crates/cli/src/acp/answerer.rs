//! What a run asks, put to the editor as `session/request_permission`: a
//! call that would ask (allow once, allow always, reject once, reject
//! always — committed as the `permission-decision` every host commits), a
//! plan waiting for approval (approve and accept edits, approve, keep
//! planning), the agent's question when it offers answers to pick. Each
//! is asked off the follower's loop; `session/cancel` withdraws it.

use super::link::Link;
use super::tools;
use agent::config::PermissionMode;
use agent::contract::{
    Choice, Entry, PLAN_ACCEPT_EDITS, PLAN_APPROVE, PermissionDecision, PermissionRequest, Plan,
    UserAnswer, UserQuestion,
};
use hc_acp::schema::{
    PermissionKind, PermissionOption, PermissionOutcome, PermissionResponse, RequestPermission,
    ToolCallStatus, ToolCallUpdate, ToolKind,
};
use hc_host::follow::answers::commit_on;
use hc_host::follow::{Answerer, Answering, Asked, Outcome, Question};
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use tokio::sync::Notify;

/// Who answers, in the record.
pub const BY_EDITOR: &str = "the editor";

/// The editor as a run's answerer.
pub struct EditorAnswerer {
    /// The link to the editor.
    pub link: Arc<Link>,
    /// The session, as the editor knows it.
    pub session: String,
    /// The session's mode (an approved plan changes it).
    pub mode: Arc<Mutex<PermissionMode>>,
    /// The turn's interrupt.
    pub interrupt: Arc<Notify>,
}

impl Answerer for EditorAnswerer {
    fn takes_questions(&self) -> bool {
        true
    }

    fn interrupts(&self) -> Pin<Box<dyn Future<Output = ()> + Send + '_>> {
        Box::pin(self.interrupt.notified())
    }

    fn answer<'a>(&'a self, asked: Asked<'a>, question: Question) -> Answering<'a> {
        let (engine, id, on) = (
            asked.engine.clone(),
            asked.id.to_owned(),
            asked.on.to_owned(),
        );
        let (link, session) = (Arc::clone(&self.link), self.session.clone());
        let mode = Arc::clone(&self.mode);
        let root = engine.config().project_root.clone();
        tokio::spawn(async move {
            let ask = Ask {
                link: &link,
                session: &session,
                root: &root,
            };
            let entry = match &question {
                Question::Permission(request) => Entry::of(&ask.permission(&id, request).await),
                Question::Plan(plan) => Entry::of(&ask.plan(&id, plan, &mode).await),
                Question::User(asked) => Entry::of(&ask.question(&id, asked).await),
                // (no hook callbacks are registered over ACP)
                Question::Hook(_) => return,
            };
            if let Err(e) = commit_on(&engine, &on, entry) {
                eprintln!("hc: the editor's answer could not be recorded: {e}");
            }
        });
        Box::pin(async { Outcome::Done })
    }
}

/// One question put to the editor.
struct Ask<'a> {
    link: &'a Link,
    session: &'a str,
    root: &'a std::path::Path,
}

/// An option of a permission request.
fn option(id: &str, name: String, kind: PermissionKind) -> PermissionOption {
    PermissionOption {
        option_id: id.to_owned(),
        name,
        kind,
    }
}

impl Ask<'_> {
    /// Puts `tool_call` to the editor with `options`; the option picked
    /// (`Err`: cancelled or not answered, with why).
    async fn pick(
        &self,
        tool_call: ToolCallUpdate,
        options: Vec<PermissionOption>,
    ) -> Result<String, String> {
        self.link.asked_about(&tool_call.tool_call_id);
        let params = RequestPermission {
            session_id: self.session.to_owned(),
            tool_call,
            options,
        };
        let params = serde_json::to_value(&params).map_err(|e| e.to_string())?;
        let said = (self.link)
            .request(self.session, "session/request_permission", params)
            .await?;
        let said: PermissionResponse = serde_json::from_value(said.clone())
            .map_err(|e| format!("its answer does not read as a permission outcome ({e})"))?;
        match said.outcome {
            PermissionOutcome::Selected { option_id } => Ok(option_id),
            PermissionOutcome::Cancelled => Err("cancelled".into()),
        }
    }

    /// Whether a call may run.
    async fn permission(&self, id: &str, asked: &PermissionRequest) -> PermissionDecision {
        let call = tools::call(
            self.root,
            &asked.tool_use_id,
            &asked.program,
            &asked.input,
            ToolCallStatus::Pending,
        );
        let tool_call = ToolCallUpdate {
            tool_call_id: call.tool_call_id,
            title: Some(call.title),
            kind: Some(call.kind),
            status: Some(ToolCallStatus::Pending),
            content: Some(call.content),
            locations: Some(call.locations),
            raw_input: Some(call.raw_input),
            raw_output: None,
        };
        let rule = &asked.rule;
        let options = vec![
            option("allow", "Allow".into(), PermissionKind::AllowOnce),
            option(
                "always",
                format!("Always allow {rule} in this session"),
                PermissionKind::AllowAlways,
            ),
            option("deny", "Reject".into(), PermissionKind::RejectOnce),
            option(
                "never",
                format!("Always reject {rule} in this session"),
                PermissionKind::RejectAlways,
            ),
        ];
        let mut decision = PermissionDecision {
            request: id.to_owned(),
            rule: Some(rule.clone()),
            by: Some(BY_EDITOR.into()),
            ..PermissionDecision::default()
        };
        match self.pick(tool_call, options).await.as_deref() {
            Ok("allow") => decision.decision = Choice::Allow,
            Ok("always") => decision.decision = Choice::Always,
            Ok("never") => decision.decision = Choice::Never,
            Ok("deny") => decision.decision = Choice::Deny,
            Ok(other) => {
                decision.message = Some(format!("the editor picked no option hc gave ({other})"));
            }
            Err(why) => {
                // (withdrawn by a cancel, or the editor gone: the run stops
                // with it, whatever order the interrupt and this are read in)
                decision.interrupt = why == super::link::WITHDRAWN || why == super::link::GONE;
                decision.message = Some(format!("the editor did not allow it: {why}"));
            }
        }
        decision
    }

    /// A plan waiting for approval: the answer, and the session's mode
    /// as it leaves it.
    async fn plan(&self, id: &str, plan: &Plan, mode: &Mutex<PermissionMode>) -> UserAnswer {
        let tool_call = ToolCallUpdate {
            tool_call_id: plan.tool_use_id.clone(),
            title: Some("Ready to carry out the plan?".into()),
            kind: Some(ToolKind::Think),
            status: Some(ToolCallStatus::Pending),
            content: Some(vec![tools::text(plan.text.clone())]),
            ..ToolCallUpdate::default()
        };
        let options = vec![
            option(
                PLAN_ACCEPT_EDITS,
                "Yes, and accept edits".into(),
                PermissionKind::AllowAlways,
            ),
            option(
                PLAN_APPROVE,
                "Yes, and ask before edits".into(),
                PermissionKind::AllowOnce,
            ),
            option(
                "plan",
                "No, keep planning".into(),
                PermissionKind::RejectOnce,
            ),
        ];
        let picked = self.pick(tool_call, options).await;
        let text = match picked.as_deref() {
            Ok(choice @ (PLAN_ACCEPT_EDITS | PLAN_APPROVE)) => {
                let now = PermissionMode::parse(choice).unwrap_or_default();
                *mode.lock().unwrap_or_else(PoisonError::into_inner) = now;
                super::link::update(
                    self.session,
                    hc_acp::schema::SessionUpdate::CurrentModeUpdate {
                        current_mode_id: now.as_str().to_owned(),
                    },
                );
                choice.to_owned()
            }
            _ => String::new(),
        };
        UserAnswer {
            request: id.to_owned(),
            text,
            by: Some(BY_EDITOR.into()),
        }
    }

    /// The agent's question: its answers to pick from, when it offers
    /// some (an editor has no box to type one in).
    async fn question(&self, id: &str, asked: &UserQuestion) -> UserAnswer {
        let offered = asked.options.clone().unwrap_or_default();
        let text = match offered.is_empty() {
            true => "(no one can type an answer in the editor: decide yourself, and say what \
                     you assumed)"
                .to_owned(),
            false => {
                let tool_call = ToolCallUpdate {
                    tool_call_id: asked.tool_use_id.clone(),
                    title: Some(asked.text.clone()),
                    kind: Some(ToolKind::Think),
                    status: Some(ToolCallStatus::Pending),
                    ..ToolCallUpdate::default()
                };
                let mut options: Vec<PermissionOption> = (offered.iter().enumerate())
                    .map(|(n, o)| option(&n.to_string(), o.clone(), PermissionKind::AllowOnce))
                    .collect();
                options.push(option(
                    "none",
                    "None of these".into(),
                    PermissionKind::RejectOnce,
                ));
                match self.pick(tool_call, options).await {
                    Ok(picked) => picked
                        .parse::<usize>()
                        .ok()
                        .and_then(|n| offered.get(n).cloned())
                        .unwrap_or_else(|| "(the person picked none of the answers)".into()),
                    Err(why) => format!("(the person did not answer: {why})"),
                }
            }
        };
        UserAnswer {
            request: id.to_owned(),
            text,
            by: Some(BY_EDITOR.into()),
        }
    }
}
