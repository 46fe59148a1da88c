//! Text on the page: HTML escaping ([`escape`], [`E`] for `{}` in `w!`),
//! clipping long labels, and SVG coordinates ([`C`]: one decimal, never
//! non-finite).
//!
//! Knows nothing of the report; numbers and money are `cost::format`'s.

use std::fmt;

/// `s` escaped for HTML text and attribute values (also valid in SVG).
pub fn escape(s: &str) -> String {
    E(s).to_string()
}

/// Escaped text, for `{}` in `w!`.
pub(super) struct E<'a>(pub(super) &'a str);

impl fmt::Display for E<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut start = 0;
        for (i, c) in self.0.char_indices() {
            let rep = match c {
                '&' => "&amp;",
                '<' => "&lt;",
                '>' => "&gt;",
                '"' => "&quot;",
                '\'' => "&#39;",
                _ => continue,
            };
            f.write_str(&self.0[start..i])?;
            f.write_str(rep)?;
            start = i + c.len_utf8();
        }
        f.write_str(&self.0[start..])
    }
}

/// At most `n` characters of `s`, with `…` when cut.
pub(super) fn clip(s: &str, n: usize) -> String {
    match s.char_indices().nth(n) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_string(),
    }
}

/// A coordinate: one decimal, 0 when not finite.
pub(super) struct C(pub(super) f64);

impl fmt::Display for C {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let v = if self.0.is_finite() { (self.0 * 10.0).round() / 10.0 } else { 0.0 };
        let v = if v == 0.0 { 0.0 } else { v };
        write!(f, "{v:.1}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats() {
        assert_eq!(escape("<a href=\"x\">&'"), "&lt;a href=&quot;x&quot;&gt;&amp;&#39;");
        assert_eq!(E("a<b").to_string(), "a&lt;b");
        assert_eq!(clip("abcdef", 3), "abc…");
        assert_eq!(C(f64::INFINITY).to_string(), "0.0");
        assert_eq!(C(-0.01).to_string(), "0.0");
    }
}
