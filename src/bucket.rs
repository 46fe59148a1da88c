//! The one continuous token bucket of ctxasm, shared by the client's limits
//! ([`crate::send::limits`]: burst, refill, adaptation to the server's
//! headers) and the stand-in server's ([`crate::mock::ratelimit`]: RPM,
//! ITPM, OTPM and their reset headers). Each side keeps its own shape and
//! policy on top; this module owns only the arithmetic they share: a level
//! that refills continuously at `rate` per second up to `capacity`, may be
//! driven negative (debt), and says how long until it holds an amount.
//!
//! Time is [`tokio::time::Instant`], passed in by the caller and never read
//! here, so tests run on tokio's paused clock (`start_paused`,
//! `tokio::time::advance`) with exact bounds. Nothing here sleeps, locks or
//! does I/O.

use tokio::time::Instant;

/// A continuous token bucket (starts full).
#[derive(Debug, Clone)]
pub struct Bucket {
    capacity: f64,
    /// Refill, per second.
    rate: f64,
    level: f64,
    at: Instant,
}

impl Bucket {
    /// A full bucket of `capacity`, refilling at `rate` per second.
    pub fn full(capacity: f64, rate: f64, now: Instant) -> Bucket {
        Bucket { capacity, rate, level: capacity, at: now }
    }

    pub fn capacity(&self) -> f64 {
        self.capacity
    }

    /// Refill rate, per second.
    pub fn rate(&self) -> f64 {
        self.rate
    }

    /// The level as of the last [`Bucket::refill`] (negative = debt).
    pub fn level(&self) -> f64 {
        self.level
    }

    /// Bring the level up to `now`. An instant before the last one refills
    /// nothing and does not move the bucket back (callers race on a shared
    /// clock).
    pub fn refill(&mut self, now: Instant) {
        let dt = now.saturating_duration_since(self.at).as_secs_f64();
        self.level = (self.level + dt * self.rate).min(self.capacity);
        self.at = self.at.max(now);
    }

    /// A new shape; the level is kept, cut to the new capacity.
    pub fn reshape(&mut self, capacity: f64, rate: f64) {
        self.capacity = capacity;
        self.rate = rate;
        self.level = self.level.min(capacity);
    }

    /// Seconds from the last refill until the level reaches `need` (0 if it
    /// is there).
    pub fn secs_until(&self, need: f64) -> f64 {
        if self.level >= need { 0.0 } else { (need - self.level) / self.rate }
    }

    /// Debit `amount` (the level may go negative).
    pub fn take(&mut self, amount: f64) {
        self.level -= amount;
    }

    /// Credit `amount` (negative: debit), never above the capacity.
    pub fn put(&mut self, amount: f64) {
        self.level = (self.level + amount).min(self.capacity);
    }

    /// What is left may not exceed `bound`.
    pub fn cap(&mut self, bound: f64) {
        self.level = self.level.min(bound);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test(start_paused = true)]
    async fn refills_continuously_on_paused_time() {
        let t0 = Instant::now();
        let mut b = Bucket::full(10.0, 2.0, t0);
        b.take(10.0);
        assert_eq!(b.secs_until(1.0), 0.5);
        tokio::time::advance(Duration::from_millis(500)).await;
        b.refill(Instant::now());
        assert_eq!(b.level(), 1.0);
        assert_eq!(Instant::now() - t0, Duration::from_millis(500));
        // Never above the capacity however long it waits.
        tokio::time::advance(Duration::from_secs(60)).await;
        b.refill(Instant::now());
        assert_eq!(b.level(), 10.0);
        assert_eq!(b.secs_until(10.0), 0.0);
    }

    #[tokio::test(start_paused = true)]
    async fn debt_is_waited_out_and_time_never_goes_back() {
        let t0 = Instant::now();
        let mut b = Bucket::full(4.0, 1.0, t0);
        b.take(10.0);
        assert_eq!(b.level(), -6.0);
        assert_eq!(b.secs_until(1.0), 7.0);
        tokio::time::sleep(Duration::from_secs(7)).await;
        let t7 = Instant::now();
        assert_eq!(t7 - t0, Duration::from_secs(7));
        b.refill(t7);
        assert_eq!(b.level(), 1.0);
        // An earlier instant (another caller's) refills nothing.
        b.refill(t0);
        assert_eq!(b.level(), 1.0);
        b.refill(t7 + Duration::from_secs(1));
        assert_eq!(b.level(), 2.0);
    }

    #[test]
    fn put_cap_and_reshape() {
        let t0 = Instant::now();
        let mut b = Bucket::full(100.0, 10.0, t0);
        b.take(60.0);
        b.put(30.0);
        assert_eq!(b.level(), 70.0);
        b.put(1000.0);
        assert_eq!(b.level(), 100.0);
        b.put(-150.0);
        assert_eq!(b.level(), -50.0);
        b.cap(-60.0);
        assert_eq!(b.level(), -60.0);
        b.cap(0.0);
        assert_eq!(b.level(), -60.0);
        let mut b = Bucket::full(100.0, 10.0, t0);
        b.reshape(20.0, 1.0);
        assert_eq!((b.capacity(), b.rate(), b.level()), (20.0, 1.0, 20.0));
    }
}
