//! `hc chat`'s status line, drawn above each prompt as Claude Code users
//! expect it: the model, the permission mode, how much of the context
//! window the last request used, what the session cost so far (the same
//! figures `hc sessions --json` gives), the project's agents running and
//! waiting — and, under it, the agent's plan (its todo list) while any of
//! it is left to do.

use crate::style::dim;
use agent::contract::{Answer, SessionItem, Todo, TodoStatus};
use engine::Engine;
use substrate::{PlacementType, ScopeOpts, Substrate};

/// What the status line says.
#[derive(Debug, Default, PartialEq)]
pub struct Status {
    /// The model the next message runs on.
    pub model: String,
    /// The permission mode it runs in.
    pub mode: String,
    /// Per cent of the context window the session's last request filled.
    pub context: Option<u64>,
    /// The session's cost so far (none: no run, or no price).
    pub cost_usd: Option<f64>,
    /// The project's agents running, and waiting for an answer.
    pub running: usize,
    pub waiting: usize,
    /// The session's plan, when some of it is left.
    pub todo: Option<Todo>,
}

impl Status {
    /// The status of the chat on `session` (none yet: a new one) with
    /// `config`.
    pub fn of(db: &Substrate, config: &agent::AgentConfig, session: Option<&str>) -> Status {
        let mut status = Status {
            model: config.model.clone(),
            mode: config.permission_mode.as_str().to_owned(),
            ..Status::default()
        };
        if let Ok(rows) = hc_host::agents::rows(db) {
            status.running = rows.iter().filter(|r| r.status == "running").count();
            status.waiting = rows.iter().filter(|r| r.status == "waiting").count();
        }
        let Some(session) = session else {
            return status;
        };
        if let Ok(totals) = crate::cmd::inspect::session_totals(db, session) {
            status.cost_usd = totals.cost_usd;
        }
        let Ok(read) = db.scope(&[session], &ScopeOpts::default()) else {
            return status;
        };
        let own = read
            .chunks
            .iter()
            .filter(|c| c.is_on(session, PlacementType::Instance));
        let mut last: Option<Answer> = None;
        for chunk in own {
            match SessionItem::of(chunk) {
                SessionItem::Answer(answer) => last = Some(*answer),
                SessionItem::Todo(todo) => status.todo = Some(todo),
                _ => {}
            }
        }
        if let Some(answer) = last {
            let used = answer.usage.input_tokens
                + answer.usage.cache_creation_input_tokens
                + answer.usage.cache_read_input_tokens;
            let window = window_of(config, &answer.model);
            status.context = (window > 0).then(|| (used * 100).div_ceil(window));
        }
        status.todo = status
            .todo
            .filter(|t| t.items.iter().any(|i| i.status != TodoStatus::Completed));
        status
    }

    /// The line, and the plan's lines under it.
    pub fn lines(&self) -> Vec<String> {
        let mut parts = vec![self.model.clone(), self.mode.clone()];
        if let Some(used) = self.context {
            parts.push(format!("context {used}%"));
        }
        if let Some(cost) = self.cost_usd {
            parts.push(format!("${cost:.4}"));
        }
        let agents = match (self.running, self.waiting) {
            (0, 0) => None,
            (r, 0) => Some(format!("agents: {r} running")),
            (0, w) => Some(format!("agents: {w} waiting for you")),
            (r, w) => Some(format!("agents: {r} running, {w} waiting for you")),
        };
        parts.extend(agents);
        let mut lines = vec![parts.join(" · ")];
        let plan = self.todo.iter().flat_map(|t| &t.items);
        lines.extend(plan.map(crate::term::calls::item_line));
        lines
    }
}

/// The context window of the model that answered (configuration first).
fn window_of(config: &agent::AgentConfig, model: &str) -> u64 {
    if let Some(window) = config.context_window {
        return window;
    }
    let mut prices = model::PriceTable::default();
    let mut limits = model::LimitsTable::default();
    for (id, settings) in &config.models {
        settings.apply(id, &mut prices, &mut limits);
    }
    limits.get(model).map_or(0, |l| l.context_window)
}

/// Draws the status line (and the plan) on stderr, dim.
pub fn show(engine: &Engine, config: &agent::AgentConfig, session: Option<&str>) {
    for line in Status::of(engine.db(), config, session).lines() {
        eprintln!("{}", dim(&line));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agent::contract::TodoItem;

    #[test]
    fn the_line_says_each_figure_and_the_plan_left() {
        let item = |content: &str, status| TodoItem {
            content: content.into(),
            status,
            extra: Default::default(),
        };
        let status = Status {
            model: "claude-sonnet-5-5".into(),
            mode: "accept-edits".into(),
            context: Some(12),
            cost_usd: Some(0.0123),
            running: 1,
            waiting: 2,
            todo: Some(Todo {
                items: vec![
                    item("read", TodoStatus::Completed),
                    item("fix", TodoStatus::InProgress),
                ],
                text: String::new(),
            }),
        };
        assert_eq!(
            status.lines(),
            [
                "claude-sonnet-5-5 · accept-edits · context 12% · $0.0123 · agents: 1 running, 2 waiting for you",
                "  ☑ read",
                "  ◐ fix"
            ]
        );
    }
}
