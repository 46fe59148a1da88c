//! Outputs of `assemble`: the Message Batches format and the dedup format.
//!
//! `batch`: one line per request, `{"custom_id":…,"params":<body>}`, the
//! body byte-identical to what the client sent.
//!
//! `dedup` (a directory): every distinct message, system block and tool list
//! is stored once, content-addressed by the xxh3-128 of its bytes, and each
//! request is a recipe naming its segments:
//! - `segments.bin`: records of `[16-byte xxh3-128, big-endian][u32 LE
//!   length][bytes]`, each id once;
//! - `recipes.jsonl`: one line per request, in batch order:
//!   `{"custom_id":…,"head":…,"messages":[ids],"system":[ids],"tools":id|null,"tail_id":id}`
//!   where ids are 32 lowercase hex digits and the body is `head` + the
//!   messages joined by `,` + `],"system":[` + the system blocks joined by
//!   `,` + `]` + (`,"tools":` + tools) + the tail segment (the params after
//!   the tools, the same for a session's requests: stored once; versions 1
//!   and 2 have the tail's text in each recipe, `"tail":…`);
//! - `manifest.json`: counts and sizes.
//!
//! `expand` turns a dedup directory back into the batch format, byte for
//! byte, checking every segment's hash; `merge` makes one store of several
//! (the shards of a corpus) without re-serializing a request.
//!
//! Sessions are read in parallel in chunks and written in order, so memory
//! is bounded by a chunk of sessions, not by the corpus.

mod batch;
pub mod body;
mod dedup;
pub mod merge;

use batch::Spilled;
pub use batch::{Spill, write_batch, write_batch_spilling};
pub use dedup::{DEDUP_VERSION, expand, write_dedup, write_dedup_store, write_dedup_store_sending};
use dedup::{MANIFEST, bad, check_dedup_target, hex128, segment_header};
pub use merge::{MergeSummary, merge_stores};

use crate::assemble::Request;
use crate::assemble::pipeline::PipelineReport;
use crate::assemble::{Assembler, assemble_session};
use crate::corpus::{Early, Part, Piece, RunOptions};
use crate::diag::{DiagKind, Diagnostic};
use crate::input::discover::Discovery;
use crate::json::Json;
use crate::json::writer;
use body::{MessageSpans, SegmentCache, body_head, body_mid, body_tail, write_body_reusing};
use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};
use serde::Serialize;
use std::cell::RefCell;
use std::io::{self, BufWriter, Write};
use std::path::Path;

/// Which requests of each chain to write.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Turns {
    #[default]
    All,
    Last,
    /// The request with this 0-based index in each chain.
    Index(usize),
}

impl std::str::FromStr for Turns {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "all" => Ok(Turns::All),
            "last" => Ok(Turns::Last),
            n => n.parse().map(Turns::Index).map_err(|_| format!("expected all, last or a number, got {n:?}")),
        }
    }
}

/// Keep the selected requests of each chain (requests are grouped by chain,
/// in order).
fn select<'r, 'a>(requests: &'r [Request<'a>], turns: Turns) -> Vec<&'r Request<'a>> {
    selected(requests, turns).map(|i| &requests[i]).collect()
}

/// The indices of the requests [`select`] keeps.
fn selected<'r>(requests: &'r [Request<'_>], turns: Turns) -> impl Iterator<Item = usize> + 'r {
    (0..requests.len()).filter(move |&i| match turns {
        Turns::All => true,
        Turns::Index(n) => requests[i].index == n,
        Turns::Last => requests.get(i + 1).is_none_or(|next| next.agent_id != requests[i].agent_id),
    })
}

/// Options of `assemble`.
#[derive(Debug, Default)]
pub struct AssembleOptions {
    pub assembler: Assembler,
    pub turns: Turns,
}

/// What an `assemble` run wrote.
#[derive(Debug, Default, Clone, Serialize)]
pub struct AssembleSummary {
    pub sessions: u64,
    pub recorded_requests: u64,
    /// Sessions assembled by the pipeline (mode `pipeline`, or `auto`
    /// without records).
    pub pipeline_sessions: u64,
    /// What the pipeline repaired, summed over those sessions.
    pub pipeline: PipelineReport,
    pub requests_written: u64,
    /// Size of the batch format of the requests written.
    pub batch_bytes: u64,
    /// Bytes actually written (equal to `batch_bytes` for `batch`).
    pub bytes_written: u64,
    /// Distinct segments (dedup only).
    pub segments: u64,
    /// Per Claude Code release, newest first (sessions without a version
    /// last): what was written and how it was obtained.
    pub releases: Vec<ReleaseRow>,
    pub diagnostics: Vec<Diagnostic>,
}

/// What an `assemble` run wrote of the sessions of one Claude Code release.
#[derive(Debug, Default, Clone, PartialEq, Eq, Serialize)]
pub struct ReleaseRow {
    /// The release the transcripts record; `None`: they record none.
    pub release: Option<String>,
    pub sessions: u64,
    /// Requests written.
    pub requests: u64,
    /// Of those, replayed from the transcript's records.
    pub from_records: u64,
    /// Of those, every message and the system prompt and tools matched the
    /// SHA-256 the transcript recorded.
    pub proven: u64,
    /// Sessions built without a profile of their own release (an
    /// `approximated_profile` diagnostic each).
    pub approximated_sessions: u64,
}

impl AssembleSummary {
    /// Count one session's output in its release's row.
    fn add_release(&mut self, out: &SessionOut) {
        let i = match self.releases.iter().position(|r| r.release == out.release) {
            Some(i) => i,
            None => {
                self.releases.push(ReleaseRow { release: out.release.clone(), ..ReleaseRow::default() });
                self.releases.len() - 1
            }
        };
        let row = &mut self.releases[i];
        row.sessions += 1;
        row.requests += out.written;
        if out.pipeline.is_none() {
            row.from_records += out.written;
        }
        row.proven += out.proven;
        row.approximated_sessions += u64::from(out.approximated);
    }

    /// Newest release first; unparsable and absent versions last.
    fn sort_releases(&mut self) {
        let key = |r: &ReleaseRow| r.release.as_deref().and_then(crate::profile::Version::parse);
        self.releases.sort_by(|a, b| match (key(a), key(b)) {
            (Some(x), Some(y)) => y.cmp(&x),
            (Some(_), None) => std::cmp::Ordering::Less,
            (None, Some(_)) => std::cmp::Ordering::Greater,
            (None, None) => a.release.cmp(&b.release),
        });
    }
}

thread_local! {
    static CACHE: RefCell<SegmentCache> = RefCell::new(SegmentCache::default());
}

/// Check each selected request against the API rules; a broken rule is an
/// `invalid_request` diagnostic (the request is still written: it is what
/// the client sent).
fn check<'a>(requests: &[Request<'a>], turns: Turns, so: &mut SessionOut) {
    let mut validator = crate::assemble::validate::Validator::default();
    let mut last = None;
    for i in selected(requests, turns) {
        let req = &requests[i];
        let shared = if last.is_some_and(|l| l + 1 == i) { req.body.shared } else { 0 };
        last = Some(i);
        for v in validator.check(&req.body, shared) {
            so.diagnostics.push(Diagnostic::new(
                req.file,
                req.line,
                DiagKind::InvalidRequest,
                format!("{}: {v}", req.custom_id),
            ));
        }
    }
}

/// Replay a session's records and start its output: counts, record
/// diagnostics and the validity check of the selected requests.
fn replay<'a>(
    bump: &'a bumpalo::Bump,
    session: &crate::corpus::Session<'a, '_>,
    opts: &AssembleOptions,
) -> (Vec<Request<'a>>, SessionOut) {
    let a = assemble_session(bump, session, &opts.assembler);
    let mut so = SessionOut {
        recorded: a.recorded,
        release: a.release.map(str::to_owned),
        proven: selected(&a.requests, opts.turns).filter(|&i| a.proven.get(i).copied().unwrap_or(false)).count() as u64,
        approximated: a.diagnostics.iter().any(|d| d.kind == DiagKind::ApproximatedProfile),
        diagnostics: a.diagnostics,
        pipeline: a.by_pipeline.then_some(a.pipeline),
        ..SessionOut::default()
    };
    check(&a.requests, opts.turns, &mut so);
    (a.requests, so)
}

fn batch_line(out: &mut Vec<u8>, req: &Request<'_>, cache: &mut SegmentCache, spans: &mut MessageSpans) {
    out.extend_from_slice(b"{\"custom_id\":");
    writer::write_str(out, &req.custom_id);
    out.extend_from_slice(b",\"params\":");
    write_body_reusing(out, &req.body, cache, spans);
    out.extend_from_slice(b"}\n");
}

/// What one session contributes to an output.
#[derive(Default)]
struct SessionOut {
    recorded: u64,
    written: u64,
    batch_bytes: u64,
    /// Batch lines, or recipe lines.
    lines: Vec<u8>,
    /// New segments (dedup), first occurrence order.
    segments: Vec<(u128, Segment)>,
    /// The bytes of the [`Segment::Own`] segments, one after the other.
    own: Vec<u8>,
    diagnostics: Vec<Diagnostic>,
    pipeline: Option<PipelineReport>,
    release: Option<String>,
    /// Written requests proven by their recorded hashes.
    proven: u64,
    approximated: bool,
    /// Batch lines that went to a file ([`Spill`]), before `lines`.
    spilled: Option<Spilled>,
    /// Why the lines could not go there: the writer stops with it.
    failed: Option<io::Error>,
}

/// A new segment's bytes: shared with the thread's [`SegmentCache`]
/// (system blocks, tool lists), or a range of [`SessionOut::own`].
enum Segment {
    Shared(std::sync::Arc<[u8]>),
    Own(std::ops::Range<usize>),
}

impl SessionOut {
    /// Bytes of output it holds.
    fn size(&self) -> usize {
        self.lines.len()
            + self.own.len()
            + self.segments.iter().map(|(_, s)| if let Segment::Shared(b) = s { b.len() } else { 0 }).sum::<usize>()
    }

    /// The bytes of `seg`.
    fn bytes<'s>(&'s self, seg: &'s Segment) -> &'s [u8] {
        match seg {
            Segment::Shared(b) => b,
            Segment::Own(r) => self.own.get(r.clone()).unwrap_or_default(),
        }
    }
}

/// Every session's output, streamed to `sink` in discovery order by the
/// corpus runner ([`crate::corpus::stream_sessions_early`]: the bytes a
/// session sends early first, then its [`SessionOut`]), with the summary
/// counted on the way.
fn run_chunks(
    disc: &Discovery,
    run: &RunOptions<'_>,
    mut sink: impl FnMut(Part<'_, SessionOut>) -> io::Result<()>,
    f: impl for<'a, 'd> Fn(&'a bumpalo::Bump, &crate::corpus::Session<'a, 'd>, &Early<'_, SessionOut>) -> SessionOut + Sync,
) -> io::Result<AssembleSummary> {
    let mut summary = AssembleSummary::default();
    let on_error = |diag| SessionOut { diagnostics: vec![diag], ..SessionOut::default() };
    crate::corpus::stream_sessions_early(disc, run, SessionOut::size, on_error, f, |part| {
        let mut out = match part {
            Part::Done(out) => out,
            early => return sink(early),
        };
        summary.sessions += 1;
        summary.recorded_requests += out.recorded;
        summary.requests_written += out.written;
        summary.batch_bytes += out.batch_bytes;
        if let Some(p) = &out.pipeline {
            summary.pipeline_sessions += 1;
            summary.pipeline.add(p);
        }
        summary.add_release(&out);
        let diagnostics = std::mem::take(&mut out.diagnostics);
        summary.diagnostics.extend(diagnostics);
        sink(Part::Done(out))
    })?;
    summary.sort_releases();
    summary.diagnostics.sort_by(|a, b| (&a.file, a.line, a.kind).cmp(&(&b.file, b.line, b.kind)));
    Ok(summary)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn turns_parse() {
        assert_eq!("all".parse::<Turns>(), Ok(Turns::All));
        assert_eq!("last".parse::<Turns>(), Ok(Turns::Last));
        assert_eq!("3".parse::<Turns>(), Ok(Turns::Index(3)));
        assert!("x".parse::<Turns>().is_err());
    }

    #[test]
    fn expand_reports_corrupt_segments() {
        let dir = tempfile::tempdir().unwrap();
        let mut seg = Vec::new();
        seg.extend_from_slice(&7u128.to_be_bytes());
        seg.extend_from_slice(&3u32.to_le_bytes());
        seg.extend_from_slice(b"abc");
        std::fs::write(dir.path().join("segments.bin"), &seg).unwrap();
        std::fs::write(dir.path().join("recipes.jsonl"), "").unwrap();
        // Without a manifest the store is incomplete, whatever it holds.
        let err = expand(dir.path(), &mut Vec::new()).unwrap_err();
        assert!(err.to_string().contains("not a complete dedup store (no manifest.json"), "{err}");
        std::fs::write(dir.path().join(MANIFEST), r#"{"format":"ctxasm-dedup","version":1,"requests":0}"#).unwrap();
        let err = expand(dir.path(), &mut Vec::new()).unwrap_err();
        assert!(err.to_string().contains("does not match its hash"), "{err}");
    }

    #[test]
    fn a_dedup_target_in_use_is_named_for_what_it_is() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().join("store");
        assert!(check_dedup_target(&d).is_ok());
        std::fs::create_dir(&d).unwrap();
        assert!(check_dedup_target(&d).is_ok(), "an empty directory is fine");
        std::fs::write(d.join("segments.bin"), b"").unwrap();
        let e = check_dedup_target(&d).unwrap_err().to_string();
        assert!(
            e.ends_with("store: an incomplete dedup store (no manifest.json: left by an interrupted run); remove it"),
            "{e}"
        );
        std::fs::write(d.join(MANIFEST), b"{}").unwrap();
        let e = check_dedup_target(&d).unwrap_err().to_string();
        assert!(e.ends_with("store: already holds a dedup store; remove it or choose another -o"), "{e}");
    }
}
