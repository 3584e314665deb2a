//! Times as the engine writes them on processes.

/// RFC 3339 UTC with milliseconds, now.
pub(crate) fn now() -> String {
    humantime::format_rfc3339_millis(std::time::SystemTime::now()).to_string()
}
