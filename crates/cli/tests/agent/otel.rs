//! OpenTelemetry: what `hc` sends to a real OTLP collector (the testkit's,
//! decoding with the official protobuf definitions) over http/protobuf and
//! gRPC — the span tree of a run, its metrics against its totals, its
//! events with nothing secret, `TRACEPARENT` in a tool, a past session
//! sent later with its times, a collector that is down.

use crate::common::*;
use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue, any_value};
use opentelemetry_proto::tonic::metrics::v1::metric::Data;
use serde_json::{Value, json};
use std::collections::HashMap;
use testkit::otlp::{Collector, Received};

/// A run that reads, writes three lines, prints its `TRACEPARENT` and asks
/// a sub-agent, then ends.
fn script() -> Value {
    json!({"turns": [
        when("OTEL go", json!([text("On it."),
            call("r1", "read", json!({"file_path": "a.txt"})),
            call("w1", "write", json!({"file_path": "b.txt", "content": "one\ntwo\nthree\n"})),
            call("s1", "shell", json!({"command": "printf 'TP=%s' \"$TRACEPARENT\""})),
            call("g1", "agent", json!({"text": "SUB task"}))]), "tool_use"),
        when("SUB task", json!([text("sub done")]), "end_turn"),
        when("sub done", json!([text("all done")]), "end_turn"),
    ]})
}

async fn setup() -> Setup {
    let s = Setup::new(script()).await;
    s.file("a.txt", "hello\n");
    s
}

/// `hc run` with telemetry sent to `collector` over `protocol`.
async fn traced_run(
    s: &Setup,
    collector: &Collector,
    protocol: &str,
    more: &[(&str, &str)],
) -> Ran {
    let mut env = vec![
        ("OTEL_EXPORTER_OTLP_ENDPOINT", collector.endpoint.as_str()),
        ("OTEL_EXPORTER_OTLP_PROTOCOL", protocol),
    ];
    env.extend_from_slice(more);
    s.out_with(&env, &["run", "--permission-mode", "bypass", "OTEL go"])
        .await
}

/// A span as the collector decoded it.
#[derive(Debug, Clone)]
struct Got {
    name: String,
    trace: Vec<u8>,
    id: Vec<u8>,
    parent: Vec<u8>,
    start: u64,
    end: u64,
    attrs: HashMap<String, Value>,
}

fn value(v: &Option<AnyValue>) -> Value {
    match v.as_ref().and_then(|v| v.value.as_ref()) {
        Some(any_value::Value::StringValue(s)) => json!(s),
        Some(any_value::Value::IntValue(i)) => json!(i),
        Some(any_value::Value::DoubleValue(f)) => json!(f),
        Some(any_value::Value::BoolValue(b)) => json!(b),
        other => json!(format!("{other:?}")),
    }
}

fn attrs(kvs: &[KeyValue]) -> HashMap<String, Value> {
    kvs.iter()
        .map(|kv| (kv.key.clone(), value(&kv.value)))
        .collect()
}

fn spans(got: &Received) -> Vec<Got> {
    let mut out = Vec::new();
    for request in &got.traces {
        for rs in &request.resource_spans {
            let resource = attrs(&rs.resource.as_ref().unwrap().attributes);
            assert_eq!(resource["service.name"], "hermitcrab", "{resource:?}");
            for ss in &rs.scope_spans {
                for span in &ss.spans {
                    out.push(Got {
                        name: span.name.clone(),
                        trace: span.trace_id.clone(),
                        id: span.span_id.clone(),
                        parent: span.parent_span_id.clone(),
                        start: span.start_time_unix_nano,
                        end: span.end_time_unix_nano,
                        attrs: attrs(&span.attributes),
                    });
                }
            }
        }
    }
    out
}

/// Each event: its name and attributes.
fn events(got: &Received) -> Vec<(String, u64, HashMap<String, Value>)> {
    let mut out = Vec::new();
    for request in &got.logs {
        for rl in &request.resource_logs {
            for sl in &rl.scope_logs {
                for r in &sl.log_records {
                    let a = attrs(&r.attributes);
                    let name = a["event.name"].as_str().unwrap().to_owned();
                    assert_eq!(r.event_name, format!("hc.{name}"));
                    out.push((name, r.time_unix_nano, a));
                }
            }
        }
    }
    out
}

/// The sum of a counter's points whose attributes hold `with`, in the
/// last export (cumulative: the last holds everything).
fn metric_sum(got: &Received, name: &str, with: &[(&str, &str)]) -> f64 {
    let last = got.metrics.last().expect("no metrics were sent");
    let mut sum = 0.0;
    for rm in &last.resource_metrics {
        for sm in &rm.scope_metrics {
            for m in sm.metrics.iter().filter(|m| m.name == name) {
                let Some(Data::Sum(s)) = &m.data else {
                    panic!("{name} is not a sum: {m:?}");
                };
                for p in &s.data_points {
                    let a = attrs(&p.attributes);
                    if with.iter().all(|(k, v)| a.get(*k) == Some(&json!(v))) {
                        sum += match p.value {
                            Some(opentelemetry_proto::tonic::metrics::v1::number_data_point::Value::AsInt(i)) => i as f64,
                            Some(opentelemetry_proto::tonic::metrics::v1::number_data_point::Value::AsDouble(f)) => f,
                            None => 0.0,
                        };
                    }
                }
            }
        }
    }
    sum
}

fn by_name<'a>(spans: &'a [Got], name: &str) -> Vec<&'a Got> {
    spans.iter().filter(|s| s.name == name).collect()
}

fn the_run(s: &Setup) -> Value {
    processes_of(s, "agent")
        .into_iter()
        .find(|b| b["children"].as_array().is_some_and(|c| c.len() == 1))
        .expect("the root run")
}

#[tokio::test(flavor = "multi_thread")]
async fn a_run_sends_its_span_tree_metrics_and_events_over_http() {
    let s = setup().await;
    let collector = Collector::http().unwrap();
    let ran = traced_run(
        &s,
        &collector,
        "http/protobuf",
        &[("HC_PERSON", "otel-person")],
    )
    .await;
    assert_eq!(ran.code, 0, "{ran:#?}");
    assert!(!ran.stderr.contains("not sent"), "{}", ran.stderr);
    let got = collector.received();
    assert!(got.undecodable.is_empty(), "{:?}", got.undecodable);
    let spans = spans(&got);
    // the tree: the run; its two model calls and four tool runs under it;
    // the sub-agent's run under its call, its model call under that
    let runs = by_name(&spans, "hc.run");
    assert_eq!(runs.len(), 2, "{spans:#?}");
    let root = runs
        .iter()
        .find(|r| r.parent.is_empty())
        .expect("a root run");
    let tools = by_name(&spans, "hc.tool");
    assert_eq!(tools.len(), 4, "{tools:#?}");
    assert!(
        tools
            .iter()
            .all(|t| t.parent == root.id && t.trace == root.trace)
    );
    let llm = by_name(&spans, "hc.llm_request");
    assert_eq!(llm.len(), 3, "{llm:#?}");
    let call = tools
        .iter()
        .find(|t| t.attrs["tool_name"] == "agent")
        .unwrap();
    let sub = runs
        .iter()
        .find(|r| r.parent == call.id)
        .expect("the sub-agent's run under its call");
    assert_eq!(llm.iter().filter(|l| l.parent == root.id).count(), 2);
    assert_eq!(llm.iter().filter(|l| l.parent == sub.id).count(), 1);
    for l in &llm {
        assert!(
            l.start <= l.end && l.attrs["input_tokens"].as_i64() > Some(0),
            "{l:#?}"
        );
        assert!(
            l.attrs.contains_key("ttft_ms")
                && l.attrs["model"].is_string()
                && l.attrs["hc.process.id"].is_string()
                && l.attrs["session.id"].is_string(),
            "{l:#?}"
        );
    }
    // the ids: the process and session on the spans, as the substrate has them
    let session = s.sessions().pop().unwrap();
    let body = the_run(&s);
    assert_eq!(root.attrs["session.id"], json!(session));
    // who it ran for, and through which front end (decision 19)
    assert_eq!(root.attrs["user.name"], json!("otel-person"), "{root:#?}");
    assert_eq!(root.attrs["hc.via"], json!("terminal"), "{root:#?}");
    let process = root.attrs["hc.process.id"].as_str().unwrap();
    assert_eq!(
        humantime::parse_rfc3339(body["started"].as_str().unwrap()).unwrap(),
        std::time::UNIX_EPOCH + std::time::Duration::from_nanos(root.start),
        "{process}"
    );
    let write = tools
        .iter()
        .find(|t| t.attrs["tool_name"] == "write")
        .unwrap();
    assert_eq!(write.attrs["decision"], "accept");
    assert_eq!(write.attrs["source"], "config");
    // the metrics are the run's totals
    let usage = &body["usage"];
    assert_eq!(
        metric_sum(&got, "hc.token.usage", &[("type", "input")]),
        usage["input_tokens"].as_f64().unwrap()
    );
    assert_eq!(
        metric_sum(&got, "hc.token.usage", &[("type", "output")]),
        usage["output_tokens"].as_f64().unwrap()
    );
    let cost = metric_sum(&got, "hc.cost.usage", &[]);
    assert!(
        (cost - body["cost_usd"].as_f64().unwrap_or(0.0)).abs() < 1e-9,
        "{cost} {body}"
    );
    assert_eq!(
        metric_sum(&got, "hc.lines_of_code.count", &[("type", "added")]),
        3.0
    );
    assert_eq!(metric_sum(&got, "hc.session.count", &[]), 1.0);
    assert_eq!(
        metric_sum(&got, "hc.tool.decision", &[("decision", "accept")]),
        4.0
    );
    // the events: the prompt without its text, each call, each result, numbered
    let events = events(&got);
    let named = |n: &str| events.iter().filter(|e| e.0 == n).count();
    assert_eq!(named("user_prompt"), 1);
    assert_eq!(named("api_request"), 3);
    assert_eq!(named("tool_result"), 4);
    assert_eq!(named("tool_decision"), 4);
    let prompt = &events.iter().find(|e| e.0 == "user_prompt").unwrap().2;
    assert_eq!(prompt["prompt_length"], json!(7));
    assert!(
        !format!("{events:?}").contains("OTEL go"),
        "a prompt's text is not sent unless asked"
    );
    let mut sequence: Vec<i64> = events
        .iter()
        .map(|e| e.2["event.sequence"].as_i64().unwrap())
        .collect();
    sequence.sort();
    sequence.dedup();
    assert_eq!(sequence.len(), events.len(), "each event numbered once");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_tool_sees_its_own_span_in_traceparent_and_hc_continues_the_trace_it_is_started_in() {
    let s = setup().await;
    let collector = Collector::grpc().unwrap();
    let outer = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
    let ran = traced_run(
        &s,
        &collector,
        "grpc",
        &[
            ("TRACEPARENT", outer),
            ("OTEL_LOG_USER_PROMPTS", "1"),
            ("OTEL_EXPORTER_OTLP_HEADERS", "x-team=crabs"),
            ("OTEL_RESOURCE_ATTRIBUTES", "deployment.environment=ci"),
        ],
    )
    .await;
    assert_eq!(ran.code, 0, "{ran:#?}");
    let got = collector.received();
    let spans = spans(&got);
    let runs = by_name(&spans, "hc.run");
    let root = runs
        .iter()
        .find(|r| r.parent == hex("b7ad6b7169203331"))
        .expect("the run under the outer span");
    assert_eq!(root.trace, hex("0af7651916cd43dd8448eb211c80319c"));
    assert!(spans.iter().all(|s| s.trace == root.trace), "one trace");
    // the shell tool printed the context it was given: its own span
    let session = s.sessions().pop().unwrap();
    let results = s.of_type(&session, "tool-result");
    let result = results
        .iter()
        .find(|r| r["text"].as_str().unwrap_or_default().contains("TP="))
        .unwrap_or_else(|| panic!("{results:#?}"));
    let printed = result["text"].as_str().unwrap();
    let shell = spans
        .iter()
        .find(|s| s.name == "hc.tool" && s.attrs["tool_name"] == "shell")
        .unwrap();
    let expected = format!(
        "TP=00-0af7651916cd43dd8448eb211c80319c-{}-01",
        to_hex(&shell.id)
    );
    assert!(printed.contains(&expected), "{printed} vs {expected}");
    // over gRPC too: metrics and events; asked, the prompt's text; the
    // variables' headers and resource attributes
    assert!(!got.metrics.is_empty());
    assert!(
        got.headers.contains(&("x-team".into(), "crabs".into())),
        "{:?}",
        got.headers
    );
    let resource = &got.traces[0].resource_spans[0].resource;
    let resource = attrs(&resource.as_ref().unwrap().attributes);
    assert_eq!(resource["deployment.environment"], "ci", "{resource:?}");
    let events = events(&got);
    let prompt = &events.iter().find(|e| e.0 == "user_prompt").unwrap().2;
    assert_eq!(prompt["prompt"], "OTEL go");
}

fn hex(text: &str) -> Vec<u8> {
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&text[i..i + 2], 16).unwrap())
        .collect()
}

fn to_hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_past_session_is_sent_later_with_its_own_times_and_ids() {
    let s = setup().await;
    let ran = s.run(&["--permission-mode", "bypass", "OTEL go"]).await;
    assert_eq!(ran.code, 0, "{ran:#?}");
    let session = s.sessions().pop().unwrap();
    // sent after the fact, over each protocol: the same spans, the times
    // the substrate holds
    let collector = Collector::http().unwrap();
    let sent = s
        .out_with(
            &[("OTEL_EXPORTER_OTLP_ENDPOINT", collector.endpoint.as_str())],
            &["trace", "--otel", &session],
        )
        .await;
    assert_eq!(sent.code, 0, "{sent:#?}");
    assert!(
        sent.stdout.contains("sent 1 session (1 run)"),
        "{}",
        sent.stdout
    );
    let got = collector.received();
    let spans = spans(&got);
    assert_eq!(by_name(&spans, "hc.tool").len(), 4);
    let body = the_run(&s);
    let root = by_name(&spans, "hc.run")
        .into_iter()
        .find(|r| r.parent.is_empty())
        .unwrap();
    let t = |k: &str| {
        humantime::parse_rfc3339(body[k].as_str().unwrap())
            .unwrap()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos() as u64
    };
    assert_eq!((root.start, root.end), (t("started"), t("ended")));
    assert!(got.metrics.is_empty(), "a metric cannot carry an old time");
    assert!(!events(&got).is_empty());
    // the same trace again by gRPC, its ids unchanged
    let grpc = Collector::grpc().unwrap();
    let again = s
        .out_with(
            &[
                ("OTEL_EXPORTER_OTLP_ENDPOINT", grpc.endpoint.as_str()),
                ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"),
            ],
            &["trace", "--otel", "--since", "1d"],
        )
        .await;
    assert_eq!(again.code, 0, "{again:#?}");
    let mut ids: Vec<_> = spans.iter().map(|s| s.id.clone()).collect();
    let mut ids_again: Vec<_> = self::spans(&grpc.received())
        .iter()
        .map(|s| s.id.clone())
        .collect();
    ids.sort();
    ids_again.sort();
    assert_eq!(ids, ids_again);
    // no collector named: said what to set
    let none = s.out(&["trace", "--otel", &session]).await;
    assert_eq!(none.code, 2);
    assert!(
        none.stderr.contains("OTEL_EXPORTER_OTLP_ENDPOINT"),
        "{}",
        none.stderr
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_collector_that_is_down_leaves_the_run_alone_and_is_said_once() {
    let s = setup().await;
    // a port nothing listens on
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let endpoint = format!("http://127.0.0.1:{port}");
    let ran = s
        .out_with(
            &[("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint.as_str())],
            &["run", "--permission-mode", "bypass", "OTEL go"],
        )
        .await;
    assert_eq!(ran.code, 0, "{ran:#?}");
    assert!(ran.stdout.contains("all done"), "{}", ran.stdout);
    let said: Vec<&str> = ran
        .stderr
        .lines()
        .filter(|l| l.contains("not sent"))
        .collect();
    assert_eq!(said.len(), 1, "{}", ran.stderr);
    assert!(said[0].contains(&endpoint), "{}", said[0]);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_checkout_cannot_turn_telemetry_on_without_trust() {
    let mut twice = script();
    twice["cycle"] = json!(true);
    let s = Setup::new(twice).await;
    s.file("a.txt", "hello\n");
    let collector = Collector::http().unwrap();
    s.file(
        ".hermitcrab/config.toml",
        &format!(
            "[telemetry]\nendpoint = \"{}\"\nheaders = {{ x-from = \"table\" }}\n",
            collector.endpoint
        ),
    );
    let ran = s.run(&["--permission-mode", "bypass", "OTEL go"]).await;
    assert_eq!(ran.code, 0, "{ran:#?}");
    let got = collector.received();
    assert!(
        got.traces.is_empty() && got.logs.is_empty() && got.metrics.is_empty(),
        "{got:?}"
    );
    // trusted, it applies
    s.trust();
    let ran = s.run(&["--permission-mode", "bypass", "OTEL go"]).await;
    assert_eq!(ran.code, 0, "{ran:#?}");
    let got = collector.received();
    assert!(!got.traces.is_empty());
    assert!(
        got.headers.contains(&("x-from".into(), "table".into())),
        "{:?}",
        got.headers
    );
}

/// `hc ARGS…` as if it were `shift` ago (libfaketime), to its end.
async fn at_another_time(s: &Setup, shift: &str, args: &[&str]) -> Ran {
    let mut command = tokio::process::Command::new("faketime");
    command.args(["-f", shift, HC]).args(args);
    Ran::of(s.in_project(command)).await
}

#[tokio::test(flavor = "multi_thread")]
async fn a_week_old_session_is_sent_today_with_last_weeks_times() {
    let s = setup().await;
    let ran = at_another_time(
        &s,
        "-7d",
        &["run", "--permission-mode", "bypass", "OTEL go"],
    )
    .await;
    assert_eq!(ran.code, 0, "{ran:#?}");
    let collector = Collector::http().unwrap();
    let env = [("OTEL_EXPORTER_OTLP_ENDPOINT", collector.endpoint.as_str())];
    // not made in the last day; made in the last eight
    let recent = s
        .out_with(&env, &["trace", "--otel", "--since", "1d"])
        .await;
    assert!(recent.stdout.contains("sent 0 sessions"), "{recent:#?}");
    let week = s
        .out_with(&env, &["trace", "--otel", "--since", "8d"])
        .await;
    assert_eq!(week.code, 0, "{week:#?}");
    let got = collector.received();
    let spans = spans(&got);
    assert_eq!(by_name(&spans, "hc.run").len(), 2, "{spans:#?}");
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap();
    let six_days = std::time::Duration::from_secs(6 * 86400).as_nanos() as u64;
    for span in &spans {
        assert!(
            span.start > 0 && (now.as_nanos() as u64) - span.start > six_days,
            "{span:#?}"
        );
    }
    for (name, time, _) in events(&got) {
        assert!(
            (now.as_nanos() as u64) - time > six_days,
            "{name} at {time}"
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_hook_sees_the_trace_and_its_run_is_an_event() {
    let s = setup().await;
    s.file(
        ".hermitcrab/config.toml",
        "[[hooks]]\nevent = \"pre-tool\"\nmatcher = \"shell\"\ncommand = \"cat > /dev/null; printf %s \\\"$TRACEPARENT\\\" > hook-tp.txt\"\n",
    );
    s.trust();
    let collector = Collector::http().unwrap();
    let ran = traced_run(&s, &collector, "http/protobuf", &[]).await;
    assert_eq!(ran.code, 0, "{ran:#?}");
    let got = collector.received();
    let root = spans(&got)
        .into_iter()
        .find(|s| s.name == "hc.run" && s.parent.is_empty())
        .unwrap();
    let seen = std::fs::read_to_string(s.root.join("hook-tp.txt")).unwrap();
    assert!(
        seen.starts_with(&format!("00-{}-", to_hex(&root.trace))),
        "{seen}"
    );
    let hooks: Vec<_> = events(&got)
        .into_iter()
        .filter(|e| e.0 == "hook_execution")
        .collect();
    assert_eq!(hooks.len(), 1, "{hooks:#?}");
    assert_eq!(hooks[0].2["hook_event"], "PreToolUse");
    assert_eq!(hooks[0].2["success"], true);
    assert!(
        !hooks[0].2.contains_key("hook_command"),
        "the command only when asked"
    );
}

/// A project whose run's sub-agent edits a file too.
async fn editing_setup() -> Setup {
    let mut more = script();
    let turns = more["turns"].as_array_mut().unwrap();
    turns[1] = when(
        "SUB task",
        json!([call("r2", "read", json!({"file_path": "c.txt"}))]),
        "tool_use",
    );
    turns.insert(
        2,
        when(
            "drop",
            json!([call(
                "e1",
                "edit",
                json!({"file_path": "c.txt", "old_string": "drop\n", "new_string": "new\nnewer\n"})
            )]),
            "tool_use",
        ),
    );
    turns.insert(3, when("Edited", json!([text("sub done")]), "end_turn"));
    let s = Setup::new(more).await;
    s.file("a.txt", "hello\n");
    s.file("c.txt", "keep\ndrop\n");
    s
}

#[tokio::test(flavor = "multi_thread")]
async fn lines_changed_and_tool_time_are_in_every_total() {
    // the sub-agent's lines count in its parent's
    let s = editing_setup().await;
    let ran = s.run(&["--permission-mode", "bypass", "OTEL go"]).await;
    assert_eq!(ran.code, 0, "{ran:#?}");
    let body = the_run(&s);
    assert_eq!(
        (body["lines_added"].as_u64(), body["lines_removed"].as_u64()),
        (Some(5), Some(1)),
        "{body:#}"
    );
    assert!(body["tool_ms"].as_u64().is_some(), "{body:#}");
    let last = ran.stderr.lines().find(|l| l.starts_with("— ")).unwrap();
    assert!(
        last.contains(" · tools ") && last.ends_with(" · +5 −1 lines"),
        "{last}"
    );
    let agents = s.out(&["agents", "--json"]).await;
    let rows: Value = serde_json::from_str(&agents.stdout).unwrap();
    assert_eq!(
        (
            rows[0]["lines_added"].as_u64(),
            rows[0]["lines_removed"].as_u64()
        ),
        (Some(5), Some(1)),
        "{rows:#}"
    );
    let table = s.out(&["agents"]).await;
    assert!(table.stdout.contains("+5 −1"), "{}", table.stdout);
    // JSON's result says the same
    let s = editing_setup().await;
    let ran = s
        .run(&[
            "--permission-mode",
            "bypass",
            "--output-format",
            "json",
            "OTEL go",
        ])
        .await;
    let result: Value = serde_json::from_str(ran.stdout.lines().last().unwrap()).unwrap();
    assert_eq!(
        (
            result["lines_added"].as_u64(),
            result["lines_removed"].as_u64()
        ),
        (Some(5), Some(1)),
        "{result:#}"
    );
    assert_eq!(result["duration_tools_ms"], the_run(&s)["tool_ms"]);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_retried_call_counts_its_retries_and_a_failed_one_is_an_api_error() {
    let busy = |status: u16| json!({"error": {"status": status, "headers": {"retry-after": "0"}}});
    let s = Setup::new(json!({"turns": [
        busy(429),
        busy(500),
        reply(json!([text("done at last")]), "end_turn"),
    ]}))
    .await;
    let collector = Collector::http().unwrap();
    let env = [("OTEL_EXPORTER_OTLP_ENDPOINT", collector.endpoint.as_str())];
    let ran = s.out_with(&env, &["run", "hi"]).await;
    assert_eq!(ran.code, 0, "{ran:#?}");
    let got = collector.received();
    let llm = spans(&got)
        .into_iter()
        .find(|s| s.name == "hc.llm_request")
        .unwrap();
    assert_eq!(llm.attrs["retries"], 2, "{llm:#?}");
    assert_eq!(llm.attrs["stop_reason"], "end_turn");
    // a model the API does not know: the run fails, said as an event and
    // on the run's span
    let s = Setup::new(
        json!({"turns": [{"error": {"status": 404, "type": "not_found_error",
        "message": "model: claude-nope"}}]}),
    )
    .await;
    let collector = Collector::http().unwrap();
    let env = [("OTEL_EXPORTER_OTLP_ENDPOINT", collector.endpoint.as_str())];
    let ran = s.out_with(&env, &["run", "hi"]).await;
    assert_eq!(ran.code, 1, "{ran:#?}");
    let got = collector.received();
    let errors: Vec<_> = events(&got)
        .into_iter()
        .filter(|e| e.0 == "api_error")
        .collect();
    assert_eq!(errors.len(), 1, "{errors:#?}");
    assert!(
        errors[0].2["error"]
            .as_str()
            .unwrap()
            .contains("claude-nope"),
        "{errors:#?}"
    );
    let run = &got.traces[0].resource_spans[0].scope_spans[0].spans;
    let run = run.iter().find(|s| s.name == "hc.run").unwrap();
    let status = run.status.as_ref().unwrap();
    assert_eq!(status.code, 2, "an error status: {status:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_compaction_and_a_changed_permission_mode_are_events() {
    let s = Setup::new(json!({"turns": [
        reply(json!([text("first answer")]), "end_turn"),
        reply(json!([text("SUMMARY: one answer so far.")]), "end_turn"),
        reply(json!([text("second answer")]), "end_turn"),
    ]}))
    .await;
    let collector = Collector::http().unwrap();
    let env = [("OTEL_EXPORTER_OTLP_ENDPOINT", collector.endpoint.as_str())];
    assert_eq!(s.out_with(&env, &["run", "one"]).await.code, 0);
    let again = [
        "run",
        "--continue",
        "--compact",
        "--permission-mode",
        "plan",
        "two",
    ];
    let ran = s.out_with(&env, &again).await;
    assert_eq!(ran.code, 0, "{ran:#?}");
    let events = events(&collector.received());
    let named = |n: &str| events.iter().filter(|e| e.0 == n).collect::<Vec<_>>();
    let compaction = named("compaction");
    assert_eq!(compaction.len(), 1, "{events:#?}");
    assert!(compaction[0].2["input_tokens"].as_i64().is_some());
    let changed = named("permission_mode_changed");
    assert_eq!(changed.len(), 1, "{events:#?}");
    assert_eq!(
        (&changed[0].2["from"], &changed[0].2["to"]),
        (&json!("default"), &json!("plan"))
    );
    assert_eq!(named("user_prompt").len(), 2, "one a run");
}
