//! `hc trace --otel [SESSION…|--since DATE]`: past sessions sent to the
//! OpenTelemetry collector from the substrate, with the times they
//! happened and the names a live run's telemetry has.

use crate::exit::exit;
use anyhow::Result;
use hc_host::open::{Find, Staged};
use hc_host::trust::Ask;
use std::time::{Duration, SystemTime};

/// Sends `given` (ids or prefixes), or the sessions made since `since`,
/// or else the newest.
pub fn send(given: &[String], since: Option<&str>) -> Result<()> {
    let staged = Staged::here(Find::Existing, Ask::Never)?;
    let Some(settings) = staged.files.telemetry_settings()? else {
        return Err(exit(
            2,
            "hc trace --otel sends to an OpenTelemetry collector: set OTEL_EXPORTER_OTLP_ENDPOINT \
             (and OTEL_EXPORTER_OTLP_PROTOCOL=grpc for gRPC), or `endpoint` under [telemetry] in \
             your configuration",
        ));
    };
    if !settings.signals.traces && !settings.signals.logs {
        return Err(exit(
            2,
            "OTEL_TRACES_EXPORTER and OTEL_LOGS_EXPORTER are both `none`: a past session is sent \
             as spans and events (metrics cannot carry its times)",
        ));
    }
    let (db, _) = staged.project.open()?;
    let sessions = match (given, since) {
        (_, Some(date)) if !given.is_empty() => {
            return Err(exit(
                2,
                format!("name sessions or --since {date}, not both"),
            ));
        }
        (_, Some(date)) => hc_host::sessions::made_since(&db, parse_since(date)?)?,
        ([], None) => vec![hc_host::sessions::newest(&db)?],
        (ids, None) => ids
            .iter()
            .map(|id| hc_host::sessions::resolve(&db, id))
            .collect::<Result<_>>()?,
    };
    let endpoint = settings.endpoint.clone();
    let telemetry = hc_telemetry::Telemetry::start(settings)?;
    let mut runs = 0;
    for session in &sessions {
        runs += telemetry.send_past(&db, session)?;
    }
    let report = telemetry.finish(Duration::from_secs(60));
    println!(
        "sent {} session{} ({runs} run{}): {} spans, {} events to {endpoint}",
        sessions.len(),
        plural(sessions.len()),
        plural(runs),
        report.spans,
        report.events,
    );
    match report.said(&endpoint) {
        Some(said) => Err(exit(1, said)),
        None => Ok(()),
    }
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

/// `--since`: a date, a time, or an age (`7d`: a week ago).
fn parse_since(text: &str) -> Result<SystemTime> {
    if let Ok(age) = humantime::parse_duration(text) {
        return Ok(SystemTime::now() - age);
    }
    let time = match text.len() {
        10 => format!("{text}T00:00:00Z"),
        _ => text.to_owned(),
    };
    humantime::parse_rfc3339_weak(&time).map_err(|_| {
        exit(
            2,
            format!("--since {text}: give a date (2026-11-01), an RFC 3339 time, or an age (7d)"),
        )
    })
}
