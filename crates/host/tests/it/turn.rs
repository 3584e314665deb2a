//! `hc_host::turn::turn` at its own API, once for each answerer the host
//! crate has or a front end could give it: a real project and SQLite
//! file, the built-ins run contained (through this crate's
//! `hc-host-test`, as `hc` runs them), the testkit's fake model on
//! 127.0.0.1. What the sink is shown and the run's end are checked, and
//! what the tool did on the disk.

use agent::contract::{Answer, Choice, Entry, Notice, PermissionDecision, RunStop, ToolResult};
use hc_host::follow::answers::commit_on;
use hc_host::follow::{Answerer, Answering, Asked, Begun, Ended, Nobody, Outcome, Question, Sink};
use hc_host::open::{Find, Host, Staged};
use hc_host::sessions::Choice as Session;
use hc_host::turn::{Finished, Turn};
use serde_json::{Value, json};
use std::future::Future;
use std::path::Path;
use std::pin::Pin;
use std::time::Instant;
use testkit::{FakeModel, Script};

const EXE: &str = env!("CARGO_BIN_EXE_hc-host-test");

/// What a sink was shown, kept to be checked.
#[derive(Default)]
struct Kept {
    began: Option<(String, String)>,
    tools_started: Vec<String>,
    tools_denied: Vec<bool>,
    text: String,
    results: Vec<ToolResult>,
    answers: Vec<String>,
    ended: Option<(Option<RunStop>, usize)>,
}

impl Sink for Kept {
    fn begin(&mut self, run: &Begun<'_>) -> anyhow::Result<()> {
        self.began = Some((run.session.to_owned(), run.process.to_owned()));
        Ok(())
    }

    fn notice(&mut self, notice: &Notice) {
        match notice {
            Notice::ToolStart { program, .. } => self.tools_started.push(program.clone()),
            Notice::ToolEnd { denied, .. } => self.tools_denied.push(*denied),
            Notice::TextDelta { text, .. } => self.text.push_str(text),
            _ => {}
        }
    }

    fn wants_answers(&self) -> bool {
        true
    }

    fn wants_results(&self) -> bool {
        true
    }

    fn answer(&mut self, answer: &Answer, _parent: Option<&str>) {
        self.answers.push(answer.text.clone());
    }

    fn results(&mut self, results: &[ToolResult], _parent: Option<&str>) {
        self.results.extend(results.iter().cloned());
    }

    fn ended(&mut self, ended: &Ended<'_>) -> anyhow::Result<()> {
        let totals = &ended.body.totals;
        self.ended = Some((totals.stop_reason, totals.permission_denials.len()));
        Ok(())
    }
}

/// Allows every call it is asked about, as a person would.
struct Allows;

impl Answerer for Allows {
    fn takes_questions(&self) -> bool {
        true
    }

    fn answer<'a>(&'a self, asked: Asked<'a>, question: Question) -> Answering<'a> {
        if let Question::Permission(request) = question {
            let decision = PermissionDecision {
                request: asked.id.to_owned(),
                decision: Choice::Allow,
                rule: Some(request.rule),
                by: Some("the test".into()),
                ..PermissionDecision::default()
            };
            commit_on(asked.engine, asked.on, Entry::of(&decision)).unwrap();
        }
        Box::pin(async { Outcome::Done })
    }
}

/// Interrupts the run as soon as it is followed (as the SDK's interrupt
/// or a Ctrl-C would).
struct Interrupts;

impl Answerer for Interrupts {
    fn takes_questions(&self) -> bool {
        false
    }

    fn interrupts(&self) -> Pin<Box<dyn Future<Output = ()> + Send + '_>> {
        Box::pin(async {})
    }

    fn answer<'a>(&'a self, _asked: Asked<'a>, _question: Question) -> Answering<'a> {
        Box::pin(async { Outcome::Done })
    }
}

fn reply(content: Value, stop: &str) -> Value {
    json!({"reply": {"content": content, "stop_reason": stop,
        "usage": {"input_tokens": 100, "output_tokens": 10}}})
}

fn call(name: &str, input: Value) -> Value {
    json!({"type": "tool_use", "id": "t1", "name": name, "input": input})
}

fn text(t: &str) -> Value {
    json!({"type": "text", "text": t})
}

/// A project in a fresh directory, its host open with the built-ins of
/// `hc-host-test` and the agent pointed at `fake`.
fn open(dir: &Path, fake: &FakeModel) -> Host {
    let staged = Staged::at(dir, Find::OrInit, hc_host::trust::Ask::Never).unwrap();
    let mut prepared = staged.prepare(false).unwrap();
    let exe = std::path::PathBuf::from(EXE);
    prepared.config.builtin_exe = exe.clone();
    prepared.config.containment = contain::Containment::On {
        exe: exe.clone(),
        args: vec!["__contain".into()],
    };
    prepared.config.zygote = Some((exe, vec!["__contain".into()]));
    // (after the MCP servers' registration, which sets what they get)
    let mut prepared = prepared.register(&Default::default(), false).unwrap();
    prepared.config.env_values.insert(
        "program/agent".into(),
        vec![
            ("ANTHROPIC_BASE_URL".into(), fake.base_url()),
            ("ANTHROPIC_API_KEY".into(), "test-key".into()),
        ],
    );
    prepared.open().unwrap()
}

/// The configuration a run of `host` resolves (`interactive`: someone is
/// there to ask), the person's own memory left out.
fn config(host: &Host, interactive: bool) -> agent::AgentConfig {
    let (_, mut config) =
        hc_host::settings::resolve(&host.files, &Default::default(), interactive).unwrap();
    config.memory = false;
    config
}

/// One turn of `prompt` on a new session.
async fn turn(
    host: &Host,
    config: &agent::AgentConfig,
    prompt: &str,
    sink: &mut Kept,
    answerer: &dyn Answerer,
) -> Finished {
    let confirm = hc_host::confirm::NoOne;
    let turn = Turn {
        prompt,
        config,
        pins: &[],
        images: &[],
        attached: &[],
        session: &Session::New,
        session_id: None,
        confirm: &confirm,
        started: Instant::now(),
        checkout: false,
        uuid: None,
        fork: false,
    };
    let run = hc_host::turn::turn(&host.engine, turn, sink, answerer);
    tokio::time::timeout(std::time::Duration::from_secs(60), run)
        .await
        .expect("the turn did not end within 60 s")
        .unwrap()
}

fn writes_a_file() -> Script {
    let script = json!({"turns": [
        reply(json!([call("write", json!({"file_path": "made.txt", "content": "hello\n"}))]), "tool_use"),
        reply(json!([text("done")]), "end_turn"),
    ]});
    Script::from_json(&script.to_string()).unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn with_nobody_to_ask_a_write_is_refused_and_the_run_ends_saying_so() {
    let dir = tempfile::tempdir().unwrap();
    let fake = FakeModel::start(writes_a_file()).await.unwrap();
    let host = open(dir.path(), &fake);
    let config = config(&host, false);
    let mut sink = Kept::default();
    let finished = turn(&host, &config, "make a file", &mut sink, &Nobody).await;
    host.close().await;
    assert_eq!(finished.code, 0);
    let (session, _) = sink.began.clone().unwrap();
    assert_eq!(finished.session, session);
    assert_eq!(sink.tools_started, ["write"]);
    assert_eq!(sink.tools_denied, [true]);
    assert!(sink.results[0].is_error, "{:?}", sink.results);
    assert_eq!(sink.ended, Some((Some(RunStop::EndTurn), 1)));
    assert_eq!(sink.answers.last().map(String::as_str), Some("done"));
    assert!(!dir.path().join("made.txt").exists());
}

#[tokio::test(flavor = "multi_thread")]
async fn an_answerer_that_allows_lets_the_contained_write_run() {
    let dir = tempfile::tempdir().unwrap();
    let fake = FakeModel::start(writes_a_file()).await.unwrap();
    let host = open(dir.path(), &fake);
    let config = config(&host, true);
    let mut sink = Kept::default();
    let finished = turn(&host, &config, "make a file", &mut sink, &Allows).await;
    host.close().await;
    assert_eq!(finished.code, 0);
    assert_eq!(sink.tools_denied, [false]);
    assert!(!sink.results[0].is_error, "{:?}", sink.results);
    assert_eq!(sink.ended, Some((Some(RunStop::EndTurn), 0)));
    let made = std::fs::read_to_string(dir.path().join("made.txt")).unwrap();
    assert_eq!(made, "hello\n");
    // the model's text came as it streamed, and as committed
    assert!(sink.text.contains("done"), "{}", sink.text);
}

#[tokio::test(flavor = "multi_thread")]
async fn an_answerer_that_interrupts_ends_the_run_interrupted_and_its_tool_with_it() {
    let dir = tempfile::tempdir().unwrap();
    let script = json!({"turns": [
        reply(json!([call("shell", json!({"command": "sleep 20; touch late.txt"}))]), "tool_use"),
        reply(json!([text("done")]), "end_turn"),
    ]});
    let fake = FakeModel::start(Script::from_json(&script.to_string()).unwrap())
        .await
        .unwrap();
    let host = open(dir.path(), &fake);
    let mut config = config(&host, false);
    config.permission_mode = agent::PermissionMode::Bypass;
    let mut sink = Kept::default();
    let finished = turn(&host, &config, "wait", &mut sink, &Interrupts).await;
    host.close().await;
    assert_ne!(finished.code, 0);
    let (stop, _) = sink.ended.unwrap();
    assert_eq!(stop, Some(RunStop::Interrupted));
    assert!(!dir.path().join("late.txt").exists());
}
