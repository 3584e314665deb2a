//! The view's plain values as the OpenTelemetry SDK's: spans as
//! `SpanData` (their ids and times the substrate's), events as log
//! records, counts added to the instruments.

use crate::view::{Attr, Attrs, Event, RunSignals, Span};
use opentelemetry::logs::{AnyValue, LogRecord as _, Logger as _, LoggerProvider as _, Severity};
use opentelemetry::metrics::{Counter, Histogram, Meter};
use opentelemetry::trace::{
    SpanContext, SpanId, SpanKind, Status, TraceFlags, TraceId, TraceState,
};
use opentelemetry::{InstrumentationScope, KeyValue, Value};
use opentelemetry_sdk::logs::{SdkLogRecord, SdkLogger, SdkLoggerProvider};
use opentelemetry_sdk::trace::{SpanData, SpanEvents, SpanLinks};

/// The scope every signal is sent under.
pub(crate) fn scope() -> InstrumentationScope {
    InstrumentationScope::builder("hermitcrab")
        .with_version(env!("CARGO_PKG_VERSION"))
        .build()
}

fn value(attr: &Attr) -> Value {
    match attr {
        Attr::S(s) => Value::from(s.clone()),
        Attr::I(i) => Value::I64(*i),
        Attr::F(f) => Value::F64(*f),
        Attr::B(b) => Value::Bool(*b),
    }
}

fn key_values(attrs: &Attrs) -> Vec<KeyValue> {
    attrs
        .iter()
        .map(|(k, v)| KeyValue::new(*k, value(v)))
        .collect()
}

/// A run's spans.
pub(crate) fn spans(run: &RunSignals, scope: &InstrumentationScope) -> Vec<SpanData> {
    run.spans.iter().map(|s| span(run, s, scope)).collect()
}

fn span(run: &RunSignals, span: &Span, scope: &InstrumentationScope) -> SpanData {
    let remote = span.parent.is_some() && span.parent == run.remote_parent;
    SpanData {
        span_context: SpanContext::new(
            TraceId::from_bytes(run.trace_id),
            SpanId::from_bytes(span.id),
            TraceFlags::SAMPLED,
            false,
            TraceState::default(),
        ),
        parent_span_id: span.parent.map_or(SpanId::INVALID, SpanId::from_bytes),
        parent_span_is_remote: remote,
        span_kind: match span.name {
            "hc.llm_request" => SpanKind::Client,
            _ => SpanKind::Internal,
        },
        name: span.name.into(),
        start_time: span.start,
        end_time: span.end,
        attributes: key_values(&span.attrs),
        dropped_attributes_count: 0,
        events: SpanEvents::default(),
        links: SpanLinks::default(),
        status: match &span.error {
            Some(e) => Status::error(e.clone()),
            None => Status::Unset,
        },
        instrumentation_scope: scope.clone(),
    }
}

/// The event's name as sent (`hc.` and its name: Claude Code's shape).
fn event_name(name: &str) -> &'static str {
    match name {
        "user_prompt" => "hc.user_prompt",
        "api_request" => "hc.api_request",
        "api_error" => "hc.api_error",
        "tool_decision" => "hc.tool_decision",
        "tool_result" => "hc.tool_result",
        "hook_execution" => "hc.hook_execution",
        "compaction" => "hc.compaction",
        "permission_mode_changed" => "hc.permission_mode_changed",
        _ => "hc.event",
    }
}

/// Makes log records (the provider has no processor: records are only
/// made here, and sent by the worker).
pub(crate) struct Records {
    _provider: SdkLoggerProvider,
    logger: SdkLogger,
}

impl Records {
    pub(crate) fn new() -> Records {
        let provider = SdkLoggerProvider::builder().build();
        let logger = provider.logger_with_scope(scope());
        Records {
            _provider: provider,
            logger,
        }
    }

    /// A run's events, numbered from `sequence` on.
    pub(crate) fn of(&self, run: &RunSignals, sequence: &mut u64) -> Vec<SdkLogRecord> {
        run.events
            .iter()
            .map(|e| {
                *sequence += 1;
                self.record(run, e, *sequence)
            })
            .collect()
    }

    fn record(&self, run: &RunSignals, event: &Event, sequence: u64) -> SdkLogRecord {
        let mut record = self.logger.create_log_record();
        let name = event_name(event.name);
        record.set_event_name(name);
        record.set_body(AnyValue::from(name.to_owned()));
        record.set_timestamp(event.time);
        record.set_observed_timestamp(event.time);
        record.set_severity_number(Severity::Info);
        record.set_severity_text("INFO");
        record.add_attribute("event.name", event.name.to_owned());
        let stamp = humantime::format_rfc3339_millis(event.time).to_string();
        record.add_attribute("event.timestamp", stamp);
        record.add_attribute(
            "event.sequence",
            i64::try_from(sequence).unwrap_or(i64::MAX),
        );
        record.add_attribute("app.version", env!("CARGO_PKG_VERSION"));
        for (k, v) in &event.attrs {
            let v: AnyValue = match v {
                Attr::S(s) => s.clone().into(),
                Attr::I(i) => (*i).into(),
                Attr::F(f) => (*f).into(),
                Attr::B(b) => (*b).into(),
            };
            record.add_attribute(*k, v);
        }
        if let Some(span) = event.span {
            record.set_trace_context(
                TraceId::from_bytes(run.trace_id),
                SpanId::from_bytes(span),
                Some(TraceFlags::SAMPLED),
            );
        }
        record
    }
}

/// The instruments a run's counts are added to.
pub(crate) struct Instruments {
    sessions: Counter<u64>,
    tokens: Counter<u64>,
    cost: Counter<f64>,
    lines: Counter<u64>,
    tool_duration: Histogram<f64>,
    decisions: Counter<u64>,
    active: Counter<f64>,
}

impl Instruments {
    pub(crate) fn new(meter: &Meter) -> Instruments {
        Instruments {
            sessions: meter
                .u64_counter("hc.session.count")
                .with_description("Sessions started")
                .with_unit("count")
                .build(),
            tokens: meter
                .u64_counter("hc.token.usage")
                .with_description("Tokens used, by type and model")
                .with_unit("tokens")
                .build(),
            cost: meter
                .f64_counter("hc.cost.usage")
                .with_description("What the model calls cost, by model")
                .with_unit("USD")
                .build(),
            lines: meter
                .u64_counter("hc.lines_of_code.count")
                .with_description("Lines the tools added and removed")
                .with_unit("count")
                .build(),
            tool_duration: meter
                .f64_histogram("hc.tool.duration")
                .with_description("How long each tool run took")
                .with_unit("ms")
                .build(),
            decisions: meter
                .u64_counter("hc.tool.decision")
                .with_description("Permission decisions on tool calls")
                .with_unit("count")
                .build(),
            active: meter
                .f64_counter("hc.active_time")
                .with_description("Time the agent was running")
                .with_unit("s")
                .build(),
        }
    }

    /// Adds a run's counts.
    pub(crate) fn add(&self, run: &RunSignals) {
        let session = KeyValue::new("session.id", run.session.clone());
        let with = |more: &[KeyValue]| {
            let mut all = vec![session.clone()];
            all.extend_from_slice(more);
            all
        };
        let counts = &run.counts;
        if counts.new_session {
            self.sessions.add(1, &with(&[]));
        }
        for (model, t) in &counts.tokens {
            let model = KeyValue::new("model", model.clone());
            for (kind, n) in [
                ("input", t.input_tokens),
                ("output", t.output_tokens),
                ("cacheRead", t.cache_read_input_tokens),
                ("cacheCreation", t.cache_creation_input_tokens),
            ] {
                self.tokens
                    .add(n, &with(&[KeyValue::new("type", kind), model.clone()]));
            }
        }
        for (model, c) in &counts.cost {
            self.cost
                .add(*c, &with(&[KeyValue::new("model", model.clone())]));
        }
        self.lines
            .add(counts.lines_added, &with(&[KeyValue::new("type", "added")]));
        self.lines.add(
            counts.lines_removed,
            &with(&[KeyValue::new("type", "removed")]),
        );
        for (tool, ms) in &counts.tool_ms {
            self.tool_duration
                .record(*ms, &with(&[KeyValue::new("tool_name", tool.clone())]));
        }
        for (tool, decision, source) in &counts.decisions {
            let attrs = [
                KeyValue::new("tool_name", tool.clone()),
                KeyValue::new("decision", *decision),
                KeyValue::new("source", *source),
            ];
            self.decisions.add(1, &with(&attrs));
        }
        self.active
            .add(counts.active_s, &with(&[KeyValue::new("type", "cli")]));
    }
}
