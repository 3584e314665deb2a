//! The file tools' own logic, through `programs::call`: what each answers
//! (text and data), what it refuses and that a refusal changes nothing.

use programs::call::{Access, call};
use protocol::program::Output;
use serde_json::{Value, json};
use std::path::Path;

fn run(root: &Path, tool: &str, input: Value) -> Output {
    call(tool, root, &Access::writing(&[root]), input).unwrap()
}

fn sha256(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    ring::digest::digest(&ring::digest::SHA256, bytes)
        .as_ref()
        .iter()
        .fold(String::new(), |mut s, b| {
            let _ = write!(s, "{b:02x}");
            s
        })
}

#[test]
fn read_numbers_a_page_of_lines_and_hashes_the_whole_file() {
    let dir = tempfile::tempdir().unwrap();
    let text: String = (1..=10).map(|n| format!("line {n}\n")).collect();
    std::fs::write(dir.path().join("f.txt"), &text).unwrap();
    let out = run(
        dir.path(),
        "read",
        json!({"file_path": "f.txt", "offset": 3, "limit": 2}),
    );
    assert!(!out.is_error, "{}", out.text);
    assert_eq!(
        out.text,
        "     3\tline 3\n     4\tline 4\n\n(lines 3–4 of 10; read on with offset 5)\n"
    );
    assert_eq!(out.data["total_lines"], 10);
    assert_eq!(
        (out.data["start"].clone(), out.data["end"].clone()),
        (json!(3), json!(4))
    );
    assert_eq!(out.data["sha256"], sha256(text.as_bytes()));
    assert_eq!(out.data["path"], "f.txt");
}

#[test]
fn read_refuses_line_zero_a_directory_and_a_missing_file() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("f.txt"), "a\n").unwrap();
    let zero = run(
        dir.path(),
        "read",
        json!({"file_path": "f.txt", "offset": 0}),
    );
    assert!(
        zero.is_error && zero.text.contains("from 1"),
        "{}",
        zero.text
    );
    let folder = run(dir.path(), "read", json!({"file_path": "."}));
    assert!(
        folder.is_error && folder.text.contains("directory"),
        "{}",
        folder.text
    );
    let missing = run(dir.path(), "read", json!({"file_path": "nope.txt"}));
    assert!(
        missing.is_error && missing.text.contains("does not exist"),
        "{}",
        missing.text
    );
}

#[test]
fn read_is_refused_outside_what_may_be_read() {
    let dir = tempfile::tempdir().unwrap();
    let inside = dir.path().join("in");
    std::fs::create_dir(&inside).unwrap();
    std::fs::write(dir.path().join("secret.txt"), "s\n").unwrap();
    let access = Access {
        read: Some(vec![inside]),
        write: None,
    };
    let out = call(
        "read",
        dir.path(),
        &access,
        json!({"file_path": "secret.txt"}),
    )
    .unwrap();
    assert!(out.is_error && out.text.contains("outside what this program may read"));
}

#[test]
fn write_creates_then_replaces_only_a_file_as_it_was_read() {
    let dir = tempfile::tempdir().unwrap();
    let made = run(
        dir.path(),
        "write",
        json!({"file_path": "sub/new.txt", "content": "one\n"}),
    );
    assert!(!made.is_error, "{}", made.text);
    assert_eq!(made.data["created"], true);
    assert_eq!(made.data["sha256"], sha256(b"one\n"));
    let path = dir.path().join("sub/new.txt");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "one\n");
    // Unread: refused, and the file is as it was.
    let blind = run(
        dir.path(),
        "write",
        json!({"file_path": "sub/new.txt", "content": "two\n"}),
    );
    assert!(
        blind.is_error && blind.text.contains("has not been read"),
        "{}",
        blind.text
    );
    // Read at another state: refused too.
    let stale = run(
        dir.path(),
        "write",
        json!({"file_path": "sub/new.txt", "content": "two\n", "expect_sha256": sha256(b"zero\n")}),
    );
    assert!(
        stale.is_error && stale.text.contains("has changed"),
        "{}",
        stale.text
    );
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "one\n");
    let replaced = run(
        dir.path(),
        "write",
        json!({"file_path": "sub/new.txt", "content": "two\n", "expect_sha256": sha256(b"one\n")}),
    );
    assert!(!replaced.is_error, "{}", replaced.text);
    assert_eq!(replaced.data["created"], false);
    assert!(replaced.data["diff"].as_str().unwrap().contains("+two"));
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "two\n");
}

#[test]
fn write_never_touches_git_or_hermitcrab_nor_outside_its_roots() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join(".git")).unwrap();
    for file in [".git/config", ".hermitcrab/config.toml"] {
        let out = run(
            dir.path(),
            "write",
            json!({"file_path": file, "content": "x"}),
        );
        assert!(
            out.is_error && out.text.contains("read-only for every tool"),
            "{}",
            out.text
        );
        assert!(!dir.path().join(file).exists());
    }
    let elsewhere = tempfile::tempdir().unwrap();
    let target = elsewhere.path().join("x.txt");
    let out = run(
        dir.path(),
        "write",
        json!({"file_path": target.to_string_lossy(), "content": "x"}),
    );
    assert!(out.is_error && out.text.contains("outside what this program may change"));
    assert!(!target.exists());
}

#[test]
fn edit_replaces_one_match_and_shows_the_region() {
    let dir = tempfile::tempdir().unwrap();
    let text = "fn a() {}\nfn b() {}\n";
    std::fs::write(dir.path().join("m.rs"), text).unwrap();
    let out = run(
        dir.path(),
        "edit",
        json!({"file_path": "m.rs", "old_string": "fn b() {}", "new_string": "fn b() { 1 }",
               "expect_sha256": sha256(text.as_bytes())}),
    );
    assert!(!out.is_error, "{}", out.text);
    assert!(out.text.contains("1 replacement"), "{}", out.text);
    assert!(out.text.contains("     2\tfn b() { 1 }"), "{}", out.text);
    assert_eq!(out.data["replacements"], 1);
    let now = std::fs::read_to_string(dir.path().join("m.rs")).unwrap();
    assert_eq!(now, "fn a() {}\nfn b() { 1 }\n");
    assert_eq!(out.data["sha256"], sha256(now.as_bytes()));
}

#[test]
fn edit_refuses_an_ambiguous_or_missing_match_and_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let text = "x = 1\ny = 2\nx = 1\n";
    let path = dir.path().join("v.txt");
    std::fs::write(&path, text).unwrap();
    let hash = sha256(text.as_bytes());
    let twice = run(
        dir.path(),
        "edit",
        json!({"file_path": "v.txt", "old_string": "x = 1", "new_string": "x = 3", "expect_sha256": hash}),
    );
    assert!(
        twice.is_error && twice.text.contains("matches 2 times"),
        "{}",
        twice.text
    );
    assert!(twice.text.contains("lines 1, 3"), "{}", twice.text);
    let none = run(
        dir.path(),
        "edit",
        json!({"file_path": "v.txt", "old_string": "y = 9", "new_string": "y = 3", "expect_sha256": hash}),
    );
    assert!(none.is_error, "{}", none.text);
    assert_eq!(std::fs::read_to_string(&path).unwrap(), text);
    let all = run(
        dir.path(),
        "edit",
        json!({"file_path": "v.txt", "old_string": "x = 1", "new_string": "x = 3",
               "replace_all": true, "expect_sha256": hash}),
    );
    assert!(!all.is_error, "{}", all.text);
    assert_eq!(all.data["replacements"], 2);
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        "x = 3\ny = 2\nx = 3\n"
    );
}

#[test]
fn glob_finds_matching_files_newest_first_and_honours_gitignore() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("src/deep")).unwrap();
    std::fs::create_dir_all(dir.path().join("target")).unwrap();
    std::fs::write(dir.path().join(".gitignore"), "target/\n").unwrap();
    std::fs::write(dir.path().join("src/old.rs"), "").unwrap();
    std::fs::write(dir.path().join("target/built.rs"), "").unwrap();
    let old = std::time::SystemTime::now() - std::time::Duration::from_secs(60);
    std::fs::File::options()
        .write(true)
        .open(dir.path().join("src/old.rs"))
        .unwrap()
        .set_modified(old)
        .unwrap();
    std::fs::write(dir.path().join("src/deep/new.rs"), "").unwrap();
    let out = run(dir.path(), "glob", json!({"pattern": "**/*.rs"}));
    assert!(!out.is_error, "{}", out.text);
    assert_eq!(out.text, "src/deep/new.rs\nsrc/old.rs");
    let none = run(dir.path(), "glob", json!({"pattern": "*.py"}));
    assert!(
        !none.is_error && none.text.starts_with("No files match"),
        "{}",
        none.text
    );
}

#[test]
fn grep_lists_files_or_lines_and_refuses_a_zero_limit() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.rs"), "fn needle() {}\nfn other() {}\n").unwrap();
    std::fs::write(dir.path().join("b.rs"), "fn other() {}\n").unwrap();
    let files = run(dir.path(), "grep", json!({"pattern": "needle"}));
    assert!(!files.is_error, "{}", files.text);
    assert_eq!(files.text.trim(), "a.rs");
    let lines = run(
        dir.path(),
        "grep",
        json!({"pattern": "fn \\w+", "output_mode": "content", "-n": true, "path": "a.rs"}),
    );
    assert!(lines.text.contains("1:fn needle() {}"), "{}", lines.text);
    assert!(lines.text.contains("2:fn other() {}"), "{}", lines.text);
    let zero = run(dir.path(), "grep", json!({"pattern": "x", "head_limit": 0}));
    assert!(
        zero.is_error && zero.text.contains("at least 1"),
        "{}",
        zero.text
    );
}

#[test]
fn a_tool_that_is_not_a_file_tool_or_an_input_that_does_not_read_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let shell = call(
        "shell",
        dir.path(),
        &Access::everything(),
        json!({"command": "true"}),
    );
    assert!(shell.unwrap_err().contains("through the engine"));
    let bad = call(
        "read",
        dir.path(),
        &Access::everything(),
        json!({"path": "x"}),
    );
    assert!(bad.unwrap_err().contains("invalid input for `read`"));
}

/// This process's umask, as the kernel reports it.
fn umask() -> u32 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("Umask:")).unwrap();
    u32::from_str_radix(line["Umask:".len()..].trim(), 8).unwrap()
}

#[test]
fn a_new_file_gets_what_the_umask_leaves_and_a_replaced_one_keeps_its_mode() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let mode = |name: &str| {
        std::fs::metadata(dir.path().join(name))
            .unwrap()
            .permissions()
            .mode()
            & 0o777
    };
    let out = run(
        dir.path(),
        "write",
        json!({"file_path": "new.txt", "content": "new\n"}),
    );
    assert!(!out.is_error, "{}", out.text);
    assert_eq!(mode("new.txt"), 0o666 & !umask());

    std::fs::write(dir.path().join("tool.sh"), "old\n").unwrap();
    std::fs::set_permissions(
        dir.path().join("tool.sh"),
        std::fs::Permissions::from_mode(0o750),
    )
    .unwrap();
    let out = run(
        dir.path(),
        "write",
        json!({"file_path": "tool.sh", "content": "new\n", "expect_sha256": sha256(b"old\n")}),
    );
    assert!(!out.is_error, "{}", out.text);
    assert_eq!(mode("tool.sh"), 0o750);
}
