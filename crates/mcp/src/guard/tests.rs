use super::*;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, BufReader};

/// Limits small enough to cut what a test writes by hand.
const SMALL: Limits = Limits {
    string: 64,
    keep: 16,
    line: 4096,
};

/// What `input` comes out as, fed in the pieces `at` splits it into.
fn through(input: &[u8], limits: Limits, at: &[usize]) -> Vec<u8> {
    let mut cutter = Cutter::new(limits);
    let mut from = 0;
    for &to in at.iter().chain([input.len()].iter()) {
        cutter.feed(&input[from..to]);
        from = to;
    }
    cutter.out
}

fn lines(out: &[u8]) -> Vec<&[u8]> {
    out.split(|b| *b == b'\n')
        .filter(|l| !l.is_empty())
        .collect()
}

/// A string's decoded text split at the cut note: its head and tail.
fn ends(text: &str) -> (&str, &str) {
    let (head, rest) = text
        .split_once("\n[\u{2026} ")
        .unwrap_or_else(|| panic!("no cut note in {text:?}"));
    let (_, tail) = rest.split_once(" \u{2026}]\n").unwrap();
    (head, tail)
}

#[test]
fn lines_with_short_strings_pass_unchanged() {
    let input = concat!(
        r#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"h\u00e9 \"q\" \\ é 😀"}]}}"#,
        "\n",
        r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":1}}"#,
        "\n\n",
        r#"[1, 2, {"a": "b"}]"#,
        "\n"
    );
    assert_eq!(through(input.as_bytes(), SMALL, &[]), input.as_bytes());
}

#[test]
fn a_long_string_keeps_its_two_ends_and_the_line_stays_json() {
    let text: String = (0..200)
        .map(|i| char::from(b'a' + (i % 26) as u8))
        .collect();
    let line = json!({"jsonrpc": "2.0", "id": 7, "result": {"content": [
        {"type": "text", "text": text}], "isError": false}});
    let out = through(format!("{line}\n").as_bytes(), SMALL, &[]);
    let got: Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(got["id"], 7);
    assert_eq!(got["result"]["isError"], false);
    let cut = got["result"]["content"][0]["text"].as_str().unwrap();
    assert!(
        cut.contains("168 bytes of this string cut by hermitcrab"),
        "{cut}"
    );
    assert_eq!(ends(cut), (&text[..16], &text[184..]));
    // a string just at the limit is whole
    let whole = json!({"s": "y".repeat(64)}).to_string();
    assert_eq!(
        through(format!("{whole}\n").as_bytes(), SMALL, &[]),
        format!("{whole}\n").as_bytes()
    );
}

/// Several lines with strings long and short, escapes and characters of
/// every width.
fn sample() -> Vec<u8> {
    let mut input = Vec::new();
    for (n, piece) in ["é", "😀", r"\n", r"\u00e9", r"\ud83d\ude00", r"\\", r#"\""#]
        .iter()
        .enumerate()
    {
        let text = format!("{}{}", "a".repeat(n), piece.repeat(30));
        input.extend(format!(r#"{{"id":{n},"result":{{"t":"{text}","k":"{piece}"}}}}"#).bytes());
        input.push(b'\n');
    }
    input
}

#[test]
fn every_split_of_the_input_gives_the_same_output() {
    let input = sample();
    let whole = through(&input, SMALL, &[]);
    for at in 0..=input.len() {
        assert_eq!(through(&input, SMALL, &[at]), whole, "split at {at}");
    }
    let every: Vec<usize> = (1..input.len()).collect();
    assert_eq!(through(&input, SMALL, &every), whole, "a byte at a time");
    for step in [2, 3, 5, 7, 11, 13] {
        let at: Vec<usize> = (0..input.len()).step_by(step).collect();
        assert_eq!(through(&input, SMALL, &at), whole, "every {step} bytes");
    }
}

#[test]
fn escapes_and_characters_are_never_split_at_a_cut() {
    let pieces = [
        "é",
        "😀",
        "€",
        r"\n",
        r"\u00e9",
        r"\ud83d\ude00",
        r"\\",
        r#"\""#,
        r"\\u0041",
        r"\/",
    ];
    for piece in pieces {
        for shift in 0..UNIT_MAX {
            let text = format!(
                "{}{}{}",
                "a".repeat(shift),
                piece.repeat(40),
                "z".repeat(shift)
            );
            let line = format!(r#"{{"id":1,"result":{{"text":"{text}"}}}}"#);
            let decoded: Value =
                serde_json::from_str(&format!("\"{text}\"")).expect("the test's own JSON");
            let decoded = decoded.as_str().unwrap();
            let out = through(format!("{line}\n").as_bytes(), SMALL, &[]);
            let got: Value = serde_json::from_slice(&out)
                .unwrap_or_else(|e| panic!("{piece} shifted {shift}: {e}"));
            let cut = got["result"]["text"].as_str().unwrap();
            let (head, tail) = ends(cut);
            assert!(decoded.starts_with(head), "{piece} {shift}: {head:?}");
            assert!(decoded.ends_with(tail), "{piece} {shift}: {tail:?}");
            assert!(!head.is_empty() && !tail.is_empty());
        }
    }
}

#[test]
fn a_line_over_the_limit_is_answered_with_an_error_for_its_request() {
    let limits = Limits { line: 300, ..SMALL };
    let items = vec!["ab"; 200];
    let next = r#"{"jsonrpc":"2.0","id":6,"result":{}}"#;
    for line in [
        json!({"jsonrpc": "2.0", "id": 5, "result": {"items": items}}).to_string(),
        format!(
            r#"{{"jsonrpc":"2.0","result":{{"items":{}}}, "id" : "x-5" }}"#,
            json!(items)
        ),
    ] {
        let input = format!("{line}\n{next}\n");
        let whole = through(input.as_bytes(), limits, &[]);
        for at in [0, 40, 299, 301, 1000] {
            assert_eq!(through(input.as_bytes(), limits, &[at]), whole);
        }
        let out = lines(&whole);
        assert_eq!(out.len(), 3, "{}", String::from_utf8_lossy(&whole));
        assert!(
            serde_json::from_slice::<Value>(out[0]).is_err(),
            "the line so far"
        );
        assert!(out[0].len() <= 300);
        let error: Value = serde_json::from_slice(out[1]).unwrap();
        let id = if line.contains("x-5") {
            json!("x-5")
        } else {
            json!(5)
        };
        assert_eq!(error["id"], id);
        assert_eq!(error["error"]["data"]["hermitcrab"], TOO_LARGE);
        let message = error["error"]["message"].as_str().unwrap();
        assert!(message.contains("over 300 bytes"), "{message}");
        assert_eq!(out[2], next.as_bytes(), "the next line is whole");
    }
}

#[test]
fn an_oversized_notification_is_left_out_and_a_message_with_no_id_ends_the_stream() {
    let limits = Limits { line: 300, ..SMALL };
    let big = json!(vec!["ab"; 200]);
    let after = r#"{"jsonrpc":"2.0","id":6,"result":{}}"#;
    let note =
        json!({"jsonrpc": "2.0", "method": "notifications/message", "params": {"data": big}});
    let out = through(format!("{note}\n{after}\n").as_bytes(), limits, &[]);
    let out = lines(&out);
    assert_eq!(out.len(), 2);
    assert_eq!(out[1], after.as_bytes());
    let mut cutter = Cutter::new(limits);
    cutter.feed(format!("{}\n{after}\n", json!({"result": big})).as_bytes());
    assert!(cutter.ended);
    assert!(!String::from_utf8_lossy(&cutter.out).contains(after));
}

/// A reader of `prefix`, `n` bytes of `x`, then `suffix`.
fn long_line(n: u64) -> impl AsyncRead + Unpin {
    let prefix = br#"{"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":""#;
    let suffix = b"\"}],\"isError\":false}}\n";
    prefix
        .as_slice()
        .chain(tokio::io::repeat(b'x').take(n))
        .chain(suffix.as_slice())
}

#[tokio::test]
async fn fifty_megabytes_in_one_string_pass_with_bounded_buffering() {
    let n = 50 * 1024 * 1024;
    let mut guard = LineGuard::new(long_line(n));
    let mut line = Vec::new();
    BufReader::new(&mut guard)
        .read_until(b'\n', &mut line)
        .await
        .unwrap();
    assert!(line.len() < 2 * KEEP_BYTES + 1024, "{}", line.len());
    let got: Value = serde_json::from_slice(&line).unwrap();
    let text = got["result"]["content"][0]["text"].as_str().unwrap();
    let left_out = n as usize - 2 * KEEP_BYTES;
    assert!(text.contains(&format!("{left_out} bytes of this string cut")));
    assert_eq!(
        ends(text),
        (
            "x".repeat(KEEP_BYTES).as_str(),
            "x".repeat(KEEP_BYTES).as_str()
        )
    );
    // what was held never grew with the line
    let held = guard.cutter.held.capacity() + guard.cutter.out.capacity();
    assert!(held < 2 * STRING_BYTES, "{held}");
    // and the stream goes on
    let mut rest = Vec::new();
    guard.read_to_end(&mut rest).await.unwrap();
    assert!(rest.is_empty());
}

#[tokio::test]
async fn the_sdk_gets_a_cut_answer_where_it_would_drop_the_line() {
    use rmcp::model::ServerJsonRpcMessage;
    use rmcp::transport::{Transport, async_rw::AsyncRwTransport};
    let (to_server, _server_reads) = tokio::io::duplex(64);
    let mut transport = AsyncRwTransport::<rmcp::RoleClient, _, _>::new_client(
        LineGuard::new(long_line(20 * 1024 * 1024)),
        to_server,
    )
    .with_max_line_length(usize::MAX);
    let message = transport.receive().await.expect("an answer");
    let ServerJsonRpcMessage::Response(response) = message else {
        panic!("not a response: {message:?}");
    };
    let result = serde_json::to_value(&response.result).unwrap();
    let text = result["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("cut by hermitcrab") && text.len() < 110_000);
}
