//! The command line as people and scripts use it: output formats and exit
//! codes, sessions, trace (snapshots of what a person reads), inspection,
//! config, colours, and `hc chat` through a pseudo-terminal.

use crate::common::*;
use crate::terminal::in_terminal;
use serde_json::{Value, json};
use std::process::Stdio;
use std::time::Duration;

fn lines(stdout: &str) -> Vec<Value> {
    stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn stream_json_speaks_the_print_mode_shapes_and_ends_with_the_result() {
    let s = Setup::new(json!({"turns": [
        reply(json!([text("Reading."), call("t1", "read", json!({"file_path": "a.txt"})),
                     call("t2", "glob", json!({"pattern": "*.txt"}))]), "tool_use"),
        reply(json!([text("It says alpha.")]), "end_turn"),
    ]}))
    .await;
    s.file("a.txt", "alpha\n");
    let ran = s
        .run(&[
            "--output-format",
            "stream-json",
            "--include-partial-messages",
            "what is in a.txt",
        ])
        .await;
    assert_eq!(ran.code, 0, "{ran:#?}");
    let all = lines(&ran.stdout);
    let session = s.sessions().pop().unwrap();
    assert!(
        all.iter().all(|l| l["session_id"] == session.as_str()),
        "every line names the session"
    );
    let init = &all[0];
    assert_eq!(
        (init["type"].as_str(), init["subtype"].as_str()),
        (Some("system"), Some("init"))
    );
    assert_eq!(init["model"], model::catalog::DEFAULT_MODEL);
    assert_eq!(init["cwd"], s.root.to_str().unwrap());
    assert_eq!(init["permission_mode"], "default");
    assert_eq!(init["permissionMode"], "default", "print mode's own name");
    let tools: Vec<&str> = init["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    for tool in ["read", "edit", "shell", "grep", "agent"] {
        assert!(tools.contains(&tool), "{tools:?}");
    }
    let of = |t: &str| all.iter().filter(|l| l["type"] == t).collect::<Vec<_>>();
    let assistant = of("assistant");
    assert_eq!(assistant.len(), 2, "one per message");
    assert_eq!(assistant[0]["message"]["role"], "assistant");
    assert_eq!(assistant[0]["message"]["content"][1]["type"], "tool_use");
    assert_eq!(assistant[0]["message"]["content"][1]["name"], "read");
    assert!(assistant[0]["message"]["usage"]["output_tokens"].is_u64());
    let user = of("user");
    assert_eq!(user.len(), 1, "one round's results are one message");
    let ids: Vec<&Value> = user[0]["message"]["content"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| &r["tool_use_id"])
        .collect();
    assert_eq!(ids, [&json!("t1"), &json!("t2")]);
    // ... printed before the next message begins to stream.
    let first_answer = all.iter().position(|l| l["type"] == "assistant").unwrap();
    let user_at = all.iter().position(|l| l["type"] == "user").unwrap();
    let next_stream = (first_answer..all.len())
        .find(|&i| all[i]["type"] == "stream_event")
        .unwrap();
    assert!(first_answer < user_at && user_at < next_stream, "{all:#?}");
    let result = &user[0]["message"]["content"][0];
    assert_eq!(
        (result["type"].as_str(), result["tool_use_id"].as_str()),
        (Some("tool_result"), Some("t1"))
    );
    assert!(
        result["content"].as_str().unwrap().contains("alpha"),
        "{result}"
    );
    let partial = of("stream_event");
    assert!(!partial.is_empty());
    // The API's own stream, message by message, each ended before its
    // assistant line.
    let kinds: Vec<&str> = partial
        .iter()
        .map(|e| e["event"]["type"].as_str().unwrap())
        .collect();
    assert_eq!(kinds[0], "message_start");
    assert_eq!(kinds.iter().filter(|k| **k == "message_start").count(), 2);
    assert_eq!(kinds.iter().filter(|k| **k == "message_stop").count(), 2);
    let tool_start = partial
        .iter()
        .find(|e| e["event"]["content_block"]["type"] == "tool_use")
        .unwrap();
    assert_eq!(tool_start["event"]["content_block"]["name"], "read");
    assert_eq!(tool_start["event"]["content_block"]["id"], "t1");
    let stop_at = all
        .iter()
        .position(|l| l["event"]["type"] == "message_stop")
        .unwrap();
    assert!(stop_at < first_answer, "{all:#?}");
    let ended = all
        .iter()
        .find(|l| l["event"]["type"] == "message_delta")
        .unwrap();
    assert_eq!(ended["event"]["delta"]["stop_reason"], "tool_use");
    let streamed: String = partial
        .iter()
        .filter(|e| e["event"]["delta"]["type"] == "text_delta")
        .map(|e| e["event"]["delta"]["text"].as_str().unwrap())
        .collect();
    assert_eq!(streamed, "Reading.It says alpha.");
    let last = all.last().unwrap();
    assert_eq!(
        (last["type"].as_str(), last["subtype"].as_str()),
        (Some("result"), Some("success"))
    );
    assert_eq!(last["result"], "It says alpha.");
    assert_eq!(last["is_error"], false);
    assert_eq!(last["num_turns"], 2);
    for field in ["duration_ms", "duration_api_ms", "total_cost_usd"] {
        assert!(last[field].is_number(), "{field}: {last}");
    }
    assert!(last["usage"]["output_tokens"].is_u64());
    assert_eq!(last["permission_denials"], json!([]));
    assert!(last["process"].as_str().unwrap().starts_with("p_"));
    let default = model::catalog::DEFAULT_MODEL;
    assert!(last["model_usage"][default]["usage"]["output_tokens"].is_u64());
    let camel = &last["modelUsage"][default];
    assert_eq!(
        camel["outputTokens"], last["usage"]["output_tokens"],
        "{last}"
    );
    assert!(camel["costUSD"].as_f64().unwrap() > 0.0);
    assert_eq!(
        last["trace"]["requests"][1],
        format!("hc trace {session} --request 2")
    );
    assert_eq!(of("result").len(), 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn json_prints_one_object_and_gates_exit_3_with_their_subtype() {
    let s = Setup::new(json!({"turns": [
        reply(json!([call("t1", "glob", json!({"pattern": "*.txt"}))]), "tool_use"),
        reply(json!([call("t2", "glob", json!({"pattern": "*.md"}))]), "tool_use"),
    ]}))
    .await;
    let ran = s
        .run(&["--output-format", "json", "--max-turns", "1", "list files"])
        .await;
    assert_eq!(ran.code, 3, "{ran:#?}");
    let all = lines(&ran.stdout);
    assert_eq!(all.len(), 1, "{}", ran.stdout);
    assert_eq!(all[0]["type"], "result");
    assert_eq!(all[0]["subtype"], "error_max_turns");
    assert_eq!(all[0]["is_error"], true);
    // The budget's gate: its own subtype.
    let ran = s
        .run(&[
            "--output-format",
            "json",
            "--max-budget-usd",
            "0.000001",
            "more",
        ])
        .await;
    assert_eq!(ran.code, 3, "{ran:#?}");
    let all = lines(&ran.stdout);
    assert_eq!(all.len(), 1, "{}", ran.stdout);
    assert_eq!(all[0]["subtype"], "error_max_budget_usd");
    assert_eq!(all[0]["is_error"], true);
}

#[tokio::test(flavor = "multi_thread")]
async fn exit_codes_say_usage_error_and_run_error() {
    let s = Setup::new(json!({"turns": [
        {"error": {"status": 400, "type": "invalid_request_error", "message": "bad request"}},
    ]}))
    .await;
    let empty = s.run(&["   "]).await;
    assert_eq!(empty.code, 2, "{empty:#?}");
    assert!(empty.stderr.contains("prompt is empty"), "{}", empty.stderr);
    let bad_flag = s.run(&["--output-format", "yaml", "x"]).await;
    assert_eq!(bad_flag.code, 2, "{bad_flag:#?}");
    let no_pin = s.run(&["--context", "nope", "x"]).await;
    assert_eq!(no_pin.code, 2, "{no_pin:#?}");
    assert!(s.sessions().is_empty(), "no session left behind");
    let bad_mode = s.run(&["--permission-mode", "yolo", "x"]).await;
    assert_eq!(bad_mode.code, 2, "{bad_mode:#?}");
    assert!(
        bad_mode.stderr.contains("accept-edits"),
        "{}",
        bad_mode.stderr
    );
    let no_session = s.run(&["--resume", "s_nope", "x"]).await;
    assert_eq!(no_session.code, 2, "{no_session:#?}");
    assert!(
        no_session.stderr.contains("hc sessions"),
        "{}",
        no_session.stderr
    );
    let early = s
        .run(&["--output-format", "stream-json", "--resume", "s_nope", "x"])
        .await;
    assert_eq!(early.code, 2, "{early:#?}");
    let result = &lines(&early.stdout)[0];
    assert_eq!(
        (result["type"].as_str(), result["is_error"].as_bool()),
        (Some("result"), Some(true))
    );
    assert!(
        result["error"].as_str().unwrap().contains("hc sessions"),
        "{result}"
    );
    let empty_json = s.run(&["--output-format", "json", ""]).await;
    assert_eq!(empty_json.code, 2, "{empty_json:#?}");
    assert_eq!(lines(&empty_json.stdout)[0]["exit_code"], 2);
    let failed = s.run(&["--output-format", "json", "go"]).await;
    assert_eq!(failed.code, 1, "{failed:#?}");
    let result = &lines(&failed.stdout)[0];
    assert_eq!(result["subtype"], "error_during_execution");
    assert!(
        result["error"].as_str().unwrap().contains("bad request"),
        "{result}"
    );
    let help = s.out(&["run", "--help"]).await;
    assert!(
        help.stdout.contains("130 interrupted") && help.stdout.contains("3 stopped by a gate"),
        "{}",
        help.stdout
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn every_command_has_help_with_examples() {
    let s = Setup::new(json!({"turns": [reply(json!([text("unused")]), "end_turn")]})).await;
    for command in [
        "", "run", "chat", "sessions", "trace", "scope", "log", "ps", "programs", "commit",
        "config", "serve",
    ] {
        let args: Vec<&str> = [command, "--help"]
            .into_iter()
            .filter(|a| !a.is_empty())
            .collect();
        let help = s.out(&args).await;
        assert_eq!(help.code, 0, "{command}: {help:#?}");
        assert!(
            help.stdout.contains("Example"),
            "hc {command} --help has no example:\n{}",
            help.stdout
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn sessions_list_title_turns_cost_status_and_ids_resolve_by_prefix() {
    let s = Setup::new(json!({"turns": [
        reply(json!([text("one")]), "end_turn"),
        reply(json!([text("two")]), "end_turn"),
    ]}))
    .await;
    assert_eq!(s.run(&["first task\nwith more lines"]).await.code, 0);
    assert_eq!(s.run(&["second task"]).await.code, 0);
    let listed = s.out(&["sessions", "--json"]).await;
    let rows: Vec<Value> = serde_json::from_str(&listed.stdout).unwrap();
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[0]["title"], "second task", "newest first");
    assert_eq!(rows[1]["title"], "first task");
    for row in &rows {
        assert_eq!(row["turns"], 1);
        assert_eq!(row["status"], "done");
        assert!(row["cost_usd"].as_f64().unwrap() > 0.0);
        assert!(humantime::parse_rfc3339(row["created"].as_str().unwrap()).is_ok());
    }
    let table = s.out(&["sessions"]).await;
    let newest = table.stdout.lines().nth(1).unwrap();
    assert!(
        newest.contains("second task") && newest.contains("done"),
        "{}",
        table.stdout
    );
    let short = newest.split_whitespace().next().unwrap();
    let id = rows[0]["id"].as_str().unwrap();
    assert!(
        id.starts_with(short) && short.len() < id.len(),
        "{short} of {id}"
    );
    let traced = s.out(&["trace", short]).await;
    assert_eq!(traced.code, 0, "{traced:#?}");
    assert!(traced.stdout.contains(id), "{}", traced.stdout);
    // A reader that goes away (`hc sessions | head -0`) ends it quietly.
    let mut gone = s.hc(&["sessions"]);
    gone.stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = gone.spawn().unwrap();
    drop(child.stdout.take());
    let quiet = child.wait_with_output().await.unwrap();
    assert!(
        !String::from_utf8_lossy(&quiet.stderr).contains("panicked"),
        "{quiet:?}"
    );
    let scoped = s.out(&["scope", short]).await;
    assert_eq!(scoped.code, 0, "{scoped:#?}");
    assert!(scoped.stdout.contains(id), "{}", scoped.stdout);
    let ambiguous = s.out(&["trace", "s_"]).await;
    assert_eq!(ambiguous.code, 2);
    assert!(
        ambiguous.stderr.contains("2 sessions"),
        "{}",
        ambiguous.stderr
    );
}

/// A session with a sub-agent, a denied call, and — on a second run —
/// a compaction.
async fn eventful() -> (Setup, String) {
    let s = Setup::new(eventful_script()).await;
    let first = s.run(&["--allow", "agent", "ROOT tidy up"]).await;
    assert_eq!(first.code, 0, "{first:#?}");
    let second = s.run(&["--continue", "--compact", "LATER go on"]).await;
    assert_eq!(second.code, 0, "{second:#?}");
    let session = s.sessions().pop().unwrap();
    (s, session)
}

#[tokio::test(flavor = "multi_thread")]
async fn trace_shows_sub_agents_denials_and_compactions() {
    let (s, session) = eventful().await;
    let traced = s.out(&["trace", &session]).await;
    assert_eq!(traced.code, 0, "{traced:#?}");
    let shown = &traced.stdout;
    assert!(!shown.contains('\x1b'), "no colours when not a terminal");
    let mut settings = insta::Settings::clone_current();
    settings.add_filter(r"\b([spc])_[0-9A-Z]{20,}\b", "[${1}_ID]");
    settings.add_filter(r"\d{4}-\d\d-\d\dT[0-9:.]+Z", "[TIME]");
    settings.add_filter(r"\d{4}-\d\d-\d\d", "[DATE]");
    settings.add_filter(r"\d+ ms", "[N] ms");
    settings.add_filter(r"\d+\.\d s", "[N.N] s");
    settings.add_filter(r"as of commit \d+", "as of commit [N]");
    settings.bind(|| insta::assert_snapshot!("trace_eventful", shown));
    let json = s.out(&["trace", &session, "--json"]).await;
    let tree: Value = serde_json::from_str(&json.stdout).unwrap();
    let items = tree["items"].as_array().unwrap();
    let sub = items
        .iter()
        .find(|n| n["type"] == "tool-call" && n["program"] == "agent")
        .unwrap();
    let child = sub["children"].as_array().unwrap();
    assert!(
        child
            .iter()
            .any(|n| n["type"] == "answer" && n["text"] == "There are 2."),
        "{sub:#}"
    );
    let denied = items
        .iter()
        .find(|n| n["type"] == "tool-call" && n["program"] == "shell")
        .unwrap();
    assert_eq!(denied["result"]["is_error"], true);
    assert!(items.iter().any(|n| n["type"] == "compaction"));
    let full = s.out(&["trace", &session, "--full"]).await;
    assert_eq!(full.code, 0, "{full:#?}");
    assert!(full.stdout.lines().count() >= shown.lines().count());
    // The denial's whole message, which the plain tree cuts to a line.
    assert!(!shown.contains("config.toml"), "{shown}");
    assert!(full.stdout.contains("config.toml"), "{}", full.stdout);
}

#[tokio::test(flavor = "multi_thread")]
async fn trace_request_is_the_body_sent_and_diff_shows_what_a_call_added() {
    let (s, session) = eventful().await;
    let sent = s.sent();
    // The session's own calls, in order, the summary call (the fifth
    // sent) among them: not the sub-agent's (the second sent), which its
    // own process numbers.
    let own: Vec<&Vec<u8>> = sent
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != 1)
        .map(|(_, b)| b)
        .collect();
    assert_eq!(own.len(), 5);
    for (n, body) in own.iter().enumerate() {
        assert!(
            s.rebuilt(&session, n + 1).await == **body,
            "call {} rebuilt byte for byte",
            n + 1
        );
    }
    let diff = s.out(&["trace", &session, "--diff", "2"]).await;
    assert_eq!(diff.code, 0, "{diff:#?}");
    assert!(
        diff.stdout.contains("--- request 1") && diff.stdout.contains("+++ request 2"),
        "{}",
        diff.stdout
    );
    assert!(
        diff.stdout
            .lines()
            .any(|l| l.starts_with('+') && l.contains("There are 2.")),
        "{}",
        diff.stdout
    );
    // A sub-agent is a session of its own: traced and rebuilt by its process.
    let tree: Value =
        serde_json::from_str(&s.out(&["trace", &session, "--json"]).await.stdout).unwrap();
    let child = tree["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["type"] == "tool-call" && n["program"] == "agent")
        .unwrap()["process"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        s.rebuilt(&child, 1).await == sent[1],
        "the sub-agent's call rebuilt byte for byte"
    );
    let shown = s.out(&["trace", &child[..12]]).await;
    assert_eq!(shown.code, 0, "{shown:#?}");
    assert!(
        shown.stdout.contains("› prompt CHILD count files"),
        "{}",
        shown.stdout
    );
    let beyond = s.out(&["trace", &session, "--request", "99"]).await;
    assert_ne!(beyond.code, 0);
    assert!(!beyond.stderr.is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn inspection_commands_read_and_write_the_substrate() {
    let s = Setup::new(json!({"turns": [reply(json!([text("hi")]), "end_turn")]})).await;
    let record = s
        .commit(json!({"chunks": [{"id": "note1", "name": "a note", "body": {"text": "remember the milk"}}]}))
        .await;
    assert!(
        record["created"]
            .as_array()
            .unwrap()
            .contains(&json!("note1"))
    );
    let read = s.out(&["scope", "note1", "--json"]).await;
    let read: Value = serde_json::from_str(&read.stdout).unwrap();
    assert_eq!(read["scopes"][0]["body"]["text"], "remember the milk");
    let found = s.out(&["scope", "--match", "milk"]).await;
    assert!(found.stdout.contains("note1"), "{}", found.stdout);
    let log = s.out(&["log", "--json"]).await;
    let log: Vec<Value> = serde_json::from_str(&log.stdout).unwrap();
    assert_eq!(log[0]["id"], record["id"], "newest first");
    assert_eq!(log[0]["by"], "host");
    let bad = s.out(&["commit", "/no/such/file.json"]).await;
    assert_eq!(bad.code, 1);
    let ps = s.out(&["ps"]).await;
    assert_eq!(ps.stdout.trim(), "no process is running");
    let programs = s.out(&["programs", "--json"]).await;
    let programs: Vec<Value> = serde_json::from_str(&programs.stdout).unwrap();
    let read = programs.iter().find(|p| p["name"] == "read").unwrap();
    assert_eq!(read["concurrency_safe"], true);
    assert!(read["description"].as_str().unwrap().len() > 20);
    let shell = programs.iter().find(|p| p["name"] == "shell").unwrap();
    assert_eq!(shell["concurrency_safe"], false);
    let text = s.out(&["programs"]).await;
    assert!(text.stdout.contains("runs alongside"), "{}", text.stdout);
}

#[tokio::test(flavor = "multi_thread")]
async fn no_color_and_pipes_get_no_escape_codes() {
    let s = Setup::new(json!({"turns": [
        reply(json!([call("t1", "glob", json!({"pattern": "*"}))]), "tool_use"),
        reply(json!([text("done")]), "end_turn"),
    ]}))
    .await;
    let piped = s.run(&["--permission-mode", "bypass", "look"]).await;
    assert_eq!(piped.code, 0, "{piped:#?}");
    assert!(
        !piped.stdout.contains('\x1b') && !piped.stderr.contains('\x1b'),
        "{piped:#?}"
    );
    let session = s.sessions().pop().unwrap();
    for args in [
        vec!["sessions"],
        vec!["trace", &session],
        vec!["programs"],
        vec!["log"],
    ] {
        let ran = s.out(&args).await;
        assert!(
            !ran.stdout.contains('\x1b'),
            "hc {args:?} piped: {}",
            ran.stdout
        );
        let (_, coloured) = in_terminal(&s, &args.join(" "), &[], vec![]).await;
        assert!(
            coloured.contains("\x1b["),
            "hc {args:?} on a terminal has colours: {coloured}"
        );
        let (_, plain) = in_terminal(&s, &args.join(" "), &[("NO_COLOR", "1")], vec![]).await;
        assert!(
            !plain.contains('\x1b'),
            "hc {args:?} with NO_COLOR: {plain:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn the_result_lists_denials_as_print_mode_does() {
    let s = Setup::new(json!({"turns": [
        reply(json!([call("t1", "shell", json!({"command": "git push"}))]), "tool_use"),
        reply(json!([text("I was not allowed.")]), "end_turn"),
    ]}))
    .await;
    let ran = s.run(&["--output-format", "json", "push it"]).await;
    assert_eq!(ran.code, 0, "{ran:#?}");
    let result = &lines(&ran.stdout)[0];
    let denials = result["permission_denials"].as_array().unwrap();
    assert_eq!(denials.len(), 1, "{result:#}");
    assert_eq!(denials[0]["tool_name"], "shell");
    assert_eq!(denials[0]["tool_use_id"], "t1");
    assert_eq!(denials[0]["tool_input"]["command"], "git push");
    assert!(denials[0]["reason"].as_str().unwrap().contains("--allow"));
}

#[tokio::test(flavor = "multi_thread")]
async fn stream_json_names_the_call_a_sub_agent_answers_under() {
    let s = Setup::new(json!({"turns": [
        reply(json!([call("spawn1", "agent", json!({"text": "CHILD look", "description": "look"}))]), "tool_use"),
        reply(json!([call("g1", "glob", json!({"pattern": "*"}))]), "tool_use"),
        reply(json!([text("child saw files")]), "end_turn"),
        reply(json!([text("root done")]), "end_turn"),
    ]}))
    .await;
    let ran = s
        .run(&[
            "--output-format",
            "stream-json",
            "--permission-mode",
            "bypass",
            "ROOT",
        ])
        .await;
    assert_eq!(ran.code, 0, "{ran:#?}");
    let all = lines(&ran.stdout);
    let under = |parent: Option<&str>, ty: &str| {
        all.iter()
            .filter(|l| l["type"] == ty && l["parent_tool_use_id"].as_str() == parent)
            .count()
    };
    assert_eq!(
        under(None, "assistant"),
        2,
        "the root's answers: {}",
        ran.stdout
    );
    assert_eq!(
        under(Some("spawn1"), "assistant"),
        2,
        "the child's: {}",
        ran.stdout
    );
    assert_eq!(
        under(Some("spawn1"), "user"),
        1,
        "the child's glob result: {}",
        ran.stdout
    );
    assert_eq!(
        under(None, "user"),
        1,
        "the child's answer as the root's result"
    );
    let result = all.last().unwrap();
    assert_eq!(
        result["sub_agents"].as_array().unwrap().len(),
        1,
        "{result:#}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn ps_shows_a_running_tree() {
    let s = Setup::new(json!({"turns": [
        reply(json!([call("t1", "shell", json!({"command": "sleep 2"}))]), "tool_use"),
        reply(json!([text("slept")]), "end_turn"),
    ]}))
    .await;
    let mut run = s
        .hc(&["run", "--permission-mode", "bypass", "nap"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    let listed = loop {
        let ps = s.out(&["ps", "--json"]).await;
        let list: Vec<Value> = serde_json::from_str(&ps.stdout).unwrap();
        if list.iter().any(|p| p["program"] == "shell") {
            break list;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "shell never showed in hc ps"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let agent = listed.iter().find(|p| p["program"] == "agent").unwrap();
    let shell = listed.iter().find(|p| p["program"] == "shell").unwrap();
    assert_eq!(shell["parent"], agent["id"], "{listed:#?}");
    assert!(shell["pid"].is_i64());
    let tree = s.out(&["ps"]).await.stdout;
    let agent_line = tree.lines().position(|l| l.starts_with("agent")).unwrap();
    assert!(
        tree.lines()
            .nth(agent_line + 1)
            .unwrap()
            .starts_with("  shell"),
        "{tree}"
    );
    let ended = tokio::time::timeout(Duration::from_secs(60), run.wait()).await;
    assert!(ended.unwrap().unwrap().success());
    assert_eq!(s.out(&["ps"]).await.stdout.trim(), "no process is running");
}

#[tokio::test(flavor = "multi_thread")]
async fn text_mode_shows_each_call_and_an_edit_as_a_diff() {
    let s = Setup::new(json!({"turns": [
        reply(json!([call("t1", "read", json!({"file_path": "a.txt"}))]), "tool_use"),
        reply(json!([call("t2", "edit", json!({"file_path": "a.txt", "old_string": "alpha", "new_string": "beta\ngamma"}))]), "tool_use"),
        reply(json!([text("Edited.")]), "end_turn"),
    ]}))
    .await;
    s.file("a.txt", "alpha\n");
    let ran = s
        .run(&["--permission-mode", "accept-edits", "change it"])
        .await;
    assert_eq!(ran.code, 0, "{ran:#?}");
    assert_eq!(ran.stdout.trim(), "Edited.");
    let lines: Vec<&str> = ran.stderr.lines().map(str::trim).collect();
    assert!(lines.contains(&"✓ read a.txt"), "{}", ran.stderr);
    let edit = lines.iter().position(|l| *l == "✓ edit a.txt").unwrap();
    assert_eq!(
        lines[edit + 1..edit + 4],
        ["- alpha", "+ beta", "+ gamma"],
        "{}",
        ran.stderr
    );
    assert!(
        lines.last().unwrap().starts_with("— 3 turns"),
        "{}",
        ran.stderr
    );
}
