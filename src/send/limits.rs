//! Client-side rate limits: one token bucket per dimension — requests,
//! input tokens, output tokens per minute (`--rpm --itpm --otpm`) — shaped
//! like the server's (facts §3.1: capacity refills continuously, and a
//! limit may be enforced over short windows, so a 60 RPM limit can act as
//! 1 request per second).
//!
//! **Bucket shape.** For a limit `L` per minute the burst is one second's
//! worth, `B = max(1, L/60)`, and the refill rate is `(L − B)/60` per
//! second, so any window of `w` seconds holds at most `B + (L − B)·w/60`
//! — never more than `L` in any 60 s — and the long-run rate is
//! `(L − B)/L` of the limit (98.3 % for `L ≥ 60`).
//!
//! **Input tokens** are estimated before sending ([`Request::estimated_input_tokens`])
//! and corrected from the reply's usage: ITPM counts `input_tokens +
//! cache_creation_input_tokens`, not cache reads (facts §3.1). **Output
//! tokens** count what is generated, not `max_tokens` (§3.1): each request
//! reserves the running average output of the replies so far and is
//! corrected to its actual `output_tokens`. A request estimated above the
//! burst waits for a full bucket and takes it (it is never stuck, unlike
//! the cookbook's limiter, facts §6.1); the correction then leaves the
//! bucket in debt, which later sends wait out.
//!
//! **Server headers** (§3.2) adapt the buckets: an
//! `anthropic-ratelimit-{requests,input-tokens,output-tokens}-limit` lower
//! than ours (or any, when that dimension has no `--` limit) becomes the
//! limit; `…-remaining` caps what we believe is left, aged by the refill
//! since the request was sent and by what was sent since, with the refill
//! rate implied by `…-reset` (the instant the server's bucket is full
//! again) when it gives one.
//!
//! **429.** [`Limiter::pause_until`]: a 429 stops every new send (not only
//! the retried request) until its retry-after instant (facts §6.1: the
//! cookbook pauses everything after a rate-limit error; §6.3: inspect_ai
//! backs off on every 429).
//!
//! [`Request::estimated_input_tokens`]: super::input::Request::estimated_input_tokens

use reqwest::header::HeaderMap;
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime};

/// Limits per minute; `None` = none on that dimension.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Limits {
    pub rpm: Option<u64>,
    pub itpm: Option<u64>,
    pub otpm: Option<u64>,
}

/// A continuous token bucket (see the module docs for its shape).
#[derive(Debug, Clone)]
pub struct Bucket {
    per_minute: f64,
    capacity: f64,
    rate: f64,
    level: f64,
    at: Instant,
    /// Everything ever taken (reservations and upward corrections).
    debited: f64,
    /// The server's view, when it refills slower than we do: the level may
    /// not pass `base + rate·(t − at)` (dropped once that reaches capacity).
    ceiling: Option<(Instant, f64, f64)>,
}

impl Bucket {
    /// A full bucket for `per_minute`.
    pub fn new(per_minute: u64, now: Instant) -> Bucket {
        let mut b =
            Bucket { per_minute: 0.0, capacity: 0.0, rate: 0.0, level: 0.0, at: now, debited: 0.0, ceiling: None };
        b.set_limit(per_minute as f64);
        b.level = b.capacity;
        b
    }

    fn set_limit(&mut self, per_minute: f64) {
        let l = per_minute.max(1.0);
        self.per_minute = l;
        self.capacity = (l / 60.0).max(1.0);
        self.rate = (l - self.capacity).max(l / 2.0) / 60.0;
        self.level = self.level.min(self.capacity);
    }

    pub fn per_minute(&self) -> f64 {
        self.per_minute
    }

    pub fn capacity(&self) -> f64 {
        self.capacity
    }

    /// Refill rate, per second.
    pub fn rate(&self) -> f64 {
        self.rate
    }

    fn refill(&mut self, now: Instant) {
        let dt = now.saturating_duration_since(self.at).as_secs_f64();
        self.level = (self.level + dt * self.rate).min(self.capacity);
        self.at = self.at.max(now);
        if let Some((at, base, rate)) = self.ceiling {
            let top = base + rate * now.saturating_duration_since(at).as_secs_f64();
            if top >= self.capacity {
                self.ceiling = None;
            } else {
                self.level = self.level.min(top);
            }
        }
    }

    /// Level now (after refill).
    pub fn level(&mut self, now: Instant) -> f64 {
        self.refill(now);
        self.level
    }

    /// How long until `amount` (capped at the capacity) is there.
    pub fn wait(&mut self, amount: f64, now: Instant) -> Duration {
        self.refill(now);
        let need = amount.min(self.capacity);
        if self.level + 1e-9 >= need {
            return Duration::ZERO;
        }
        let mut secs = (need - self.level) / self.rate;
        if let Some((at, base, rate)) = self.ceiling {
            // Also wait for the server's refill line to pass `need`.
            let elapsed = now.saturating_duration_since(at).as_secs_f64();
            secs = secs.max((need - base) / rate - elapsed);
        }
        // Round up to the microsecond so the wait is never short.
        Duration::from_micros((secs.max(0.0) * 1e6).ceil() as u64 + 1)
    }

    /// Take `amount` (capped at the capacity); the level may go negative.
    pub fn take(&mut self, amount: f64, now: Instant) -> f64 {
        self.refill(now);
        let a = amount.min(self.capacity).max(0.0);
        self.level -= a;
        self.debited += a;
        a
    }

    /// Debit `delta` more (positive) or give it back (negative).
    pub fn correct(&mut self, delta: f64, now: Instant) {
        self.refill(now);
        self.level = (self.level - delta).min(self.capacity);
        if delta > 0.0 {
            self.debited += delta;
        }
    }

    /// What the server says is left (`bound`, refilling at `rate` per
    /// second from now) caps what we believe is left.
    pub fn cap(&mut self, bound: f64, rate: f64, now: Instant) {
        self.refill(now);
        self.level = self.level.min(bound);
        if rate > 0.0 && rate < self.rate && bound < self.capacity {
            self.ceiling = Some((now, bound, rate));
        }
    }
}

/// One dimension: the limit asked for and its bucket.
#[derive(Debug, Clone, Default)]
struct Dim {
    configured: Option<u64>,
    bucket: Option<Bucket>,
}

impl Dim {
    fn new(configured: Option<u64>, now: Instant) -> Dim {
        Dim { configured, bucket: configured.map(|l| Bucket::new(l, now)) }
    }

    fn wait(&mut self, amount: f64, now: Instant) -> Duration {
        self.bucket.as_mut().map_or(Duration::ZERO, |b| b.wait(amount, now))
    }

    fn take(&mut self, amount: f64, now: Instant) -> f64 {
        self.bucket.as_mut().map_or(0.0, |b| b.take(amount, now))
    }

    fn debited(&self) -> f64 {
        self.bucket.as_ref().map_or(0.0, |b| b.debited)
    }

    /// Apply `anthropic-ratelimit-<name>-{limit,remaining,reset}`.
    fn adapt(&mut self, h: &ServerLimit, sent_at: Instant, debited_at: f64, now: Instant, wall: SystemTime) {
        if let Some(limit) = h.limit.filter(|&l| l > 0) {
            match (&mut self.bucket, self.configured) {
                (None, _) => self.bucket = Some(Bucket::new(limit, now)),
                (Some(b), Some(c)) if limit < c && (limit as f64) < b.per_minute => {
                    b.refill(now);
                    b.set_limit(limit as f64);
                }
                (Some(b), None) if (limit as f64 - b.per_minute).abs() >= 1.0 => {
                    b.refill(now);
                    b.set_limit(limit as f64);
                }
                _ => {}
            }
        }
        let (Some(remaining), Some(b)) = (h.remaining, self.bucket.as_mut()) else { return };
        let mut rate = b.rate;
        if let (Some(limit), Some(reset)) = (h.limit, h.reset)
            && let Ok(until) = reset.duration_since(wall)
            && remaining < limit
            && until > Duration::from_millis(1)
        {
            rate = rate.min((limit - remaining) as f64 / until.as_secs_f64());
        }
        let since = now.saturating_duration_since(sent_at).as_secs_f64();
        let bound = remaining as f64 + rate * since - (b.debited - debited_at).max(0.0);
        b.cap(bound, rate, now);
    }
}

/// One dimension's rate-limit headers (facts §3.2).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ServerLimit {
    pub limit: Option<u64>,
    pub remaining: Option<u64>,
    pub reset: Option<SystemTime>,
}

impl ServerLimit {
    /// `anthropic-ratelimit-<name>-*` from `headers`.
    pub fn from_headers(headers: &HeaderMap, name: &str) -> ServerLimit {
        let get = |suffix: &str| {
            headers
                .get(format!("anthropic-ratelimit-{name}-{suffix}").as_str())
                .and_then(|v| v.to_str().ok())
                .map(str::trim)
                .map(str::to_string)
        };
        let num = |s: Option<String>| s.and_then(|s| s.parse::<u64>().ok());
        let reset = get("reset")
            .and_then(|s| crate::time::parse_timestamp_ms(&s))
            .map(|ms| SystemTime::UNIX_EPOCH + Duration::from_millis(ms));
        ServerLimit { limit: num(get("limit")), remaining: num(get("remaining")), reset }
    }
}

/// Token counts of a reply's usage that the limits count.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct UsageCounts {
    /// `input_tokens + cache_creation_input_tokens` (ITPM, facts §3.1).
    pub input: u64,
    pub output: u64,
}

impl UsageCounts {
    pub fn from_usage(usage: &serde_json::Value) -> UsageCounts {
        let n = |k: &str| usage.get(k).and_then(serde_json::Value::as_u64).unwrap_or(0);
        UsageCounts { input: n("input_tokens") + n("cache_creation_input_tokens"), output: n("output_tokens") }
    }
}

/// What one send took, to correct it when the reply comes.
#[derive(Debug, Clone, Copy)]
pub struct Ticket {
    pub sent_at: Instant,
    input_reserved: f64,
    output_reserved: f64,
    debited_at: [f64; 3],
}

#[derive(Debug)]
struct State {
    dims: [Dim; 3],
    pause_until: Option<Instant>,
    output_average: Option<f64>,
    adapt: bool,
}

/// The shared limiter.
#[derive(Debug)]
pub struct Limiter {
    state: Mutex<State>,
}

/// The shortest sleep of [`Limiter::take`].
pub const MIN_WAIT: Duration = Duration::from_millis(20);

const REQ: usize = 0;
const IN: usize = 1;
const OUT: usize = 2;
const HEADER_NAMES: [&str; 3] = ["requests", "input-tokens", "output-tokens"];

impl Limiter {
    /// `adapt`: follow the server's rate-limit headers.
    pub fn new(limits: Limits, adapt: bool) -> Limiter {
        let now = Instant::now();
        let dims = [Dim::new(limits.rpm, now), Dim::new(limits.itpm, now), Dim::new(limits.otpm, now)];
        Limiter { state: Mutex::new(State { dims, pause_until: None, output_average: None, adapt }) }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Take what a request of `input_estimate` tokens needs, or say how
    /// long to wait before asking again.
    pub fn try_take(&self, input_estimate: u64, now: Instant) -> Result<Ticket, Duration> {
        let mut s = self.lock();
        if let Some(until) = s.pause_until {
            if until > now {
                return Err(until - now);
            }
            s.pause_until = None;
        }
        let out_need = s.output_average.unwrap_or(0.0);
        let needs = [1.0, input_estimate as f64, out_need];
        let wait = (0..3).map(|i| s.dims[i].wait(needs[i], now)).max().unwrap_or(Duration::ZERO);
        if !wait.is_zero() {
            return Err(wait);
        }
        s.dims[REQ].take(1.0, now);
        let input_reserved = s.dims[IN].take(needs[IN], now);
        let output_reserved = s.dims[OUT].take(needs[OUT], now);
        let debited_at = [s.dims[REQ].debited(), s.dims[IN].debited(), s.dims[OUT].debited()];
        Ok(Ticket { sent_at: now, input_reserved, output_reserved, debited_at })
    }

    /// Wait for [`Limiter::try_take`]. A wait shorter than [`MIN_WAIT`]
    /// is stretched to it (the tokens keep accruing meanwhile, so the rate
    /// is the same): at a high rate requests then leave in small groups,
    /// one wake-up for several, instead of one timer per request.
    pub async fn take(&self, input_estimate: u64) -> Ticket {
        loop {
            match self.try_take(input_estimate, Instant::now()) {
                Ok(t) => return t,
                Err(d) => tokio::time::sleep(d.max(MIN_WAIT)).await,
            }
        }
    }

    /// A reply came: correct the reservations from its usage and adapt to
    /// its headers.
    pub fn on_reply(&self, t: &Ticket, usage: Option<UsageCounts>, headers: Option<&HeaderMap>, now: Instant) {
        let mut s = self.lock();
        if let Some(u) = usage {
            if let Some(b) = s.dims[IN].bucket.as_mut() {
                b.correct(u.input as f64 - t.input_reserved, now);
            }
            if let Some(b) = s.dims[OUT].bucket.as_mut() {
                b.correct(u.output as f64 - t.output_reserved, now);
            }
            let o = u.output as f64;
            s.output_average = Some(s.output_average.map_or(o, |a| 0.9 * a + 0.1 * o));
        }
        if let Some(h) = headers.filter(|_| s.adapt) {
            let wall = SystemTime::now();
            for (i, name) in HEADER_NAMES.iter().enumerate() {
                let limit = ServerLimit::from_headers(h, name);
                if limit != ServerLimit::default() {
                    s.dims[i].adapt(&limit, t.sent_at, t.debited_at[i], now, wall);
                }
            }
        }
    }

    /// No new send before `until` (a 429's retry-after).
    pub fn pause_until(&self, until: Instant) {
        let mut s = self.lock();
        s.pause_until = Some(s.pause_until.map_or(until, |p| p.max(until)));
    }

    /// The current pause, if any.
    pub fn paused_until(&self) -> Option<Instant> {
        self.lock().pause_until
    }

    /// The effective requests-per-minute limit (after adaptation).
    pub fn rpm(&self) -> Option<f64> {
        self.lock().dims[REQ].bucket.as_ref().map(Bucket::per_minute)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::{HeaderName, HeaderValue};

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    /// Simulate greedy sends against a bucket and return send times (s).
    fn greedy(limit: u64, n: usize) -> Vec<f64> {
        let t0 = Instant::now();
        let mut b = Bucket::new(limit, t0);
        let mut now = t0;
        let mut out = Vec::new();
        while out.len() < n {
            let w = b.wait(1.0, now);
            now += w;
            b.take(1.0, now);
            out.push((now - t0).as_secs_f64());
        }
        out
    }

    #[test]
    fn bucket_never_exceeds_limit_in_any_window() {
        for limit in [1u64, 2, 30, 120, 6000] {
            let times = greedy(limit, (limit as usize * 2).max(5));
            let b = Bucket::new(limit, Instant::now());
            for (i, &t) in times.iter().enumerate() {
                // In [t, t + w): at most B + rate·w sends, and at most L in 60 s.
                for w in [0.5, 1.0, 10.0, 60.0] {
                    let count = times[i..].iter().take_while(|&&x| x < t + w - 1e-9).count() as f64;
                    assert!(count <= b.capacity() + b.rate() * w + 1e-6, "L={limit} w={w} count={count}");
                    if w == 60.0 {
                        assert!(count <= limit as f64, "L={limit}: {count} in 60 s");
                    }
                }
            }
        }
    }

    #[test]
    fn bucket_shape() {
        let b = Bucket::new(6000, Instant::now());
        assert_eq!(b.capacity(), 100.0);
        assert!((b.rate() - 5900.0 / 60.0).abs() < 1e-9);
        let b = Bucket::new(120, Instant::now());
        assert_eq!(b.capacity(), 2.0);
        let b = Bucket::new(1, Instant::now());
        assert_eq!(b.capacity(), 1.0);
        assert!(b.rate() > 0.0);
    }

    #[test]
    fn oversized_request_takes_a_full_bucket_then_debt() {
        let t0 = Instant::now();
        let l = Limiter::new(Limits { itpm: Some(60_000), ..Limits::default() }, false);
        // Capacity 1,000 tokens; a 5,000-token estimate goes when full.
        let t = l.try_take(5_000, t0).unwrap();
        assert!(l.try_take(1, t0).is_err());
        // Its usage says 3,000 input + 1,000 cache writes (reads not counted).
        let u = UsageCounts::from_usage(&serde_json::json!({
            "input_tokens": 3000, "cache_creation_input_tokens": 1000, "cache_read_input_tokens": 50000
        }));
        assert_eq!(u.input, 4000);
        l.on_reply(&t, Some(u), None, t0);
        // Debt of 3,000 at 983.3 tokens/s: ≈ 3.05 s before a 1-token request.
        let wait = l.try_take(1, t0).unwrap_err();
        assert!(wait > ms(3000) && wait < ms(3200), "{wait:?}");
    }

    #[test]
    fn overestimate_is_refunded() {
        let t0 = Instant::now();
        let l = Limiter::new(Limits { itpm: Some(60_000), ..Limits::default() }, false);
        let t = l.try_take(1_000, t0).unwrap();
        assert!(l.try_take(500, t0).is_err());
        l.on_reply(&t, Some(UsageCounts { input: 100, output: 0 }), None, t0);
        assert!(l.try_take(500, t0).is_ok(), "900 tokens came back");
    }

    #[test]
    fn output_reserves_the_running_average() {
        let t0 = Instant::now();
        let l = Limiter::new(Limits { otpm: Some(6_000), ..Limits::default() }, false);
        // Capacity 100 output tokens; nothing known yet: no reservation.
        let t = l.try_take(0, t0).unwrap();
        l.on_reply(&t, Some(UsageCounts { input: 0, output: 80 }), None, t0);
        // 20 left, and the next request reserves 80: wait.
        assert!(l.try_take(0, t0).is_err());
        assert!(l.try_take(0, t0 + Duration::from_secs(1)).is_ok());
    }

    #[test]
    fn pause_stops_everything_until_its_instant() {
        let t0 = Instant::now();
        let l = Limiter::new(Limits::default(), true);
        assert!(l.try_take(10, t0).is_ok());
        l.pause_until(t0 + ms(1500));
        l.pause_until(t0 + ms(500));
        assert_eq!(l.try_take(10, t0 + ms(200)).unwrap_err(), ms(1300));
        assert!(l.try_take(10, t0 + ms(1500)).is_ok());
    }

    fn headers(pairs: &[(&str, String)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(HeaderName::from_bytes(k.as_bytes()).unwrap(), HeaderValue::from_str(v).unwrap());
        }
        h
    }

    #[test]
    fn server_limit_is_learned_and_remaining_caps() {
        let t0 = Instant::now();
        let l = Limiter::new(Limits::default(), true);
        let t = l.try_take(10, t0).unwrap();
        let h = headers(&[
            ("anthropic-ratelimit-requests-limit", "600".into()),
            ("anthropic-ratelimit-requests-remaining", "0".into()),
        ]);
        l.on_reply(&t, None, Some(&h), t0);
        assert_eq!(l.rpm(), Some(600.0));
        // Remaining 0: wait ≈ 1 / (590/60) s for one request.
        let w = l.try_take(10, t0).unwrap_err();
        assert!(w > ms(95) && w < ms(110), "{w:?}");
        // A configured limit is lowered by the server's, never raised.
        let l = Limiter::new(Limits { rpm: Some(100), ..Limits::default() }, true);
        let t = l.try_take(10, t0).unwrap();
        let h = headers(&[("anthropic-ratelimit-requests-limit", "1000".into())]);
        l.on_reply(&t, None, Some(&h), t0);
        assert_eq!(l.rpm(), Some(100.0));
        let h = headers(&[("anthropic-ratelimit-requests-limit", "60".into())]);
        l.on_reply(&t, None, Some(&h), t0);
        assert_eq!(l.rpm(), Some(60.0));
        // Without adaptation headers are ignored.
        let l = Limiter::new(Limits::default(), false);
        let t = l.try_take(10, t0).unwrap();
        l.on_reply(&t, None, Some(&headers(&[("anthropic-ratelimit-requests-limit", "5".into())])), t0);
        assert_eq!(l.rpm(), None);
    }

    #[test]
    fn reset_header_gives_the_refill_rate() {
        let t0 = Instant::now();
        let l = Limiter::new(Limits { itpm: Some(600_000), ..Limits::default() }, true);
        let t = l.try_take(100, t0).unwrap();
        // Full again in 120 s: 5,000 tokens/s, slower than our 9,833/s.
        let reset = SystemTime::now() + Duration::from_secs(120);
        let reset = crate::send::report::rfc3339(reset);
        let h = headers(&[
            ("anthropic-ratelimit-input-tokens-limit", "600000".into()),
            ("anthropic-ratelimit-input-tokens-remaining", "0".into()),
            ("anthropic-ratelimit-input-tokens-reset", reset),
        ]);
        l.on_reply(&t, None, Some(&h), t0);
        // So 6,000 tokens take ≈ 1.2 s (the bucket's own rate: 0.61 s).
        let w = l.try_take(6_000, t0).unwrap_err();
        assert!(w > ms(1150) && w < ms(1250), "{w:?}");
    }

    #[test]
    fn remaining_is_aged_by_later_sends_and_refill() {
        let t0 = Instant::now();
        let l = Limiter::new(Limits { rpm: Some(6000), ..Limits::default() }, true);
        let first = l.try_take(1, t0).unwrap();
        for _ in 0..9 {
            l.try_take(1, t0).unwrap();
        }
        // The first reply says 50 left when it was counted; 9 sent since.
        let h = headers(&[("anthropic-ratelimit-requests-remaining", "50".into())]);
        l.on_reply(&first, None, Some(&h), t0);
        for _ in 0..41 {
            l.try_take(1, t0).unwrap();
        }
        assert!(l.try_take(1, t0).is_err());
    }
}
