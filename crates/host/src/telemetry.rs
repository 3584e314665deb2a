//! Telemetry for the runs this process hosts: started with the host when
//! the environment or `[telemetry]` turns it on, told of each run as it
//! ends (the sending is `hc_telemetry`'s thread: a turn never waits on
//! it), finished when the host closes — what was not sent said once.

use hc_telemetry::{Settings, Telemetry};
use std::sync::{Arc, Mutex, PoisonError};
use substrate::Substrate;

/// This process's telemetry, when on.
static STARTED: Mutex<Option<Telemetry>> = Mutex::new(None);

/// The engine's trace configuration for `settings`: `TRACEPARENT` passed
/// to every process when spans are sent, the host's own continued.
pub fn tracing(settings: Option<&Settings>) -> Option<engine::Tracing> {
    settings.filter(|s| s.signals.traces)?;
    let outer = std::env::var(protocol::trace::TRACEPARENT)
        .ok()
        .and_then(|t| protocol::trace::TraceParent::parse(&t));
    Some(engine::Tracing { outer })
}

/// Starts sending as `settings` say (once a process; a second host's
/// start keeps the first's).
pub fn start(settings: &Settings) -> anyhow::Result<()> {
    let mut started = STARTED.lock().unwrap_or_else(PoisonError::into_inner);
    if started.is_none() {
        *started = Some(Telemetry::start(settings.clone())?);
    }
    Ok(())
}

/// Run `run` of `session` has ended: sent, when telemetry is on.
pub fn run_ended(db: &Arc<Substrate>, session: &str, run: &str) {
    let started = STARTED.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(telemetry) = started.as_ref() {
        telemetry.run_ended(Arc::clone(db), session, run);
    }
}

/// Run `run` of `session` was started by a host that does not follow it
/// to its end (the page): sent when it ends, when telemetry is on.
pub fn when_ended(engine: &engine::Engine, session: &str, run: &str) {
    if STARTED
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .is_none()
    {
        return;
    }
    let (engine, session, run) = (engine.clone(), session.to_owned(), run.to_owned());
    tokio::spawn(async move {
        let ids = [run.clone()];
        if engine
            .await_processes(&engine::Context::host(), &ids)
            .await
            .is_ok()
        {
            run_ended(engine.db(), &session, &run);
        }
    });
}

/// Sends what is queued (a few seconds at most) and says — once — what
/// was not sent.
pub fn finish() {
    let telemetry = STARTED
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .take();
    if let Some(telemetry) = telemetry {
        let endpoint = telemetry.settings().endpoint.clone();
        let report = telemetry.finish(std::time::Duration::from_secs(10));
        if let Some(said) = report.said(&endpoint) {
            eprintln!("hc: {said}");
        }
    }
}
