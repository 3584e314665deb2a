//! The sending: a thread of its own, with a runtime of its own (gRPC's
//! channel lives on it), takes runs from a bounded queue and sends their
//! spans, events and metrics over OTLP. A run is never slowed by it: a
//! full queue drops the run's items, a collector that is away fails
//! them, and each is counted, said once at the end.

use crate::config::{Protocol, Settings};
use crate::otel::{Instruments, Records, scope};
use crate::view::RunSignals;
use anyhow::{Context as _, Result};
use opentelemetry::metrics::MeterProvider as _;
use opentelemetry::{InstrumentationScope, KeyValue};
use opentelemetry_otlp::{WithExportConfig as _, WithHttpConfig as _, WithTonicConfig as _};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::logs::{LogBatch, LogExporter as _};
use opentelemetry_sdk::metrics::data::ResourceMetrics;
use opentelemetry_sdk::metrics::exporter::PushMetricExporter as _;
use opentelemetry_sdk::metrics::reader::MetricReader;
use opentelemetry_sdk::metrics::{ManualReader, SdkMeterProvider};
use opentelemetry_sdk::trace::SpanExporter as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, TrySendError, sync_channel};
use std::sync::{Arc, Weak};
use std::time::Duration;

/// Runs waiting to be sent, at most.
const QUEUE: usize = 256;

/// What was sent, and what was not.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Report {
    /// Spans the collector took.
    pub spans: u64,
    /// Events it took.
    pub events: u64,
    /// Metric exports it took.
    pub metric_exports: u64,
    /// Spans, events and metric exports not sent.
    pub dropped: u64,
    /// Why (the first failure).
    pub why: Option<String>,
}

impl Report {
    /// What a person is told when something was not sent.
    pub fn said(&self, endpoint: &str) -> Option<String> {
        (self.dropped > 0).then(|| {
            format!(
                "telemetry: {} item{} not sent to {endpoint} ({})",
                self.dropped,
                if self.dropped == 1 { "" } else { "s" },
                self.why.as_deref().unwrap_or("the queue was full")
            )
        })
    }
}

/// A run to send: live (with its metrics) or from the past (spans and
/// events only: a metric cannot carry an old time).
pub(crate) enum Job {
    /// A run that has just ended, read from the substrate by the thread.
    Ended {
        db: Arc<substrate::Substrate>,
        session: String,
        run: String,
        detail: crate::view::Detail,
    },
    Past(Box<RunSignals>),
}

impl Job {
    fn items(&self) -> u64 {
        match self {
            Job::Ended { .. } => 1,
            Job::Past(r) => (r.spans.len() + r.events.len()) as u64,
        }
    }
}

/// The sending thread's handle.
pub struct Exporter {
    jobs: Option<SyncSender<Job>>,
    done: Receiver<Report>,
    dropped: Arc<AtomicU64>,
}

impl Exporter {
    /// Starts the thread, which builds the exporters (off the caller's
    /// start-up: what cannot be built is said at the end, with what was
    /// not sent).
    pub fn start(settings: Settings) -> Result<Exporter> {
        let (jobs, queue) = sync_channel(QUEUE);
        let (done_tx, done) = sync_channel(1);
        std::thread::Builder::new()
            .name("hc-telemetry".into())
            .spawn(move || worker(settings, queue, done_tx))
            .context("cannot start the telemetry thread")?;
        Ok(Exporter {
            jobs: Some(jobs),
            done,
            dropped: Arc::new(AtomicU64::new(0)),
        })
    }

    /// Queues a run (dropped, and counted, when the queue is full).
    pub(crate) fn send(&self, job: Job) {
        let Some(jobs) = &self.jobs else {
            return;
        };
        if let Err(TrySendError::Full(job) | TrySendError::Disconnected(job)) = jobs.try_send(job) {
            self.dropped.fetch_add(job.items(), Ordering::Relaxed);
        }
    }

    /// Sends what is queued, waiting at most `wait`; what was and was not
    /// sent.
    pub fn finish(mut self, wait: Duration) -> Report {
        drop(self.jobs.take());
        let queued = self.dropped.load(Ordering::Relaxed);
        match self.done.recv_timeout(wait) {
            Ok(mut report) => {
                report.dropped += queued;
                report
            }
            Err(_) => Report {
                dropped: queued.max(1),
                why: Some(format!(
                    "the collector did not take it within {} s",
                    wait.as_secs()
                )),
                ..Report::default()
            },
        }
    }
}

/// The thread: builds the exporters on its runtime, then sends each job.
fn worker(settings: Settings, queue: Receiver<Job>, done: SyncSender<Report>) {
    let mut report = Report::default();
    let built = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start telemetry's runtime: {e}"))
        .and_then(|runtime| {
            let pipes = runtime.block_on(async { Pipes::build(&settings) });
            Ok((runtime, pipes.map_err(|e| format!("{e:#}"))?))
        });
    match built {
        Ok((runtime, mut pipes)) => {
            while let Ok(job) = queue.recv() {
                runtime.block_on(pipes.export(job, &mut report));
            }
            pipes.shut_down();
        }
        // (nothing can be sent: each run is counted, and why said once)
        Err(why) => {
            report.why = Some(why);
            report.dropped = queue.iter().map(|job| job.items()).sum();
        }
    }
    let _ = done.send(report);
}

/// A reader the pipe keeps a handle on, to collect when a run ends.
#[derive(Clone, Debug)]
struct Shared(Arc<ManualReader>);

impl MetricReader for Shared {
    fn register_pipeline(&self, pipeline: Weak<opentelemetry_sdk::metrics::Pipeline>) {
        self.0.register_pipeline(pipeline);
    }
    fn collect(&self, rm: &mut ResourceMetrics) -> opentelemetry_sdk::error::OTelSdkResult {
        self.0.collect(rm)
    }
    fn force_flush(&self) -> opentelemetry_sdk::error::OTelSdkResult {
        self.0.force_flush()
    }
    fn shutdown_with_timeout(&self, timeout: Duration) -> opentelemetry_sdk::error::OTelSdkResult {
        self.0.shutdown_with_timeout(timeout)
    }
    fn temporality(
        &self,
        kind: opentelemetry_sdk::metrics::InstrumentKind,
    ) -> opentelemetry_sdk::metrics::Temporality {
        self.0.temporality(kind)
    }
}

/// The metrics' side: the provider, the reader, the instruments.
struct Metrics {
    provider: SdkMeterProvider,
    reader: Shared,
    exporter: opentelemetry_otlp::MetricExporter,
    instruments: Instruments,
}

/// The exporters, as the settings turn them on.
struct Pipes {
    spans: Option<opentelemetry_otlp::SpanExporter>,
    logs: Option<opentelemetry_otlp::LogExporter>,
    metrics: Option<Metrics>,
    records: Records,
    scope: InstrumentationScope,
    sequence: u64,
    timeout: Duration,
}

/// Builds one signal's exporter over the settings' protocol.
macro_rules! exporter {
    ($kind:ty, $settings:expr, $signal:expr, $path:expr) => {{
        let s: &Settings = $settings;
        let address = s.address($signal, $path);
        let retry = opentelemetry_otlp::RetryPolicy::recommended().with_max_retries(1);
        match s.protocol {
            Protocol::HttpProtobuf => <$kind>::builder()
                .with_http()
                .with_endpoint(address)
                .with_protocol(opentelemetry_otlp::Protocol::HttpBinary)
                .with_timeout(s.timeout)
                .with_headers(s.headers.clone().into_iter().collect())
                .with_retry_policy(retry)
                .build(),
            Protocol::Grpc => {
                let https = address.starts_with("https://");
                let builder = <$kind>::builder()
                    .with_tonic()
                    .with_endpoint(address)
                    .with_timeout(s.timeout)
                    .with_metadata(metadata(&s.headers))
                    .with_retry_policy(retry);
                // (TLS verified against the machine's roots, as a browser's)
                match https {
                    true => builder
                        .with_tls_config(
                            tonic::transport::ClientTlsConfig::new().with_native_roots(),
                        )
                        .build(),
                    false => builder.build(),
                }
            }
        }
        .with_context(|| format!("cannot build the OTLP exporter for {}", $path))?
    }};
}

/// Headers as gRPC metadata (a name or value gRPC refuses is left out).
fn metadata(headers: &std::collections::BTreeMap<String, String>) -> tonic::metadata::MetadataMap {
    let mut map = tonic::metadata::MetadataMap::new();
    for (k, v) in headers {
        let key = tonic::metadata::MetadataKey::from_bytes(k.to_ascii_lowercase().as_bytes());
        if let (Ok(key), Ok(value)) = (key, v.parse()) {
            map.insert(key, value);
        }
    }
    map
}

/// The resource every signal names: hermitcrab, its version, the
/// variables' attributes and the table's.
fn resource(settings: &Settings) -> Resource {
    let mut builder = Resource::builder();
    let named = std::env::var_os("OTEL_SERVICE_NAME").is_some()
        || settings.resource.contains_key("service.name");
    if !named {
        builder = builder.with_service_name("hermitcrab");
    }
    builder
        .with_attribute(KeyValue::new("service.version", env!("CARGO_PKG_VERSION")))
        .with_attributes(
            settings
                .resource
                .iter()
                .map(|(k, v)| KeyValue::new(k.clone(), v.clone())),
        )
        .build()
}

impl Pipes {
    fn build(settings: &Settings) -> Result<Pipes> {
        // (reqwest's TLS takes the process's provider: ring, as every
        // other client of hc's)
        let _ = rustls::crypto::ring::default_provider().install_default();
        let resource = resource(settings);
        let on = settings.signals;
        let spans = match on.traces {
            true => {
                let mut e = exporter!(opentelemetry_otlp::SpanExporter, settings, 0, "v1/traces");
                e.set_resource(&resource);
                Some(e)
            }
            false => None,
        };
        let logs = match on.logs {
            true => {
                let mut e = exporter!(opentelemetry_otlp::LogExporter, settings, 2, "v1/logs");
                e.set_resource(&resource);
                Some(e)
            }
            false => None,
        };
        let metrics = match on.metrics {
            true => {
                let exporter = exporter!(
                    opentelemetry_otlp::MetricExporter,
                    settings,
                    1,
                    "v1/metrics"
                );
                let temporality = match settings.delta {
                    true => opentelemetry_sdk::metrics::Temporality::Delta,
                    false => opentelemetry_sdk::metrics::Temporality::Cumulative,
                };
                let reader = ManualReader::builder().with_temporality(temporality);
                let reader = Shared(Arc::new(reader.build()));
                let provider = SdkMeterProvider::builder()
                    .with_resource(resource.clone())
                    .with_reader(reader.clone())
                    .build();
                let instruments = Instruments::new(&provider.meter_with_scope(scope()));
                Some(Metrics {
                    provider,
                    reader,
                    exporter,
                    instruments,
                })
            }
            false => None,
        };
        Ok(Pipes {
            spans,
            logs,
            metrics,
            records: Records::new(),
            scope: scope(),
            sequence: 0,
            timeout: settings.timeout,
        })
    }

    /// Sends one run's signals.
    async fn export(&mut self, job: Job, report: &mut Report) {
        let (run, live) = match job {
            Job::Past(run) => (run, false),
            Job::Ended {
                db,
                session,
                run,
                detail,
            } => match crate::view::run(&db, &session, &run, detail) {
                Ok(Some(signals)) => (Box::new(signals), true),
                Ok(None) => return,
                Err(e) => {
                    report.dropped += 1;
                    report
                        .why
                        .get_or_insert(format!("cannot read {run}: {e:#}"));
                    return;
                }
            },
        };
        if let Some(exporter) = &self.spans {
            let batch = crate::otel::spans(&run, &self.scope);
            let n = batch.len() as u64;
            let sent = self.within(exporter.export(batch)).await;
            tally(report, sent, n, |r| &mut r.spans);
        }
        if let Some(exporter) = &self.logs {
            let records = self.records.of(&run, &mut self.sequence);
            let pairs: Vec<_> = records.iter().map(|r| (r, &self.scope)).collect();
            let n = pairs.len() as u64;
            if n > 0 {
                let sent = self.within(exporter.export(LogBatch::new(&pairs))).await;
                tally(report, sent, n, |r| &mut r.events);
            }
        }
        if let (Some(metrics), true) = (&self.metrics, live) {
            metrics.instruments.add(&run);
            let mut collected = ResourceMetrics::default();
            let sent = match metrics.reader.collect(&mut collected) {
                Ok(()) => self.within(metrics.exporter.export(&collected)).await,
                Err(e) => Err(e.to_string()),
            };
            tally(report, sent, 1, |r| &mut r.metric_exports);
        }
    }

    /// An export, given the settings' time at most.
    async fn within(
        &self,
        export: impl std::future::Future<Output = opentelemetry_sdk::error::OTelSdkResult>,
    ) -> Result<(), String> {
        // (the exporter's own timeout, and its one retry, fit in this)
        match tokio::time::timeout(self.timeout * 3, export).await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) => Err(e.to_string()),
            Err(_) => Err(format!(
                "no answer within {} s",
                (self.timeout * 3).as_secs()
            )),
        }
    }

    fn shut_down(self) {
        if let Some(m) = self.metrics {
            let _ = m.provider.shutdown_with_timeout(Duration::from_millis(100));
        }
    }
}

/// Counts `n` items as sent (into `sent`) or dropped.
fn tally(
    report: &mut Report,
    outcome: Result<(), String>,
    n: u64,
    sent: fn(&mut Report) -> &mut u64,
) {
    match outcome {
        Ok(()) => *sent(report) += n,
        Err(why) => {
            report.dropped += n;
            report.why.get_or_insert(why);
        }
    }
}
