//! Arena-allocated JSON values built from simd-json's tape.
//!
//! A line is copied once into the per-file [`Bump`] arena with simd-json's
//! padding after it, parsed in place (`fill_tape_padded`: strings are unescaped
//! inside that copy), and the tape is turned into a [`Json`] tree whose slices
//! live in the same arena. Strings are `&'a str` borrowed from the arena copy:
//! no per-string heap allocation. Object keys keep their document order (and
//! duplicates), which later stages need to re-serialize a body byte for byte.

pub mod diff;
mod numbers;
pub mod tape;
pub mod writer;

pub use numbers::OutOfRange;

use bumpalo::Bump;
use simd_json::{Buffers, Node, StaticNode, Tape};

/// One JSON value whose strings and children live in a per-file arena.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Json<'a> {
    Null,
    Bool(bool),
    I64(i64),
    U64(u64),
    F64(f64),
    Str(&'a str),
    Arr(&'a [Json<'a>]),
    /// Members in document order.
    Obj(&'a [(&'a str, Json<'a>)]),
}

/// A scalar of simd-json's tape as a [`Json`].
pub(crate) fn scalar(s: StaticNode) -> Json<'static> {
    match s {
        StaticNode::Null => Json::Null,
        StaticNode::Bool(b) => Json::Bool(b),
        StaticNode::I64(n) => Json::I64(n),
        StaticNode::U64(n) => Json::U64(n),
        StaticNode::F64(f) => Json::F64(f),
        #[allow(unreachable_patterns)]
        _ => Json::Null,
    }
}

/// The bytes [`LineParser::parse_lenient_at`] needs after a line (any
/// content).
pub const PADDING: usize = simd_json::INPUT_PADDING;

/// Shared empty value, handy as a default.
pub static NULL: Json<'static> = Json::Null;

impl<'a> Json<'a> {
    /// The member `key` of an object (first occurrence), if any.
    #[inline]
    pub fn get(&self, key: &str) -> Option<&'a Json<'a>> {
        match *self {
            Json::Obj(members) => members.iter().find(|(k, _)| *k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    /// `v` copied into `bump` (member order kept: serde_json is built with
    /// `preserve_order`).
    pub fn from_serde(bump: &'a Bump, v: &serde_json::Value) -> Json<'a> {
        use serde_json::Value;
        match v {
            Value::Null => Json::Null,
            Value::Bool(b) => Json::Bool(*b),
            Value::Number(n) => match (n.as_u64(), n.as_i64(), n.as_f64()) {
                (Some(u), _, _) => Json::U64(u),
                (_, Some(i), _) => Json::I64(i),
                (_, _, Some(f)) => Json::F64(f),
                _ => Json::Null,
            },
            Value::String(s) => Json::Str(bump.alloc_str(s)),
            Value::Array(items) => {
                let items: Vec<Json<'a>> = items.iter().map(|x| Json::from_serde(bump, x)).collect();
                Json::Arr(bump.alloc_slice_copy(&items))
            }
            Value::Object(members) => {
                let members: Vec<(&'a str, Json<'a>)> =
                    members.iter().map(|(k, x)| (&*bump.alloc_str(k), Json::from_serde(bump, x))).collect();
                Json::Obj(bump.alloc_slice_copy(&members))
            }
        }
    }

    /// A string member of an object.
    #[inline]
    pub fn get_str(&self, key: &str) -> Option<&'a str> {
        self.get(key).and_then(Json::as_str)
    }

    /// A boolean member; `None` when absent or not a boolean.
    #[inline]
    pub fn get_bool(&self, key: &str) -> Option<bool> {
        match self.get(key) {
            Some(Json::Bool(b)) => Some(*b),
            _ => None,
        }
    }

    /// A non-negative integer member.
    #[inline]
    pub fn get_u64(&self, key: &str) -> Option<u64> {
        self.get(key).and_then(Json::as_u64)
    }

    #[inline]
    pub fn as_str(&self) -> Option<&'a str> {
        match *self {
            Json::Str(s) => Some(s),
            _ => None,
        }
    }

    #[inline]
    pub fn as_array(&self) -> Option<&'a [Json<'a>]> {
        match *self {
            Json::Arr(a) => Some(a),
            _ => None,
        }
    }

    #[inline]
    pub fn as_object(&self) -> Option<&'a [(&'a str, Json<'a>)]> {
        match *self {
            Json::Obj(o) => Some(o),
            _ => None,
        }
    }

    /// Integers as `u64` (negative and fractional numbers are `None`;
    /// a float with an exact integral value is accepted).
    #[inline]
    pub fn as_u64(&self) -> Option<u64> {
        match *self {
            Json::U64(n) => Some(n),
            Json::I64(n) => u64::try_from(n).ok(),
            Json::F64(f) if f >= 0.0 && f.fract() == 0.0 && f < 1.8e19 => Some(f as u64),
            _ => None,
        }
    }

    #[inline]
    pub fn as_f64(&self) -> Option<f64> {
        match *self {
            Json::U64(n) => Some(n as f64),
            Json::I64(n) => Some(n as f64),
            Json::F64(f) => Some(f),
            _ => None,
        }
    }

    #[inline]
    pub fn is_null(&self) -> bool {
        matches!(self, Json::Null)
    }

    /// Compact JSON text (for diagnostics and tests; not the byte-exact writer).
    pub fn to_compact_string(&self) -> String {
        let mut out = Vec::new();
        self.write_compact(&mut out);
        String::from_utf8(out).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
    }

    /// Like [`writer::write`], but numbers in Rust's notation (a compact
    /// rendering for messages and keys, not the wire's bytes).
    fn write_compact(&self, out: &mut Vec<u8>) {
        use std::io::Write;
        match *self {
            Json::Null => out.extend_from_slice(b"null"),
            Json::Bool(b) => out.extend_from_slice(if b { b"true" } else { b"false" }),
            Json::I64(n) => {
                let _ = write!(out, "{n}");
            }
            Json::U64(n) => {
                let _ = write!(out, "{n}");
            }
            Json::F64(f) => {
                let _ = write!(out, "{f}");
            }
            Json::Str(s) => writer::write_str(out, s),
            Json::Arr(items) => {
                out.push(b'[');
                for (i, v) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(b',');
                    }
                    v.write_compact(out);
                }
                out.push(b']');
            }
            Json::Obj(members) => {
                out.push(b'{');
                for (i, (k, v)) in members.iter().enumerate() {
                    if i > 0 {
                        out.push(b',');
                    }
                    writer::write_str(out, k);
                    out.push(b':');
                    v.write_compact(out);
                }
                out.push(b'}');
            }
        }
    }
}

/// Why a line could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ParseFailure {
    /// The bytes are not valid UTF-8.
    InvalidUtf8,
    /// Valid UTF-8 but not valid JSON (simd-json's message).
    Syntax(String),
}

/// Reusable per-thread parser state: simd-json's buffers and tape.
///
/// Keeping one per worker thread means a line parse allocates nothing on the
/// heap once the buffers have grown to the corpus' line sizes.
pub struct LineParser {
    buffers: Buffers,
    tape: Option<Tape<'static>>,
    /// The padded copy of a line [`LineParser::with_tape`] parses.
    scratch: Vec<u8>,
}

impl Default for LineParser {
    fn default() -> Self {
        Self::new()
    }
}

/// Lines longer than this leave oversized buffers behind; after such a line
/// the buffers are replaced so a single 100 MB line does not pin memory.
const SHRINK_AFTER: usize = 16 << 20;

impl LineParser {
    pub fn new() -> Self {
        Self { buffers: Buffers::new(64 * 1024), tape: Some(Tape::null()), scratch: Vec::new() }
    }

    /// Parse `line` into simd-json's tape only (in a scratch buffer of this
    /// parser: nothing in an arena, no tree) and hand its root to `f`.
    /// `None` when simd-json refuses the line: the same parse as the
    /// first attempt of [`LineParser::parse`] and
    /// [`LineParser::parse_lenient`], so a line is accepted here exactly
    /// when `parse` accepts it (the caller reads a refused line with
    /// `parse_lenient` to learn why). Strings `f` keeps must be copied out.
    pub fn with_tape<R>(&mut self, line: &[u8], f: impl for<'t> FnOnce(tape::TapeValue<'t, 't>) -> R) -> Option<R> {
        let len = line.len();
        let mut scratch = std::mem::take(&mut self.scratch);
        scratch.clear();
        scratch.extend_from_slice(line);
        scratch.resize(len + simd_json::INPUT_PADDING, b' ');
        let mut tape: Tape<'_> = match self.tape.take() {
            Some(t) => t.reset(),
            None => Tape::null(),
        };
        let result = match simd_json::fill_tape_padded(&mut scratch, len, &mut self.buffers, &mut tape) {
            // An empty tape is refused too, as `parse` refuses it.
            Ok(()) => tape::TapeValue::root(&tape.0).map(f),
            Err(_) => None,
        };
        self.tape = Some(tape.reset());
        if len > SHRINK_AFTER {
            scratch = Vec::new();
        }
        self.scratch = scratch;
        self.after(len);
        result
    }

    /// Copy `line` into `bump`, parse it in place and return its value.
    /// A number no 64-bit type holds fails the line (see
    /// [`LineParser::parse_lenient`]).
    pub fn parse<'a>(&mut self, bump: &'a Bump, line: &[u8]) -> Result<Json<'a>, ParseFailure> {
        let len = line.len();
        let buf = Self::copy(bump, line);
        let result = self.parse_in_place(bump, buf, len, None);
        self.after(len);
        result.map_err(|(msg, _)| Self::failure(line, msg))
    }

    /// [`LineParser::parse`], except that a line simd-json refuses only for
    /// numbers no 64-bit type holds is still read, as JavaScript reads it
    /// (`numbers`): an integer beyond 64 bits as the nearest double, a
    /// number beyond the double range as `null`. Each is returned with its
    /// field path, for the caller to report.
    pub fn parse_lenient<'a>(
        &mut self,
        bump: &'a Bump,
        line: &[u8],
    ) -> Result<(Json<'a>, Vec<OutOfRange>), ParseFailure> {
        let len = line.len();
        let buf = Self::copy(bump, line);
        self.parse_lenient_at(bump, buf, len, line)
    }

    /// [`LineParser::parse_lenient`] of the line `buf[..len]` where it
    /// lies, with no copy: `buf` holds at least [`PADDING`]
    /// bytes after it, of any content, which the parse leaves unchanged (so
    /// they can be the next lines of the file). Strings are unescaped in
    /// place, so a failed parse can leave `buf[..len]` changed: `original`
    /// is the line as it was, for the error and the lenient second parse
    /// (which copies it into `bump`).
    pub fn parse_lenient_at<'a>(
        &mut self,
        bump: &'a Bump,
        buf: &'a mut [u8],
        len: usize,
        original: &[u8],
    ) -> Result<(Json<'a>, Vec<OutOfRange>), ParseFailure> {
        let result = match self.parse_in_place(bump, buf, len, None) {
            Ok(v) => Ok((v, Vec::new())),
            Err((msg, true)) => match numbers::replacements(original) {
                // The failed parse may have unescaped strings in place: a
                // fresh copy, with the numbers replaced.
                Some(reps) => {
                    let buf = Self::copy(bump, original);
                    numbers::apply(buf, &reps);
                    let mut track = numbers::Track::new(reps);
                    match self.parse_in_place(bump, buf, len, Some(&mut track)) {
                        Ok(v) if track.complete() => Ok((v, track.found)),
                        Ok(_) => Err(msg),
                        Err((again, _)) => Err(again),
                    }
                }
                None => Err(msg),
            },
            Err((msg, false)) => Err(msg),
        };
        self.after(len);
        result.map_err(|msg| Self::failure(original, msg))
    }

    /// `line` copied into `bump` with simd-json's padding after it.
    fn copy<'a>(bump: &'a Bump, line: &[u8]) -> &'a mut [u8] {
        let len = line.len();
        let buf: &'a mut [u8] = bump.alloc_slice_fill_copy(len + simd_json::INPUT_PADDING, b' ');
        buf[..len].copy_from_slice(line);
        buf
    }

    /// After a line of `len` bytes: drop buffers a huge line grew.
    fn after(&mut self, len: usize) {
        if len > SHRINK_AFTER {
            self.buffers = Buffers::new(64 * 1024);
        }
    }

    fn failure(line: &[u8], msg: String) -> ParseFailure {
        if std::str::from_utf8(line).is_err() { ParseFailure::InvalidUtf8 } else { ParseFailure::Syntax(msg) }
    }

    /// Parse `buf[..len]`; the error is simd-json's message and whether it
    /// is about a number.
    fn parse_in_place<'a>(
        &mut self,
        bump: &'a Bump,
        buf: &'a mut [u8],
        len: usize,
        track: Option<&mut numbers::Track<'a>>,
    ) -> Result<Json<'a>, (String, bool)> {
        // The tape's allocation is recycled across lines: `reset` clears it and
        // forgets the previous input's lifetime.
        let mut tape: Tape<'a> = match self.tape.take() {
            Some(t) => t.reset(),
            None => Tape::null(),
        };
        let outcome = simd_json::fill_tape_padded(buf, len, &mut self.buffers, &mut tape);
        let value = match outcome {
            Ok(()) => {
                let mut builder = Builder { nodes: &tape.0, pos: 0, bump, track };
                builder.value().ok_or_else(|| ("empty document".to_string(), false))
            }
            Err(e) => {
                let number =
                    matches!(e.error(), simd_json::ErrorType::InvalidNumber | simd_json::ErrorType::InvalidExponent);
                Err((e.to_string(), number))
            }
        };
        self.tape = Some(tape.reset());
        value
    }
}

/// Walks the tape in document order and allocates the tree in the arena.
/// With `track` (a line whose out-of-range numbers were replaced by
/// `null`), it puts their values back and notes their paths.
struct Builder<'t, 'a, 'r> {
    nodes: &'t [Node<'a>],
    pos: usize,
    bump: &'a Bump,
    track: Option<&'r mut numbers::Track<'a>>,
}

impl<'a> Builder<'_, 'a, '_> {
    fn value(&mut self) -> Option<Json<'a>> {
        let node = *self.nodes.get(self.pos)?;
        self.pos += 1;
        Some(match node {
            Node::String(s) => Json::Str(s),
            Node::Static(StaticNode::Null) => match self.track.as_deref_mut() {
                Some(t) => t.null(),
                None => Json::Null,
            },
            Node::Static(s) => scalar(s),
            Node::Array { len, .. } => {
                let bump = self.bump;
                let items = bump.alloc_slice_fill_with(len, |i| {
                    self.enter(numbers::Seg::Index(i));
                    let v = self.value().unwrap_or(Json::Null);
                    self.leave();
                    v
                });
                Json::Arr(items)
            }
            Node::Object { len, .. } => {
                let bump = self.bump;
                let members = bump.alloc_slice_fill_with(len, |_| {
                    let key = match self.nodes.get(self.pos) {
                        Some(Node::String(k)) => *k,
                        _ => "",
                    };
                    self.pos += 1;
                    self.enter(numbers::Seg::Key(key));
                    let v = self.value().unwrap_or(Json::Null);
                    self.leave();
                    (key, v)
                });
                Json::Obj(members)
            }
        })
    }

    #[inline]
    fn enter(&mut self, seg: numbers::Seg<'a>) {
        if let Some(t) = self.track.as_deref_mut() {
            t.path.push(seg);
        }
    }

    #[inline]
    fn leave(&mut self) {
        if let Some(t) = self.track.as_deref_mut() {
            t.path.pop();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse<'a>(bump: &'a Bump, s: &[u8]) -> Result<Json<'a>, ParseFailure> {
        LineParser::new().parse(bump, s)
    }

    #[test]
    fn keeps_key_order_and_duplicates() {
        let bump = Bump::new();
        let v = parse(&bump, br#"{"z":1,"a":[true,null,"x\ny"],"z":-2,"f":1.5}"#).unwrap();
        let members = v.as_object().unwrap();
        let keys: Vec<&str> = members.iter().map(|(k, _)| *k).collect();
        assert_eq!(keys, ["z", "a", "z", "f"]);
        assert_eq!(v.get("z"), Some(&Json::U64(1)));
        assert_eq!(members[2].1, Json::I64(-2));
        assert_eq!(v.get("f"), Some(&Json::F64(1.5)));
        let a = v.get("a").unwrap().as_array().unwrap();
        assert_eq!(a, &[Json::Bool(true), Json::Null, Json::Str("x\ny")]);
        assert_eq!(v.to_compact_string(), r#"{"z":1,"a":[true,null,"x\ny"],"z":-2,"f":1.5}"#);
    }

    #[test]
    fn strings_borrow_from_the_arena_copy() {
        let bump = Bump::new();
        let line = br#"{"k":"plain"}"#.to_vec();
        let v = parse(&bump, &line).unwrap();
        let s = v.get_str("k").unwrap();
        let ptr = s.as_ptr() as usize;
        // The string is inside one of the arena's chunks, not in `line`.
        let line_range = line.as_ptr() as usize..line.as_ptr() as usize + line.len();
        assert!(!line_range.contains(&ptr));
        assert!(bump.allocated_bytes() >= line.len());
    }

    #[test]
    fn reports_syntax_and_utf8_errors() {
        let bump = Bump::new();
        assert!(matches!(parse(&bump, b"{\"a\":"), Err(ParseFailure::Syntax(_))));
        assert!(matches!(parse(&bump, b"{\"a\":\"\xff\xfe\"}"), Err(ParseFailure::InvalidUtf8)));
        assert!(matches!(parse(&bump, b""), Err(ParseFailure::Syntax(_))));
    }

    #[test]
    fn numbers_beyond_64_bits_and_the_double_range_fail_a_strict_parse() {
        // simd-json 0.19 refuses both (its big-int-as-float feature is off).
        let bump = Bump::new();
        for line in [&br#"{"n":123456789012345678901234567890}"#[..], br#"{"n":1e400}"#, br#"{"n":-1E+309}"#] {
            assert!(matches!(parse(&bump, line), Err(ParseFailure::Syntax(m)) if m.contains("InvalidNumber")));
        }
    }

    #[test]
    fn a_lenient_parse_reads_them_as_javascript_does_and_names_their_paths() {
        let bump = Bump::new();
        let mut p = LineParser::new();
        let line = br#"{"message":{"usage":{"input_tokens":123456789012345678901234567890,"output_tokens":5},"content":[null,{"input":{"x y":1e400,"k":"1e400"}}]},"big":-100000000000000000000,"z":null}"#;
        let (v, found) = p.parse_lenient(&bump, line).unwrap();
        let usage = v.get("message").unwrap().get("usage").unwrap();
        assert_eq!(usage.get("input_tokens"), Some(&Json::F64(1.2345678901234568e29)));
        assert_eq!(usage.get_u64("input_tokens"), None, "no 64-bit integer: absent for an integer field");
        assert_eq!(usage.get_u64("output_tokens"), Some(5));
        let content = v.get("message").unwrap().get("content").unwrap().as_array().unwrap();
        assert_eq!(content[0], Json::Null);
        assert_eq!(content[1].get("input").unwrap().get("x y"), Some(&Json::Null));
        assert_eq!(content[1].get("input").unwrap().get_str("k"), Some("1e400"));
        assert_eq!(v.get("big"), Some(&Json::F64(-1e20)));
        assert_eq!(v.get("z"), Some(&Json::Null));
        assert_eq!(
            found,
            [
                OutOfRange {
                    path: "message.usage.input_tokens".into(),
                    literal: "123456789012345678901234567890".into(),
                    read_as: Some(1.2345678901234568e29)
                },
                OutOfRange {
                    path: r#"message.content[1].input["x y"]"#.into(),
                    literal: "1e400".into(),
                    read_as: None
                },
                OutOfRange { path: "big".into(), literal: "-100000000000000000000".into(), read_as: Some(-1e20) },
            ]
        );
        // Written back as JSON.stringify writes what JSON.parse read.
        assert_eq!(
            String::from_utf8(writer::to_vec(&v)).unwrap(),
            r#"{"message":{"usage":{"input_tokens":1.2345678901234568e+29,"output_tokens":5},"content":[null,{"input":{"x y":null,"k":"1e400"}}]},"big":-100000000000000000000,"z":null}"#
        );
        // A line without such numbers reports nothing; a malformed number
        // or another error stays a failure, with simd-json's message.
        assert_eq!(p.parse_lenient(&bump, br#"{"a":1}"#).unwrap().1, []);
        assert!(matches!(p.parse_lenient(&bump, br#"{"a":01,"b":1e400}"#), Err(ParseFailure::Syntax(_))));
        assert!(matches!(p.parse_lenient(&bump, br#"{"a":1e400,"b":}"#), Err(ParseFailure::Syntax(_))));
        assert!(matches!(p.parse_lenient(&bump, b"{\"a\":1e400,\"b\":\"\xff\"}"), Err(ParseFailure::InvalidUtf8)));
        // The parser is still good for the next line.
        assert_eq!(p.parse_lenient(&bump, br#"[1e999]"#).unwrap().0, Json::Arr(&[Json::Null]));
        assert_eq!(p.parse(&bump, br#"{"b":2}"#).unwrap().get_u64("b"), Some(2));
    }

    #[test]
    fn parser_is_reusable_across_lines_and_arenas() {
        let mut p = LineParser::new();
        let b1 = Bump::new();
        let v1 = p.parse(&b1, br#"{"a":"1"}"#).unwrap();
        let b2 = Bump::new();
        let v2 = p.parse(&b2, br#"{"b":[1,2,3]}"#).unwrap();
        assert!(p.parse(&b2, b"nope").is_err());
        let v3 = p.parse(&b2, br#"[]"#).unwrap();
        assert_eq!(v1.get_str("a"), Some("1"));
        assert_eq!(v2.get("b").unwrap().as_array().unwrap().len(), 3);
        assert_eq!(v3, Json::Arr(&[]));
    }
}
