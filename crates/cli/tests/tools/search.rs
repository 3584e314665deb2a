//! `glob` and `grep`, and read-only tools running side by side.

use crate::common::*;
use serde_json::json;
use std::time::{Duration, SystemTime};

/// A small tree: sources, an ignored build dir, a hidden file, `.git`.
fn tree(p: &Project) {
    p.file("a.rs", "fn a() {}\n");
    p.file("src/b.rs", "fn b() { todo!() }\n// TODO: more\n");
    p.file("src/deep/c.rs", "fn c() {}\nconst TODO: u8 = 1;\n");
    p.file("src/d.py", "def d():\n    pass  # TODO\n");
    p.file("target/out.rs", "fn generated() { TODO }\n");
    p.file(".gitignore", "target/\n");
    p.file(".hidden.rs", "// TODO hidden\n");
    p.file(".git/config", "[core] TODO\n");
    p.file("img.bin", b"TODO\x00\x01binary");
}

fn set_mtime(path: &std::path::Path, secs_ago: u64) {
    let t = SystemTime::now() - Duration::from_secs(secs_ago);
    std::fs::File::options()
        .write(true)
        .open(path)
        .unwrap()
        .set_modified(t)
        .unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn glob_matches_like_a_glob_newest_first_and_respects_gitignore() {
    let p = Project::new();
    tree(&p);
    set_mtime(&p.root.join("a.rs"), 300);
    set_mtime(&p.root.join("src/b.rs"), 200);
    set_mtime(&p.root.join("src/deep/c.rs"), 100);
    let top = p.tool("glob", json!({"pattern": "*.rs"})).await.ok();
    assert_eq!(
        top.data["paths"],
        json!([".hidden.rs", "a.rs"]),
        "* does not cross /; hidden files count"
    );
    let all = p.tool("glob", json!({"pattern": "**/*.rs"})).await.ok();
    let paths: Vec<&str> = all.data["paths"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert!(!paths.iter().any(|p| p.starts_with("target/")), "{paths:?}");
    let pos = |x: &str| paths.iter().position(|p| *p == x).unwrap();
    assert!(
        pos("src/deep/c.rs") < pos("src/b.rs") && pos("src/b.rs") < pos("a.rs"),
        "newest first: {paths:?}"
    );
    assert_eq!(all.text.lines().count(), paths.len());
    let under = p
        .tool("glob", json!({"pattern": "*.rs", "path": "src"}))
        .await
        .ok();
    assert_eq!(under.data["paths"], json!(["src/b.rs"]));
    let git = p.tool("glob", json!({"pattern": "**/config"})).await.ok();
    assert_eq!(git.data["count"], 0, ".git is never listed");
    let none = p.tool("glob", json!({"pattern": "**/*.zig"})).await.ok();
    assert!(none.text.contains("No files match"));
    p.tool("glob", json!({"pattern": "a["}))
        .await
        .refused("invalid glob");
    p.tool("glob", json!({"pattern": "*", "path": "nowhere"}))
        .await
        .refused("does not exist");
    p.refused_run("glob", json!({}), "pattern");
    p.tool("glob", json!({"pattern": ["*"]}))
        .await
        .refused("pattern");
}

#[tokio::test(flavor = "multi_thread")]
async fn grep_has_the_three_modes_and_rg_shaped_output() {
    let p = Project::new();
    tree(&p);
    let files = p.tool("grep", json!({"pattern": "TODO"})).await.ok();
    assert_eq!(
        files.text, ".hidden.rs\nsrc/b.rs\nsrc/d.py\nsrc/deep/c.rs",
        "gitignored, .git and binary files left out"
    );
    let content = p
        .tool(
            "grep",
            json!({"pattern": "TODO", "output_mode": "content", "path": "src"}),
        )
        .await
        .ok();
    assert_eq!(
        content.text,
        "src/b.rs:2:// TODO: more\nsrc/d.py:2:    pass  # TODO\nsrc/deep/c.rs:2:const TODO: u8 = 1;"
    );
    let bare = p
        .tool(
            "grep",
            json!({"pattern": "TODO", "output_mode": "content", "path": "src/b.rs", "-n": false}),
        )
        .await
        .ok();
    assert_eq!(bare.text, "src/b.rs:// TODO: more");
    let count = p
        .tool(
            "grep",
            json!({"pattern": "todo", "-i": true, "output_mode": "count", "path": "src"}),
        )
        .await
        .ok();
    assert_eq!(count.text, "src/b.rs:2\nsrc/d.py:1\nsrc/deep/c.rs:1");
    let typed = p
        .tool("grep", json!({"pattern": "TODO", "type": "py"}))
        .await
        .ok();
    assert_eq!(typed.text, "src/d.py");
    let globbed = p
        .tool(
            "grep",
            json!({"pattern": "fn", "glob": "*.rs", "path": "src"}),
        )
        .await
        .ok();
    assert_eq!(globbed.text, "src/b.rs\nsrc/deep/c.rs");
    let context = p
        .tool(
            "grep",
            json!({"pattern": "pass", "output_mode": "content", "-B": 1, "path": "src"}),
        )
        .await
        .ok();
    assert_eq!(
        context.text,
        "src/d.py-1-def d():\nsrc/d.py:2:    pass  # TODO"
    );
    let limited = p
        .tool("grep", json!({"pattern": "TODO", "head_limit": 2}))
        .await
        .ok();
    // Exactly the lines asked for; `truncated` says there were more.
    assert_eq!(limited.text, ".hidden.rs\nsrc/b.rs");
    assert_eq!(limited.data["truncated"], true);
    p.tool("grep", json!({"pattern": "TODO", "head_limit": 0}))
        .await
        .refused("at least 1");
    let multi = p
        .tool(
            "grep",
            json!({"pattern": "todo!\\(\\) \\}\\n//", "multiline": true, "output_mode": "content"}),
        )
        .await
        .ok();
    assert_eq!(
        multi.text,
        "src/b.rs:1:fn b() { todo!() }\nsrc/b.rs:2:// TODO: more"
    );
    let none = p
        .tool("grep", json!({"pattern": "NOTHING_LIKE_THIS"}))
        .await
        .ok();
    assert!(none.text.contains("No matches"));
    p.tool("grep", json!({"pattern": "("}))
        .await
        .refused("invalid regular expression");
    p.tool("grep", json!({"pattern": "x", "type": "klingon"}))
        .await
        .refused("unknown file type");
    p.tool("grep", json!({"pattern": "x", "output_mode": "lines"}))
        .await
        .refused("output_mode");
}

#[tokio::test(flavor = "multi_thread")]
async fn read_only_runs_started_together_overlap() {
    let p = Project::new();
    for i in 0..1500 {
        p.file(
            &format!("big/{}/f{i}.txt", i % 30),
            "lorem ipsum dolor sit amet\n".repeat(40),
        );
    }
    let started: Vec<String> = (0..3)
        .map(|i| {
            let (program, input) = if i == 0 {
                ("read", json!({"file_path": "big/0/f0.txt"}))
            } else {
                ("grep", json!({"pattern": "nomatch[0-9]+", "path": "big"}))
            };
            p.start(program, input)
        })
        .collect();
    let mut spans = Vec::new();
    for id in &started {
        let a = p.answer(id).await.ok();
        spans.push((time(&a.body, "started"), time(&a.body, "ended")));
    }
    let greps = &spans[1..];
    assert!(
        greps[0].0 < greps[1].1 && greps[1].0 < greps[0].1,
        "two greps started together ran at the same time: {greps:?}"
    );
    assert!(
        spans[0].0 < greps[0].1 && spans[0].0 < greps[1].1,
        "the read started while the greps ran: {spans:?}"
    );
}
