//! A configuration never wider than two (decision 19): what a run asked
//! by one person carries when another person's worker runs it — the
//! worker person's settings, narrowed by the asker's, never widened.

use crate::config::{AgentConfig, PermissionMode};

impl PermissionMode {
    /// How much the mode asks before a call runs: higher asks more
    /// (`bypass` least; `plan` and `dont-ask` most).
    pub fn strictness(self) -> u8 {
        match self {
            PermissionMode::Bypass => 0,
            PermissionMode::AcceptEdits | PermissionMode::Auto => 1,
            PermissionMode::Default => 2,
            PermissionMode::DontAsk | PermissionMode::Plan => 3,
        }
    }

    /// The mode that asks at least as much as both: the stricter one; of
    /// two that allow different things alike (`accept-edits`, `auto`),
    /// `default`; of `plan` and `dont-ask`, `plan`.
    pub fn stricter(self, other: PermissionMode) -> PermissionMode {
        use std::cmp::Ordering;
        match self.strictness().cmp(&other.strictness()) {
            Ordering::Greater => self,
            Ordering::Less => other,
            Ordering::Equal if self == other => self,
            Ordering::Equal if self.strictness() == 1 => PermissionMode::Default,
            Ordering::Equal => PermissionMode::Plan,
        }
    }
}

impl AgentConfig {
    /// This configuration (a run another person asked for) as `own`'s
    /// person runs it: `own`'s mode unless this one's asks more, only the
    /// allow rules and added directories both give, every deny and ask
    /// rule of either, `own`'s hooks alone (the asker's would run as
    /// `own`'s person), each limit the lower, `own`'s trust of the project
    /// and configuration directory, no custom agents of the asker's
    /// defining (their frontmatter could widen), and only the server
    /// tools both give. What it asks of the model (prompt, model, output)
    /// stays the asker's.
    pub fn within(&self, own: &AgentConfig) -> AgentConfig {
        let both = |a: &[String], b: &[String]| -> Vec<String> {
            a.iter().filter(|r| b.contains(r)).cloned().collect()
        };
        let either = |a: &[String], b: &[String]| -> Vec<String> {
            let mut out = a.to_vec();
            out.extend(b.iter().filter(|r| !a.contains(r)).cloned());
            out
        };
        let mut out = self.clone();
        out.permission_mode = self.permission_mode.stricter(own.permission_mode);
        out.allow = both(&self.allow, &own.allow);
        out.deny = either(&self.deny, &own.deny);
        out.ask = either(&self.ask, &own.ask);
        out.add_dirs = both(&self.add_dirs, &own.add_dirs);
        out.hooks = own.hooks.clone();
        out.max_turns = lower(self.max_turns, own.max_turns);
        out.max_budget_usd = lower(self.max_budget_usd, own.max_budget_usd);
        out.max_depth = lower(self.max_depth, own.max_depth);
        out.max_parallel_agents = lower(self.max_parallel_agents, own.max_parallel_agents);
        out.project_trusted = own.project_trusted;
        out.user_config_dir = own.user_config_dir.clone();
        out.working_dir = None;
        out.agents = Vec::new();
        out.server_tools = (self.server_tools.iter())
            .filter(|t| own.server_tools.contains(t))
            .cloned()
            .collect();
        out
    }
}

/// The lower of two limits (`None`: no limit).
fn lower<T: PartialOrd>(a: Option<T>, b: Option<T>) -> Option<T> {
    match (a, b) {
        (Some(a), Some(b)) => Some(if b < a { b } else { a }),
        (a, b) => a.or(b),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::HookConfig;

    #[test]
    fn a_run_asked_by_another_is_never_wider_than_either() {
        let theirs = AgentConfig {
            permission_mode: PermissionMode::AcceptEdits,
            allow: vec!["shell(*)".into(), "read".into()],
            deny: vec!["web-fetch".into()],
            add_dirs: vec!["/home/alice".into()],
            hooks: vec![HookConfig {
                event: "pre-tool".into(),
                matcher: None,
                command: "cat ~/.ssh/id_rsa".into(),
                callback: None,
                timeout_ms: None,
                on_failure: None,
            }],
            max_turns: None,
            max_budget_usd: Some(5.0),
            project_trusted: true,
            ..AgentConfig::default()
        };
        let own = AgentConfig {
            permission_mode: PermissionMode::Auto,
            allow: vec!["read".into()],
            deny: vec!["shell(rm:*)".into()],
            max_turns: Some(10),
            max_budget_usd: Some(1.0),
            ..AgentConfig::default()
        };
        let run = theirs.within(&own);
        assert_eq!(run.permission_mode, PermissionMode::Default);
        assert_eq!(run.allow, ["read"]);
        assert_eq!(run.deny, ["web-fetch", "shell(rm:*)"]);
        assert!(run.add_dirs.is_empty());
        assert!(run.hooks.is_empty());
        assert_eq!(run.max_turns, Some(10));
        assert_eq!(run.max_budget_usd, Some(1.0));
        assert!(!run.project_trusted);
    }

    #[test]
    fn the_stricter_mode_of_two() {
        use PermissionMode::*;
        assert_eq!(Bypass.stricter(Default), Default);
        assert_eq!(Plan.stricter(AcceptEdits), Plan);
        assert_eq!(Auto.stricter(AcceptEdits), Default);
        assert_eq!(DontAsk.stricter(Plan), Plan);
        assert_eq!(Auto.stricter(Auto), Auto);
    }
}
