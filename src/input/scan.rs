//! The lean read: what recorded usage needs of a file, without the typed
//! entries.
//!
//! A full read ([`read_file`](super::read_file)) builds every line's
//! [`Json`] tree in the arena and types it; `cost --recorded-only` needs
//! only the assistant lines' usage, the links of the conversation tree and
//! the read's problems. [`scan_file`] reads each line where it lies with
//! the skim ([`skim::root_members_nested`]: the root's members, and
//! `message`'s in the same pass, with no tape and no string unescaped)
//! and takes those fields from it: the arena holds the few strings kept,
//! nothing else. A line the skim is not sure of (it refuses every line
//! simd-json refuses, and a few more) is parsed into simd-json's tape in a
//! reused buffer and read from there.
//!
//! It reports what a full read reports, diagnostic for diagnostic: the
//! skim is sure only of lines simd-json accepts, and the tape parse is the
//! full read's first attempt (a line is accepted exactly when the full
//! read accepts it); fields are looked up as [`Json::get`] looks them up
//! (first member of a key), numbers read as [`Json::as_u64`] reads them, a
//! type is unknown exactly when [`type_entry`] makes it
//! [`EntryKind::Unknown`], and a line the tape parse refuses (invalid JSON
//! or UTF-8, a number out of range) is read by the full read's own code.
//! The tests of `tests/it/cost_usage.rs` compare both reads on the
//! fixtures and the corpora; `tests/it/skim.rs` compares the skim with
//! simd-json.

use super::lines;
use super::{ReadOptions, full_line, missing_type, not_an_object, source, too_long, unknown_type};
use crate::diag::{DiagKind, Diagnostic};
use crate::json::skim::{self, Member};
use crate::json::tape::TapeValue;
use crate::json::{Json, KeyCache, LineParser};
use crate::model::entry::{Entry, EntryKind, Usage, type_entry};
use crate::model::tree::Link;
use bumpalo::Bump;
use std::cell::RefCell;
use std::path::Path;

/// An `assistant` line whose `message.usage` is an object: the fields
/// recorded usage reads.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct UsageLine<'a> {
    /// 1-based line number.
    pub line: u32,
    pub session_id: Option<&'a str>,
    pub timestamp: Option<&'a str>,
    pub agent_id: Option<&'a str>,
    pub is_sidechain: bool,
    /// `message.id`.
    pub message_id: Option<&'a str>,
    pub request_id: Option<&'a str>,
    /// `message.model`.
    pub model: Option<&'a str>,
    pub usage: Usage<'a>,
    /// `message.usage.cache_creation` is an object.
    pub cache_creation_object: bool,
}

impl<'a> UsageLine<'a> {
    /// The usage line of a fully read entry (`None` when it is not one).
    pub fn of_entry(e: &Entry<'a>) -> Option<Self> {
        let a = e.as_assistant()?;
        let usage = *a.usage?;
        let cc = e.raw.get("message").and_then(|m| m.get("usage")).and_then(|u| u.get("cache_creation"));
        Some(UsageLine {
            line: e.line,
            session_id: e.env.shared.session_id,
            timestamp: e.env.timestamp,
            agent_id: e.env.shared.agent_id,
            is_sidechain: e.env.is_sidechain,
            message_id: a.message_id,
            request_id: a.request_id,
            model: a.model,
            usage,
            cache_creation_object: cc.is_some_and(|c| c.as_object().is_some()),
        })
    }
}

/// What the lean read keeps of a file.
#[derive(Debug, Default)]
pub struct ScannedLines<'a> {
    /// Non-blank lines.
    pub lines: u32,
    /// Lines that gave no entry.
    pub bad_lines: u32,
    /// The full read's diagnostics of the lines.
    pub diagnostics: Vec<Diagnostic>,
    /// Bytes read.
    pub bytes: u64,
    /// The conversation entries (those with a `uuid`), for the tree.
    pub links: Vec<Link<'a>>,
    /// The `sessionId` of the first entry that has one.
    pub session_id: Option<&'a str>,
    /// The usage lines, in file order.
    pub usage: Vec<UsageLine<'a>>,
}

/// What one line gave.
#[allow(clippy::large_enum_variant)] // returned per line, never stored
enum Lean<'a> {
    NotAnObject(Json<'static>),
    MissingType,
    Entry {
        /// The type, when [`type_entry`] does not know it.
        unknown: Option<String>,
        link: Option<(&'a str, Option<&'a str>, Option<&'a str>)>,
        session_id: Option<&'a str>,
        usage: Option<UsageLine<'a>>,
    },
}

/// Type names remembered by [`is_unknown_type`]: Claude Code writes a
/// score of them; a file of made-up types is asked one by one.
const KNOWN_TYPES_CAP: usize = 64;

/// Whether [`type_entry`] types `t` as [`EntryKind::Unknown`], asked of
/// `type_entry` itself (the answer remembered for the first
/// [`KNOWN_TYPES_CAP`] names).
fn is_unknown_type(known: &mut KnownTypes, t: &str) -> bool {
    if let Some((_, unknown)) = known.iter().find(|(k, _)| &**k == t) {
        return *unknown;
    }
    let bump = Bump::new();
    let members = [("type", Json::Str(t))];
    let probe = Json::Obj(&members);
    let unknown = type_entry(&bump, 0, &probe, b"").is_none_or(|e| matches!(e.kind, EntryKind::Unknown { .. }));
    if known.len() < KNOWN_TYPES_CAP {
        known.push((t.into(), unknown));
    }
    unknown
}

/// The root members the lean read looks at, and their indices.
const ROOT_KEYS: [&str; 10] = [
    "type",
    "uuid",
    "parentUuid",
    "logicalParentUuid",
    "sessionId",
    "timestamp",
    "agentId",
    "isSidechain",
    "requestId",
    "message",
];
const TYPE: usize = 0;
const UUID: usize = 1;
const PARENT: usize = 2;
const LOGICAL_PARENT: usize = 3;
const SESSION_ID: usize = 4;
const TIMESTAMP: usize = 5;
const AGENT_ID: usize = 6;
const IS_SIDECHAIN: usize = 7;
const REQUEST_ID: usize = 8;
const MESSAGE: usize = 9;

/// The fields of one line from its tape; strings kept are copied into
/// `bump`.
fn lean<'a>(bump: &'a Bump, root: TapeValue<'_, '_>, known: &mut KnownTypes, need_sid: bool) -> Lean<'a> {
    if !root.is_object() {
        let shallow = match root.shallow() {
            Json::Str(_) => Json::Str(""),
            Json::Arr(_) => Json::Arr(&[]),
            Json::Obj(_) => Json::Obj(&[]),
            Json::Null => Json::Null,
            Json::Bool(b) => Json::Bool(b),
            Json::I64(n) => Json::I64(n),
            Json::U64(n) => Json::U64(n),
            Json::F64(f) => Json::F64(f),
        };
        return Lean::NotAnObject(shallow);
    }
    // The envelope's members in one pass over the root (the first of a key
    // counts, as `Json::get` reads it).
    let mut f: [Option<TapeValue<'_, '_>>; ROOT_KEYS.len()] = [None; ROOT_KEYS.len()];
    for (k, v) in root.members() {
        if let Some(i) = ROOT_KEYS.iter().position(|&r| r == k)
            && f[i].is_none()
        {
            f[i] = Some(v);
        }
    }
    let str_of = |i: usize| f[i].and_then(|v| v.as_str());
    let Some(type_name) = str_of(TYPE) else { return Lean::MissingType };
    let copy = |s: Option<&str>| s.map(|s| &*bump.alloc_str(s));
    let usage = if type_name == "assistant" {
        let msg = f[MESSAGE];
        let usage = msg.and_then(|m| m.get("usage")).filter(TapeValue::is_object);
        usage.map(|u| {
            let n = |k: &str| u.get(k).and_then(|v| v.as_u64()).unwrap_or(0);
            let cc = u.get("cache_creation");
            let m = |k: &str| copy(msg.and_then(|m| m.get_str(k)));
            UsageLine {
                line: 0,
                session_id: copy(str_of(SESSION_ID)),
                timestamp: copy(str_of(TIMESTAMP)),
                agent_id: copy(str_of(AGENT_ID)),
                is_sidechain: f[IS_SIDECHAIN].and_then(|v| v.as_bool()).unwrap_or(false),
                message_id: m("id"),
                request_id: copy(str_of(REQUEST_ID)),
                model: m("model"),
                usage: Usage {
                    input_tokens: n("input_tokens"),
                    output_tokens: n("output_tokens"),
                    cache_creation_input_tokens: n("cache_creation_input_tokens"),
                    cache_read_input_tokens: n("cache_read_input_tokens"),
                    cache_creation_5m: cc.and_then(|c| c.get("ephemeral_5m_input_tokens")).and_then(|v| v.as_u64()),
                    cache_creation_1h: cc.and_then(|c| c.get("ephemeral_1h_input_tokens")).and_then(|v| v.as_u64()),
                    service_tier: copy(u.get_str("service_tier")),
                },
                cache_creation_object: cc.is_some_and(|c| c.is_object()),
            }
        })
    } else {
        None
    };
    let envelope = [str_of(UUID), str_of(PARENT), str_of(LOGICAL_PARENT), str_of(SESSION_ID)];
    entry(bump, known, need_sid, type_name, envelope, usage)
}

/// The members of `message` the lean read looks at, and their indices.
const MESSAGE_KEYS: [&str; 3] = ["id", "model", "usage"];
const MESSAGE_ID: usize = 0;
const MODEL: usize = 1;
const USAGE: usize = 2;

/// The members of `message.usage` the lean read looks at.
const USAGE_KEYS: [&str; 6] = [
    "input_tokens",
    "output_tokens",
    "cache_creation_input_tokens",
    "cache_read_input_tokens",
    "cache_creation",
    "service_tier",
];
const CACHE_CREATION: usize = 4;
const SERVICE_TIER: usize = 5;

/// What [`lean`] makes of a line, read with the skim
/// ([`skim::root_members_nested`]) instead of the tape: `None` when the
/// skim is not sure of the line or of a value the usage needs (a number
/// with a sign, a fraction or an exponent).
fn skimmed<'a>(bump: &'a Bump, line: &[u8], known: &mut KnownTypes, need_sid: bool) -> Option<Lean<'a>> {
    let (f, msg) = skim::root_members_nested(line, &ROOT_KEYS, (MESSAGE, &MESSAGE_KEYS))?;
    let str_of = |i: usize| f[i].as_str();
    let Some(type_name) = str_of(TYPE) else { return Some(Lean::MissingType) };
    let copy = |s: Option<&str>| s.map(|s| &*bump.alloc_str(s));
    let usage = if type_name == "assistant" && msg[USAGE].is_object() {
        let Member::Other(text) = msg[USAGE] else { return None };
        let u = skim::root_members(text, &USAGE_KEYS)?;
        let n = |i: usize| u[i].as_u64().ok();
        let cc = u[CACHE_CREATION];
        let (cc_5m, cc_1h) = match cc {
            Member::Other(text) if cc.is_object() => {
                let c = skim::root_members(text, &["ephemeral_5m_input_tokens", "ephemeral_1h_input_tokens"])?;
                (c[0].as_u64().ok()?, c[1].as_u64().ok()?)
            }
            _ => (None, None),
        };
        Some(UsageLine {
            line: 0,
            session_id: copy(str_of(SESSION_ID)),
            timestamp: copy(str_of(TIMESTAMP)),
            agent_id: copy(str_of(AGENT_ID)),
            is_sidechain: f[IS_SIDECHAIN].as_bool().unwrap_or(false),
            message_id: copy(msg[MESSAGE_ID].as_str()),
            request_id: copy(str_of(REQUEST_ID)),
            model: copy(msg[MODEL].as_str()),
            usage: Usage {
                input_tokens: n(0)?.unwrap_or(0),
                output_tokens: n(1)?.unwrap_or(0),
                cache_creation_input_tokens: n(2)?.unwrap_or(0),
                cache_read_input_tokens: n(3)?.unwrap_or(0),
                cache_creation_5m: cc_5m,
                cache_creation_1h: cc_1h,
                service_tier: copy(u[SERVICE_TIER].as_str()),
            },
            cache_creation_object: cc.is_object(),
        })
    } else {
        None
    };
    let envelope = [str_of(UUID), str_of(PARENT), str_of(LOGICAL_PARENT), str_of(SESSION_ID)];
    Some(entry(bump, known, need_sid, type_name, envelope, usage))
}

/// The entry of a line of type `type_name` with the root strings `uuid`,
/// `parentUuid`, `logicalParentUuid` and `sessionId` (`envelope`) and its
/// usage line; strings kept are copied into `bump`.
fn entry<'a>(
    bump: &'a Bump,
    known: &mut KnownTypes,
    need_sid: bool,
    type_name: &str,
    envelope: [Option<&str>; 4],
    usage: Option<UsageLine<'a>>,
) -> Lean<'a> {
    let [uuid, parent, logical_parent, session_id] = envelope;
    let unknown = is_unknown_type(known, type_name).then(|| type_name.to_string());
    let copy = |s: Option<&str>| s.map(|s| &*bump.alloc_str(s));
    let link = uuid.map(|u| (&*bump.alloc_str(u), copy(parent), copy(logical_parent)));
    let session_id = match &usage {
        Some(u) => u.session_id,
        None if need_sid => copy(session_id),
        None => None,
    };
    Lean::Entry { unknown, link, session_id, usage }
}

/// Type names and whether [`type_entry`] leaves them unknown.
type KnownTypes = Vec<(Box<str>, bool)>;

thread_local! {
    static SCANNER: RefCell<(LineParser, KnownTypes)> = RefCell::new((LineParser::new(), Vec::new()));
}

/// The lean read of `data` (the bytes of the file shown as `display`).
pub fn scan_bytes<'a>(bump: &'a Bump, data: &[u8], display: &str, opts: &ReadOptions) -> ScannedLines<'a> {
    SCANNER.with(|s| match s.try_borrow_mut() {
        Ok(mut s) => {
            let (parser, known) = &mut *s;
            scan_with(parser, known, bump, data, display, opts)
        }
        // Re-entrant use on one thread (not done by ctxasm): fresh state.
        Err(_) => scan_with(&mut LineParser::new(), &mut Vec::new(), bump, data, display, opts),
    })
}

fn scan_with<'a>(
    parser: &mut LineParser,
    known: &mut KnownTypes,
    bump: &'a Bump,
    data: &[u8],
    display: &str,
    opts: &ReadOptions,
) -> ScannedLines<'a> {
    let mut out = ScannedLines { bytes: data.len() as u64, ..ScannedLines::default() };
    let mut entries = 0u32;
    for line in lines::lines(data) {
        out.lines += 1;
        if too_long(&line, display, opts, &mut out.diagnostics) {
            out.bad_lines += 1;
            continue;
        }
        let need_sid = out.session_id.is_none();
        // The skim reads a line without a tape; a line it is not sure of is
        // read from the tape.
        let got = match skimmed(bump, line.bytes, known, need_sid) {
            Some(lean) => Some(lean),
            None => parser.with_tape(line.bytes, |root| lean(bump, root, known, need_sid)),
        };
        let (link, session_id, usage) = match got {
            Some(Lean::NotAnObject(v)) => {
                out.bad_lines += 1;
                out.diagnostics.push(not_an_object(display, line.number, &v));
                continue;
            }
            Some(Lean::MissingType) => {
                out.bad_lines += 1;
                out.diagnostics.push(missing_type(display, line.number));
                continue;
            }
            Some(Lean::Entry { unknown, link, session_id, usage }) => {
                if let Some(t) = unknown {
                    out.diagnostics.push(unknown_type(display, line.number, &t));
                }
                (link, session_id, usage)
            }
            // Refused by the tape parse: the full read says why (and reads
            // what it still can, a number out of range).
            None => match full_line(
                bump,
                &line,
                parser.parse_line(bump, line.bytes, &mut KeyCache::default(), None),
                (&[], None),
                display,
                (&mut out.diagnostics, &mut out.bad_lines),
            ) {
                Some(e) => {
                    let link = e.env.uuid.map(|u| (u, e.env.parent_uuid, e.env.shared.logical_parent_uuid));
                    (link, e.env.shared.session_id, UsageLine::of_entry(&e))
                }
                None => continue,
            },
        };
        if let Some((uuid, parent, logical_parent)) = link {
            out.links.push(Link { entry: entries, line: line.number, uuid, parent, logical_parent });
        }
        if out.session_id.is_none() {
            out.session_id = session_id;
        }
        if let Some(u) = usage {
            out.usage.push(UsageLine { line: line.number, ..u });
        }
        entries += 1;
    }
    if out.lines == 0 {
        out.diagnostics.push(Diagnostic::new(display, 0, DiagKind::EmptyFile, "file has no lines"));
    }
    out
}

thread_local! {
    /// The bytes of the file being scanned ([`source::with_bytes`]).
    static FILE_BUFFER: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

/// Load and scan one file; an unreadable file gives the full read's
/// `io_error` diagnostic.
pub fn scan_file<'a>(bump: &'a Bump, path: &Path, display: &str, opts: &ReadOptions) -> ScannedLines<'a> {
    let scan = |data: &[u8]| scan_bytes(bump, data, display, opts);
    let scanned = FILE_BUFFER.with(|b| match b.try_borrow_mut() {
        Ok(mut buf) => source::with_bytes(path, &opts.source, &mut buf, scan),
        Err(_) => source::with_bytes(path, &opts.source, &mut Vec::new(), scan),
    });
    match scanned {
        Ok(s) => s,
        Err(e) => ScannedLines {
            diagnostics: vec![Diagnostic::new(display, 0, DiagKind::Io, format!("cannot read file: {e}"))],
            ..ScannedLines::default()
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::input::parse_bytes;

    /// Both reads of `data`: diagnostics, counts, links, first session id
    /// and usage lines equal.
    fn same_as_full_read(data: &[u8]) {
        let (b1, b2) = (Bump::new(), Bump::new());
        let opts = ReadOptions::default();
        let full = parse_bytes(&b1, data, "f.jsonl", &opts);
        let lean = scan_bytes(&b2, data, "f.jsonl", &opts);
        assert_eq!(lean.diagnostics, full.diagnostics);
        assert_eq!((lean.lines, lean.bad_lines, lean.bytes), (full.lines, full.bad_lines, full.bytes));
        let links = Link::of_entries(&full.entries);
        assert_eq!(lean.links, links);
        assert_eq!(lean.session_id, full.entries.iter().find_map(|e| e.env.shared.session_id));
        let usage: Vec<UsageLine<'_>> = full.entries.iter().filter_map(UsageLine::of_entry).collect();
        assert_eq!(lean.usage, usage);
    }

    #[test]
    fn agrees_with_the_full_read_line_by_line() {
        same_as_full_read(
            b"{\"type\":\"user\",\"uuid\":\"a\"}\n{\"type\":\n\xff\xfe\n[1]\n\"s\"\n7\n{\"no\":1}\n{\"type\":\"x-new\",\"uuid\":\"n\",\"sessionId\":\"S0\"}\n\n{\"type\":\"summary\",\"summary\":\"t\"}\n{\"type\":\"us",
        );
        // Usage in every shape: split, no split, an empty split, a usage
        // that is not an object, duplicate keys (the first counts), numbers
        // as floats, negative and out of range, escapes in the fields.
        same_as_full_read(br#"{"type":"assistant","uuid":"u1","parentUuid":"p0","sessionId":"S","timestamp":"2026-01-01T00:00:00.000Z","requestId":"r\u0031","isSidechain":true,"agentId":"a","message":{"id":"m1","model":"claude-x","usage":{"input_tokens":3,"output_tokens":2.0,"cache_creation_input_tokens":10,"cache_read_input_tokens":-4,"cache_creation":{"ephemeral_5m_input_tokens":4,"ephemeral_1h_input_tokens":6},"service_tier":"standard"}}}
{"type":"assistant","uuid":"u2","parentUuid":"u1","message":{"id":"m2","usage":{"input_tokens":1,"cache_creation_input_tokens":7,"cache_creation":{}}}}
{"type":"assistant","uuid":"u3","parentUuid":"u2","message":{"id":"m3","usage":{"input_tokens":1,"cache_creation_input_tokens":7}},"message":{"id":"other"}}
{"type":"assistant","uuid":"u4","message":{"id":"m4","usage":[1]}}
{"type":"assistant","uuid":"u5","message":"text"}
{"type":"assistant","uuid":"u6","isSidechain":"yes","message":{"usage":{"input_tokens":123456789012345678901234567890,"output_tokens":1e400}}}
{"type":"assistant","type":"user","uuid":"u7","message":{"usage":{"input_tokens":1}}}
{"type":"user","uuid":"u1","parentUuid":"missing","logicalParentUuid":"u2"}
"#);
    }
}
