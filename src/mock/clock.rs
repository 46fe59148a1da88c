//! The server clock (wall time at start + a monotonic offset, so it never
//! goes back) and RFC 3339 UTC formatting.

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

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

/// `ms` since the epoch as `2026-08-21T10:00:00Z` (`frac`: with `.mmm`).
pub fn rfc3339(ms: u64, frac: bool) -> String {
    let secs = ms / 1000;
    let (days, rem) = (secs / 86_400, secs % 86_400);
    let (y, m, d) = civil_from_days(days as i64);
    let (h, mi, s) = (rem / 3600, rem % 3600 / 60, rem % 60);
    if frac {
        format!("{y:04}-{m:02}-{d:02}T{h:02}:{mi:02}:{s:02}.{:03}Z", ms % 1000)
    } else {
        format!("{y:04}-{m:02}-{d:02}T{h:02}:{mi:02}:{s:02}Z")
    }
}

/// Proleptic Gregorian (year, month, day) of a day count from 1970-01-01
/// (Howard Hinnant's `civil_from_days`).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
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
