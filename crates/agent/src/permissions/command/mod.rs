//! A shell command as permissions see it: parsed with a real shell grammar
//! (`brush-parser`), every simple command it would run — in lists,
//! pipelines, subshells, compound commands, functions, command and process
//! substitutions, `sh -c` strings, `find -exec`, behind wrappers such as
//! `env`, `nohup`, `time`, `xargs` — each with its words unquoted and its
//! name normalised; the files its output redirections write; and why it
//! cannot be judged statically when it cannot (`eval`, a command name that
//! is a variable or a substitution, a syntax it cannot parse).

mod names;
pub mod paths;
mod word;
mod wrappers;

use brush_parser::ast::{
    self, Command, CommandPrefixOrSuffixItem, CompoundCommand, CompoundList, IoFileRedirectKind,
    IoFileRedirectTarget, IoRedirect, SimpleCommand,
};
use brush_parser::{ParserOptions, SourceInfo};
use names::{git_subcommand, rebinds};
use word::Word;
use wrappers::Unwrap;

/// How deep `sh -c` strings and substitutions are followed.
const MAX_DEPTH: usize = 8;

/// Shells whose `-c` string is a command of its own.
const SHELLS: &[&str] = &["sh", "bash", "dash", "zsh", "ksh", "ash", "mksh", "fish"];

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

/// What in an expanding here-document runs a command or an expansion.
const EXPANDING: &[&str] = &["$(", "`", "${", "$(("];

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
    /// What it runs when that is not its words as written, for deny and
    /// ask rules: git's subcommand with the global options before it
    /// taken off (`git -C x push` runs `git push`).
    pub runs: Option<Vec<String>>,
    /// Where its words stop being known before it runs: the first one
    /// that is filled in then (a variable, a substitution, `find -exec`'s
    /// `{}`, xargs's replace string), or its end when xargs adds more
    /// from its input. A deny rule whose words go on past there may cover
    /// what runs.
    pub known: Option<usize>,
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
            CompoundCommand::ArithmeticForClause(clause) => {
                for expr in [&clause.initializer, &clause.condition, &clause.updater]
                    .into_iter()
                    .flatten()
                {
                    self.arithmetic(&expr.value);
                }
                self.list(&clause.body.0);
            }
            CompoundCommand::CaseClause(clause) => {
                self.value(&clause.value.value);
                for case in &clause.cases {
                    for pattern in &case.patterns {
                        self.value(&pattern.value);
                    }
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
            CompoundCommand::Arithmetic(command) => self.arithmetic(&command.expr.value),
        }
    }

    /// Arithmetic is judged only when it is numbers alone: a variable in
    /// it is evaluated as arithmetic in turn, and an array subscript there
    /// can run a command (`x='a[$(…)]'; ((x))`).
    fn arithmetic(&mut self, expr: &str) {
        if !pure_arithmetic(expr) {
            self.opaque("it evaluates arithmetic on variables, which can run commands hidden in their values");
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
            T::UnaryTest(op, word) => {
                let word = self.value(&word.value);
                let variable = matches!(
                    op,
                    ast::UnaryPredicate::ShellVariableIsSetAndAssigned
                        | ast::UnaryPredicate::ShellVariableIsSetAndNameRef
                );
                // `-v 'a[$(…)]'` evaluates the subscript.
                if variable
                    && (word.dynamic
                        || !word
                            .text
                            .chars()
                            .all(|c| c.is_ascii_alphanumeric() || c == '_'))
                {
                    self.opaque("it tests a variable whose subscript is evaluated as arithmetic");
                }
            }
            T::BinaryTest(op, a, b) => {
                let (a, b) = (self.value(&a.value), self.value(&b.value));
                use ast::BinaryPredicate as P;
                let arithmetic = matches!(
                    op,
                    P::ArithmeticEqualTo
                        | P::ArithmeticNotEqualTo
                        | P::ArithmeticLessThan
                        | P::ArithmeticLessThanOrEqualTo
                        | P::ArithmeticGreaterThan
                        | P::ArithmeticGreaterThanOrEqualTo
                );
                if arithmetic && !(pure_arithmetic(&a.text) && pure_arithmetic(&b.text)) {
                    self.opaque(
                        "it compares values as arithmetic, which can run commands hidden in them",
                    );
                }
            }
        }
    }

    /// A word's value: its substitutions are commands of their own.
    fn value(&mut self, word: &str) -> Word {
        let word = Word::parse(word);
        for inner in &word.substitutions {
            self.nested(inner);
        }
        if let Some(why) = &word.unjudged {
            self.opaque(why.clone());
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
            IoRedirect::HereDocument(_, doc) => {
                // Its text is expanded unless its delimiter is quoted.
                let text = &doc.doc.value;
                if doc.requires_expansion && EXPANDING.iter().any(|s| text.contains(s)) {
                    self.opaque("its here-document runs commands or expansions when it runs");
                }
            }
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
        let prefix = simple.prefix.iter().flat_map(|p| &p.0).map(|i| (i, false));
        let suffix = simple.suffix.iter().flat_map(|s| &s.0).map(|i| (i, true));
        let mut words: Vec<Word> = Vec::new();
        let name = simple.word_or_name.as_ref().map(|w| self.value(&w.value));
        for (item, after_name) in prefix.chain(suffix) {
            match item {
                CommandPrefixOrSuffixItem::IoRedirect(redirect) => self.redirect(redirect),
                CommandPrefixOrSuffixItem::Word(word) => words.push(self.value(&word.value)),
                // after the command's name, `NAME=value` is one of its words
                // (`exec -a x=y rm x`, `env -C a=b rm x`)
                CommandPrefixOrSuffixItem::AssignmentWord(_, word) if after_name => {
                    words.push(self.value(&word.value));
                }
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
        // the command's words come partly from input at run time (after
        // `xargs`, and `{}` in `find -exec`)
        let mut fed = false;
        // xargs's replace string (`-I STR`, `-i`, `--replace`), when given
        let mut replaced: Option<String> = None;
        loop {
            let Some(name) = argv.first() else { return };
            if replaced
                .as_ref()
                .is_some_and(|r| name.text.contains(r.as_str()))
            {
                self.opaque(format!(
                    "its command name `{}` is filled in when it runs",
                    name.text
                ));
                return;
            }
            // (a name that is an option: `time -f x rm …` runs GNU time)
            if name.dynamic || name.braces || name.glob || name.text.starts_with('-') {
                let shown = name.text.clone();
                self.opaque(format!(
                    "its command name `{shown}` is known only when it runs"
                ));
                return;
            }
            let (base, is_system) = normalise(&name.text);
            risky |= !is_system;
            // A wrapper's or a shell's words decide what it runs: one that
            // brace-expands into several (`sh {-c,'rm x'}`) hides that.
            let runs_words = wrappers::is_wrapper(&base) || SHELLS.contains(&base.as_str());
            if runs_words && argv[1..].iter().any(|w| w.braces) {
                self.opaque(format!(
                    "`{base}`'s words expand to more words, known only when it runs"
                ));
                return;
            }
            match base.as_str() {
                "eval" | "let" => {
                    self.opaque(format!(
                        "it uses `{base}`, which runs text known only when it runs"
                    ));
                    return;
                }
                // a name bound at run time to another program or other words
                "hash" | "alias" | "enable" if rebinds(&base, &argv[1..]) => {
                    self.opaque(format!(
                        "`{base}` binds a command name to another program or other words, \
                         which later commands run"
                    ));
                    return;
                }
                "trap" => {
                    self.trap(&argv[1..]);
                    break;
                }
                w if wrappers::is_wrapper(w) => {
                    let texts: Vec<&str> = argv[1..].iter().map(|a| a.text.as_str()).collect();
                    match wrappers::unwrap(w, &texts) {
                        // (`echo rm x | xargs env`: env's command comes
                        // from the input)
                        Unwrap::At { index, .. } if index >= texts.len() && fed => {
                            self.opaque(format!(
                                "`{w}` gets its command from the input at run time, through xargs"
                            ));
                            return;
                        }
                        Unwrap::At { index, .. } if index >= texts.len() => break,
                        Unwrap::At {
                            index,
                            risky: changes,
                        } => {
                            risky |= changes;
                            if w == "xargs" {
                                fed = true;
                                replaced = xargs_replace(&texts[..index]).or(replaced);
                            }
                            argv = argv[1 + index..].to_vec();
                        }
                        Unwrap::Script(at) => {
                            self.script(argv.get(1 + at));
                            return;
                        }
                        Unwrap::Opaque(why) => {
                            self.opaque(why);
                            return;
                        }
                    }
                }
                w if SHELLS.contains(&w) => match shell_script(&argv[1..]) {
                    ShellRuns::Script(Some(script))
                        if replaced
                            .as_ref()
                            .is_some_and(|r| script.text.contains(r.as_str())) =>
                    {
                        self.opaque(format!(
                            "`{w} -c {}` is filled in when it runs, through xargs",
                            script.text
                        ));
                        return;
                    }
                    ShellRuns::Script(script) => {
                        self.script(script);
                        return;
                    }
                    ShellRuns::Input => {
                        self.opaque(format!(
                            "`{w}` runs commands from its input, known only when it runs"
                        ));
                        return;
                    }
                    ShellRuns::File => break,
                },
                "find" => {
                    self.find_exec(&argv[1..]);
                    break;
                }
                _ => break,
            }
        }
        let runs = match argv.first().is_some_and(|w| normalise(&w.text).0 == "git") {
            true => match git_subcommand(&argv) {
                Ok(runs) => runs,
                Err(word) => {
                    self.opaque(format!(
                        "git's subcommand is known only when it runs (`{word}`)"
                    ));
                    return;
                }
            },
            false => None,
        };
        let filled = |w: &Word| {
            w.dynamic || (replaced.as_ref()).is_some_and(|r| w.text.contains(r.as_str()))
        };
        let known = (argv.iter().position(filled)).or(fed.then_some(argv.len()));
        let mut words: Vec<String> = argv.into_iter().map(|w| w.text).collect();
        if let Some(first) = words.first_mut() {
            *first = normalise(first).0;
        }
        self.out.commands.push(Simple {
            argv: words,
            risky,
            runs,
            known,
        });
    }

    /// A command string a shell (or a wrapper) runs.
    fn script(&mut self, script: Option<&Word>) {
        match script {
            Some(script) if !script.dynamic && !script.braces => self.nested(&script.text),
            Some(_) => self.opaque("it runs a shell on text known only when it runs"),
            None => self.opaque("it runs a shell with no command string: its input"),
        }
    }

    /// `trap 'command' SIGNAL…`: the command runs later, as any other.
    fn trap(&mut self, args: &[Word]) {
        let Some(first) = args.iter().find(|a| a.text != "--") else {
            return;
        };
        if first.text.starts_with('-') && first.text != "-" {
            return; // `trap -l`, `trap -p`
        }
        if args.len() > 1 && first.text != "-" {
            self.script(Some(first));
        }
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
                let mut command: Vec<Word> = args[i + 1..end].to_vec();
                // (`{}` is the file found: known only when it runs)
                for word in command.iter_mut().skip(1) {
                    word.dynamic |= word.text.contains("{}");
                }
                match command.first() {
                    // the file found, run as the command
                    Some(name) if name.text.contains("{}") => self
                        .opaque("`find -exec {}` runs the files it finds, known only when it runs"),
                    Some(_) => self.argv(command, false),
                    None => {}
                }
                i = end;
            }
            i += 1;
        }
    }
}

/// The string xargs replaces in its command (`-I STR`, `-ISTR`, `-i`,
/// `-iSTR`, `--replace[=STR]`), when its options `args` give one.
fn xargs_replace(args: &[&str]) -> Option<String> {
    let mut found = None;
    let mut i = 0;
    while i < args.len() {
        let a = args[i];
        if a == "-I" {
            found = args.get(i + 1).map(|s| (*s).to_owned());
            i += 1;
        } else if let Some(rest) = a.strip_prefix("-I") {
            found = Some(rest.to_owned());
        } else if let Some(rest) = a.strip_prefix("-i").or(a.strip_prefix("--replace")) {
            let rest = rest.strip_prefix('=').unwrap_or(rest);
            found = Some(if rest.is_empty() { "{}" } else { rest }.to_owned());
        }
        i += 1;
    }
    found
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

/// The command between backticks as bash runs it: `\\`, `\$` and
/// `` \` `` taken to the character they escape, every other backslash
/// kept.
fn unescape_backquoted(inner: &str) -> String {
    let mut out = String::with_capacity(inner.len());
    let mut chars = inner.chars().peekable();
    while let Some(c) = chars.next() {
        match (c, chars.peek()) {
            ('\\', Some(&next)) if matches!(next, '\\' | '$' | '`') => {
                out.push(next);
                chars.next();
            }
            _ => out.push(c),
        }
    }
    out
}

/// What a shell given these words runs.
enum ShellRuns<'w> {
    /// The command string of `-c` (none when missing).
    Script(Option<&'w Word>),
    /// Its input (no script file, or `-s`).
    Input,
    /// A script file: a program like any other.
    File,
}

/// What a shell (`sh`, `bash`, …) given `args` runs.
fn shell_script(args: &[Word]) -> ShellRuns<'_> {
    let mut i = 0;
    let mut command = false;
    while i < args.len() {
        let a = args[i].text.as_str();
        if a == "--" {
            i += 1;
            break;
        }
        let option = (a.starts_with('-') || a.starts_with('+')) && a.len() > 1;
        if !option {
            break;
        }
        if a.starts_with("--") {
            // bash's two long options that take a value of their own
            i += if matches!(a, "--rcfile" | "--init-file") {
                2
            } else {
                1
            };
            continue;
        }
        if a[1..].contains('s') {
            return ShellRuns::Input;
        }
        command |= a.starts_with('-') && a[1..].contains('c');
        // `-o NAME` / `+o NAME` (and `-O`): a value of their own.
        i += if a.ends_with('o') || a.ends_with('O') {
            2
        } else {
            1
        };
    }
    if command {
        return ShellRuns::Script(args.get(i));
    }
    if i >= args.len() {
        ShellRuns::Input
    } else {
        ShellRuns::File
    }
}

/// `word` as a shell reads it back as one word: as it is when nothing in
/// it is special, else in single quotes.
pub fn quote(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=:@%+,".contains(c));
    if plain {
        word.to_owned()
    } else {
        format!("'{}'", word.replace('\'', "'\\''"))
    }
}

/// Whether arithmetic is numbers and operators alone (no variable, whose
/// value would be evaluated in turn).
fn pure_arithmetic(expr: &str) -> bool {
    expr.chars()
        .all(|c| c.is_ascii_digit() || c.is_ascii_whitespace() || "+-*/%()<>=!&|^~?:,".contains(c))
}
