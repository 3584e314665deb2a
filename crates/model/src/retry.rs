//! Retry decisions: which failures to retry, and how long to wait (the
//! rules are documented on [`RetryPolicy`]).

use crate::config::RetryPolicy;
use reqwest::header::HeaderMap;
use std::time::{Duration, SystemTime};

/// Whether the server's answer should be retried.
pub(crate) fn should_retry_status(status: u16, headers: &HeaderMap) -> bool {
    match header_str(headers, "x-should-retry") {
        Some("true") => return true,
        Some("false") => return false,
        _ => {}
    }
    matches!(status, 408 | 409 | 429) || status >= 500
}

/// How long to wait before retry number `retry` (0 for the first retry).
pub(crate) fn delay(policy: &RetryPolicy, retry: u32, headers: Option<&HeaderMap>) -> Duration {
    if let Some(after) = headers.and_then(|h| retry_after(h, SystemTime::now()))
        && after <= policy.max_retry_after
    {
        return after;
    }
    backoff(policy, retry, rand::random::<f64>())
}

/// `min(initial × 2^retry, max) × (1 − 0.25 × jitter)`, `jitter` in [0, 1).
pub(crate) fn backoff(policy: &RetryPolicy, retry: u32, jitter: f64) -> Duration {
    let factor = 2f64.powi(retry.min(30) as i32);
    let base = policy.initial_backoff.as_secs_f64() * factor;
    let capped = base.min(policy.max_backoff.as_secs_f64());
    Duration::from_secs_f64(capped * (1.0 - 0.25 * jitter.clamp(0.0, 1.0)))
}

/// The wait the server asked for: `retry-after-ms`, then `retry-after`.
pub(crate) fn retry_after(headers: &HeaderMap, now: SystemTime) -> Option<Duration> {
    if let Some(ms) = header_str(headers, "retry-after-ms").and_then(|v| v.parse::<f64>().ok())
        && ms.is_finite()
        && ms >= 0.0
    {
        return Some(Duration::from_secs_f64(ms / 1000.0));
    }
    let value = header_str(headers, "retry-after")?;
    if let Ok(secs) = value.parse::<f64>() {
        return (secs.is_finite() && secs >= 0.0).then(|| Duration::from_secs_f64(secs));
    }
    let when = httpdate::parse_http_date(value).ok()?;
    Some(when.duration_since(now).unwrap_or(Duration::ZERO))
}

fn header_str<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers.get(name)?.to_str().ok().map(str::trim)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use reqwest::header::HeaderValue;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(*k, HeaderValue::from_str(v).unwrap());
        }
        h
    }

    #[test]
    fn status_rules_and_the_server_override() {
        let none = HeaderMap::new();
        for s in [408, 409, 429, 500, 502, 503, 504, 529] {
            assert!(should_retry_status(s, &none), "{s}");
        }
        for s in [400, 401, 403, 404, 413, 422] {
            assert!(!should_retry_status(s, &none), "{s}");
        }
        assert!(should_retry_status(
            400,
            &headers(&[("x-should-retry", "true")])
        ));
        assert!(!should_retry_status(
            529,
            &headers(&[("x-should-retry", "false")])
        ));
    }

    #[test]
    fn backoff_doubles_up_to_the_cap_with_at_most_a_quarter_off() {
        let p = RetryPolicy::default();
        assert_eq!(backoff(&p, 0, 0.0), Duration::from_millis(500));
        assert_eq!(backoff(&p, 1, 0.0), Duration::from_secs(1));
        assert_eq!(backoff(&p, 4, 0.0), Duration::from_secs(8));
        assert_eq!(backoff(&p, 6, 0.0), Duration::from_secs(32));
        assert_eq!(backoff(&p, 9, 0.0), Duration::from_secs(32));
        let all: Duration = (0..p.max_retries).map(|r| backoff(&p, r, 0.0)).sum();
        assert!(
            all > Duration::from_secs(120) && all < Duration::from_secs(240),
            "ten tries over a few minutes: {all:?}"
        );
        assert_eq!(backoff(&p, 0, 1.0), Duration::from_millis(375));
        for retry in 0..6 {
            let d = delay(&p, retry, None);
            assert!(d <= backoff(&p, retry, 0.0) && d >= backoff(&p, retry, 1.0));
        }
    }

    #[test]
    fn retry_after_ms_then_seconds_then_date() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        let h = headers(&[("retry-after-ms", "50"), ("retry-after", "3")]);
        assert_eq!(retry_after(&h, now), Some(Duration::from_millis(50)));
        let h = headers(&[("retry-after", "1.5")]);
        assert_eq!(retry_after(&h, now), Some(Duration::from_millis(1500)));
        let date = httpdate::fmt_http_date(now + Duration::from_secs(7));
        let h = headers(&[("retry-after", &date)]);
        assert_eq!(retry_after(&h, now), Some(Duration::from_secs(7)));
        let h = headers(&[("retry-after", "soon")]);
        assert_eq!(retry_after(&h, now), None);
    }

    #[test]
    fn an_unreasonable_retry_after_falls_back_to_backoff() {
        let p = RetryPolicy::default();
        let h = headers(&[("retry-after", "3600")]);
        assert!(delay(&p, 0, Some(&h)) <= Duration::from_millis(500));
        let h = headers(&[("retry-after", "2")]);
        assert_eq!(delay(&p, 0, Some(&h)), Duration::from_secs(2));
    }
}
