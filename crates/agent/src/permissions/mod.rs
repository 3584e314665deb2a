//! Whether a tool call may run: rules from configuration and flags —
//! `shell(git status:*)`, `edit(src/**)`, `read(~/.ssh/**)`,
//! `web-fetch(domain:docs.rs)`, or a bare program name — and a mode.
//! Deny beats allow beats ask beats the mode.
//!
//! A `shell` command is judged as the shell would run it ([`command`]):
//! every simple command in it must be allowed for the call to be allowed,
//! and any one denied denies it; a command that cannot be judged
//! statically asks; its output redirections are writes and need what a
//! `write` needs. Paths are compared resolved ([`command::paths`]), and a `read(…)`
//! rule governs every program that reads — `read`, `grep`, `glob`, any
//! read-only tool with a path. Reading a `.env` file asks first.

pub mod command;
pub mod taint;

use crate::config::PermissionMode;
use serde_json::Value;
use std::path::{Path, PathBuf};

pub use command::paths::absolute;

/// Programs a `read(…)` rule governs beside read-only tools with a path.
const READERS: &[&str] = &["read", "grep", "glob"];

/// Files a command may name outside the project without asking.
const DEVICES: &[&str] = &[
    "/dev/null",
    "/dev/zero",
    "/dev/stdin",
    "/dev/stdout",
    "/dev/stderr",
    "/dev/tty",
    "/dev/urandom",
    "/dev/random",
];

/// One rule: a program, and what of its input it covers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rule {
    text: String,
    program: String,
    spec: Option<String>,
    /// A command rule's words (`git status` of `shell(git status:*)`),
    /// unquoted and normalised as commands are, and whether they are a
    /// prefix.
    words: Option<(Vec<String>, bool)>,
}

/// Why a permission rule does not read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RuleError {
    /// `name(spec` with no `)`.
    #[error("permission rule `{rule}` has no closing `)`; write `program` or `program(pattern)`")]
    Unclosed {
        /// The rule as written.
        rule: String,
    },
    /// No program name before the pattern.
    #[error("permission rule `{rule}` must start with a program name, e.g. `shell(git status:*)`")]
    NoProgram {
        /// The rule as written.
        rule: String,
    },
}

impl Rule {
    /// Parses `name` or `name(spec)`.
    pub fn parse(text: &str) -> Result<Rule, RuleError> {
        let text = text.trim();
        let (program, spec) = match text.split_once('(') {
            None => (text, None),
            Some((name, rest)) => match rest.strip_suffix(')') {
                Some(spec) => (name.trim(), Some(spec.trim().to_owned())),
                None => {
                    return Err(RuleError::Unclosed {
                        rule: text.to_owned(),
                    });
                }
            },
        };
        if program.is_empty() || program.contains(char::is_whitespace) {
            return Err(RuleError::NoProgram {
                rule: text.to_owned(),
            });
        }
        let spec = spec.filter(|s| !s.is_empty() && s != "*");
        let words = spec.as_deref().and_then(command_words);
        Ok(Rule {
            text: text.to_owned(),
            // Claude Code's names too: `Bash(git status:*)` is `shell(…)`
            program: crate::names::program_of(program).to_owned(),
            spec,
            words,
        })
    }

    /// The rule as written.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// Whether the rule is about `call`'s program (a `read` rule is about
    /// every program that reads).
    fn about(&self, call: &Call<'_>) -> bool {
        self.program == call.program
            || (self.program == "read" && call.reads())
            || self.covers_server(call)
    }

    /// Whether the rule is `mcp__NAME` and `call` is of one of that
    /// server's tools (`mcp__NAME__TOOL`).
    fn covers_server(&self, call: &Call<'_>) -> bool {
        let server = self.program.strip_prefix("mcp__");
        server.is_some_and(|s| !s.contains("__"))
            && call
                .program
                .strip_prefix(&self.program)
                .is_some_and(|rest| rest.starts_with("__"))
    }

    /// Whether the rule covers `call` — for a command, whether it covers
    /// any of the simple commands the command runs.
    pub fn matches(&self, call: &Call<'_>) -> bool {
        if !self.about(call) {
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
        if let Some(command) = call.command() {
            return command::parse(command)
                .commands
                .iter()
                .any(|c| self.covers(&c.argv));
        }
        match call.path_forms() {
            Some(forms) => command::paths::matches(spec, &forms, call.root),
            None => false,
        }
    }

    /// Whether a command whose words start as `argv` and go on with
    /// words known only when it runs may be covered: the rule's words are
    /// longer, and start with them.
    fn may_cover_more(&self, argv: &[String]) -> bool {
        self.words
            .as_ref()
            .is_some_and(|(words, _)| words.len() > argv.len() && words.starts_with(argv))
    }

    /// Whether the rule covers one simple command's words.
    fn covers(&self, argv: &[String]) -> bool {
        let Some(spec) = &self.spec else {
            return true;
        };
        match &self.words {
            Some((words, true)) => argv.len() >= words.len() && argv[..words.len()] == words[..],
            Some((words, false)) => argv == &words[..],
            None => {
                globset::Glob::new(spec).is_ok_and(|g| g.compile_matcher().is_match(argv.join(" ")))
            }
        }
    }
}

/// A command rule's words: `git status` of `git status:*` (a prefix) or
/// of `git status` (exact); `None` for a glob.
fn command_words(spec: &str) -> Option<(Vec<String>, bool)> {
    let (text, prefix) = match spec.strip_suffix(":*") {
        Some(text) => (text, true),
        None => (spec, false),
    };
    if text.contains('*') {
        return None;
    }
    let parsed = command::parse(text);
    let [one] = parsed.commands.as_slice() else {
        return None;
    };
    Some((one.argv.clone(), prefix))
}

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
    /// The command, for a program that runs one (`shell`).
    fn command(&self) -> Option<&str> {
        self.input.get("command").and_then(Value::as_str)
    }

    /// Whether it is a tool of an MCP server (`mcp__NAME__TOOL`), whose
    /// annotations are the server's word, never trusted for permission.
    fn mcp(&self) -> bool {
        self.program.starts_with("mcp__")
    }

    /// Whether the input names a path.
    fn has_path(&self) -> bool {
        ["file_path", "path", "pattern"]
            .iter()
            .any(|k| self.input.get(*k).is_some())
    }

    /// The path the call is about, when it is about one (a search with no
    /// path is about the project root).
    fn path(&self) -> Option<String> {
        let path = ["file_path", "path"]
            .iter()
            .find_map(|k| self.input.get(*k).and_then(Value::as_str))
            .unwrap_or(".");
        self.has_path().then(|| path.to_owned())
    }

    /// The paths a reading call reaches: its path (the project root when
    /// it names none), and a glob pattern's fixed directory when the
    /// pattern itself leaves the project (`/etc/*`, `~/.ssh/*`, `../x`).
    fn read_paths(&self) -> Vec<String> {
        let mut out = vec![self.path().unwrap_or_else(|| ".".to_owned())];
        if let Some(pattern) = self.input.get("pattern").and_then(Value::as_str)
            && self.program == "glob"
            && (pattern.starts_with(['/', '~']) || pattern.split('/').any(|p| p == ".."))
        {
            let end = pattern.find(['*', '?', '[', '{']).unwrap_or(pattern.len());
            let fixed = &pattern[..end];
            let dir = fixed.rsplit_once('/').map_or(fixed, |(dir, _)| dir);
            out.push(if dir.is_empty() { "/" } else { dir }.to_owned());
        }
        out
    }

    /// Every spelling of the call's path a rule is checked against.
    fn path_forms(&self) -> Option<Vec<PathBuf>> {
        self.path().map(|p| command::paths::forms(self.root, &p))
    }

    /// Whether the program reads what its path names.
    fn reads(&self) -> bool {
        READERS.contains(&self.program) || (self.read_only && self.has_path() && !self.mcp())
    }

    fn domain(&self) -> Option<String> {
        let url = self.input.get("url").and_then(Value::as_str)?;
        let rest = url.split_once("://").map_or(url, |(_, r)| r);
        let host = rest.split(['/', '?', '#']).next()?;
        let host = host.rsplit_once('@').map_or(host, |(_, h)| h);
        Some(host.split(':').next().unwrap_or(host).to_ascii_lowercase())
    }

    /// Rules that would allow this call again — never more than it
    /// asked: for a command, each simple command exactly as it runs, and
    /// each file it writes. What a person adds (`--allow`, `allow` in
    /// configuration) or answers "always" with.
    pub fn suggested_rules(&self) -> Vec<String> {
        if let Some(command) = self.command() {
            let parsed = command::parse(command);
            if parsed.opaque.is_some() || parsed.commands.is_empty() {
                return vec![format!("{}({})", self.program, command.trim())];
            }
            let mut rules: Vec<String> = Vec::new();
            for simple in &parsed.commands {
                let words: Vec<String> = simple.argv.iter().map(|w| command::quote(w)).collect();
                let rule = format!("{}({})", self.program, words.join(" "));
                if !rules.contains(&rule) {
                    rules.push(rule);
                }
            }
            for write in &parsed.writes {
                let rule = format!("write({write})");
                if !rules.contains(&rule) {
                    rules.push(rule);
                }
            }
            return rules;
        }
        if let Some(domain) = self.domain() {
            return vec![format!("{}(domain:{domain})", self.program)];
        }
        if let Some(path) = self.path() {
            let path = absolute(self.root, &path);
            let shown = path
                .strip_prefix(self.root)
                .map_or(path.clone(), Path::to_path_buf);
            return vec![format!("{}({})", self.program, shown.to_string_lossy())];
        }
        vec![self.program.to_owned()]
    }

    /// The first of [`suggested_rules`](Self::suggested_rules).
    pub fn suggested_rule(&self) -> String {
        self.suggested_rules()
            .into_iter()
            .next()
            .unwrap_or_else(|| self.program.to_owned())
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
    /// Directories beside the project a read reaches without asking
    /// (`--add-dir`), absolute.
    dirs: Vec<PathBuf>,
}

impl Permissions {
    /// From the configured lists; a malformed rule is an error naming it.
    pub fn new(
        mode: PermissionMode,
        allow: &[String],
        deny: &[String],
        ask: &[String],
    ) -> Result<Permissions, RuleError> {
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
            dirs: Vec::new(),
        })
    }

    /// With directories beside the project that reads reach without
    /// asking (`--add-dir`; relative ones against `root`).
    pub fn with_dirs(mut self, root: &Path, dirs: &[String]) -> Permissions {
        self.dirs = dirs
            .iter()
            .flat_map(|d| command::paths::forms(root, d))
            .collect();
        self
    }

    /// Whether every path `call` reads is inside the project or an added
    /// directory — as it resolves (a link inside the project to a file
    /// outside reads outside; `/proc/self/cwd/x` reads inside).
    fn reads_inside(&self, call: &Call<'_>) -> bool {
        let roots: Vec<PathBuf> = command::paths::forms(call.root, ".")
            .into_iter()
            .chain(self.dirs.iter().cloned())
            .collect();
        call.read_paths()
            .iter()
            .map(|p| command::paths::real(&absolute(call.root, p)))
            .all(|real| roots.iter().any(|r| real.starts_with(r)))
    }

    /// Whether one of the person's allow rules names `call` itself (not
    /// the mode, not a default).
    pub fn allowed_by_rule(&self, call: &Call<'_>) -> bool {
        self.allow.iter().any(|r| r.matches(call))
    }

    /// What the rules alone say of `call` — a deny rule (or plan mode)
    /// refuses, an ask rule asks — whatever the mode would otherwise
    /// allow: how input a person or program gave instead of the model's
    /// is judged before it runs.
    pub fn judge_given(&self, call: &Call<'_>) -> Decision {
        if self.mode == PermissionMode::Plan
            && let denied @ Decision::Deny(_) = self.decide(call)
        {
            return denied;
        }
        let rules_only = Permissions {
            mode: PermissionMode::Bypass,
            ..self.clone()
        };
        rules_only.decide(call)
    }

    /// Allows what `rule` covers for the rest of the session.
    pub fn allow_always(&mut self, rule: &str) {
        if let Ok(rule) = Rule::parse(rule) {
            self.allow.push(rule);
        }
    }

    /// Refuses calls `rule` covers from now on (a person's "don't ask
    /// again").
    pub fn deny_always(&mut self, rule: &str) {
        if let Ok(rule) = Rule::parse(rule) {
            self.deny.push(rule);
        }
    }

    /// The paths (absolute globs) `read(…)` deny rules keep from every
    /// reader: a search over a directory above them skips them.
    pub fn denied_reads(&self, root: &Path) -> Vec<String> {
        self.deny
            .iter()
            .filter(|r| r.program == "read")
            .filter_map(|r| r.spec.as_deref())
            .flat_map(|spec| command::paths::patterns(spec, root))
            .map(|p| {
                let p = p.to_string_lossy().into_owned();
                if p.contains('*') {
                    p
                } else {
                    format!("{p}/**")
                }
            })
            .collect()
    }

    /// The decision for `call`.
    pub fn decide(&self, call: &Call<'_>) -> Decision {
        match call.command() {
            Some(command) => self.decide_command(call, command),
            None => self.decide_one(call),
        }
    }

    /// A call that is not a command.
    fn decide_one(&self, call: &Call<'_>) -> Decision {
        if let Some(rule) = self.deny.iter().find(|r| r.matches(call)) {
            return Decision::Deny(format!("denied by the rule `{}`", rule.as_str()));
        }
        if self.allow.iter().any(|r| r.matches(call)) {
            return Decision::Allow;
        }
        if let Some(rule) = self.ask.iter().find(|r| r.matches(call)) {
            return Decision::Ask(format!("the rule `{}` asks first", rule.as_str()));
        }
        let secret = call.reads()
            && call
                .path_forms()
                .is_some_and(|forms| forms.iter().any(|p| command::paths::is_secret(p)));
        if let Some(outside) = self.outside(call) {
            return outside;
        }
        match self.mode {
            PermissionMode::Bypass => Decision::Allow,
            _ if secret => Decision::Ask(
                "it reads a .env file, whose secrets would go to the model and into the session"
                    .into(),
            ),
            PermissionMode::Plan if call.mcp() && call.read_only => Decision::Allow,
            _ if call.mcp() && self.mode != PermissionMode::Plan => Decision::Ask(format!(
                "`{}` is a tool of an MCP server, which hermitcrab does not vouch for",
                call.program
            )),
            _ if call.read_only && !call.mcp() => Decision::Allow,
            PermissionMode::Plan => Decision::Deny(
                "plan mode allows only read-only tools; say what you would change instead".into(),
            ),
            PermissionMode::AcceptEdits
                if matches!(call.program, "write" | "edit")
                    && call.path_forms().is_some_and(|f| {
                        f.iter().all(|p| {
                            p.starts_with(call.root) || self.dirs.iter().any(|d| p.starts_with(d))
                        })
                    }) =>
            {
                Decision::Allow
            }
            _ => Decision::Ask(format!("`{}` changes things", call.program)),
        }
    }

    /// What the mode says of a call that leaves the project — a read
    /// outside it and its added directories, a fetch from any host —
    /// when no rule did: asked (plan mode refuses a read outside), unless
    /// the person bypasses permissions. `None`: it stays inside.
    fn outside(&self, call: &Call<'_>) -> Option<Decision> {
        let why = if call.program == "web-fetch" {
            let host = call.domain().unwrap_or_default();
            format!("it fetches from `{host}`, a host no rule allows yet")
        } else if call.reads() && !self.reads_inside(call) {
            let path = call.read_paths().join("`, `");
            if self.mode == PermissionMode::Plan {
                return Some(Decision::Deny(format!(
                    "plan mode reads only inside the project; `{path}` is outside it"
                )));
            }
            format!("it reads `{path}`, outside the project")
        } else {
            return None;
        };
        Some(match self.mode {
            PermissionMode::Bypass => Decision::Allow,
            _ => Decision::Ask(why),
        })
    }

    /// A command: each simple command it runs and each file it writes.
    fn decide_command(&self, call: &Call<'_>, command: &str) -> Decision {
        let parsed = command::parse(command);
        let of = |list: &'_ [Rule]| -> Vec<Rule> {
            list.iter()
                .filter(|r| r.program == call.program)
                .cloned()
                .collect()
        };
        let (deny, allow, ask) = (of(&self.deny), of(&self.allow), of(&self.ask));
        let hit = |rules: &[Rule], simple: &command::Simple| {
            rules
                .iter()
                .find(|r| r.covers(&simple.argv))
                .map(|r| r.as_str().to_owned())
        };
        // deny and ask rules see what a command runs too (`git -C x push`
        // runs `git push`); allow rules only its words as written
        let hit_runs = |rules: &[Rule], simple: &command::Simple| {
            hit(rules, simple).or_else(|| {
                let runs = simple.runs.as_deref()?;
                let rule = rules.iter().find(|r| r.covers(runs))?;
                Some(rule.as_str().to_owned())
            })
        };
        for simple in &parsed.commands {
            if let Some(rule) = hit_runs(&deny, simple) {
                return Decision::Deny(format!(
                    "denied by the rule `{rule}` (it runs `{}`)",
                    simple.argv.join(" ")
                ));
            }
        }
        // words known only when it runs (`rm $X`, `echo push | xargs
        // git`, `find push -exec git {} ;`): a deny rule that goes on past
        // the words known may cover what runs
        let unknown = parsed.commands.iter().find_map(|c| {
            let known = &c.argv[..c.known?.min(c.argv.len())];
            let rule = deny.iter().find(|r| r.may_cover_more(known))?;
            Some(format!(
                "`{}` goes on with words known only when it runs, and the rule `{}` may cover them",
                known.join(" "),
                rule.as_str()
            ))
        });
        if let Some(why) = unknown {
            return match self.mode {
                PermissionMode::Plan => Decision::Deny(format!("plan mode: {why}")),
                _ => Decision::Ask(format!("it cannot be judged before it runs: {why}")),
            };
        }
        let inputs: Vec<Value> = parsed
            .writes
            .iter()
            .map(|path| serde_json::json!({"file_path": path}))
            .collect();
        // Each redirection writes a file: it needs what a `write` needs.
        let writes: Vec<Decision> = inputs
            .iter()
            .map(|input| {
                self.decide_one(&Call {
                    program: "write",
                    input,
                    root: call.root,
                    read_only: false,
                })
            })
            .collect();
        if let Some(denied) = writes.iter().find(|d| matches!(d, Decision::Deny(_))) {
            return denied.clone();
        }
        if let Some(read) = self.reads_in(call, &parsed) {
            return read;
        }
        let everything = allow.iter().any(|r| r.spec.is_none());
        if let Some(why) = &parsed.opaque {
            return match self.mode {
                _ if everything && deny.is_empty() => Decision::Allow,
                PermissionMode::Bypass if deny.is_empty() => Decision::Allow,
                PermissionMode::Plan => Decision::Deny(format!("plan mode: {why}")),
                _ => Decision::Ask(format!("it cannot be judged before it runs: {why}")),
            };
        }
        let allowed = parsed
            .commands
            .iter()
            .all(|c| everything || (!c.risky && hit(&allow, c).is_some()))
            && writes.iter().all(|d| *d == Decision::Allow);
        if allowed {
            return Decision::Allow;
        }
        if let Some(rule) = parsed.commands.iter().find_map(|c| hit_runs(&ask, c)) {
            return Decision::Ask(format!("the rule `{rule}` asks first"));
        }
        match self.mode {
            PermissionMode::Bypass => Decision::Allow,
            PermissionMode::Plan => Decision::Deny(
                "plan mode allows only read-only tools; say what you would change instead".into(),
            ),
            _ => Decision::Ask(format!("`{}` changes things", call.program)),
        }
    }

    /// Whether `call` reads something outside the project and its added
    /// directories: a reader's path, or a file a command names.
    pub fn leaves_project(&self, call: &Call<'_>) -> bool {
        if let Some(command) = call.command() {
            let parsed = command::parse(command);
            let words = parsed.commands.iter().flat_map(|c| c.argv.iter().skip(1));
            return words
                .filter(|w| !w.starts_with('-') && !w.is_empty())
                .filter(|w| !DEVICES.contains(&w.as_str()))
                .any(|word| {
                    let input = serde_json::json!({"file_path": word});
                    let probe = Call {
                        program: "read",
                        input: &input,
                        root: call.root,
                        read_only: true,
                    };
                    command::paths::forms(call.root, word)
                        .iter()
                        .any(|p| p.exists())
                        && !self.reads_inside(&probe)
                });
        }
        call.reads() && !self.reads_inside(call)
    }

    /// What the words of a command that name files say: one a `read(…)`
    /// deny rule covers denies the call; a `.env` file asks.
    fn reads_in(&self, call: &Call<'_>, parsed: &command::Parsed) -> Option<Decision> {
        let words = parsed.commands.iter().flat_map(|c| c.argv.iter().skip(1));
        for word in words.filter(|w| !w.starts_with('-') && !w.is_empty()) {
            let input = serde_json::json!({"file_path": word});
            let probe = Call {
                program: "read",
                input: &input,
                root: call.root,
                read_only: true,
            };
            let forms = command::paths::forms(call.root, word);
            if !forms.iter().any(|p| p.exists()) {
                continue;
            }
            if let Some(rule) = self
                .deny
                .iter()
                .find(|r| r.program == "read" && r.matches(&probe))
            {
                return Some(Decision::Deny(format!(
                    "denied by the rule `{}` (it names `{word}`)",
                    rule.as_str()
                )));
            }
            let allowed = self
                .allow
                .iter()
                .any(|r| r.program == "read" && r.matches(&probe));
            if allowed || self.mode == PermissionMode::Bypass {
                continue;
            }
            if forms.iter().any(|p| command::paths::is_secret(p)) {
                return Some(Decision::Ask(format!(
                    "it names `{word}`, a .env file, whose secrets would go to the model"
                )));
            }
            if !DEVICES.contains(&word.as_str()) && !self.reads_inside(&probe) {
                return Some(Decision::Ask(format!(
                    "it names `{word}`, outside the project"
                )));
            }
        }
        None
    }
}
