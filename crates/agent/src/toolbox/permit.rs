//! Whether a call may run: the permissions' decision (a `pre-tool` hook's
//! approval stands in for asking, never for a deny rule), and — when the
//! decision is to ask — a `permission-request` on the session and the
//! host's `permission-decision`. Every refusal is counted on the run.

use super::auto::{MAX_DENIALS, Verdict};
use super::hooks::Hooked;
use super::outcome::{Outcome, Turn};
use crate::catalog::ProgramTool;
use crate::config::{AgentConfig, PermissionMode};
use crate::contract::{Choice, Denial, Entry, Member, PermissionRequest, SessionItem};
use crate::permissions::taint::Taint;
use crate::permissions::{Call, Decision, Permissions};
use crate::run::inbox::Reply;
use crate::run::stop::Stop;
use crate::run::writer::Notifier;
use model::ToolUseBlock;
use serde_json::Value;
use std::collections::{HashMap, HashSet};
use std::path::PathBuf;

/// Whether a call may run.
pub(super) enum Permitted {
    /// It may — with the input a person (or program) gave instead, if any.
    Yes(Option<Value>),
    /// It may not: its refusal.
    No(Outcome),
}

/// The permissions of a run, and asking a person when they say to.
pub(super) struct Permit {
    permissions: Permissions,
    /// What the run read outside the project.
    taint: Taint,
    /// Calls reading outside the project whose results are still to come.
    outside: HashSet<String>,
    /// Whether a person can be asked.
    interactive: bool,
    root: PathBuf,
    notifier: Notifier,
    /// Auto mode's judge (none: no model to judge with).
    judge: Option<super::auto::Judge>,
    /// Auto mode's denials in a row.
    auto_denials: u32,
}

impl Permit {
    /// The permissions `config` sets, with what a person allowed "always"
    /// earlier in the session (`history`).
    pub fn new(
        config: &AgentConfig,
        root: PathBuf,
        notifier: Notifier,
        history: &[Member],
    ) -> Result<Permit, String> {
        let mut permissions = Permissions::new(
            config.permission_mode,
            &config.allow,
            &config.deny,
            &config.ask,
        )
        .map_err(|e| e.to_string())?
        .with_dirs(&root, &config.add_dirs);
        for rule in remembered(history, Choice::Always) {
            permissions.allow_always(&rule);
        }
        for rule in remembered(history, Choice::Never) {
            permissions.deny_always(&rule);
        }
        Ok(Permit {
            permissions,
            taint: Taint::default(),
            outside: HashSet::new(),
            interactive: config.interactive,
            root,
            notifier,
            judge: None,
            auto_denials: 0,
        })
    }

    /// Whether reading `path` now would run without asking: what the
    /// rules and the mode say of a `read` of it, as it resolves (a link
    /// made since leads where it leads).
    pub fn reads_quietly(&self, path: &str) -> bool {
        let input = serde_json::json!({"file_path": path});
        let probe = Call {
            program: "read",
            input: &input,
            root: &self.root,
            read_only: true,
        };
        matches!(self.permissions.decide(&probe), Decision::Allow)
    }

    /// Auto mode's judge, from now on.
    pub fn set_judge(&mut self, judge: super::auto::Judge) {
        self.judge = Some(judge);
    }

    /// The permission mode from now on in this run (a plan approved).
    pub fn set_mode(&mut self, mode: PermissionMode) {
        self.permissions.mode = mode;
    }

    /// Allows calls `rule` covers from now on in this run (a loaded skill's
    /// `allowed-tools`).
    pub fn allow(&mut self, rule: &str) {
        self.permissions.allow_always(rule);
    }

    /// What a search by `program` (`grep`, `glob`) must skip: what
    /// `read(…)` deny rules keep from every reader, and — for `grep`,
    /// which returns contents — `.env` files.
    pub fn exclusions(&self, program: &str) -> Vec<String> {
        if !matches!(program, "grep" | "glob") {
            return Vec::new();
        }
        let mut out = self.permissions.denied_reads(&self.root);
        if program == "grep" && self.permissions.mode != crate::config::PermissionMode::Bypass {
            out.push("**/.env*".to_owned());
        }
        out
    }

    /// Whether the call may run (and with what input); else its refusal.
    /// Input a person, a program or a hook gives instead of the model's
    /// is judged again — every deny and ask rule, and the schema — before
    /// it runs; asked about again at most [`MAX_ASKS`] times.
    pub async fn check(
        &mut self,
        call: &ToolUseBlock,
        input: &Value,
        tool: &ProgramTool,
        hooked: Option<Hooked>,
        hooks: &super::Hooks,
        turn: &mut Turn<'_>,
    ) -> Result<Permitted, Stop> {
        let mut decision = self.first_decision(call, input, tool, hooked);
        let mut given: Option<Value> = None;
        for _ in 0..MAX_ASKS {
            let current = given.clone().unwrap_or_else(|| input.clone());
            self.mark_outside(call, &current, tool);
            match self.settle(call, &current, decision, hooks, turn).await? {
                Settled::Run => return Ok(Permitted::Yes(given)),
                Settled::Refused(outcome) => return Ok(Permitted::No(*outcome)),
                Settled::Instead(instead) => {
                    if let Err(why) = protocol::schema::check(&tool.def.schema, &instead) {
                        return Ok(Permitted::No(Outcome::error(format!(
                            "the input given with the permission for `{}` is not valid: {why}",
                            call.name
                        ))));
                    }
                    decision = self.judge_given(call, &instead, tool);
                    given = Some(instead);
                }
            }
        }
        let refusal = format!(
            "permission denied: `{}` was answered with other input {MAX_ASKS} times, each \
             needing a question of its own",
            call.name
        );
        self.denied(call, input, &refusal, turn);
        Ok(Permitted::No(Outcome::denied(refusal)))
    }

    /// The decision on the model's own input: the rules and the mode, a
    /// `pre-tool` hook's word, a stranger's program, and what the input
    /// would carry out of the project.
    fn first_decision(
        &self,
        call: &ToolUseBlock,
        input: &Value,
        tool: &ProgramTool,
        hooked: Option<Hooked>,
    ) -> Decision {
        let probe = self.probe(call, input, tool);
        let decision = match (hooked, self.permissions.decide(&probe)) {
            (Some(Hooked::Allow), Decision::Ask(_)) => Decision::Allow,
            (Some(Hooked::Ask), Decision::Allow) => {
                Decision::Ask("a pre-tool hook asks first".into())
            }
            (_, decision) => decision,
        };
        let decision = match decision {
            Decision::Allow if tool.untrusted && !self.permissions.allowed_by_rule(&probe) => {
                Decision::Ask(UNTRUSTED.into())
            }
            other => other,
        };
        self.carried_out(&probe, input, decision)
    }

    /// The decision on input given instead of the model's: what the rules
    /// alone say of it (the person or program already answered for the
    /// mode), and what it would carry out of the project.
    fn judge_given(&self, call: &ToolUseBlock, input: &Value, tool: &ProgramTool) -> Decision {
        let probe = self.probe(call, input, tool);
        let decision = match self.permissions.judge_given(&probe) {
            Decision::Deny(why) => {
                Decision::Deny(format!("the input given instead of the model's: {why}"))
            }
            other => other,
        };
        self.carried_out(&probe, input, decision)
    }

    fn probe<'c>(
        &'c self,
        call: &'c ToolUseBlock,
        input: &'c Value,
        tool: &ProgramTool,
    ) -> Call<'c> {
        Call {
            program: &call.name,
            input,
            root: &self.root,
            read_only: tool.body.read_only,
        }
    }

    /// A call that would carry what the run read outside the project
    /// (a fetched address, a command, a server's input) is asked about,
    /// whatever allowed it.
    fn carried_out(&self, probe: &Call<'_>, input: &Value, decision: Decision) -> Decision {
        let leaves =
            matches!(probe.program, "web-fetch" | "shell") || probe.program.starts_with("mcp__");
        match decision {
            Decision::Allow if leaves && self.taint.carried_by(&input.to_string()) => {
                Decision::Ask(
                    "its input carries what this run read outside the project (a key or token \
                     would leave with it)"
                        .into(),
                )
            }
            other => other,
        }
    }

    /// Keeps in mind that `call` reads outside the project: its result
    /// taints what later calls send out.
    fn mark_outside(&mut self, call: &ToolUseBlock, input: &Value, tool: &ProgramTool) {
        if self
            .permissions
            .leaves_project(&self.probe(call, input, tool))
        {
            self.outside.insert(call.id.clone());
        }
    }

    /// Whether `call` would run without anyone asked and nothing
    /// recorded (the rules and the mode allow it, nothing it carries is
    /// tainted); when it would, it is kept in mind as `check` keeps it.
    pub fn allows_quietly(
        &mut self,
        call: &ToolUseBlock,
        input: &Value,
        tool: &ProgramTool,
    ) -> bool {
        let quiet = matches!(
            self.first_decision(call, input, tool, None),
            Decision::Allow
        );
        if quiet {
            self.mark_outside(call, input, tool);
        }
        quiet
    }

    /// Forgets `call_id`, a call that will not run after all.
    pub fn forget(&mut self, call_id: &str) {
        self.outside.remove(call_id);
    }

    /// A call's result: what a call that read outside the project
    /// returned is kept in mind ([`Taint`]).
    pub fn noted(&mut self, call_id: &str, text: &str) {
        if self.outside.remove(call_id) {
            self.taint.note(text);
        }
    }

    /// Carries out `decision` on `input`: runs, refuses, or asks — and
    /// what the answer was.
    async fn settle(
        &mut self,
        call: &ToolUseBlock,
        input: &Value,
        decision: Decision,
        hooks: &super::Hooks,
        turn: &mut Turn<'_>,
    ) -> Result<Settled, Stop> {
        let probe = Call {
            program: &call.name,
            input,
            root: &self.root,
            read_only: true,
        };
        let rules = probe.suggested_rules();
        // A rule would have allowed what was only asked about, not what a
        // rule denies.
        let decision_allows = matches!(decision, Decision::Ask(_));
        let auto = self.permissions.mode == PermissionMode::Auto;
        let judged = match (&decision, &self.judge) {
            (Decision::Ask(why), Some(judge)) if auto && self.auto_denials < MAX_DENIALS => {
                Some(judge.judge(call, input, why, turn).await)
            }
            _ => None,
        };
        let refusal = match (decision, judged) {
            (_, Some(Verdict::Allow)) => {
                self.auto_denials = 0;
                return Ok(Settled::Run);
            }
            (_, Some(Verdict::Deny(reason))) => {
                self.auto_denials += 1;
                format!("{}{reason}", super::auto::DENIED)
            }
            (Decision::Ask(_), None) if auto && self.judge.is_some() && !self.interactive => {
                let why = format!(
                    "auto mode denied {MAX_DENIALS} calls in a row and no one is attached to \
                     ask; the run stops (look at the denials with `hc trace`)"
                );
                self.denied(call, input, &why, turn);
                return Err(Stop::Error(why));
            }
            (decision, None) => match decision {
                Decision::Allow => return Ok(Settled::Run),
                Decision::Deny(why) => format!("permission denied: {why}"),
                Decision::Ask(why) if self.permissions.mode == PermissionMode::DontAsk => format!(
                    "permission denied: `{}` needs permission ({why}) and the permission mode is \
                 dont-ask: only what the rules allow runs",
                    call.name
                ),
                Decision::Ask(why) if !self.interactive => {
                    let flags: Vec<String> = rules
                        .iter()
                        .map(|r| format!("--allow {}", crate::permissions::command::quote(r)))
                        .collect();
                    let listed: Vec<String> = rules.iter().map(|r| format!("\"{r}\"")).collect();
                    format!(
                        "permission denied: `{}` needs permission ({why}) and no one is attached to \
                     give it. To allow it, run with {} or add {} to `allow` under [permissions] \
                     in .hermitcrab/config.toml",
                        call.name,
                        flags.join(" "),
                        listed.join(", ")
                    )
                }
                Decision::Ask(why) => match self.ask(call, input, &why, &rules, hooks, turn).await?
                {
                    Asked::Allowed(None) => return Ok(Settled::Run),
                    Asked::Allowed(Some(instead)) if instead == *input => return Ok(Settled::Run),
                    Asked::Allowed(Some(instead)) => return Ok(Settled::Instead(instead)),
                    Asked::Refused(refusal, false) => refusal,
                    Asked::Refused(refusal, true) => {
                        self.denied(call, input, &refusal, turn);
                        return Err(Stop::Interrupted);
                    }
                },
            },
        };
        self.denied(call, input, &refusal, turn);
        Ok(Settled::Refused(Box::new(Outcome {
            allow: if decision_allows {
                rules.into_boxed_slice()
            } else {
                Box::default()
            },
            ..Outcome::denied(refusal)
        })))
    }

    /// Counts a refusal on the run.
    fn denied(&self, call: &ToolUseBlock, input: &Value, refusal: &str, turn: &mut Turn<'_>) {
        turn.gates.deny(Denial {
            tool_use_id: call.id.clone(),
            program: call.name.clone(),
            input: input.clone(),
            reason: refusal.to_owned(),
        });
    }

    /// Asks the person (or the program driving the run).
    async fn ask(
        &mut self,
        call: &ToolUseBlock,
        input: &Value,
        why: &str,
        rules: &[String],
        hooks: &super::Hooks,
        turn: &mut Turn<'_>,
    ) -> Result<Asked, Stop> {
        let rule = rules.first().cloned().unwrap_or_else(|| call.name.clone());
        let request = PermissionRequest {
            tool_use_id: call.id.clone(),
            program: call.name.clone(),
            input: input.clone(),
            reason: why.to_owned(),
            rule: rule.clone(),
            rules: if rules.len() > 1 {
                rules.to_vec()
            } else {
                Vec::new()
            },
            process: turn.writer.me().to_owned(),
        };
        let commit = turn
            .writer
            .commit(vec![Entry::of(&request)], None)
            .await
            .map_err(|e| Stop::Error(format!("cannot ask for permission: {e}")))?;
        let Some(asked) = commit.created.first().cloned() else {
            return Err(Stop::Error(
                "the permission request was not recorded".into(),
            ));
        };
        self.notifier
            .waiting(format!("waiting for permission to run `{}`", call.name));
        let said = format!("hermitcrab needs your permission to use {}", call.name);
        hooks.notify("permission_prompt", &said, "waiting").await;
        let decision = match turn.inbox.answer_to(&asked).await {
            None => return Err(Stop::Interrupted),
            Some(Reply::Permission(decision)) => decision,
            Some(Reply::User(_) | Reply::Hook(_)) => {
                return Ok(Asked::Refused(
                    "permission denied by the person".into(),
                    false,
                ));
            }
        };
        match decision.decision {
            Choice::Allow => Ok(Asked::Allowed(decision.updated_input)),
            Choice::Always => {
                // The rules asked about (a host may name one of its own).
                match decision.rule.as_deref() {
                    Some(own) if own != rule => self.permissions.allow_always(own),
                    _ => rules.iter().for_each(|r| self.permissions.allow_always(r)),
                }
                Ok(Asked::Allowed(decision.updated_input))
            }
            Choice::Never => {
                let refused = match decision.rule.as_deref() {
                    Some(own) if own != rule => vec![own.to_owned()],
                    _ => rules.to_vec(),
                };
                refused.iter().for_each(|r| self.permissions.deny_always(r));
                Ok(Asked::Refused(
                    format!(
                        "permission denied by the person, who said not to ask again this \
                         session for {}",
                        refused.join(", ")
                    ),
                    decision.interrupt,
                ))
            }
            Choice::Deny => Ok(Asked::Refused(
                match decision.message.as_deref() {
                    Some(m) if !m.is_empty() => format!("permission denied by the person: {m}"),
                    _ => "permission denied by the person".to_owned(),
                },
                decision.interrupt,
            )),
        }
    }
}

/// How many times a call is asked about, when each answer gives other
/// input that needs asking about again.
const MAX_ASKS: usize = 3;

/// Why a stranger's program is asked about whatever the mode says.
const UNTRUSTED: &str = "it is declared by a stranger — a substrate made elsewhere (shipped with \
    the project: `hc trust` trusts it), or another person on this shared store (`[team] trust` \
    trusts them) — and runs only when you say so";

/// What became of a decision.
enum Settled {
    /// The call runs.
    Run,
    /// It does not: its refusal.
    Refused(Box<Outcome>),
    /// A person or program allowed it with this input instead, to be
    /// judged again.
    Instead(Value),
}

/// What a person (or program) answered.
enum Asked {
    /// Yes — with the input to run instead, if any.
    Allowed(Option<Value>),
    /// No, why; and whether the run stops too.
    Refused(String, bool),
}

/// The rules a person answered `choice` ("always", or "don't ask
/// again") with earlier in the session (each item with its chunk id):
/// either holds for the session, not only the run that asked.
fn remembered(history: &[Member], choice: Choice) -> Vec<String> {
    let asked: HashMap<&str, &PermissionRequest> = history
        .iter()
        .filter_map(|m| match &m.item {
            SessionItem::PermissionRequest(r) => Some((m.id.as_str(), r)),
            _ => None,
        })
        .collect();
    let mut out = Vec::new();
    for member in history {
        let SessionItem::PermissionDecision(d) = &member.item else {
            continue;
        };
        if d.decision != choice {
            continue;
        }
        let request = asked.get(d.request.as_str());
        match (&d.rule, request) {
            (Some(own), Some(r)) if *own != r.rule => out.push(own.clone()),
            (Some(own), None) => out.push(own.clone()),
            (_, Some(r)) if !r.rules.is_empty() => out.extend(r.rules.iter().cloned()),
            (_, Some(r)) => out.push(r.rule.clone()),
            (None, None) => {}
        }
    }
    out
}
