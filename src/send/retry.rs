//! The retry policy of the official SDKs (`../shared/docs/anthropic-api-facts.md`
//! §3.4, source-verified against anthropic-sdk-python v0.121.0
//! `_base_client.py` and anthropic-sdk-typescript v0.120.0 `src/client.ts`):
//!
//! - **Whether:** `x-should-retry: true` retries and `x-should-retry: false`
//!   does not, whatever the status (the header wins over everything); else
//!   408, 409, 429 and every status ≥ 500 (500/502/503/504/529) are retried,
//!   and so are connection errors and timeouts; every other 4xx is final.
//!   One exception from §3.1: the tier spend-cap 429
//!   (`error.details.error_code: "enforced_spend_limit_reached"`, sent
//!   without `retry-after`) keeps failing until the next month, so it is
//!   final (unless `x-should-retry: true` says otherwise).
//! - **How long:** `retry-after-ms` (milliseconds), else `retry-after` as
//!   seconds (a float), else `retry-after` as an HTTP date; a value is used
//!   when it is > 0, whatever its size (the TypeScript SDK since v0.79.0;
//!   Python ignores values over 60 s and retries into the limit again).
//!   Otherwise the backoff `min(0.5 · 2^n, 8) s × (1 − 0.25·U)`, `n` the
//!   retries already taken (0, 1, …), `U` uniform in [0, 1): 75–100 % of
//!   the base.
//! - **How often:** `--max-attempts` attempts in all (default 5; the SDKs'
//!   default is 3).
//! - **How long at most:** a wait is capped by `--max-retry-wait` (default
//!   [`DEFAULT_MAX_RETRY_WAIT`]). A backoff never exceeds 8 s; a server that
//!   asks for more than the cap (`retry-after: 86400`) is not waited for:
//!   [`decide_capped`] says [`Decision::Defer`] and the request is recorded
//!   as rate-limited, sent again by the next run.

use reqwest::header::HeaderMap;
use std::time::{Duration, SystemTime};

/// A failed attempt, as the policy sees it.
#[derive(Debug, Clone, Copy)]
pub enum Failure<'a> {
    /// An HTTP reply that is not a success (or a 200 stream that carried an
    /// `event: error`, mapped to its status by [`status_of_error_type`]).
    Status { status: u16, headers: &'a HeaderMap, spend_cap: bool },
    /// No reply: connection refused or reset, or the reply cut short.
    Connection,
    /// No reply within `--timeout`.
    Timeout,
}

/// Whether the attempt is retried (facts §3.4).
pub fn should_retry(f: &Failure<'_>) -> bool {
    match *f {
        Failure::Connection | Failure::Timeout => true,
        Failure::Status { status, headers, spend_cap } => {
            match headers.get("x-should-retry").and_then(|v| v.to_str().ok()).map(str::trim) {
                Some("true") => return true,
                Some("false") => return false,
                _ => {}
            }
            if spend_cap {
                return false;
            }
            matches!(status, 408 | 409 | 429) || status >= 500
        }
    }
}

/// The wait the server asked for: `retry-after-ms`, else `retry-after` in
/// seconds, else `retry-after` as an HTTP date (relative to `now`); `None`
/// when absent, unparseable or not > 0.
pub fn server_wait(headers: &HeaderMap, now: SystemTime) -> Option<Duration> {
    let text = |name: &str| headers.get(name).and_then(|v| v.to_str().ok()).map(str::trim);
    let positive = |secs: f64| (secs.is_finite() && secs > 0.0).then(|| Duration::from_secs_f64(secs.min(1e9)));
    if let Some(ms) = text("retry-after-ms").and_then(|t| t.parse::<f64>().ok()) {
        return positive(ms / 1000.0);
    }
    let after = text("retry-after")?;
    if let Ok(secs) = after.parse::<f64>() {
        return positive(secs);
    }
    let at = httpdate::parse_http_date(after).ok()?;
    at.duration_since(now).ok().filter(|d| !d.is_zero())
}

/// The SDK backoff: `min(0.5 · 2^retries_taken, 8) s × (1 − 0.25·u)`,
/// `u` in [0, 1).
pub fn backoff(retries_taken: u32, u: f64) -> Duration {
    let base = (0.5 * 2f64.powi(retries_taken.min(16) as i32)).min(8.0);
    Duration::from_secs_f64(base * (1.0 - 0.25 * u.clamp(0.0, 1.0)))
}

/// The wait before the next attempt: the server's ([`server_wait`]) when
/// it gave one, else [`backoff`].
pub fn wait(f: &Failure<'_>, retries_taken: u32, u: f64, now: SystemTime) -> Duration {
    match f {
        Failure::Status { headers, .. } => server_wait(headers, now).unwrap_or_else(|| backoff(retries_taken, u)),
        _ => backoff(retries_taken, u),
    }
}

/// The default `--max-retry-wait`: 60 s, the bound the Python SDK puts on
/// a `retry-after` it honours (facts §3.4; LiteLLM's router uses the same
/// bound, facts §6.2).
pub const DEFAULT_MAX_RETRY_WAIT: Duration = Duration::from_secs(60);

/// The decision after a failed attempt number `attempt` (1-based).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    Retry(Duration),
    Final,
    /// The server asked for this wait, longer than the cap: not waited
    /// for; the request is left for the next run ([`decide_capped`]).
    Defer(Duration),
}

/// [`decide`], with the wait bounded by `max_wait`: a longer wait the
/// server asked for is [`Decision::Defer`] (a backoff is at most 8 s and
/// only cut to `max_wait`).
pub fn decide_capped(
    f: &Failure<'_>,
    attempt: u32,
    max_attempts: u32,
    max_wait: Duration,
    u: f64,
    now: SystemTime,
) -> Decision {
    match decide(f, attempt, max_attempts, u, now) {
        Decision::Retry(wait) if wait > max_wait => {
            let asked = match f {
                Failure::Status { headers, .. } => server_wait(headers, now),
                _ => None,
            };
            match asked {
                Some(asked) if asked > max_wait => Decision::Defer(asked),
                _ => Decision::Retry(max_wait),
            }
        }
        d => d,
    }
}

/// A duration flag: a number with an optional unit `ms`, `s`, `m` or `h`
/// (`60`, `60s`, `1.5m`, `500ms`); a bare number is seconds.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let t = text.trim();
    let split = t.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let n: f64 = num.parse().map_err(|_| format!("{text:?} is not a duration (e.g. 60s, 500ms, 2m)"))?;
    let secs = match unit.trim() {
        "" | "s" => n,
        "ms" => n / 1000.0,
        "m" => n * 60.0,
        "h" => n * 3600.0,
        u => return Err(format!("{text:?}: unknown unit {u:?} (ms, s, m or h)")),
    };
    if !secs.is_finite() || secs > 1e9 {
        return Err(format!("{text:?} is too long a duration"));
    }
    Ok(Duration::from_secs_f64(secs))
}

/// Retry (and after how long) or stop.
pub fn decide(f: &Failure<'_>, attempt: u32, max_attempts: u32, u: f64, now: SystemTime) -> Decision {
    if attempt >= max_attempts || !should_retry(f) {
        return Decision::Final;
    }
    Decision::Retry(wait(f, attempt.saturating_sub(1), u, now))
}

/// The HTTP status of an error `type` (facts §3.3), for errors that arrive
/// inside a 200 stream (`event: error`): `overloaded_error` is retried as a
/// 529, `api_error` as a 500, and so on. An unknown type counts as 500.
pub fn status_of_error_type(kind: &str) -> u16 {
    match kind {
        "invalid_request_error" => 400,
        "authentication_error" => 401,
        "billing_error" => 402,
        "permission_error" => 403,
        "not_found_error" => 404,
        "conflict_error" => 409,
        "request_too_large" => 413,
        "rate_limit_error" => 429,
        "api_error" => 500,
        "timeout_error" => 504,
        "overloaded_error" => 529,
        _ => 500,
    }
}

/// The tier spend-cap 429 (facts §3.1): never retried.
pub fn is_spend_cap(error_body: &serde_json::Value) -> bool {
    error_body.pointer("/error/details/error_code").and_then(|v| v.as_str()) == Some("enforced_spend_limit_reached")
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::{HeaderName, HeaderValue};

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(HeaderName::from_bytes(k.as_bytes()).unwrap(), HeaderValue::from_str(v).unwrap());
        }
        h
    }

    fn status(s: u16, h: &HeaderMap) -> Failure<'_> {
        Failure::Status { status: s, headers: h, spend_cap: false }
    }

    #[test]
    fn which_statuses_retry() {
        let none = HeaderMap::new();
        for s in [408, 409, 429, 500, 502, 503, 504, 529, 599] {
            assert!(should_retry(&status(s, &none)), "{s}");
        }
        for s in [400, 401, 402, 403, 404, 405, 413, 422, 499] {
            assert!(!should_retry(&status(s, &none)), "{s}");
        }
        assert!(should_retry(&Failure::Connection));
        assert!(should_retry(&Failure::Timeout));
    }

    #[test]
    fn x_should_retry_wins() {
        let yes = headers(&[("x-should-retry", "true")]);
        let no = headers(&[("x-should-retry", "false")]);
        assert!(should_retry(&status(400, &yes)));
        assert!(should_retry(&status(401, &yes)));
        assert!(!should_retry(&status(529, &no)));
        assert!(!should_retry(&status(429, &no)));
        assert!(!should_retry(&status(500, &no)));
        // Anything else in the header is ignored.
        let odd = headers(&[("x-should-retry", "maybe")]);
        assert!(should_retry(&status(503, &odd)));
        assert!(!should_retry(&status(400, &odd)));
        // The spend cap is final unless the header says otherwise.
        let none = HeaderMap::new();
        assert!(!should_retry(&Failure::Status { status: 429, headers: &none, spend_cap: true }));
        assert!(should_retry(&Failure::Status { status: 429, headers: &yes, spend_cap: true }));
    }

    #[test]
    fn retry_after_ms_before_retry_after() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        let h = headers(&[("retry-after-ms", "1500"), ("retry-after", "30")]);
        assert_eq!(server_wait(&h, now), Some(Duration::from_millis(1500)));
        let h = headers(&[("retry-after-ms", "250.5")]);
        assert_eq!(server_wait(&h, now), Some(Duration::from_micros(250_500)));
        // Unparseable ms: fall back to retry-after.
        let h = headers(&[("retry-after-ms", "soon"), ("retry-after", "2")]);
        assert_eq!(server_wait(&h, now), Some(Duration::from_secs(2)));
        let h = headers(&[("retry-after", "0.25")]);
        assert_eq!(server_wait(&h, now), Some(Duration::from_millis(250)));
        // Long waits are honoured (TypeScript SDK ≥ 0.79.0).
        let h = headers(&[("retry-after", "171")]);
        assert_eq!(server_wait(&h, now), Some(Duration::from_secs(171)));
        // Zero, negative, garbage: no server wait.
        for v in ["0", "-3", "abc", "NaN", "inf"] {
            assert_eq!(server_wait(&headers(&[("retry-after", v)]), now), None, "{v}");
        }
        assert_eq!(server_wait(&headers(&[("retry-after-ms", "0")]), now), None);
        assert_eq!(server_wait(&HeaderMap::new(), now), None);
    }

    #[test]
    fn retry_after_http_date() {
        let now = httpdate::parse_http_date("Sun, 06 Nov 1994 08:49:30 GMT").unwrap();
        let h = headers(&[("retry-after", "Sun, 06 Nov 1994 08:49:37 GMT")]);
        assert_eq!(server_wait(&h, now), Some(Duration::from_secs(7)));
        // A date in the past: no server wait (backoff instead).
        let h = headers(&[("retry-after", "Sun, 06 Nov 1994 08:49:00 GMT")]);
        assert_eq!(server_wait(&h, now), None);
        let f = status(503, &h);
        assert_eq!(wait(&f, 0, 0.0, now), Duration::from_millis(500));
    }

    #[test]
    fn backoff_bounds() {
        let expect = [0.5, 1.0, 2.0, 4.0, 8.0, 8.0, 8.0];
        for (n, base) in expect.iter().enumerate() {
            let n = n as u32;
            assert_eq!(backoff(n, 0.0), Duration::from_secs_f64(*base), "n={n} u=0 is the full base");
            assert_eq!(backoff(n, 1.0), Duration::from_secs_f64(base * 0.75), "n={n} u=1 is 75%");
            let mid = backoff(n, 0.5).as_secs_f64();
            assert!((mid - base * 0.875).abs() < 1e-9);
        }
        assert_eq!(backoff(1000, 0.0), Duration::from_secs(8));
    }

    #[test]
    fn decide_counts_attempts_and_uses_server_wait() {
        let now = SystemTime::UNIX_EPOCH;
        let none = HeaderMap::new();
        let f = status(529, &none);
        assert_eq!(decide(&f, 1, 5, 0.0, now), Decision::Retry(Duration::from_millis(500)));
        assert_eq!(decide(&f, 2, 5, 0.0, now), Decision::Retry(Duration::from_secs(1)));
        assert_eq!(decide(&f, 4, 5, 0.0, now), Decision::Retry(Duration::from_secs(4)));
        assert_eq!(decide(&f, 5, 5, 0.0, now), Decision::Final);
        assert_eq!(decide(&status(400, &none), 1, 5, 0.0, now), Decision::Final);
        let h = headers(&[("retry-after", "3")]);
        assert_eq!(decide(&status(429, &h), 1, 5, 0.9, now), Decision::Retry(Duration::from_secs(3)));
        assert_eq!(decide(&Failure::Connection, 1, 1, 0.0, now), Decision::Final);
    }

    #[test]
    fn waits_are_capped_and_long_server_waits_deferred() {
        let now = SystemTime::UNIX_EPOCH;
        let cap = Duration::from_secs(60);
        let day = headers(&[("retry-after", "86400")]);
        assert_eq!(decide_capped(&status(429, &day), 1, 5, cap, 0.0, now), Decision::Defer(Duration::from_secs(86400)));
        let short = headers(&[("retry-after", "3")]);
        assert_eq!(decide_capped(&status(429, &short), 1, 5, cap, 0.0, now), Decision::Retry(Duration::from_secs(3)));
        // A backoff longer than a tiny cap is cut to it, not deferred.
        let none = HeaderMap::new();
        let tiny = Duration::from_millis(100);
        assert_eq!(decide_capped(&status(529, &none), 3, 5, tiny, 0.0, now), Decision::Retry(tiny));
        assert_eq!(decide_capped(&Failure::Connection, 3, 5, tiny, 0.0, now), Decision::Retry(tiny));
        // The last attempt is final whatever the server asked.
        assert_eq!(decide_capped(&status(429, &day), 5, 5, cap, 0.0, now), Decision::Final);
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("60"), Ok(Duration::from_secs(60)));
        assert_eq!(parse_duration("60s"), Ok(Duration::from_secs(60)));
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("1.5m"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_duration("2h"), Ok(Duration::from_secs(7200)));
        for bad in ["", "s", "1d", "-3", "1e99", "abc"] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn stream_error_types_map_to_statuses() {
        assert_eq!(status_of_error_type("overloaded_error"), 529);
        assert_eq!(status_of_error_type("api_error"), 500);
        assert_eq!(status_of_error_type("invalid_request_error"), 400);
        assert_eq!(status_of_error_type("something_new"), 500);
        let cap = serde_json::json!({"type":"error","error":{"type":"rate_limit_error","message":"x","details":{"error_code":"enforced_spend_limit_reached"}}});
        assert!(is_spend_cap(&cap));
        assert!(!is_spend_cap(&serde_json::json!({"type":"error","error":{"type":"rate_limit_error"}})));
    }
}
