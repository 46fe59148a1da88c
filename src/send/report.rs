//! What a run did: live counters (reported through [`Progress`], which the
//! caller renders) and the summary line of every run. Nothing here writes to
//! a terminal: the library returns text and events, the CLI shows them.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

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
    /// Finished in this run without a usable reply (journaled as
    /// `retry_later: no_reply`, sent again by the next run).
    pub no_reply: u64,
    /// The server asked for a wait longer than `--max-retry-wait`
    /// (journaled as `retry_later: rate_limited`, sent again by the next run).
    pub deferred: u64,
    /// The longest such wait, when there was one (the run then drained).
    pub deferred_wait: Option<Duration>,
    /// Of the requests to send, how many had a retryable line in the journal.
    pub resumed_retries: u64,
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
        (self.ok + self.failed + self.no_reply + self.deferred) as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }

    /// Requests of this run left for the next one: journaled as retryable,
    /// interrupted or not started.
    pub fn left_for_next_run(&self) -> u64 {
        self.no_reply + self.deferred + self.interrupted + self.not_started
    }

    /// The line printed at the end of every run (`1 request`, `2 requests`).
    pub fn line(&self, command: &str) -> String {
        let ms = |p: f64| self.percentile_ms(p).map_or_else(|| "-".to_string(), |v| format!("{v} ms"));
        let mut s =
            format!("ctxasm: {command}: {}: {} ok, {} failed", n(self.requests, "request"), self.ok, self.failed);
        if self.already_done > 0 {
            s.push_str(&format!(", {} already in the journal", self.already_done));
        }
        if self.resumed_retries > 0 {
            s.push_str(&format!(" ({} retried from the journal)", self.resumed_retries));
        }
        if self.no_reply + self.deferred > 0 {
            s.push_str(&format!(
                ", {} to retry in the next run ({} no reply, {} rate_limited)",
                self.no_reply + self.deferred,
                self.no_reply,
                self.deferred
            ));
        }
        if self.interrupted + self.not_started > 0 {
            s.push_str(&format!(", {} interrupted, {} not started", self.interrupted, self.not_started));
        }
        if let Some(w) = self.deferred_wait {
            s.push_str(&format!(
                ", stopped early: the server asked to wait {:.0} s, more than --max-retry-wait",
                w.as_secs_f64()
            ));
        }
        let statuses: Vec<String> =
            self.statuses.iter().filter(|(s, _)| **s != 200).map(|(s, n)| format!("{s}×{n}")).collect();
        if !statuses.is_empty() {
            s.push_str(&format!(" (final status {})", statuses.join(" ")));
        }
        s.push_str(&format!(
            "; {} ({} {}, {} rate-limited); latency p50 {} p99 {}; {:.1} requests/s over {:.2} s",
            n(self.attempts, "attempt"),
            self.retries,
            if self.retries == 1 { "retry" } else { "retries" },
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

/// How a run reports progress while it goes: the library never draws (or
/// prints); the caller (the CLI's progress bar) implements this.
pub trait Progress: Send + Sync {
    /// The run starts with `total` requests to send; `false` = no
    /// [`Progress::update`] calls wanted (e.g. stderr is not a terminal).
    fn start(&self, total: u64) -> bool;
    /// Every 200 ms while the run goes: `finished` requests (ok or failed)
    /// and the live counters ([`progress_message`] renders them).
    fn update(&self, finished: u64, counters: &Counters);
    /// The run is over (before the summary is printed).
    fn finish(&self);
}

/// A progress line's message from the counters.
pub fn progress_message(c: &Counters) -> String {
    format!(
        "sent {} ok {} retried {} failed {}",
        Counters::get(&c.attempts),
        Counters::get(&c.ok),
        Counters::get(&c.retries),
        Counters::get(&c.failed)
    )
}

/// `1 request`, `2 requests`.
fn n(count: u64, noun: &str) -> String {
    format!("{count} {noun}{}", if count == 1 { "" } else { "s" })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::SystemTime;

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
            let s = crate::time::format_system_time(t);
            assert_eq!(crate::time::parse_timestamp_ms(&s), Some(ms), "{s}");
        }
        assert_eq!(
            crate::time::format_system_time(SystemTime::UNIX_EPOCH + Duration::from_millis(1_700_000_000_123)),
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
        let one = Summary {
            requests: 1,
            ok: 1,
            attempts: 1,
            statuses: [(200, 1)].into_iter().collect(),
            latencies_ms: vec![4],
            elapsed: Duration::from_secs(1),
            ..Summary::default()
        };
        assert_eq!(
            one.line("send"),
            "ctxasm: send: 1 request: 1 ok, 0 failed; 1 attempt (0 retries, 0 rate-limited); latency p50 4 ms p99 4 ms; 1.0 requests/s over 1.00 s"
        );
        let two = Summary { attempts: 2, retries: 1, ..one };
        assert!(two.line("send").contains("; 2 attempts (1 retry, 0 rate-limited);"), "{}", two.line("send"));
    }
}
