//! A shell command as permissions see it: parsed with a real shell grammar
//! (`brush-parser`), every simple command it would run — in lists,
//! pipelines, subshells, compound commands, functions, command and process
//! substitutions, `sh -c` strings, `find -exec`, behind wrappers such as
//! `env`, `nohup`, `time`, `xargs` — each with its words unquoted and its
//! name normalised; the files its output redirections write; and why it
//! cannot be judged statically when it cannot (`eval`, a command name that
//! is a variable or a substitution, a syntax it cannot parse).

use brush_parser::ast::{
    self, Command, CommandPrefixOrSuffixItem, CompoundCommand, CompoundList, IoFileRedirectKind,
    IoFileRedirectTarget, IoRedirect, SimpleCommand,
};
use brush_parser::word::{WordPiece, WordPieceWithSource};
use brush_parser::{ParserOptions, SourceInfo};

/// How deep `sh -c` strings and substitutions are followed.
const MAX_DEPTH: usize = 8;

/// Commands that run the rest of their words as a command.
const WRAPPERS: &[&str] = &[
    "command", "builtin", "exec", "nohup", "time", "nice", "env", "timeout", "stdbuf", "xargs",
    "sudo", "doas", "setsid", "chronic", "ionice", "taskset", "unbuffer", "watch",
];

/// Shells whose `-c` string is a command of its own.
const SHELLS: &[&str] = &["sh", "bash", "dash", "zsh", "ksh", "ash", "busybox"];

/// Variables a command may be given in front of it without changing what
/// runs (anything else — `PATH`, `LD_PRELOAD`, … — may).
const HARMLESS_VARS: &[&str] = &[
    "RUST_LOG",
    "RUST_BACKTRACE",
    "NODE_ENV",
    "CI",
    "TERM",
    "LANG",
    "LC_ALL",
    "TZ",
    "NO_COLOR",
    "FORCE_COLOR",
    "DEBUG",
    "PYTHONUNBUFFERED",
    "CARGO_TERM_COLOR",
];

/// Directories a command named by its path may come from and still be
/// taken for its name (`/usr/bin/git` is `git`; `./git` is not).
const SYSTEM_BINS: &[&str] = &[
    "/bin",
    "/usr/bin",
    "/usr/local/bin",
    "/sbin",
    "/usr/sbin",
    "/usr/local/sbin",
];

/// One simple command a shell line would run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Simple {
    /// Its words, unquoted, the name normalised (a path's last part,
    /// wrappers taken off). A word whose value is not known statically is
    /// kept as written.
    pub argv: Vec<String>,
    /// Whether it may run something else than its name says — a name
    /// that is a path outside the system's directories, or a variable set
    /// in front of it that could change what runs: never allowed by an
    /// allow rule alone.
    pub risky: bool,
}

/// What a shell line would do.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Parsed {
    /// Every simple command, in order.
    pub commands: Vec<Simple>,
    /// Files its output redirections write, as written.
    pub writes: Vec<String>,
    /// Why it cannot be judged statically, if it cannot.
    pub opaque: Option<String>,
}

/// Parses `command`.
pub fn parse(command: &str) -> Parsed {
    let mut out = Parsed::default();
    walk_source(command, 0, &mut out);
    out
}

fn walk_source(source: &str, depth: usize, out: &mut Parsed) {
    if depth > MAX_DEPTH {
        out.opaque
            .get_or_insert_with(|| "commands nested too deep to judge".into());
        return;
    }
    let options = ParserOptions::default();
    let program = brush_parser::tokenize_str(source)
        .map_err(|e| e.to_string())
        .and_then(|tokens| {
            brush_parser::parse_tokens(&tokens, &options, &SourceInfo::default())
                .map_err(|e| e.to_string())
        });
    match program {
        Ok(program) => {
            let mut walker = Walker { depth, out };
            for list in &program.complete_commands {
                walker.list(list);
            }
        }
        Err(e) => {
            out.opaque
                .get_or_insert_with(|| format!("the shell cannot parse it ({e})"));
        }
    }
}

struct Walker<'a> {
    depth: usize,
    out: &'a mut Parsed,
}

impl Walker<'_> {
    fn opaque(&mut self, why: impl Into<String>) {
        self.out.opaque.get_or_insert_with(|| why.into());
    }

    fn list(&mut self, list: &CompoundList) {
        for item in &list.0 {
            for (_, pipeline) in item.0.iter() {
                for command in &pipeline.seq {
                    self.command(command);
                }
            }
        }
    }

    fn command(&mut self, command: &Command) {
        match command {
            Command::Simple(simple) => self.simple(simple),
            Command::Compound(compound, redirects) => {
                self.compound(compound);
                for redirect in redirects.iter().flat_map(|r| &r.0) {
                    self.redirect(redirect);
                }
            }
            Command::Function(function) => {
                self.compound(&function.body.0);
                for redirect in function.body.1.iter().flat_map(|r| &r.0) {
                    self.redirect(redirect);
                }
            }
            Command::ExtendedTest(test) => self.test(test),
        }
    }

    fn compound(&mut self, compound: &CompoundCommand) {
        match compound {
            CompoundCommand::BraceGroup(ast::BraceGroupCommand(list))
            | CompoundCommand::Subshell(ast::SubshellCommand(list)) => self.list(list),
            CompoundCommand::ForClause(clause) => {
                for word in clause.values.iter().flatten() {
                    self.value(&word.value);
                }
                self.list(&clause.body.0);
            }
            CompoundCommand::ArithmeticForClause(clause) => self.list(&clause.body.0),
            CompoundCommand::CaseClause(clause) => {
                self.value(&clause.value.value);
                for case in &clause.cases {
                    if let Some(list) = &case.cmd {
                        self.list(list);
                    }
                }
            }
            CompoundCommand::IfClause(clause) => {
                self.list(&clause.condition);
                self.list(&clause.then);
                for other in clause.elses.iter().flatten() {
                    if let Some(condition) = &other.condition {
                        self.list(condition);
                    }
                    self.list(&other.body);
                }
            }
            CompoundCommand::WhileClause(ast::WhileOrUntilClauseCommand(condition, body))
            | CompoundCommand::UntilClause(ast::WhileOrUntilClauseCommand(condition, body)) => {
                self.list(condition);
                self.list(&body.0);
            }
            CompoundCommand::Arithmetic(_) => {}
        }
    }

    fn test(&mut self, test: &ast::ExtendedTestExpr) {
        use ast::ExtendedTestExpr as T;
        match test {
            T::And(a, b) | T::Or(a, b) => {
                self.test(a);
                self.test(b);
            }
            T::Not(a) | T::Parenthesized(a) => self.test(a),
            T::UnaryTest(_, word) => {
                self.value(&word.value);
            }
            T::BinaryTest(_, a, b) => {
                self.value(&a.value);
                self.value(&b.value);
            }
        }
    }

    /// A word's value: its substitutions are commands of their own.
    fn value(&mut self, word: &str) -> Word {
        let word = Word::parse(word);
        for inner in &word.substitutions {
            self.nested(inner);
        }
        word
    }

    fn nested(&mut self, source: &str) {
        walk_source(source, self.depth + 1, self.out);
    }

    fn redirect(&mut self, redirect: &IoRedirect) {
        match redirect {
            IoRedirect::File(_, kind, target) => match target {
                IoFileRedirectTarget::Filename(word) => {
                    let word = self.value(&word.value);
                    let writes = matches!(
                        kind,
                        IoFileRedirectKind::Write
                            | IoFileRedirectKind::Append
                            | IoFileRedirectKind::Clobber
                            | IoFileRedirectKind::ReadAndWrite
                    );
                    if writes {
                        self.write(word);
                    }
                }
                IoFileRedirectTarget::ProcessSubstitution(_, ast::SubshellCommand(list)) => {
                    self.list(list)
                }
                IoFileRedirectTarget::Duplicate(word) => {
                    let word = self.value(&word.value);
                    // `>&file` writes a file; `>&2` duplicates a descriptor.
                    if matches!(kind, IoFileRedirectKind::DuplicateOutput)
                        && !word.text.chars().all(|c| c.is_ascii_digit() || c == '-')
                    {
                        self.write(word);
                    }
                }
                IoFileRedirectTarget::Fd(_) => {}
            },
            IoRedirect::OutputAndError(word, _) => {
                let word = self.value(&word.value);
                self.write(word);
            }
            IoRedirect::HereString(_, word) => {
                self.value(&word.value);
            }
            IoRedirect::HereDocument(_, _) => {}
        }
    }

    fn write(&mut self, target: Word) {
        if target.dynamic {
            self.opaque(format!(
                "it writes to `{}`, a path known only when it runs",
                target.text
            ));
        } else if !["/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty"]
            .contains(&target.text.as_str())
        {
            self.out.writes.push(target.text);
        }
    }

    fn simple(&mut self, simple: &SimpleCommand) {
        let mut risky = false;
        let items = simple
            .prefix
            .iter()
            .flat_map(|p| &p.0)
            .chain(simple.suffix.iter().flat_map(|s| &s.0));
        let mut words: Vec<Word> = Vec::new();
        let name = simple.word_or_name.as_ref().map(|w| self.value(&w.value));
        for item in items {
            match item {
                CommandPrefixOrSuffixItem::IoRedirect(redirect) => self.redirect(redirect),
                CommandPrefixOrSuffixItem::Word(word) => words.push(self.value(&word.value)),
                CommandPrefixOrSuffixItem::AssignmentWord(assignment, word) => {
                    self.value(&word.value);
                    if let ast::AssignmentName::VariableName(var) = &assignment.name
                        && !HARMLESS_VARS.contains(&var.as_str())
                        && name.is_some()
                    {
                        risky = true;
                    }
                }
                CommandPrefixOrSuffixItem::ProcessSubstitution(_, ast::SubshellCommand(list)) => {
                    self.list(list)
                }
            }
        }
        let Some(name) = name else {
            return; // assignments or redirections alone
        };
        let mut argv = vec![name];
        argv.extend(words);
        self.argv(argv, risky);
    }

    /// A command's words: its wrappers taken off, `sh -c` strings and
    /// `find -exec` commands followed, its name normalised.
    fn argv(&mut self, mut argv: Vec<Word>, mut risky: bool) {
        loop {
            let Some(name) = argv.first() else { return };
            if name.dynamic {
                let shown = name.text.clone();
                self.opaque(format!(
                    "its command name `{shown}` is known only when it runs"
                ));
                return;
            }
            let (base, is_system) = normalise(&name.text);
            risky |= !is_system;
            match base.as_str() {
                "eval" => {
                    self.opaque("it uses `eval`, which runs text known only when it runs");
                    return;
                }
                w if WRAPPERS.contains(&w) => {
                    let rest = unwrap(w, &argv[1..]);
                    if rest.is_empty() {
                        break; // the wrapper alone (`time`, `env`): a command of its own
                    }
                    if w == "env" && argv[1..].iter().any(|a| a.text.contains('=')) {
                        risky = true;
                    }
                    argv = rest;
                    continue;
                }
                w if SHELLS.contains(&w) => {
                    if let Some(script) = shell_string(&argv[1..]) {
                        if script.dynamic {
                            self.opaque("it runs a shell on text known only when it runs");
                        } else {
                            self.nested(&script.text);
                        }
                        return;
                    }
                    break;
                }
                "find" => {
                    self.find_exec(&argv[1..]);
                    break;
                }
                _ => break,
            }
        }
        let mut words: Vec<String> = argv.into_iter().map(|w| w.text).collect();
        if let Some(first) = words.first_mut() {
            *first = normalise(first).0;
        }
        self.out.commands.push(Simple { argv: words, risky });
    }

    /// The commands `find -exec`/`-execdir`/`-ok`/`-okdir` runs.
    fn find_exec(&mut self, args: &[Word]) {
        let mut i = 0;
        while i < args.len() {
            if ["-exec", "-execdir", "-ok", "-okdir"].contains(&args[i].text.as_str()) {
                let end = args[i + 1..]
                    .iter()
                    .position(|a| a.text == ";" || a.text == "+")
                    .map_or(args.len(), |p| i + 1 + p);
                let command: Vec<Word> = args[i + 1..end].to_vec();
                if !command.is_empty() {
                    self.argv(command, false);
                }
                i = end;
            }
            i += 1;
        }
    }
}

/// A command name's last part, and whether the name may be taken for it
/// (a bare name, or a path in the system's directories).
fn normalise(name: &str) -> (String, bool) {
    match name.rsplit_once('/') {
        None => (name.to_owned(), true),
        Some((dir, base)) => (
            base.to_owned(),
            SYSTEM_BINS.contains(&dir.trim_end_matches('/')),
        ),
    }
}

/// What a wrapper runs: its words after its own options (and, for `env`,
/// its assignments; for `timeout`, its duration; for `nice`, its
/// adjustment).
fn unwrap(wrapper: &str, args: &[Word]) -> Vec<Word> {
    let mut i = 0;
    // Options that take a value of their own.
    let valued: &[&str] = match wrapper {
        "nice" => &["-n", "--adjustment"],
        "timeout" => &["-s", "--signal", "-k", "--kill-after"],
        "xargs" => &[
            "-n",
            "-I",
            "-P",
            "-L",
            "-d",
            "-E",
            "-s",
            "-a",
            "--max-args",
            "--max-procs",
            "--delimiter",
        ],
        "env" => &["-u", "--unset", "-C", "--chdir", "-S", "--split-string"],
        "sudo" | "doas" => &["-u", "-g", "-C", "-D", "-h", "-p", "-r", "-t", "-U"],
        "ionice" => &["-c", "-n", "-p"],
        "watch" => &["-n", "--interval", "-d"],
        _ => &[],
    };
    while i < args.len() {
        let a = args[i].text.as_str();
        if a == "--" {
            i += 1;
            break;
        }
        let assignment = wrapper == "env" && a.contains('=') && !a.starts_with('-');
        if a.starts_with('-') && a.len() > 1 || assignment {
            i += if valued.contains(&a) { 2 } else { 1 };
            continue;
        }
        break;
    }
    if wrapper == "timeout" && i < args.len() {
        i += 1; // the duration
    }
    if wrapper == "taskset" && i < args.len() {
        i += 1; // the mask
    }
    args.get(i..).map(<[Word]>::to_vec).unwrap_or_default()
}

/// The string a shell runs with `-c`, if it is given one.
fn shell_string(args: &[Word]) -> Option<Word> {
    let at = args.iter().position(|a| {
        a.text.starts_with('-') && !a.text.starts_with("--") && a.text[1..].contains('c')
    })?;
    args.get(at + 1).cloned()
}

/// A word's value as the shell would see it, when it can be known
/// without running anything.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct Word {
    /// Its text: quotes and escapes removed; as written when dynamic.
    text: String,
    /// It holds an expansion (a variable, a substitution, arithmetic).
    dynamic: bool,
    /// The commands its substitutions run.
    substitutions: Vec<String>,
}

impl Word {
    fn parse(raw: &str) -> Word {
        let mut word = Word::default();
        match brush_parser::word::parse(raw, &ParserOptions::default()) {
            Ok(pieces) => word.pieces(&pieces),
            Err(_) => word.dynamic = true,
        }
        if word.dynamic {
            word.text = raw.to_owned();
        }
        word
    }

    fn pieces(&mut self, pieces: &[WordPieceWithSource]) {
        for piece in pieces {
            match &piece.piece {
                WordPiece::Text(t) | WordPiece::SingleQuotedText(t) => self.text.push_str(t),
                WordPiece::AnsiCQuotedText(t) => self.text.push_str(&ansi_c(t)),
                WordPiece::EscapeSequence(s) => self.text.push_str(s.trim_start_matches('\\')),
                WordPiece::DoubleQuotedSequence(inner)
                | WordPiece::GettextDoubleQuotedSequence(inner) => self.pieces(inner),
                WordPiece::TildePrefix(user) => {
                    self.text.push('~');
                    self.text.push_str(user);
                }
                WordPiece::CommandSubstitution(inner)
                | WordPiece::BackquotedCommandSubstitution(inner) => {
                    self.substitutions.push(inner.clone());
                    self.dynamic = true;
                }
                WordPiece::ParameterExpansion(_) | WordPiece::ArithmeticExpression(_) => {
                    self.dynamic = true
                }
            }
        }
    }
}

/// `$'…'` text with its escapes applied (the common ones; any other is
/// kept as written).
fn ansi_c(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('n') => out.push('\n'),
            Some('t') => out.push('\t'),
            Some('\\') => out.push('\\'),
            Some('\'') => out.push('\''),
            Some(other) => {
                out.push('\\');
                out.push(other);
            }
            None => out.push('\\'),
        }
    }
    out
}
