//! Arena-allocated JSON values built from simd-json's tape.
//!
//! A line that lies in the per-file [`Bump`] arena (a small file read whole
//! into it, or a line [`LineParser::parse`] copied there with simd-json's
//! padding) is parsed in place ([`LineParser::parse_in_arena`]:
//! `fill_tape_padded` unescapes strings inside it) and its tree's strings
//! are borrowed from it. A line that lies outside (a chunk of a large file)
//! is parsed in the parser's scratch buffer ([`LineParser::parse_line`])
//! and its tree's strings are copied into the arena, object keys once each
//! through a [`KeyCache`]: the arena then holds what the tree keeps, not
//! the line. Either way no string is a heap allocation of its own, and
//! object keys keep their document order (and duplicates), which later
//! stages need to re-serialize a body byte for byte.

pub mod diff;
mod numbers;
pub mod skim;
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

/// The bytes [`LineParser::parse_in_arena`] needs after a line (any
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
        let result = self.parse_in_place(bump, buf, len, None, None);
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
        let buf = Self::copy(bump, line);
        self.parse_in_arena(bump, buf, line.len(), line, None)
    }

    /// [`LineParser::parse_lenient`] of a line that lies outside the
    /// arena (a reader's buffer): it is parsed in this parser's scratch
    /// buffer and the tree's strings are copied into `bump` (keys through
    /// `strings`, once per distinct key), so the arena holds what the tree
    /// keeps and not the line. The tree follows `rules`; a line read
    /// leniently (numbers out of range) is built whole, from a copy of it
    /// in `bump`.
    pub fn parse_line<'a>(
        &mut self,
        bump: &'a Bump,
        line: &[u8],
        strings: &mut KeyCache<'a>,
        mut rules: Option<&mut TreeRules<'a>>,
    ) -> Result<(Json<'a>, Vec<OutOfRange>), ParseFailure> {
        if let Some(r) = rules.as_deref_mut() {
            r.start_line();
        }
        let len = line.len();
        let mut scratch = std::mem::take(&mut self.scratch);
        scratch.clear();
        scratch.extend_from_slice(line);
        scratch.resize(len + simd_json::INPUT_PADDING, b' ');
        let mut tape: Tape<'_> = match self.tape.take() {
            Some(t) => t.reset(),
            None => Tape::null(),
        };
        let first = match simd_json::fill_tape_padded(&mut scratch, len, &mut self.buffers, &mut tape) {
            Ok(()) => {
                let sink = Copied { bump, keys: strings };
                let mut builder =
                    Builder { nodes: &tape.0, pos: 0, bump, track: None, rules, depth: 0, parent: "", strings: sink };
                builder.value().ok_or_else(|| ("empty document".to_string(), false))
            }
            Err(e) => Err((e.to_string(), is_number_error(&e))),
        };
        self.tape = Some(tape.reset());
        if len > SHRINK_AFTER {
            scratch = Vec::new();
        }
        self.scratch = scratch;
        self.outcome(bump, line, first)
    }

    /// [`LineParser::parse_lenient`] of the line `buf[..len]` where it
    /// lies in the arena, with no copy, its tree by `rules`: `buf` holds at
    /// least [`PADDING`] bytes after it, of any content, which the parse
    /// leaves unchanged (so they can be the next lines of the file).
    /// Strings are unescaped in place and borrowed from there, so a failed
    /// parse can leave `buf[..len]` changed: `original` is the line as it
    /// was, for the error and the lenient second parse.
    pub fn parse_in_arena<'a>(
        &mut self,
        bump: &'a Bump,
        buf: &'a mut [u8],
        len: usize,
        original: &[u8],
        mut rules: Option<&mut TreeRules<'a>>,
    ) -> Result<(Json<'a>, Vec<OutOfRange>), ParseFailure> {
        if let Some(r) = rules.as_deref_mut() {
            r.start_line();
        }
        let first = self.parse_in_place(bump, buf, len, None, rules);
        self.outcome(bump, original, first)
    }

    /// The result of a first parse of `line` (as written): a line refused
    /// for a number is read again leniently ([`LineParser::lenient_numbers`]),
    /// any other refusal is the line's failure.
    fn outcome<'a>(
        &mut self,
        bump: &'a Bump,
        line: &[u8],
        first: Result<Json<'a>, (String, bool)>,
    ) -> Result<(Json<'a>, Vec<OutOfRange>), ParseFailure> {
        let result = match first {
            Ok(v) => Ok((v, Vec::new())),
            Err((msg, true)) => self.lenient_numbers(bump, line, msg),
            Err((msg, false)) => Err(msg),
        };
        self.after(line.len());
        result.map_err(|msg| Self::failure(line, msg))
    }

    /// The second, lenient parse of `line`, which simd-json refused for a
    /// number (`msg`): the numbers no 64-bit type holds replaced, in a copy
    /// in `bump`, and put back as JavaScript reads them.
    fn lenient_numbers<'a>(
        &mut self,
        bump: &'a Bump,
        line: &[u8],
        msg: String,
    ) -> Result<(Json<'a>, Vec<OutOfRange>), String> {
        let Some(reps) = numbers::replacements(line) else { return Err(msg) };
        let buf = Self::copy(bump, line);
        numbers::apply(buf, &reps);
        let mut track = numbers::Track::new(reps);
        match self.parse_in_place(bump, buf, line.len(), Some(&mut track), None) {
            Ok(v) if track.complete() => Ok((v, track.found)),
            Ok(_) => Err(msg),
            Err((again, _)) => Err(again),
        }
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
        rules: Option<&mut TreeRules<'a>>,
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
                let mut builder =
                    Builder { nodes: &tape.0, pos: 0, bump, track, rules, depth: 0, parent: "", strings: Borrowed };
                builder.value().ok_or_else(|| ("empty document".to_string(), false))
            }
            Err(e) => Err((e.to_string(), is_number_error(&e))),
        };
        self.tape = Some(tape.reset());
        value
    }
}

/// simd-json refused a number (one no 64-bit type holds).
fn is_number_error(e: &simd_json::Error) -> bool {
    matches!(e.error(), simd_json::ErrorType::InvalidNumber | simd_json::ErrorType::InvalidExponent)
}

/// Where a tree's strings come from: `'i` is the parsed line's, `'a` the
/// arena's.
trait Strings<'i, 'a> {
    fn key(&mut self, s: &'i str) -> &'a str;
    fn value(&mut self, s: &'i str) -> &'a str;
}

/// The line lies in the arena: its strings are used where they are.
struct Borrowed;

impl<'i: 'a, 'a> Strings<'i, 'a> for Borrowed {
    #[inline]
    fn key(&mut self, s: &'i str) -> &'a str {
        s
    }
    #[inline]
    fn value(&mut self, s: &'i str) -> &'a str {
        s
    }
}

/// The line lies outside the arena: its strings are copied into it.
struct Copied<'r, 'a> {
    bump: &'a Bump,
    keys: &'r mut KeyCache<'a>,
}

impl<'i, 'a> Strings<'i, 'a> for Copied<'_, 'a> {
    #[inline]
    fn key(&mut self, s: &'i str) -> &'a str {
        self.keys.get(self.bump, s)
    }
    #[inline]
    fn value(&mut self, s: &'i str) -> &'a str {
        self.keys.value(self.bump, s)
    }
}

/// Object keys already copied into an arena, so that the thousands of
/// lines of a file that share a few dozen keys hold each once: a small
/// direct-mapped cache (a key it no longer holds is copied again). Short
/// string values get one of their own: a session's lines repeat their
/// session id, directory, release, branch, model and kinds, and each
/// line's `parentUuid` is the `uuid` of the line before.
#[derive(Debug)]
pub struct KeyCache<'a> {
    slots: Box<[&'a str; KEY_SLOTS]>,
    values: Box<[&'a str; VALUE_SLOTS]>,
}

const KEY_SLOTS: usize = 512;
const VALUE_SLOTS: usize = 512;
/// Values longer than this are copied each time (text, rarely repeated
/// whole line after line).
const SHORT_VALUE: usize = 64;

/// A string's slot (9 bits): a hash of its length and its first and last
/// 8 bytes (what tells a transcript's keys and short values apart),
/// cheaper than hashing it all.
#[inline]
fn key_slot(b: &[u8]) -> usize {
    let word = |b: &[u8]| b.iter().fold(0u64, |h, &x| h << 8 | u64::from(x));
    let (head, tail) = (&b[..b.len().min(8)], &b[b.len().saturating_sub(8)..]);
    let h = (word(head) ^ word(tail).rotate_left(29) ^ b.len() as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    (h >> 55) as usize
}

impl Default for KeyCache<'_> {
    fn default() -> Self {
        KeyCache { slots: Box::new([""; KEY_SLOTS]), values: Box::new([""; VALUE_SLOTS]) }
    }
}

impl<'a> KeyCache<'a> {
    /// `s` in `bump`: the copy made for an earlier key equal to it, or a new one.
    #[inline]
    pub fn get(&mut self, bump: &'a Bump, s: &str) -> &'a str {
        if s.is_empty() {
            return "";
        }
        let slot = &mut self.slots[key_slot(s.as_bytes()) % KEY_SLOTS];
        if *slot != s {
            *slot = bump.alloc_str(s);
        }
        slot
    }

    /// A string value in `bump`: a short one is the copy made for an
    /// earlier value equal to it while the cache still holds it.
    #[inline]
    pub fn value(&mut self, bump: &'a Bump, s: &str) -> &'a str {
        if s.is_empty() {
            return "";
        }
        if s.len() > SHORT_VALUE {
            return bump.alloc_str(s);
        }
        let slot = &mut self.values[key_slot(s.as_bytes()) % VALUE_SLOTS];
        if *slot != s {
            *slot = bump.alloc_str(s);
        }
        slot
    }
}

/// How many values of `share` members [`TreeRules`] remembers.
const SHARED_RECENT: usize = 8;

/// The tree of a line for a reader that needs less than all of it, for the
/// lines of one file: members no reader of the run looks at are left out,
/// and a root member whose value equals one an earlier line had (the same
/// `params` on every request record) is that line's node, built once.
///
/// Members at the paths in `take` (a root key, or a root key and one of
/// its object's keys) are taken out of the tree into [`TreeRules::taken`]
/// by path (the last line's, in document order), for a reader that types
/// them once and never looks them up again.
#[derive(Debug, Default)]
pub struct TreeRules<'a> {
    /// Paths of one or two keys from the root.
    skip: &'static [&'static [&'static str]],
    /// Keys of root members.
    share: &'static [&'static str],
    /// Paths of one or two keys from the root.
    take: &'static [&'static [&'static str]],
    /// Values of `share` members seen, the most recent last.
    recent: Vec<(&'static str, Json<'a>)>,
    taken: Vec<(&'static [&'static str], Json<'a>)>,
}

impl<'a> TreeRules<'a> {
    pub fn new(
        skip: &'static [&'static [&'static str]],
        share: &'static [&'static str],
        take: &'static [&'static [&'static str]],
    ) -> Self {
        TreeRules { skip, share, take, recent: Vec::new(), taken: Vec::new() }
    }

    /// The members the last line built by these rules had at a `take`
    /// path, by path, in document order (none for a line built whole: read
    /// leniently, or not an object).
    pub fn taken(&self) -> &[(&'static [&'static str], Json<'a>)] {
        &self.taken
    }

    /// Forget the last line's taken members (a line about to be parsed).
    pub fn start_line(&mut self) {
        self.taken.clear();
    }

    /// The path of the member `key` of the object at `depth` (under the
    /// root member `parent` at depth 1) when it is taken.
    fn taken_key(&self, depth: u32, parent: &str, key: &str) -> Option<&'static [&'static str]> {
        self.take.iter().copied().find(|p| match (depth, *p) {
            (0, [k]) => *k == key,
            (1, [q, k]) => *q == parent && *k == key,
            _ => false,
        })
    }

    /// Whether the member `key` of the object at `depth` (under the root
    /// member `parent` at depth 1) is left out.
    fn skips(&self, depth: u32, parent: &str, key: &str) -> bool {
        self.skip.iter().any(|p| match (depth, *p) {
            (0, [k]) => *k == key,
            (1, [q, k]) => *q == parent && *k == key,
            _ => false,
        })
    }

    /// `key`'s `&'static` name when it is shared.
    fn shared_key(&self, key: &str) -> Option<&'static str> {
        self.share.iter().copied().find(|k| *k == key)
    }

    /// A value remembered under `key` that `v` equals.
    fn find(&self, key: &str, v: tape::TapeValue<'_, '_>) -> Option<Json<'a>> {
        self.recent.iter().rev().find(|(k, old)| *k == key && v.equals(old)).map(|(_, old)| *old)
    }

    fn remember(&mut self, key: &'static str, v: Json<'a>) {
        if self.recent.len() == SHARED_RECENT {
            self.recent.remove(0);
        }
        self.recent.push((key, v));
    }
}

/// Walks the tape in document order and allocates the tree in the arena.
/// With `track` (a line whose out-of-range numbers were replaced by
/// `null`), it puts their values back and notes their paths; with `rules`,
/// it builds the root's members (and theirs) by them.
struct Builder<'t, 'i, 'a, 'r, S> {
    nodes: &'t [Node<'i>],
    pos: usize,
    bump: &'a Bump,
    track: Option<&'r mut numbers::Track<'a>>,
    rules: Option<&'r mut TreeRules<'a>>,
    /// Depth of the value being built (the root is 0).
    depth: u32,
    /// The key of the root member the value is in (depth 1 and below).
    parent: &'a str,
    strings: S,
}

impl<'i, 'a, S: Strings<'i, 'a>> Builder<'_, 'i, 'a, '_, S> {
    fn value(&mut self) -> Option<Json<'a>> {
        let node = *self.nodes.get(self.pos)?;
        if let Node::Object { len, .. } = node
            && self.depth < 2
            && self.rules.is_some()
        {
            self.pos += 1;
            return Some(self.object_by_rules(len));
        }
        self.pos += 1;
        Some(match node {
            Node::String(s) => Json::Str(self.strings.value(s)),
            Node::Static(StaticNode::Null) => match self.track.as_deref_mut() {
                Some(t) => t.null(),
                None => Json::Null,
            },
            Node::Static(s) => scalar(s),
            Node::Array { len, .. } => {
                let bump = self.bump;
                // Its items are a level down (what the rules count).
                self.depth += 1;
                let items = bump.alloc_slice_fill_with(len, |i| {
                    self.enter(numbers::Seg::Index(i));
                    let v = self.value().unwrap_or(Json::Null);
                    self.leave();
                    v
                });
                self.depth -= 1;
                Json::Arr(items)
            }
            Node::Object { len, .. } => {
                let bump = self.bump;
                let members = bump.alloc_slice_fill_with(len, |_| {
                    let key = match self.nodes.get(self.pos) {
                        Some(Node::String(k)) => self.strings.key(k),
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

    /// The members of an object at depth 0 or 1, by the rules.
    fn object_by_rules(&mut self, len: usize) -> Json<'a> {
        let mut members: smallvec::SmallVec<[(&'a str, Json<'a>); 32]> = smallvec::SmallVec::new();
        let (depth, parent) = (self.depth, self.parent);
        for _ in 0..len {
            let key = match self.nodes.get(self.pos) {
                Some(Node::String(k)) => self.strings.key(k),
                _ => "",
            };
            self.pos += 1;
            let Some(node) = self.nodes.get(self.pos) else { break };
            let Some(rules) = self.rules.as_deref() else { break };
            if rules.skips(depth, parent, key) {
                self.pos += tape::span(node);
                continue;
            }
            if let Some(taken) = rules.taken_key(depth, parent, key) {
                self.depth = depth + 1;
                self.parent = if depth == 0 { key } else { parent };
                let v = self.value().unwrap_or(Json::Null);
                (self.depth, self.parent) = (depth, parent);
                if let Some(rules) = self.rules.as_deref_mut() {
                    rules.taken.push((taken, v));
                }
                continue;
            }
            let Some(rules) = self.rules.as_deref() else { break };
            let shared = if depth == 0 { rules.shared_key(key) } else { None };
            if let Some(shared) = shared {
                let at = tape::TapeValue::root(&self.nodes[self.pos..]);
                if let Some(v) = at.and_then(|at| rules.find(shared, at)) {
                    self.pos += tape::span(node);
                    members.push((key, v));
                    continue;
                }
            }
            self.depth = depth + 1;
            self.parent = if depth == 0 { key } else { parent };
            let v = self.value().unwrap_or(Json::Null);
            (self.depth, self.parent) = (depth, parent);
            if let (Some(shared), Some(rules)) = (shared, self.rules.as_deref_mut()) {
                rules.remember(shared, v);
            }
            members.push((key, v));
        }
        Json::Obj(self.bump.alloc_slice_copy(&members))
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
