#![allow(clippy::unwrap_used)]
//! The ratchet tested on itself: a crate that holds the baseline passes;
//! a new import circle, a new `Result<_, String>`, a new 61-line function
//! each make it fail, naming the file; a count that fell asks for the
//! baseline to be lowered, and `--update` lowers it.

use std::path::Path;
use std::process::Command;

/// A workspace with one crate, `demo`, of `files` (path under `src/`, text).
fn tree(files: &[(&str, String)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (path, text) in files {
        let at = dir.path().join("crates/demo/src").join(path);
        std::fs::create_dir_all(at.parent().unwrap()).unwrap();
        std::fs::write(at, text).unwrap();
    }
    std::fs::create_dir_all(dir.path().join(".ci")).unwrap();
    dir
}

/// `hc-quality` in `root`: its exit code and what it said.
fn ratchet(root: &Path, args: &[&str]) -> (i32, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_hc-quality"))
        .arg("--root")
        .arg(root)
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code().unwrap(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn clean() -> Vec<(&'static str, String)> {
    vec![
        (
            "lib.rs",
            "mod a;\nmod b;\npub fn f() -> Result<(), std::io::Error> { Ok(()) }\n".into(),
        ),
        ("a.rs", "pub struct A;\n".into()),
        ("b.rs", "use crate::a::A;\npub fn g(_: A) {}\n".into()),
    ]
}

#[test]
fn the_baseline_holds_and_each_new_count_fails_naming_its_file() {
    let dir = tree(&clean());
    assert_eq!(ratchet(dir.path(), &["--init"]).0, 0);
    let (code, said) = ratchet(dir.path(), &[]);
    assert_eq!(code, 0, "{said}");

    // a circle: a reaches b, b reaches a
    std::fs::write(
        dir.path().join("crates/demo/src/a.rs"),
        "pub struct A;\npub use crate::b::g;\n",
    )
    .unwrap();
    let (code, said) = ratchet(dir.path(), &[]);
    assert_eq!(code, 1, "{said}");
    assert!(
        said.contains("demo: circles is 1") && said.contains("crates/demo/src/a.rs"),
        "{said}"
    );
    std::fs::write(dir.path().join("crates/demo/src/a.rs"), "pub struct A;\n").unwrap();

    // a Result<_, String>
    let lib = "mod a;\nmod b;\npub fn f() -> Result<(), String> { Ok(()) }\n";
    std::fs::write(dir.path().join("crates/demo/src/lib.rs"), lib).unwrap();
    let (code, said) = ratchet(dir.path(), &[]);
    assert_eq!(code, 1, "{said}");
    assert!(
        said.contains("result_string is 1") && said.contains("lib.rs: 1 (f)"),
        "{said}"
    );

    // a function of 61 lines (in test code, none counts)
    let body = "    let _x = 1;\n".repeat(59);
    let long = format!(
        "pub fn h() {{\n{body}}}\n#[cfg(test)]\nmod tests {{\n    fn t() -> Result<(), String> {{ let _ = Some(1).unwrap(); Ok(()) }}\n}}\n"
    );
    std::fs::write(
        dir.path().join("crates/demo/src/lib.rs"),
        format!("mod a;\nmod b;\n{long}"),
    )
    .unwrap();
    let (code, said) = ratchet(dir.path(), &[]);
    assert_eq!(code, 1, "{said}");
    assert!(
        said.contains("long_functions is 1") && said.contains("h: 61 lines"),
        "{said}"
    );
    assert!(
        !said.contains("result_string") && !said.contains("unwrap"),
        "{said}"
    );
}

#[test]
fn a_count_that_fell_asks_for_the_baseline_to_be_lowered_and_update_lowers_it() {
    let mut files = clean();
    files.push((
        "c.rs",
        "pub fn k(v: serde_json::Value) -> bool { v[\"ok\"] == true }\n".into(),
    ));
    let dir = tree(&files);
    assert_eq!(ratchet(dir.path(), &["--init"]).0, 0);
    std::fs::remove_file(dir.path().join("crates/demo/src/c.rs")).unwrap();
    let (code, said) = ratchet(dir.path(), &[]);
    assert_eq!(code, 1, "{said}");
    assert!(
        said.contains("string_keys fell to 0") && said.contains("--update"),
        "{said}"
    );
    assert_eq!(ratchet(dir.path(), &["--update"]).0, 0);
    let (code, said) = ratchet(dir.path(), &[]);
    assert_eq!(code, 0, "{said}");
    // and it never goes up again by itself
    std::fs::write(dir.path().join("crates/demo/src/c.rs"), &files[3].1).unwrap();
    let (code, said) = ratchet(dir.path(), &["--update"]);
    assert_eq!(code, 1, "a rise is never written into the baseline: {said}");
}
