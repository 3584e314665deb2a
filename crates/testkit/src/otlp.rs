//! A real OTLP collector for tests: it takes what an exporter sends over
//! http/protobuf (`POST /v1/traces|metrics|logs`) or gRPC (the collector
//! services), decodes it with the official OpenTelemetry protobuf
//! definitions (`opentelemetry-proto`), and keeps it to be looked at.

use axum::body::Bytes;
use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::post;
use opentelemetry_proto::tonic::collector::logs::v1::logs_service_server::{
    LogsService, LogsServiceServer,
};
use opentelemetry_proto::tonic::collector::logs::v1::{
    ExportLogsServiceRequest, ExportLogsServiceResponse,
};
use opentelemetry_proto::tonic::collector::metrics::v1::metrics_service_server::{
    MetricsService, MetricsServiceServer,
};
use opentelemetry_proto::tonic::collector::metrics::v1::{
    ExportMetricsServiceRequest, ExportMetricsServiceResponse,
};
use opentelemetry_proto::tonic::collector::trace::v1::trace_service_server::{
    TraceService, TraceServiceServer,
};
use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use std::sync::{Arc, Mutex, PoisonError};

/// What the collector received, decoded.
#[derive(Clone, Debug, Default)]
pub struct Received {
    /// Each trace export.
    pub traces: Vec<ExportTraceServiceRequest>,
    /// Each metrics export.
    pub metrics: Vec<ExportMetricsServiceRequest>,
    /// Each logs export.
    pub logs: Vec<ExportLogsServiceRequest>,
    /// Paths of requests it could not decode.
    pub undecodable: Vec<String>,
    /// Every header (gRPC: metadata) of every export, lowercase name and
    /// value.
    pub headers: Vec<(String, String)>,
}

type Shared = Arc<Mutex<Received>>;

/// A collector on 127.0.0.1, on a thread and runtime of its own (usable
/// from a test's runtime or none), ending when dropped.
pub struct Collector {
    /// Its address (`http://127.0.0.1:PORT`).
    pub endpoint: String,
    received: Shared,
    _stop: tokio::sync::oneshot::Sender<()>,
}

impl Collector {
    /// One taking http/protobuf.
    pub fn http() -> std::io::Result<Collector> {
        Collector::start(false)
    }

    /// One taking gRPC.
    pub fn grpc() -> std::io::Result<Collector> {
        Collector::start(true)
    }

    fn start(grpc: bool) -> std::io::Result<Collector> {
        let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
        listener.set_nonblocking(true)?;
        let endpoint = format!("http://{}", listener.local_addr()?);
        let received = Shared::default();
        let shared = Arc::clone(&received);
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        std::thread::Builder::new()
            .name("otlp-collector".into())
            .spawn(move || {
                runtime.block_on(async move {
                    let Ok(listener) = tokio::net::TcpListener::from_std(listener) else {
                        return;
                    };
                    tokio::select! {
                        _ = serve(listener, shared, grpc) => {}
                        _ = stopped => {}
                    }
                });
            })?;
        Ok(Collector {
            endpoint,
            received,
            _stop: stop,
        })
    }

    /// What it has received so far.
    pub fn received(&self) -> Received {
        self.received
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

/// Serves OTLP on `listener` until the end.
async fn serve(listener: tokio::net::TcpListener, shared: Shared, grpc: bool) {
    match grpc {
        false => {
            let app = axum::Router::new()
                .route("/v1/traces", post(http::<ExportTraceServiceRequest>))
                .route("/v1/metrics", post(http::<ExportMetricsServiceRequest>))
                .route("/v1/logs", post(http::<ExportLogsServiceRequest>))
                .with_state(shared);
            let _ = axum::serve(listener, app).await;
        }
        true => {
            let incoming = tokio_stream::wrappers::TcpListenerStream::new(listener);
            let _ = tonic::transport::Server::builder()
                .add_service(TraceServiceServer::new(Grpc(Arc::clone(&shared))))
                .add_service(MetricsServiceServer::new(Grpc(Arc::clone(&shared))))
                .add_service(LogsServiceServer::new(Grpc(shared)))
                .serve_with_incoming(incoming)
                .await;
        }
    }
}

fn keep(shared: &Shared, f: impl FnOnce(&mut Received)) {
    f(&mut shared.lock().unwrap_or_else(PoisonError::into_inner));
}

/// Keeps an export's headers.
fn heard(shared: &Shared, headers: &axum::http::HeaderMap) {
    let pairs = headers.iter().map(|(k, v)| {
        (
            k.as_str().to_owned(),
            v.to_str().unwrap_or_default().to_owned(),
        )
    });
    keep(shared, |got| got.headers.extend(pairs));
}

/// An export request the collector keeps, where it keeps it.
trait Kept: prost::Message + Default + Sized {
    /// Its path over http/protobuf.
    const PATH: &'static str;
    /// Keeps it.
    fn keep_in(self, got: &mut Received);
}

impl Kept for ExportTraceServiceRequest {
    const PATH: &'static str = "/v1/traces";
    fn keep_in(self, got: &mut Received) {
        got.traces.push(self);
    }
}

impl Kept for ExportMetricsServiceRequest {
    const PATH: &'static str = "/v1/metrics";
    fn keep_in(self, got: &mut Received) {
        got.metrics.push(self);
    }
}

impl Kept for ExportLogsServiceRequest {
    const PATH: &'static str = "/v1/logs";
    fn keep_in(self, got: &mut Received) {
        got.logs.push(self);
    }
}

/// `POST /v1/…`: the body decoded and kept (or its path noted).
async fn http<T: Kept>(
    State(s): State<Shared>,
    headers: axum::http::HeaderMap,
    body: Bytes,
) -> StatusCode {
    heard(&s, &headers);
    match T::decode(body) {
        Ok(request) => keep(&s, |got| request.keep_in(got)),
        Err(_) => keep(&s, |got| got.undecodable.push(T::PATH.into())),
    }
    StatusCode::OK
}

/// A gRPC export kept, with its metadata.
fn took<T: Kept>(shared: &Shared, request: tonic::Request<T>) {
    heard(shared, &request.metadata().clone().into_headers());
    keep(shared, |got| request.into_inner().keep_in(got));
}

/// The gRPC services, keeping what they are sent.
#[derive(Clone)]
struct Grpc(Shared);

#[tonic::async_trait]
impl TraceService for Grpc {
    async fn export(
        &self,
        request: tonic::Request<ExportTraceServiceRequest>,
    ) -> Result<tonic::Response<ExportTraceServiceResponse>, tonic::Status> {
        took(&self.0, request);
        Ok(tonic::Response::new(ExportTraceServiceResponse::default()))
    }
}

#[tonic::async_trait]
impl MetricsService for Grpc {
    async fn export(
        &self,
        request: tonic::Request<ExportMetricsServiceRequest>,
    ) -> Result<tonic::Response<ExportMetricsServiceResponse>, tonic::Status> {
        took(&self.0, request);
        Ok(tonic::Response::new(ExportMetricsServiceResponse::default()))
    }
}

#[tonic::async_trait]
impl LogsService for Grpc {
    async fn export(
        &self,
        request: tonic::Request<ExportLogsServiceRequest>,
    ) -> Result<tonic::Response<ExportLogsServiceResponse>, tonic::Status> {
        took(&self.0, request);
        Ok(tonic::Response::new(ExportLogsServiceResponse::default()))
    }
}
