//! The page against `hc trace` and the other hosts (issue 33), in
//! Chromium: a session drawn whole (results folded and unfolded, the
//! header's totals as `hc trace` counts them, markdown drawn safely), the
//! Trace tab, the sidebar, search, processes and tiles, and one answer per
//! question with two pages, or a page and a terminal, racing.

use super::{Served, page, said};
use crate::common::*;
use serde_json::{Value, json};
use std::path::PathBuf;

/// Where the screenshots a person looks at are written (copied to
/// `docs/` when they are current).
fn shots() -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
}

/// A reply turn with every kind of input token counted.
fn spent(content: Value, stop: &str, usage: [u64; 4]) -> Value {
    let [input, output, written, read] = usage;
    json!({"reply": {"content": content, "stop_reason": stop,
        "usage": {"input_tokens": input, "output_tokens": output,
                  "cache_creation_input_tokens": written, "cache_read_input_tokens": read}}})
}

const MARKDOWN: &str = "# Findings\nHere is **bold** and `inline code`.\n\n- first item\n- second item\n\n\
1. one\n2. two\n\n```\nfn main() {}\n```\n\n<script>window.__pwned = 1</script>\n\
<img src=x onerror=\"window.__pwned = 2\">\n[safe](https://example.com/) and [bad](javascript:window.__pwned=3)";

/// `hc trace SESSION --json`'s runs, added up: turns, input (cache reads
/// and writes included), output, dollars.
fn trace_totals(tree: &Value) -> (u64, u64, u64, f64) {
    let runs = tree["items"].as_array().unwrap().iter();
    let runs: Vec<&Value> = runs.filter(|n| n["type"] == "run").collect();
    assert_eq!(runs.len(), 2, "{tree:#}");
    let n = |v: &Value, k: &str| v[k].as_u64().unwrap_or(0);
    runs.iter().fold((0, 0, 0, 0.0), |(t, i, o, c), r| {
        let u = &r["usage"];
        let input = n(u, "input_tokens")
            + n(u, "cache_creation_input_tokens")
            + n(u, "cache_read_input_tokens");
        let cost = r["cost_usd"].as_f64().unwrap_or(0.0);
        (
            t + n(r, "turns"),
            i + input,
            o + n(u, "output_tokens"),
            c + cost,
        )
    })
}

/// Each answer line's call, tokens and cost, as `● answer #N  X in / Y
/// out · $C` (the terminal's and the page's alike).
fn answer_lines(lines: impl Iterator<Item = String>) -> Vec<String> {
    lines
        .filter(|l| l.trim_start().starts_with("● answer #"))
        .map(|l| {
            let l = l.trim().replace("  ", " ");
            let l = l.split(" request #").next().unwrap_or(&l).to_owned();
            l.trim().to_owned()
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_session_is_drawn_whole_and_counted_as_hc_trace_counts_it() {
    let s = Setup::new(json!({"turns": [
        spent(json!([text("Reading."), call("long", "read", json!({"file_path": "long.txt"})),
            call("bad", "read", json!({"file_path": "missing.txt"}))]), "tool_use", [1200, 40, 300, 500]),
        spent(json!([text(MARKDOWN)]), "end_turn", [200, 80, 0, 1500]),
        spent(json!([text("once more, done")]), "end_turn", [100, 10, 0, 2000]),
    ]}))
    .await;
    let lines: Vec<String> = (1..=40)
        .map(|i| format!("line {i} of the long file"))
        .collect();
    s.file("long.txt", &(lines.join("\n") + "\n"));
    let bypass = ["--permission-mode", "bypass"];
    assert_eq!(
        s.run(&[&bypass[..], &["read the long file"]].concat())
            .await
            .code,
        0
    );
    let again = [&bypass[..], &["--continue", "once more"]].concat();
    assert_eq!(s.run(&again).await.code, 0);
    let session = s.sessions().pop().unwrap();
    let tree: Value =
        serde_json::from_str(&s.out(&["trace", &session, "--json"]).await.stdout).unwrap();
    let (turns, input, output, cost) = trace_totals(&tree);
    let served = Served::start(&s).await;
    let extra = json!({"session": session, "turns": turns, "shots": shots()});
    let seen = page(&s, &served, "session_view", extra).await;

    // the header: the session's turns, tokens and cost, as `hc trace` adds
    // them, and its tools' time
    let header = format!("{turns} turns · {input} in / {output} out · ${cost:.4} · tools ");
    let status = said(&seen, "status").as_str().unwrap_or_default();
    assert!(status.starts_with(&header), "{header:?} in {seen:#?}");
    let totals = said(&seen, "totals");
    assert_eq!(totals["input"], json!(input.to_string()));
    assert_eq!(totals["output"], json!(output.to_string()));

    // a long result: folded to a few lines, unfolded whole, folded again
    let result = s.of_type(&session, "tool-result");
    let long = result.iter().find(|r| r["tool_use_id"] == "long").unwrap();
    let whole = long["text"].as_str().unwrap();
    let folded = said(&seen, "folded").as_str().unwrap();
    assert!(
        folded.lines().count() <= 7 && !folded.contains("line 40 "),
        "{folded}"
    );
    assert!(folded.contains("line 1 of"), "{folded}");
    assert!(
        said(&seen, "button").as_str().unwrap().contains("show all"),
        "{seen:#?}"
    );
    assert_eq!(said(&seen, "unfolded").as_str().unwrap(), whole);
    assert_eq!(said(&seen, "refolded"), said(&seen, "folded"));
    let marks = said(&seen, "marks").as_array().unwrap();
    assert!(
        marks.contains(&json!("✓")) && marks.contains(&json!("✗")),
        "{marks:?}"
    );

    // markdown: the subset drawn, and no HTML of the reply's own
    let md = said(&seen, "md");
    assert_eq!(md["h1"], 1, "{md:#}");
    assert_eq!(md["strong"], json!(["bold"]));
    assert_eq!(md["code"], json!(["inline code"]));
    assert_eq!(md["pre"], json!(["fn main() {}"]));
    assert_eq!((md["ul"].as_u64(), md["ol"].as_u64()), (Some(2), Some(2)));
    assert_eq!(
        md["links"],
        json!(["https://example.com/"]),
        "only http(s) links"
    );
    assert_eq!(
        (md["scripts"].as_u64(), md["imgs"].as_u64()),
        (Some(0), Some(0))
    );
    assert_eq!(md["pwned"], Value::Null);
    let shown = md["text"].as_str().unwrap();
    assert!(
        shown.contains("<script>window.__pwned = 1</script>"),
        "{shown}"
    );
    assert!(shown.contains("[bad](javascript:"), "{shown}");

    // the Trace tab: the same tokens and cost per call as `hc trace`
    let trace_text = s.out(&["trace", &session]).await.stdout;
    let rows: Vec<String> = said(&seen, "trace")
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r.as_str().unwrap().to_owned())
        .collect();
    let terminal = answer_lines(trace_text.lines().map(str::to_owned));
    assert_eq!(terminal.len(), 3, "{trace_text}");
    assert_eq!(answer_lines(rows.iter().cloned()), terminal, "{rows:#?}");
    let runs = |lines: Vec<String>| -> Vec<String> {
        let runs = lines
            .into_iter()
            .filter(|l| l.trim_start().starts_with("▶ run"));
        // (the time to a tenth of a second, rounded apart: left out)
        runs.map(|l| l.trim().rsplit_once(" · ").unwrap().0.to_owned())
            .collect()
    };
    let page_runs = runs(rows.clone());
    assert_eq!(page_runs.len(), 2, "{rows:#?}");
    assert_eq!(
        page_runs,
        runs(trace_text.lines().map(str::to_owned).collect())
    );
    assert!(
        rows.iter().any(|r| r.contains("line 1 of the long file")),
        "the results: {rows:#?}"
    );
    assert!(
        rows.iter()
            .any(|r| r.starts_with("✓ read long.txt") && r.contains(" ms")),
        "{rows:#?}"
    );
    assert!(
        rows.iter().any(|r| r.starts_with("✗ read missing.txt")),
        "{rows:#?}"
    );
    assert_eq!(said(&seen, "done"), &json!(["✓"]));
    assert_eq!(said(&seen, "failed"), &json!(["✗"]));
    // a coloured diff, named
    assert_eq!(said(&seen, "compares"), "1 2");
    let title = said(&seen, "diff_title").as_str().unwrap();
    assert!(
        title.contains("request #2") && title.contains("request #1"),
        "{title}"
    );
    assert_eq!(said(&seen, "request_n"), "2");
    let counts: Vec<(String, u64)> =
        serde_json::from_value(said(&seen, "diff_lines").clone()).unwrap();
    assert!(
        counts.iter().any(|(k, n)| k == "add" && *n > 0),
        "{counts:?}"
    );
    assert!(
        counts.iter().any(|(k, n)| k == "file" && *n == 2),
        "{counts:?}"
    );
}

/// A time as the sidebar says it: the hour today, the date before.
fn is_time(t: &str) -> bool {
    let digits = |s: &str| !s.is_empty() && s.chars().all(|c| c.is_ascii_digit());
    let parts: Vec<&str> = t.split([':', '-']).collect();
    (parts.len() == 2 || parts.len() == 3) && parts.iter().all(|p| digits(p))
}

#[tokio::test(flavor = "multi_thread")]
async fn the_sidebar_shows_each_sessions_time_status_and_cost() {
    let s = Setup::new(json!({"turns": [
        spent(json!([text("all done")]), "end_turn", [300, 20, 0, 0]),
        {"error": {"status": 400, "message": "scripted failure"}},
        reply(json!([call("w", "write", json!({"file_path": "page.txt", "content": "x"}))]), "tool_use"),
        reply(json!([text("written")]), "end_turn"),
    ]}))
    .await;
    assert_eq!(s.run(&["finish this"]).await.code, 0);
    assert_ne!(s.run(&["fail this"]).await.code, 0);
    let served = Served::start(&s).await;
    // the README's picture of the page: a session waiting on a question
    let extra = json!({"screenshot": shots().join("page.png")});
    let seen = page(&s, &served, "sidebar", extra).await;
    let listed: Vec<Value> =
        serde_json::from_str(&s.out(&["sessions", "--json"]).await.stdout).unwrap();
    let cost_of = |title: &str| {
        let row = listed.iter().find(|r| r["title"] == title).unwrap();
        row["cost_usd"]
            .as_f64()
            .map_or(String::new(), |c| format!("${c:.4}"))
    };
    let row = |key: &str, title: &str| -> Value {
        let rows = said(&seen, key).as_array().unwrap();
        rows.iter()
            .find(|r| r["title"] == title)
            .cloned()
            .unwrap_or_else(|| panic!("no {title}: {rows:#?}"))
    };
    let waiting = [
        ("finish this", "done"),
        ("fail this", "failed"),
        ("write the file", "waiting"),
    ];
    for (title, status) in waiting {
        let r = row("waiting", title);
        assert_eq!(
            (r["status"].as_str(), r["badge"].as_str()),
            (Some(status), Some(status)),
            "{r:#}"
        );
        assert!(is_time(r["time"].as_str().unwrap()), "{r:#}");
    }
    for title in ["finish this", "fail this"] {
        assert_eq!(
            row("waiting", title)["cost"],
            json!(cost_of(title)),
            "{listed:#?}"
        );
    }
    assert!(!cost_of("finish this").is_empty());
    // the header: the session shown's, live while its run goes, and
    // another's once another is shown
    let header = said(&seen, "header_waiting").as_str().unwrap();
    assert!(
        header.starts_with("1 turn · 1000 in / 50 out · $"),
        "{header}"
    );
    let other = format!("1 turn · 300 in / 20 out · {}", cost_of("finish this"));
    assert_eq!(said(&seen, "header_other"), &json!(other));
    // answered, the run goes on and ends: its row says so, with its cost
    let after = row("after", "write the file");
    assert_eq!(after["status"], "done", "{after:#}");
    assert_eq!(after["cost"], json!(cost_of("write the file")));
    assert_eq!(after["session"], *said(&seen, "session"));
}

#[tokio::test(flavor = "multi_thread")]
async fn search_shows_each_session_once_with_its_title_and_the_match_marked() {
    let s = Setup::new(json!({"turns": [
        reply(json!([text("A hermit crab lives here."), call("r", "read", json!({"file_path": "notes.txt"}))]), "tool_use"),
        reply(json!([text("The hermit moved on.")]), "end_turn"),
        reply(json!([text("No crab here.")]), "end_turn"),
    ]}))
    .await;
    s.file("notes.txt", "the hermit's shell\n");
    let bypass = ["--permission-mode", "bypass"];
    assert_eq!(
        s.run(&[&bypass[..], &["look for the hermit"]].concat())
            .await
            .code,
        0
    );
    assert_eq!(s.run(&["where is the hermit now"]).await.code, 0);
    let served = Served::start(&s).await;
    let extra = json!({"query": "hermit", "shots": shots()});
    let seen = page(&s, &served, "search", extra).await;
    let results = said(&seen, "results").as_array().unwrap();
    let mut sessions: Vec<&str> = results
        .iter()
        .map(|r| r["session"].as_str().unwrap())
        .collect();
    let titles: Vec<&str> = results
        .iter()
        .map(|r| r["title"].as_str().unwrap())
        .collect();
    assert_eq!(results.len(), 2, "{results:#?}");
    assert!(titles.contains(&"look for the hermit") && titles.contains(&"where is the hermit now"));
    sessions.sort();
    sessions.dedup();
    assert_eq!(sessions.len(), 2, "each session once: {results:#?}");
    for r in results {
        let hits = r["hits"].as_array().unwrap();
        assert!(!hits.is_empty(), "{r:#}");
        let mut texts: Vec<&str> = hits.iter().map(|h| h["text"].as_str().unwrap()).collect();
        texts.sort();
        texts.dedup();
        assert_eq!(texts.len(), hits.len(), "no hit twice: {r:#}");
        for h in hits {
            let marks = h["marks"].as_array().unwrap();
            assert!(!marks.is_empty(), "{h:#}");
            assert!(
                marks
                    .iter()
                    .all(|m| m.as_str().unwrap().eq_ignore_ascii_case("hermit")),
                "{h:#}"
            );
        }
    }
    let first = results
        .iter()
        .find(|r| r["title"] == "look for the hermit")
        .unwrap();
    let kinds: Vec<&str> = first["hits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["kind"].as_str().unwrap())
        .collect();
    // the result once, not again as its tool's own output
    assert_eq!(
        kinds.iter().filter(|k| **k == "tool-result").count(),
        1,
        "{first:#}"
    );
    assert!(
        kinds.contains(&"prompt") && kinds.contains(&"answer"),
        "{first:#}"
    );
    assert_eq!(said(&seen, "opened"), &results[0]["session"]);
}

#[tokio::test(flavor = "multi_thread")]
async fn the_processes_tab_has_headers_and_times_and_a_tile_whose_run_ends_goes() {
    let s = Setup::new(json!({"turns": [reply(json!([text("unused")]), "end_turn")]})).await;
    let served = Served::start(&s).await;
    let seen = page(&s, &served, "processes", json!({"shots": shots()})).await;
    let headers = [
        "Process",
        "Program",
        "Status",
        "Session",
        "Started",
        "Running for",
        "",
    ];
    assert_eq!(said(&seen, "headers"), &json!(headers));
    let process = said(&seen, "process").as_str().unwrap().to_owned();
    let row: Vec<&str> = said(&seen, "row")
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_str().unwrap())
        .collect();
    assert_eq!(row[..3], [process.as_str(), "notes", "running"], "{row:?}");
    assert_eq!(row[3], "—", "a tile's run is on no session: {row:?}");
    assert!(is_time(row[4]), "started: {row:?}");
    let took = row[5]
        .strip_suffix(" s")
        .unwrap_or_else(|| panic!("{row:?}"));
    assert!(took.parse::<f64>().is_ok(), "{row:?}");
    assert_eq!(*said(&seen, "tiles"), json!(0), "the ended run's tile went");
    let body = s.db().read(|snap| snap.body(&process)).unwrap().unwrap();
    assert!(
        ["completed", "failed"].contains(&body["status"].as_str().unwrap()),
        "{body}"
    );
}

/// What the page showed of a question: `{answered, answer, by, text, controls}`.
fn answer_shown(seen: &[Value], key: &str) -> (String, String, u64) {
    let q = said(seen, key);
    assert_eq!(q["answered"], true, "{key}: {q:#}");
    let answer = q["answer"].as_str().unwrap_or_default().to_owned();
    (
        answer,
        q["text"].as_str().unwrap_or_default().to_owned(),
        q["controls"].as_u64().unwrap(),
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn two_pages_answering_one_question_record_one_answer_and_both_show_it() {
    let s = Setup::new(json!({"turns": [
        reply(json!([call("a", "write", json!({"file_path": "a.txt", "content": "a"}))]), "tool_use"),
        reply(json!([call("b", "write", json!({"file_path": "b.txt", "content": "b"}))]), "tool_use"),
        reply(json!([text("both asked")]), "end_turn"),
    ]}))
    .await;
    let served = Served::start(&s).await;
    let seen = page(&s, &served, "two_pages", json!({"shots": shots()})).await;
    let session = s.sessions().pop().unwrap();
    let decisions = s.of_type(&session, "permission-decision");
    assert_eq!(
        decisions.len(),
        2,
        "one answer per question: {decisions:#?}"
    );
    let decided = |q: &str| -> String {
        let id = said(&seen, q).as_str().unwrap();
        let d = decisions.iter().find(|d| d["request"] == id).unwrap();
        d["decision"].as_str().unwrap().to_owned()
    };
    assert_eq!(
        (decided("q1"), decided("q2")),
        ("allow".into(), "deny".into())
    );
    assert!(s.root.join("a.txt").exists() && !s.root.join("b.txt").exists());
    // each result in its place: under its call, after the question, before
    // the reply that followed (on the page that heard it all at once too)
    let order = ["prompt", "ask", "tool a ✓", "ask", "tool b ⊘", "answer"];
    assert_eq!(said(&seen, "order_first"), &json!(order));
    assert_eq!(said(&seen, "order_second"), &json!(order));
    // the page that answered says so; the other drops the question at once
    let (answer, text, _) = answer_shown(&seen, "q1_first");
    assert_eq!(
        (answer.as_str(), text.contains("answered here")),
        ("allow", true),
        "{text}"
    );
    let (answer, text, controls) = answer_shown(&seen, "q1_second");
    assert_eq!(answer, "allow", "{text}");
    assert!(text.contains("answered on the page"), "{text}");
    assert_eq!(controls, 0, "no button left to click");
    // the second page's late click is refused: it shows the answer taken
    let (answer, text, _) = answer_shown(&seen, "q2_first");
    assert_eq!(
        (answer.as_str(), text.contains("answered here")),
        ("deny", true),
        "{text}"
    );
    for key in ["q2_refused", "q2_second"] {
        let (answer, text, controls) = answer_shown(&seen, key);
        assert_eq!(answer, "deny", "{key}: never its own click: {text}");
        assert!(
            text.contains("answered first on another page"),
            "{key}: {text}"
        );
        assert!(!text.contains("allow"), "{key}: {text}");
        assert_eq!(controls, 0);
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_terminals_answer_wins_over_a_later_click_on_the_page() {
    let s = Setup::new(json!({"turns": [
        reply(json!([call("t", "write", json!({"file_path": "t.txt", "content": "t"}))]), "tool_use"),
        reply(json!([text("as you wish")]), "end_turn"),
    ]}))
    .await;
    let served = Served::start(&s).await;
    let page_asks: crate::terminal::Ready = Box::new(|s: &Setup| s.root.join("page-asks").exists());
    let terminal =
        crate::terminal::in_terminal(&s, "run 'write t.txt'", &[], vec![(page_asks, b"n\r")]);
    let extra = json!({"cwd": s.root, "shots": shots()});
    let ((code, shown), seen) = tokio::join!(terminal, page(&s, &served, "terminal_race", extra));
    assert_eq!(code, 0, "{shown}");
    assert!(!shown.contains("answered on the page"), "{shown}");
    let session = s.sessions().pop().unwrap();
    let decisions = s.of_type(&session, "permission-decision");
    assert_eq!(decisions.len(), 1, "{decisions:#?}");
    assert_eq!(
        (
            decisions[0]["decision"].as_str(),
            decisions[0]["by"].as_str()
        ),
        (Some("deny"), Some("the terminal"))
    );
    assert!(!s.root.join("t.txt").exists());
    for key in ["refused", "after"] {
        let (answer, text, controls) = answer_shown(&seen, key);
        assert_eq!(answer, "deny", "{key}: never the page's own click: {text}");
        assert!(
            text.contains("answered first by the terminal"),
            "{key}: {text}"
        );
        assert_eq!(controls, 0);
    }
    let (answer, text, controls) = answer_shown(&seen, "reopened");
    assert_eq!((answer.as_str(), controls), ("deny", 0), "{text}");
    assert!(text.contains("answered by the terminal"), "{text}");
}
