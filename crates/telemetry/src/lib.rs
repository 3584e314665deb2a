//! hermitcrab's OpenTelemetry: what the substrate holds of a session — its
//! runs, model calls and tool runs, its events and counts — sent over OTLP
//! (http/protobuf or gRPC) as each run ends, or after the fact with the
//! times it happened. Export is a view of the substrate: the same reading
//! serves both, and span ids are derived from substrate ids, so the trace
//! a tool was handed (`TRACEPARENT`) is the one the collector receives.
//!
//! Never knows about: a front end, a terminal, the engine's insides — it
//! reads the substrate and the agent's contract only.

mod config;
mod export;
mod otel;
pub mod view;

pub use config::{Protocol, Settings, Signals, TelemetryFile};
pub use export::{Exporter, Report};

use anyhow::Result;
use export::Job;
use std::sync::Arc;
use substrate::Substrate;

/// Telemetry, started: runs sent as they end.
pub struct Telemetry {
    exporter: Exporter,
    settings: Settings,
}

impl Telemetry {
    /// Starts sending as `settings` say.
    pub fn start(settings: Settings) -> Result<Telemetry> {
        Ok(Telemetry {
            exporter: Exporter::start(settings.clone())?,
            settings,
        })
    }

    /// The settings it sends by.
    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    /// Queues run `run` of `session`, which has ended: the thread reads
    /// it and sends its spans, events and metrics.
    pub fn run_ended(&self, db: Arc<Substrate>, session: &str, run: &str) {
        self.exporter.send(Job::Ended {
            db,
            session: session.to_owned(),
            run: run.to_owned(),
            detail: self.settings.detail,
        });
    }

    /// Queues every run of `session` as it was (spans and events; no
    /// metrics: a metric cannot carry an old time); answers how many.
    pub fn send_past(&self, db: &Substrate, session: &str) -> Result<usize> {
        let runs = view::session(db, session, self.settings.detail)?;
        let n = runs.len();
        for signals in runs {
            self.exporter.send(Job::Past(Box::new(signals)));
        }
        Ok(n)
    }

    /// Sends what is queued (waiting at most `wait`) and says what was
    /// not sent.
    pub fn finish(self, wait: std::time::Duration) -> Report {
        self.exporter.finish(wait)
    }
}
