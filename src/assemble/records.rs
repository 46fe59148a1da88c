//! Record replay: rebuild every request a recent Claude Code recorded.
//!
//! A transcript of this era (2.1.3xx) writes, per request, an `api-request`
//! entry: `base` (the previous request's id), `keep` (messages kept from it),
//! `tail` (SHA-256 of each appended message, see [`writer::message_hash`]),
//! `cacheControl` (JSON paths that get a `cache_control` member), `params`
//! and a `shapeHash` naming an `api-request-shape` (system blocks and tools).
//! A tail message is either an `api-request-blob` or a message that is in the
//! transcript as user / assistant entries; those are rebuilt (user entries
//! in file order merged while consecutive, a string prompt as one text block;
//! assistant lines merged by `message.id`) and found by hash. A hash that
//! matches nothing is a diagnostic naming the request and position; that
//! request is not emitted.
//!
//! What cannot be proven is lost alone, and said so: a request's messages
//! are kept message by message, a lost one marked with the line that lost
//! it. A later request that keeps a lost message (or extends a request
//! whose messages are not known at all: a record on an unreadable line, a
//! record with a broken `base`/`keep`/`tail`) is not emitted either, with a
//! `not_rebuilt` diagnostic naming the line and cause it inherits; one that
//! keeps only known messages (`keep` 0, a `keep` below the lost message) is
//! rebuilt. A lookup that fails names the lines before it that could not be
//! read. Recorded fields of the wrong type (`params: null`, `"model": 5`)
//! are `invalid_record` diagnostics ([`validate::check_record`]): such a
//! request is never written as recorded.
//!
//! Wire rules the captures show (all 14 scenarios of
//! `../shared/corpora/claude-code-2.1.328`, byte for byte):
//! - `cache_control` is appended as the last member of the object a
//!   `cacheControl` path names;
//! - then a `user` or `system` message whose content is exactly one
//!   `{type: "text", text}` block without `cache_control` is sent with the
//!   text as a plain string content;
//! - `system` = the billing header block, then the shape's blocks;
//! - body keys: `model, messages, system, tools, metadata`, the recorded
//!   params except `model` and `betas` (sent as the `anthropic-beta` header),
//!   `stream: true`;
//! - `metadata.user_id` is the JSON text
//!   `{"device_id":…,"account_uuid":…,"session_id":…}`.
//!
//! The billing header and `metadata` follow [`super::wire`]; the billing
//! text is the first user text that is not a `<system-reminder>`.

use super::wire::{self, BILLING_SALT, collapse, custom_id, first_user_text, id_session_part, with_member};
pub use super::wire::{PLACEHOLDER_DEVICE_ID, RecordOptions};
use super::{Body, Messages, Request, validate};
use crate::corpus::{ParsedFile, Session};
use crate::diag::{DiagKind, Diagnostic};
use crate::json::Json;
use crate::json::writer::{hex, message_hash, parse_sha256};
use crate::model::entry::{Entry, EntryKind};
use crate::model::messages::assistant_messages;
use crate::profile::MetadataForm;
use bumpalo::Bump;
use std::borrow::Cow;
use std::collections::HashMap;

/// What record replay produced for one session.
#[derive(Debug, Default)]
pub struct SessionRecords<'a> {
    /// Main chain first, then subagents in file order; each chain in order.
    pub requests: Vec<Request<'a>>,
    /// `api-request` entries seen.
    pub recorded: u64,
    /// Tail messages rebuilt and hashed.
    pub messages_hashed: u64,
    /// Of those, how many hash to the recorded value.
    pub hash_matches: u64,
    pub diagnostics: Vec<Diagnostic>,
}

/// Messages of a chain rebuilt from its user / assistant entries, by hash.
struct Candidates<'a> {
    by_hash: HashMap<[u8; 32], &'a Json<'a>>,
}

/// Longest run of consecutive user entries merged into one message.
const MAX_USER_RUN: usize = 64;

impl<'a> Candidates<'a> {
    fn build(bump: &'a Bump, entries: &[Entry<'a>], scratch: &mut Vec<u8>) -> Self {
        let mut by_hash = HashMap::new();
        let mut add = |m: &'a Json<'a>, scratch: &mut Vec<u8>| {
            by_hash.entry(message_hash(m, scratch)).or_insert(m);
        };
        let msg_entries: Vec<&Entry<'a>> =
            entries.iter().filter(|e| matches!(e.kind, EntryKind::User(_) | EntryKind::Assistant(_))).collect();
        // User runs: every window of consecutive user entries.
        for start in 0..msg_entries.len() {
            let mut blocks: Vec<Json<'a>> = Vec::new();
            for e in msg_entries[start..].iter().take(MAX_USER_RUN) {
                let Some(content) = user_content(bump, e) else { break };
                blocks.extend_from_slice(content);
                let m = message(bump, "user", Json::Arr(bump.alloc_slice_copy(&blocks)));
                add(m, scratch);
            }
        }
        // Assistant messages: lines merged by message.id.
        let raw_blocks = |i: u32| -> &'a [Json<'a>] {
            entries[i as usize]
                .raw
                .get("message")
                .and_then(|m| m.get("content"))
                .and_then(Json::as_array)
                .unwrap_or(&[])
        };
        for group in assistant_messages(entries).iter().filter(|g| g.id.is_some()) {
            let blocks: Vec<Json<'a>> = group.entries.iter().flat_map(|&i| raw_blocks(i)).copied().collect();
            add(message(bump, "assistant", Json::Arr(bump.alloc_slice_copy(&blocks))), scratch);
        }
        // Also runs of consecutive lines of one id: a file where an id comes
        // back later (copied history) still has each message as one run.
        let mut run: Vec<Json<'a>> = Vec::new();
        let mut run_id: Option<&'a str> = None;
        for e in &msg_entries {
            let a = e.as_assistant();
            let id = a.and_then(|a| a.message_id);
            if id != run_id || id.is_none() {
                if !run.is_empty() {
                    add(message(bump, "assistant", Json::Arr(bump.alloc_slice_copy(&run))), scratch);
                }
                run.clear();
                run_id = id;
            }
            if let Some(Json::Arr(blocks)) = a.and(e.raw.get("message")).and_then(|m| m.get("content")) {
                run.extend_from_slice(blocks);
            }
        }
        if !run.is_empty() {
            add(message(bump, "assistant", Json::Arr(bump.alloc_slice_copy(&run))), scratch);
        }
        Candidates { by_hash }
    }
}

/// A user entry's content as blocks (a string prompt is one text block).
fn user_content<'a>(bump: &'a Bump, e: &Entry<'a>) -> Option<&'a [Json<'a>]> {
    e.as_user()?;
    match e.raw.get("message").and_then(|m| m.get("content"))? {
        Json::Arr(blocks) => Some(blocks),
        Json::Str(s) => {
            let block = Json::Obj(bump.alloc_slice_copy(&[("type", Json::Str("text")), ("text", Json::Str(s))]));
            Some(bump.alloc_slice_copy(&[block]))
        }
        _ => None,
    }
}

fn message<'a>(bump: &'a Bump, role: &'static str, content: Json<'a>) -> &'a Json<'a> {
    bump.alloc(Json::Obj(bump.alloc_slice_copy(&[("role", Json::Str(role)), ("content", content)])))
}

/// `root` with `cache_control: value` set on the object at `path`.
fn set_cache_control<'a>(bump: &'a Bump, root: &Json<'a>, path: &[Json<'a>], value: Json<'a>) -> Option<Json<'a>> {
    let Some((first, rest)) = path.split_first() else {
        return with_member(bump, root, "cache_control", value);
    };
    match (root, first) {
        (Json::Arr(items), seg) => {
            let i = usize::try_from(seg.as_u64()?).ok()?;
            let child = set_cache_control(bump, items.get(i)?, rest, value)?;
            let mut out = items.to_vec();
            out[i] = child;
            Some(Json::Arr(bump.alloc_slice_copy(&out)))
        }
        (Json::Obj(_), Json::Str(key)) => {
            let child = set_cache_control(bump, root.get(key)?, rest, value)?;
            with_member(bump, root, key, child)
        }
        _ => None,
    }
}

struct Chain<'a, 'f> {
    file: &'f ParsedFile<'a, 'f>,
    agent_id: Option<&'a str>,
}

/// Replay every recorded request of `session` (main chain, then subagents).
pub fn assemble_records<'a>(bump: &'a Bump, session: &Session<'a, '_>, opts: &RecordOptions) -> SessionRecords<'a> {
    let mut out = SessionRecords::default();
    let mut scratch = Vec::with_capacity(64 * 1024);
    // Shapes and blobs may be written by any file of the session.
    let mut shapes: HashMap<&'a str, Result<&'a Json<'a>, &'a str>> = HashMap::new();
    let mut blobs: HashMap<[u8; 32], &'a Json<'a>> = HashMap::new();
    for f in session.files() {
        for e in &f.parsed.entries {
            match e.kind {
                EntryKind::ApiRequestShape { shape_hash: Some(h), shape: Some(s) } => {
                    let at = |kind, msg: String| Diagnostic::new(f.file.display.as_str(), e.line, kind, msg);
                    let problems = validate::check_shape(s);
                    if !problems.is_empty() {
                        let why: Vec<String> = problems.iter().map(ToString::to_string).collect();
                        let why = why.join(", ");
                        out.diagnostics.push(at(DiagKind::InvalidRecord, format!("api-request-shape {h}: {why}")));
                        shapes.insert(h, Err(bump.alloc_str(&format!("line {}: {why}", e.line))));
                        continue;
                    }
                    let got = hex(&message_hash(s, &mut scratch));
                    if got != h {
                        out.diagnostics
                            .push(at(DiagKind::RecordMismatch, format!("api-request-shape {h} hashes to {got}")));
                    }
                    shapes.insert(h, Ok(s));
                }
                EntryKind::ApiRequestBlob { hash: Some(h), message: Some(m) } => {
                    if let Some(key) = parse_sha256(h) {
                        blobs.insert(key, m);
                    }
                }
                _ => {}
            }
        }
    }
    let chains =
        session.main.iter().map(|f| Chain { file: f, agent_id: None }).chain(session.subagents.iter().map(|f| Chain {
            file: f,
            agent_id: match &f.file.kind {
                crate::input::discover::FileKind::Subagent { agent_id, .. } => Some(bump.alloc_str(agent_id)),
                _ => None,
            },
        }));
    for chain in chains {
        replay_chain(bump, &chain, session, &shapes, &blobs, opts, &mut scratch, &mut out);
    }
    out
}

/// A message of a request's tail, as far as replay knows it.
#[derive(Debug, Clone, Copy)]
enum Slot<'a> {
    Known(&'a Json<'a>),
    /// Not known; why, from the line that lost it.
    Unknown(&'a str),
}

/// A list of messages as parts shared with the lists it extends: a request
/// keeps a prefix of its base's messages without copying them, so a chain
/// of n requests holds O(n log n) pointers, not n². The parts follow the
/// pipeline's spine rule: each more than twice as long as the next, so a
/// list has O(log n) parts and a message is copied O(log n) times along a
/// chain. A part never changes once made (a cut is a shorter slice of it).
#[derive(Debug, Clone, Copy, Default)]
struct List<'a> {
    parts: &'a [&'a [&'a Json<'a>]],
    len: usize,
}

impl<'a> List<'a> {
    /// Its first `keep` messages (at most all), then `more`.
    fn extend(&self, bump: &'a Bump, keep: usize, more: &[&'a Json<'a>]) -> List<'a> {
        let keep = keep.min(self.len);
        let mut parts: smallvec::SmallVec<[&'a [&'a Json<'a>]; 24]> = smallvec::SmallVec::new();
        let mut total = 0;
        for part in self.parts {
            if total == keep {
                break;
            }
            let take = part.len().min(keep - total);
            parts.push(&part[..take]);
            total += take;
        }
        if !more.is_empty() {
            parts.push(bump.alloc_slice_copy(more));
        }
        while let [.., a, b] = parts[..] {
            if a.len() > 2 * b.len() {
                break;
            }
            let merged = bump
                .alloc_slice_fill_iter((0..a.len() + b.len()).map(|i| if i < a.len() { a[i] } else { b[i - a.len()] }));
            parts.truncate(parts.len() - 2);
            parts.push(merged);
        }
        List { parts: bump.alloc_slice_copy(&parts), len: keep + more.len() }
    }

    fn messages(&self) -> Messages<'a> {
        Messages::Parts(self.parts, self.len)
    }
}

/// What stands in a list for a message that is not known (never sent: a
/// request with one is not rebuilt).
static UNKNOWN: Json<'static> = Json::Null;

/// What replay knows of a request's messages.
#[derive(Debug, Clone, Copy, Default)]
struct Slots<'a> {
    /// Canonical (no cache control); [`UNKNOWN`] where not known.
    canonical: List<'a>,
    /// The first message not known, and why.
    lost: Option<(usize, &'a str)>,
    /// The messages of its body, when it was built.
    wire: Option<Wire<'a>>,
}

/// A built request's wire messages, for the requests that extend it.
#[derive(Debug, Clone, Copy)]
struct Wire<'a> {
    messages: List<'a>,
    /// The first message that is not the plain wire form of its canonical
    /// one (it got a `cache_control`); the length when none.
    marked_from: usize,
    /// Its place in [`SessionRecords::requests`].
    at: usize,
}

impl<'a> Slots<'a> {
    /// Its first `keep` messages, then `tail`.
    fn extend(&self, bump: &'a Bump, keep: usize, tail: &[Slot<'a>]) -> Slots<'a> {
        let keep = keep.min(self.canonical.len);
        let more: smallvec::SmallVec<[&'a Json<'a>; 8]> = tail
            .iter()
            .map(|s| match s {
                Slot::Known(m) => *m,
                Slot::Unknown(_) => &UNKNOWN,
            })
            .collect();
        let lost = self.lost.filter(|(i, _)| *i < keep).or_else(|| {
            tail.iter().enumerate().find_map(|(i, s)| match s {
                Slot::Unknown(why) => Some((keep + i, *why)),
                Slot::Known(_) => None,
            })
        });
        Slots { canonical: self.canonical.extend(bump, keep, &more), lost, wire: None }
    }
}

/// What replay knows of a request, for the later requests that extend it.
#[derive(Debug)]
struct Sent<'a> {
    line: u32,
    /// Its messages; `Err(why)` when not even their number is known.
    slots: Result<Slots<'a>, &'a str>,
}

/// The messages a request keeps: the first `keep` of `base`'s.
struct Kept<'a> {
    base: Slots<'a>,
    keep: usize,
}

/// Why the messages a request keeps of its base are not known.
enum Lost<'a> {
    /// A fault of this record (its base is in no record, it keeps more
    /// messages than the base had): the text after `api-request <id>`.
    Here(String),
    /// Its base was not rebuilt: the base's id and line, and the first cause.
    Base { base: &'a str, line: u32, cause: &'a str },
}

/// `; before it, line 21 (invalid_json) could not be read`: the lines of
/// `file` before `line` that gave no entry, the likely reason a record or
/// message cannot be found.
fn unread_before(file: &ParsedFile<'_, '_>, line: u32) -> String {
    let bad: Vec<String> = file
        .parsed
        .diagnostics
        .iter()
        .filter(|d| d.kind.is_bad_line() && d.line < line)
        .map(|d| format!("{} ({})", d.line, d.kind))
        .collect();
    match bad.len() {
        0 => String::new(),
        1 => format!("; before it, line {} could not be read", bad[0]),
        n if n <= 5 => format!("; before it, lines {} could not be read", bad.join(", ")),
        n => format!("; before it, lines {} and {} more could not be read", bad[..5].join(", "), n - 5),
    }
}

#[allow(clippy::too_many_arguments)]
fn replay_chain<'a>(
    bump: &'a Bump,
    chain: &Chain<'a, '_>,
    session: &Session<'a, '_>,
    shapes: &HashMap<&'a str, Result<&'a Json<'a>, &'a str>>,
    blobs: &HashMap<[u8; 32], &'a Json<'a>>,
    opts: &RecordOptions,
    scratch: &mut Vec<u8>,
    out: &mut SessionRecords<'a>,
) {
    let entries = &chain.file.parsed.entries;
    let display: &'a str = bump.alloc_str(&chain.file.file.display);
    let entrypoint = entries
        .iter()
        .chain(session.main.iter().flat_map(|m| m.parsed.entries.iter()))
        .find_map(|e| e.raw.get_str("entrypoint"))
        .unwrap_or("cli");
    let mut candidates: Option<Candidates<'a>> = None;
    let mut verified: std::collections::HashSet<[u8; 32]> = std::collections::HashSet::new();
    // The messages of each request (canonical: no cache control), by id.
    let mut sent: HashMap<&'a str, Sent<'a>> = HashMap::new();
    // Wire forms of canonical messages, so a message kept across requests
    // is one node (and one dedup segment).
    let mut collapsed: HashMap<*const Json<'a>, &'a Json<'a>> = HashMap::new();
    let mut n = 0usize;
    // Record lines that could not be read: lost requests, counted in place.
    let mut unread = chain.file.parsed.unread_records.iter().copied().peekable();
    let lost_record = |line: u32, n: &mut usize, out: &mut SessionRecords<'a>| {
        out.recorded += 1;
        let msg = format!(
            "this line begins as an api-request record (request {n} of its chain) but cannot be read: not rebuilt"
        );
        out.diagnostics.push(Diagnostic::new(display, line, DiagKind::NotRebuilt, msg));
        *n += 1;
    };
    for e in entries {
        let EntryKind::ApiRequest(r) = &e.kind else { continue };
        while let Some(line) = unread.next_if(|l| *l < e.line) {
            lost_record(line, &mut n, out);
        }
        out.recorded += 1;
        let index = n;
        n += 1;
        let diag = |kind: DiagKind, msg: String| Diagnostic::new(display, e.line, kind, msg);
        let rid = r.id.unwrap_or("?");
        let hint = || unread_before(chain.file, e.line);
        // Fields of the wrong type: reported, never replayed as they are.
        let problems = validate::check_record(e.raw);
        for p in &problems {
            let what = if p.hides_messages { "its messages are not known" } else { "not rebuilt" };
            out.diagnostics.push(diag(DiagKind::InvalidRecord, format!("api-request {rid}: {p}; {what}")));
        }
        if let Some(p) = problems.iter().find(|p| p.hides_messages) {
            if let Some(id) = r.id {
                let cause = format!("line {}: api-request {id}: {p}", e.line);
                sent.insert(id, Sent { line: e.line, slots: Err(bump.alloc_str(&cause)) });
            }
            continue;
        }
        let kept = match kept_slots(r, &sent) {
            Ok(k) => k,
            Err(lost) => {
                let cause: &'a str = match lost {
                    Lost::Here(msg) => {
                        let msg = format!("api-request {rid}{msg}{}", hint());
                        let cause = bump.alloc_str(&format!("line {}: {msg}", e.line));
                        out.diagnostics.push(diag(DiagKind::RecordMismatch, msg));
                        cause
                    }
                    Lost::Base { base, line, cause } => {
                        out.diagnostics.push(diag(
                            DiagKind::NotRebuilt,
                            format!(
                                "api-request {rid} (request {index} of its chain) not rebuilt: it extends api-request \
                                 {base} (line {line}), which was not rebuilt: {cause}"
                            ),
                        ));
                        cause
                    }
                };
                if let Some(id) = r.id {
                    sent.insert(id, Sent { line: e.line, slots: Err(cause) });
                }
                continue;
            }
        };
        let mut tail_slots = Vec::with_capacity(r.tail.len());
        let mut tail =
            TailLookup { bump, entries, blobs, candidates: &mut candidates, verified: &mut verified, scratch };
        tail.resolve(r, e.line, index, kept.keep, &mut tail_slots, out, &diag, &hint);
        let slots = kept.base.extend(bump, kept.keep, &tail_slots);
        // A message it keeps was lost with an earlier request (its own tail
        // misses were reported by `resolve`).
        if let Some((i, cause)) = kept.base.lost.filter(|(i, _)| *i < kept.keep) {
            let base = r.base.unwrap_or("?");
            let line = r.base.and_then(|b| sent.get(b)).map_or(0, |s| s.line);
            out.diagnostics.push(diag(
                DiagKind::NotRebuilt,
                format!(
                    "api-request {rid} (request {index} of its chain) not rebuilt: its message {i}, kept from \
                     api-request {base} (line {line}), was lost at {cause}"
                ),
            ));
        }
        if let Some(id) = r.id {
            sent.insert(id, Sent { line: e.line, slots: Ok(slots) });
        }
        if slots.lost.is_some() || !problems.is_empty() {
            continue;
        }
        let shape = match r.shape_hash.and_then(|h| shapes.get(h)) {
            Some(Ok(shape)) => *shape,
            Some(Err(why)) => {
                let msg = format!("api-request {rid}: its shape {} is not usable: {why}", r.shape_hash.unwrap_or(""));
                out.diagnostics.push(diag(DiagKind::RecordMismatch, msg));
                continue;
            }
            None => {
                let h = r.shape_hash.unwrap_or("(none)");
                let msg = format!(
                    "api-request {rid}: its shape {h} is in no api-request-shape line of the session{}",
                    hint()
                );
                out.diagnostics.push(diag(DiagKind::RecordMismatch, msg));
                continue;
            }
        };
        // The base's wire messages, when it was built: this body shares
        // them up to the first one that changes.
        let base_wire = kept.base.wire.map(|w| (w, w.marked_from.min(kept.keep)));
        match build_body(bump, e, r, shape, slots.canonical, base_wire, entrypoint, opts, &mut collapsed) {
            Ok((mut body, wire)) => {
                // The list's last request is the base: the dedup writer
                // and the validity check start where this one changes it.
                if base_wire.is_some_and(|(w, _)| w.at + 1 == out.requests.len()) {
                    body.shared = wire.shared;
                }
                let at = out.requests.len();
                if let Some(s) = r.id.and_then(|id| sent.get_mut(id)).and_then(|s| s.slots.as_mut().ok()) {
                    s.wire = Some(Wire { messages: wire.messages, marked_from: wire.marked_from, at });
                }
                let session_id = e.env.shared.session_id.unwrap_or("");
                out.requests.push(Request {
                    custom_id: custom_id(&id_session_part(chain.file.file, session_id), chain.agent_id, index),
                    session_id,
                    agent_id: chain.agent_id,
                    index,
                    file: display,
                    line: e.line,
                    timestamp: e.env.timestamp,
                    body,
                });
            }
            Err(msg) => out.diagnostics.push(diag(DiagKind::RecordMismatch, format!("api-request {rid}: {msg}"))),
        }
    }
    for line in unread {
        lost_record(line, &mut n, out);
    }
}

/// The messages a request keeps of its base request (`base`, `keep`).
fn kept_slots<'a>(
    r: &crate::model::entry::ApiRequest<'a>,
    sent: &HashMap<&'a str, Sent<'a>>,
) -> Result<Kept<'a>, Lost<'a>> {
    // Keeping nothing needs no base (`check_record` refuses a keep without one).
    let Some(base) = r.base.filter(|_| r.keep != Some(0)) else {
        return Ok(Kept { base: Slots::default(), keep: 0 });
    };
    let Some(prev) = sent.get(base) else {
        return Err(Lost::Here(format!(": its base, api-request {base}, is in no earlier record of this file")));
    };
    let prev_slots = match &prev.slots {
        Ok(s) => *s,
        Err(cause) => return Err(Lost::Base { base, line: prev.line, cause }),
    };
    let had = prev_slots.canonical.len;
    let keep = r.keep.map_or(had, |k| usize::try_from(k).unwrap_or(usize::MAX));
    if keep > had {
        return Err(Lost::Here(format!(
            " keeps {keep} messages of api-request {base} (line {}), which had {had}",
            prev.line
        )));
    }
    Ok(Kept { base: prev_slots, keep })
}

/// Where a chain's tail hashes are looked up: the blobs (each checked once
/// per chain), then the messages rebuilt from the transcript.
struct TailLookup<'a, 'r> {
    bump: &'a Bump,
    entries: &'r [Entry<'a>],
    blobs: &'r HashMap<[u8; 32], &'a Json<'a>>,
    candidates: &'r mut Option<Candidates<'a>>,
    verified: &'r mut std::collections::HashSet<[u8; 32]>,
    scratch: &'r mut Vec<u8>,
}

impl<'a> TailLookup<'a, '_> {
    /// Append the messages of `r.tail` (of the record at `line`, after
    /// the `kept` messages of its base) to `slots`: each is known, or
    /// unknown with a diagnostic saying why.
    #[allow(clippy::too_many_arguments)]
    fn resolve(
        &mut self,
        r: &crate::model::entry::ApiRequest<'a>,
        line: u32,
        n: usize,
        kept: usize,
        slots: &mut Vec<Slot<'a>>,
        out: &mut SessionRecords<'a>,
        diag: &dyn Fn(DiagKind, String) -> Diagnostic,
        hint: &dyn Fn() -> String,
    ) {
        let rid = r.id.unwrap_or("?");
        for (pos, h) in r.tail.iter().enumerate() {
            out.messages_hashed += 1;
            let at = kept + slots.len();
            let short = h.get(..12).unwrap_or(h);
            // The diagnostic, and the cause later requests that keep the
            // message name.
            let (kind, msg, cause) = match parse_sha256(h).map(|key| self.find(key)) {
                None => (
                    DiagKind::RecordMismatch,
                    format!("api-request {rid}: tail[{pos}] is not a SHA-256: {h:?}"),
                    format!("line {line}: tail[{pos}] of api-request {rid} is not a SHA-256"),
                ),
                Some(Some(m)) => {
                    out.hash_matches += 1;
                    match validate::check_message(m) {
                        None => {
                            slots.push(Slot::Known(m));
                            continue;
                        }
                        Some(why) => (
                            DiagKind::InvalidRecord,
                            format!(
                                "api-request {rid}: tail[{pos}] = message {at} of the request, hash {h}: the message {why}"
                            ),
                            format!("line {line}: tail[{pos}] of api-request {rid} (hash {short}…) is not a message"),
                        ),
                    }
                }
                Some(None) => {
                    let hint = hint();
                    (
                        DiagKind::RecordMismatch,
                        format!(
                            "api-request {rid} (request {n} of its chain): tail[{pos}] = message {at} of the request, hash {h}, \
                             matches no blob and no message rebuilt from the transcript{hint}"
                        ),
                        format!(
                            "line {line}: tail[{pos}] of api-request {rid} (hash {short}…) matches no message{hint}"
                        ),
                    )
                }
            };
            slots.push(Slot::Unknown(self.bump.alloc_str(&cause)));
            out.diagnostics.push(diag(kind, msg));
        }
    }

    /// The message whose hash is `key`.
    fn find(&mut self, key: [u8; 32]) -> Option<&'a Json<'a>> {
        match self.blobs.get(&key) {
            Some(m) if self.verified.contains(&key) => Some(*m),
            Some(m) => (message_hash(m, self.scratch) == key).then(|| {
                self.verified.insert(key);
                *m
            }),
            None => {
                let (bump, entries) = (self.bump, self.entries);
                let scratch = &mut *self.scratch;
                self.candidates
                    .get_or_insert_with(|| Candidates::build(bump, entries, scratch))
                    .by_hash
                    .get(&key)
                    .copied()
            }
        }
    }
}

/// A built body's wire messages: the list, its first message that got a
/// `cache_control`, and how many leading messages are the base's nodes.
struct BuiltWire<'a> {
    messages: List<'a>,
    marked_from: usize,
    shared: usize,
}

/// The body of a request whose messages are `canonical`; `base` is the
/// wire list of the request it extends and how many of its messages are
/// plain wire forms of messages it keeps: those nodes are taken as they
/// are, only the rest is made.
#[allow(clippy::too_many_arguments)]
fn build_body<'a>(
    bump: &'a Bump,
    e: &Entry<'a>,
    r: &crate::model::entry::ApiRequest<'a>,
    shape: &'a Json<'a>,
    canonical: List<'a>,
    base: Option<(Wire<'a>, usize)>,
    entrypoint: &str,
    opts: &RecordOptions,
    collapsed: &mut HashMap<*const Json<'a>, &'a Json<'a>>,
) -> Result<(Body<'a>, BuiltWire<'a>), String> {
    let version = e.env.shared.version.unwrap_or("");
    let canonical_messages = canonical.messages();
    let first_text = canonical_messages.first().map_or("", |m| first_user_text(m));
    // A subagent's request says so in its header (`wire::SUBAGENT_BILLING_FLAG`).
    let extra = if wire::is_agent_query(r.query_source) { wire::SUBAGENT_BILLING_FLAG } else { "" };
    let header =
        wire::billing_header(version, &wire::billing_suffix(BILLING_SALT, first_text, version), entrypoint, extra);
    let billing =
        Json::Obj(bump.alloc_slice_copy(&[("type", Json::Str("text")), ("text", Json::Str(bump.alloc_str(&header)))]));
    let mut system: Vec<Json<'a>> = vec![billing];
    if let Some(Json::Arr(blocks)) = shape.get("system") {
        system.extend_from_slice(blocks);
    }
    let mut tools: Option<Json<'a>> = shape.get("tools").copied();
    let mut marked: Vec<(usize, Json<'a>)> = Vec::new();
    // Cache keys of the static segments: what the bytes depend on.
    let shape_hash = r.shape_hash.unwrap_or("");
    let mut system_key_text: Vec<Option<String>> =
        (0..system.len()).map(|i| (i > 0).then(|| format!("{shape_hash}/system/{i}"))).collect();
    let mut tools_key_text = format!("{shape_hash}/tools");
    let mut target = CacheTargets {
        messages: &canonical_messages,
        marked: &mut marked,
        system: &mut system,
        system_key_text: &mut system_key_text,
        tools: &mut tools,
        tools_key_text: &mut tools_key_text,
    };
    for cc in r.cache_control.and_then(Json::as_array).unwrap_or(&[]) {
        target.apply(bump, cc)?;
    }
    let marked_from = marked.iter().map(|(i, _)| *i).min().unwrap_or(canonical.len);
    let (base_list, shared) = match base {
        Some((w, plain)) => (w.messages, plain.min(marked_from)),
        None => (List::default(), 0),
    };
    let fresh: Vec<&'a Json<'a>> = canonical_messages
        .iter_from(shared)
        .enumerate()
        .map(|(j, orig)| match marked.iter().find(|(i, _)| *i == shared + j) {
            Some((_, m)) => collapse(bump, bump.alloc(*m)),
            None => *collapsed.entry(orig as *const Json<'a>).or_insert_with(|| collapse(bump, orig)),
        })
        .collect();
    let messages = base_list.extend(bump, shared, &fresh);
    let key = |text: &str| xxhash_rust::xxh3::xxh3_128(text.as_bytes());
    let params = r.params.and_then(Json::as_object).unwrap_or(&[]);
    let model = params.iter().find(|(k, _)| *k == "model").map_or(Json::Null, |(_, v)| *v);
    let betas = params
        .iter()
        .find(|(k, _)| *k == "betas")
        .and_then(|(_, v)| v.as_array())
        .map(|b| b.iter().filter_map(Json::as_str).collect())
        .unwrap_or_default();
    let body = Body {
        model,
        messages: messages.messages(),
        shared: 0,
        lead_params: Cow::Borrowed(&[]),
        system: system.into_iter().map(|s| &*bump.alloc(s)).collect(),
        system_keys: system_key_text.iter().map(|k| k.as_deref().filter(|_| !shape_hash.is_empty()).map(key)).collect(),
        tools: tools.map(|t| &*bump.alloc(t)),
        tools_key: (!shape_hash.is_empty()).then(|| key(&tools_key_text)),
        metadata: wire::metadata(bump, opts, e.env.shared.session_id.unwrap_or(""), MetadataForm::JsonUserId),
        params: params.iter().filter(|(k, _)| *k != "model" && *k != "betas").copied().collect(),
        stream: true,
        betas: Cow::Owned(betas),
        cch_seed: None,
    };
    Ok((body, BuiltWire { messages, marked_from, shared }))
}

/// What a request's `cacheControl` paths may name, and the segment keys
/// that must change with them.
struct CacheTargets<'a, 'r> {
    /// The canonical messages, and those a path changed (few: in order
    /// of the first change).
    messages: &'r Messages<'a>,
    marked: &'r mut Vec<(usize, Json<'a>)>,
    system: &'r mut Vec<Json<'a>>,
    system_key_text: &'r mut Vec<Option<String>>,
    tools: &'r mut Option<Json<'a>>,
    tools_key_text: &'r mut String,
}

impl<'a> CacheTargets<'a, '_> {
    /// Append `cc.value` as `cache_control` at `cc.path`.
    fn apply(&mut self, bump: &'a Bump, cc: &Json<'a>) -> Result<(), String> {
        let path = cc.get("path").and_then(Json::as_array).ok_or("cacheControl entry without a path")?;
        let value = *cc.get("value").ok_or("cacheControl entry without a value")?;
        let bad = || format!("cacheControl path {} does not exist", Json::Arr(path).to_compact_string());
        let (root, rest) = path.split_first().ok_or_else(bad)?;
        let (idx, inner) = rest.split_first().ok_or_else(bad)?;
        match root.as_str() {
            Some("messages") => {
                let i = idx.as_u64().and_then(|i| usize::try_from(i).ok()).ok_or_else(bad)?;
                let at = self.marked.iter().position(|(j, _)| *j == i);
                let target = match at {
                    Some(k) => self.marked[k].1,
                    None => *self.messages.get(i).ok_or_else(bad)?,
                };
                let changed = set_cache_control(bump, &target, inner, value).ok_or_else(bad)?;
                match at {
                    Some(k) => self.marked[k].1 = changed,
                    None => self.marked.push((i, changed)),
                }
            }
            Some("system") => {
                // System paths index the shape's blocks: the billing header
                // is put in front of them afterwards.
                let i = idx.as_u64().and_then(|i| usize::try_from(i).ok()?.checked_add(1)).ok_or_else(bad)?;
                let target = self.system.get(i).ok_or_else(bad)?;
                self.system[i] = set_cache_control(bump, target, inner, value).ok_or_else(bad)?;
                if let Some(Some(k)) = self.system_key_text.get_mut(i) {
                    k.push_str(&Json::Arr(inner).to_compact_string());
                    k.push_str(&value.to_compact_string());
                }
            }
            Some("tools") => {
                let t = self.tools.ok_or_else(bad)?;
                *self.tools = Some(set_cache_control(bump, &t, rest, value).ok_or_else(bad)?);
                self.tools_key_text.push_str(&Json::Arr(rest).to_compact_string());
                self.tools_key_text.push_str(&value.to_compact_string());
            }
            _ => return Err(bad()),
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::LineParser;
    use crate::json::writer;

    fn parse<'a>(bump: &'a Bump, s: &str) -> &'a Json<'a> {
        bump.alloc(LineParser::new().parse(bump, s.as_bytes()).unwrap())
    }

    #[test]
    fn cache_control_is_appended_and_plain_single_text_messages_collapse() {
        let bump = Bump::new();
        let m = parse(&bump, r#"{"role":"user","content":[{"type":"text","text":"second: summarize"}]}"#);
        // Without cache control: a plain string.
        assert_eq!(writer::to_vec(collapse(&bump, m)), br#"{"role":"user","content":"second: summarize"}"#);
        // With it: blocks, cache_control last.
        let path = [Json::Str("content"), Json::U64(0)];
        let cc = *parse(&bump, r#"{"type":"ephemeral"}"#);
        let with = set_cache_control(&bump, m, &path, cc).unwrap();
        let with = collapse(&bump, bump.alloc(with));
        assert_eq!(
            writer::to_vec(with),
            br#"{"role":"user","content":[{"type":"text","text":"second: summarize","cache_control":{"type":"ephemeral"}}]}"#
        );
        // Assistant messages and multi-block messages keep their blocks.
        let a = parse(&bump, r#"{"role":"assistant","content":[{"type":"text","text":"x"}]}"#);
        assert!(std::ptr::eq(collapse(&bump, a), a));
        let two = parse(&bump, r#"{"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}"#);
        assert!(std::ptr::eq(collapse(&bump, two), two));
        // A bad path is refused, not guessed.
        assert!(set_cache_control(&bump, m, &[Json::Str("content"), Json::U64(3)], cc).is_none());
    }

    #[test]
    fn a_request_that_keeps_only_known_messages_is_rebuilt() {
        let bump = Bump::new();
        let m0 = parse(&bump, r#"{"role":"user","content":"a"}"#);
        let mut sent = HashMap::new();
        let lost = "line 7: tail[1] of api-request r1 (hash 7ac4973e460f…) matches no message";
        let r1 = Slots::default().extend(&bump, 0, &[Slot::Known(m0), Slot::Unknown(lost)]);
        sent.insert("r1", Sent { line: 7, slots: Ok(r1) });
        sent.insert("r2", Sent { line: 9, slots: Err("line 9: api-request r2: keep is a string (\"2\")") });
        let req = |base, keep| crate::model::entry::ApiRequest {
            id: Some("x"),
            base,
            keep,
            tail: &[],
            cache_control: None,
            params: None,
            shape_hash: None,
            request_digest: None,
            query_source: None,
        };
        // Per kept message: known (before the first lost one).
        let known = |r| match kept_slots(&r, &sent) {
            Ok(Kept { base, keep }) => {
                let slots = base.extend(&bump, keep, &[]);
                assert_eq!(slots.canonical.len, keep);
                (0..keep).map(|i| slots.lost.is_none_or(|(j, _)| i < j)).collect::<Vec<bool>>()
            }
            Err(_) => panic!("lost"),
        };
        // Below the lost message, nothing is lost; keeping it carries it.
        assert_eq!(known(req(Some("r1"), Some(1))), [true]);
        assert_eq!(known(req(Some("r1"), None)), [true, false]);
        // Keeping nothing needs no base, known or not.
        assert_eq!(known(req(Some("r2"), Some(0))), [false; 0]);
        assert_eq!(known(req(Some("never-recorded"), Some(0))), [false; 0]);
        assert_eq!(known(req(None, None)), [false; 0]);
        // What cannot be kept says why.
        let why = |r| match kept_slots(&r, &sent) {
            Ok(_) => panic!("kept"),
            Err(Lost::Here(m)) => m,
            Err(Lost::Base { base, line, cause }) => format!("{base}@{line}: {cause}"),
        };
        assert_eq!(why(req(Some("r2"), Some(1))), "r2@9: line 9: api-request r2: keep is a string (\"2\")");
        assert_eq!(why(req(Some("r0"), Some(1))), ": its base, api-request r0, is in no earlier record of this file");
        assert_eq!(why(req(Some("r1"), Some(3))), " keeps 3 messages of api-request r1 (line 7), which had 2");
    }

    #[test]
    fn an_excerpt_or_copy_keeps_its_name_in_the_id() {
        use crate::input::discover::{FileKind, TranscriptFile};
        let sid = "c45af7b1-cb7c-4e51-93db-8cbb250a877a";
        let file = |path: &str, kind| TranscriptFile { path: path.into(), display: path.into(), kind, size: 0 };
        let real = file(&format!("p/{sid}.jsonl"), FileKind::Session);
        assert_eq!(id_session_part(&real, sid), sid);
        let excerpt = file("p/sample_main_transcript.jsonl", FileKind::Session);
        assert_eq!(id_session_part(&excerpt, sid), format!("{sid}_sample_main_transcript"));
        assert_eq!(
            custom_id(&id_session_part(&excerpt, sid), None, 0),
            "c45af7b1-cb7c-4e51-93db-8cbb250a877a_sample_main_transcript_0"
        );
        let sub = file("p/s/subagents/agent-a1.jsonl", FileKind::Subagent { agent_id: "a1".into(), meta: None });
        assert_eq!(id_session_part(&sub, sid), sid);
    }

    #[test]
    fn custom_ids_are_valid_batch_ids() {
        let sid = "bc4a5825-e230-4da5-b082-11127d358a34";
        assert_eq!(custom_id(sid, None, 3), "bc4a5825-e230-4da5-b082-11127d358a34_3");
        assert_eq!(
            custom_id(sid, Some("a36efb2a1231c41e2"), 0),
            "bc4a5825-e230-4da5-b082-11127d358a34_a36efb2a1231c41e2_0"
        );
        let long = custom_id(sid, Some("acompact-0123456789abcdef0123456789"), 12);
        assert!(long.len() <= 64 && long.ends_with("_12"), "{long}");
        assert!(long.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-'));
        assert_eq!(custom_id("a/b c", None, 1), "a-b-c_1");
    }
}
