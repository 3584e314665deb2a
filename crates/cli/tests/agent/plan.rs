//! Plan mode as Claude Code's users expect it, a permission prompt that
//! asks again after a typo, and images: `--image`, a path in a chat
//! message, and `read` of an image file.

use crate::common::*;
use crate::terminal::{Ready, always, in_terminal, runs_ended};
use serde_json::{Value, json};

const PLAN: &str = "1. Change `-` to `+` in calc.py\n2. Run the tests";

/// Once the newest session has a chunk of type `ty`.
fn has(ty: &'static str, n: usize) -> Ready {
    Box::new(move |s: &Setup| {
        s.sessions()
            .last()
            .is_some_and(|id| s.of_type(id, ty).len() >= n)
    })
}

/// The agent-config bodies of the project's runs, in order.
fn configs(s: &Setup) -> Vec<Value> {
    instances(s, "agent-config")
        .iter()
        .map(|c| c.body_value())
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn without_a_terminal_the_plan_is_the_result() {
    let s = Setup::new(json!({"turns": [
        reply(json!([text("Looking first."), call("r1", "read", json!({"file_path": "calc.py"}))]), "tool_use"),
        reply(json!([call("p1", "exit_plan", json!({"plan": PLAN}))]), "tool_use"),
        reply(json!([text("never asked")]), "end_turn"),
    ]}))
    .await;
    s.file("calc.py", "def add(a, b):\n    return a - b\n");
    let ran = s.run(&["--permission-mode", "plan", "fix add"]).await;
    assert_eq!(ran.code, 0, "{ran:#?}");
    assert!(
        ran.stdout.contains(PLAN),
        "the plan printed: {}",
        ran.stdout
    );
    assert_eq!(s.sent().len(), 2, "the run ended with the plan");
    let sent: Value = serde_json::from_slice(&s.sent()[0]).unwrap();
    let tools: Vec<&str> = (sent["tools"].as_array().unwrap().iter())
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert!(tools.contains(&"exit_plan"), "{tools:?}");
    let session = s.sessions().pop().unwrap();
    let plans = s.of_type(&session, "plan");
    assert_eq!(plans[0]["text"], PLAN);
    assert_eq!(plans[0]["ask"], false);
    let traced = s.out(&["trace", "--full"]).await;
    assert!(
        traced.stdout.contains("◆ plan (the run's result)"),
        "{}",
        traced.stdout
    );
    // As JSON, the result is the plan.
    let j = Setup::new(json!({"turns": [
        reply(json!([call("p1", "exit_plan", json!({"plan": PLAN}))]), "tool_use"),
    ]}))
    .await;
    let ran = j
        .run(&[
            "--permission-mode",
            "plan",
            "--output-format",
            "json",
            "fix add",
        ])
        .await;
    assert_eq!(ran.code, 0, "{ran:#?}");
    let result: Value = serde_json::from_str(ran.stdout.trim()).unwrap();
    assert_eq!(result["result"], PLAN, "{result:#}");
    assert_eq!(result["is_error"], false);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_plan_approved_on_the_terminal_goes_on_in_the_mode_chosen() {
    let s = Setup::new(json!({"turns": [
        reply(json!([call("p1", "exit_plan", json!({"plan": PLAN}))]), "tool_use"),
        reply(json!([call("w1", "write", json!({"file_path": "done.txt", "content": "planned\n"}))]), "tool_use"),
        reply(json!([text("Carried out.")]), "end_turn"),
    ]}))
    .await;
    let (code, shown) = in_terminal(
        &s,
        "run --permission-mode plan 'fix add'",
        &[],
        vec![(has("plan", 1), b"a\r")],
    )
    .await;
    assert_eq!(code, 0, "{shown}");
    assert!(shown.contains("approve the plan?"), "{shown}");
    assert_eq!(
        std::fs::read_to_string(s.root.join("done.txt")).unwrap(),
        "planned\n",
        "accept-edits: the write ran without asking: {shown}"
    );
    let session = s.sessions().pop().unwrap();
    assert!(s.of_type(&session, "permission-request").is_empty());
    let answers = s.of_type(&session, "user-answer");
    assert_eq!(answers[0]["text"], "accept-edits");
    let results = s.of_type(&session, "tool-result");
    assert!(
        results[0]["text"].as_str().unwrap().contains("approved"),
        "{results:#?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn feedback_on_a_plan_goes_to_the_model_and_it_plans_again() {
    let s = Setup::new(json!({"turns": [
        reply(json!([call("p1", "exit_plan", json!({"plan": PLAN}))]), "tool_use"),
        reply(json!([call("p2", "exit_plan", json!({"plan": "Use a dict instead."}))]), "tool_use"),
        reply(json!([text("Done.")]), "end_turn"),
    ]}))
    .await;
    let (code, shown) = in_terminal(
        &s,
        "run --permission-mode plan 'fix add'",
        &[],
        vec![
            (has("plan", 1), b"maybe use a dict\r"),
            (has("plan", 2), b"y\r"),
        ],
    )
    .await;
    assert_eq!(code, 0, "{shown}");
    let second: Value = serde_json::from_slice(&s.sent()[1]).unwrap();
    let said = second.to_string();
    assert!(
        said.contains("maybe use a dict"),
        "the feedback went to the model: {said}"
    );
    let session = s.sessions().pop().unwrap();
    let results = s.of_type(&session, "tool-result");
    assert_eq!(results[0]["is_error"], true);
    assert_eq!(results[1]["is_error"], false);
}

#[tokio::test(flavor = "multi_thread")]
async fn chat_toggles_plan_mode_with_slash_plan_and_shift_tab() {
    let s =
        Setup::new(json!({"cycle": true, "turns": [reply(json!([text("Noted.")]), "end_turn")]}))
            .await;
    let (code, shown) = in_terminal(
        &s,
        "chat",
        &[],
        vec![
            (always(), b"/plan\r"),
            (always(), b"first\r"),
            (runs_ended(1), b"\x1b[Z"),
            (always(), b"second\r"),
            (runs_ended(2), b"\x03"),
            (always(), b"\x03"),
        ],
    )
    .await;
    assert_eq!(code, 0, "{shown}");
    assert!(shown.contains("plan mode on"), "{shown}");
    assert!(shown.contains("plan mode off"), "{shown}");
    let modes: Vec<Value> = configs(&s)
        .iter()
        .map(|c| c["permission_mode"].clone())
        .collect();
    assert_eq!(modes, [json!("plan"), json!("default")], "{shown}");
    let tools = |n: usize| -> Vec<String> {
        let body: Value = serde_json::from_slice(&s.sent()[n]).unwrap();
        (body["tools"].as_array().unwrap().iter())
            .filter_map(|t| t["name"].as_str().map(str::to_owned))
            .collect()
    };
    assert!(tools(0).contains(&"exit_plan".to_owned()));
    assert!(!tools(1).contains(&"exit_plan".to_owned()));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_typo_at_a_permission_prompt_is_asked_again() {
    let s = Setup::new(json!({"turns": [
        reply(json!([call("w1", "write", json!({"file_path": "out.txt", "content": "yes\n"}))]), "tool_use"),
        reply(json!([text("Written.")]), "end_turn"),
    ]}))
    .await;
    let (code, shown) = in_terminal(
        &s,
        "run 'write it'",
        &[],
        vec![
            (has("permission-request", 1), b"maybe\r"),
            (always(), b"y\r"),
        ],
    )
    .await;
    assert_eq!(code, 0, "{shown}");
    assert!(shown.contains("`maybe` is not an answer"), "{shown}");
    assert_eq!(
        std::fs::read_to_string(s.root.join("out.txt")).unwrap(),
        "yes\n"
    );
}

/// A one-pixel PNG.
pub const PNG: &[u8] = &[
    0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 0x0d, 0x49, 0x48, 0x44, 0x52, 0, 0, 0,
    1, 0, 0, 0, 1, 8, 6, 0, 0, 0, 0x1f, 0x15, 0xc4, 0x89, 0, 0, 0, 0x0d, 0x49, 0x44, 0x41, 0x54,
    0x78, 0x9c, 0x63, 0xf8, 0x0f, 0x00, 0x00, 0x01, 0x01, 0x00, 0x05, 0x18, 0xd8, 0x4d, 0, 0, 0, 0,
    0x49, 0x45, 0x4e, 0x44, 0xae, 0x42, 0x60, 0x82,
];

/// The image blocks anywhere in a request.
fn images_in(body: &Value) -> Vec<Value> {
    let mut out = Vec::new();
    let mut stack = vec![body.clone()];
    while let Some(v) = stack.pop() {
        match v {
            Value::Object(m) if m.get("type") == Some(&json!("image")) => {
                out.push(Value::Object(m))
            }
            Value::Object(m) => stack.extend(m.into_values()),
            Value::Array(a) => stack.extend(a),
            _ => {}
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread")]
async fn images_go_with_a_prompt_and_a_read_and_bad_ones_are_refused() {
    use base64::Engine as _;
    let s = Setup::new(json!({"cycle": true, "turns": [
        when("what is wrong", json!([call("r1", "read", json!({"file_path": "shot.png"}))]), "tool_use"),
        when("r1", json!([text("A pixel.")]), "end_turn"),
    ]}))
    .await;
    std::fs::write(s.root.join("shot.png"), PNG).unwrap();
    let ran = s.run(&["--image", "shot.png", "what is wrong here?"]).await;
    assert_eq!(ran.code, 0, "{ran:#?}");
    let data = base64::engine::general_purpose::STANDARD.encode(PNG);
    let first: Value = serde_json::from_slice(&s.sent()[0]).unwrap();
    let content = &first["messages"][0]["content"];
    assert_eq!(content[0]["type"], "image", "{content:#}");
    assert_eq!(content[0]["source"]["media_type"], "image/png");
    assert_eq!(content[0]["source"]["data"], data);
    assert_eq!(content[1]["text"], "what is wrong here?");
    // The read returned the image as an image the model sees.
    let second: Value = serde_json::from_slice(&s.sent()[1]).unwrap();
    assert_eq!(
        images_in(&second).len(),
        2,
        "the prompt's and the read's: {second:#}"
    );
    // Rebuilt byte for byte, images included.
    let session = s.sessions().pop().unwrap();
    assert!(s.rebuilt(&session, 2).await == s.sent()[1]);
    // Bad images: exit 2, said, nothing sent.
    s.file("notes.png", "not a picture");
    let bad = s.run(&["--image", "notes.png", "look"]).await;
    assert_eq!(bad.code, 2, "{bad:#?}");
    assert!(
        bad.stderr.contains("PNG, JPEG, GIF or WebP"),
        "{}",
        bad.stderr
    );
    std::fs::write(s.root.join("huge.png"), vec![0u8; 4 * 1024 * 1024]).unwrap();
    let big = s.run(&["--image", "huge.png", "look"]).await;
    assert_eq!(big.code, 2, "{big:#?}");
    assert!(big.stderr.contains("at most 3.75 MB"), "{}", big.stderr);
    let missing = s.run(&["--image", "nope.png", "look"]).await;
    assert_eq!(missing.code, 2);
    assert!(
        missing.stderr.contains("nope.png does not exist"),
        "{}",
        missing.stderr
    );
    assert_eq!(s.sent().len(), 2, "no bad image reached the model");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_path_pasted_in_chat_sends_the_image() {
    let s = Setup::new(
        json!({"cycle": true, "turns": [reply(json!([text("I see it.")]), "end_turn")]}),
    )
    .await;
    std::fs::write(s.root.join("my shot.png"), PNG).unwrap();
    let (code, shown) = in_terminal(
        &s,
        "chat",
        &[],
        vec![
            (always(), b"what is this? my\\ shot.png\r"),
            (runs_ended(1), b"\x03"),
            (always(), b"\x03"),
        ],
    )
    .await;
    assert_eq!(code, 0, "{shown}");
    let first: Value = serde_json::from_slice(&s.sent()[0]).unwrap();
    assert_eq!(images_in(&first).len(), 1, "{first:#}");
}

/// A plan approved in one run of a chat does not end plan mode when it is
/// turned on again later: only a plan approved in the run just ended does.
#[tokio::test(flavor = "multi_thread")]
async fn an_earlier_runs_approved_plan_does_not_end_plan_mode_again() {
    let s = Setup::new(json!({"turns": [
        reply(json!([call("p1", "exit_plan", json!({"plan": PLAN}))]), "tool_use"),
        reply(json!([text("Done.")]), "end_turn"),
        reply(json!([text("Noted.")]), "end_turn"),
        reply(json!([text("Noted again.")]), "end_turn"),
    ]}))
    .await;
    let (code, shown) = in_terminal(
        &s,
        "chat",
        &[],
        vec![
            (always(), b"/plan\r"),
            (always(), b"first\r"),
            (has("plan", 1), b"y\r"),
            (runs_ended(1), b"/plan\r"),
            (always(), b"second\r"),
            (runs_ended(2), b"third\r"),
            (runs_ended(3), b"\x03"),
            (always(), b"\x03"),
        ],
    )
    .await;
    assert_eq!(code, 0, "{shown}");
    let modes: Vec<Value> = configs(&s)
        .iter()
        .map(|c| c["permission_mode"].clone())
        .collect();
    assert_eq!(
        modes,
        [json!("plan"), json!("plan"), json!("plan")],
        "{shown}"
    );
}

/// Once a plan is approved, the run goes on in the mode chosen all the
/// way down: a sub-agent it starts after is in that mode, not in plan mode.
#[tokio::test(flavor = "multi_thread")]
async fn a_sub_agent_started_after_the_plan_is_approved_is_in_the_mode_chosen() {
    let s = Setup::new(json!({"turns": [
        reply(json!([call("p1", "exit_plan", json!({"plan": PLAN}))]), "tool_use"),
        reply(json!([call("a1", "agent", json!({"text": "carry out step 1"}))]), "tool_use"),
        reply(json!([text("step 1 done")]), "end_turn"),
        reply(json!([text("Carried out.")]), "end_turn"),
    ]}))
    .await;
    let (code, shown) = in_terminal(
        &s,
        "run --permission-mode plan 'fix add'",
        &[],
        vec![(has("plan", 1), b"y\r")],
    )
    .await;
    assert_eq!(code, 0, "{shown}");
    let modes: Vec<Value> = configs(&s)
        .iter()
        .map(|c| c["permission_mode"].clone())
        .collect();
    assert_eq!(modes, [json!("plan"), json!("default")], "{shown}");
}
