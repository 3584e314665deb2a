//! `read`, `write`, `edit`.

use crate::common::*;
use serde_json::json;

#[tokio::test(flavor = "multi_thread")]
async fn read_numbers_lines_and_records_the_hash() {
    let p = Project::new();
    let content = "alpha\nbeta\r\ngamma";
    p.file("src/a.txt", content);
    let a = p.tool("read", json!({"file_path": "src/a.txt"})).await.ok();
    assert_eq!(a.text, "     1\talpha\n     2\tbeta\n     3\tgamma\n");
    assert_eq!(a.data["path"], "src/a.txt");
    assert_eq!(a.data["sha256"], sha256(content.as_bytes()));
    assert_eq!(a.data["total_lines"], 3);
    assert_eq!(
        (a.data["start"].as_u64(), a.data["end"].as_u64()),
        (Some(1), Some(3))
    );
    humantime::parse_rfc3339(a.data["mtime"].as_str().unwrap()).unwrap();
    assert!(a.data["mtime"].as_str().unwrap().ends_with('Z'));
    // absolute paths too
    let abs = p.root.join("src/a.txt");
    let b = p.tool("read", json!({"file_path": abs})).await.ok();
    assert_eq!(b.text, a.text);
}

#[tokio::test(flavor = "multi_thread")]
async fn read_pages_long_files_and_cuts_long_lines() {
    let p = Project::new();
    let lines: Vec<String> = (1..=2500).map(|i| format!("line {i}")).collect();
    p.file("long.txt", lines.join("\n") + "\n");
    let first = p.tool("read", json!({"file_path": "long.txt"})).await.ok();
    assert!(first.text.starts_with("     1\tline 1\n"));
    assert!(first.text.contains("  2000\tline 2000\n"));
    assert!(!first.text.contains("line 2001"));
    assert!(
        first.text.contains("of 2500"),
        "says how many lines: {}",
        &first.text[first.text.len() - 80..]
    );
    assert_eq!(first.data["end"], 2000);
    let page = p
        .tool(
            "read",
            json!({"file_path": "long.txt", "offset": 2400, "limit": 3}),
        )
        .await
        .ok();
    assert_eq!(
        page.text.lines().take(3).collect::<Vec<_>>(),
        [
            "  2400\tline 2400",
            "  2401\tline 2401",
            "  2402\tline 2402"
        ]
    );
    assert_eq!(
        (page.data["start"].as_u64(), page.data["end"].as_u64()),
        (Some(2400), Some(2402))
    );
    let tail = p
        .tool("read", json!({"file_path": "long.txt", "offset": 2500}))
        .await
        .ok();
    assert_eq!(tail.text, "  2500\tline 2500\n");
    p.file("wide.txt", "x".repeat(5000));
    let wide = p.tool("read", json!({"file_path": "wide.txt"})).await.ok();
    assert!(
        wide.text.contains("[line cut: 3000 more characters]"),
        "{}",
        wide.text.len()
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn read_refuses_bad_input_with_what_to_do() {
    let p = Project::new();
    p.file("a.txt", "one\ntwo\n");
    p.file("bin.dat", b"\x7fELF\x00\x01\x02");
    std::fs::create_dir(p.root.join("dir")).unwrap();
    p.refused_run("read", json!({}), "file_path");
    p.tool("read", json!({"file_path": 7}))
        .await
        .refused("file_path");
    p.tool("read", json!({"file_path": "a.txt", "offset": "x"}))
        .await
        .refused("offset");
    p.tool("read", json!({"file_path": "missing.txt"}))
        .await
        .refused("does not exist");
    p.tool("read", json!({"file_path": "dir"}))
        .await
        .refused("is a directory");
    p.tool("read", json!({"file_path": "bin.dat"}))
        .await
        .refused("binary");
    p.tool("read", json!({"file_path": "a.txt", "offset": 5}))
        .await
        .refused("the file has 2 lines");
    p.file("empty.txt", "");
    p.tool("read", json!({"file_path": "empty.txt", "offset": 2}))
        .await
        .refused("the file has 0 lines");
    let empty = p.tool("read", json!({"file_path": "empty.txt"})).await.ok();
    assert!(empty.text.contains("empty"), "{}", empty.text);
}

#[tokio::test(flavor = "multi_thread")]
async fn write_creates_and_replaces_only_what_was_read() {
    let p = Project::new();
    let a = p
        .tool(
            "write",
            json!({"file_path": "new/dir/f.txt", "content": "one\n"}),
        )
        .await
        .ok();
    assert_eq!(
        std::fs::read_to_string(p.root.join("new/dir/f.txt")).unwrap(),
        "one\n"
    );
    assert_eq!(a.data["created"], true);
    assert_eq!(a.data["sha256"], sha256(b"one\n"));
    // replacing needs the hash of the last read
    let unread = p
        .tool(
            "write",
            json!({"file_path": "new/dir/f.txt", "content": "two\n"}),
        )
        .await
        .refused("has not been read");
    assert!(unread.text.contains("read it first"));
    let stale = p
        .tool("write", json!({"file_path": "new/dir/f.txt", "content": "two\n", "expect_sha256": sha256(b"zero\n")}))
        .await
        .refused("changed since it was last read");
    assert!(stale.text.contains("read it again"));
    assert_eq!(
        std::fs::read(p.root.join("new/dir/f.txt")).unwrap(),
        b"one\n",
        "refusals change nothing"
    );
    let read = p
        .tool("read", json!({"file_path": "new/dir/f.txt"}))
        .await
        .ok();
    let replaced = p
        .tool("write", json!({"file_path": "new/dir/f.txt", "content": "two\n", "expect_sha256": read.data["sha256"]}))
        .await
        .ok();
    assert_eq!(replaced.data["created"], false);
    let diff = replaced.data["diff"].as_str().unwrap();
    assert!(diff.contains("-one") && diff.contains("+two"), "{diff}");
    assert_eq!(
        std::fs::read_to_string(p.root.join("new/dir/f.txt")).unwrap(),
        "two\n"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn write_refuses_protected_and_outside_paths() {
    let p = Project::new();
    std::fs::create_dir(p.root.join(".git")).unwrap();
    p.tool(
        "write",
        json!({"file_path": ".git/hooks/pre-commit", "content": "x"}),
    )
    .await
    .refused("`.git` is read-only");
    p.tool(
        "write",
        json!({"file_path": ".hermitcrab/evil", "content": "x"}),
    )
    .await
    .refused("`.hermitcrab` is read-only");
    let outside = tempfile::tempdir().unwrap();
    let target = outside.path().join("x.txt");
    p.tool("write", json!({"file_path": target, "content": "x"}))
        .await
        .refused("outside what this program may change");
    assert!(!target.exists());
    assert!(!p.root.join(".git/hooks").exists());
    p.refused_run("write", json!({"file_path": "a.txt"}), "content");
    std::fs::create_dir(p.root.join("d")).unwrap();
    p.tool(
        "write",
        json!({"file_path": "d", "content": "x", "expect_sha256": "00"}),
    )
    .await
    .refused("is a directory");
}

#[tokio::test(flavor = "multi_thread")]
async fn edit_replaces_once_shows_the_region_and_records_the_diff() {
    let p = Project::new();
    let text = "fn main() {\n    let x = 1;\n    println!(\"{x}\");\n}\n";
    p.file("src/main.rs", text);
    let read = p
        .tool("read", json!({"file_path": "src/main.rs"}))
        .await
        .ok();
    let a = p
        .tool(
            "edit",
            json!({"file_path": "src/main.rs", "old_string": "let x = 1;", "new_string": "let x = 2;", "expect_sha256": read.data["sha256"]}),
        )
        .await
        .ok();
    let now = std::fs::read_to_string(p.root.join("src/main.rs")).unwrap();
    assert_eq!(now, text.replace("let x = 1;", "let x = 2;"));
    assert!(a.text.contains("     2\t    let x = 2;"), "{}", a.text);
    assert_eq!(a.data["replacements"], 1);
    assert_eq!(a.data["sha256"], sha256(now.as_bytes()));
    assert!(a.data["diff"].as_str().unwrap().contains("+    let x = 2;"));
    // replace_all
    p.file("b.txt", "a a a\n");
    let h = sha256(b"a a a\n");
    let all = p
        .tool("edit", json!({"file_path": "b.txt", "old_string": "a", "new_string": "b", "replace_all": true, "expect_sha256": h}))
        .await
        .ok();
    assert_eq!(all.data["replacements"], 3);
    assert_eq!(
        std::fs::read_to_string(p.root.join("b.txt")).unwrap(),
        "b b b\n"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn edit_refuses_and_leaves_the_file_byte_identical() {
    let p = Project::new();
    let text = "one\ntwo\none\n    indented line here\n";
    p.file("f.txt", text);
    let h = sha256(text.as_bytes());
    let cases = [
        (
            json!({"file_path": "f.txt", "old_string": "three", "new_string": "x", "expect_sha256": h}),
            "not found",
        ),
        (
            json!({"file_path": "f.txt", "old_string": "indented line hre", "new_string": "x", "expect_sha256": h}),
            "closest line is 4",
        ),
        (
            json!({"file_path": "f.txt", "old_string": "one", "new_string": "x", "expect_sha256": h}),
            "matches 2 times",
        ),
        (
            json!({"file_path": "f.txt", "old_string": "two", "new_string": "two", "expect_sha256": h}),
            "the same",
        ),
        (
            json!({"file_path": "f.txt", "old_string": "two", "new_string": "2"}),
            "has not been read",
        ),
        (
            json!({"file_path": "f.txt", "old_string": "two", "new_string": "2", "expect_sha256": sha256(b"old")}),
            "changed since",
        ),
        (
            json!({"file_path": "nope.txt", "old_string": "two", "new_string": "2", "expect_sha256": h}),
            "does not exist",
        ),
        (
            json!({"file_path": "f.txt", "old_string": "two", "new_string": 2, "expect_sha256": h}),
            "new_string",
        ),
    ];
    for (input, needle) in cases {
        p.tool("edit", input).await.refused(needle);
        assert_eq!(
            std::fs::read(p.root.join("f.txt")).unwrap(),
            text.as_bytes()
        );
    }
    p.refused_run(
        "edit",
        json!({"file_path": "f.txt", "old_string": "two"}),
        "new_string",
    );
    let several = p
        .tool("edit", json!({"file_path": "f.txt", "old_string": "one", "new_string": "x", "expect_sha256": h}))
        .await;
    assert!(several.text.contains("lines 1, 3"), "{}", several.text);
}

#[tokio::test(flavor = "multi_thread")]
async fn read_finds_pages_and_hashes_across_a_large_file() {
    let p = Project::new();
    // lines of varying length, so pages straddle the reader's 1 MiB pieces
    let lines: Vec<String> = (1..=60_000)
        .map(|i| format!("{i}:{}", "x".repeat(i % 97)))
        .collect();
    let content = lines.join("\n");
    p.file("big.txt", &content);
    let hash = sha256(content.as_bytes());
    for offset in [1usize, 20_000, 21_111, 40_000, 59_990] {
        let a = p
            .tool(
                "read",
                json!({"file_path": "big.txt", "offset": offset, "limit": 50}),
            )
            .await
            .ok();
        assert_eq!(a.data["sha256"], hash);
        assert_eq!(a.data["total_lines"], 60_000);
        let end = (offset + 49).min(60_000);
        let expected: String = (offset..=end)
            .map(|n| format!("{n:>6}\t{}\n", lines[n - 1]))
            .collect();
        assert!(
            a.text.starts_with(&expected),
            "offset {offset}: {}",
            &a.text[..200.min(a.text.len())]
        );
        assert_eq!(a.data["end"], end);
    }
    let mut late_nul = content.into_bytes();
    late_nul[2_500_000] = 0;
    p.file("late.bin", &late_nul);
    p.tool(
        "read",
        json!({"file_path": "late.bin", "offset": 1, "limit": 5}),
    )
    .await
    .refused("binary");
}
