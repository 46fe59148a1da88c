//! Writing JSON the way Claude Code's client does, and hashing it the way
//! its transcripts do.
//!
//! The client serializes request bodies with JavaScript's `JSON.stringify`:
//! compact, keys in insertion order, strings escaped only where JSON requires
//! it (`"`, `\`, and control characters: `\b \f \n \r \t` by name, the others
//! as lowercase `\u00xx`; everything else, U+2028 included, as raw UTF-8), and
//! numbers in ECMAScript's `Number::toString` form (`1e+21`, `1e-7`, `5`).
//! [`write`] reproduces that byte for byte from an arena [`Json`] value,
//! which keeps the document's key order.
//!
//! Transcripts of recent releases identify each sent message by
//! [`message_hash`]: SHA-256 of the message as compact JSON with keys sorted
//! and every `cache_control` member removed (SPEC.md, "What the real client
//! does today"; checked on all 14 captured 2.1.328 scenarios).

use crate::json::Json;
use sha2::{Digest, Sha256};

/// The high bit of each of the 8 bytes of `w` that may need escaping (`"`,
/// backslash or a control character), by the classic "has zero / has less"
/// word tricks. A borrow can flag a byte above a flagged one, never below:
/// the lowest flagged byte is exact, and a word without a flag is clean.
#[inline]
fn escape_mask(w: u64) -> u64 {
    const LO: u64 = 0x0101_0101_0101_0101;
    const HI: u64 = 0x8080_8080_8080_8080;
    let control = w.wrapping_sub(LO * 0x20) & !w & HI;
    let q = w ^ (LO * b'"' as u64);
    let quote = q.wrapping_sub(LO) & !q & HI;
    let b = w ^ (LO * b'\\' as u64);
    let backslash = b.wrapping_sub(LO) & !b & HI;
    control | quote | backslash
}

/// The escape of byte `b`, if it needs one (`\u00xx` is written by the caller).
#[inline]
fn escape_of(b: u8) -> Option<&'static [u8]> {
    Some(match b {
        b'"' => b"\\\"",
        b'\\' => b"\\\\",
        b'\n' => b"\\n",
        b'\r' => b"\\r",
        b'\t' => b"\\t",
        0x08 => b"\\b",
        0x0c => b"\\f",
        0..=0x1f => b"",
        _ => return None,
    })
}

/// Append `s` as a JSON string literal (JSON.stringify escaping). Clean
/// runs are found 8 bytes at a time and copied whole; a word with a byte to
/// escape jumps straight to that byte.
pub fn write_str(out: &mut Vec<u8>, s: &str) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    out.reserve(s.len() + 2);
    out.push(b'"');
    let bytes = s.as_bytes();
    let mut start = 0;
    let mut i = 0;
    let escape = |out: &mut Vec<u8>, at: usize, start: &mut usize| {
        let b = bytes[at];
        let Some(esc) = escape_of(b) else { return };
        out.extend_from_slice(&bytes[*start..at]);
        if esc.is_empty() {
            out.extend_from_slice(b"\\u00");
            out.push(HEX[(b >> 4) as usize]);
            out.push(HEX[(b & 0xf) as usize]);
        } else {
            out.extend_from_slice(esc);
        }
        *start = at + 1;
    };
    while let Some(chunk) = bytes.get(i..i + 8) {
        let mut w = [0u8; 8];
        w.copy_from_slice(chunk);
        let m = escape_mask(u64::from_le_bytes(w));
        if m == 0 {
            i += 8;
            continue;
        }
        let at = i + (m.trailing_zeros() / 8) as usize;
        escape(out, at, &mut start);
        i = at + 1;
    }
    while i < bytes.len() {
        escape(out, i, &mut start);
        i += 1;
    }
    out.extend_from_slice(&bytes[start..]);
    out.push(b'"');
}

/// Append a number as ECMAScript's `Number.prototype.toString` writes it.
pub fn write_f64(out: &mut Vec<u8>, f: f64) {
    if !f.is_finite() {
        // JSON.stringify writes NaN and ±Infinity as null.
        out.extend_from_slice(b"null");
        return;
    }
    let mut buf = ryu_js::Buffer::new();
    out.extend_from_slice(buf.format_finite(f).as_bytes());
}

fn write_u64(out: &mut Vec<u8>, n: u64) {
    let mut buf = itoa_buf(n);
    out.extend_from_slice(buf.as_bytes_mut());
}

/// A tiny integer formatter (no allocation).
struct Digits {
    buf: [u8; 20],
    start: usize,
}

impl Digits {
    fn as_bytes_mut(&mut self) -> &[u8] {
        &self.buf[self.start..]
    }
}

fn itoa_buf(mut n: u64) -> Digits {
    let mut d = Digits { buf: [0; 20], start: 20 };
    loop {
        d.start -= 1;
        d.buf[d.start] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            return d;
        }
    }
}

/// Append `v` as compact JSON in document key order.
pub fn write(out: &mut Vec<u8>, v: &Json<'_>) {
    write_with(out, v, false);
}

/// `v` as compact JSON bytes.
pub fn to_vec(v: &Json<'_>) -> Vec<u8> {
    let mut out = Vec::new();
    write(&mut out, v);
    out
}

/// Append `v` with keys sorted (by UTF-16 code units, as JavaScript's
/// default sort compares strings) and `cache_control` members left out.
pub fn write_canonical(out: &mut Vec<u8>, v: &Json<'_>) {
    write_with(out, v, true);
}

fn write_with(out: &mut Vec<u8>, v: &Json<'_>, canonical: bool) {
    match *v {
        Json::Null => out.extend_from_slice(b"null"),
        Json::Bool(true) => out.extend_from_slice(b"true"),
        Json::Bool(false) => out.extend_from_slice(b"false"),
        Json::U64(n) => write_u64(out, n),
        Json::I64(n) => {
            if n < 0 {
                out.push(b'-');
            }
            write_u64(out, n.unsigned_abs());
        }
        Json::F64(f) => write_f64(out, f),
        Json::Str(s) => write_str(out, s),
        Json::Arr(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_with(out, item, canonical);
            }
            out.push(b']');
        }
        Json::Obj(members) => {
            out.push(b'{');
            let mut member = |i: usize, k: &str, val: &Json<'_>| {
                if i > 0 {
                    out.push(b',');
                }
                write_str(out, k);
                out.push(b':');
                write_with(out, val, canonical);
            };
            if canonical {
                let mut sorted: smallvec::SmallVec<[&(&str, Json<'_>); 16]> =
                    members.iter().filter(|(k, _)| *k != "cache_control").collect();
                sorted.sort_by(|a, b| a.0.encode_utf16().cmp(b.0.encode_utf16()));
                for (i, (k, val)) in sorted.iter().enumerate() {
                    member(i, k, val);
                }
            } else {
                for (i, (k, val)) in members.iter().enumerate() {
                    member(i, k, val);
                }
            }
            out.push(b'}');
        }
    }
}

/// The transcript's message hash, as lowercase hex: SHA-256 of
/// [`write_canonical`]. `scratch` is reused between calls.
pub fn message_hash(v: &Json<'_>, scratch: &mut Vec<u8>) -> [u8; 32] {
    scratch.clear();
    write_canonical(scratch, v);
    Sha256::digest(scratch.as_slice()).into()
}

/// Lowercase hex of a digest.
pub fn hex(bytes: &[u8]) -> String {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(bytes.len() * 2);
    for &b in bytes {
        s.push(HEX[(b >> 4) as usize] as char);
        s.push(HEX[(b & 0xf) as usize] as char);
    }
    s
}

/// Parse a 64-character lowercase or uppercase hex SHA-256.
pub fn parse_sha256(s: &str) -> Option<[u8; 32]> {
    let b = s.as_bytes();
    if b.len() != 64 {
        return None;
    }
    let nib = |c: u8| match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        b'A'..=b'F' => Some(c - b'A' + 10),
        _ => None,
    };
    let mut out = [0u8; 32];
    for (i, o) in out.iter_mut().enumerate() {
        *o = nib(b[2 * i])? << 4 | nib(b[2 * i + 1])?;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::LineParser;
    use bumpalo::Bump;

    fn roundtrip(text: &str) -> String {
        let bump = Bump::new();
        let v = LineParser::new().parse(&bump, text.as_bytes()).unwrap();
        String::from_utf8(to_vec(&v)).unwrap()
    }

    proptest::proptest! {
        /// The word-at-a-time scan escapes exactly like a byte loop
        /// (serde_json escapes strings the same way JSON.stringify does).
        #[test]
        fn word_scan_matches_serde_json(s in "(\\PC|[\"\\\\\u{0}-\u{1f}\u{7f}\u{2028}])*") {
            let mut out = Vec::new();
            write_str(&mut out, &s);
            proptest::prop_assert_eq!(String::from_utf8(out).unwrap(), serde_json::to_string(&s).unwrap());
        }
    }

    #[test]
    fn strings_escape_like_json_stringify() {
        // Control characters by name or \u00xx (lowercase); U+2028, DEL, emoji raw.
        let s = "q\"b\\n\n\r\t\u{8}\u{c}\u{1}\u{1b}\u{7f}\u{2028}é🤖/";
        let mut out = Vec::new();
        write_str(&mut out, s);
        assert_eq!(String::from_utf8(out).unwrap(), "\"q\\\"b\\\\n\\n\\r\\t\\b\\f\\u0001\\u001b\u{7f}\u{2028}é🤖/\"");
    }

    #[test]
    fn numbers_print_like_javascript() {
        assert_eq!(
            roundtrip("[0,-0,5,-7,1.5,1e21,1e-7,123456789012,0.1,1E+3,2.50]"),
            "[0,0,5,-7,1.5,1e+21,1e-7,123456789012,0.1,1000,2.5]"
        );
    }

    #[test]
    fn compact_output_keeps_key_order() {
        let text = r#"{"tool_use_id":"t","type":"tool_result","content":"1\talpha\n2\t","is_error":false}"#;
        assert_eq!(roundtrip(text), text);
        assert_eq!(roundtrip("{ \"a\" : [ 1 , { } , [ ] ] }"), r#"{"a":[1,{},[]]}"#);
    }

    #[test]
    fn message_hash_matches_a_recorded_tail_hash() {
        // Claude Code 2.1.328, parallel-tools: the assistant message of the
        // first reply (three tool_use lines merged) is recorded in the second
        // api-request's tail as 578c5727….
        let msg = r#"{"role":"assistant","content":[{"type":"tool_use","id":"toolu_0150d3e3f9404c000000","name":"Read","input":{"file_path":"/home/dev/projects/parallel-tools/a.txt"}},{"type":"tool_use","id":"toolu_0150d3e3f9404c000001","name":"Read","input":{"file_path":"/home/dev/projects/parallel-tools/b.txt"}},{"type":"tool_use","id":"toolu_0150d3e3f9404c000002","name":"Bash","input":{"command":"wc -l a.txt b.txt","description":"Count lines"}}]}"#;
        let bump = Bump::new();
        let v = LineParser::new().parse(&bump, msg.as_bytes()).unwrap();
        let h = message_hash(&v, &mut Vec::new());
        assert_eq!(hex(&h), "578c5727abec8ebc05ec8826bcacba809c83616a227adfaeb852e18b73d778ed");
        assert_eq!(parse_sha256(&hex(&h)), Some(h));
        assert_eq!(parse_sha256("zz"), None);
    }

    #[test]
    fn canonical_form_sorts_keys_and_drops_cache_control() {
        let bump = Bump::new();
        let v = LineParser::new()
            .parse(
                &bump,
                br#"{"role":"user","content":[{"type":"text","text":"x","cache_control":{"type":"ephemeral"}}]}"#,
            )
            .unwrap();
        let mut out = Vec::new();
        write_canonical(&mut out, &v);
        assert_eq!(String::from_utf8(out).unwrap(), r#"{"content":[{"text":"x","type":"text"}],"role":"user"}"#);
    }
}
