//! A line's root members read without a tape: a validating skim that
//! accepts only lines simd-json accepts.
//!
//! The lean read (`input::scan`) needs, of most lines, a few string members
//! of the root object (`type`, `uuid`, `parentUuid`, ...) and whether the
//! line parses at all. simd-json answers both, but builds a tape of the
//! whole line and unescapes every string into it, most of them long texts
//! nobody reads. [`root_members`] walks the line once, unescaping nothing
//! ([`root_members_nested`] reads one object member's members in the same
//! pass: `message` of an assistant line), and says one of two things:
//!
//! - `Some`: the line is JSON that simd-json's tape parse (and so the full
//!   read) accepts, its root is an object, and the first member of each
//!   key asked for is as given ([`Member`]), as [`Json::get`] would read it.
//! - `None`: not sure. The caller parses the line with simd-json, as
//!   before: this is where every refused line goes, and with it what the
//!   skim leaves alone to stay simple (any escape in a key of the root
//!   object or in a value asked for, a `\u` escape of a surrogate, a number
//!   of more than 18 digits or with a long exponent, nesting past
//!   [`MAX_DEPTH`], any byte below 0x20 in the line: JSON written by
//!   Claude Code has none of these where they matter).
//!
//! The grammar is strict JSON (RFC 8259) with space as the only whitespace
//! (tabs and carriage returns are below 0x20), on a line that is valid
//! UTF-8: a subset of what simd-json accepts. The property test of
//! `tests/it/skim.rs` checks that on generated and mutated lines against
//! simd-json itself.
//!
//! [`Json::get`]: super::Json::get

/// Nesting deeper than this is left to simd-json (whose own limit is 1,024).
pub const MAX_DEPTH: u32 = 127;

/// The first member of a key asked of [`root_members`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Member<'l> {
    /// The object has no member of this key.
    Absent,
    /// A string (with no escapes: it is the line's own bytes).
    Str(&'l str),
    /// Any other value, as written (a JSON text the skim has checked).
    Other(&'l [u8]),
}

impl<'l> Member<'l> {
    /// A non-negative integer written in digits only, as [`Json::as_u64`]
    /// reads it; `Err` for a number written otherwise (a sign, a fraction,
    /// an exponent: left to simd-json), `Ok(None)` for any other value.
    ///
    /// [`Json::as_u64`]: super::Json::as_u64
    pub fn as_u64(&self) -> Result<Option<u64>, NotSure> {
        match *self {
            Member::Other(text @ [b'0'..=b'9', ..]) if text.iter().all(u8::is_ascii_digit) => {
                // At most 18 digits ([`Skim::number`]).
                Ok(Some(text.iter().fold(0u64, |n, d| n * 10 + u64::from(d - b'0'))))
            }
            Member::Other([b'0'..=b'9' | b'-', ..]) => Err(NotSure),
            _ => Ok(None),
        }
    }

    /// A boolean; `None` for any other value.
    pub fn as_bool(&self) -> Option<bool> {
        match *self {
            Member::Other(b"true") => Some(true),
            Member::Other(b"false") => Some(false),
            _ => None,
        }
    }

    pub fn as_str(&self) -> Option<&'l str> {
        match *self {
            Member::Str(s) => Some(s),
            _ => None,
        }
    }

    pub fn is_object(&self) -> bool {
        matches!(self, Member::Other([b'{', ..]))
    }
}

/// A value the skim leaves to simd-json.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NotSure;

/// The first member of each of `keys` at the root of `line`, when the line
/// is JSON simd-json accepts and its root an object (see the module docs
/// for `None`).
pub fn root_members<'l, const N: usize>(line: &'l [u8], keys: &[&str; N]) -> Option<[Member<'l>; N]> {
    root_members_nested(line, keys, (usize::MAX, &[])).map(|(found, [])| found)
}

/// [`root_members`], and of the first member of `keys[nested.0]`, when it
/// is an object, the first member of each of `nested.1` (all absent
/// otherwise): read in the same pass, so a large object is not skimmed
/// twice.
pub fn root_members_nested<'l, const N: usize, const M: usize>(
    line: &'l [u8],
    keys: &[&str; N],
    nested: (usize, &[&str; M]),
) -> Option<([Member<'l>; N], [Member<'l>; M])> {
    // simd-json parses documents below 4 GiB only.
    if u32::try_from(line.len()).is_err() || has_control(line) {
        return None;
    }
    let text = simdutf8::basic::from_utf8(line).ok()?;
    let mut s = Skim { b: line, text, i: 0 };
    s.space();
    let found = s.object(keys, Some(nested))?;
    s.space();
    (s.i == line.len()).then_some(found)
}

/// Whether any byte is below 0x20 (simd-json refuses them in strings; the
/// skim takes none anywhere).
fn has_control(line: &[u8]) -> bool {
    // Chunks the compiler turns into vector compares.
    line.chunks(64).any(|c| c.iter().fold(false, |a, &b| a | (b < 0x20)))
}

struct Skim<'l> {
    b: &'l [u8],
    /// `b` as text (checked once).
    text: &'l str,
    i: usize,
}

impl<'l> Skim<'l> {
    /// The object at `self.i`: the first member of each of `keys`, and of
    /// `nested` as [`root_members_nested`] reads it.
    fn object<const N: usize, const M: usize>(
        &mut self,
        keys: &[&str; N],
        nested: Option<(usize, &[&str; M])>,
    ) -> Option<([Member<'l>; N], [Member<'l>; M])> {
        let mut found = [Member::Absent; N];
        let mut inner = [Member::Absent; M];
        let mut seen = [false; N];
        (self.peek()? == b'{').then_some(())?;
        self.i += 1;
        self.space();
        if self.peek()? == b'}' {
            self.i += 1;
            return Some((found, inner));
        }
        loop {
            let (key, escaped) = self.string()?;
            if escaped {
                return None;
            }
            self.colon()?;
            let slot = keys.iter().position(|k| k.as_bytes() == key).filter(|&k| !seen[k]);
            let start = self.i;
            let nest = nested.filter(|&(n, _)| slot == Some(n));
            match (self.peek()?, nest) {
                (b'"', _) => {
                    let (text, escaped) = self.string()?;
                    if let Some(k) = slot {
                        if escaped {
                            return None;
                        }
                        // The line's text between its quotes (ASCII: char
                        // boundaries).
                        let end = self.i - 1;
                        found[k] = Member::Str(self.text.get(end - text.len()..end)?);
                    }
                }
                (b'{', Some((_, nested_keys))) => (inner, []) = self.object::<M, 0>(nested_keys, None)?,
                _ => {
                    let (mut stack, mut depth) = (0u128, 0u32);
                    self.value(&mut stack, &mut depth)?;
                }
            }
            if let Some(k) = slot {
                if found[k] == Member::Absent {
                    found[k] = Member::Other(&self.b[start..self.i]);
                }
                seen[k] = true;
            }
            self.space();
            match self.peek()? {
                b',' => {
                    self.i += 1;
                    self.space();
                }
                b'}' => {
                    self.i += 1;
                    return Some((found, inner));
                }
                _ => return None,
            }
        }
    }

    fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }

    fn space(&mut self) {
        while self.peek() == Some(b' ') {
            self.i += 1;
        }
    }

    /// `:` after a key, and the space after it.
    fn colon(&mut self) -> Option<()> {
        self.space();
        (self.peek()? == b':').then_some(())?;
        self.i += 1;
        self.space();
        Some(())
    }

    /// One value at `self.i` (a string is read by the caller's match too,
    /// but not here: any value), with all it holds.
    fn value(&mut self, stack: &mut u128, depth: &mut u32) -> Option<()> {
        let base = *depth;
        loop {
            // A value starts here.
            match self.peek()? {
                open @ (b'{' | b'[') => {
                    self.i += 1;
                    self.space();
                    let close = if open == b'{' { b'}' } else { b']' };
                    if self.peek()? == close {
                        self.i += 1;
                    } else {
                        if *depth >= MAX_DEPTH {
                            return None;
                        }
                        *stack = (*stack << 1) | u128::from(open == b'{');
                        *depth += 1;
                        if open == b'{' {
                            self.string()?;
                            self.colon()?;
                        }
                        continue;
                    }
                }
                b'"' => {
                    self.string()?;
                }
                b't' => self.literal(b"true")?,
                b'f' => self.literal(b"false")?,
                b'n' => self.literal(b"null")?,
                _ => self.number()?,
            }
            // After a value: close what ends here, or go on to the next.
            loop {
                self.space();
                if *depth == base {
                    return Some(());
                }
                let object = *stack & 1 == 1;
                match self.peek()? {
                    b',' => {
                        self.i += 1;
                        self.space();
                        if object {
                            self.string()?;
                            self.colon()?;
                        }
                        break;
                    }
                    b'}' if object => {}
                    b']' if !object => {}
                    _ => return None,
                }
                self.i += 1;
                *stack >>= 1;
                *depth -= 1;
            }
        }
    }

    fn literal(&mut self, word: &[u8]) -> Option<()> {
        self.b.get(self.i..)?.starts_with(word).then_some(())?;
        self.i += word.len();
        Some(())
    }

    /// `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`, with at most 18
    /// digits before the point, 17 after it and 2 in the exponent: every
    /// such number is within the range simd-json reads.
    fn number(&mut self) -> Option<()> {
        if self.peek() == Some(b'-') {
            self.i += 1;
        }
        let int = self.digits();
        if !(1..=18).contains(&int) || (int > 1 && self.b[self.i - int] == b'0') {
            return None;
        }
        if self.peek() == Some(b'.') {
            self.i += 1;
            if !(1..=17).contains(&self.digits()) {
                return None;
            }
        }
        if matches!(self.peek(), Some(b'e' | b'E')) {
            self.i += 1;
            if matches!(self.peek(), Some(b'+' | b'-')) {
                self.i += 1;
            }
            if !(1..=2).contains(&self.digits()) {
                return None;
            }
        }
        Some(())
    }

    fn digits(&mut self) -> usize {
        let start = self.i;
        while self.peek().is_some_and(|c| c.is_ascii_digit()) {
            self.i += 1;
        }
        self.i - start
    }

    /// A string at `self.i`: its bytes between the quotes, and whether it
    /// has an escape (all of them valid, no surrogate).
    fn string(&mut self) -> Option<(&'l [u8], bool)> {
        (self.peek()? == b'"').then_some(())?;
        let start = self.i + 1;
        // Most strings (keys, ids) end within 16 bytes, with no escape:
        // found here, without a call.
        #[cfg(target_arch = "x86_64")]
        if let Some(chunk) = self.b.get(start..start + 16) {
            let mask = mask_sse2(chunk);
            let end = start + mask.trailing_zeros() as usize;
            if mask != 0 && self.b[end] == b'"' {
                self.i = end + 1;
                return Some((&self.b[start..end], false));
            }
        }
        let mut j = start;
        let mut escaped = false;
        loop {
            j = quote_or_backslash(self.b, j)?;
            if self.b[j] == b'"' {
                self.i = j + 1;
                return Some((&self.b[start..j], escaped));
            }
            escaped = true;
            match *self.b.get(j + 1)? {
                b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => j += 2,
                b'u' => {
                    let hex = self.b.get(j + 2..j + 6)?;
                    let mut cp = 0u32;
                    for &h in hex {
                        cp = cp * 16 + char::from(h).to_digit(16)?;
                    }
                    if (0xD800..=0xDFFF).contains(&cp) {
                        return None;
                    }
                    j += 6;
                }
                _ => return None,
            }
        }
    }
}

/// The first `"` or `\` at or after `from`.
#[inline]
fn quote_or_backslash(b: &[u8], from: usize) -> Option<usize> {
    #[cfg(target_arch = "x86_64")]
    {
        quote_or_backslash_sse2(b, from)
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        quote_or_backslash_swar(b, from)
    }
}

/// [`quote_or_backslash`] 16 bytes at a time (SSE2 is part of x86-64).
/// Not inlined: the loop then lies where the function starts, aligned,
/// whatever code is built around the skim (inlined, its speed moved by
/// ±25 % with changes elsewhere in the binary).
#[cfg(target_arch = "x86_64")]
#[inline(never)]
fn quote_or_backslash_sse2(b: &[u8], mut j: usize) -> Option<usize> {
    while let Some(chunk) = b.get(j..j + 16) {
        let mask = mask_sse2(chunk);
        if mask != 0 {
            return Some(j + mask.trailing_zeros() as usize);
        }
        j += 16;
    }
    tail(b, j)
}

/// Bit `i` set where `chunk[i]` is a quote or a backslash, for the 16
/// bytes of `chunk` (SSE2).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn mask_sse2(chunk: &[u8]) -> u32 {
    use std::arch::x86_64::{__m128i, _mm_cmpeq_epi8, _mm_loadu_si128, _mm_movemask_epi8, _mm_or_si128, _mm_set1_epi8};
    assert!(chunk.len() >= 16);
    // SAFETY: SSE2 is in every x86-64 target, and the load reads 16 bytes
    // of `chunk` (no alignment needed).
    unsafe {
        let v = _mm_loadu_si128(chunk.as_ptr().cast::<__m128i>());
        let q = _mm_cmpeq_epi8(v, _mm_set1_epi8(b'"' as i8));
        let s = _mm_cmpeq_epi8(v, _mm_set1_epi8(b'\\' as i8));
        _mm_movemask_epi8(_mm_or_si128(q, s)) as u32
    }
}

/// [`quote_or_backslash`] 8 bytes at a time in a word.
#[cfg_attr(target_arch = "x86_64", allow(dead_code))]
fn quote_or_backslash_swar(b: &[u8], mut j: usize) -> Option<usize> {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    while let Some(chunk) = b.get(j..j + 8) {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        let x = u64::from_le_bytes(word);
        // A byte is zero in `q` (`s`) where `x` holds a quote (backslash);
        // the lowest flagged byte is the first zero.
        let q = x ^ (ONES * u64::from(b'"'));
        let s = x ^ (ONES * u64::from(b'\\'));
        let zero = (q.wrapping_sub(ONES) & !q) | (s.wrapping_sub(ONES) & !s);
        let mask = zero & HIGH;
        if mask != 0 {
            return Some(j + (mask.trailing_zeros() / 8) as usize);
        }
        j += 8;
    }
    tail(b, j)
}

fn tail(b: &[u8], j: usize) -> Option<usize> {
    b.get(j..)?.iter().position(|&c| c == b'"' || c == b'\\').map(|k| j + k)
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEYS: [&str; 3] = ["type", "uuid", "n"];

    fn members(line: &str) -> Option<[Member<'_>; 3]> {
        root_members(line.as_bytes(), &KEYS)
    }

    #[test]
    fn reads_the_first_member_of_each_key() {
        use Member::{Absent, Other, Str};
        assert_eq!(
            members(r#"{"type":"user","x":{"uuid":"no"},"uuid":"u1","type":"assistant","n":[1,{"a":null}]}"#),
            Some([Str("user"), Str("u1"), Other(br#"[1,{"a":null}]"#)])
        );
        assert_eq!(members(r#" { } "#), Some([Absent, Absent, Absent]));
        assert_eq!(
            members(r#"{ "type" : 7 , "uuid" : "a\nb" , "z" : "\u00e9\"\\\/" }"#),
            None,
            "an escape in a value asked for"
        );
        assert_eq!(members(r#"{"type":7,"z":"\u00e9\"\\\/\b\f\n\r\t"}"#), Some([Other(b"7"), Absent, Absent]));
        assert_eq!(
            members(r#"{"type":"t","uuid":null,"n":-0.5e+12}"#),
            Some([Str("t"), Other(b"null"), Other(b"-0.5e+12")])
        );
        assert_eq!(members(r#"{"ty\u0070e":"t"}"#), None, "an escaped key at the root");
        assert_eq!(members(r#"{"a":{"ty\u0070e":"t"}}"#), Some([Absent, Absent, Absent]));
    }

    #[test]
    fn reads_one_nested_object_in_the_same_pass() {
        use Member::{Absent, Other, Str};
        let nested = |line: &'static str| root_members_nested(line.as_bytes(), &["m", "k"], (0, &["id", "u"]));
        assert_eq!(
            nested(r#"{"m":{"c":[{"id":"no"}],"id":"i1","u":{"n":1},"id":"i2"},"k":1,"m":{"id":"later"}}"#),
            Some((
                [Other(br#"{"c":[{"id":"no"}],"id":"i1","u":{"n":1},"id":"i2"}"#), Other(b"1")],
                [Str("i1"), Other(br#"{"n":1}"#)]
            ))
        );
        assert_eq!(nested(r#"{"m":[1],"k":"x"}"#), Some(([Other(b"[1]"), Str("x")], [Absent, Absent])));
        assert_eq!(nested(r#"{"m":{"i\u0064":"x"}}"#), None, "an escaped key in the nested object");
        assert_eq!(nested(r#"{"m":{"id":"a\nb"}}"#), None, "an escape in a nested value asked for");
    }

    #[test]
    fn numbers_and_booleans_read_as_the_tree_reads_them() {
        use Member::{Absent, Other, Str};
        assert_eq!(Other(b"0").as_u64(), Ok(Some(0)));
        assert_eq!(Other(b"123456789012345678").as_u64(), Ok(Some(123_456_789_012_345_678)));
        for not_sure in [&b"-1"[..], b"-0", b"1.0", b"1e2", b"0.5"] {
            assert_eq!(Other(not_sure).as_u64(), Err(NotSure), "{not_sure:?}");
        }
        for none in [Other(b"true"), Other(b"null"), Other(b"{}"), Str("7"), Absent] {
            assert_eq!(none.as_u64(), Ok(None));
        }
        assert_eq!(
            (Other(b"true").as_bool(), Other(b"false").as_bool(), Str("true").as_bool()),
            (Some(true), Some(false), None)
        );
        assert!(Other(b"{}").is_object() && !Other(b"[]").is_object() && !Absent.is_object());
    }

    #[test]
    fn is_not_sure_of_what_it_leaves_to_simd_json() {
        for line in [
            "[1]",
            "\"s\"",
            "7",
            "",
            " ",
            "{",
            "{\"a\":1,}",
            "{\"a\":1}x",
            "{\"a\":01}",
            "{\"a\":1.}",
            "{\"a\":1e}",
            "{\"a\":1e100}",
            "{\"a\":1234567890123456789}",
            "{\"a\":tru}",
            "{\"a\":\"\\x\"}",
            "{\"a\":\"\\ud800\\udc00\"}",
            "{\"a\":\"\\u12g4\"}",
            "{\"a\":\"tab\there\"}",
            "{\"a\":1}\r",
            "{\"a\":[1 2]}",
            "{\"a\":{\"b\" 1}}",
            "{\"a\":[}",
        ] {
            assert_eq!(root_members(line.as_bytes(), &KEYS), None, "{line:?}");
        }
        assert_eq!(root_members(b"{\"a\":\"\xff\"}", &KEYS), None, "not UTF-8");
        let deep = format!("{{\"a\":{}1{}}}", "[".repeat(MAX_DEPTH as usize + 1), "]".repeat(MAX_DEPTH as usize + 1));
        assert_eq!(members(&deep), None);
        let ok = format!("{{\"a\":{}1{}}}", "[".repeat(MAX_DEPTH as usize), "]".repeat(MAX_DEPTH as usize));
        assert_eq!(members(&ok), Some([Member::Absent; 3]));
    }

    #[test]
    fn both_scans_find_the_same_byte() {
        let text: Vec<u8> = (0..300u32).map(|i| b"ab\"c\\defghijklmnopqrstuvwxyz0123"[(i * 7 % 31) as usize]).collect();
        for from in 0..text.len() {
            let want = tail(&text, from);
            assert_eq!(quote_or_backslash_swar(&text, from), want);
            assert_eq!(quote_or_backslash(&text, from), want);
        }
        assert_eq!(quote_or_backslash(b"abc", 3), None);
        assert_eq!(quote_or_backslash(b"abc", 4), None);
    }
}
