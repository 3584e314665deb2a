//! Commands that run another command (`env rm …`, `sudo -u x rm …`,
//! `timeout 5 rm …`, `flock f -c 'rm …'`): where the command they run
//! starts among their words. Each wrapper's options are known exactly —
//! one hc does not know could take a value and hide the command behind
//! it, so it makes the call unjudgeable rather than guessed.

/// What a wrapper does with its words.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Unwrap {
    /// It runs the command whose words start at this index (at the end:
    /// no command, the wrapper alone). `risky` when it also changes what
    /// that command runs with (`env NAME=…`).
    At { index: usize, risky: bool },
    /// It runs the shell command string at this index.
    Script(usize),
    /// It cannot be judged before it runs: why.
    Opaque(String),
}

/// What follows a wrapper's options before its command.
#[derive(Clone, Copy)]
enum Then {
    Command,
    /// One word first: `timeout`'s duration, `taskset`'s mask, `flock`'s
    /// file, `chroot`'s root.
    OneWord,
}

struct Spec {
    name: &'static str,
    /// Options that take no value.
    flags: &'static [&'static str],
    /// Options that take the next word (or `=value`, or a short one's
    /// value attached).
    valued: &'static [&'static str],
    /// Options whose value is a shell command string.
    script: &'static [&'static str],
    /// Options after which what runs cannot be told (`sudo -s`: a shell).
    opaque: &'static [&'static str],
    then: Then,
    /// It runs a shell when it is given no command.
    shell_when_alone: bool,
}

const fn spec(
    name: &'static str,
    flags: &'static [&'static str],
    valued: &'static [&'static str],
) -> Spec {
    Spec {
        name,
        flags,
        valued,
        script: &[],
        opaque: &[],
        then: Then::Command,
        shell_when_alone: false,
    }
}

const SPECS: &[Spec] = &[
    spec("command", &["-p", "-v", "-V"], &[]),
    spec("builtin", &[], &[]),
    spec("exec", &["-c", "-l"], &["-a"]),
    spec("nohup", &[], &[]),
    spec(
        "time",
        &[
            "-p",
            "-v",
            "--verbose",
            "-q",
            "--quiet",
            "-a",
            "--append",
            "--portability",
        ],
        &["-f", "--format", "-o", "--output"],
    ),
    spec("nice", &[], &["-n", "--adjustment"]),
    Spec {
        opaque: &["-S", "--split-string"],
        ..spec(
            "env",
            &[
                "-i",
                "--ignore-environment",
                "-0",
                "--null",
                "-v",
                "--debug",
            ],
            &["-u", "--unset", "-C", "--chdir"],
        )
    },
    Spec {
        then: Then::OneWord,
        ..spec(
            "timeout",
            &["--preserve-status", "--foreground", "-v", "--verbose"],
            &["-s", "--signal", "-k", "--kill-after"],
        )
    },
    spec(
        "stdbuf",
        &[],
        &["-i", "--input", "-o", "--output", "-e", "--error"],
    ),
    spec(
        "xargs",
        // `-i`, `-l` and `-e` take a value only attached (`-i{}`).
        &[
            "-0",
            "--null",
            "-r",
            "--no-run-if-empty",
            "-t",
            "--verbose",
            "-p",
            "--interactive",
            "-x",
            "--exit",
            "-o",
            "--open-tty",
            "-i",
            "-l",
            "-e",
            "--replace",
            "--eof",
            "--max-lines",
        ],
        &[
            "-n",
            "--max-args",
            "-I",
            "-P",
            "--max-procs",
            "-L",
            "-d",
            "--delimiter",
            "-E",
            "-s",
            "--max-chars",
            "-a",
            "--arg-file",
            "--process-slot-var",
        ],
    ),
    Spec {
        opaque: &["-s", "--shell", "-i", "--login", "-e", "--edit"],
        shell_when_alone: true,
        ..spec(
            "sudo",
            &[
                "-E",
                "--preserve-env",
                "-H",
                "--set-home",
                "-n",
                "--non-interactive",
                "-S",
                "--stdin",
                "-b",
                "--background",
                "-k",
                "--reset-timestamp",
                "-A",
                "--askpass",
                "-P",
                "--preserve-groups",
                "-B",
                "--bell",
                "-N",
                "--no-update",
            ],
            &[
                "-u",
                "--user",
                "-g",
                "--group",
                "-C",
                "--close-from",
                "-D",
                "--chdir",
                "-h",
                "--host",
                "-p",
                "--prompt",
                "-r",
                "--role",
                "-t",
                "--type",
                "-U",
                "--other-user",
                "-T",
                "--command-timeout",
                "-R",
                "--chroot",
            ],
        )
    },
    Spec {
        opaque: &["-s"],
        shell_when_alone: true,
        ..spec("doas", &["-n"], &["-u", "-C"])
    },
    spec(
        "setsid",
        &["-c", "--ctty", "-f", "--fork", "-w", "--wait"],
        &[],
    ),
    spec("chronic", &["-e", "-v"], &[]),
    spec(
        "ionice",
        &["-t", "--ignore"],
        &[
            "-c",
            "--class",
            "-n",
            "--classdata",
            "-p",
            "--pid",
            "-P",
            "--pgid",
            "-u",
            "--uid",
        ],
    ),
    Spec {
        then: Then::OneWord,
        ..spec("taskset", &["-a", "--all-tasks", "-c", "--cpu-list"], &[])
    },
    spec("unbuffer", &["-p"], &[]),
    spec(
        "watch",
        &[
            "-b",
            "--beep",
            "-e",
            "--errexit",
            "-g",
            "--chgexit",
            "-t",
            "--no-title",
            "-x",
            "--exec",
            "-c",
            "--color",
            "-d",
            "--differences",
            "-p",
            "--precise",
            "-w",
            "--no-wrap",
        ],
        &["-n", "--interval", "-q", "--equexit"],
    ),
    spec(
        "fakeroot",
        &["-u", "--unknown-is-real", "-h", "--help", "-v", "--version"],
        &["-l", "--lib", "--faked", "-s", "-i", "-b"],
    ),
    spec("busybox", &[], &[]),
    // `coproc NAME { …; }` does not parse, and asks; `coproc cmd …` runs
    // `cmd`.
    spec("coproc", &[], &[]),
    Spec {
        script: &["-c", "--command"],
        then: Then::OneWord,
        ..spec(
            "flock",
            &[
                "-s",
                "--shared",
                "-x",
                "-e",
                "--exclusive",
                "-u",
                "--unlock",
                "-n",
                "--nb",
                "--nonblock",
                "-o",
                "--close",
                "-F",
                "--no-fork",
                "--verbose",
            ],
            &["-w", "--wait", "--timeout", "-E", "--conflict-exit-code"],
        )
    },
    Spec {
        then: Then::OneWord,
        shell_when_alone: true,
        ..spec("chroot", &["--skip-chdir"], &["--userspec", "--groups"])
    },
    Spec {
        shell_when_alone: true,
        ..spec(
            "unshare",
            &[
                "-m",
                "--mount",
                "-u",
                "--uts",
                "-i",
                "--ipc",
                "-n",
                "--net",
                "-p",
                "--pid",
                "-U",
                "--user",
                "-C",
                "--cgroup",
                "-T",
                "--time",
                "-f",
                "--fork",
                "-r",
                "--map-root-user",
                "-c",
                "--map-current-user",
                "--mount-proc",
                "--kill-child",
                "--keep-caps",
            ],
            &[
                "--propagation",
                "--setgroups",
                "-S",
                "--setuid",
                "-G",
                "--setgid",
                "-R",
                "--root",
                "-w",
                "--wd",
                "--map-user",
                "--map-group",
                "--map-users",
                "--map-groups",
            ],
        )
    },
    Spec {
        shell_when_alone: true,
        ..spec(
            "nsenter",
            &[
                "-a",
                "--all",
                "-m",
                "--mount",
                "-u",
                "--uts",
                "-i",
                "--ipc",
                "-n",
                "--net",
                "-p",
                "--pid",
                "-U",
                "--user",
                "-C",
                "--cgroup",
                "-T",
                "--time",
                "-F",
                "--no-fork",
                "--preserve-credentials",
                "-Z",
                "--follow-context",
            ],
            &[
                "-t", "--target", "-S", "--setuid", "-G", "--setgid", "-r", "--root", "-w", "--wd",
            ],
        )
    },
    spec(
        "strace",
        &[
            "-f", "-ff", "-c", "-C", "-q", "-qq", "-r", "-t", "-tt", "-ttt", "-T", "-v", "-x",
            "-xx", "-y", "-yy", "-k", "-w", "-z", "-Z", "-d", "-D", "-h", "-V",
        ],
        &[
            "-e", "-o", "-p", "-s", "-u", "-E", "-P", "-I", "-a", "-b", "-S", "-O", "-X",
        ],
    ),
    Spec {
        script: &["-c", "--command"],
        shell_when_alone: true,
        ..spec(
            "script",
            &[
                "-a", "--append", "-e", "--return", "-f", "--flush", "-q", "--quiet", "-t",
                "--timing",
            ],
            &[
                "-E",
                "--echo",
                "-I",
                "--log-in",
                "-O",
                "--log-out",
                "-B",
                "--log-io",
                "-T",
                "--log-timing",
                "-m",
                "--logging-format",
                "-o",
                "--output-limit",
            ],
        )
    },
    Spec {
        script: &["-c", "--command", "--session-command"],
        opaque: &["-s", "--shell"],
        shell_when_alone: true,
        ..spec(
            "su",
            SU_FLAGS,
            &[
                "-g",
                "--group",
                "-G",
                "--supp-group",
                "-w",
                "--whitelist-environment",
            ],
        )
    },
    Spec {
        script: &["-c", "--command", "--session-command"],
        opaque: &["-s", "--shell"],
        shell_when_alone: true,
        ..spec(
            "runuser",
            SU_FLAGS,
            &[
                "-u",
                "--user",
                "-g",
                "--group",
                "-G",
                "--supp-group",
                "-w",
                "--whitelist-environment",
            ],
        )
    },
];

/// The flags `su` and `runuser` share.
const SU_FLAGS: &[&str] = &[
    "-",
    "-l",
    "--login",
    "-m",
    "-p",
    "--preserve-environment",
    "-P",
    "--pty",
];

/// Commands that run commands in ways hc does not follow.
const OPAQUE: &[&str] = &[
    "systemd-run",
    "parallel",
    "sem",
    "at",
    "batch",
    "ssh",
    "tmux",
    "screen",
    "dtach",
    "nohup-tmux",
];

/// Whether `name` runs another command given among its words.
pub(super) fn is_wrapper(name: &str) -> bool {
    SPECS.iter().any(|s| s.name == name) || OPAQUE.contains(&name)
}

/// Where the command `wrapper` runs starts among `args` (its words after
/// its name).
pub(super) fn unwrap(wrapper: &str, args: &[&str]) -> Unwrap {
    let Some(spec) = SPECS.iter().find(|s| s.name == wrapper) else {
        return Unwrap::Opaque(format!(
            "it runs a command through `{wrapper}`, which hc does not follow"
        ));
    };
    if let Some(early) = user_switch(spec, args) {
        return early;
    }
    let mut i = 0;
    let mut risky = false;
    while i < args.len() {
        let a = args[i];
        if a == "--" {
            i += 1;
            break;
        }
        if wrapper == "env" && !a.starts_with('-') && a.contains('=') {
            risky = true;
            i += 1;
            continue;
        }
        if wrapper == "nice"
            && a.len() > 1
            && a[1..].chars().all(|c| c.is_ascii_digit())
            && a.starts_with('-')
        {
            i += 1; // `nice -10`
            continue;
        }
        if !a.starts_with('-') || a == "-" && !spec.flags.contains(&"-") {
            break;
        }
        match option(spec, a) {
            Opt::Flag => i += 1,
            Opt::Valued { attached } => i += if attached { 1 } else { 2 },
            Opt::Script { attached: true } => {
                return Unwrap::Opaque(format!(
                    "`{wrapper}` runs a command string given in one word with its option"
                ));
            }
            Opt::Script { attached: false } => return Unwrap::Script(i + 1),
            Opt::Opaque => {
                return Unwrap::Opaque(format!("`{wrapper} {a}` runs a command hc cannot follow"));
            }
            Opt::Unknown => {
                return Unwrap::Opaque(format!(
                    "`{wrapper}` is given an option hc does not know (`{a}`), which could hide the command it runs"
                ));
            }
        }
    }
    if let Then::OneWord = spec.then
        && i < args.len()
    {
        i += 1;
        // `flock FILE -c 'command'`.
        if args.get(i).is_some_and(|a| spec.script.contains(a)) {
            return Unwrap::Script(i + 1);
        }
    }
    if i >= args.len() && spec.shell_when_alone {
        return Unwrap::Opaque(format!("`{wrapper}` with no command runs a shell"));
    }
    Unwrap::At { index: i, risky }
}

/// `su` and `runuser` run a command only as a string (`-c`, anywhere
/// among their words: `su root -c '…'`), or — `runuser -u USER` — after
/// their options; else a shell.
fn user_switch(spec: &Spec, args: &[&str]) -> Option<Unwrap> {
    if !matches!(spec.name, "su" | "runuser") {
        return None;
    }
    for (i, a) in args.iter().enumerate() {
        if a.starts_with("--command=") || a.starts_with("--session-command=") {
            return Some(Unwrap::Opaque(format!(
                "`{}` runs a command string given in one word with its option",
                spec.name
            )));
        }
        if spec.script.contains(a) {
            return Some(Unwrap::Script(i + 1));
        }
    }
    let named = spec.name == "runuser"
        && args
            .iter()
            .any(|a| *a == "-u" || *a == "--user" || a.starts_with("--user="));
    (!named).then(|| {
        Unwrap::Opaque(format!(
            "`{}` with no command string runs a shell",
            spec.name
        ))
    })
}

enum Opt {
    Flag,
    Valued { attached: bool },
    Script { attached: bool },
    Opaque,
    Unknown,
}

/// What option `a` of `spec` is.
fn option(spec: &Spec, a: &str) -> Opt {
    let (name, value) = match a.split_once('=') {
        Some((name, value)) if a.starts_with("--") => (name, Some(value)),
        _ => (a, None),
    };
    if spec.opaque.contains(&name) {
        return Opt::Opaque;
    }
    if spec.script.contains(&name) {
        return Opt::Script {
            attached: value.is_some(),
        };
    }
    if spec.valued.contains(&name) {
        return Opt::Valued {
            attached: value.is_some(),
        };
    }
    if spec.flags.contains(&name) && value.is_none() {
        return Opt::Flag;
    }
    if a.starts_with("--") || a.len() < 3 {
        return Opt::Unknown;
    }
    // A short option with its value attached (`-n10`, `-uroot`), or
    // short flags together (`-fq`).
    let short = &a[..2];
    if spec.valued.contains(&short) {
        return Opt::Valued { attached: true };
    }
    if spec.script.contains(&short) {
        return Opt::Script { attached: true };
    }
    let mut cluster = a[1..].chars().peekable();
    while let Some(c) = cluster.next() {
        let one = format!("-{c}");
        if spec.opaque.contains(&one.as_str()) {
            return Opt::Opaque;
        }
        if spec.flags.contains(&one.as_str()) {
            continue;
        }
        let last = cluster.peek().is_none();
        if last && spec.valued.contains(&one.as_str()) {
            return Opt::Valued { attached: false };
        }
        if last && spec.script.contains(&one.as_str()) {
            return Opt::Script { attached: false };
        }
        return Opt::Unknown;
    }
    Opt::Flag
}
