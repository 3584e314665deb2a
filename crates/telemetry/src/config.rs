//! Where telemetry goes and what it may say: the standard `OTEL_*`
//! variables over the `[telemetry]` table of the person's configuration
//! (or of a project the person trusts — the host decides which table it
//! passes). Off unless one of them turns it on.

use serde::Deserialize;
use std::collections::BTreeMap;
use std::time::Duration;

/// The `[telemetry]` table.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TelemetryFile {
    /// On (to `endpoint`, else the protocol's local default) or off (even
    /// when `OTEL_EXPORTER_OTLP_ENDPOINT` is set).
    pub enabled: Option<bool>,
    /// The collector's address (`OTEL_EXPORTER_OTLP_ENDPOINT`).
    pub endpoint: Option<String>,
    /// `http/protobuf` or `grpc` (`OTEL_EXPORTER_OTLP_PROTOCOL`).
    pub protocol: Option<String>,
    /// Headers sent with every export (`OTEL_EXPORTER_OTLP_HEADERS`).
    pub headers: BTreeMap<String, String>,
    /// Attributes of the resource (`OTEL_RESOURCE_ATTRIBUTES`).
    pub resource_attributes: BTreeMap<String, String>,
    /// A prompt's text in `user_prompt` (`OTEL_LOG_USER_PROMPTS=1`).
    pub log_user_prompts: Option<bool>,
    /// A tool's input in `tool_result`, a hook's command in
    /// `hook_execution` (`OTEL_LOG_TOOL_DETAILS=1`).
    pub log_tool_details: Option<bool>,
}

/// The wire.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Protocol {
    /// OTLP over HTTP, protobuf bodies.
    HttpProtobuf,
    /// OTLP over gRPC.
    Grpc,
}

impl Protocol {
    /// Its name in `OTEL_EXPORTER_OTLP_PROTOCOL`.
    pub fn as_str(self) -> &'static str {
        match self {
            Protocol::HttpProtobuf => "http/protobuf",
            Protocol::Grpc => "grpc",
        }
    }

    fn parse(text: &str, from: &str) -> Result<Protocol, String> {
        match text.trim() {
            "http/protobuf" => Ok(Protocol::HttpProtobuf),
            "grpc" => Ok(Protocol::Grpc),
            "http/json" => Err(format!(
                "{from} is `http/json`, which hermitcrab does not send; use `http/protobuf` or `grpc`"
            )),
            other => Err(format!(
                "{from} is `{other}`; use `http/protobuf` or `grpc`"
            )),
        }
    }
}

/// The signals, each on or off (`OTEL_TRACES_EXPORTER=none`, …).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Signals {
    /// Spans.
    pub traces: bool,
    /// Metrics.
    pub metrics: bool,
    /// Events.
    pub logs: bool,
}

/// Telemetry as resolved: where it goes and what it says.
#[derive(Clone, Debug, PartialEq)]
pub struct Settings {
    /// The collector's base address.
    pub endpoint: String,
    /// Each signal's own address, when its variable names one
    /// (`OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`, …), used as it is.
    pub signal_endpoints: [Option<String>; 3],
    /// The wire.
    pub protocol: Protocol,
    /// Headers (the table's; the variables' are read by the exporter).
    pub headers: BTreeMap<String, String>,
    /// Resource attributes beyond the variables'.
    pub resource: BTreeMap<String, String>,
    /// What is sent.
    pub signals: Signals,
    /// What may be said.
    pub detail: crate::view::Detail,
    /// How long one export may take.
    pub timeout: Duration,
    /// Metrics as deltas since the last export, not running sums
    /// (`OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE=delta`).
    pub delta: bool,
}

/// The default address of a protocol's local collector.
fn default_endpoint(protocol: Protocol) -> &'static str {
    match protocol {
        Protocol::HttpProtobuf => "http://localhost:4318",
        Protocol::Grpc => "http://localhost:4317",
    }
}

impl Settings {
    /// Telemetry as `env` and `file` say (none: off); an error names the
    /// setting that is wrong and what it may be.
    pub fn resolve(
        file: Option<&TelemetryFile>,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Option<Settings>, String> {
        let env = |name: &str| env(name).filter(|v| !v.trim().is_empty());
        let file = file.cloned().unwrap_or_default();
        if env("OTEL_SDK_DISABLED").is_some_and(|v| v.trim().eq_ignore_ascii_case("true")) {
            return Ok(None);
        }
        let signal_endpoints = [
            env("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"),
            env("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT"),
            env("OTEL_EXPORTER_OTLP_LOGS_ENDPOINT"),
        ];
        let endpoint = env("OTEL_EXPORTER_OTLP_ENDPOINT").or(file.endpoint.clone());
        let asked = endpoint.is_some() || signal_endpoints.iter().any(Option::is_some);
        // (Claude Code's switch, which the Agent SDK's programs set)
        let claude = env("CLAUDE_CODE_ENABLE_TELEMETRY").is_some_and(|v| v.trim() == "1");
        match file.enabled {
            Some(false) => return Ok(None),
            None if !asked && !claude => return Ok(None),
            _ => {}
        }
        let protocol = match (env("OTEL_EXPORTER_OTLP_PROTOCOL"), &file.protocol) {
            (Some(p), _) => Protocol::parse(&p, "OTEL_EXPORTER_OTLP_PROTOCOL")?,
            (None, Some(p)) => Protocol::parse(p, "`protocol` in [telemetry]")?,
            (None, None) => Protocol::HttpProtobuf,
        };
        let endpoint = endpoint.unwrap_or_else(|| default_endpoint(protocol).to_owned());
        check_endpoint(&endpoint)?;
        for e in signal_endpoints.iter().flatten() {
            check_endpoint(e)?;
        }
        let signals = Signals {
            traces: exporter_on(env("OTEL_TRACES_EXPORTER"), "OTEL_TRACES_EXPORTER")?,
            metrics: exporter_on(env("OTEL_METRICS_EXPORTER"), "OTEL_METRICS_EXPORTER")?,
            logs: exporter_on(env("OTEL_LOGS_EXPORTER"), "OTEL_LOGS_EXPORTER")?,
        };
        // (a value that is neither on nor off is refused, not read as off)
        let flag = |name: &str, file: Option<bool>| match env(name).as_deref().map(str::trim) {
            Some("1" | "true" | "TRUE" | "True") => Ok(true),
            Some("0" | "false" | "FALSE" | "False") => Ok(false),
            Some(other) => Err(format!("{name} is `{other}`; use 1 (on) or 0 (off)")),
            None => Ok(file.unwrap_or(false)),
        };
        Ok(Some(Settings {
            endpoint,
            signal_endpoints,
            protocol,
            headers: file.headers,
            resource: file.resource_attributes,
            signals,
            detail: crate::view::Detail {
                user_prompts: flag("OTEL_LOG_USER_PROMPTS", file.log_user_prompts)?,
                tool_details: flag("OTEL_LOG_TOOL_DETAILS", file.log_tool_details)?,
            },
            timeout: Duration::from_secs(3),
            delta: delta(env("OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE"))?,
        }))
    }

    /// The address a signal is sent to (`path`: `v1/traces`, …; gRPC
    /// takes the base address as it is).
    pub fn address(&self, signal: usize, path: &str) -> String {
        if let Some(own) = &self.signal_endpoints[signal] {
            return own.clone();
        }
        match self.protocol {
            Protocol::Grpc => self.endpoint.clone(),
            Protocol::HttpProtobuf => format!("{}/{path}", self.endpoint.trim_end_matches('/')),
        }
    }
}

/// An address is `http://` or `https://` something.
fn check_endpoint(endpoint: &str) -> Result<(), String> {
    let rest = endpoint
        .strip_prefix("http://")
        .or_else(|| endpoint.strip_prefix("https://"));
    match rest {
        Some(host) if !host.is_empty() => Ok(()),
        _ => Err(format!(
            "the OTLP endpoint `{endpoint}` is not an http:// or https:// address"
        )),
    }
}

/// Whether metrics are sent as deltas (`delta`) or running sums
/// (`cumulative`, unset).
fn delta(value: Option<String>) -> Result<bool, String> {
    match value
        .as_deref()
        .map(|v| v.trim().to_ascii_lowercase())
        .as_deref()
    {
        None | Some("cumulative") => Ok(false),
        Some("delta") => Ok(true),
        Some(other) => Err(format!(
            "OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE is `{other}`; use `cumulative` or `delta`"
        )),
    }
}

/// Whether a signal's `OTEL_*_EXPORTER` leaves it on (`otlp`, unset) or
/// turns it off (`none`).
fn exporter_on(value: Option<String>, name: &str) -> Result<bool, String> {
    match value.as_deref().map(str::trim) {
        None | Some("otlp") => Ok(true),
        Some("none") => Ok(false),
        Some(other) => Err(format!(
            "{name} is `{other}`; hermitcrab sends `otlp` (or `none` to send no such signal)"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(vars: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |name| {
            vars.iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| (*v).to_owned())
        }
    }

    #[test]
    fn off_unless_asked() {
        assert_eq!(Settings::resolve(None, &env(&[])), Ok(None));
        let file = TelemetryFile {
            log_user_prompts: Some(true),
            ..TelemetryFile::default()
        };
        assert_eq!(Settings::resolve(Some(&file), &env(&[])), Ok(None));
    }

    #[test]
    fn the_variables_turn_it_on_and_win_over_the_file() {
        let file = TelemetryFile {
            endpoint: Some("http://file:4318".into()),
            protocol: Some("grpc".into()),
            ..TelemetryFile::default()
        };
        let vars = env(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://env:4318/"),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf"),
            ("OTEL_METRICS_EXPORTER", "none"),
        ]);
        let s = Settings::resolve(Some(&file), &vars).unwrap().unwrap();
        assert_eq!(s.protocol, Protocol::HttpProtobuf);
        assert_eq!(s.address(0, "v1/traces"), "http://env:4318/v1/traces");
        assert!(s.signals.traces && !s.signals.metrics && s.signals.logs);
    }

    #[test]
    fn the_file_alone_may_turn_it_on_or_off() {
        let on = TelemetryFile {
            enabled: Some(true),
            protocol: Some("grpc".into()),
            ..TelemetryFile::default()
        };
        let s = Settings::resolve(Some(&on), &env(&[])).unwrap().unwrap();
        assert_eq!(s.address(2, "v1/logs"), "http://localhost:4317");
        let off = TelemetryFile {
            enabled: Some(false),
            ..TelemetryFile::default()
        };
        let vars = env(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://env:4318")]);
        assert_eq!(Settings::resolve(Some(&off), &vars), Ok(None));
    }

    #[test]
    fn claude_codes_switch_turns_it_on_to_the_local_default() {
        let vars = env(&[
            ("CLAUDE_CODE_ENABLE_TELEMETRY", "1"),
            ("OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE", "delta"),
        ]);
        let s = Settings::resolve(None, &vars).unwrap().unwrap();
        assert_eq!(
            s.address(1, "v1/metrics"),
            "http://localhost:4318/v1/metrics"
        );
        assert!(s.delta);
    }

    #[test]
    fn wrong_values_say_what_is_allowed() {
        let vars = env(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://env:4318"),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json"),
        ]);
        let e = Settings::resolve(None, &vars).unwrap_err();
        assert!(e.contains("http/protobuf"), "{e}");
        let vars = env(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "collector:4317")]);
        assert!(Settings::resolve(None, &vars).is_err());
        let vars = env(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://env:4318"),
            ("OTEL_LOGS_EXPORTER", "console"),
        ]);
        assert!(Settings::resolve(None, &vars).unwrap_err().contains("none"));
        let vars = env(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://env:4318"),
            ("OTEL_LOG_USER_PROMPTS", "yes"),
        ]);
        assert!(
            Settings::resolve(None, &vars)
                .unwrap_err()
                .contains("use 1")
        );
    }
}
