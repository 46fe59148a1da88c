//! Input: discover files, get their bytes, split lines, parse each line
//! zero-copy into a per-file arena, and type it.

pub mod discover;
pub mod lines;
pub mod scan;
pub mod shard;
pub mod source;

use crate::diag::{DiagKind, Diagnostic, clip};
use crate::json::{Json, LineParser, OutOfRange, PADDING, ParseFailure};
use crate::model::entry::{Entry, EntryKind, type_entry};
use bumpalo::Bump;
use source::SourceOptions;
use std::cell::RefCell;
use std::path::Path;

/// How files are read.
#[derive(Debug, Clone, Copy)]
pub struct ReadOptions {
    pub source: SourceOptions,
    /// Lines longer than this are skipped with a `line_too_long` diagnostic.
    pub max_line_bytes: usize,
}

impl Default for ReadOptions {
    fn default() -> Self {
        Self { source: SourceOptions::default(), max_line_bytes: 1 << 30 }
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

/// Parse `data` (the bytes of the file shown as `display`) into `bump`:
/// one copy of `data` in the arena, each line parsed where it lies there.
pub fn parse_bytes<'a>(bump: &'a Bump, data: &[u8], display: &str, opts: &ReadOptions) -> ParsedLines<'a> {
    let buf = bump.alloc_slice_fill_copy(data.len() + PADDING, b' ');
    buf[..data.len()].copy_from_slice(data);
    parse_buffer(bump, buf, data.len(), display, opts)
}

/// Parse the file bytes `buf[..n]`, followed in `buf` by at least
/// [`PADDING`] bytes, where they lie.
fn parse_buffer<'a>(bump: &'a Bump, buf: &'a mut [u8], n: usize, display: &str, opts: &ReadOptions) -> ParsedLines<'a> {
    PARSER.with(|p| match p.try_borrow_mut() {
        Ok(mut parser) => parse_with(&mut parser, bump, buf, n, display, opts),
        // Re-entrant use on one thread (not done by ctxasm): use a fresh parser.
        Err(_) => parse_with(&mut LineParser::new(), bump, buf, n, display, opts),
    })
}

fn parse_with<'a>(
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
        out.lines += 1;
        if line.bytes.starts_with(RECORD_PREFIX) {
            // Taken back below once the line gives an entry.
            out.unread_records.push(line.number);
        }
        if too_long(&line, display, opts, &mut out.diagnostics) {
            out.bad_lines += 1;
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
        let at = InPlace { buf: here, len };
        if let Some(entry) = full_line(parser, bump, at, &line, display, &mut out.diagnostics, &mut out.bad_lines) {
            if out.unread_records.last() == Some(&line.number) {
                out.unread_records.pop();
            }
            out.entries.push(entry);
        }
    }
    if out.lines == 0 {
        out.diagnostics.push(Diagnostic::new(display, 0, DiagKind::EmptyFile, "file has no lines"));
    }
    out
}

/// A line where it lies in the arena: `buf[..len]`, padding after it.
struct InPlace<'a> {
    buf: &'a mut [u8],
    len: usize,
}

impl<'a> InPlace<'a> {
    /// `line` copied into `bump`, with the padding.
    fn copied(bump: &'a Bump, line: &[u8]) -> Self {
        let buf = bump.alloc_slice_fill_copy(line.len() + PADDING, b' ');
        buf[..line.len()].copy_from_slice(line);
        InPlace { buf, len: line.len() }
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

/// One line (`line.bytes`, as written; parsed at `at`) read in full and typed. `None` when it gives no
/// entry, with the diagnostic that says why (and `bad_lines` counted);
/// numbers read out of range and an unknown type are reported either way.
fn full_line<'a>(
    parser: &mut LineParser,
    bump: &'a Bump,
    at: InPlace<'a>,
    line: &lines::Line<'_>,
    display: &str,
    diags: &mut Vec<Diagnostic>,
    bad_lines: &mut u32,
) -> Option<Entry<'a>> {
    let bad = |kind: DiagKind, msg: String| Diagnostic::new(display, line.number, kind, msg);
    let value = match parser.parse_lenient_at(bump, at.buf, at.len, line.bytes) {
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
    match type_entry(bump, line.number, value, line.bytes) {
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

/// Load and parse one file: its bytes read once into `bump`
/// ([`source::read_padded`]) and each line parsed where it lies, so the
/// arena holds the file once and the values' strings borrow it. An
/// unreadable file gives an `io_error` diagnostic and no entries.
pub fn read_file<'a>(bump: &'a Bump, path: &Path, display: &str, opts: &ReadOptions) -> ParsedLines<'a> {
    match source::read_padded(path, &opts.source, bump, PADDING) {
        Ok((buf, n)) => parse_buffer(bump, buf, n, display, opts),
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

    /// Lines are parsed where they lie in the file's one copy, strings
    /// unescaped in place: a line that fails after unescaping some strings,
    /// an unknown type and a number out of range after an escape are still
    /// reported from the line as written, and the lines after them read.
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
}
