//! Rate limits as the real API applies them (facts §3.1–3.2): one token
//! bucket ([`crate::bucket`]) per limit (RPM, ITPM, OTPM), capacity = the
//! per-minute limit, refilled continuously at limit/60 per second (never
//! reset at fixed times), starting full.
//!
//! - RPM: one per request.
//! - ITPM counts `input_tokens + cache_creation_input_tokens`, not cache
//!   reads (facts §3.1). It is "estimated when a request starts, then
//!   corrected": at arrival the request must fit its whole prompt (what it
//!   costs if nothing is cached; capped at the capacity, so an oversized
//!   prompt passes when the bucket is full), which is debited; once usage is
//!   known the debit is corrected to the real count, so cache reads end up
//!   free. The docs do not say how the estimate treats reads (facts "Could
//!   not confirm"); this is the conservative reading.
//! - OTPM is "counted live as tokens are generated" and `max_tokens` plays no
//!   part (facts §3.1): a request is admitted while the bucket is not empty
//!   (≥ 1 token) and its output is debited when it is produced, so the
//!   bucket can go into debt.
//!
//! A 429 names the limit ("…of 600 requests per minute", facts §3.1) and
//! carries `retry-after`: whole seconds until every exceeded bucket holds
//! what the request needs, at least 1 (facts §3.2). Every reply carries the
//! `anthropic-ratelimit-*` headers of the limits that are set (facts §3.2):
//! `remaining` is the floor of the bucket (exact, not rounded to thousands),
//! `reset` the RFC 3339 time when the bucket is full again; the `tokens-*`
//! headers show input + output combined (no workspace limit, facts §3.2).

use super::clock::{Clock, rfc3339};
use std::time::Duration;
use tokio::time::Instant;

/// A limit's bucket: [`crate::bucket::Bucket`] with capacity = the limit
/// and refill = limit/60 per second.
#[derive(Debug, Clone)]
struct Bucket {
    limit: u64,
    inner: crate::bucket::Bucket,
}

impl Bucket {
    fn new(limit: u64, now: Instant) -> Self {
        Bucket { limit, inner: crate::bucket::Bucket::full(limit as f64, limit as f64 / 60.0, now) }
    }

    fn refill(&mut self, now: Instant) {
        self.inner.refill(now);
    }

    /// Seconds until the bucket holds `need`.
    fn wait_for(&self, need: f64) -> f64 {
        self.inner.secs_until(need)
    }

    fn remaining(&self) -> u64 {
        self.inner.level().max(0.0).floor() as u64
    }

    /// Seconds until full.
    fn full_in(&self) -> f64 {
        self.wait_for(self.limit as f64)
    }
}

/// Which limit a request exceeded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Which {
    Requests,
    InputTokens,
    OutputTokens,
}

/// A refused request: the limit it would exceed and when to retry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limited {
    pub which: Which,
    pub limit: u64,
    /// Whole seconds, ≥ 1.
    pub retry_after: u64,
}

impl Limited {
    /// The 429 message, naming the limit (facts §3.1).
    pub fn message(&self) -> String {
        let unit = match self.which {
            Which::Requests => "requests",
            Which::InputTokens => "input tokens",
            Which::OutputTokens => "output tokens",
        };
        format!(
            "This request would exceed the rate limit for your organization of {} {unit} per minute. \
             For details, refer to: https://docs.claude.com/en/api/rate-limits. \
             You can see the response headers for current usage. Please try again later.",
            thousands(self.limit)
        )
    }
}

/// `1234567` as `1,234,567`.
fn thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::with_capacity(s.len() + s.len() / 3);
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// The buckets of the limits that are set.
#[derive(Debug, Clone)]
pub struct Limits {
    rpm: Option<Bucket>,
    itpm: Option<Bucket>,
    otpm: Option<Bucket>,
}

impl Limits {
    /// `None` when no limit is set.
    pub fn new(rpm: Option<u64>, itpm: Option<u64>, otpm: Option<u64>) -> Option<Self> {
        let now = Instant::now();
        let b = |l: Option<u64>| l.filter(|&l| l > 0).map(|l| Bucket::new(l, now));
        let out = Limits { rpm: b(rpm), itpm: b(itpm), otpm: b(otpm) };
        (out.rpm.is_some() || out.itpm.is_some() || out.otpm.is_some()).then_some(out)
    }

    fn refill(&mut self, now: Instant) {
        for b in [&mut self.rpm, &mut self.itpm, &mut self.otpm].into_iter().flatten() {
            b.refill(now);
        }
    }

    /// Admit a request whose prompt is `prompt_tokens` (the ITPM estimate):
    /// debit one request and the estimate, or say which limit it exceeds
    /// (the first in the order requests, input, output) and when every
    /// exceeded bucket will hold enough. Nothing is debited on refusal.
    pub fn admit(&mut self, now: Instant, prompt_tokens: u64) -> Result<(), Limited> {
        self.refill(now);
        let mut first: Option<(Which, u64)> = None;
        let mut wait: f64 = 0.0;
        let needs = [
            (Which::Requests, &self.rpm, 1.0),
            (Which::InputTokens, &self.itpm, prompt_tokens as f64),
            (Which::OutputTokens, &self.otpm, 1.0),
        ];
        for (which, bucket, need) in needs {
            let Some(b) = bucket else { continue };
            let w = b.wait_for(need.min(b.limit as f64));
            if w > 0.0 {
                first.get_or_insert((which, b.limit));
                wait = wait.max(w);
            }
        }
        if let Some((which, limit)) = first {
            let retry_after = (wait.ceil() as u64).max(1);
            return Err(Limited { which, limit, retry_after });
        }
        if let Some(b) = &mut self.rpm {
            b.inner.take(1.0);
        }
        if let Some(b) = &mut self.itpm {
            b.inner.take((prompt_tokens as f64).min(b.limit as f64));
        }
        Ok(())
    }

    /// Replace the ITPM debit of an admitted request's estimate by the
    /// tokens it really counts (`input + cache_creation`).
    pub fn correct_input(&mut self, now: Instant, prompt_tokens: u64, counted: u64) {
        self.refill(now);
        if let Some(b) = &mut self.itpm {
            b.inner.put((prompt_tokens as f64).min(b.limit as f64) - counted as f64);
        }
    }

    /// Debit generated output tokens.
    pub fn debit_output(&mut self, now: Instant, tokens: u64) {
        self.refill(now);
        if let Some(b) = &mut self.otpm {
            b.inner.take(tokens as f64);
        }
    }

    /// The `anthropic-ratelimit-*` headers now.
    pub fn headers(&mut self, now: Instant, clock: &Clock) -> Vec<(&'static str, String)> {
        self.refill(now);
        let mut out = Vec::with_capacity(12);
        // Whole seconds, rounded up: the bucket is full by then.
        let reset = |secs: f64| {
            let ms = clock.ms_after(Duration::from_secs_f64(secs.max(0.0)));
            rfc3339(ms.div_ceil(1000) * 1000, false)
        };
        let mut push = |names: [&'static str; 3], b: &Bucket| {
            out.push((names[0], b.limit.to_string()));
            out.push((names[1], b.remaining().to_string()));
            out.push((names[2], reset(b.full_in())));
        };
        if let Some(b) = &self.rpm {
            push(
                [
                    "anthropic-ratelimit-requests-limit",
                    "anthropic-ratelimit-requests-remaining",
                    "anthropic-ratelimit-requests-reset",
                ],
                b,
            );
        }
        if let Some(b) = &self.itpm {
            push(
                [
                    "anthropic-ratelimit-input-tokens-limit",
                    "anthropic-ratelimit-input-tokens-remaining",
                    "anthropic-ratelimit-input-tokens-reset",
                ],
                b,
            );
        }
        if let Some(b) = &self.otpm {
            push(
                [
                    "anthropic-ratelimit-output-tokens-limit",
                    "anthropic-ratelimit-output-tokens-remaining",
                    "anthropic-ratelimit-output-tokens-reset",
                ],
                b,
            );
        }
        let tokens: Vec<&Bucket> = [&self.itpm, &self.otpm].into_iter().flatten().collect();
        if !tokens.is_empty() {
            let limit: u64 = tokens.iter().map(|b| b.limit).sum();
            let remaining: u64 = tokens.iter().map(|b| b.remaining()).sum();
            let full_in = tokens.iter().map(|b| b.full_in()).fold(0.0, f64::max);
            out.push(("anthropic-ratelimit-tokens-limit", limit.to_string()));
            out.push(("anthropic-ratelimit-tokens-remaining", remaining.to_string()));
            out.push(("anthropic-ratelimit-tokens-reset", reset(full_in)));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rpm_bucket_refills_continuously() {
        let mut l = Limits::new(Some(60), None, None).unwrap();
        let t0 = Instant::now();
        l.refill(t0);
        for _ in 0..60 {
            l.admit(t0, 0).unwrap();
        }
        let e = l.admit(t0, 0).unwrap_err();
        assert_eq!((e.which, e.limit, e.retry_after), (Which::Requests, 60, 1));
        assert!(e.message().contains("of 60 requests per minute"));
        // One per second comes back.
        l.admit(t0 + Duration::from_millis(1000), 0).unwrap();
        assert!(l.admit(t0 + Duration::from_millis(1500), 0).is_err());
    }

    #[test]
    fn itpm_estimate_then_correction() {
        let mut l = Limits::new(None, Some(60_000), None).unwrap();
        let t0 = Instant::now();
        l.refill(t0);
        l.admit(t0, 50_000).unwrap();
        // Mostly read from cache: only 1,000 count.
        l.correct_input(t0, 50_000, 1_000);
        l.admit(t0, 50_000).unwrap();
        let e = l.admit(t0, 50_000).unwrap_err();
        assert_eq!(e.which, Which::InputTokens);
        // 60,000 − 50,000 + 49,000 − 50,000 = 9,000 left: 41,000 missing at 1,000/s.
        assert_eq!(e.retry_after, 41);
        assert!(e.message().contains("of 60,000 input tokens per minute"), "{}", e.message());
    }

    #[test]
    fn otpm_debt() {
        let mut l = Limits::new(None, None, Some(600)).unwrap();
        let t0 = Instant::now();
        l.refill(t0);
        l.admit(t0, 0).unwrap();
        l.debit_output(t0, 1200);
        let e = l.admit(t0, 0).unwrap_err();
        // -600 → 1 at 10/s: 60.1 s.
        assert_eq!((e.which, e.retry_after), (Which::OutputTokens, 61));
    }

    #[test]
    fn separators() {
        assert_eq!(thousands(600), "600");
        assert_eq!(thousands(50_000), "50,000");
        assert_eq!(thousands(2_000_000), "2,000,000");
    }
}
