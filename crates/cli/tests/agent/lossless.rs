//! Print modes lose nothing: a reply of a thousand calls, read by a slow
//! reader, still reaches stdout whole (the renderer, fallen behind, reads
//! what it missed back from the substrate), and the calls run at most ten
//! at a time.

use crate::common::*;
use serde_json::{Value, json};
use tokio::io::AsyncReadExt;

const CALLS: usize = 1000;

/// A reply of `CALLS` reads (after `first` text), then `last` text.
fn thousand_reads(first: &str, last: &str) -> Value {
    let mut content = vec![text(first)];
    content
        .extend((0..CALLS).map(|i| call(&format!("t{i}"), "read", json!({"file_path": "a.txt"}))));
    json!({"turns": [
        reply(Value::Array(content), "tool_use"),
        reply(json!([text(last)]), "end_turn"),
    ]})
}

/// `hc ARGS…` whose stdout is read only after two seconds, then slowly
/// (4 KiB every 20 ms).
async fn read_slowly(s: &Setup, args: &[&str]) -> (i32, String) {
    let mut command = s.hc(args);
    command
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null());
    let mut child = command.spawn().unwrap();
    let mut stdout = child.stdout.take().unwrap();
    tokio::time::sleep(std::time::Duration::from_secs(2)).await;
    let mut out = Vec::new();
    let mut piece = [0u8; 4096];
    loop {
        let n = stdout.read(&mut piece).await.unwrap();
        if n == 0 {
            break;
        }
        out.extend_from_slice(&piece[..n]);
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    let status = tokio::time::timeout(std::time::Duration::from_secs(120), child.wait())
        .await
        .expect("hc did not end")
        .unwrap();
    (status.code().unwrap_or(-1), String::from_utf8(out).unwrap())
}

#[tokio::test(flavor = "multi_thread")]
async fn stream_json_carries_every_message_of_a_thousand_calls_to_a_slow_reader() {
    let s = Setup::new(thousand_reads("Reading it all.", "All read.")).await;
    s.file("a.txt", "alpha\n");
    let (code, stdout) = read_slowly(
        &s,
        &["run", "--output-format", "stream-json", "read a.txt a lot"],
    )
    .await;
    assert_eq!(code, 0);
    let lines: Vec<Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let of = |t: &str| lines.iter().filter(|l| l["type"] == t).collect::<Vec<_>>();
    let assistant = of("assistant");
    assert_eq!(assistant.len(), 2, "one line per message");
    let asked = assistant[0]["message"]["content"].as_array().unwrap();
    assert_eq!(asked.len(), CALLS + 1);
    let mut answered = Vec::new();
    for user in of("user") {
        for result in user["message"]["content"].as_array().unwrap() {
            assert_eq!(result["type"], "tool_result");
            assert_eq!(result["is_error"], false, "{result}");
            answered.push(result["tool_use_id"].as_str().unwrap().to_owned());
        }
    }
    let expected: Vec<String> = (0..CALLS).map(|i| format!("t{i}")).collect();
    assert_eq!(answered, expected, "every result once, in order");
    assert_eq!(assistant[1]["message"]["content"][0]["text"], "All read.");
    let result = lines.last().unwrap();
    assert_eq!(
        (result["type"].as_str(), result["subtype"].as_str()),
        (Some("result"), Some("success"))
    );

    // Ten at a time at most: never more than ten reads' lives overlap.
    let db = s.db();
    let mut edges: Vec<(std::time::SystemTime, i32)> = Vec::new();
    for (started, ended, _) in spans(&db, "read") {
        edges.push((started, 1));
        edges.push((ended, -1));
    }
    assert_eq!(edges.len(), 2 * CALLS);
    edges.sort();
    let (mut now, mut most) = (0, 0);
    for (_, step) in edges {
        now += step;
        most = most.max(now);
    }
    assert!(most <= 10, "{most} reads ran at once");
}

#[tokio::test(flavor = "multi_thread")]
async fn text_output_keeps_every_word_for_a_slow_reader() {
    let first: String = (0..200).map(|i| format!("word{i} ")).collect();
    // Far more than a pipe holds: deltas come while the reader is away.
    let last: String = (0..30_000).map(|i| format!("end{i} ")).collect();
    let s = Setup::new(thousand_reads(&first, &last)).await;
    s.file("a.txt", "alpha\n");
    let (code, stdout) = read_slowly(&s, &["run", "read a.txt a lot"]).await;
    assert_eq!(code, 0);
    assert_eq!(stdout.matches("word").count(), 200);
    assert_eq!(stdout.matches("end").count(), 30_000);
    assert_eq!(stdout.matches(first.as_str()).count(), 1);
    assert_eq!(stdout.matches(last.as_str()).count(), 1);
}
