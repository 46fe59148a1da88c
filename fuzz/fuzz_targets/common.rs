//! What the transcript targets (`record_replay`, `pipeline`) share: a fuzz
//! input as a session of files, and the properties every assembled request
//! must have whatever the transcript held.
#![allow(dead_code)]

use bumpalo::Bump;
use ctxasm::assemble::Request;
use ctxasm::assemble::validate::{Rule, validate};
use ctxasm::corpus::{ParsedFile, Session};
use ctxasm::input::discover::{FileKind, TranscriptFile};
use ctxasm::input::{ReadOptions, parse_bytes};
use ctxasm::json::writer;
use ctxasm::model::tree::Tree;
use ctxasm::write::body::{MessageSpans, SegmentCache, write_body, write_body_reusing};
use std::collections::HashSet;
use std::path::PathBuf;

/// Starts a subagent file: `\n\x1eagent-<id>\n` (the seeds script joins a
/// session's files with it).
pub const AGENT_MARK: &[u8] = b"\n\x1eagent-";

/// Most subagent files of one input.
const MAX_AGENTS: usize = 4;

/// The fixtures' directory (the targets read captures and environments).
pub fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures")
}

/// The files of one input: the main transcript, then each subagent file
/// (its agent id, its bytes) after an [`AGENT_MARK`] line.
pub fn split_files(data: &[u8]) -> (&[u8], Vec<(String, &[u8])>) {
    let mut parts = Vec::new();
    let mut rest = data;
    let main_end = memchr_find(rest, AGENT_MARK).unwrap_or(rest.len());
    let main = &rest[..main_end];
    rest = &rest[main_end..];
    while parts.len() < MAX_AGENTS && rest.starts_with(AGENT_MARK) {
        let after = &rest[AGENT_MARK.len()..];
        let id_end = after.iter().position(|&b| b == b'\n').unwrap_or(after.len());
        let id = String::from_utf8_lossy(&after[..id_end]).into_owned();
        let body = after.get(id_end + 1..).unwrap_or(&[]);
        let end = memchr_find(body, AGENT_MARK).unwrap_or(body.len());
        parts.push((id, &body[..end]));
        rest = &body[end..];
    }
    (main, parts)
}

fn memchr_find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// The transcript files of `split_files`' parts, as discovery names them.
/// An empty main part with subagents is a subagent file found without its
/// session (no main file).
pub fn transcript_files(main: &[u8], agents: &[(String, &[u8])]) -> Vec<TranscriptFile> {
    let mut files = Vec::new();
    if !main.is_empty() || agents.is_empty() {
        files.push(TranscriptFile {
            path: "fuzz/s.jsonl".into(),
            display: "fuzz/s.jsonl".into(),
            kind: FileKind::Session,
            size: main.len() as u64,
        });
    }
    for (id, bytes) in agents {
        let display = format!("fuzz/s/subagents/agent-{id}.jsonl");
        files.push(TranscriptFile {
            path: display.clone().into(),
            display,
            kind: FileKind::Subagent { agent_id: id.clone(), meta: None },
            size: bytes.len() as u64,
        });
    }
    files
}

/// Parse the files into `bump` as `corpus::read_session` does (a
/// subagent's parents may be in the main file).
pub fn session<'a, 'd>(
    bump: &'a Bump,
    files: &'d [TranscriptFile],
    main: &[u8],
    agents: &[(String, &[u8])],
) -> Session<'a, 'd> {
    let opts = ReadOptions::default();
    let parse = |file: &'d TranscriptFile, data: &[u8], external: &dyn Fn(&str) -> bool| {
        let mut parsed = parse_bytes(bump, data, &file.display, &opts);
        let tree = Tree::build(&parsed.entries, &file.display, external, &mut parsed.diagnostics);
        ParsedFile { file, parsed, tree }
    };
    let mut files = files.iter();
    let main = if files.len() > agents.len() { files.next().map(|f| parse(f, main, &|_| false)) } else { None };
    let subagents = files
        .zip(agents)
        .map(|(f, (_, data))| {
            let in_main = |u: &str| main.as_ref().is_some_and(|m| m.tree.contains(u));
            parse(f, data, &in_main)
        })
        .collect();
    Session { main, subagents }
}

/// Properties of a session's assembled requests:
/// - custom ids are unique and valid Message Batches ids (1–64 of
///   `[A-Za-z0-9_-]`);
/// - each batch line, written as `assemble` writes it (one buffer, message
///   bytes reused across requests), is a JSON object whose `custom_id` is
///   the request's and whose `params` hold `model`, `messages` and `system`;
/// - the reused bytes are those of the body written alone;
/// - `validate` never panics, and the rules in `forbidden` are never broken.
pub fn check_requests(requests: &[Request<'_>], forbidden: &[Rule]) {
    let mut ids = HashSet::new();
    let mut cache = SegmentCache::default();
    let mut spans = MessageSpans::default();
    let mut batch = Vec::new();
    let mut alone = Vec::new();
    for r in requests {
        let id = &r.custom_id;
        assert!(ids.insert(id.as_str()), "duplicate custom_id {id:?}");
        assert!(
            (1..=64).contains(&id.len()) && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'),
            "custom_id {id:?} is not a Message Batches id"
        );
        let start = batch.len();
        batch.extend_from_slice(b"{\"custom_id\":");
        writer::write_str(&mut batch, id);
        batch.extend_from_slice(b",\"params\":");
        let params_at = batch.len();
        write_body_reusing(&mut batch, &r.body, &mut cache, &mut spans);
        let params_end = batch.len();
        batch.extend_from_slice(b"}\n");
        alone.clear();
        write_body(&mut alone, &r.body, &mut SegmentCache::default());
        assert!(
            batch[params_at..params_end] == alone[..],
            "{id}: the body written after earlier requests differs from the body written alone"
        );
        let line = &batch[start..batch.len() - 1];
        match serde_json::from_slice::<serde_json::Value>(line) {
            Ok(v) => {
                assert_eq!(v["custom_id"].as_str(), Some(id.as_str()));
                let p = &v["params"];
                assert!(p.get("model").is_some(), "{id}: no model");
                assert!(p["messages"].is_array(), "{id}: messages is not an array");
                assert!(p["system"].is_array(), "{id}: system is not an array");
            }
            // serde_json stops at 128 levels; the body is as deep as the
            // transcript's values (not a property of ctxasm's writer).
            Err(e) if e.to_string().starts_with("recursion limit exceeded") => {}
            Err(e) => panic!("{id}: batch line is not JSON: {e}\n{}", String::from_utf8_lossy(line)),
        }
        for v in validate(&r.body) {
            assert!(!forbidden.contains(&v.rule), "{id}: {v}");
        }
    }
}
