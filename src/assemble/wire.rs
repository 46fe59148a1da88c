//! Wire rules shared by record replay and the pipeline: the identity in
//! `metadata.user_id`, the billing header, the plain-string form of
//! one-block messages, the requests' custom ids, and the arena builders of
//! text blocks and messages. Each rule is written once here; `records` and the
//! pipeline's stages call it.
//!
//! The billing header is `x-anthropic-billing-header: cc_version=<version>.<3
//! hex>; cc_entrypoint=<entrypoint>;<extra>` (`extra` is 2.1.88's
//! ` cch=00000;`). The 3 hex are the first three hex digits of
//! SHA-256(salt + c4 + c7 + c20 + version), where cN is the Nth character
//! (UTF-16 unit) of the first user text (which text: the profile's
//! `billing.suffix_text`) or `0` when the text is shorter; the salt is the
//! profile's (`59cf53e54c78` in every release captured). This rule is
//! described publicly by third parties; it was checked here on all 28
//! captured sessions of `../shared/corpora`.

use crate::json::Json;
use crate::json::writer::{self, hex};
use crate::profile::MetadataForm;
use bumpalo::Bump;
use sha2::{Digest, Sha256};

/// The salt of the billing header suffix of every release captured (the
/// default of a profile's `billing.salt`; record replay, which has no
/// profile, uses it too).
pub const BILLING_SALT: &str = "59cf53e54c78";

/// What a 2.1.3xx subagent request's billing header adds after
/// `cc_entrypoint=…;` (records mode, which has no profile: every request
/// whose `api-request` record's `querySource` is `agent:…` carries it in
/// the `subagent-bash` captures of 2.1.328 and 2.1.332; the pipeline
/// takes it from the profile, `Billing::subagent`).
pub const SUBAGENT_BILLING_FLAG: &str = " cc_is_subagent=true;";

/// Whether a record's `querySource` is a subagent's (`agent:builtin:general-purpose`).
pub fn is_agent_query(query_source: Option<&str>) -> bool {
    query_source.is_some_and(|q| q.starts_with("agent:"))
}

/// Seeds of the native client's `cch` attestation ([`attest`]) tried on a
/// capture by `profile extract`; the one that reproduces every captured
/// `cch` goes into the profile (`billing.cch_seed`). The first was checked
/// on the 2.1.150 captures; the second is one third parties describe for
/// earlier native builds, kept so their captures can be recognised.
pub const CCH_SEEDS: &[u64] = &[0x4d65_9218_e32a_3268, 0x6e52_736a_c806_831e];

/// The placeholder the client writes before attesting.
pub const CCH_PLACEHOLDER: &[u8] = b"cch=00000";

/// The attested `cch` of a body written with [`CCH_PLACEHOLDER`]: the low
/// 20 bits of xxHash64(body, seed), as 5 hex digits.
pub fn attest(body: &[u8], seed: u64) -> String {
    format!("{:05x}", xxhash_rust::xxh64::xxh64(body, seed) & 0xf_ffff)
}

/// The seed of [`CCH_SEEDS`] that gives every `(body with the
/// placeholder, captured cch)` pair, if one does.
pub fn find_cch_seed(samples: &[(Vec<u8>, String)]) -> Option<u64> {
    if samples.is_empty() {
        return None;
    }
    CCH_SEEDS.iter().copied().find(|&s| samples.iter().all(|(body, cch)| &attest(body, s) == cch))
}

/// Identity fields the transcript does not hold.
#[derive(Debug, Clone)]
pub struct RecordOptions {
    /// `metadata.user_id.device_id`.
    pub device_id: String,
    /// `metadata.user_id.account_uuid` (empty for API-key users).
    pub account_uuid: String,
}

/// Used when no device id is given and `~/.claude.json` has none.
pub const PLACEHOLDER_DEVICE_ID: &str = "0000000000000000000000000000000000000000000000000000000000000000";

impl Default for RecordOptions {
    fn default() -> Self {
        Self { device_id: PLACEHOLDER_DEVICE_ID.to_string(), account_uuid: String::new() }
    }
}

/// `{"type":"text","text":…}`.
pub fn text_block<'a>(bump: &'a Bump, text: &'a str) -> Json<'a> {
    Json::Obj(bump.alloc_slice_copy(&[("type", Json::Str("text")), ("text", Json::Str(text))]))
}

/// `{role, content, …extra}`.
pub fn message<'a>(bump: &'a Bump, role: &'a str, blocks: &[Json<'a>], extra: &[(&'a str, Json<'a>)]) -> &'a Json<'a> {
    let mut members: Vec<(&'a str, Json<'a>)> =
        vec![("role", Json::Str(role)), ("content", Json::Arr(bump.alloc_slice_copy(blocks)))];
    members.extend_from_slice(extra);
    bump.alloc(Json::Obj(bump.alloc_slice_copy(&members)))
}

/// `obj` with member `key` set to `value` (replaced in place, else appended).
pub fn with_member<'a>(bump: &'a Bump, obj: &Json<'a>, key: &'a str, value: Json<'a>) -> Option<Json<'a>> {
    let members = obj.as_object()?;
    let mut out: Vec<(&'a str, Json<'a>)> = members.to_vec();
    match out.iter_mut().find(|(k, _)| *k == key) {
        Some(slot) => slot.1 = value,
        None => out.push((key, value)),
    }
    Some(Json::Obj(bump.alloc_slice_copy(&out)))
}

/// The billing header's text: `x-anthropic-billing-header:
/// cc_version=<version>.<suffix>; cc_entrypoint=<entrypoint>;<extra>`.
pub fn billing_header(version: &str, suffix: &str, entrypoint: &str, extra: &str) -> String {
    format!("x-anthropic-billing-header: cc_version={version}.{suffix}; cc_entrypoint={entrypoint};{extra}")
}

/// The billing header's 3-hex suffix for a first user text.
pub fn billing_suffix(salt: &str, first_text: &str, version: &str) -> String {
    // Only the first 21 UTF-16 units are read (the text may be long).
    let units: smallvec::SmallVec<[u16; 21]> = first_text.encode_utf16().take(21).collect();
    let mut h = Sha256::new();
    h.update(salt.as_bytes());
    for i in [4usize, 7, 20] {
        match units.get(i) {
            Some(&u) => {
                let s = String::from_utf16_lossy(&[u]);
                h.update(s.as_bytes());
            }
            None => h.update(b"0"),
        }
    }
    h.update(version.as_bytes());
    let digest: [u8; 32] = h.finalize().into();
    hex(&digest)[..3].to_string()
}

/// The first text of a message's content that is not a `<system-reminder>`.
pub fn first_user_text<'a>(msg: &Json<'a>) -> &'a str {
    match msg.get("content") {
        Some(Json::Str(s)) => s,
        Some(Json::Arr(blocks)) => blocks
            .iter()
            .filter(|b| b.get_str("type") == Some("text"))
            .filter_map(|b| b.get_str("text"))
            .find(|t| !t.starts_with("<system-reminder>"))
            .unwrap_or(""),
        _ => "",
    }
}

/// The wire form of a message without cache control: a user or system
/// message made of one plain text block is sent as a string.
pub fn collapse<'a>(bump: &'a Bump, m: &'a Json<'a>) -> &'a Json<'a> {
    let role = m.get_str("role");
    if !matches!(role, Some("user") | Some("system")) {
        return m;
    }
    let Some(Json::Arr([block])) = m.get("content") else { return m };
    let plain = matches!(
        block.as_object(),
        Some(
            [("type", Json::Str("text")), ("text", Json::Str(_))]
                | [("text", Json::Str(_)), ("type", Json::Str("text"))]
        )
    );
    if !plain {
        return m;
    }
    let Some(text) = block.get("text") else { return m };
    match with_member(bump, m, "content", *text) {
        Some(v) => bump.alloc(v),
        None => m,
    }
}

/// The session part of the custom ids of `file`'s requests: the session id,
/// and the file's name too when the file is a main transcript not named
/// `<session id>.jsonl` (an excerpt or a copy: real transcripts always are),
/// so two files that carry one session id never give the same id.
pub fn id_session_part<'s>(
    file: &crate::input::discover::TranscriptFile,
    session_id: &'s str,
) -> std::borrow::Cow<'s, str> {
    if file.is_subagent() {
        return std::borrow::Cow::Borrowed(session_id);
    }
    match file.path.file_stem().and_then(|s| s.to_str()) {
        Some(stem) if !stem.is_empty() && stem != session_id => std::borrow::Cow::Owned(format!("{session_id}_{stem}")),
        _ => std::borrow::Cow::Borrowed(session_id),
    }
}

/// A custom_id valid for the Message Batches API (`[A-Za-z0-9_-]{1,64}`).
pub fn custom_id(session_id: &str, agent_id: Option<&str>, n: usize) -> String {
    let clean = |s: &str| -> String {
        s.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '_' { c } else { '-' }).collect()
    };
    let mut id = match agent_id {
        Some(a) => format!("{}_{}_{n}", clean(session_id), clean(a)),
        None => format!("{}_{n}", clean(session_id)),
    };
    if id.len() <= 64 {
        // One per request, kept while the session is written: its length,
        // not the capacity `format!` grew to (72 bytes for a 41-byte id).
        id.shrink_to_fit();
        return id;
    }
    // Too long: keep a prefix and make it unique with a hash of the whole.
    let h = xxhash_rust::xxh3::xxh3_64(id.as_bytes());
    let tail = format!("_{h:016x}_{n}");
    format!("{}{tail}", &id[..64 - tail.len()])
}

/// Make the custom ids of one session's requests unique (the Message
/// Batches API refuses a batch that repeats one): a request whose id an
/// earlier request has — two files of the session with one agent id (a
/// subagent transcript copied into a workflow run), ids that differ only in
/// characters a batch id cannot hold — gets `_dup<k>` appended (the id cut
/// to stay within 64 characters), with the first `k` that makes an id no
/// request of the session has. Ids that are already unique are unchanged.
pub fn unique_custom_ids(requests: &mut [super::Request<'_>]) {
    let mut taken: std::collections::HashSet<String> = requests.iter().map(|r| r.custom_id.clone()).collect();
    if taken.len() == requests.len() {
        return;
    }
    let mut seen = std::collections::HashSet::new();
    for r in requests.iter_mut() {
        if seen.insert(r.custom_id.clone()) {
            continue;
        }
        let fresh = (1usize..)
            .map(|k| {
                let suffix = format!("_dup{k}");
                let keep: String = r.custom_id.chars().take(64 - suffix.len()).collect();
                keep + &suffix
            })
            .find(|id| !taken.contains(id));
        let Some(id) = fresh else { continue };
        taken.insert(id.clone());
        seen.insert(id.clone());
        r.custom_id = id;
    }
}

/// The first text of a message's content (a string content, or the first
/// block that has a `text`), reminder or not (2.1.88's billing text).
pub fn first_block_text<'a>(m: &Json<'a>) -> &'a str {
    match m.get("content") {
        Some(Json::Str(s)) => s,
        Some(Json::Arr(blocks)) => blocks.iter().find_map(|b| b.get_str("text")).unwrap_or(""),
        _ => "",
    }
}

/// `metadata`: `{"user_id": …}`, the JSON text
/// `{"device_id":…,"account_uuid":…,"session_id":…}` of 2.1.x or the
/// string `user_<device>_account_<uuid>_session_<uuid>` of 1.0.x/2.0.x.
pub fn metadata<'a>(bump: &'a Bump, identity: &RecordOptions, session_id: &str, form: MetadataForm) -> Json<'a> {
    let text = match form {
        MetadataForm::JsonUserId => {
            let mut s = Vec::with_capacity(160);
            s.extend_from_slice(b"{\"device_id\":");
            writer::write_str(&mut s, &identity.device_id);
            s.extend_from_slice(b",\"account_uuid\":");
            writer::write_str(&mut s, &identity.account_uuid);
            s.extend_from_slice(b",\"session_id\":");
            writer::write_str(&mut s, session_id);
            s.push(b'}');
            String::from_utf8_lossy(&s).into_owned()
        }
        MetadataForm::LegacyUserId => {
            format!("user_{}_account_{}_session_{session_id}", identity.device_id, identity.account_uuid)
        }
    };
    Json::Obj(bump.alloc_slice_copy(&[("user_id", Json::Str(bump.alloc_str(&text)))]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repeated_custom_ids_are_made_unique_and_others_kept() {
        let req = |id: &str| super::super::Request {
            custom_id: id.to_string(),
            session_id: "s",
            agent_id: None,
            index: 0,
            file: "f",
            line: 1,
            timestamp: None,
            body: super::super::Body::from_messages(Vec::new()),
        };
        let long = "x".repeat(64);
        let ids = ["s_a_0", "s_a_1", "s_a_0", "s_a_0_dup1", "s_a_0", long.as_str(), long.as_str()];
        let mut requests: Vec<_> = ids.iter().map(|id| req(id)).collect();
        unique_custom_ids(&mut requests);
        let got: Vec<&str> = requests.iter().map(|r| r.custom_id.as_str()).collect();
        let cut = format!("{}_dup1", "x".repeat(59));
        // An id a request already has is never given to another one.
        assert_eq!(got, ["s_a_0", "s_a_1", "s_a_0_dup2", "s_a_0_dup1", "s_a_0_dup3", long.as_str(), cut.as_str()]);
        assert!(got.iter().all(|id| id.len() <= 64));
    }

    #[test]
    fn a_subagent_record_is_one_whose_query_source_names_an_agent() {
        assert!(is_agent_query(Some("agent:builtin:general-purpose")));
        assert!(!is_agent_query(Some("sdk")));
        assert!(!is_agent_query(Some("compact")));
        assert!(!is_agent_query(None));
        assert_eq!(
            billing_header("2.1.328", "ccf", "sdk-cli", SUBAGENT_BILLING_FLAG),
            "x-anthropic-billing-header: cc_version=2.1.328.ccf; cc_entrypoint=sdk-cli; cc_is_subagent=true;"
        );
    }

    #[test]
    fn attestation_seed_is_found_only_when_every_sample_agrees() {
        let body = b"{\"system\":[{\"text\":\"cch=00000;\"}]}".to_vec();
        let good = attest(&body, CCH_SEEDS[0]);
        assert_eq!(good.len(), 5);
        assert_eq!(find_cch_seed(&[(body.clone(), good.clone())]), Some(CCH_SEEDS[0]));
        let other = attest(&body, CCH_SEEDS[1]);
        assert_eq!(find_cch_seed(&[(body.clone(), other)]), Some(CCH_SEEDS[1]));
        assert_eq!(find_cch_seed(&[(body.clone(), good), (body, "00000".into())]), None);
        assert_eq!(find_cch_seed(&[]), None);
    }

    #[test]
    fn billing_suffix_matches_captured_headers() {
        // (first prompt, suffix) pairs from the 2.1.328 captures' wire.jsonl.
        for (text, want) in [
            ("hi", "ce7"),
            ("hello", "661"),
            ("compare a.txt and b.txt", "3b3"),
            ("first: show notes", "f3c"),
            ("what year is it per the shell?", "a63"),
        ] {
            assert_eq!(billing_suffix(BILLING_SALT, text, "2.1.328"), want, "{text}");
        }
        // 2.1.88 hashed its first block, the skills reminder: always e09.
        assert_eq!(
            billing_suffix(BILLING_SALT, "<system-reminder>\nThe following skills are available", "2.1.88"),
            "e09"
        );
    }

    #[test]
    fn metadata_forms() {
        let bump = Bump::new();
        let id = RecordOptions { device_id: "d0".into(), account_uuid: String::new() };
        let json = metadata(&bump, &id, "s1", MetadataForm::JsonUserId);
        assert_eq!(
            writer::to_vec(&json),
            br#"{"user_id":"{\"device_id\":\"d0\",\"account_uuid\":\"\",\"session_id\":\"s1\"}"}"#
        );
        // tests/fixtures/cc-2.0.77/hello: no account uuid, two underscores.
        let legacy = metadata(&bump, &id, "s1", MetadataForm::LegacyUserId);
        assert_eq!(writer::to_vec(&legacy), br#"{"user_id":"user_d0_account__session_s1"}"#);
    }

    #[test]
    fn billing_header_form() {
        assert_eq!(
            billing_header("2.1.88", "e09", "sdk-cli", " cch=00000;"),
            "x-anthropic-billing-header: cc_version=2.1.88.e09; cc_entrypoint=sdk-cli; cch=00000;"
        );
    }
}
