//! Input: discover files, get their bytes, split lines, parse each line
//! into a per-file arena (its tree and strings, not the line), and type it.

pub mod discover;
pub mod lines;
pub mod scan;
pub mod shard;
pub mod source;

use crate::diag::{DiagKind, Diagnostic, clip};
use crate::json::{Json, KeyCache, LineParser, OutOfRange, PADDING, ParseFailure, TreeRules};
use crate::model::entry::{Entry, EntryKind, EnvShared, TYPED_MEMBERS, type_entry_with};
use bumpalo::Bump;
use source::SourceOptions;
use std::cell::RefCell;
use std::io::{self, Read};
use std::path::Path;

/// How files are read.
#[derive(Debug, Clone, Copy)]
pub struct ReadOptions {
    pub source: SourceOptions,
    /// Lines longer than this are skipped with a `line_too_long` diagnostic.
    pub max_line_bytes: usize,
    /// What of each line the run reads.
    pub fields: Fields,
}

impl Default for ReadOptions {
    fn default() -> Self {
        Self { source: SourceOptions::default(), max_line_bytes: 1 << 30, fields: Fields::All }
    }
}

/// What of each line a run reads; what it does not is left out of the
/// line's tree ([`Entry::raw`]). Either way a record's `params` equal to
/// an earlier record's of the file is that record's node, built once.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Fields {
    /// Every member.
    #[default]
    All,
    /// What building requests reads (`assemble`, `verify`): without an
    /// assistant line's `message.usage` (its [`AssistantEntry::usage`] is
    /// `None`), `message.type` and `message.stop_sequence`, and a user
    /// line's `permissionDecision`; the members of [`TYPED_MEMBERS`] are
    /// typed into the [`Entry`] and not in [`Entry::raw`].
    ///
    /// [`AssistantEntry::usage`]: crate::model::entry::AssistantEntry::usage
    Requests,
    /// [`Fields::Requests`] with an assistant line's `message.usage` (the
    /// modeled `cost`, which builds requests and reads their usage).
    RequestsAndUsage,
}

impl Fields {
    fn rules<'a>(self) -> TreeRules<'a> {
        const SHARE: &[&str] = &["params"];
        match self {
            Fields::All => TreeRules::new(&[], SHARE, &[]),
            Fields::Requests => TreeRules::new(
                &[&["message", "usage"], &["message", "type"], &["message", "stop_sequence"], &["permissionDecision"]],
                SHARE,
                TYPED_MEMBERS,
            ),
            Fields::RequestsAndUsage => TreeRules::new(
                &[&["message", "type"], &["message", "stop_sequence"], &["permissionDecision"]],
                SHARE,
                TYPED_MEMBERS,
            ),
        }
    }
}

/// The lines of one file, typed, with their problems.
#[derive(Debug, Default)]
pub struct ParsedLines<'a> {
    /// Entries in file order.
    pub entries: Vec<Entry<'a>>,
    /// Non-blank lines.
    pub lines: u32,
    /// Lines that gave no entry.
    pub bad_lines: u32,
    pub diagnostics: Vec<Diagnostic>,
    /// Bytes read.
    pub bytes: u64,
    /// Lines that gave no entry but begin as an `api-request` record does
    /// (`{"type":"api-request",`, the key order 2.1.3xx writes): record
    /// replay counts each as a lost request, so the later ones keep their
    /// index.
    pub unread_records: Vec<u32>,
}

/// How every `api-request` record line begins.
const RECORD_PREFIX: &[u8] = br#"{"type":"api-request","#;

thread_local! {
    static PARSER: RefCell<LineParser> = RefCell::new(LineParser::new());
}

impl<'a> ParsedLines<'a> {
    /// Count `line`; false when it is not to be parsed (too long: its
    /// diagnostic pushed). A line that begins as a record does is noted
    /// until it gives an entry.
    fn start_line(&mut self, line: &lines::Line<'_>, display: &str, opts: &ReadOptions) -> bool {
        self.lines += 1;
        if line.bytes.starts_with(RECORD_PREFIX) {
            self.unread_records.push(line.number);
        }
        if too_long(line, display, opts, &mut self.diagnostics) {
            self.bad_lines += 1;
            return false;
        }
        true
    }

    /// `line`'s entry, or what kept it from giving one.
    fn push(
        &mut self,
        bump: &'a Bump,
        line: &lines::Line<'_>,
        parsed: Result<(Json<'a>, Vec<OutOfRange>), ParseFailure>,
        envelope: &[(&[&str], Json<'a>)],
        display: &str,
    ) {
        let lines = (&mut self.diagnostics, &mut self.bad_lines);
        let prev = self.entries.last().map(|e| e.env.shared);
        if let Some(entry) = full_line(bump, line, parsed, (envelope, prev), display, lines) {
            if self.unread_records.last() == Some(&line.number) {
                self.unread_records.pop();
            }
            self.entries.push(entry);
        }
    }

    fn finish(mut self, display: &str) -> Self {
        if self.lines == 0 && self.diagnostics.is_empty() {
            self.diagnostics.push(Diagnostic::new(display, 0, DiagKind::EmptyFile, "file has no lines"));
        }
        self
    }
}

/// Files under this size are read whole into the arena and each line is
/// parsed where it lies there, its strings borrowed (no copy). Larger ones
/// are read [`CHUNK`] bytes at a time and only what their trees keep is
/// copied into the arena: a long session's arena does not hold its file.
pub const WHOLE_BELOW: u64 = source::READ_BELOW;

/// Parse `data` (the bytes of the file shown as `display`) into `bump`, as
/// [`read_file`] parses a file's.
pub fn parse_bytes<'a>(bump: &'a Bump, data: &[u8], display: &str, opts: &ReadOptions) -> ParsedLines<'a> {
    if (data.len() as u64) < WHOLE_BELOW {
        let buf = bump.alloc_slice_fill_copy(data.len() + PADDING, b' ');
        buf[..data.len()].copy_from_slice(data);
        return parse_whole(bump, buf, data.len(), display, opts);
    }
    parse_from(bump, data, data.len() as u64, display, opts)
}

/// Parse `data` as [`read_file`] parses a file of [`WHOLE_BELOW`] bytes or
/// more, a chunk at a time, whatever its size (the same entries and
/// diagnostics as [`parse_bytes`]).
pub fn parse_bytes_chunked<'a>(bump: &'a Bump, data: &[u8], display: &str, opts: &ReadOptions) -> ParsedLines<'a> {
    parse_from(bump, data, data.len() as u64, display, opts)
}

/// Parse the file bytes `buf[..n]`, followed in `buf` by at least
/// [`PADDING`] bytes, where they lie.
fn parse_whole<'a>(bump: &'a Bump, buf: &'a mut [u8], n: usize, display: &str, opts: &ReadOptions) -> ParsedLines<'a> {
    PARSER.with(|p| match p.try_borrow_mut() {
        Ok(mut parser) => parse_in_arena(&mut parser, bump, buf, n, display, opts),
        // Re-entrant use on one thread (not done by ctxasm): use a fresh parser.
        Err(_) => parse_in_arena(&mut LineParser::new(), bump, buf, n, display, opts),
    })
}

fn parse_in_arena<'a>(
    parser: &mut LineParser,
    bump: &'a Bump,
    buf: &'a mut [u8],
    n: usize,
    display: &str,
    opts: &ReadOptions,
) -> ParsedLines<'a> {
    let mut out = ParsedLines { bytes: n as u64, ..ParsedLines::default() };
    // One entry per ~600 bytes is typical of real transcripts.
    out.entries.reserve(n / 600 + 1);
    let mut rules = opts.fields.rules();
    let total = buf.len();
    let n = n.min(total.saturating_sub(PADDING));
    let base = buf.as_mut_ptr();
    // The line as it was before its parse unescaped strings in place.
    let mut original = Vec::new();
    let (mut pos, mut number) = (0usize, 0u32);
    loop {
        // SAFETY: `base..base + n` is inside `buf`, which this function holds
        // exclusively for `'a`. This shared view is taken afresh for each
        // line and is dead before the line's mutable view below is made; the
        // parses before it wrote only inside their own lines (the values
        // they returned borrow those bytes, never bytes at or after `pos`).
        let data: &[u8] = unsafe { std::slice::from_raw_parts(base, n) };
        let Some(line) = lines::next_line(data, &mut pos, &mut number) else { break };
        if !out.start_line(&line, display, opts) {
            continue;
        }
        let start = line.bytes.as_ptr() as usize - base as usize;
        let len = line.bytes.len();
        original.clear();
        original.extend_from_slice(line.bytes);
        let line = lines::Line { number: line.number, bytes: &original, unterminated: line.unterminated };
        // SAFETY: `start + len + PADDING <= total` (the line ends at or
        // before `n`), and no borrow of `buf` at or after `start` is alive:
        // `data` is dead, and the values of earlier lines borrow bytes
        // before `start`. The parse writes only inside `start..start + len`
        // (the padding after it is read, and left as it was).
        let here: &'a mut [u8] = unsafe { std::slice::from_raw_parts_mut(base.add(start), total - start) };
        let parsed = parser.parse_in_arena(bump, here, len, &original, Some(&mut rules));
        out.push(bump, &line, parsed, rules.taken(), display);
    }
    out.finish(display)
}

/// Parse what `reader` gives (about `len` bytes), [`CHUNK`] bytes at a time.
fn parse_from<'a>(bump: &'a Bump, reader: impl Read, len: u64, display: &str, opts: &ReadOptions) -> ParsedLines<'a> {
    PARSER.with(|p| match p.try_borrow_mut() {
        Ok(mut parser) => parse_with(&mut parser, bump, reader, len, display, opts),
        // Re-entrant use on one thread (not done by ctxasm): use a fresh parser.
        Err(_) => parse_with(&mut LineParser::new(), bump, reader, len, display, opts),
    })
}

/// Bytes of a file read at a time: the arena gets the trees of its lines,
/// never the file (a line longer than this is read whole).
pub const CHUNK: usize = 1 << 20;

fn parse_with<'a>(
    parser: &mut LineParser,
    bump: &'a Bump,
    reader: impl Read,
    len: u64,
    display: &str,
    opts: &ReadOptions,
) -> ParsedLines<'a> {
    let mut out = ParsedLines::default();
    let mut rules = opts.fields.rules();
    let mut keys = KeyCache::default();
    let read = for_each_line(reader, len, |line| {
        if out.entries.capacity() == out.entries.len() {
            // One entry per ~600 bytes is typical of real transcripts.
            out.entries.reserve(CHUNK / 600);
        }
        if !out.start_line(&line, display, opts) {
            return;
        }
        let parsed = parser.parse_line(bump, line.bytes, &mut keys, Some(&mut rules));
        out.push(bump, &line, parsed, rules.taken(), display);
    });
    match read {
        Ok(n) => out.bytes = n,
        Err((n, line, e)) => {
            out.bytes = n;
            let msg = format!("cannot read file after line {line}: {e}; the lines before it are read");
            out.diagnostics.push(Diagnostic::new(display, line, DiagKind::Io, msg));
        }
    }
    out.finish(display)
}

/// Call `f` with each non-blank line `reader` gives, numbered and cut as
/// [`lines::next_line`] does, reading [`CHUNK`] bytes at a time (more for
/// a longer line; less for a reader of `len` bytes, most files). The bytes
/// read, or with an error also the number of the last line seen.
fn for_each_line(
    mut reader: impl Read,
    len: u64,
    mut f: impl FnMut(lines::Line<'_>),
) -> Result<u64, (u64, u32, io::Error)> {
    // One byte more than the file: its end is seen in the first read.
    let mut buf = vec![0u8; usize::try_from(len.saturating_add(1)).unwrap_or(CHUNK).clamp(1, CHUNK)];
    let (mut filled, mut number, mut total, mut eof) = (0usize, 0u32, 0u64, false);
    let mut failed = None;
    loop {
        while !eof && failed.is_none() && filled < buf.len() {
            match reader.read(&mut buf[filled..]) {
                Ok(0) => eof = true,
                Ok(k) => {
                    filled += k;
                    total += k as u64;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => failed = Some(e),
            }
        }
        // Whole lines only, until the end: the last piece is then the
        // file's last line, terminated or not (a read that failed leaves
        // its piece out).
        let end = match (eof, memchr::memrchr(b'\n', &buf[..filled])) {
            (true, _) => filled,
            (false, Some(i)) => i + 1,
            (false, None) if failed.is_some() => 0,
            (false, None) => {
                // A line longer than the buffer.
                buf.resize(buf.len() * 2, 0);
                continue;
            }
        };
        let mut pos = 0;
        while let Some(line) = lines::next_line(&buf[..end], &mut pos, &mut number) {
            f(line);
        }
        if let Some(e) = failed {
            return Err((total, number, e));
        }
        if eof {
            return Ok(total);
        }
        buf.copy_within(end..filled, 0);
        filled -= end;
        if buf.len() > 2 * CHUNK && filled < CHUNK {
            // After a long line: back to the usual size.
            buf.truncate(CHUNK);
            buf.shrink_to_fit();
        }
    }
}

/// A line over `opts.max_line_bytes`: its `line_too_long` diagnostic
/// pushed (the caller counts it as a bad line and skips it).
fn too_long(line: &lines::Line<'_>, display: &str, opts: &ReadOptions, diags: &mut Vec<Diagnostic>) -> bool {
    if line.bytes.len() <= opts.max_line_bytes {
        return false;
    }
    diags.push(Diagnostic::new(
        display,
        line.number,
        DiagKind::LineTooLong,
        format!("line of {} bytes is over the limit of {} bytes; skipped", line.bytes.len(), opts.max_line_bytes),
    ));
    true
}

/// One line read in full (`parsed`: its tree, or why not; `envelope`: the
/// members [`TreeRules`] took out of it) and typed.
/// `None` when it gives no entry, with the diagnostic that says why (and
/// the bad line counted); numbers read out of range and an unknown type are
/// reported either way.
fn full_line<'a>(
    bump: &'a Bump,
    line: &lines::Line<'_>,
    parsed: Result<(Json<'a>, Vec<OutOfRange>), ParseFailure>,
    (envelope, prev): (&[(&[&str], Json<'a>)], Option<&'a EnvShared<'a>>),
    display: &str,
    (diags, bad_lines): (&mut Vec<Diagnostic>, &mut u32),
) -> Option<Entry<'a>> {
    let bad = |kind: DiagKind, msg: String| Diagnostic::new(display, line.number, kind, msg);
    let value = match parsed {
        Ok((v, out_of_range)) => {
            for n in out_of_range {
                diags.push(bad(DiagKind::NumberOutOfRange, out_of_range_message(&n)));
            }
            v
        }
        Err(failure) => {
            *bad_lines += 1;
            diags.push(match failure {
                ParseFailure::InvalidUtf8 => bad(DiagKind::InvalidUtf8, "line is not valid UTF-8".into()),
                ParseFailure::Syntax(m) if line.unterminated => bad(
                    DiagKind::TruncatedLine,
                    format!("last line has no newline and does not parse (being written?): {}", clip(&m, 120)),
                ),
                ParseFailure::Syntax(m) => bad(DiagKind::InvalidJson, format!("invalid JSON: {}", clip(&m, 120))),
            });
            return None;
        }
    };
    let value: &'a Json<'a> = bump.alloc(value);
    if value.as_object().is_none() {
        *bad_lines += 1;
        diags.push(not_an_object(display, line.number, value));
        return None;
    }
    match type_entry_with(bump, line.number, value, line.bytes, envelope, prev) {
        Some(entry) => {
            if matches!(entry.kind, EntryKind::Unknown { .. }) {
                diags.push(unknown_type(display, line.number, entry.type_name));
            }
            Some(entry)
        }
        None => {
            *bad_lines += 1;
            diags.push(missing_type(display, line.number));
            None
        }
    }
}

fn not_an_object(display: &str, line: u32, value: &Json<'_>) -> Diagnostic {
    Diagnostic::new(display, line, DiagKind::NotAnObject, format!("a JSON {} is not an entry", kind_name(value)))
}

fn missing_type(display: &str, line: u32) -> Diagnostic {
    Diagnostic::new(display, line, DiagKind::MissingType, "object has no string \"type\"")
}

fn unknown_type(display: &str, line: u32, type_name: &str) -> Diagnostic {
    Diagnostic::new(
        display,
        line,
        DiagKind::UnknownType,
        format!("unknown entry type {:?}; kept as raw", clip(type_name, 80)),
    )
}

/// What an out-of-range number was read as, for its diagnostic.
fn out_of_range_message(n: &OutOfRange) -> String {
    match n.read_as {
        Some(f) => {
            let mut text = Vec::new();
            crate::json::writer::write_f64(&mut text, f);
            let text = String::from_utf8_lossy(&text);
            let exact = if text == n.literal { "exactly" } else { "rounded" };
            format!(
                "field {}: integer {} does not fit in 64 bits; read as the double {text} ({exact}, as JavaScript reads it); \
                 a field that needs an integer treats it as absent",
                n.path, n.literal
            )
        }
        None => format!(
            "field {}: number {} is beyond the range of a double; read as null (absent), as JavaScript writes it back",
            n.path, n.literal
        ),
    }
}

fn kind_name(v: &Json<'_>) -> &'static str {
    match v {
        Json::Null => "null",
        Json::Bool(_) => "boolean",
        Json::I64(_) | Json::U64(_) | Json::F64(_) => "number",
        Json::Str(_) => "string",
        Json::Arr(_) => "array",
        Json::Obj(_) => "object",
    }
}

/// Load and parse one file (at most the size it had when opened:
/// [`source::open_snapshot`]): read whole into `bump` when under
/// [`WHOLE_BELOW`], else a [`CHUNK`] at a time, each line into `bump`. A
/// file that cannot be read whole, or opened, gives an `io_error`
/// diagnostic and no entries; one read a chunk at a time that fails later
/// keeps the lines read before.
pub fn read_file<'a>(bump: &'a Bump, path: &Path, display: &str, opts: &ReadOptions) -> ParsedLines<'a> {
    let whole = |reader: io::Take<std::fs::File>| -> io::Result<ParsedLines<'a>> {
        let (buf, n) = source::read_padded(reader, bump, PADDING)?;
        Ok(parse_whole(bump, buf, n, display, opts))
    };
    let parsed = source::open_snapshot(path, &opts.source).and_then(|reader| match reader.limit() {
        len if len < WHOLE_BELOW => whole(reader),
        len => Ok(parse_from(bump, reader, len, display, opts)),
    });
    match parsed {
        Ok(parsed) => parsed,
        Err(e) => ParsedLines {
            diagnostics: vec![Diagnostic::new(display, 0, DiagKind::Io, format!("cannot read file: {e}"))],
            ..ParsedLines::default()
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(p: &ParsedLines<'_>) -> Vec<(u32, DiagKind)> {
        p.diagnostics.iter().map(|d| (d.line, d.kind)).collect()
    }

    #[test]
    fn every_bad_line_is_a_diagnostic_and_the_rest_is_read() {
        let bump = Bump::new();
        let data = b"{\"type\":\"user\",\"uuid\":\"a\"}\n{\"type\":\n\xff\xfe\n[1]\n{\"no\":1}\n{\"type\":\"x-new\"}\n\n{\"type\":\"summary\",\"summary\":\"t\"}\n{\"type\":\"us";
        let p = parse_bytes(&bump, data, "f.jsonl", &ReadOptions::default());
        assert_eq!(p.lines, 8);
        assert_eq!(p.bad_lines, 5);
        assert_eq!(p.entries.len(), 3);
        assert_eq!(
            kinds(&p),
            vec![
                (2, DiagKind::InvalidJson),
                (3, DiagKind::InvalidUtf8),
                (4, DiagKind::NotAnObject),
                (5, DiagKind::MissingType),
                (6, DiagKind::UnknownType),
                (9, DiagKind::TruncatedLine),
            ]
        );
        assert_eq!(p.entries[2].type_name, "summary");
        assert_eq!(p.entries[2].line, 8);
        assert!(p.diagnostics.iter().all(|d| d.file == "f.jsonl"));
    }

    #[test]
    fn out_of_range_numbers_keep_their_line_and_name_their_field() {
        let bump = Bump::new();
        let data = b"{\"type\":\"assistant\",\"uuid\":\"a\",\"message\":{\"id\":\"m\",\"usage\":{\"input_tokens\":123456789012345678901234567890,\"output_tokens\":7}}}\n{\"type\":\"cost-state\",\"totalCostUSD\":1e400}\n";
        let p = parse_bytes(&bump, data, "f.jsonl", &ReadOptions::default());
        assert_eq!((p.lines, p.bad_lines, p.entries.len()), (2, 0, 2));
        let got: Vec<String> = p.diagnostics.iter().map(ToString::to_string).collect();
        assert_eq!(
            got,
            [
                "f.jsonl:1: number_out_of_range: field message.usage.input_tokens: integer 123456789012345678901234567890 \
                 does not fit in 64 bits; read as the double 1.2345678901234568e+29 (rounded, as JavaScript reads it); \
                 a field that needs an integer treats it as absent",
                "f.jsonl:2: number_out_of_range: field totalCostUSD: number 1e400 is beyond the range of a double; \
                 read as null (absent), as JavaScript writes it back",
            ]
        );
        let usage = p.entries[0].as_assistant().unwrap().usage.unwrap();
        assert_eq!((usage.input_tokens, usage.output_tokens), (0, 7));
        assert_eq!(p.entries[1].kind, EntryKind::CostState { total_cost_usd: None, model_usage: None });
    }

    /// A line is parsed in the parser's scratch buffer, strings unescaped
    /// there: a line that fails after unescaping some strings, an unknown
    /// type and a number out of range after an escape are still reported
    /// from the line as written, and the lines after them read.
    #[test]
    fn in_place_parse_reports_lines_as_written() {
        let bump = Bump::new();
        let data = concat!(
            "{\"type\":\"user\",\"uuid\":\"a\\nb\",\"x\":\"c\\td\",\"y\":tru}\n",
            "{\"type\":\"x-new\",\"note\":\"q\\\"uote\\u00e9\"}\n",
            "{\"type\":\"assistant\",\"uuid\":\"\\u0062\",\"message\":{\"id\":\"m\\n\",",
            "\"usage\":{\"input_tokens\":123456789012345678901234567890,\"output_tokens\":7}}}\n",
            "{\"type\":\"summary\",\"summary\":\"t\\\\u\"}"
        );
        let p = parse_bytes(&bump, data.as_bytes(), "f.jsonl", &ReadOptions::default());
        assert_eq!((p.lines, p.bad_lines, p.entries.len()), (4, 1, 3));
        assert_eq!(
            kinds(&p),
            vec![(1, DiagKind::InvalidJson), (2, DiagKind::UnknownType), (3, DiagKind::NumberOutOfRange)]
        );
        let raw = br#"{"type":"x-new","note":"q\"uote\u00e9"}"#;
        assert_eq!(p.entries[0].kind, EntryKind::Unknown { raw_line: &raw[..] });
        assert_eq!(p.entries[1].env.uuid, Some("b"));
        let msg = p.entries[1].as_assistant().unwrap();
        assert_eq!(msg.usage.unwrap().output_tokens, 7);
        assert_eq!(p.entries[2].type_name, "summary");
        assert_eq!(p.entries[2].raw.get_str("summary"), Some("t\\u"));
        // The same bytes read from a file give the same entries.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.jsonl");
        std::fs::write(&path, data).unwrap();
        let bump2 = Bump::new();
        let q = read_file(&bump2, &path, "f.jsonl", &ReadOptions::default());
        assert_eq!((q.entries, q.diagnostics), (p.entries, p.diagnostics));
    }

    #[test]
    fn empty_file_and_line_limit() {
        let bump = Bump::new();
        let p = parse_bytes(&bump, b"\n \n", "e.jsonl", &ReadOptions::default());
        assert_eq!(kinds(&p), vec![(0, DiagKind::EmptyFile)]);
        let opts = ReadOptions { max_line_bytes: 10, ..ReadOptions::default() };
        let p = parse_bytes(&bump, b"{\"type\":\"summary\"}\n{}\n", "l.jsonl", &opts);
        assert_eq!(kinds(&p), vec![(1, DiagKind::LineTooLong), (2, DiagKind::MissingType)]);
    }

    #[test]
    fn complete_last_line_without_newline_is_fine() {
        let bump = Bump::new();
        let p = parse_bytes(&bump, b"{\"type\":\"summary\"}", "n.jsonl", &ReadOptions::default());
        assert!(p.diagnostics.is_empty());
        assert_eq!(p.entries.len(), 1);
    }

    /// A reader that gives at most `step` bytes a call, then fails with
    /// `fail` once its bytes are given (or ends).
    struct Trickle<'d> {
        data: &'d [u8],
        step: usize,
        fail: bool,
    }

    impl io::Read for Trickle<'_> {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            if self.data.is_empty() && self.fail {
                return Err(io::Error::other("disk gone"));
            }
            let n = self.step.min(buf.len()).min(self.data.len());
            buf[..n].copy_from_slice(&self.data[..n]);
            self.data = &self.data[n..];
            Ok(n)
        }
    }

    /// Reading a chunk at a time cuts and numbers lines as splitting the
    /// whole file does: lines across chunk ends, a line longer than two
    /// chunks, blank and `\r\n` lines, a last line without `\n`.
    #[test]
    fn chunked_reading_cuts_lines_as_one_read_does() {
        let mut data = Vec::new();
        let mut i = 0usize;
        while data.len() < 3 * CHUNK {
            data.extend_from_slice(format!("{{\"n\":{i},\"pad\":\"{}\"}}", "x".repeat(i % 997)).as_bytes());
            data.extend_from_slice(if i.is_multiple_of(5) { b"\r\n" } else { b"\n" });
            if i.is_multiple_of(7) {
                data.extend_from_slice(b"  \n\n");
            }
            if i == 40 {
                data.extend_from_slice(format!("{{\"long\":\"{}\"}}\n", "y".repeat(2 * CHUNK + 3)).as_bytes());
            }
            i += 1;
        }
        data.extend_from_slice(b"{\"last\":true}");
        let want: Vec<(u32, Vec<u8>, bool)> =
            lines::lines(&data).map(|l| (l.number, l.bytes.to_vec(), l.unterminated)).collect();
        // Reads of a chunk or less; a size hint of the whole, a part, none.
        for (step, len) in [(CHUNK, data.len()), (7777, data.len() / 3), (100_003, 10), (CHUNK, 0)] {
            let mut got = Vec::new();
            let reader = Trickle { data: &data, step, fail: false };
            let n =
                for_each_line(reader, len as u64, |l| got.push((l.number, l.bytes.to_vec(), l.unterminated))).unwrap();
            assert_eq!(n, data.len() as u64);
            assert_eq!(got.len(), want.len(), "step {step}");
            assert!(got == want, "step {step}");
        }
    }

    /// A file read a chunk at a time gives the entries one read whole
    /// gives, and holds each short string value once while it repeats: the
    /// session id on every line, each `parentUuid` the line before's
    /// `uuid` (a real 2.0.5 transcript).
    #[test]
    fn a_chunked_read_holds_repeated_short_values_once() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(
            "tests/fixtures/cc-2.0.5/ide-extension/transcripts/-tmp-ctxasm-ide-extension-proj/\
             751a218f-5179-407a-b84b-973221037898.jsonl",
        );
        let data = std::fs::read(&path).unwrap();
        let (whole_bump, chunk_bump) = (Bump::new(), Bump::new());
        let opts = ReadOptions { fields: Fields::Requests, ..ReadOptions::default() };
        let whole = parse_bytes(&whole_bump, &data, "f", &opts);
        let chunked = parse_bytes_chunked(&chunk_bump, &data, "f", &opts);
        assert_eq!((whole.entries.len(), whole.diagnostics.len()), (37, 0));
        assert!(whole.entries == chunked.entries);
        let sid = |e: &Entry<'_>| e.env.shared.session_id.map(str::as_ptr);
        let ids: std::collections::HashSet<_> = chunked.entries.iter().filter_map(sid).collect();
        assert_eq!(ids.len(), 1, "one copy of the session id");
        let mut linked = 0;
        for pair in chunked.entries.windows(2) {
            if let (Some(u), Some(p)) = (pair[0].env.uuid, pair[1].env.parent_uuid)
                && u == p
            {
                assert!(std::ptr::eq(u, p), "line {}: parentUuid copied again", pair[1].line);
                linked += 1;
            }
        }
        assert_eq!(linked, 25);
        // Either way, the envelope members lines repeat are one node while
        // they stay the same: a node per run of equal ones, and the shared
        // empty one for the lines without any.
        let empty = crate::model::entry::EnvShared::default();
        for p in [&whole, &chunked] {
            let e = &p.entries;
            let runs = (0..e.len())
                .filter(|&i| *e[i].env.shared != empty && (i == 0 || e[i - 1].env.shared != e[i].env.shared));
            let runs = runs.count() + usize::from(e.iter().any(|x| *x.env.shared == empty));
            let nodes: std::collections::HashSet<_> =
                e.iter().map(|x| x.env.shared as *const crate::model::entry::EnvShared<'_>).collect();
            assert_eq!((runs, nodes.len()), (6, 6));
        }
    }

    /// A read that fails mid-file keeps the lines before it and names the
    /// last one.
    #[test]
    fn a_failed_read_keeps_the_lines_before_it() {
        let bump = Bump::new();
        let data =
            b"{\"type\":\"summary\",\"summary\":\"a\"}\n\n{\"type\":\"summary\",\"summary\":\"b\"}\n{\"type\":\"sum";
        let reader = Trickle { data, step: 5, fail: true };
        let p = parse_from(&bump, reader, data.len() as u64, "f.jsonl", &ReadOptions::default());
        let got: Vec<_> = p.entries.iter().map(|e| e.raw.get_str("summary")).collect();
        assert_eq!(got, [Some("a"), Some("b")]);
        assert_eq!(
            p.diagnostics.iter().map(ToString::to_string).collect::<Vec<_>>(),
            ["f.jsonl:3: io_error: cannot read file after line 3: disk gone; the lines before it are read"]
        );
        assert_eq!(p.bytes, data.len() as u64);
    }

    /// `Fields::Requests` leaves an assistant line's usage, `message.type`
    /// and `message.stop_sequence`, a user line's permission decision and
    /// the members an entry types as they are (the envelope, `type`,
    /// `requestId`, the message's `id`, `model`, `stop_reason`) out of
    /// their trees, and nothing else; a
    /// record's `params` equal to an earlier record's is that record's node
    /// under either; a line read leniently is read whole.
    #[test]
    fn requests_fields_leave_out_what_requests_never_read() {
        let data = concat!(
            r#"{"type":"assistant","uuid":"a","isSidechain":true,"requestId":"req_1","message":{"id":"m","type":"message","model":"claude-x","usage":{"input_tokens":3},"content":[{"type":"text","text":"hi","usage":1}],"stop_reason":"end_turn","stop_sequence":null},"usage":2,"uuid":"second"}"#,
            "\n",
            r#"{"type":"user","uuid":"u","sessionId":"s","cwd":"/p","permissionDecision":{"allow":true},"message":{"role":"user","content":"q","permissionDecision":1}}"#,
            "\n",
            r#"{"type":"api-request","id":"r1","params":{"max_tokens":32000,"thinking":{"type":"adaptive"}}}"#,
            "\n",
            r#"{"type":"api-request","id":"r2","params":{"max_tokens":32000,"thinking":{"type":"adaptive"}}}"#,
            "\n",
            r#"{"type":"api-request","id":"r3","params":{"max_tokens":64000,"thinking":{"type":"adaptive"}}}"#,
            "\n",
            r#"{"type":"assistant","uuid":"b","message":{"id":"n","usage":{"input_tokens":1e400},"content":[]}}"#,
            "\n",
        );
        let bump = Bump::new();
        let opts = ReadOptions { fields: Fields::Requests, ..ReadOptions::default() };
        for streamed in [false, true] {
            let read = |opts: &ReadOptions| both_ways(&bump, data.as_bytes(), opts)[usize::from(streamed)].take();
            let (all, req) = (read(&ReadOptions::default()), read(&opts));
            requests_fields_case(&all, &req);
        }
    }

    /// `data` parsed both ways: whole in the arena, and a chunk at a time
    /// (after asserting they give the same entries and diagnostics).
    fn both_ways<'a>(bump: &'a Bump, data: &[u8], opts: &ReadOptions) -> [std::cell::Cell<ParsedLines<'a>>; 2] {
        let buf = bump.alloc_slice_fill_copy(data.len() + PADDING, b' ');
        buf[..data.len()].copy_from_slice(data);
        let whole = parse_whole(bump, buf, data.len(), "f.jsonl", opts);
        let streamed = parse_from(bump, data, data.len() as u64, "f.jsonl", opts);
        assert_eq!((&whole.entries, &whole.diagnostics), (&streamed.entries, &streamed.diagnostics));
        assert_eq!(
            (whole.lines, whole.bad_lines, whole.bytes, &whole.unread_records),
            (streamed.lines, streamed.bad_lines, streamed.bytes, &streamed.unread_records)
        );
        [std::cell::Cell::new(whole), std::cell::Cell::new(streamed)]
    }

    fn requests_fields_case(all: &ParsedLines<'_>, req: &ParsedLines<'_>) {
        let compact: Vec<String> = req.entries.iter().map(|e| e.raw.to_compact_string()).collect();
        assert_eq!(
            compact[..2],
            [
                r#"{"message":{"content":[{"type":"text","text":"hi","usage":1}]},"usage":2}"#,
                r#"{"message":{"role":"user","content":"q","permissionDecision":1}}"#,
            ]
        );
        // The envelope is typed from the members taken out of the tree,
        // the first of a key as before.
        for (e, f) in all.entries.iter().zip(&req.entries) {
            assert_eq!((e.env, e.type_name), (f.env, f.type_name));
        }
        let typed = req.entries[0].as_assistant().unwrap();
        assert_eq!(
            (typed.request_id, typed.message_id, typed.model, typed.stop_reason),
            (Some("req_1"), Some("m"), Some("claude-x"), Some("end_turn"))
        );
        let (a, b) = (req.entries[0].as_assistant().unwrap(), all.entries[0].as_assistant().unwrap());
        assert_eq!(*a, crate::model::entry::AssistantEntry { usage: None, ..*b });
        assert_eq!((req.entries[0].env.uuid, req.entries[0].env.is_sidechain), (Some("a"), true));
        assert_eq!((req.entries[1].env.shared.session_id, req.entries[1].env.shared.cwd), (Some("s"), Some("/p")));
        assert_eq!(req.entries[0].as_assistant().unwrap().usage, None);
        assert_eq!(all.entries[0].as_assistant().unwrap().usage.unwrap().input_tokens, 3);
        // The records are whole but for their type.
        for (e, f) in all.entries.iter().zip(&req.entries).skip(2).take(3) {
            let rest: Vec<_> = e.raw.as_object().unwrap().iter().filter(|(k, _)| *k != "type").copied().collect();
            assert_eq!(Json::Obj(&rest), *f.raw);
        }
        // A line read leniently is whole.
        assert_eq!(all.entries[5].raw, req.entries[5].raw);
        for p in [&all, &req] {
            let params: Vec<&Json<'_>> = p.entries[2..5].iter().map(|e| e.raw.get("params").unwrap()).collect();
            // One node: the members of the first record's params.
            let members = |i: usize| params[i].as_object().unwrap().as_ptr();
            assert_eq!(members(0), members(1));
            assert_ne!(members(1), members(2));
            assert_eq!(params[2].get_u64("max_tokens"), Some(64000));
        }
        // Read leniently (a number out of range): whole, usage included.
        assert_eq!(kinds(req), vec![(6, DiagKind::NumberOutOfRange)]);
        assert!(req.entries[5].as_assistant().unwrap().usage.is_some());
    }

    /// Reading a file whole and a chunk at a time give the same entries
    /// and diagnostics, bad lines and escapes included.
    #[test]
    fn both_ways_of_reading_agree() {
        let bump = Bump::new();
        let data: &[u8] = concat!(
            "{\"type\":\"user\",\"uuid\":\"a\\nb\",\"x\":\"c\\td\",\"y\":tru}\n",
            "{\"type\":\"x-new\",\"note\":\"q\\\"uote\\u00e9\"}\n\n  \r\n",
            "{\"type\":\"api-request\",\"id\":",
            "\n[1]\n\"s\"\n{\"no\":\"type\"}\n{\"type\":\"\u{e9}\"}\n",
            "{\"type\":\"assistant\",\"uuid\":\"\\u0062\",\"message\":{\"id\":\"m\\n\",",
            "\"usage\":{\"input_tokens\":123456789012345678901234567890,\"output_tokens\":7}}}\n",
            "{\"type\":\"summary\",\"summary\":\"t\\\\u\"}\n{\"type\":\"summary\",\"summ"
        )
        .as_bytes();
        let mut bad = data.to_vec();
        bad.extend_from_slice(b"\n{\"type\":\"\xff\"}\n");
        let lines_over_60 = ReadOptions { fields: Fields::Requests, max_line_bytes: 60, ..ReadOptions::default() };
        use DiagKind::*;
        let first = [(1, InvalidJson), (2, UnknownType), (5, InvalidJson), (6, NotAnObject), (7, NotAnObject)];
        let last = [(12, InvalidJson), (13, InvalidUtf8)];
        for (opts, line_10) in [(ReadOptions::default(), NumberOutOfRange), (lines_over_60, LineTooLong)] {
            let [whole, _] = both_ways(&bump, &bad, &opts);
            let want: Vec<(u32, DiagKind)> =
                first.into_iter().chain([(8, MissingType), (9, UnknownType), (10, line_10)]).chain(last).collect();
            assert_eq!(kinds(&whole.take()), want);
        }
    }

    /// Read a chunk at a time, object keys and short string values are
    /// copied into the arena once each; a longer value each time.
    #[test]
    fn keys_and_short_values_are_copied_once() {
        let bump = Bump::new();
        let long = "x".repeat(65);
        let line = format!("{{\"type\":\"summary\",\"summary\":\"{long}\"}}\n");
        let data = line.repeat(2);
        let p = parse_from(&bump, data.as_bytes(), data.len() as u64, "k.jsonl", &ReadOptions::default());
        let key = |i: usize| p.entries[i].raw.as_object().unwrap()[0].0.as_ptr();
        assert_eq!(key(0), key(1));
        let value = |i: usize, k: &str| p.entries[i].raw.get_str(k).unwrap().as_ptr();
        assert_eq!(value(0, "type"), value(1, "type"));
        assert_ne!(value(0, "summary"), value(1, "summary"));
        assert_eq!(p.entries[1].raw.get_str("summary"), Some(long.as_str()));
    }

    /// Pieces of lines for `any_lines_read_the_same_both_ways`.
    const PIECES: &[&[u8]] = &[
                br#"{"type":"assistant","message":{"id":"m","usage":{"input_tokens":1},"content":[{"type":"text","text":"a\nb"}]}}"#,
                br#"{"type":"user","uuid":"\u0075","permissionDecision":{"x":1},"message":{"content":"q\"t"}}"#,
                br#"{"type":"api-request","id":"r","params":{"max_tokens":1}}"#,
                br#"{"type":"api-request","#,
                br#"{"type":"summary","n":1e400,"m":123456789012345678901234567890}"#,
                b"\xff\xfe", b"[1]", b"", b"  ", b"\r", b"{}", b"{\"type\":\"x\"}",
            ];

    proptest::proptest! {
        /// Lines made of transcript pieces (escapes, numbers out of range,
        /// bad bytes, blank and cut lines) read the same both ways.
        #[test]
        fn any_lines_read_the_same_both_ways(
            pieces in proptest::collection::vec(proptest::sample::select(PIECES), 0..40),
            ends in proptest::collection::vec(proptest::bool::ANY, 40),
            max_line_bytes in proptest::sample::select(&[1usize << 30, 70][..]),
        ) {
            let mut data = Vec::new();
            for (i, p) in pieces.iter().enumerate() {
                data.extend_from_slice(p);
                if ends[i] || i + 1 < pieces.len() {
                    data.push(b'\n');
                }
            }
            let bump = Bump::new();
            for fields in [Fields::All, Fields::Requests] {
                let opts = ReadOptions { fields, max_line_bytes, ..ReadOptions::default() };
                both_ways(&bump, &data, &opts);
            }
        }
    }
}
