//! `ctxasm verify`: prove that record replay rebuilt what was sent.
//!
//! Two checks: every tail message rebuilt for a recorded request must hash
//! to the recorded SHA-256 (the transcript's own checksum), and, with a
//! captured `wire.jsonl` (one object per request: `body`, `raw_b64`), every
//! rebuilt body must be byte-equal to the captured bytes. Wire requests are
//! matched to rebuilt ones by `metadata.user_id.session_id`, first by exact
//! bytes, then the rest in order; a pair that differs is reported with the
//! first differing JSON path and both values. `metadata.user_id` is read in
//! both forms the CLI has sent: the JSON text of 2.1.x
//! (`{"device_id":…,"session_id":…}`) and the string of 1.0.x/2.0.x
//! (`user_<device>_account_<uuid>_session_<uuid>`).
//!
//! A captured request is a *conversation request* when a text of its first
//! message is a user text of the session's transcripts; the others are
//! *side calls* no transcript holds (the 1.0.x/2.0.x git-history summary,
//! title or topic checks): counted, not compared. A conversation request
//! that no rebuilt request pairs with, or one of a session no transcript
//! holds, is `wire_unmatched`. The report is clean only when every
//! conversation request of the capture was compared and byte-equal, and at
//! least one was.

use crate::assemble::records::RecordOptions;
use crate::assemble::{Assembler, assemble_session_as};
use crate::corpus::{RunOptions, for_each_session_of};
use crate::diag::{DiagKind, Diagnostic};
use crate::input::discover::Discovery;
pub use crate::json::diff::first_difference;
use crate::write::body::SegmentCache;
use crate::write::body::write_body;
use base64::Engine;
use serde::Serialize;
use serde_json::Value;
use std::collections::HashMap;
use std::io;
use std::path::Path;

/// One captured request.
#[derive(Debug, Clone)]
pub struct WireRequest {
    /// 1-based line in the wire file.
    pub line: usize,
    pub raw: Vec<u8>,
    /// `metadata.user_id.device_id` of the captured request.
    pub device_id: Option<String>,
    /// The texts of its first message (string content, or each text
    /// block's), to tell conversation requests from side calls.
    pub first_texts: Vec<String>,
}

/// `(device_id, session_id)` of a `metadata.user_id` in either form (see
/// the module docs).
pub fn parse_user_id(user_id: &str) -> (Option<String>, Option<String>) {
    if let Ok(v) = serde_json::from_str::<Value>(user_id) {
        let field = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_string);
        return (field("device_id"), field("session_id"));
    }
    let Some(rest) = user_id.strip_prefix("user_") else { return (None, None) };
    let Some((device, rest)) = rest.split_once("_account_") else { return (None, None) };
    let session = rest.split_once("_session_").map(|(_, s)| s.to_string()).filter(|s| !s.is_empty());
    ((!device.is_empty()).then(|| device.to_string()), session)
}

/// The texts of a request body's first message.
fn first_texts(body: &Value) -> Vec<String> {
    match body.pointer("/messages/0/content") {
        Some(Value::String(s)) => vec![s.clone()],
        Some(Value::Array(blocks)) => {
            blocks.iter().filter_map(|b| b.get("text").and_then(Value::as_str)).map(str::to_string).collect()
        }
        _ => Vec::new(),
    }
}

/// Captured requests by session id, in capture order.
pub type Wire = HashMap<String, Vec<WireRequest>>;

/// Read a `wire.jsonl` capture. Lines that are not Messages API requests
/// (no `body.messages`) are skipped.
pub fn read_wire(path: &Path) -> io::Result<Wire> {
    let text =
        std::fs::read_to_string(path).map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))?;
    let bad = |line: usize, msg: &str| {
        io::Error::new(io::ErrorKind::InvalidData, format!("{}:{line}: {msg}", path.display()))
    };
    let mut wire = Wire::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let v: Value = serde_json::from_str(line).map_err(|e| bad(i + 1, &e.to_string()))?;
        let Some(body) = v.get("body").filter(|b| b.get("messages").is_some()) else { continue };
        let raw = match v.get("raw_b64").and_then(Value::as_str) {
            Some(b64) => {
                base64::engine::general_purpose::STANDARD.decode(b64).map_err(|e| bad(i + 1, &e.to_string()))?
            }
            None => return Err(bad(i + 1, "no raw_b64")),
        };
        let (device_id, session) =
            body.pointer("/metadata/user_id").and_then(Value::as_str).map_or((None, None), parse_user_id);
        let request = WireRequest { line: i + 1, raw, device_id, first_texts: first_texts(body) };
        wire.entry(session.unwrap_or_default()).or_default().push(request);
    }
    Ok(wire)
}

/// A difference found by `verify`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Mismatch {
    /// `record` (a message or request that could not be rebuilt), `wire`
    /// (a rebuilt body that differs from the capture), `wire_unmatched` (a
    /// captured request with no rebuilt counterpart).
    pub kind: String,
    pub session: String,
    /// The request's custom_id, when there is one.
    pub request: Option<String>,
    pub file: String,
    pub line: usize,
    /// First differing JSON path (`$.messages[3].content`), for `wire`.
    pub path: Option<String>,
    pub expected: Option<Value>,
    pub got: Option<Value>,
    pub message: String,
}

impl Mismatch {
    /// A record that could not be rebuilt (from its diagnostic).
    fn record(session: &str, d: &Diagnostic) -> Self {
        Mismatch {
            kind: "record".into(),
            session: session.to_string(),
            request: None,
            file: d.file.clone(),
            line: d.line as usize,
            path: None,
            expected: None,
            got: None,
            message: d.message.clone(),
        }
    }
}

/// The `verify --json` object.
#[derive(Debug, Default, Clone, Serialize)]
pub struct VerifyReport {
    pub sessions: u64,
    /// Of those, built by the pipeline (no records, or `--mode pipeline`).
    pub pipeline_sessions: u64,
    pub requests: u64,
    pub messages_hashed: u64,
    pub hash_matches: u64,
    /// Conversation requests of the capture (see the module docs).
    pub wire_requests: u64,
    pub wire_compared: u64,
    pub wire_byte_equal: u64,
    pub wire_json_equal: u64,
    /// Conversation requests no rebuilt request paired with.
    pub wire_unmatched: u64,
    /// Captured requests no transcript holds (counted, not compared).
    pub wire_side_calls: u64,
    /// Sessions built with another release's profile (or the built-in
    /// layout): `--profile auto` had none of their own release. Not a
    /// mismatch by itself; the comparison says whether it mattered.
    pub approximated_profiles: u64,
    /// Sessions whose MCP tools were built without their servers'
    /// definitions (`approximated_mcp`); not written when 0.
    #[serde(skip_serializing_if = "is_zero")]
    pub approximated_mcp: u64,
    pub mismatches: Vec<Mismatch>,
    /// A capture was given.
    #[serde(skip)]
    pub with_wire: bool,
}

impl VerifyReport {
    /// True when everything compared matches and, with a capture, every
    /// conversation request of it was compared (at least one).
    pub fn clean(&self) -> bool {
        let wire_proven = !self.with_wire
            || (self.wire_compared > 0 && self.wire_compared == self.wire_requests && self.wire_unmatched == 0);
        self.mismatches.is_empty()
            && self.hash_matches == self.messages_hashed
            && self.wire_byte_equal == self.wire_compared
            && wire_proven
    }
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// Where `verify` takes `metadata.user_id.device_id` from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeviceId {
    /// The one in the record options.
    Given,
    /// The session's captured wire requests (the transcript does not hold
    /// it); falls back to the record options without a capture.
    FromWire,
}

/// Verify every session of `disc` (and compare with `wire`, when given).
pub fn verify(
    disc: &Discovery,
    run: &RunOptions<'_>,
    assembler: &Assembler,
    wire: Option<&Wire>,
    device: DeviceId,
) -> VerifyReport {
    let opts = &assembler.records;
    let results = for_each_session_of(disc, &disc.groups, run, |bump, session| {
        let main_sid = session.main.as_ref().and_then(|m| m.session_id()).unwrap_or("");
        let from_wire = (device == DeviceId::FromWire).then(|| wire_device(wire, main_sid)).flatten();
        let session_opts;
        let opts = match from_wire {
            Some(d) => {
                session_opts = RecordOptions { device_id: d, ..opts.clone() };
                &session_opts
            }
            None => opts,
        };
        let rec = assemble_session_as(bump, session, assembler, opts);
        let mut r = VerifyReport {
            sessions: 1,
            pipeline_sessions: u64::from(rec.by_pipeline),
            requests: if rec.by_pipeline { rec.requests.len() as u64 } else { rec.recorded },
            messages_hashed: rec.messages_hashed,
            hash_matches: rec.hash_matches,
            ..VerifyReport::default()
        };
        let session_id = rec
            .requests
            .first()
            .map(|q| q.session_id.to_string())
            .or_else(|| session.main.as_ref().and_then(|m| m.session_id()).map(str::to_string))
            .unwrap_or_default();
        // An empty file (2.0.x writes them) holds nothing to prove wrong.
        let (approximated, problems): (Vec<&Diagnostic>, Vec<&Diagnostic>) = rec
            .diagnostics
            .iter()
            .filter(|d| d.kind != DiagKind::EmptyFile)
            .partition(|d| matches!(d.kind, DiagKind::ApproximatedProfile | DiagKind::ApproximatedMcp));
        r.approximated_profiles =
            approximated.iter().filter(|d| d.kind == DiagKind::ApproximatedProfile).count() as u64;
        r.approximated_mcp = approximated.iter().filter(|d| d.kind == DiagKind::ApproximatedMcp).count() as u64;
        r.mismatches.extend(problems.into_iter().map(|d| Mismatch::record(&session_id, d)));
        let (ids, captured) = captured_for(wire, &session_id, &rec.requests);
        // The user texts, for the captured sessions no transcript is named
        // after (a 1.0.x resume's side calls carry a session id of their own).
        let held: Vec<String> =
            if wire.is_some() { user_texts(session).into_iter().map(str::to_string).collect() } else { Vec::new() };
        let captured: Option<Vec<&WireRequest>> = captured.map(|all| {
            let texts = user_texts(session);
            let (conversation, side): (Vec<&WireRequest>, Vec<&WireRequest>) =
                all.into_iter().partition(|w| w.first_texts.iter().any(|t| texts.contains(t.trim_end())));
            r.wire_side_calls = side.len() as u64;
            r.wire_requests = conversation.len() as u64;
            conversation
        });
        if let Some(captured) = captured.as_deref() {
            let mut cache = SegmentCache::default();
            let bodies: Vec<Vec<u8>> = rec
                .requests
                .iter()
                .map(|q| {
                    let mut out = Vec::new();
                    write_body(&mut out, &q.body, &mut cache);
                    out
                })
                .collect();
            compare(&mut r, &session_id, &rec.requests, &bodies, captured);
        }
        (r, ids, held)
    });
    let mut total = VerifyReport { with_wire: wire.is_some(), ..VerifyReport::default() };
    let mut seen: std::collections::HashSet<String> = std::collections::HashSet::new();
    let mut held: std::collections::HashSet<String> = std::collections::HashSet::new();
    for res in results {
        let r = match res {
            Ok((r, sids, texts)) => {
                seen.extend(sids);
                held.extend(texts);
                r
            }
            Err(d) => {
                VerifyReport { sessions: 1, mismatches: vec![Mismatch::record("", &d)], ..VerifyReport::default() }
            }
        };
        total.sessions += r.sessions;
        total.pipeline_sessions += r.pipeline_sessions;
        total.requests += r.requests;
        total.messages_hashed += r.messages_hashed;
        total.hash_matches += r.hash_matches;
        total.wire_requests += r.wire_requests;
        total.wire_compared += r.wire_compared;
        total.wire_byte_equal += r.wire_byte_equal;
        total.wire_json_equal += r.wire_json_equal;
        total.wire_unmatched += r.wire_unmatched;
        total.wire_side_calls += r.wire_side_calls;
        total.approximated_profiles += r.approximated_profiles;
        total.approximated_mcp += r.approximated_mcp;
        total.mismatches.extend(r.mismatches);
    }
    let mut unseen: Vec<(&String, &Vec<WireRequest>)> =
        wire.into_iter().flatten().filter(|(sid, _)| !seen.contains(*sid)).collect();
    unseen.sort_by_key(|(sid, _)| *sid);
    for (sid, reqs) in unseen {
        unmatched_session(&mut total, sid, reqs, &held);
    }
    total
}

/// The device of a session's captured requests; for a session whose main
/// file holds no line (a 2.0.x process that only warmed agents up), the
/// capture's (one device sends them all).
fn wire_device(wire: Option<&Wire>, main_sid: &str) -> Option<String> {
    let of = |reqs: &Vec<WireRequest>| reqs.iter().find_map(|r| r.device_id.clone());
    wire.and_then(|w| w.get(main_sid).and_then(of).or_else(|| w.values().find_map(of)))
}

/// Every session id a session's rebuilt requests carry (`session_id`
/// first; a 2.0.x resumed process warms its agents up under an id of its
/// own), and the captured requests of those ids in wire order.
fn captured_for<'w>(
    wire: Option<&'w Wire>,
    session_id: &str,
    requests: &[crate::assemble::Request<'_>],
) -> (Vec<String>, Option<Vec<&'w WireRequest>>) {
    let mut ids = vec![session_id.to_string()];
    for q in requests {
        if !ids.iter().any(|i| i == q.session_id) {
            ids.push(q.session_id.to_string());
        }
    }
    let captured = wire.filter(|_| !session_id.is_empty()).and_then(|w| {
        let mut all: Vec<&WireRequest> = ids.iter().filter_map(|i| w.get(i)).flatten().collect();
        all.sort_by_key(|q| q.line);
        (!all.is_empty()).then_some(all)
    });
    (ids, captured)
}

/// A capture's requests of a session no transcript holds (or whose
/// `user_id` names none): each is unmatched, but for the side calls (no
/// text of its first message is a user text of any transcript read).
fn unmatched_session(
    total: &mut VerifyReport,
    sid: &str,
    reqs: &[WireRequest],
    held: &std::collections::HashSet<String>,
) {
    let conversation = |w: &&WireRequest| w.first_texts.iter().any(|t| held.contains(t.trim_end()));
    total.wire_side_calls += reqs.iter().filter(|w| !conversation(w)).count() as u64;
    let mut lines: Vec<usize> = reqs.iter().filter(conversation).map(|w| w.line).collect();
    lines.sort_unstable();
    for line in lines {
        total.wire_requests += 1;
        total.wire_unmatched += 1;
        let message = if sid.is_empty() {
            format!("captured request on wire line {line}: metadata.user_id names no session")
        } else {
            format!("captured request on wire line {line}: session {sid} is in no transcript read")
        };
        total.mismatches.push(Mismatch {
            kind: "wire_unmatched".into(),
            session: sid.to_string(),
            request: None,
            file: String::new(),
            line,
            path: None,
            expected: None,
            got: None,
            message,
        });
    }
}

/// Every user text of a session's transcripts (string prompts and text
/// blocks), trailing whitespace trimmed.
fn user_texts<'a>(session: &crate::corpus::Session<'a, '_>) -> std::collections::HashSet<&'a str> {
    let mut out = std::collections::HashSet::new();
    for e in session.files().flat_map(|f| f.parsed.entries.iter()) {
        let Some(u) = e.as_user() else { continue };
        if let crate::model::content::Content::Text(t) = u.content {
            out.insert(t.trim_end());
        }
        for b in u.content.blocks() {
            if let crate::model::content::BlockKind::Text { text } = b.kind {
                out.insert(text.trim_end());
            }
        }
    }
    out
}

fn compare(
    r: &mut VerifyReport,
    session_id: &str,
    requests: &[crate::assemble::Request<'_>],
    bodies: &[Vec<u8>],
    captured: &[&WireRequest],
) {
    let mut wire_used = vec![false; captured.len()];
    let mut paired: Vec<Option<usize>> = vec![None; requests.len()];
    // Exact bytes first (subagents interleave with the main chain).
    for (i, body) in bodies.iter().enumerate() {
        if let Some(j) = (0..captured.len()).find(|&j| !wire_used[j] && captured[j].raw == *body) {
            wire_used[j] = true;
            paired[i] = Some(j);
        }
    }
    // Then the rest in order.
    let mut free = (0..captured.len()).filter(|&j| !wire_used[j]).collect::<Vec<_>>().into_iter();
    for p in paired.iter_mut().filter(|p| p.is_none()) {
        if let Some(j) = free.next() {
            wire_used[j] = true;
            *p = Some(j);
        }
    }
    for (i, p) in paired.iter().enumerate() {
        let Some(j) = *p else { continue };
        let (q, w) = (&requests[i], captured[j]);
        r.wire_compared += 1;
        if bodies[i] == w.raw {
            r.wire_byte_equal += 1;
            r.wire_json_equal += 1;
            continue;
        }
        let ours: Value = serde_json::from_slice(&bodies[i]).unwrap_or(Value::Null);
        let theirs: Value = serde_json::from_slice(&w.raw).unwrap_or(Value::Null);
        let mut path = String::from("$");
        let diff = first_difference(&theirs, &ours, &mut path);
        if diff.is_none() {
            r.wire_json_equal += 1;
        }
        let at = bodies[i].iter().zip(&w.raw).position(|(a, b)| a != b).unwrap_or(bodies[i].len().min(w.raw.len()));
        let (path, expected, got) = match diff {
            Some((p, e, g)) => (Some(p), Some(e), Some(g)),
            None => (None, None, None),
        };
        r.mismatches.push(Mismatch {
            kind: "wire".into(),
            session: session_id.to_string(),
            request: Some(q.custom_id.clone()),
            file: q.file.to_string(),
            line: q.line as usize,
            path,
            expected,
            got,
            message: format!(
                "rebuilt body differs from wire line {} at byte {at} ({} vs {} bytes)",
                w.line,
                bodies[i].len(),
                w.raw.len(),
            ),
        });
    }
    for (w, _) in captured.iter().zip(&wire_used).filter(|(_, used)| !**used) {
        r.wire_unmatched += 1;
        r.mismatches.push(Mismatch {
            kind: "wire_unmatched".into(),
            session: session_id.to_string(),
            request: None,
            file: String::new(),
            line: w.line,
            path: None,
            expected: None,
            got: None,
            message: format!("captured request on wire line {} has no recorded request", w.line),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn user_id_in_both_forms() {
        // 2.1.x: JSON text.
        let json = r#"{"device_id":"d0","account_uuid":"","session_id":"s1"}"#;
        assert_eq!(parse_user_id(json), (Some("d0".into()), Some("s1".into())));
        // 1.0.x / 2.0.x (tests/fixtures/cc-2.0.77/hello): no account uuid.
        let legacy = "user_10d7425db43fe3fd51b79e3659ca4c1f3b0887dedddc35095e4d1b55ffd06dd0_account__session_555b3564-8baf-49dd-8578-856d144c65c6";
        assert_eq!(
            parse_user_id(legacy),
            (
                Some("10d7425db43fe3fd51b79e3659ca4c1f3b0887dedddc35095e4d1b55ffd06dd0".into()),
                Some("555b3564-8baf-49dd-8578-856d144c65c6".into())
            )
        );
        let with_account = "user_ab_account_1f2e_session_9c";
        assert_eq!(parse_user_id(with_account), (Some("ab".into()), Some("9c".into())));
        assert_eq!(parse_user_id("someone"), (None, None));
        assert_eq!(parse_user_id("user_ab_account_x_session_"), (Some("ab".into()), None));
    }
}
