//! Numbers no 64-bit type holds: what simd-json refuses, and how a line
//! that has them is still read.
//!
//! simd-json 0.19 fails the whole document with `InvalidNumber` on an
//! integer beyond `i64`/`u64` (`123456789012345678901234567890`; its
//! `big-int-as-float` feature is off) and on a number beyond the range of a
//! double (`1e400`). JSON itself (RFC 8259 §6) allows both, and Claude Code
//! reads its transcripts with JavaScript's `JSON.parse`, which takes the
//! first as the nearest double and the second as `Infinity` (written back by
//! `JSON.stringify` as `null`). So a line that fails only because of such
//! numbers is read the same way:
//! - an integer beyond 64 bits is the nearest double ([`Json::F64`]);
//!   a field that needs a 64-bit integer (a token count, `keep`) then finds
//!   no integer there and treats the value as absent;
//! - a number beyond the double range is `null` (absent).
//!
//! Each such number is reported ([`OutOfRange`]) with its field path.
//! Everything here runs only after simd-json has refused a line for a
//! number: the common path is untouched.
//!
//! [`Json::F64`]: super::Json::F64

/// A number of a line that no 64-bit type holds, and what it was read as.
#[derive(Debug, Clone, PartialEq)]
pub struct OutOfRange {
    /// Where it is in the line: `message.usage.input_tokens`,
    /// `message.content[0].input.n`, `a["odd key"]`.
    pub path: String,
    /// The number as written (cut after 40 bytes).
    pub literal: String,
    /// The nearest double (an integer beyond 64 bits); `None` for a number
    /// beyond the double range, read as `null`.
    pub read_as: Option<f64>,
}

/// One number to replace before parsing again: its bytes become `null`
/// (padded with spaces, so offsets do not move) and the tree builder puts
/// `read_as` back at the `ordinal`-th `null` of the document.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Replacement {
    pub(super) start: usize,
    pub(super) end: usize,
    /// How many `null` literals (and earlier replacements) come before it.
    pub(super) ordinal: usize,
    pub(super) read_as: Option<f64>,
    /// The number as written (cut after 40 bytes).
    pub(super) literal: String,
}

/// What a number literal is.
#[derive(Debug, PartialEq)]
enum Number {
    /// simd-json reads it.
    Fits,
    /// Not a JSON number: nothing to repair.
    Invalid,
    /// Valid JSON, but beyond 64 bits (`Some(nearest double)`) or beyond
    /// the double range (`None`).
    Over(Option<f64>),
}

fn classify(tok: &[u8]) -> Number {
    // RFC 8259: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
    let mut i = 0;
    let digits = |i: &mut usize| {
        let s = *i;
        while tok.get(*i).is_some_and(u8::is_ascii_digit) {
            *i += 1;
        }
        *i - s
    };
    if tok.first() == Some(&b'-') {
        i += 1;
    }
    let int_start = i;
    let n = digits(&mut i);
    if n == 0 || (n > 1 && tok[int_start] == b'0') {
        return Number::Invalid;
    }
    let mut integer = true;
    if tok.get(i) == Some(&b'.') {
        i += 1;
        integer = false;
        if digits(&mut i) == 0 {
            return Number::Invalid;
        }
    }
    if matches!(tok.get(i), Some(b'e' | b'E')) {
        i += 1;
        integer = false;
        if matches!(tok.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        if digits(&mut i) == 0 {
            return Number::Invalid;
        }
    }
    if i != tok.len() {
        return Number::Invalid;
    }
    // Only ASCII digits and signs: valid UTF-8.
    let Ok(text) = std::str::from_utf8(tok) else { return Number::Invalid };
    if integer && (text.parse::<i64>().is_ok() || text.parse::<u64>().is_ok()) {
        return Number::Fits;
    }
    match text.parse::<f64>() {
        Ok(f) if f.is_finite() => {
            if integer {
                Number::Over(Some(f))
            } else {
                Number::Fits
            }
        }
        Ok(_) => Number::Over(None),
        Err(_) => Number::Invalid,
    }
}

/// The numbers of `line` to replace, in document order; `None` when the
/// line has a malformed number (it stays invalid) or none to replace.
pub(super) fn replacements(line: &[u8]) -> Option<Vec<Replacement>> {
    let mut out = Vec::new();
    let mut nulls = 0usize;
    let mut i = 0;
    while i < line.len() {
        match line[i] {
            b'"' => {
                i += 1;
                while i < line.len() {
                    match line[i] {
                        b'\\' => i += 2,
                        b'"' => {
                            i += 1;
                            break;
                        }
                        _ => i += 1,
                    }
                }
            }
            b'n' if line[i..].starts_with(b"null") => {
                nulls += 1;
                i += 4;
            }
            b'-' | b'0'..=b'9' => {
                let start = i;
                while i < line.len() && matches!(line[i], b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E') {
                    i += 1;
                }
                match classify(&line[start..i]) {
                    Number::Fits => {}
                    Number::Invalid => return None,
                    // The shortest such number is 5 bytes (`1e309`), an
                    // integer beyond 64 bits 20: `null` always fits.
                    Number::Over(_) if i - start < 4 => return None,
                    Number::Over(read_as) => {
                        let literal = crate::diag::clip(&String::from_utf8_lossy(&line[start..i]), 40);
                        out.push(Replacement { start, end: i, ordinal: nulls, read_as, literal });
                        nulls += 1;
                    }
                }
            }
            _ => i += 1,
        }
    }
    (!out.is_empty()).then_some(out)
}

/// Overwrite each replaced number of `buf` with `null` and spaces.
pub(super) fn apply(buf: &mut [u8], reps: &[Replacement]) {
    for r in reps {
        buf[r.start..r.start + 4].copy_from_slice(b"null");
        buf[r.start + 4..r.end].fill(b' ');
    }
}

/// One step of a path in a document.
#[derive(Debug, Clone, Copy)]
pub(super) enum Seg<'a> {
    Key(&'a str),
    Index(usize),
}

/// What the tree builder needs to put the replaced numbers back: the
/// replacements, the current path, and what it found.
pub(super) struct Track<'a> {
    pub(super) reps: Vec<Replacement>,
    next: usize,
    nulls: usize,
    pub(super) path: Vec<Seg<'a>>,
    pub(super) found: Vec<OutOfRange>,
}

impl<'a> Track<'a> {
    pub(super) fn new(reps: Vec<Replacement>) -> Self {
        Self { reps, next: 0, nulls: 0, path: Vec::new(), found: Vec::new() }
    }

    /// The value of the next `null` of the document.
    pub(super) fn null(&mut self) -> super::Json<'a> {
        let ordinal = self.nulls;
        self.nulls += 1;
        let Some(r) = self.reps.get(self.next).filter(|r| r.ordinal == ordinal) else { return super::Json::Null };
        self.next += 1;
        self.found.push(OutOfRange { path: render_path(&self.path), literal: r.literal.clone(), read_as: r.read_as });
        r.read_as.map_or(super::Json::Null, super::Json::F64)
    }

    /// Every replacement was put back (the scan and the parser agree).
    pub(super) fn complete(&self) -> bool {
        self.next == self.reps.len()
    }
}

fn render_path(path: &[Seg<'_>]) -> String {
    let mut out = String::new();
    for seg in path {
        match seg {
            Seg::Index(i) => out.push_str(&format!("[{i}]")),
            Seg::Key(k) if !k.is_empty() && k.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-') => {
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(k);
            }
            Seg::Key(k) => {
                let mut quoted = Vec::new();
                super::writer::write_str(&mut quoted, k);
                out.push('[');
                out.push_str(&String::from_utf8_lossy(&quoted));
                out.push(']');
            }
        }
    }
    if out.is_empty() { "$".to_string() } else { out }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classify_follows_rfc_8259_and_the_64_bit_and_double_limits() {
        assert_eq!(classify(b"18446744073709551615"), Number::Fits);
        assert_eq!(classify(b"-9223372036854775808"), Number::Fits);
        assert_eq!(classify(b"18446744073709551616"), Number::Over(Some(18446744073709551616.0)));
        assert_eq!(classify(b"-9223372036854775809"), Number::Over(Some(-9223372036854775809.0)));
        assert_eq!(classify(b"1.5e308"), Number::Fits);
        assert_eq!(classify(b"1e-400"), Number::Fits);
        assert_eq!(classify(b"1e400"), Number::Over(None));
        assert_eq!(classify(b"-2E+309"), Number::Over(None));
        assert_eq!(classify(&[b'9'; 400]), Number::Over(None));
        for bad in [&b"01"[..], b"1.", b"-", b"1e", b"1e+", b".5", b"1-2", b"--1", b"1.5.5"] {
            assert_eq!(classify(bad), Number::Invalid, "{}", String::from_utf8_lossy(bad));
        }
    }

    #[test]
    fn replacements_skip_strings_and_count_nulls() {
        let line = br#"{"a":null,"s":"1e400 \" 99999999999999999999","b":[1e400,null,-99999999999999999999],"n":5}"#;
        let reps = replacements(line).unwrap();
        let spans: Vec<(&[u8], usize)> = reps.iter().map(|r| (&line[r.start..r.end], r.ordinal)).collect();
        assert_eq!(spans, [(&b"1e400"[..], 1), (&b"-99999999999999999999"[..], 3)]);
        assert_eq!(reps[0].read_as, None);
        assert_eq!(reps[1].read_as, Some(-1e20));
        let mut buf = line.to_vec();
        apply(&mut buf, &reps);
        assert_eq!(
            String::from_utf8(buf).unwrap(),
            format!(
                r#"{{"a":null,"s":"1e400 \" 99999999999999999999","b":[null ,null,null{}],"n":5}}"#,
                " ".repeat(17)
            )
        );
        // A malformed number keeps the line invalid; nothing to replace is None.
        assert_eq!(replacements(br#"{"a":01,"b":1e400}"#), None);
        assert_eq!(replacements(br#"{"a":1}"#), None);
    }

    #[test]
    fn paths_name_keys_and_indexes() {
        assert_eq!(
            render_path(&[Seg::Key("message"), Seg::Key("usage"), Seg::Key("input_tokens")]),
            "message.usage.input_tokens"
        );
        assert_eq!(render_path(&[Seg::Key("a"), Seg::Index(2), Seg::Key("odd key")]), r#"a[2]["odd key"]"#);
        assert_eq!(render_path(&[]), "$");
    }
}
