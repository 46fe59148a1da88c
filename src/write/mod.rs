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

pub mod body;
pub mod merge;

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

/// Where a session's batch lines go once they pass [`Spill::at`] bytes:
/// an unnamed temporary file in [`Spill::dir`], until the writer copies
/// them out in order. The batch format of every turn of a session is
/// O(turns²) bytes (1.7 GB for one session of 4,000 short turns), which a
/// worker must not hold in memory while it waits for the writer.
/// A session the writer takes next hands its lines over at once instead,
/// every [`Spill::send_at`] bytes ([`Early`]): a long session written alone
/// streams, with no file between.
#[derive(Debug, Clone)]
pub struct Spill {
    pub dir: std::path::PathBuf,
    pub at: usize,
    pub send_at: usize,
}

impl Spill {
    /// Bytes of a session's batch lines held in memory before they go to a
    /// file: sessions under it (nearly all) are written from memory, as
    /// before.
    pub const AT: usize = 32 << 20;
    /// Bytes handed to the writer at a time by the session it takes next.
    pub const SEND_AT: usize = 2 << 20;

    /// Spill into `dir` past [`Spill::AT`] bytes.
    pub fn to(dir: std::path::PathBuf) -> Self {
        Spill { dir, at: Self::AT, send_at: Self::SEND_AT }
    }
}

/// A session's batch lines that went to a file ([`Spill`]).
struct Spilled {
    file: std::fs::File,
    bytes: u64,
}

/// The lines before `last` (where the last request's line starts) to the
/// writer at once, while the session is the next it takes and nothing of it
/// went to a file ([`Early`]); kept otherwise. The last line stays, moved
/// to the front of a buffer of at least `room` bytes, for the next request
/// to copy its messages from (`spans` moves with it).
fn hand_over(so: &mut SessionOut, spans: &mut MessageSpans, last: usize, early: &Early<'_, SessionOut>, room: usize) {
    if last == 0 || so.spilled.is_some() || so.failed.is_some() || !early.is_next() {
        return;
    }
    let mut rest = early.buffer(room.max(so.lines.len() - last));
    rest.extend_from_slice(&so.lines[last..]);
    so.lines.truncate(last);
    let head = std::mem::replace(&mut so.lines, rest);
    spans.cut(last);
    // The session is the writer's next until it is done: taken (or dropped
    // when the run is stopping on a write error).
    let _ = early.send(Piece::Bytes(head));
}

/// Move `so.lines` to its session's spill file (made on first use). A
/// failure is kept in `so.failed` (the writer returns it: the run stops
/// rather than write the session without those lines) and the lines are
/// dropped, so memory stays bounded.
fn spill_lines(so: &mut SessionOut, spill: &Spill) {
    if so.failed.is_none() {
        let result = match &mut so.spilled {
            Some(s) => s.file.write_all(&so.lines).map(|()| s),
            None => tempfile::tempfile_in(&spill.dir)
                .and_then(|mut file| file.write_all(&so.lines).map(|()| file))
                .map(|file| so.spilled.insert(Spilled { file, bytes: 0 })),
        };
        match result {
            Ok(s) => s.bytes += so.lines.len() as u64,
            Err(e) => {
                let msg =
                    format!("cannot hold a session's batch output in a temporary file in {}: {e}", spill.dir.display());
                so.failed = Some(io::Error::new(e.kind(), msg));
            }
        }
    }
    so.lines.clear();
}

/// Write the batch format of every selected request to `out`; a session
/// whose output passes [`Spill::AT`] bytes waits for the writer in a file
/// in the system's temporary directory.
pub fn write_batch(
    disc: &Discovery,
    run: &RunOptions<'_>,
    opts: &AssembleOptions,
    out: &mut dyn Write,
) -> io::Result<AssembleSummary> {
    write_batch_spilling(disc, run, opts, out, &Spill::to(std::env::temp_dir()))
}

/// [`write_batch`], a session's output past `spill.at` bytes held in a file
/// in `spill.dir` until it is written.
pub fn write_batch_spilling(
    disc: &Discovery,
    run: &RunOptions<'_>,
    opts: &AssembleOptions,
    out: &mut dyn Write,
    spill: &Spill,
) -> io::Result<AssembleSummary> {
    let mut written = 0u64;
    let mut summary = run_chunks(
        disc,
        run,
        |part| {
            let mut s = match part {
                Part::Early(bytes) => {
                    written += bytes.len() as u64;
                    return out.write_all(bytes);
                }
                Part::Partial(s) | Part::Done(s) => s,
            };
            if let Some(e) = s.failed.take() {
                return Err(e);
            }
            if let Some(Spilled { mut file, bytes }) = s.spilled.take() {
                use std::io::{Seek, SeekFrom};
                file.seek(SeekFrom::Start(0))?;
                let copied = io::copy(&mut io::BufReader::with_capacity(1 << 20, file), out)?;
                if copied != bytes {
                    let msg = format!("a session's batch output read back {copied} of the {bytes} bytes written");
                    return Err(io::Error::new(io::ErrorKind::UnexpectedEof, msg));
                }
                written += copied;
            }
            written += s.lines.len() as u64;
            out.write_all(&s.lines)
        },
        |bump, session, early| {
            let (requests, mut so) = replay(bump, session, opts);
            let mut bytes = 0u64;
            CACHE.with(|c| {
                let mut cache = c.borrow_mut();
                let mut spans = MessageSpans::default();
                for req in select(&requests, opts.turns) {
                    let before = so.lines.len();
                    batch_line(&mut so.lines, req, &mut cache, &mut spans);
                    bytes += (so.lines.len() - before) as u64;
                    so.written += 1;
                    // The last line stays (it is copied): handed over once
                    // it is at most a quarter of the buffer, so a session of
                    // long requests copies a quarter more, not twice.
                    let kept = so.lines.len() - before;
                    if so.lines.len() >= spill.send_at && kept.saturating_mul(4) <= so.lines.len() {
                        let room = spill.send_at.min(Spill::SEND_AT).max(2 * kept);
                        hand_over(&mut so, &mut spans, before, early, room);
                    }
                    if so.lines.len() >= spill.at {
                        spill_lines(&mut so, spill);
                        spans.cut(usize::MAX);
                    }
                }
            });
            if so.spilled.is_some() && !so.lines.is_empty() {
                spill_lines(&mut so, spill);
            }
            so.batch_bytes = bytes;
            // It may wait for the writer: keep only its bytes, not the
            // growth slack of the buffer.
            so.lines.shrink_to_fit();
            so
        },
    )?;
    out.flush()?;
    summary.bytes_written = written;
    Ok(summary)
}

/// Write the dedup format of every selected request into `dir` (created;
/// must not already hold a dedup output). Nothing to store writes no
/// directory.
pub fn write_dedup(
    disc: &Discovery,
    run: &RunOptions<'_>,
    opts: &AssembleOptions,
    dir: &Path,
) -> io::Result<AssembleSummary> {
    write_dedup_store(disc, run, opts, dir, false)
}

/// [`write_dedup`]; with `keep_empty`, a store without a request is
/// written too (a shard of a corpus may hold none, and `merge` takes it).
pub fn write_dedup_store(
    disc: &Discovery,
    run: &RunOptions<'_>,
    opts: &AssembleOptions,
    dir: &Path,
    keep_empty: bool,
) -> io::Result<AssembleSummary> {
    write_dedup_store_sending(disc, run, opts, dir, keep_empty, Spill::SEND_AT)
}

/// [`write_dedup_store`], the session the writer takes next handing its
/// new segments and recipes over whenever they pass `send_at` bytes (a
/// long session's output is not held whole until it is done).
pub fn write_dedup_store_sending(
    disc: &Discovery,
    run: &RunOptions<'_>,
    opts: &AssembleOptions,
    dir: &Path,
    keep_empty: bool,
    send_at: usize,
) -> io::Result<AssembleSummary> {
    check_dedup_target(dir)?;
    // Written under a temporary name beside `dir`, renamed when complete:
    // a killed run leaves no store that looks whole.
    let name = dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| "dedup".into());
    let tmp = dir.with_file_name(format!(".{name}.tmp-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&tmp);
    std::fs::create_dir_all(&tmp).map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", tmp.display())))?;
    let result = write_dedup_into(disc, run, opts, &tmp, send_at);
    let finish = |summary: &AssembleSummary| -> io::Result<()> {
        if summary.requests_written == 0 && !keep_empty {
            // Nothing to store: no directory (the caller says why).
            return std::fs::remove_dir_all(&tmp);
        }
        if dir.is_dir() {
            std::fs::remove_dir(dir)?; // empty: checked above
        }
        std::fs::rename(&tmp, dir).map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", dir.display())))
    };
    match result.and_then(|s| finish(&s).map(|()| s)) {
        Ok(s) => Ok(s),
        Err(e) => {
            let _ = std::fs::remove_dir_all(&tmp);
            Err(e)
        }
    }
}

/// A dedup target must not exist or be an empty directory; a store (whole,
/// or left by an interrupted run of an older ctxasm) is named so.
fn check_dedup_target(dir: &Path) -> io::Result<()> {
    let exists = |msg: String| Err(io::Error::new(io::ErrorKind::AlreadyExists, format!("{}: {msg}", dir.display())));
    match std::fs::symlink_metadata(dir) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(io::Error::new(e.kind(), format!("{}: {e}", dir.display()))),
        Ok(m) if !m.is_dir() => exists("exists and is not a directory".into()),
        Ok(_) => {
            let mut entries = std::fs::read_dir(dir)?;
            if entries.next().is_none() {
                return Ok(());
            }
            if dir.join(MANIFEST).is_file() {
                exists("already holds a dedup store; remove it or choose another -o".into())
            } else if dir.join("segments.bin").exists() || dir.join("recipes.jsonl").exists() {
                exists(format!("an incomplete dedup store (no {MANIFEST}: left by an interrupted run); remove it"))
            } else {
                exists("exists and is not empty; choose another -o".into())
            }
        }
    }
}

/// The file a complete dedup store ends with.
const MANIFEST: &str = "manifest.json";

/// The dedup store's format version: 2 lets a recipe keep the previous
/// recipe's leading message ids (`keep`), so a session's recipes grow
/// with what each turn adds; 3 stores each recipe's tail (the params after
/// the tools, ~500 bytes a recipe of 2.1.x) as a segment (`tail_id`);
/// `expand` reads 1 to 3.
pub const DEDUP_VERSION: u64 = 3;

fn write_dedup_into(
    disc: &Discovery,
    run: &RunOptions<'_>,
    opts: &AssembleOptions,
    dir: &Path,
    send_at: usize,
) -> io::Result<AssembleSummary> {
    let open = |name: &str| -> io::Result<BufWriter<std::fs::File>> {
        let f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(dir.join(name))
            .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", dir.join(name).display())))?;
        Ok(BufWriter::with_capacity(1 << 20, f))
    };
    let mut segs = open("segments.bin")?;
    let mut recipes = open("recipes.jsonl")?;
    let mut seen: HashSet<u128> = HashSet::default();
    let (mut seg_bytes, mut recipe_bytes) = (0u64, 0u64);
    let mut summary = run_chunks(
        disc,
        run,
        |part| {
            // The dedup writer sends parts of its output, never bytes.
            let (Part::Partial(s) | Part::Done(s)) = part else { return Ok(()) };
            for (id, seg) in &s.segments {
                if seen.insert(*id) {
                    let bytes = s.bytes(seg);
                    segs.write_all(&id.to_be_bytes())?;
                    let len = u32::try_from(bytes.len())
                        .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "segment over 4 GiB"))?;
                    segs.write_all(&len.to_le_bytes())?;
                    segs.write_all(bytes)?;
                    seg_bytes += 20 + bytes.len() as u64;
                }
            }
            recipe_bytes += s.lines.len() as u64;
            recipes.write_all(&s.lines)
        },
        |bump, session, early| {
            let (requests, mut so) = replay(bump, session, opts);
            CACHE.with(|c| dedup_session(&requests, opts.turns, &mut c.borrow_mut(), &mut so, (early, send_at)));
            so
        },
    )?;
    segs.flush()?;
    recipes.flush()?;
    summary.segments = seen.len() as u64;
    summary.bytes_written = seg_bytes + recipe_bytes;
    let manifest = serde_json::json!({
        "format": "ctxasm-dedup",
        "version": DEDUP_VERSION,
        "requests": summary.requests_written,
        "segments": summary.segments,
        "segment_bytes": seg_bytes,
        "recipe_bytes": recipe_bytes,
        "batch_bytes": summary.batch_bytes,
    });
    for f in [segs, recipes] {
        f.into_inner().map_err(|e| e.into_error())?.sync_all()?;
    }
    let mut m = open(MANIFEST)?;
    serde_json::to_writer_pretty(&mut m, &manifest).map_err(io::Error::other)?;
    m.write_all(b"\n")?;
    m.into_inner().map_err(|e| e.into_error())?.sync_all()?;
    Ok(summary)
}

/// `"<32 lowercase hex digits>"`.
fn push_hex128(out: &mut Vec<u8>, id: u128) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    out.push(b'"');
    for shift in (0..32).rev() {
        out.push(HEX[((id >> (shift * 4)) & 0xf) as usize]);
    }
    out.push(b'"');
}

fn hex128(id: u128) -> String {
    format!("{id:032x}")
}

/// The dedup output of a session's requests into `so`; its new segments
/// and recipes go to the writer early (`send`) once they pass the given
/// size, while the session is the next the writer takes.
fn dedup_session(
    requests: &[Request<'_>],
    turns: Turns,
    cache: &mut SegmentCache,
    so: &mut SessionOut,
    send: (&Early<'_, SessionOut>, usize),
) {
    // Segment ids of values already serialized in this session, by node.
    let mut by_node: HashMap<usize, (u128, usize)> = HashMap::default();
    let mut local: HashSet<u128> = HashSet::default();
    // Attested billing blocks (`Body::cch_seed`), one per request, made
    // before the segment closure borrows the cache.
    let mut attested =
        select(requests, turns).iter().map(|r| body::attested_header(&r.body, cache)).collect::<Vec<_>>().into_iter();
    let mut attested_seen: HashSet<u128> = HashSet::default();
    let mut scratch = Vec::new();
    let mut seg = |v: &Json<'_>, key: Option<u128>, so: &mut SessionOut| -> (u128, usize) {
        let ptr = v as *const Json<'_> as usize;
        if let Some(&hit) = by_node.get(&ptr) {
            return hit;
        }
        let (id, shared) = cache.id_into(key, v, &mut scratch);
        let len = shared.as_ref().map_or(scratch.len(), |b| b.len());
        if local.insert(id) {
            let seg = match shared {
                Some(bytes) => Segment::Shared(bytes),
                None => {
                    let start = so.own.len();
                    so.own.extend_from_slice(&scratch);
                    Segment::Own(start..so.own.len())
                }
            };
            so.segments.push((id, seg));
        }
        by_node.insert(ptr, (id, len));
        (id, len)
    };
    let mut head = Vec::new();
    let mut mid = Vec::new();
    let mut tail = Vec::new();
    // The last written request's message ids and, per prefix, the bytes of
    // its messages with their commas: a request whose leading messages are
    // that one's (`Body::shared`) lists only the rest (`keep`).
    let mut last: Option<usize> = None;
    // Tail segments of this session already added.
    let mut tails: HashSet<u128> = HashSet::default();
    let mut msg_ids: Vec<u128> = Vec::new();
    let mut msg_bytes: Vec<usize> = vec![0];
    for i in selected(requests, turns) {
        let req = &requests[i];
        let b = &req.body;
        head.clear();
        mid.clear();
        tail.clear();
        body_head(&mut head, b);
        body_mid(&mut mid, b);
        body_tail(&mut tail, b);
        let keep = if last.is_some_and(|l| l + 1 == i) { b.shared.min(msg_ids.len()) } else { 0 };
        last = Some(i);
        msg_ids.truncate(keep);
        msg_bytes.truncate(keep + 1);
        for m in b.messages.iter_from(keep) {
            let (id, len) = seg(m, None, so);
            let before = msg_bytes[msg_bytes.len() - 1];
            msg_bytes.push(before + len + usize::from(!msg_ids.is_empty()));
            msg_ids.push(id);
        }
        let mut body_len =
            head.len() + mid.len() + tail.len() + b"],\"system\":[]".len() + msg_bytes[msg_bytes.len() - 1];
        let mut ids = |list: &[&Json<'_>], keys: &[Option<u128>], so: &mut SessionOut| -> Vec<u128> {
            list.iter()
                .enumerate()
                .map(|(i, v)| {
                    let (id, len) = seg(v, keys.get(i).copied().flatten(), so);
                    body_len += len + usize::from(i > 0);
                    id
                })
                .collect()
        };
        let mut system = ids(&b.system, &b.system_keys, so);
        // An attested billing block is this request's own bytes (same length).
        if let Some(block) = attested.next().flatten() {
            let id = xxhash_rust::xxh3::xxh3_128(&block);
            if attested_seen.insert(id) {
                so.segments.push((id, Segment::Shared(block.into())));
            }
            if let Some(first) = system.first_mut() {
                *first = id;
            }
        }
        let tools = b.tools.map(|t| {
            let (id, len) = seg(t, b.tools_key, so);
            body_len += len + b",\"tools\":".len();
            id
        });
        // {"custom_id":…,"head":…,"messages":[…],"system":[…],"tools":…,"tail":…}
        let out = &mut so.lines;
        let hex_list = |out: &mut Vec<u8>, list: &[u128]| {
            out.push(b'[');
            for (i, id) in list.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                push_hex128(out, *id);
            }
            out.push(b']');
        };
        out.extend_from_slice(b"{\"custom_id\":");
        let id_start = out.len();
        writer::write_str(out, &req.custom_id);
        let id_len = out.len() - id_start;
        out.extend_from_slice(b",\"head\":");
        writer::write_str(out, &String::from_utf8_lossy(&head));
        if keep > 0 {
            out.extend_from_slice(b",\"keep\":");
            let _ = write!(out, "{keep}");
        }
        out.extend_from_slice(b",\"messages\":");
        hex_list(out, &msg_ids[keep..]);
        // Only a body with lead params (1.0.x) has a `mid`: older recipes
        // read the same.
        if !mid.is_empty() {
            out.extend_from_slice(b",\"mid\":");
            writer::write_str(out, &String::from_utf8_lossy(&mid));
        }
        out.extend_from_slice(b",\"system\":");
        hex_list(out, &system);
        out.extend_from_slice(b",\"tools\":");
        match tools {
            Some(id) => push_hex128(out, id),
            None => out.extend_from_slice(b"null"),
        }
        let tail_id = xxhash_rust::xxh3::xxh3_128(&tail);
        out.extend_from_slice(b",\"tail_id\":");
        push_hex128(out, tail_id);
        out.extend_from_slice(b"}\n");
        if tails.insert(tail_id) {
            let start = so.own.len();
            so.own.extend_from_slice(&tail);
            so.segments.push((tail_id, Segment::Own(start..so.own.len())));
        }
        so.written += 1;
        // The batch line: {"custom_id":<id>,"params":<body>}\n
        so.batch_bytes += (b"{\"custom_id\":,\"params\":}\n".len() + id_len + body_len) as u64;
        let (early, send_at) = send;
        if so.own.len() + so.lines.len() >= send_at && early.is_next() {
            // Segment ranges index `own`, which goes with them.
            let part = SessionOut {
                segments: std::mem::take(&mut so.segments),
                own: std::mem::take(&mut so.own),
                lines: std::mem::take(&mut so.lines),
                ..SessionOut::default()
            };
            // Taken (or dropped when the run is stopping on a write error).
            let _ = early.send(Piece::Out(part));
        }
    }
}

#[derive(serde::Deserialize)]
struct Recipe {
    custom_id: String,
    head: String,
    /// The first `keep` message ids are the previous recipe's (version 2).
    #[serde(default)]
    keep: usize,
    messages: Vec<String>,
    /// The bytes between the messages and the system (1.0.x lead params).
    #[serde(default)]
    mid: String,
    system: Vec<String>,
    tools: Option<String>,
    /// The tail's text (versions 1 and 2), or its segment (3).
    #[serde(default)]
    tail: Option<String>,
    #[serde(default)]
    tail_id: Option<String>,
}

/// Errors of `expand`, naming the file and (for recipes) the line.
fn bad(path: &Path, line: usize, msg: impl std::fmt::Display) -> io::Error {
    if line > 0 {
        io::Error::new(io::ErrorKind::InvalidData, format!("{}:{line}: {msg}", path.display()))
    } else {
        io::Error::new(io::ErrorKind::InvalidData, format!("{}: {msg}", path.display()))
    }
}

/// Write the batch format of the dedup directory `dir` to `out`; returns
/// the number of requests.
pub fn expand(dir: &Path, out: &mut dyn Write) -> io::Result<u64> {
    // A store is complete when its manifest is there (written last).
    let man_path = dir.join(MANIFEST);
    let manifest: serde_json::Value = match std::fs::read(&man_path) {
        Ok(b) => serde_json::from_slice(&b).map_err(|e| bad(&man_path, 0, format!("not a dedup manifest: {e}")))?,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            let msg = if dir.is_dir() {
                format!("{}: not a complete dedup store (no {MANIFEST}; an interrupted run leaves none)", dir.display())
            } else {
                format!("{}: no such dedup directory", dir.display())
            };
            return Err(io::Error::new(io::ErrorKind::NotFound, msg));
        }
        Err(e) => return Err(io::Error::new(e.kind(), format!("{}: {e}", man_path.display()))),
    };
    if manifest["format"] != "ctxasm-dedup" {
        return Err(bad(&man_path, 0, "not a ctxasm dedup manifest (format is not \"ctxasm-dedup\")"));
    }
    match manifest["version"].as_u64() {
        Some(1..=DEDUP_VERSION) => {}
        v => {
            let v = v.map_or_else(|| manifest["version"].to_string(), |v| v.to_string());
            return Err(bad(
                &man_path,
                0,
                format!(
                    "dedup store version {v}; this ctxasm reads versions 1 to {DEDUP_VERSION} (a newer ctxasm wrote it?)"
                ),
            ));
        }
    }
    // A part missing from a store with a manifest: the store was damaged
    // after it was written; say so of the store, naming the part.
    let part = |name: &str, e: io::Error| {
        let why = if e.kind() == io::ErrorKind::NotFound { "is missing".to_string() } else { e.to_string() };
        io::Error::new(e.kind(), format!("{}: a damaged dedup store: its {name} {why}", dir.display()))
    };
    let seg_path = dir.join("segments.bin");
    let data = std::fs::read(&seg_path).map_err(|e| part("segments.bin", e))?;
    let mut segments: HashMap<u128, &[u8]> = HashMap::default();
    let mut pos = 0usize;
    while pos < data.len() {
        let header =
            data.get(pos..pos + 20).ok_or_else(|| bad(&seg_path, 0, format!("truncated record at byte {pos}")))?;
        let mut id = [0u8; 16];
        id.copy_from_slice(&header[..16]);
        let id = u128::from_be_bytes(id);
        let mut len = [0u8; 4];
        len.copy_from_slice(&header[16..20]);
        let len = u32::from_le_bytes(len) as usize;
        let bytes = data
            .get(pos + 20..pos + 20 + len)
            .ok_or_else(|| bad(&seg_path, 0, format!("truncated segment at byte {pos}")))?;
        if xxhash_rust::xxh3::xxh3_128(bytes) != id {
            return Err(bad(&seg_path, 0, format!("segment {} at byte {pos} does not match its hash", hex128(id))));
        }
        segments.insert(id, bytes);
        pos += 20 + len;
    }
    let rec_path = dir.join("recipes.jsonl");
    let text = std::fs::read_to_string(&rec_path).map_err(|e| part("recipes.jsonl", e))?;
    let mut line_out = Vec::with_capacity(1 << 20);
    let mut n = 0u64;
    // The previous recipe's message ids (what `keep` refers to).
    let mut ids: Vec<String> = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let r: Recipe = serde_json::from_str(line).map_err(|e| bad(&rec_path, i + 1, e))?;
        let get = |h: &str| -> io::Result<&[u8]> {
            let id = u128::from_str_radix(h, 16).map_err(|_| bad(&rec_path, i + 1, format!("bad segment id {h:?}")))?;
            segments
                .get(&id)
                .copied()
                .ok_or_else(|| bad(&rec_path, i + 1, format!("segment {h} is not in segments.bin")))
        };
        line_out.clear();
        line_out.extend_from_slice(b"{\"custom_id\":");
        writer::write_str(&mut line_out, &r.custom_id);
        line_out.extend_from_slice(b",\"params\":");
        line_out.extend_from_slice(r.head.as_bytes());
        if r.keep > ids.len() {
            return Err(bad(
                &rec_path,
                i + 1,
                format!("keeps {} messages of the previous recipe, which has {}", r.keep, ids.len()),
            ));
        }
        ids.truncate(r.keep);
        ids.extend(r.messages);
        for (j, h) in ids.iter().enumerate() {
            if j > 0 {
                line_out.push(b',');
            }
            line_out.extend_from_slice(get(h)?);
        }
        line_out.push(b']');
        line_out.extend_from_slice(r.mid.as_bytes());
        line_out.extend_from_slice(b",\"system\":[");
        for (j, h) in r.system.iter().enumerate() {
            if j > 0 {
                line_out.push(b',');
            }
            line_out.extend_from_slice(get(h)?);
        }
        line_out.push(b']');
        if let Some(t) = &r.tools {
            line_out.extend_from_slice(b",\"tools\":");
            line_out.extend_from_slice(get(t)?);
        }
        match (&r.tail, &r.tail_id) {
            (Some(t), None) => line_out.extend_from_slice(t.as_bytes()),
            (None, Some(h)) => line_out.extend_from_slice(get(h)?),
            _ => return Err(bad(&rec_path, i + 1, "a recipe has either a tail or a tail_id")),
        }
        line_out.extend_from_slice(b"}\n");
        out.write_all(&line_out)?;
        n += 1;
    }
    if let Some(want) = manifest["requests"].as_u64().filter(|&w| w != n) {
        return Err(bad(&rec_path, 0, format!("{n} requests, the manifest says {want}")));
    }
    out.flush()?;
    Ok(n)
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
