//! The mock server's clock: wall time at start + a monotonic offset, so it
//! never goes back. The offset is tokio's clock, so on paused time (tests)
//! the server's timestamps, arrivals and rate-limit headers follow it. Date formatting is [`crate::time`]'s; this module must
//! not grow its own calendar arithmetic.

use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tokio::time::Instant;

#[derive(Debug, Clone, Copy)]
pub struct Clock {
    start: Instant,
    start_ms: u64,
}

impl Default for Clock {
    fn default() -> Self {
        Clock::new()
    }
}

impl Clock {
    pub fn new() -> Self {
        let start_ms = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64);
        Clock { start: Instant::now(), start_ms }
    }

    /// Milliseconds since the server started.
    pub fn elapsed_ms(&self) -> u64 {
        self.start.elapsed().as_millis() as u64
    }

    /// Milliseconds since the epoch.
    pub fn now_ms(&self) -> u64 {
        self.start_ms + self.elapsed_ms()
    }

    /// Epoch milliseconds of the instant `at`.
    pub fn ms_at(&self, at: Instant) -> u64 {
        self.start_ms + at.saturating_duration_since(self.start).as_millis() as u64
    }

    /// Epoch milliseconds `d` after now.
    pub fn ms_after(&self, d: Duration) -> u64 {
        self.now_ms() + d.as_millis() as u64
    }
}

/// `ms` since the epoch as `2026-08-21T10:00:00Z` (`frac`: with `.mmm`):
/// [`crate::time::format_rfc3339_ms`] on the mock's unsigned milliseconds.
pub fn rfc3339(ms: u64, frac: bool) -> String {
    crate::time::format_rfc3339_ms(i64::try_from(ms).unwrap_or(i64::MAX), frac)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_utc() {
        assert_eq!(rfc3339(0, false), "1970-01-01T00:00:00Z");
        // 2026-11-30T19:29:25.660Z, checked with `date -u -d @1796066965.660`.
        let ms = crate::time::parse_timestamp_ms("2026-11-30T19:29:25.660Z").unwrap();
        assert_eq!(rfc3339(ms, true), "2026-11-30T19:29:25.660Z");
        assert_eq!(rfc3339(ms, false), "2026-11-30T19:29:25Z");
        let leap = crate::time::parse_timestamp_ms("2028-02-29T23:59:59.999Z").unwrap();
        assert_eq!(rfc3339(leap, true), "2028-02-29T23:59:59.999Z");
    }
}
