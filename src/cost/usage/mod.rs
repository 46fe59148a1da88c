//! Recorded usage: the tokens (and the price) of every API request a
//! transcript records, each request counted once.
//!
//! # Which lines are requests
//!
//! Every `assistant` entry whose `message.usage` is an object, except the
//! client's own error messages (`message.model == "<synthetic>"`: no request
//! was billed, their usage is all zeros). Tokens per request
//! (`../shared/docs/anthropic-api-facts.md` §1.6): `input_tokens` (after the
//! last cache breakpoint), cache writes split by TTL from
//! `usage.cache_creation.ephemeral_5m_input_tokens` /
//! `ephemeral_1h_input_tokens` when the line has a `cache_creation` object
//! (1.0.98+; a missing key counts 0, as ccusage reads it), else all of
//! `cache_creation_input_tokens` as 5-minute writes (older lines predate the
//! 1-hour TTL), `cache_read_input_tokens`, `output_tokens`.
//!
//! # Each request once: ccusage's rule
//!
//! A streamed message is written as one line per content block, each with
//! the same `message.id` and `requestId` and a copy of the usage (early
//! copies may carry a partial `output_tokens`). Resumed and forked sessions
//! copy earlier lines into new files; `/btw` sidechains replay parent
//! messages under new request ids. The rule is ccusage 20.0.24's, as its
//! binary behaves (`push_deduped_entry` / `should_replace_deduped_entry`,
//! `../shared/docs/peers.md` §1.4, ccusage PRs #1155 and #1661; the
//! timestamp and session conditions below were measured on the 20.0.24
//! binary and are pinned in this module's tests). Lines are taken in order:
//! files sorted by path bytes (ccusage's order, and discovery's), lines in
//! file order. A line's *session* here is its `sessionId` (else the
//! request's session, see below; ccusage falls back to its path-derived
//! session, which differs only for a 2.0.x `agent-*.jsonl` beside the
//! session files, and Claude Code writes `sessionId` on every line).
//!
//! 1. A line without `message.id` is always a request of its own.
//! 2. A line is a copy of a kept request with the same `(message.id,
//!    requestId)`, in any session; a line without `requestId` is a copy of a
//!    kept request with the same `message.id`, no `requestId` and the same
//!    session.
//! 3. Else it is a copy of a kept request with the same `message.id`, the
//!    same session and the same timestamp (to the millisecond) when either
//!    of the two is a sidechain line (`isSidechain: true`: a sidechain
//!    replaying a parent message under a new request id).
//! 4. A copy replaces the kept line when it is preferred: a main-chain line
//!    beats a sidechain line; then the larger token total (input + output +
//!    cache writes + cache reads) wins; on a tie the line seen first stays
//!    (ccusage then compares its own computed cost and the `speed` field,
//!    which never differ between the copies of one streamed message). So the
//!    request keeps the final, largest usage, and the file, line, timestamp
//!    and session of the line that carries it, at the position of its first
//!    line.
//!
//! [`recorded_requests`] applies the rule within one session (main file and
//! subagents). ccusage applies it globally, across every file it reads, so
//! [`recorded_requests_corpus`] and [`recorded_report`] do too: a request
//! copied into another session's file is counted once, in the session of
//! the line that wins.
//!
//! Not counted: `toolUseResult.usage` summaries on user lines (ccusage
//! skips them too) and `progress` lines' nested agent messages (2.1.17 –
//! 2.1.42; the same requests are in the subagent files; no corpus here has
//! one with usage, so what ccusage 20.0.24 does with them is not measured).
//! ccusage reads `<synthetic>` lines (zero tokens). ccusage skips lines
//! ctxasm keeps: a line without the literal bytes `"usage":{` (JSON written
//! with spaces), a timestamp with other than 0 or 3 fraction digits, a `:null` value for any of `id`,
//! `cwd`, `model`, `speed`, `costUSD`, `version`, `sessionId`, `requestId`,
//! `isApiErrorMessage`, `cache_*_input_tokens` anywhere in the line, a
//! missing `input_tokens` / `output_tokens`, an empty id or a `version` that
//! is not `N.N.N…` (scripts/compare-ccusage reports such lines).
//!
//! # Sessions, projects, days
//!
//! A request's session is its discovery group (a main transcript and its
//! subagent files): its id is the main file's name without `.jsonl` (for a
//! group of subagent files alone, the `<sid>` directory above `subagents/`,
//! else the first `sessionId` of the file). Its project is the projects-dir
//! folder holding the session (`<project>/<sid>.jsonl`,
//! `<project>/<sid>/subagents/…`). Its day is the UTC date of its
//! `timestamp` (`unknown` without a readable one).
//!
//! # Speed and memory
//!
//! [`recorded_report`] reads each session lean ([`crate::input::scan`]:
//! per line simd-json's tape only, the usage fields and the tree's links
//! taken from it, no typed entries, the full read's diagnostics), makes its
//! usage lines compact on the worker that read it ([`SessionLines`]:
//! consecutive main-chain copies of a message already collapsed, ids as
//! 64-bit hashes), and applies the rule as the sessions come, in path
//! order ([`CorpusUsage`]). Memory is the largest session's read plus about
//! 70 bytes per distinct request of the corpus (the rule is global: any
//! later file may copy any request). The modeled cost (`cost::modeled`)
//! counts its recorded usage the same way from its own full read.
//! [`recorded_requests_corpus`] (every line typed, full requests, then
//! [`dedup_files`]) gives the same report; the tests compare the two.
//!
//! The parts: this module reads the usage lines, `dedup` applies the rule
//! to full requests ([`dedup_files`]), `stream` to compact ones
//! ([`CorpusUsage`]), `report` sums the requests ([`RecordedReport`]).
//! Reads transcripts only through `corpus`; prints nothing.

pub mod carry;
mod dedup;
mod report;
mod stream;
mod views;

pub use dedup::dedup_files;
pub use report::{
    CacheCreation, Headline, ModelUsage, PricingInfo, RecordedReport, SessionUsage, Totals, Unpriced, UnpricedList,
    UsageSum, recorded_report_and_lines,
};
pub use stream::{CorpusUsage, SessionLines};
pub use views::{BLOCK_MS, BlockInfo, UsageView, ViewKind, ViewOptions, ViewRow};

use super::pricing::Pricing;
use super::tokens::TokenCounts;
use crate::corpus::{RunOptions, ScannedSession, Session, for_each_session, stream_scanned_sessions};
use crate::diag::Diagnostic;
use crate::input::discover::{Discovery, FileKind, TranscriptFile};
use crate::input::scan::UsageLine;
use crate::time::parse_rfc3339_ms;
use dedup::preferred;
use serde::Serialize;
use std::path::Path;

/// One request with its recorded usage.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RecordedRequest {
    /// The session (see the module docs).
    pub session_id: String,
    /// The projects-dir folder of the session.
    pub project: String,
    /// The subagent, for lines of a subagent file (else the line's `agentId`).
    pub agent_id: Option<String>,
    /// The file of the line that carries the usage, as discovered.
    pub file: String,
    /// Its 1-based line number.
    pub line: u32,
    pub timestamp: Option<String>,
    pub model: Option<String>,
    pub message_id: Option<String>,
    pub request_id: Option<String>,
    pub is_sidechain: bool,
    pub tokens: TokenCounts,
    /// `None` until priced ([`price_requests`]), and when the model has no
    /// price.
    #[serde(serialize_with = "crate::cost::format::json::opt_usd")]
    pub cost_usd: Option<f64>,
    /// Billed at the model's long-context tier (whole request).
    pub long_context: bool,
}

/// Price each request with `pricing` (sets `cost_usd` and `long_context`).
pub fn price_requests(requests: &mut [RecordedRequest], pricing: &Pricing) {
    for r in requests {
        let price = r.model.as_deref().and_then(|m| pricing.price(m));
        r.cost_usd = price.map(|p| p.cost(&r.tokens));
        r.long_context = price.is_some_and(|p| p.is_long_context(&r.tokens));
    }
}

/// One usage line while the rule runs: the request it would be, and the
/// fields the rule compares.
#[derive(Debug, Clone)]
pub struct Candidate {
    pub(super) req: RecordedRequest,
    /// The line's `sessionId`, else the request's session.
    pub(super) line_session: String,
    /// The timestamp in ms since the epoch.
    pub(super) ts_ms: Option<i64>,
}

/// The requests of one session, each once (the rule of the module docs,
/// within the session), in file-path then line order; not priced.
pub fn recorded_requests(session: &Session<'_, '_>) -> Vec<RecordedRequest> {
    dedup_files(session_candidates(session))
}

/// The usage lines of each file of a session (for [`dedup_files`]).
pub type FileCandidates = Vec<(std::path::PathBuf, Vec<Candidate>)>;

/// The usage lines of `session`, by file, before the rule runs (what a
/// shard's partial report carries, see [`carry`]).
pub fn session_usage_lines(session: &Session<'_, '_>) -> FileCandidates {
    session_candidates(session)
}

/// The requests of every session of `disc`, each once across the whole
/// corpus (ccusage's global rule), priced with `pricing`; with the sessions
/// that could not be read (and discovery's problems) as diagnostics.
pub fn recorded_requests_corpus(
    disc: &Discovery,
    run: &RunOptions<'_>,
    pricing: &Pricing,
) -> (Vec<RecordedRequest>, Vec<Diagnostic>) {
    let (files, diagnostics) = usage_lines_corpus(disc, run);
    let mut requests = dedup_files(files);
    price_requests(&mut requests, pricing);
    (requests, diagnostics)
}

/// The usage lines of every session of `disc`, by file, before the rule;
/// with the sessions that could not be read (and discovery's problems) as
/// diagnostics.
pub fn usage_lines_corpus(disc: &Discovery, run: &RunOptions<'_>) -> (FileCandidates, Vec<Diagnostic>) {
    let mut diagnostics = disc.diagnostics.clone();
    let mut files: FileCandidates = Vec::new();
    // What reading found (bad lines) is reported with the rest.
    for result in for_each_session(disc, run, candidates_and_read_diagnostics) {
        match result {
            Ok((per_file, diags)) => {
                files.extend(per_file);
                diagnostics.extend(diags);
            }
            Err(diag) => diagnostics.push(diag),
        }
    }
    (files, diagnostics)
}

/// Every usage line of each file of the session, with the file's path.
/// [`session_candidates`] and what reading the session's files found.
fn candidates_and_read_diagnostics(session: &Session<'_, '_>) -> (FileCandidates, Vec<Diagnostic>) {
    let read = session.files().flat_map(|f| f.parsed.diagnostics.iter().cloned()).collect();
    (session_candidates(session), read)
}

fn session_candidates(session: &Session<'_, '_>) -> FileCandidates {
    let (session_id, project) = session_identity(session);
    session
        .files()
        .map(|f| {
            let mut lines: Vec<Candidate> = Vec::new();
            let usage = f.parsed.entries.iter().filter_map(UsageLine::of_entry);
            for c in usage.filter_map(|u| candidate(f.file, &u, &session_id, &project)) {
                // Consecutive main-chain copies of one streamed message (same
                // message id, request id and line session) collapse here
                // already, with the same result as the rule (the second always
                // matches the request the first matched or became: a
                // main-chain line that matches by the sidechain-replay clause
                // always replaces; the preference is a max with first-seen
                // ties), and a fraction of the lines held in memory.
                if let Some(last) = lines.last_mut()
                    && !c.req.is_sidechain
                    && !last.req.is_sidechain
                    && c.req.message_id.is_some()
                    && last.req.message_id == c.req.message_id
                    && last.req.request_id == c.req.request_id
                    && last.line_session == c.line_session
                {
                    if preferred(&c.req, &last.req) {
                        *last = c;
                    }
                    continue;
                }
                lines.push(c);
            }
            (f.file.path.clone(), lines)
        })
        .collect()
}

fn candidate(file: &TranscriptFile, u: &UsageLine<'_>, session_id: &str, project: &str) -> Option<Candidate> {
    if u.model == Some("<synthetic>") {
        return None;
    }
    let mut tokens = TokenCounts::from_usage(&u.usage);
    if u.usage.cache_creation_5m.is_none() && u.usage.cache_creation_1h.is_none() && u.cache_creation_object {
        // A `cache_creation` object without either key: ccusage counts its
        // (absent) keys, 0, not `cache_creation_input_tokens`.
        tokens.cache_write_5m = 0;
    }
    let agent_id = match &file.kind {
        FileKind::Subagent { agent_id, .. } => Some(agent_id.clone()),
        FileKind::Session => u.agent_id.map(str::to_string),
    };
    let req = RecordedRequest {
        session_id: session_id.to_string(),
        project: project.to_string(),
        agent_id,
        file: file.display.clone(),
        line: u.line,
        timestamp: u.timestamp.map(str::to_string),
        model: u.model.map(str::to_string),
        message_id: u.message_id.map(str::to_string),
        request_id: u.request_id.map(str::to_string),
        is_sidechain: u.is_sidechain,
        tokens,
        cost_usd: None,
        long_context: false,
    };
    Some(Candidate {
        line_session: u.session_id.unwrap_or(session_id).to_string(),
        ts_ms: u.timestamp.and_then(parse_rfc3339_ms),
        req,
    })
}

/// The usage lines of a session read in full, compact, for
/// [`CorpusUsage`].
pub fn session_lines(session: &Session<'_, '_>, disc: &Discovery) -> SessionLines {
    let (session_id, project) = session_identity(session);
    let mut out = SessionLines::new(session_id, project);
    for f in session.files() {
        out.add_file(file_index(disc, f.file), f.parsed.entries.iter().filter_map(UsageLine::of_entry));
    }
    out
}

/// The usage lines of a session read lean, compact, for [`CorpusUsage`].
pub fn scanned_session_lines(session: &ScannedSession<'_, '_>) -> SessionLines {
    let (session_id, project) = session_identity_of(
        session.main.as_ref().map(|m| m.file.path.as_path()),
        session.subagents.first().map(|f| (f.file.path.as_path(), f.scan.session_id)),
    );
    let mut out = SessionLines::new(session_id, project);
    for f in session.files() {
        out.add_file(f.index, f.scan.usage.iter().copied());
    }
    out
}

/// The index of `file` in `disc.files` (sorted by path bytes).
fn file_index(disc: &Discovery, file: &TranscriptFile) -> usize {
    let key = file.path.as_os_str().as_encoded_bytes();
    disc.files.binary_search_by(|f| f.path.as_os_str().as_encoded_bytes().cmp(key)).unwrap_or(disc.files.len())
}

/// The recorded-usage report of `disc` (global dedup, priced): every
/// session read lean ([`crate::input::scan`]) on the worker threads, its
/// usage lines made compact there, and the rule applied as the sessions
/// come, in discovery order ([`CorpusUsage`]). The same report as
/// [`RecordedReport::from_requests`] of [`recorded_requests_corpus`].
pub fn recorded_report(disc: &Discovery, run: &RunOptions<'_>, pricing: &Pricing) -> RecordedReport {
    corpus_usage(disc, run).finish(pricing)
}

/// The view `opts` (`ctxasm cost daily|monthly|session|blocks`) of the
/// requests [`recorded_report`] counts, read the same way.
pub fn usage_view(disc: &Discovery, run: &RunOptions<'_>, pricing: &Pricing, opts: &ViewOptions) -> UsageView {
    corpus_usage(disc, run).finish_view(pricing, opts)
}

/// Every session of `disc` read lean and its requests counted by the rule
/// (see [`recorded_report`]).
fn corpus_usage(disc: &Discovery, run: &RunOptions<'_>) -> CorpusUsage {
    let mut acc = CorpusUsage::new(disc);
    let mut groups = disc.groups.iter();
    let work = |_: &bumpalo::Bump, s: &ScannedSession<'_, '_>| {
        let diags: Vec<Diagnostic> = s.diagnostics().cloned().collect();
        Ok((scanned_session_lines(s), diags))
    };
    let sink = |r: Result<(SessionLines, Vec<Diagnostic>), Diagnostic>| {
        let Some(group) = groups.next() else { return Ok(()) };
        match r {
            Ok((lines, diags)) => {
                diags.into_iter().for_each(|d| acc.diagnostic(d));
                acc.add(group, Some(lines));
            }
            Err(d) => {
                acc.diagnostic(d);
                acc.add(group, None);
            }
        }
        Ok(())
    };
    // The sink never fails.
    let _ = stream_scanned_sessions(disc, run, |_| 0, Err, work, sink);
    acc
}

fn file_name(p: &Path) -> String {
    p.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
}

/// `(session id, project)` of a session (see the module docs).
pub(crate) fn session_identity(session: &Session<'_, '_>) -> (String, String) {
    session_identity_of(
        session.main.as_ref().map(|m| m.file.path.as_path()),
        session.subagents.first().map(|f| (f.file.path.as_path(), f.session_id())),
    )
}

/// [`session_identity`] from the main file's path, else the first subagent
/// file's path and the first `sessionId` of its entries.
fn session_identity_of(main: Option<&Path>, first_subagent: Option<(&Path, Option<&str>)>) -> (String, String) {
    if let Some(p) = main {
        let sid = p.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
        return (sid, p.parent().map(file_name).unwrap_or_default());
    }
    let Some((p, first_sid)) = first_subagent else { return (String::new(), String::new()) };
    // <project>/<sid>/subagents[/workflows/<run>]/agent-<id>.jsonl
    if let Some(subagents) = p.ancestors().skip(1).find(|a| a.file_name().is_some_and(|n| n == "subagents"))
        && let Some(sid_dir) = subagents.parent()
    {
        return (file_name(sid_dir), sid_dir.parent().map(file_name).unwrap_or_default());
    }
    let sid = first_sid
        .map(str::to_string)
        .or_else(|| p.file_stem().map(|s| s.to_string_lossy().into_owned()))
        .unwrap_or_default();
    (sid, p.parent().map(file_name).unwrap_or_default())
}
