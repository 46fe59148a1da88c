//! What a run did: live counters (for the progress bar on a terminal) and
//! the summary line printed at the end of every run.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime};

/// Counters updated by the attempts as they go.
#[derive(Debug, Default)]
pub struct Counters {
    pub attempts: AtomicU64,
    pub retries: AtomicU64,
    pub ok: AtomicU64,
    pub failed: AtomicU64,
}

impl Counters {
    pub fn add(c: &AtomicU64) {
        c.fetch_add(1, Ordering::Relaxed);
    }
    pub fn get(c: &AtomicU64) -> u64 {
        c.load(Ordering::Relaxed)
    }
}

/// The end of a run.
#[derive(Debug, Default, Clone)]
pub struct Summary {
    /// Requests in the input (valid lines).
    pub requests: u64,
    /// Already in the journal when the run started (not sent again).
    pub already_done: u64,
    /// Of those, how many had finished with an error status.
    pub already_failed: u64,
    /// Finished in this run and written to the journal.
    pub ok: u64,
    pub failed: u64,
    /// Sent (or waiting to be retried) when the run was stopped: not
    /// journaled, sent again by the next run.
    pub interrupted: u64,
    /// Never started because the run was stopped.
    pub not_started: u64,
    /// HTTP attempts in all, and how many were retries.
    pub attempts: u64,
    pub retries: u64,
    /// Final status → requests.
    pub statuses: BTreeMap<u16, u64>,
    /// Replies with status 429 (any attempt).
    pub rate_limited: u64,
    /// Latency of each finished request's final attempt, ms, sorted.
    pub latencies_ms: Vec<u64>,
    pub elapsed: Duration,
}

impl Summary {
    /// The `p`-th percentile (0–100) of the latencies, nearest rank.
    pub fn percentile_ms(&self, p: f64) -> Option<u64> {
        percentile(&self.latencies_ms, p)
    }

    /// Requests finished per second in this run.
    pub fn rate(&self) -> f64 {
        (self.ok + self.failed) as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }

    /// The line printed at the end of every run.
    pub fn line(&self, command: &str) -> String {
        let ms = |p: f64| self.percentile_ms(p).map_or_else(|| "-".to_string(), |v| format!("{v} ms"));
        let mut s = format!("ctxasm: {command}: {} requests: {} ok, {} failed", self.requests, self.ok, self.failed);
        if self.already_done > 0 {
            s.push_str(&format!(", {} already in the journal", self.already_done));
        }
        if self.interrupted + self.not_started > 0 {
            s.push_str(&format!(", {} interrupted, {} not started", self.interrupted, self.not_started));
        }
        let statuses: Vec<String> =
            self.statuses.iter().filter(|(s, _)| **s != 200).map(|(s, n)| format!("{s}×{n}")).collect();
        if !statuses.is_empty() {
            s.push_str(&format!(" (final status {})", statuses.join(" ")));
        }
        s.push_str(&format!(
            "; {} attempts ({} retries, {} rate-limited); latency p50 {} p99 {}; {:.1} requests/s over {:.2} s",
            self.attempts,
            self.retries,
            self.rate_limited,
            ms(50.0),
            ms(99.0),
            self.rate(),
            self.elapsed.as_secs_f64()
        ));
        s
    }
}

/// Nearest-rank percentile of sorted values.
pub fn percentile(sorted: &[u64], p: f64) -> Option<u64> {
    if sorted.is_empty() {
        return None;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted.get(rank.clamp(1, sorted.len()) - 1).copied()
}

/// A progress bar on stderr (only when stderr is a terminal).
pub fn progress_bar(total: u64) -> Option<indicatif::ProgressBar> {
    use std::io::IsTerminal;
    if !std::io::stderr().is_terminal() || total == 0 {
        return None;
    }
    let bar = indicatif::ProgressBar::new(total);
    if let Ok(style) =
        indicatif::ProgressStyle::with_template("{spinner} [{wide_bar}] {pos}/{len} {msg} {per_sec} eta {eta}")
    {
        bar.set_style(style);
    }
    Some(bar)
}

/// The bar's message from the counters.
pub fn progress_message(c: &Counters) -> String {
    format!(
        "sent {} ok {} retried {} failed {}",
        Counters::get(&c.attempts),
        Counters::get(&c.ok),
        Counters::get(&c.retries),
        Counters::get(&c.failed)
    )
}

/// `t` as RFC 3339 UTC with milliseconds (`2026-12-01T03:07:18.123Z`).
pub fn rfc3339(t: SystemTime) -> String {
    let d = t.duration_since(SystemTime::UNIX_EPOCH).unwrap_or_default();
    let secs = d.as_secs() as i64;
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // H. Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60,
        d.subsec_millis()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles() {
        let v: Vec<u64> = (1..=100).collect();
        assert_eq!(percentile(&v, 50.0), Some(50));
        assert_eq!(percentile(&v, 99.0), Some(99));
        assert_eq!(percentile(&v, 100.0), Some(100));
        assert_eq!(percentile(&v, 0.0), Some(1));
        assert_eq!(percentile(&[], 50.0), None);
        assert_eq!(percentile(&[7], 99.0), Some(7));
    }

    #[test]
    fn rfc3339_round_trips() {
        for ms in [0u64, 1_700_000_000_123, 951_782_400_000, 4_102_444_799_999] {
            let t = SystemTime::UNIX_EPOCH + Duration::from_millis(ms);
            let s = rfc3339(t);
            assert_eq!(crate::time::parse_timestamp_ms(&s), Some(ms), "{s}");
        }
        assert_eq!(
            rfc3339(SystemTime::UNIX_EPOCH + Duration::from_millis(1_700_000_000_123)),
            "2023-11-14T22:13:20.123Z"
        );
    }

    #[test]
    fn summary_line() {
        let s = Summary {
            requests: 10,
            ok: 8,
            failed: 2,
            attempts: 13,
            retries: 3,
            rate_limited: 1,
            statuses: [(200, 8), (400, 2)].into_iter().collect(),
            latencies_ms: vec![1, 2, 3, 4, 5, 6, 7, 8, 9, 10],
            elapsed: Duration::from_secs(2),
            ..Summary::default()
        };
        assert_eq!(
            s.line("send"),
            "ctxasm: send: 10 requests: 8 ok, 2 failed (final status 400×2); 13 attempts (3 retries, 1 rate-limited); latency p50 5 ms p99 10 ms; 5.0 requests/s over 2.00 s"
        );
    }
}
