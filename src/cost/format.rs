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
/// `12.3%`).
pub fn plain_pct(x: f64) -> String {
    format!("{:.1}%", 100.0 * x)
}

/// `+1.2345` / `-1.2345`; a delta that rounds to zero is `+0.0000`.
pub fn plain_signed_usd(x: f64) -> String {
    if x.abs() < 0.000_05 { "+0.0000".to_string() } else { format!("{x:+.4}") }
}

/// `+9.6%`; a delta that rounds to zero is `+0.0%`.
pub fn plain_signed_pct(x: f64) -> String {
    if x.abs() < 0.05 { "+0.0%".to_string() } else { format!("{x:+.1}%") }
}

#[cfg(test)]
mod tests {
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
}
