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
use super::{Body, Request};
use crate::corpus::{ParsedFile, Session};
use crate::diag::{DiagKind, Diagnostic};
use crate::json::Json;
use crate::json::writer::{hex, message_hash, parse_sha256};
use crate::model::entry::{Entry, EntryKind};
use crate::model::messages::assistant_messages;
use crate::profile::MetadataForm;
use bumpalo::Bump;
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
    let mut shapes: HashMap<&'a str, &'a Json<'a>> = HashMap::new();
    let mut blobs: HashMap<[u8; 32], &'a Json<'a>> = HashMap::new();
    for f in session.files() {
        for e in &f.parsed.entries {
            match e.kind {
                EntryKind::ApiRequestShape { shape_hash: Some(h), shape: Some(s) } => {
                    let got = hex(&message_hash(s, &mut scratch));
                    if got != h {
                        out.diagnostics.push(Diagnostic::new(
                            f.file.display.as_str(),
                            e.line,
                            DiagKind::RecordMismatch,
                            format!("api-request-shape {h} hashes to {got}"),
                        ));
                    }
                    shapes.insert(h, s);
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

#[allow(clippy::too_many_arguments)]
fn replay_chain<'a>(
    bump: &'a Bump,
    chain: &Chain<'a, '_>,
    session: &Session<'a, '_>,
    shapes: &HashMap<&'a str, &'a Json<'a>>,
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
    // Canonical messages (no cache control) of each request, by id.
    let mut sent: HashMap<&'a str, Vec<&'a Json<'a>>> = HashMap::new();
    // Wire forms of canonical messages, so a message kept across requests
    // is one node (and one dedup segment).
    let mut collapsed: HashMap<*const Json<'a>, &'a Json<'a>> = HashMap::new();
    let mut n = 0usize;
    for e in entries {
        let EntryKind::ApiRequest(r) = &e.kind else { continue };
        out.recorded += 1;
        let fail = |msg: String| Diagnostic::new(display, e.line, DiagKind::RecordMismatch, msg);
        let rid = r.id.unwrap_or("?");
        let mut messages = match kept_messages(r, &sent) {
            Ok(m) => m,
            Err(msg) => {
                out.diagnostics.push(fail(format!("api-request {rid}{msg}")));
                n += 1;
                continue;
            }
        };
        let mut tail =
            TailLookup { bump, entries, blobs, candidates: &mut candidates, verified: &mut verified, scratch };
        let complete = tail.resolve(r, n, &mut messages, out, &fail);
        if !complete {
            n += 1;
            continue;
        }
        if let Some(id) = r.id {
            sent.insert(id, messages.clone());
        }
        let Some(shape) = r.shape_hash.and_then(|h| shapes.get(h)) else {
            out.diagnostics.push(fail(format!("api-request {rid}: shape {:?} is not recorded", r.shape_hash)));
            n += 1;
            continue;
        };
        match build_body(bump, e, r, shape, messages, entrypoint, opts, &mut collapsed) {
            Ok(body) => {
                let session_id = e.env.session_id.unwrap_or("");
                out.requests.push(Request {
                    custom_id: custom_id(&id_session_part(chain.file.file, session_id), chain.agent_id, n),
                    session_id,
                    agent_id: chain.agent_id,
                    index: n,
                    file: display,
                    line: e.line,
                    timestamp: e.env.timestamp,
                    body,
                });
            }
            Err(msg) => out.diagnostics.push(fail(format!("api-request {rid}: {msg}"))),
        }
        n += 1;
    }
}

/// The messages a request keeps of its base request (`base`, `keep`); the
/// error is the text after `api-request <id>`.
fn kept_messages<'a>(
    r: &crate::model::entry::ApiRequest<'a>,
    sent: &HashMap<&'a str, Vec<&'a Json<'a>>>,
) -> Result<Vec<&'a Json<'a>>, String> {
    let Some(base) = r.base else { return Ok(Vec::new()) };
    let Some(prev) = sent.get(base) else { return Err(format!(": base request {base} is not in the chain")) };
    let keep = r.keep.map_or(prev.len(), |k| k as usize);
    if keep > prev.len() {
        return Err(format!(" keeps {keep} messages of {base}, which had {}", prev.len()));
    }
    Ok(prev[..keep].to_vec())
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
    /// Append the messages of `r.tail` to `messages`; false (with a
    /// diagnostic per miss) when one is not found.
    fn resolve(
        &mut self,
        r: &crate::model::entry::ApiRequest<'a>,
        n: usize,
        messages: &mut Vec<&'a Json<'a>>,
        out: &mut SessionRecords<'a>,
        fail: &dyn Fn(String) -> Diagnostic,
    ) -> bool {
        let rid = r.id.unwrap_or("?");
        let mut complete = true;
        for (pos, h) in r.tail.iter().enumerate() {
            out.messages_hashed += 1;
            let Some(key) = parse_sha256(h) else {
                out.diagnostics.push(fail(format!("api-request {rid}: tail[{pos}] is not a SHA-256: {h:?}")));
                complete = false;
                continue;
            };
            match self.find(key) {
                Some(m) => {
                    out.hash_matches += 1;
                    messages.push(m);
                }
                None => {
                    out.diagnostics.push(fail(format!(
                        "api-request {rid} (request {n} of its chain): tail[{pos}] = message {} of the request, hash {h}, matches no blob and no message rebuilt from the transcript",
                        messages.len() + pos
                    )));
                    complete = false;
                }
            }
        }
        complete
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

#[allow(clippy::too_many_arguments)]
fn build_body<'a>(
    bump: &'a Bump,
    e: &Entry<'a>,
    r: &crate::model::entry::ApiRequest<'a>,
    shape: &'a Json<'a>,
    canonical: Vec<&'a Json<'a>>,
    entrypoint: &str,
    opts: &RecordOptions,
    collapsed: &mut HashMap<*const Json<'a>, &'a Json<'a>>,
) -> Result<Body<'a>, String> {
    let version = e.env.version.unwrap_or("");
    let first_text = canonical.first().map_or("", |m| first_user_text(m));
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
    let mut messages: Vec<Json<'a>> = canonical.iter().map(|m| **m).collect();
    let mut touched = vec![false; messages.len()];
    // Cache keys of the static segments: what the bytes depend on.
    let shape_hash = r.shape_hash.unwrap_or("");
    let mut system_key_text: Vec<Option<String>> =
        (0..system.len()).map(|i| (i > 0).then(|| format!("{shape_hash}/system/{i}"))).collect();
    let mut tools_key_text = format!("{shape_hash}/tools");
    let mut target = CacheTargets {
        messages: &mut messages,
        touched: &mut touched,
        system: &mut system,
        system_key_text: &mut system_key_text,
        tools: &mut tools,
        tools_key_text: &mut tools_key_text,
    };
    for cc in r.cache_control.and_then(Json::as_array).unwrap_or(&[]) {
        target.apply(bump, cc)?;
    }
    let messages: Vec<&'a Json<'a>> = messages
        .into_iter()
        .zip(canonical)
        .zip(touched)
        .map(|((m, orig), touched)| {
            if touched {
                collapse(bump, bump.alloc(m))
            } else {
                *collapsed.entry(orig as *const Json<'a>).or_insert_with(|| collapse(bump, orig))
            }
        })
        .collect();
    let key = |text: &str| xxhash_rust::xxh3::xxh3_128(text.as_bytes());
    let params = r.params.and_then(Json::as_object).unwrap_or(&[]);
    let model = params.iter().find(|(k, _)| *k == "model").map_or(Json::Null, |(_, v)| *v);
    let betas = params
        .iter()
        .find(|(k, _)| *k == "betas")
        .and_then(|(_, v)| v.as_array())
        .map(|b| b.iter().filter_map(Json::as_str).collect())
        .unwrap_or_default();
    Ok(Body {
        model,
        messages,
        lead_params: Vec::new(),
        system: system.into_iter().map(|s| &*bump.alloc(s)).collect(),
        system_keys: system_key_text.iter().map(|k| k.as_deref().filter(|_| !shape_hash.is_empty()).map(key)).collect(),
        tools: tools.map(|t| &*bump.alloc(t)),
        tools_key: (!shape_hash.is_empty()).then(|| key(&tools_key_text)),
        metadata: wire::metadata(bump, opts, e.env.session_id.unwrap_or(""), MetadataForm::JsonUserId),
        params: params.iter().filter(|(k, _)| *k != "model" && *k != "betas").copied().collect(),
        stream: true,
        betas,
        cch_seed: None,
    })
}

/// What a request's `cacheControl` paths may name, and the segment keys
/// that must change with them.
struct CacheTargets<'a, 'r> {
    messages: &'r mut Vec<Json<'a>>,
    touched: &'r mut Vec<bool>,
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
            Some("messages") | Some("system") => {
                let is_messages = root.as_str() == Some("messages");
                let list = if is_messages { &mut *self.messages } else { &mut *self.system };
                let i = idx.as_u64().and_then(|i| usize::try_from(i).ok()).ok_or_else(bad)?;
                // System paths index the shape's blocks: the billing header
                // is put in front of them afterwards.
                let i = if is_messages { i } else { i + 1 };
                let target = list.get(i).ok_or_else(bad)?;
                list[i] = set_cache_control(bump, target, inner, value).ok_or_else(bad)?;
                if is_messages {
                    self.touched[i] = true;
                } else if let Some(Some(k)) = self.system_key_text.get_mut(i) {
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
