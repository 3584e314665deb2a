//! Permissions through the crate's API: rules (`shell(git status:*)`,
//! `edit(src/**)`, `web-fetch(domain:docs.rs)`, a bare program), modes,
//! and what "always" adds. Deny beats allow beats ask beats the mode.
#![allow(clippy::unwrap_used, missing_docs)]

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
    let err =
        Permissions::new(PermissionMode::Default, &["shell(git".into()], &[], &[]).unwrap_err();
    assert!(
        err.contains("shell(git") && err.contains("closing"),
        "{err}"
    );
    let err = Rule::parse("(x)").unwrap_err();
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
    assert_eq!(call.suggested_rule(), "shell(cargo test:*)");
    assert!(Rule::parse(&call.suggested_rule()).unwrap().matches(&call));
}
