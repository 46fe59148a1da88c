//! Assembly: from a parsed session to the request bodies the client sent.
//!
//! [`records`] replays the requests recorded in recent transcripts
//! (`api-request*` entries). Each request is an [`Request`] whose [`Body`]
//! holds arena values in the client's key order; [`write_body`] serializes it
//! byte for byte as the client did, reusing the bytes of static segments
//! (system blocks, tool lists) through a [`SegmentCache`].

pub mod attachments;
pub mod breakpoints;
pub mod contexts;
pub mod driver;
pub mod media;
pub mod normalize;
pub mod pairing;
pub mod pipeline;
pub mod prep;
pub mod projection;
pub mod records;
pub mod system_blocks;
pub mod system_prompt;
pub mod validate;

use crate::json::Json;
use crate::json::writer;

/// A request body: `model, messages, system, tools, metadata`, the other
/// recorded params in their order, then `stream`.
#[derive(Debug, Clone)]
pub struct Body<'a> {
    pub model: Json<'a>,
    pub messages: Vec<&'a Json<'a>>,
    pub system: Vec<&'a Json<'a>>,
    /// Per system block: a key naming its exact bytes (shape hash, index,
    /// cache control), so they are serialized once; `None` = serialize.
    pub system_keys: Vec<Option<u128>>,
    pub tools: Option<&'a Json<'a>>,
    /// The same for the tool list.
    pub tools_key: Option<u128>,
    pub metadata: Json<'a>,
    /// Recorded params other than `model` and `betas`, in recorded order.
    pub params: Vec<(&'a str, Json<'a>)>,
    pub stream: bool,
    /// `anthropic-beta` header values (not part of the body).
    pub betas: Vec<&'a str>,
}

impl<'a> Body<'a> {
    /// A body of just these messages (no system, tools or params).
    pub fn from_messages(messages: Vec<&'a Json<'a>>) -> Self {
        Body {
            model: Json::Null,
            messages,
            system: Vec::new(),
            system_keys: Vec::new(),
            tools: None,
            tools_key: None,
            metadata: Json::Null,
            params: Vec::new(),
            stream: true,
            betas: Vec::new(),
        }
    }
}

/// One assembled request.
#[derive(Debug, Clone)]
pub struct Request<'a> {
    /// `<sessionId>_<n>` or `<sessionId>_<agentId>_<n>` (Message Batches API id).
    pub custom_id: String,
    pub session_id: &'a str,
    pub agent_id: Option<&'a str>,
    /// 0-based index in its chain.
    pub index: usize,
    /// Where it was recorded.
    pub file: &'a str,
    pub line: u32,
    pub timestamp: Option<&'a str>,
    pub body: Body<'a>,
}

/// Cache of serialized static segments (shape system blocks, tool lists),
/// keyed by a stable key ([`Body::system_keys`], [`Body::tools_key`]):
/// each distinct one is serialized once per thread and reused as bytes.
#[derive(Default)]
pub struct SegmentCache {
    map: rustc_hash::FxHashMap<u128, (u128, std::sync::Arc<[u8]>)>,
}

/// The cache forgets everything past this many entries (distinct shapes are
/// few; this only bounds a pathological corpus).
const CACHE_LIMIT: usize = 4096;

impl SegmentCache {
    /// Serialized bytes and content hash (xxh3-128) of `v`, cached under `key`.
    pub fn get(&mut self, key: Option<u128>, v: &Json<'_>) -> (u128, std::sync::Arc<[u8]>) {
        let Some(key) = key else {
            let bytes = writer::to_vec(v);
            return (xxhash_rust::xxh3::xxh3_128(&bytes), bytes.into());
        };
        if let Some(hit) = self.map.get(&key) {
            return hit.clone();
        }
        if self.map.len() >= CACHE_LIMIT {
            self.map.clear();
        }
        let bytes = writer::to_vec(v);
        let entry = (xxhash_rust::xxh3::xxh3_128(&bytes), std::sync::Arc::<[u8]>::from(bytes));
        self.map.insert(key, entry.clone());
        entry
    }
}

/// `{"model":…,"messages":[` — the bytes before the first message.
pub fn body_head(out: &mut Vec<u8>, body: &Body<'_>) {
    out.extend_from_slice(b"{\"model\":");
    writer::write(out, &body.model);
    out.extend_from_slice(b",\"messages\":[");
}

/// Everything after the tool list: metadata, params, stream, `}`.
pub fn body_tail(out: &mut Vec<u8>, body: &Body<'_>) {
    out.extend_from_slice(b",\"metadata\":");
    writer::write(out, &body.metadata);
    for (k, v) in &body.params {
        out.push(b',');
        writer::write_str(out, k);
        out.push(b':');
        writer::write(out, v);
    }
    if body.stream {
        out.extend_from_slice(b",\"stream\":true");
    }
    out.push(b'}');
}

/// Serialize `body` as the client did; static segments come from `cache`.
pub fn write_body(out: &mut Vec<u8>, body: &Body<'_>, cache: &mut SegmentCache) {
    write_body_reusing(out, body, cache, &mut MessageSpans::default());
}

/// Where each message node was already written in an output buffer
/// (offset, length), so a message kept across a session's requests is
/// copied instead of serialized again. Valid for one buffer that only grows.
#[derive(Default)]
pub struct MessageSpans {
    map: rustc_hash::FxHashMap<usize, (usize, usize)>,
}

/// [`write_body`] into a buffer that already holds earlier requests of the
/// same session: messages written before (same node) are copied from it.
pub fn write_body_reusing(out: &mut Vec<u8>, body: &Body<'_>, cache: &mut SegmentCache, spans: &mut MessageSpans) {
    body_head(out, body);
    for (i, m) in body.messages.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        let key = *m as *const Json<'_> as usize;
        match spans.map.get(&key) {
            Some(&(at, len)) if at + len <= out.len() => out.extend_from_within(at..at + len),
            _ => {
                let at = out.len();
                writer::write(out, m);
                spans.map.insert(key, (at, out.len() - at));
            }
        }
    }
    out.extend_from_slice(b"],\"system\":[");
    for (i, s) in body.system.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        let key = body.system_keys.get(i).copied().flatten();
        if key.is_some() {
            out.extend_from_slice(&cache.get(key, s).1);
        } else {
            writer::write(out, s);
        }
    }
    out.push(b']');
    if let Some(tools) = body.tools {
        out.extend_from_slice(b",\"tools\":");
        if body.tools_key.is_some() {
            out.extend_from_slice(&cache.get(body.tools_key, tools).1);
        } else {
            writer::write(out, tools);
        }
    }
    body_tail(out, body);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn body_layout_and_cache_reuse() {
        let msgs = [Json::Str("m1"), Json::Str("m2")];
        let sys = [Json::Str("s")];
        let tools = Json::Arr(&[]);
        let body = Body {
            model: Json::Str("claude"),
            messages: msgs.iter().collect(),
            system: sys.iter().collect(),
            system_keys: vec![Some(7)],
            tools: Some(&tools),
            tools_key: Some(8),
            metadata: Json::Obj(&[("user_id", Json::Str("{\"x\":1}"))]),
            params: vec![("max_tokens", Json::U64(5))],
            stream: true,
            betas: vec![],
        };
        let mut cache = SegmentCache::default();
        let mut out = Vec::new();
        write_body(&mut out, &body, &mut cache);
        assert_eq!(
            String::from_utf8(out.clone()).unwrap(),
            r#"{"model":"claude","messages":["m1","m2"],"system":["s"],"tools":[],"metadata":{"user_id":"{\"x\":1}"},"max_tokens":5,"stream":true}"#
        );
        // A second body with the same keys reuses the cached bytes.
        let other = [Json::Str("not used")];
        let body2 = Body { system: other.iter().collect(), ..body.clone() };
        let mut out2 = Vec::new();
        write_body(&mut out2, &body2, &mut cache);
        assert_eq!(out2, out);
    }
}
