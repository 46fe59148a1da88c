//! Numbers, money and percentages as `ctxasm cost` prints them: the one
//! place both the terminal tables (`report`) and the HTML page (`html`)
//! take their formatting from.
//!
//! Two families, because the two outputs have always differed and must not
//! change by a byte:
//!
//! - *grouped* (the page): thousands separators, `n/a` for a value that is
//!   not finite, `-0` shown as `0` — [`int`], [`fixed`], [`usd`],
//!   [`signed_usd`], [`pct`], [`signed_pct`], [`opt_pct`];
//! - *plain* (the terminal): Rust's own `{:.N}` formatting, no separators, a
//!   delta that rounds to zero shown as `+0…` — [`plain_pct`],
//!   [`plain_signed_usd`], [`plain_signed_pct`].
//!
//! And the JSON: money is written rounded to a millionth of a dollar
//! ([`round_usd`], the `serde(serialize_with)` helpers in [`json`]),
//! percentages to 1e-4 percentage points and ratios to 1e-6, so `--json`
//! says `1.438719`, not `1.4387194500000002`; the values in memory are not
//! rounded.
//!
//! Pure functions of their arguments: no I/O, no locale.

/// `1234567` → `1,234,567`.
pub fn int(n: u64) -> String {
    group(&n.to_string())
}

fn group(digits: &str) -> String {
    let mut o = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            o.push(',');
        }
        o.push(c);
    }
    o
}

/// A finite value with `d` decimals, `-0` as `0`, thousands grouped.
pub fn fixed(x: f64, d: usize) -> String {
    let s = format!("{:.*}", d, x.abs());
    let neg = x < 0.0 && s.bytes().any(|b| (b'1'..=b'9').contains(&b));
    let (whole, frac) = s.split_once('.').unwrap_or((&s, ""));
    let mut o = String::new();
    if neg {
        o.push('-');
    }
    o.push_str(&group(whole));
    if !frac.is_empty() {
        o.push('.');
        o.push_str(frac);
    }
    o
}

/// `$1,234.5678` (four decimals); `n/a` when not finite.
pub fn usd(x: f64) -> String {
    if !x.is_finite() {
        return "n/a".into();
    }
    let s = fixed(x, 4);
    match s.strip_prefix('-') {
        Some(rest) => format!("-${rest}"),
        None => format!("${s}"),
    }
}

/// `+$0.1234` / `-$0.1234`; `n/a` when not finite.
pub fn signed_usd(x: f64) -> String {
    if !x.is_finite() {
        return "n/a".into();
    }
    let s = usd(x);
    if s.starts_with('-') { s } else { format!("+{s}") }
}

/// A percentage already in % (`12.3` → `+12.3%`); `n/a` when not finite.
pub fn signed_pct(p: f64) -> String {
    if !p.is_finite() {
        return "n/a".into();
    }
    let s = fixed(p, 1);
    if s.starts_with('-') { format!("{s}%") } else { format!("+{s}%") }
}

/// A fraction as a percentage (`0.123` → `12.3%`); `n/a` when not finite.
pub fn pct(f: f64) -> String {
    if !f.is_finite() {
        return "n/a".into();
    }
    format!("{}%", fixed(f * 100.0, 1))
}

/// [`pct`], `–` for none.
pub fn opt_pct(f: Option<f64>) -> String {
    f.map_or_else(|| "–".into(), pct)
}

/// A fraction as a percentage with one decimal, ungrouped (`0.123` →
/// `12.3%`); `n/a` when not finite (a quantile a merged report lacks).
pub fn plain_pct(x: f64) -> String {
    if !x.is_finite() {
        return "n/a".into();
    }
    format!("{:.1}%", 100.0 * x)
}

/// A count of tokens with no decimals, ungrouped; `n/a` when not finite.
pub fn plain_tokens(x: f64) -> String {
    if !x.is_finite() {
        return "n/a".into();
    }
    format!("{x:.0}")
}

/// `+1.2345` / `-1.2345`; a delta that rounds to zero is `+0.0000`.
pub fn plain_signed_usd(x: f64) -> String {
    if x.abs() < 0.000_05 { "+0.0000".to_string() } else { format!("{x:+.4}") }
}

/// `+9.6%`; a delta that rounds to zero is `+0.0%`.
pub fn plain_signed_pct(x: f64) -> String {
    if x.abs() < 0.05 { "+0.0%".to_string() } else { format!("{x:+.1}%") }
}

/// `n noun` with an `s` unless `n` is 1 (`1 request`, `2 requests`).
pub fn count(n: u64, noun: &str) -> String {
    format!("{n} {noun}{}", if n == 1 { "" } else { "s" })
}

/// `x` rounded to `1 / per` (`-0` as `0`; not finite as is; as is
/// within [`json::exact`]).
fn round_to(x: f64, per: f64) -> f64 {
    if !x.is_finite() || json::is_exact() {
        return x;
    }
    let r = (x * per).round() / per;
    if r == 0.0 { 0.0 } else { r }
}

/// USD rounded to a millionth of a dollar, as `--json` writes money.
pub fn round_usd(x: f64) -> f64 {
    round_to(x, 1e6)
}

/// A percentage rounded to 1e-4 percentage points, as `--json` writes it.
pub fn round_pct(x: f64) -> f64 {
    round_to(x, 1e4)
}

/// `serde(serialize_with)` helpers: money and percentages as `--json`
/// writes them (a value that is not finite stays `null`, serde_json's rule).
pub mod json {
    use serde::Serializer;
    use std::cell::Cell;

    thread_local! {
        static EXACT: Cell<bool> = const { Cell::new(false) };
    }

    /// Run `f` (a serialization) with money, percentages and ratios written
    /// unrounded, every digit of the f64 kept: the partial reports of
    /// `cost --shard` carry values a merge sums, and sums of rounded values
    /// would drift by up to half a millionth per shard.
    pub fn exact<R>(f: impl FnOnce() -> R) -> R {
        struct Reset(bool);
        impl Drop for Reset {
            fn drop(&mut self) {
                EXACT.with(|e| e.set(self.0));
            }
        }
        let _reset = Reset(EXACT.with(|e| e.replace(true)));
        f()
    }

    /// Whether [`exact`] is running on this thread.
    pub(super) fn is_exact() -> bool {
        EXACT.with(Cell::get)
    }

    /// [`super::round_usd`].
    pub fn usd<S: Serializer>(x: &f64, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_f64(super::round_usd(*x))
    }

    /// [`super::round_usd`], `null` for none.
    pub fn opt_usd<S: Serializer>(x: &Option<f64>, s: S) -> Result<S::Ok, S::Error> {
        match x {
            Some(x) => s.serialize_some(&super::round_usd(*x)),
            None => s.serialize_none(),
        }
    }

    /// [`super::round_pct`].
    pub fn pct<S: Serializer>(x: &f64, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_f64(super::round_pct(*x))
    }

    /// A ratio (or bytes per token) to 1e-6.
    pub fn ratio<S: Serializer>(x: &f64, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_f64(super::round_to(*x, 1e6))
    }

    /// [`ratio`], `null` for none.
    pub fn opt_ratio<S: Serializer>(x: &Option<f64>, s: S) -> Result<S::Ok, S::Error> {
        match x {
            Some(x) => s.serialize_some(&super::round_to(*x, 1e6)),
            None => s.serialize_none(),
        }
    }

    /// A map of [`usd`]s.
    pub fn usd_map<S: Serializer>(m: &std::collections::BTreeMap<String, f64>, s: S) -> Result<S::Ok, S::Error> {
        s.collect_map(m.iter().map(|(k, v)| (k, super::round_usd(*v))))
    }

    /// A map of [`ratio`]s.
    pub fn ratio_map<S: Serializer>(m: &std::collections::BTreeMap<&str, f64>, s: S) -> Result<S::Ok, S::Error> {
        s.collect_map(m.iter().map(|(k, v)| (k, super::round_to(*v, 1e6))))
    }
}

/// What a what-if would have billed: the recorded `bill` plus the modeled
/// `delta` as shown (to the 1/10,000 USD), never below 0, so a delta shown
/// as +0.0000 leaves the bill as shown.
pub fn would_have_paid(bill: f64, delta: f64) -> f64 {
    (bill + (delta * 1e4).round() / 1e4).max(0.0)
}

/// A pause in words a person reads: seconds under 2 minutes, minutes
/// under 2 hours, hours under 2 days, else days (rounded down).
pub fn pause(secs: u64) -> String {
    match secs {
        s if s < 120 => format!("{s} s"),
        s if s < 7200 => format!("{} min", s / 60),
        s if s < 172_800 => format!("{} h", s / 3600),
        s => format!("{} days", s / 86_400),
    }
}

#[cfg(test)]
mod tests {
    use super::pause;

    #[test]
    fn pauses_read_as_words() {
        let got: Vec<String> = [0, 119, 120, 7199, 7200, 172_799, 172_800].into_iter().map(pause).collect();
        assert_eq!(got, ["0 s", "119 s", "2 min", "119 min", "2 h", "47 h", "2 days"]);
    }

    #[test]
    fn would_have_paid_adds_the_delta_as_shown() {
        // A delta shown as +0.0000 leaves the bill as shown.
        assert_eq!(format!("{:.4}", would_have_paid(38.37937, -0.00004)), "38.3794");
        assert_eq!(format!("{:.4}", would_have_paid(9.0877, 0.7618)), "9.8495");
        assert_eq!(would_have_paid(1.0, -2.0), 0.0);
    }

    use super::*;

    #[test]
    fn formats() {
        assert_eq!(int(0), "0");
        assert_eq!(int(1_234_567), "1,234,567");
        assert_eq!(usd(1234.56789), "$1,234.5679");
        assert_eq!(usd(-0.00001), "$0.0000");
        assert_eq!(usd(-2.5), "-$2.5000");
        assert_eq!(signed_usd(0.5), "+$0.5000");
        assert_eq!(signed_pct(-3.04), "-3.0%");
        assert_eq!(signed_pct(f64::NAN), "n/a");
        assert_eq!(pct(0.5), "50.0%");
    }

    #[test]
    fn signed_deltas_never_print_minus_zero() {
        assert_eq!(plain_signed_usd(-0.000_01), "+0.0000");
        assert_eq!(plain_signed_usd(3.757_71), "+3.7577");
        assert_eq!(plain_signed_usd(-1.5), "-1.5000");
        assert_eq!(plain_signed_pct(-0.01), "+0.0%");
        assert_eq!(plain_signed_pct(9.62), "+9.6%");
        assert_eq!(plain_signed_pct(-12.94), "-12.9%");
    }

    #[test]
    fn json_money_is_rounded_to_a_millionth() {
        assert_eq!(round_usd(1.438_719_450_000_000_2), 1.438719);
        assert_eq!(round_usd(9.087_704_050_000_005).to_string(), "9.087704");
        assert_eq!(round_usd(0.000_000_4), 0.0);
        assert!(round_usd(-0.000_000_4).is_sign_positive(), "no -0");
        assert_eq!(round_pct(-10.551_234_567), -10.5512);
        assert!(round_usd(f64::NAN).is_nan());
        #[derive(serde::Serialize)]
        struct M {
            #[serde(serialize_with = "json::usd")]
            a: f64,
            #[serde(serialize_with = "json::opt_usd")]
            b: Option<f64>,
            #[serde(serialize_with = "json::opt_usd")]
            c: Option<f64>,
            #[serde(serialize_with = "json::pct")]
            d: f64,
        }
        let m = M { a: 1.438_719_450_000_000_2, b: Some(0.1 + 0.2), c: None, d: 100.0 / 3.0 };
        assert_eq!(serde_json::to_string(&m).unwrap(), r#"{"a":1.438719,"b":0.3,"c":null,"d":33.3333}"#);
    }

    #[test]
    fn counts_are_singular_for_one() {
        assert_eq!(count(0, "request"), "0 requests");
        assert_eq!(count(1, "request"), "1 request");
        assert_eq!(count(2, "sample"), "2 samples");
    }
}
