//! Dates and timestamps: the one place ctxasm turns RFC 3339 text into
//! milliseconds and back, and day counts into civil dates.
//!
//! Transcripts write `2026-11-30T19:29:25.660Z`; the parser is a hand-rolled
//! fixed-position scan because it runs once per transcript line in `cost`
//! (a general parser costs several times more there). The civil-date
//! arithmetic is Howard Hinnant's `days_from_civil` / `civil_from_days`
//! (proleptic Gregorian, any year); the tests check both against `jiff`.
//!
//! Nothing here reads the clock except [`now_ms`] and [`today_utc`], which
//! callers at the edges (the CLI, `send`, `mock`) use; assembly stages get
//! their dates from the session.

use std::time::{SystemTime, UNIX_EPOCH};

/// Milliseconds in a day.
pub const DAY_MS: i64 = 86_400_000;

/// Days since 1970-01-01 of a proleptic Gregorian date. `d` is not checked
/// against the month's length (`02-31` is `03-03`), as the transcript
/// parsers always did.
pub fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let m = i64::from(m);
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + i64::from(d) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The proleptic Gregorian (year, month, day) of a day count since
/// 1970-01-01.
pub fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

/// `YYYY-MM-DD` of a day count since 1970-01-01.
pub fn date_of_days(days: i64) -> String {
    let (y, m, d) = civil_from_days(days);
    format!("{y:04}-{m:02}-{d:02}")
}

/// Milliseconds since the epoch of `YYYY-MM-DDTHH:MM:SS[.fraction](Z|±HH:MM)`
/// (`T` may be `t` or a space; digits past milliseconds are ignored; an
/// offset is applied). `None` for anything else, including an empty
/// fraction.
pub fn parse_rfc3339_ms(ts: &str) -> Option<i64> {
    let b = ts.as_bytes();
    let num = |r: std::ops::Range<usize>| -> Option<i64> {
        let s = b.get(r)?;
        if s.is_empty() {
            return None;
        }
        s.iter().try_fold(0i64, |acc, &c| c.is_ascii_digit().then(|| acc * 10 + i64::from(c - b'0')))
    };
    if b.len() < 20 || b[4] != b'-' || b[7] != b'-' || !matches!(b[10], b'T' | b't' | b' ') {
        return None;
    }
    if b[13] != b':' || b[16] != b':' {
        return None;
    }
    let (y, mo, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (h, mi, s) = (num(11..13)?, num(14..16)?, num(17..19)?);
    if !(1..=12).contains(&mo) || !(1..=31).contains(&d) || h > 23 || mi > 59 || s > 60 {
        return None;
    }
    let mut i = 19;
    let mut millis = 0i64;
    if b[i] == b'.' {
        let start = i + 1;
        i = start;
        while b.get(i).is_some_and(u8::is_ascii_digit) {
            i += 1;
        }
        if i == start {
            return None;
        }
        let digits = (i - start).min(3);
        millis = num(start..start + digits)? * 10i64.pow(3 - digits as u32);
    }
    let offset_min = match b.get(i..)? {
        [b'Z' | b'z'] => 0,
        [sign @ (b'+' | b'-'), ..] if b.len() == i + 6 && b[i + 3] == b':' => {
            let o = num(i + 1..i + 3)? * 60 + num(i + 4..i + 6)?;
            if *sign == b'+' { o } else { -o }
        }
        _ => return None,
    };
    let days = days_from_civil(y, mo as u32, d as u32);
    Some(((days * 24 + h) * 60 + mi - offset_min) * 60_000 + s * 1000 + millis)
}

/// [`parse_rfc3339_ms`] for instants at or after the epoch.
pub fn parse_timestamp_ms(ts: &str) -> Option<u64> {
    parse_rfc3339_ms(ts).and_then(|ms| u64::try_from(ms).ok())
}

/// `YYYY-MM-DD` in UTC of an RFC 3339 timestamp.
pub fn utc_day(ts: &str) -> Option<String> {
    parse_rfc3339_ms(ts).map(|ms| date_of_days(ms.div_euclid(DAY_MS)))
}

/// `ms` since the epoch as `2026-08-21T10:00:00Z`, or with `frac`
/// `2026-08-21T10:00:00.000Z`.
pub fn format_rfc3339_ms(ms: i64, frac: bool) -> String {
    let [y, m, d, h, mi, s, milli] = utc_fields(ms);
    if frac {
        format!("{y:04}-{m:02}-{d:02}T{h:02}:{mi:02}:{s:02}.{milli:03}Z")
    } else {
        format!("{y:04}-{m:02}-{d:02}T{h:02}:{mi:02}:{s:02}Z")
    }
}

/// Year, month, day, hour, minute, second and millisecond (UTC) of `ms`
/// since the epoch.
fn utc_fields(ms: i64) -> [i64; 7] {
    let (days, rem) = (ms.div_euclid(DAY_MS), ms.rem_euclid(DAY_MS));
    let (y, m, d) = civil_from_days(days);
    let secs = rem / 1000;
    [y, i64::from(m), i64::from(d), secs / 3600, secs % 3600 / 60, secs % 60, rem % 1000]
}

/// Whether `text` is [`format_rfc3339_ms`]`(ms, true)`, without making
/// that string (asked of every usage line a transcript has).
pub fn is_rfc3339_ms_text(ms: i64, text: &str) -> bool {
    let [y, m, d, h, mi, s, milli] = utc_fields(ms);
    if !(0..=9999).contains(&y) {
        return format_rfc3339_ms(ms, true) == text;
    }
    let mut b = *b"0000-00-00T00:00:00.000Z";
    let mut put = |at: usize, width: usize, v: i64| {
        let mut v = v;
        for i in (at..at + width).rev() {
            b[i] = b'0' + (v % 10) as u8;
            v /= 10;
        }
    };
    put(0, 4, y);
    put(5, 2, m);
    put(8, 2, d);
    put(11, 2, h);
    put(14, 2, mi);
    put(17, 2, s);
    put(20, 3, milli);
    text.as_bytes() == b
}

/// Milliseconds since the epoch of `t` (0 before it).
pub fn system_time_ms(t: SystemTime) -> i64 {
    t.duration_since(UNIX_EPOCH).map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// `t` as RFC 3339 UTC with milliseconds (`2026-12-01T03:07:18.123Z`).
pub fn format_system_time(t: SystemTime) -> String {
    format_rfc3339_ms(system_time_ms(t), true)
}

/// The clock, in milliseconds since the epoch.
pub fn now_ms() -> i64 {
    system_time_ms(SystemTime::now())
}

/// Today's date (UTC) as `YYYY-MM-DD`.
pub fn today_utc() -> String {
    date_of_days(now_ms().div_euclid(DAY_MS))
}

/// `November 2026` for a `YYYY-MM-DD…` date.
pub fn month_year(date: &str) -> Option<String> {
    const MONTHS: [&str; 12] = [
        "January",
        "February",
        "March",
        "April",
        "May",
        "June",
        "July",
        "August",
        "September",
        "October",
        "November",
        "December",
    ];
    let year = date.get(..4).filter(|y| y.bytes().all(|b| b.is_ascii_digit()))?;
    let month: usize = date.get(5..7)?.parse().ok()?;
    Some(format!("{} {year}", MONTHS.get(month.checked_sub(1)?)?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn parses_transcript_timestamps() {
        // Checked with `date -u -d @1796066965.660`.
        assert_eq!(parse_rfc3339_ms("2026-11-30T19:29:25.660Z"), Some(1_796_066_965_660));
        assert_eq!(parse_rfc3339_ms("2026-11-30T20:29:25.660+01:00"), Some(1_796_066_965_660));
        assert_eq!(parse_rfc3339_ms("2026-11-30 19:29:25.6601234z"), Some(1_796_066_965_660));
        assert_eq!(parse_rfc3339_ms("2026-11-30T19:29:25Z"), Some(1_796_066_965_000));
        assert_eq!(parse_rfc3339_ms("1969-12-31T23:59:59.000Z"), Some(-1000));
        assert_eq!(parse_timestamp_ms("1969-12-31T23:59:59.000Z"), None);
        for bad in ["", "2026-11-30", "2026-11-30T19:29:25.Z", "2026-13-01T00:00:00Z", "2026-11-30T19:29:25", "x"] {
            assert_eq!(parse_rfc3339_ms(bad), None, "{bad:?}");
        }
        assert_eq!(utc_day("2026-12-01T00:30:00+01:00").as_deref(), Some("2026-11-30"));
    }

    #[test]
    fn formats() {
        assert_eq!(format_rfc3339_ms(0, false), "1970-01-01T00:00:00Z");
        assert_eq!(format_rfc3339_ms(1_796_066_965_660, true), "2026-11-30T19:29:25.660Z");
        let leap = parse_rfc3339_ms("2028-02-29T23:59:59.999Z").unwrap();
        assert_eq!(format_rfc3339_ms(leap, true), "2028-02-29T23:59:59.999Z");
        assert_eq!(date_of_days(0), "1970-01-01");
        assert_eq!(date_of_days(20_513), "2026-03-01");
        assert_eq!(date_of_days(11_016), "2000-02-29");
        assert_eq!(today_utc().len(), 10);
        assert_eq!(month_year("2026-11-30").as_deref(), Some("November 2026"));
        assert_eq!(month_year("2026-13-01"), None);
    }

    proptest! {
        /// The civil arithmetic agrees with jiff over jiff's whole range.
        #[test]
        fn civil_dates_agree_with_jiff(days in -4_000_000i64..2_900_000) {
            let epoch = jiff::civil::date(1970, 1, 1);
            let Ok(date) = epoch.checked_add(jiff::Span::new().days(days)) else { return Ok(()) };
            let ours = civil_from_days(days);
            prop_assert_eq!(ours, (i64::from(date.year()), date.month() as u32, date.day() as u32));
            prop_assert_eq!(days_from_civil(ours.0, ours.1, ours.2), days);
        }

        /// The text check without a string is the comparison with the
        /// string: for the instant's own text, a text one character off,
        /// and other texts (years past 9999 and before 0 included).
        #[test]
        fn the_text_check_is_the_formatted_comparison(ms in -400_000_000_000_000i64..400_000_000_000_000, k in 0usize..24, other in "[0-9:TZ.-]{0,26}") {
            let text = format_rfc3339_ms(ms, true);
            prop_assert!(is_rfc3339_ms_text(ms, &text));
            let mut off = text.clone().into_bytes();
            let k = k % off.len();
            off[k] = if off[k] == b'1' { b'2' } else { b'1' };
            let off = String::from_utf8(off).unwrap();
            prop_assert_eq!(is_rfc3339_ms_text(ms, &off), off == text);
            prop_assert_eq!(is_rfc3339_ms_text(ms, &other), other == text);
        }
    }
}
