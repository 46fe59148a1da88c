//! A request body's bytes, as the client wrote them: `{"model":…,
//! "messages":[…],"system":[…],"tools":…,"metadata":…,<params>,
//! "stream":true}`, with [`crate::json::writer`] for every value.
//!
//! Static segments (shape system blocks, tool lists) are serialized once per
//! thread through a [`SegmentCache`]; a message node kept across a session's
//! requests is copied from where it was written before ([`MessageSpans`]).

use crate::assemble::Body;
use crate::assemble::wire::{CCH_PLACEHOLDER, attest};
use crate::json::{Json, writer};

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
    /// Content hash (xxh3-128) of `v` and, cached under `key`, its bytes;
    /// without a key the bytes are written into `scratch` (cleared first) and
    /// not kept: a segment serialized once per session needs no allocation
    /// of its own until the caller finds it new.
    pub fn id_into(
        &mut self,
        key: Option<u128>,
        v: &Json<'_>,
        scratch: &mut Vec<u8>,
    ) -> (u128, Option<std::sync::Arc<[u8]>>) {
        if key.is_none() {
            scratch.clear();
            writer::write(scratch, v);
            return (xxhash_rust::xxh3::xxh3_128(scratch), None);
        }
        let (id, bytes) = self.get(key, v);
        (id, Some(bytes))
    }

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

/// The lead params (`,"temperature":1` of 1.0.x), between the messages'
/// `]` and `,"system":[`; nothing for a body without them.
pub fn body_mid(out: &mut Vec<u8>, body: &Body<'_>) {
    for (k, v) in body.lead_params.iter() {
        out.push(b',');
        writer::write_str(out, k);
        out.push(b':');
        writer::write(out, v);
    }
}

/// Everything after the tool list: metadata, params, stream, `}`.
pub fn body_tail(out: &mut Vec<u8>, body: &Body<'_>) {
    out.extend_from_slice(b",\"metadata\":");
    writer::write(out, &body.metadata);
    for (k, v) in body.params.iter() {
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

impl MessageSpans {
    /// The buffer's first `n` bytes are gone (handed to the writer): spans
    /// in them are forgotten, the others move down.
    pub fn cut(&mut self, n: usize) {
        self.map.retain(|_, (at, _)| {
            let keep = *at >= n;
            *at = at.wrapping_sub(n);
            keep
        });
    }
}

/// [`write_body`] into a buffer that already holds earlier requests of the
/// same session: messages written before (same node) are copied from it.
pub fn write_body_reusing(out: &mut Vec<u8>, body: &Body<'_>, cache: &mut SegmentCache, spans: &mut MessageSpans) {
    let start = out.len();
    let system_at = write_placeholder_body(out, body, cache, spans);
    if let Some(seed) = body.cch_seed {
        attest_in_place(&mut out[start..], system_at - start, seed);
    }
}

/// The body as the client writes it before attesting; returns where
/// `system`'s first block starts in `out`.
fn write_placeholder_body(
    out: &mut Vec<u8>,
    body: &Body<'_>,
    cache: &mut SegmentCache,
    spans: &mut MessageSpans,
) -> usize {
    body_head(out, body);
    for (i, m) in body.messages.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        let key = m as *const Json<'_> as usize;
        match spans.map.get_mut(&key) {
            Some(span) if span.0 + span.1 <= out.len() => {
                // From its last copy: the bytes before may be cut.
                let (at, len) = *span;
                span.0 = out.len();
                out.extend_from_within(at..at + len);
            }
            _ => {
                let at = out.len();
                writer::write(out, m);
                spans.map.insert(key, (at, out.len() - at));
            }
        }
    }
    out.push(b']');
    body_mid(out, body);
    out.extend_from_slice(b",\"system\":[");
    let system_at = out.len();
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
    system_at
}

/// The native client's attestation: the first `cch=00000` from `from` on
/// (the billing block, which opens `system`) gets the attested value of
/// the whole body as written with the placeholder.
fn attest_in_place(body: &mut [u8], from: usize, seed: u64) {
    let Some(at) = body.get(from..).and_then(|b| memchr::memmem::find(b, CCH_PLACEHOLDER)) else { return };
    let cch = attest(body, seed);
    let digits = from + at + b"cch=".len();
    if let Some(slot) = body.get_mut(digits..digits + cch.len()) {
        slot.copy_from_slice(cch.as_bytes());
    }
}

/// The attested billing block of `body` (its first system block with the
/// placeholder replaced), for the dedup format, whose segments hold what
/// the batch line would; `None` when the body is not attested.
pub fn attested_header(body: &Body<'_>, cache: &mut SegmentCache) -> Option<Vec<u8>> {
    let seed = body.cch_seed?;
    let mut full = Vec::new();
    let system_at = write_placeholder_body(&mut full, body, cache, &mut MessageSpans::default());
    let mut block = writer::to_vec(body.system.first()?);
    if memchr::memmem::find(&block, CCH_PLACEHOLDER).is_none() || !full.get(system_at..)?.starts_with(&block) {
        return None;
    }
    attest_in_place(&mut full, system_at, seed);
    let n = block.len();
    block.copy_from_slice(full.get(system_at..system_at + n)?);
    Some(block)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::Json;

    #[test]
    fn an_attested_body_has_the_hash_of_its_placeholder_bytes() {
        let header = [Json::Obj(&[("text", Json::Str("h; cch=00000;"))])];
        let msgs = [Json::Str("cch=00000")];
        let body = Body {
            model: Json::Str("m"),
            messages: msgs.iter().collect(),
            shared: 0,
            system: header.iter().collect(),
            system_keys: vec![None].into(),
            tools: None,
            tools_key: None,
            metadata: Json::Null,
            lead_params: vec![].into(),
            params: vec![].into(),
            stream: true,
            betas: vec![].into(),
            cch_seed: Some(7),
        };
        let mut cache = SegmentCache::default();
        let mut plain = Vec::new();
        write_body(&mut plain, &Body { cch_seed: None, ..body.clone() }, &mut cache);
        let mut out = Vec::new();
        write_body(&mut out, &body, &mut cache);
        // Only the billing block's placeholder (after the messages) changes.
        let cch = attest(&plain, 7);
        let want = String::from_utf8(plain.clone()).unwrap().replace("h; cch=00000;", &format!("h; cch={cch};"));
        assert_eq!(String::from_utf8(out).unwrap(), want);
        assert_eq!(attested_header(&body, &mut cache).unwrap(), format!("{{\"text\":\"h; cch={cch};\"}}").into_bytes());
        assert_eq!(attested_header(&Body { cch_seed: None, ..body }, &mut cache), None);
    }

    #[test]
    fn body_layout_and_cache_reuse() {
        let msgs = [Json::Str("m1"), Json::Str("m2")];
        let sys = [Json::Str("s")];
        let tools = Json::Arr(&[]);
        let body = Body {
            model: Json::Str("claude"),
            messages: msgs.iter().collect(),
            shared: 0,
            lead_params: vec![].into(),
            system: sys.iter().collect(),
            system_keys: vec![Some(7)].into(),
            tools: Some(&tools),
            tools_key: Some(8),
            metadata: Json::Obj(&[("user_id", Json::Str("{\"x\":1}"))]),
            params: vec![("max_tokens", Json::U64(5))].into(),
            stream: true,
            betas: vec![].into(),
            cch_seed: None,
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
