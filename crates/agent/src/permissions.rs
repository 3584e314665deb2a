//! Whether a tool call may run: rules
//! from configuration and flags — `shell(git status:*)`, `edit(src/**)`,
//! `read(~/.ssh/**)`, `web-fetch(domain:docs.rs)`, or a bare program name —
//! and a mode. Deny beats allow beats ask beats the mode.

use crate::config::PermissionMode;
use serde_json::Value;
use std::path::{Path, PathBuf};

/// One rule: a program, and what of its input it covers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rule {
    text: String,
    program: String,
    spec: Option<String>,
}

impl Rule {
    /// Parses `name` or `name(spec)`.
    pub fn parse(text: &str) -> Result<Rule, String> {
        let text = text.trim();
        let (program, spec) = match text.split_once('(') {
            None => (text, None),
            Some((name, rest)) => match rest.strip_suffix(')') {
                Some(spec) => (name.trim(), Some(spec.trim().to_owned())),
                None => {
                    return Err(format!(
                        "permission rule `{text}` has no closing `)`; write `program` or `program(pattern)`"
                    ));
                }
            },
        };
        if program.is_empty() || program.contains(char::is_whitespace) {
            return Err(format!(
                "permission rule `{text}` must start with a program name, e.g. `shell(git status:*)`"
            ));
        }
        Ok(Rule {
            text: text.to_owned(),
            program: program.to_owned(),
            spec: spec.filter(|s| !s.is_empty() && s != "*"),
        })
    }

    /// The rule as written.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// Whether the rule covers `call`.
    pub fn matches(&self, call: &Call<'_>) -> bool {
        if self.program != call.program {
            return false;
        }
        let Some(spec) = &self.spec else {
            return true;
        };
        if let Some(domain) = spec.strip_prefix("domain:") {
            return call
                .domain()
                .is_some_and(|host| host == domain || host.ends_with(&format!(".{domain}")));
        }
        if let Some(command) = call.input.get("command").and_then(Value::as_str) {
            return command_matches(spec, command);
        }
        if let Some(path) = call.path() {
            return path_matches(spec, &path, call.root);
        }
        false
    }
}

fn command_matches(spec: &str, command: &str) -> bool {
    let command = command.trim();
    if let Some(prefix) = spec.strip_suffix(":*") {
        return command == prefix
            || command
                .strip_prefix(prefix)
                .is_some_and(|rest| rest.starts_with(char::is_whitespace));
    }
    if spec.contains('*') {
        return globset::Glob::new(spec).is_ok_and(|g| g.compile_matcher().is_match(command));
    }
    command == spec
}

fn path_matches(spec: &str, path: &Path, root: &Path) -> bool {
    let pattern = absolute(root, spec);
    globset::GlobBuilder::new(&pattern.to_string_lossy())
        .literal_separator(true)
        .build()
        .is_ok_and(|g| {
            let m = g.compile_matcher();
            m.is_match(path) || (!spec.contains('*') && path.starts_with(&pattern))
        })
}

pub use protocol::paths::absolute;

/// A call as permissions see it.
pub struct Call<'a> {
    /// The program.
    pub program: &'a str,
    /// Its input.
    pub input: &'a Value,
    /// The project root.
    pub root: &'a Path,
    /// Whether the program changes nothing.
    pub read_only: bool,
}

impl Call<'_> {
    /// The path the call is about, when it is about one.
    fn path(&self) -> Option<PathBuf> {
        let path = ["file_path", "path"]
            .iter()
            .find_map(|k| self.input.get(*k).and_then(Value::as_str))
            .unwrap_or(".");
        (self.input.get("file_path").is_some()
            || self.input.get("pattern").is_some()
            || self.input.get("path").is_some())
        .then(|| absolute(self.root, path))
    }

    fn domain(&self) -> Option<String> {
        let url = self.input.get("url").and_then(Value::as_str)?;
        let rest = url.split_once("://").map_or(url, |(_, r)| r);
        let host = rest.split(['/', '?', '#']).next()?;
        let host = host.rsplit_once('@').map_or(host, |(_, h)| h);
        Some(host.split(':').next().unwrap_or(host).to_ascii_lowercase())
    }

    /// A rule that would allow this call and calls like it: what a person
    /// adds (`--allow`, `allow` in configuration) or answers "always" with.
    pub fn suggested_rule(&self) -> String {
        if let Some(command) = self.input.get("command").and_then(Value::as_str) {
            let words: Vec<&str> = command.split_whitespace().take(2).collect();
            return format!("{}({}:*)", self.program, words.join(" "));
        }
        if let Some(domain) = self.domain() {
            return format!("{}(domain:{domain})", self.program);
        }
        if let Some(path) = self.path() {
            let shown = path
                .strip_prefix(self.root)
                .map_or(path.clone(), Path::to_path_buf);
            return format!("{}({})", self.program, shown.to_string_lossy());
        }
        self.program.to_owned()
    }
}

/// What to do with a call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decision {
    /// Run it.
    Allow,
    /// Refuse it, saying why.
    Deny(String),
    /// Ask the person, saying why.
    Ask(String),
}

/// The rules and the mode of a run, and what the person allowed during it.
#[derive(Clone, Debug, Default)]
pub struct Permissions {
    /// The mode.
    pub mode: PermissionMode,
    allow: Vec<Rule>,
    deny: Vec<Rule>,
    ask: Vec<Rule>,
}

impl Permissions {
    /// From the configured lists; a malformed rule is an error naming it.
    pub fn new(
        mode: PermissionMode,
        allow: &[String],
        deny: &[String],
        ask: &[String],
    ) -> Result<Permissions, String> {
        let parse = |list: &[String]| {
            list.iter()
                .map(|r| Rule::parse(r))
                .collect::<Result<Vec<_>, _>>()
        };
        Ok(Permissions {
            mode,
            allow: parse(allow)?,
            deny: parse(deny)?,
            ask: parse(ask)?,
        })
    }

    /// Allows what `rule` covers for the rest of the session.
    pub fn allow_always(&mut self, rule: &str) {
        if let Ok(rule) = Rule::parse(rule) {
            self.allow.push(rule);
        }
    }

    /// The decision for `call`.
    pub fn decide(&self, call: &Call<'_>) -> Decision {
        if let Some(rule) = self.deny.iter().find(|r| r.matches(call)) {
            return Decision::Deny(format!("denied by the rule `{}`", rule.as_str()));
        }
        if self.allow.iter().any(|r| r.matches(call)) {
            return Decision::Allow;
        }
        if let Some(rule) = self.ask.iter().find(|r| r.matches(call)) {
            return Decision::Ask(format!("the rule `{}` asks first", rule.as_str()));
        }
        match self.mode {
            PermissionMode::Bypass => Decision::Allow,
            _ if call.read_only => Decision::Allow,
            PermissionMode::Plan => Decision::Deny(
                "plan mode allows only read-only tools; say what you would change instead".into(),
            ),
            PermissionMode::AcceptEdits
                if matches!(call.program, "write" | "edit")
                    && call.path().is_some_and(|p| p.starts_with(call.root)) =>
            {
                Decision::Allow
            }
            _ => Decision::Ask(format!("`{}` changes things", call.program)),
        }
    }
}
