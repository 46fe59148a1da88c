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
//! # Speed
//!
//! The report reads every line through the typed model
//! ([`for_each_session`], in parallel), collects the usage lines of each
//! file (consecutive main-chain copies of a message already collapsed), and
//! runs the rule once over the corpus. Measured with scripts/compare-ccusage
//! on 2 cores (median of 5): a 938 MB synthetic corpus in 0.89 – 1.05 s
//! against 1.48 – 1.66 s for ccusage 20.0.24's native binary (ratio 0.54 –
//! 0.71), peak RSS about 100 MB against 170 MB; the 13.6 MB public corpus in
//! 0.038 s against 0.050 s. A raw-line prefilter on `"usage":{` was not
//! needed.

use super::pricing::Pricing;
use super::tokens::TokenCounts;
use crate::corpus::{ParsedFile, RunOptions, Session, for_each_session};
use crate::diag::Diagnostic;
use crate::input::discover::{Discovery, FileKind};
use crate::model::entry::Entry;
use crate::time::{parse_rfc3339_ms, utc_day};
use rustc_hash::FxHashMap;
use serde::Serialize;
use smallvec::SmallVec;
use std::collections::BTreeMap;
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
    req: RecordedRequest,
    /// The line's `sessionId`, else the request's session.
    line_session: String,
    /// The timestamp in ms since the epoch.
    ts_ms: Option<i64>,
}

/// The requests of one session, each once (the rule of the module docs,
/// within the session), in file-path then line order; not priced.
pub fn recorded_requests(session: &Session<'_, '_>) -> Vec<RecordedRequest> {
    dedup_files(session_candidates(session))
}

/// The usage lines of each file of a session (for [`dedup_files`]).
pub type FileCandidates = Vec<(std::path::PathBuf, Vec<Candidate>)>;

/// The usage lines of `session`, by file, before the rule runs: callers
/// that read each session once keep these and run [`dedup_files`] on the
/// session's (its requests) and on the corpus's (the global count).
pub fn session_usage_lines(session: &Session<'_, '_>) -> FileCandidates {
    session_candidates(session)
}

/// The rule of the module docs over `files` in path order, then line order;
/// not priced.
pub fn dedup_files(mut files: FileCandidates) -> Vec<RecordedRequest> {
    files.sort_by(|a, b| path_bytes(&a.0).cmp(path_bytes(&b.0)));
    dedup(files.into_iter().flat_map(|(_, c)| c))
}

/// The requests of every session of `disc`, each once across the whole
/// corpus (ccusage's global rule), priced with `pricing`; with the sessions
/// that could not be read (and discovery's problems) as diagnostics.
pub fn recorded_requests_corpus(
    disc: &Discovery,
    run: &RunOptions<'_>,
    pricing: &Pricing,
) -> (Vec<RecordedRequest>, Vec<Diagnostic>) {
    let mut diagnostics = disc.diagnostics.clone();
    let mut files: FileCandidates = Vec::new();
    for result in for_each_session(disc, run, session_candidates) {
        match result {
            Ok(per_file) => files.extend(per_file),
            Err(diag) => diagnostics.push(diag),
        }
    }
    let mut requests = dedup_files(files);
    price_requests(&mut requests, pricing);
    (requests, diagnostics)
}

fn path_bytes(p: &Path) -> &[u8] {
    p.as_os_str().as_encoded_bytes()
}

/// Every usage line of each file of the session, with the file's path.
fn session_candidates(session: &Session<'_, '_>) -> FileCandidates {
    let (session_id, project) = session_identity(session);
    session
        .files()
        .map(|f| {
            let mut lines: Vec<Candidate> = Vec::new();
            for c in f.parsed.entries.iter().filter_map(|e| candidate(f, e, &session_id, &project)) {
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

fn candidate(f: &ParsedFile<'_, '_>, e: &Entry<'_>, session_id: &str, project: &str) -> Option<Candidate> {
    let a = e.as_assistant()?;
    let usage = a.usage.as_ref()?;
    if a.model == Some("<synthetic>") {
        return None;
    }
    let mut tokens = TokenCounts::from_usage(usage);
    if usage.cache_creation_5m.is_none() && usage.cache_creation_1h.is_none() {
        // A `cache_creation` object without either key: ccusage counts its
        // (absent) keys, 0, not `cache_creation_input_tokens`.
        let split = e.raw.get("message").and_then(|m| m.get("usage")).and_then(|u| u.get("cache_creation"));
        if split.is_some_and(|c| c.as_object().is_some()) {
            tokens.cache_write_5m = 0;
        }
    }
    let agent_id = match &f.file.kind {
        FileKind::Subagent { agent_id, .. } => Some(agent_id.clone()),
        FileKind::Session => e.env.agent_id.map(str::to_string),
    };
    let req = RecordedRequest {
        session_id: session_id.to_string(),
        project: project.to_string(),
        agent_id,
        file: f.file.display.clone(),
        line: e.line,
        timestamp: e.env.timestamp.map(str::to_string),
        model: a.model.map(str::to_string),
        message_id: a.message_id.map(str::to_string),
        request_id: a.request_id.map(str::to_string),
        is_sidechain: e.env.is_sidechain,
        tokens,
        cost_usd: None,
        long_context: false,
    };
    Some(Candidate {
        line_session: e.env.session_id.unwrap_or(session_id).to_string(),
        ts_ms: e.env.timestamp.and_then(parse_rfc3339_ms),
        req,
    })
}

fn file_name(p: &Path) -> String {
    p.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
}

/// `(session id, project)` of a session (see the module docs).
pub(crate) fn session_identity(session: &Session<'_, '_>) -> (String, String) {
    if let Some(main) = &session.main {
        let p = &main.file.path;
        let sid = p.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
        return (sid, p.parent().map(file_name).unwrap_or_default());
    }
    let Some(first) = session.subagents.first() else { return (String::new(), String::new()) };
    let p = &first.file.path;
    // <project>/<sid>/subagents[/workflows/<run>]/agent-<id>.jsonl
    if let Some(subagents) = p.ancestors().skip(1).find(|a| a.file_name().is_some_and(|n| n == "subagents"))
        && let Some(sid_dir) = subagents.parent()
    {
        return (file_name(sid_dir), sid_dir.parent().map(file_name).unwrap_or_default());
    }
    let sid = first
        .session_id()
        .map(str::to_string)
        .or_else(|| p.file_stem().map(|s| s.to_string_lossy().into_owned()))
        .unwrap_or_default();
    (sid, p.parent().map(file_name).unwrap_or_default())
}

/// ccusage's preference (rule 4): `true` when `new` replaces `kept`.
fn preferred(new: &RecordedRequest, kept: &RecordedRequest) -> bool {
    if new.is_sidechain != kept.is_sidechain {
        return kept.is_sidechain;
    }
    new.tokens.total() > kept.tokens.total()
}

fn push_index(list: &mut SmallVec<[usize; 2]>, i: usize) {
    if !list.contains(&i) {
        list.push(i);
    }
}

/// The exact key of rule 2: (message id, request id), and the line session
/// when there is no request id.
type ExactKey = (String, Option<String>, Option<String>);

fn exact_key(c: &Candidate, mid: &str) -> ExactKey {
    let session = c.req.request_id.is_none().then(|| c.line_session.clone());
    (mid.to_string(), c.req.request_id.clone(), session)
}

/// The rule of the module docs over `lines` in order; each kept request is
/// at the position of its first line.
fn dedup(lines: impl IntoIterator<Item = Candidate>) -> Vec<RecordedRequest> {
    let mut kept: Vec<Candidate> = Vec::new();
    // Exact key / message id → positions in `kept` (ccusage's index lists: a
    // position stays listed under a key its line no longer has, so every hit
    // is checked against the kept line).
    let mut by_key: FxHashMap<ExactKey, SmallVec<[usize; 2]>> = FxHashMap::default();
    let mut by_message: FxHashMap<String, SmallVec<[usize; 2]>> = FxHashMap::default();
    for line in lines {
        let Some(mid) = line.req.message_id.clone() else {
            kept.push(line);
            continue;
        };
        let key = exact_key(&line, &mid);
        let exact = by_key.get(&key).and_then(|list| {
            list.iter().copied().find(|&i| kept[i].req.message_id.is_some() && exact_key(&kept[i], &mid) == key)
        });
        let found = exact.or_else(|| {
            by_message.get(&mid).and_then(|list| {
                list.iter().copied().find(|&i| {
                    let k = &kept[i];
                    k.req.message_id.as_deref() == Some(mid.as_str())
                        && (line.req.is_sidechain || k.req.is_sidechain)
                        && k.line_session == line.line_session
                        && k.ts_ms.is_some()
                        && k.ts_ms == line.ts_ms
                })
            })
        });
        let i = match found {
            Some(i) => {
                if !preferred(&line.req, &kept[i].req) {
                    continue;
                }
                kept[i] = line;
                i
            }
            None => {
                kept.push(line);
                kept.len() - 1
            }
        };
        push_index(by_key.entry(key).or_default(), i);
        push_index(by_message.entry(mid).or_default(), i);
    }
    kept.into_iter().map(|c| c.req).collect()
}

/// The keys of every `totals` object.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Totals {
    pub requests: u64,
    pub input_tokens: u64,
    /// 5-minute + 1-hour cache writes.
    pub cache_creation_input_tokens: u64,
    pub cache_read_input_tokens: u64,
    pub output_tokens: u64,
    /// Priced requests only (see `unpriced_requests`).
    pub cost_usd: f64,
}

/// The TTL split of `cache_creation_input_tokens`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct CacheCreation {
    pub ephemeral_5m_input_tokens: u64,
    pub ephemeral_1h_input_tokens: u64,
}

/// Sums over a set of requests.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct UsageSum {
    pub totals: Totals,
    pub cache_creation: CacheCreation,
    /// Requests whose model has no price (not in `cost_usd`).
    pub unpriced_requests: u64,
    /// Requests billed at a long-context tier.
    pub long_context_requests: u64,
}

impl UsageSum {
    fn add(&mut self, r: &RecordedRequest) {
        let t = &r.tokens;
        self.totals.requests += 1;
        self.totals.input_tokens += t.input;
        self.totals.cache_creation_input_tokens += t.cache_write();
        self.totals.cache_read_input_tokens += t.cache_read;
        self.totals.output_tokens += t.output;
        self.cache_creation.ephemeral_5m_input_tokens += t.cache_write_5m;
        self.cache_creation.ephemeral_1h_input_tokens += t.cache_write_1h;
        match r.cost_usd {
            Some(c) => self.totals.cost_usd += c,
            None => self.unpriced_requests += 1,
        }
        self.long_context_requests += u64::from(r.long_context);
    }
}

/// One session's row.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct SessionUsage {
    pub session_id: String,
    pub project: String,
    pub first_timestamp: Option<String>,
    pub last_timestamp: Option<String>,
    /// Models in order of first use.
    pub models: Vec<String>,
    #[serde(flatten)]
    pub usage: UsageSum,
    #[serde(skip)]
    first_ms: Option<i64>,
    #[serde(skip)]
    last_ms: Option<i64>,
}

/// One model's row.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ModelUsage {
    /// The price-table id the model matched (`None`: unpriced).
    pub priced_as: Option<String>,
    #[serde(flatten)]
    pub usage: UsageSum,
}

/// Where the prices come from.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct PricingInfo {
    pub source: String,
    pub date: String,
}

/// The recorded-usage report of a corpus (`ctxasm cost --recorded-only`).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct RecordedReport {
    /// Exactly `requests, input_tokens, cache_creation_input_tokens,
    /// cache_read_input_tokens, output_tokens, cost_usd`.
    pub totals: Totals,
    pub cache_creation: CacheCreation,
    pub unpriced_requests: u64,
    /// Models without a price, sorted.
    pub unpriced_models: Vec<String>,
    pub long_context_requests: u64,
    pub pricing: PricingInfo,
    /// Sorted by project, then session id.
    pub by_session: Vec<SessionUsage>,
    pub by_project: BTreeMap<String, UsageSum>,
    /// UTC dates (`YYYY-MM-DD`), `unknown` without a timestamp.
    pub by_day: BTreeMap<String, UsageSum>,
    /// By `message.model` as recorded (`unknown` when absent).
    pub by_model: BTreeMap<String, ModelUsage>,
    /// Paths that could not be read, sessions that failed.
    pub diagnostics: Vec<Diagnostic>,
}

impl RecordedReport {
    /// Sum priced requests (from [`recorded_requests_corpus`]).
    pub fn from_requests(requests: &[RecordedRequest], pricing: &Pricing, diagnostics: Vec<Diagnostic>) -> Self {
        let mut rep = RecordedReport {
            pricing: PricingInfo { source: pricing.source.clone(), date: pricing.date.clone() },
            diagnostics,
            ..RecordedReport::default()
        };
        let mut all = UsageSum::default();
        let mut sessions: BTreeMap<(&str, &str), SessionUsage> = BTreeMap::new();
        for r in requests {
            all.add(r);
            let s = sessions.entry((r.project.as_str(), r.session_id.as_str())).or_insert_with(|| SessionUsage {
                session_id: r.session_id.clone(),
                project: r.project.clone(),
                ..SessionUsage::default()
            });
            s.usage.add(r);
            if let Some(ts) = &r.timestamp
                && let Some(ms) = parse_rfc3339_ms(ts)
            {
                if s.first_ms.is_none_or(|f| ms < f) {
                    s.first_ms = Some(ms);
                    s.first_timestamp = Some(ts.clone());
                }
                if s.last_ms.is_none_or(|l| ms > l) {
                    s.last_ms = Some(ms);
                    s.last_timestamp = Some(ts.clone());
                }
            }
            let model = r.model.as_deref().unwrap_or("unknown");
            if !s.models.iter().any(|m| m == model) {
                s.models.push(model.to_string());
            }
            rep.by_project.entry(r.project.clone()).or_default().add(r);
            let day = r.timestamp.as_deref().and_then(utc_day).unwrap_or_else(|| "unknown".to_string());
            rep.by_day.entry(day).or_default().add(r);
            let m = rep.by_model.entry(model.to_string()).or_insert_with(|| ModelUsage {
                priced_as: r.model.as_deref().and_then(|m| pricing.price(m)).map(|p| p.id.clone()),
                ..ModelUsage::default()
            });
            m.usage.add(r);
        }
        rep.totals = all.totals;
        rep.cache_creation = all.cache_creation;
        rep.unpriced_requests = all.unpriced_requests;
        rep.long_context_requests = all.long_context_requests;
        rep.unpriced_models =
            rep.by_model.iter().filter(|(_, m)| m.usage.unpriced_requests > 0).map(|(k, _)| k.clone()).collect();
        rep.by_session = sessions.into_values().collect();
        rep
    }
}

/// The recorded-usage report of `disc` (global dedup, priced).
pub fn recorded_report(disc: &Discovery, run: &RunOptions<'_>, pricing: &Pricing) -> RecordedReport {
    let (requests, diagnostics) = recorded_requests_corpus(disc, run, pricing);
    RecordedReport::from_requests(&requests, pricing, diagnostics)
}

#[cfg(test)]
mod tests {
    use super::*;

    const T0: &str = "2026-01-01T00:00:00.000Z";
    const T1: &str = "2026-01-01T01:00:00.000Z";

    /// A usage line: message id, request id, sidechain, input tokens, line,
    /// session, timestamp.
    fn c(mid: Option<&str>, rid: Option<&str>, sc: bool, input: u64, line: u32, sid: &str, ts: &str) -> Candidate {
        Candidate {
            req: RecordedRequest {
                session_id: sid.into(),
                project: "p".into(),
                agent_id: None,
                file: "f".into(),
                line,
                timestamp: Some(ts.into()),
                model: None,
                message_id: mid.map(str::to_string),
                request_id: rid.map(str::to_string),
                is_sidechain: sc,
                tokens: TokenCounts { input, ..TokenCounts::default() },
                cost_usd: None,
                long_context: false,
            },
            line_session: sid.into(),
            ts_ms: parse_rfc3339_ms(ts),
        }
    }

    fn kept(lines: Vec<Candidate>) -> Vec<(u32, u64)> {
        dedup(lines).iter().map(|r| (r.line, r.tokens.input)).collect()
    }

    #[test]
    fn streamed_copies_keep_the_largest_usage_at_the_first_position() {
        let s = "S1";
        let out = kept(vec![
            c(Some("m1"), Some("r1"), false, 5, 1, s, T0),
            c(Some("m2"), Some("r2"), false, 7, 2, s, T0),
            c(Some("m1"), Some("r1"), false, 500, 3, s, T1),
            c(Some("m1"), Some("r1"), false, 500, 4, s, T1),
            c(Some("m1"), Some("r1"), false, 4, 5, s, T1),
            c(None, None, false, 1, 6, s, T0),
            c(None, None, false, 1, 7, s, T0),
            // Same message id, another request id, both main chain: distinct.
            c(Some("m1"), Some("r9"), false, 2, 8, s, T0),
            // Without a request id: one request per session.
            c(Some("m3"), None, false, 3, 9, s, T0),
            c(Some("m3"), None, false, 6, 10, s, T1),
            c(Some("m3"), None, false, 8, 11, "S2", T0),
        ]);
        assert_eq!(out, vec![(3, 500), (2, 7), (6, 1), (7, 1), (8, 2), (10, 6), (11, 8)]);
    }

    /// The cases measured on the ccusage 20.0.24 binary (input tokens of the
    /// lines → what it counts).
    #[test]
    fn ccusage_20_0_24_cases() {
        let (m, r1, r2) = (Some("m1"), Some("r1"), Some("r2"));
        // An exact copy: main chain beats sidechain, whatever the order and size.
        assert_eq!(kept(vec![c(m, r1, true, 100, 1, "S1", T0), c(m, r1, false, 10, 2, "S1", T0)]), [(2, 10)]);
        assert_eq!(kept(vec![c(m, r1, false, 10, 1, "S1", T0), c(m, r1, true, 100, 2, "S1", T0)]), [(1, 10)]);
        // Exact copies collapse across sessions and timestamps.
        assert_eq!(kept(vec![c(m, r1, false, 10, 1, "S1", T0), c(m, r1, false, 20, 2, "S2", T1)]), [(2, 20)]);
        // A sidechain replay (new request id): same session and timestamp only.
        assert_eq!(kept(vec![c(m, r1, false, 10, 1, "S1", T0), c(m, r2, true, 100, 2, "S1", T0)]), [(1, 10)]);
        assert_eq!(kept(vec![c(m, r2, true, 100, 1, "S1", T0), c(m, r1, false, 10, 2, "S1", T0)]), [(2, 10)]);
        assert_eq!(kept(vec![c(m, r1, false, 100, 1, "S1", T0), c(m, r2, true, 10, 2, "S1", T0)]), [(1, 100)]);
        assert_eq!(kept(vec![c(m, r1, false, 10, 1, "S1", T0), c(m, r2, true, 100, 2, "S1", T1)]).len(), 2);
        let t0_no_millis = "2026-01-01T00:00:00Z";
        assert_eq!(kept(vec![c(m, r1, false, 10, 1, "S1", t0_no_millis), c(m, r2, true, 20, 2, "S1", T0)]).len(), 1);
        let near = "2026-01-01T00:00:00.001Z";
        assert_eq!(kept(vec![c(m, r1, false, 10, 1, "S1", T0), c(m, r2, true, 20, 2, "S1", near)]).len(), 2);
        assert_eq!(kept(vec![c(m, r1, false, 10, 1, "S1", T0), c(m, r2, true, 20, 2, "S2", T0)]).len(), 2);
        assert_eq!(kept(vec![c(m, r1, true, 10, 1, "S1", T0), c(m, r2, true, 20, 2, "S1", T0)]), [(2, 20)]);
        assert_eq!(kept(vec![c(m, r1, true, 10, 1, "S1", T0), c(m, r2, true, 20, 2, "S1", T1)]).len(), 2);
        // Same message id, new request id, both main chain: two requests.
        assert_eq!(kept(vec![c(m, r1, false, 10, 1, "S1", T0), c(m, r2, false, 100, 2, "S1", T0)]).len(), 2);
        // No request id: by session, any timestamp; main chain wins.
        assert_eq!(kept(vec![c(m, None, false, 10, 1, "S1", T0), c(m, None, false, 20, 2, "S1", T1)]), [(2, 20)]);
        assert_eq!(kept(vec![c(m, None, false, 10, 1, "S1", T0), c(m, None, false, 20, 2, "S2", T0)]).len(), 2);
        assert_eq!(kept(vec![c(m, None, true, 30, 1, "S1", T0), c(m, None, false, 20, 2, "S1", T0)]), [(2, 20)]);
        // Equal totals: the first stays; a later smaller copy does not replace.
        assert_eq!(kept(vec![c(m, r1, false, 10, 1, "S1", T0), c(m, r1, false, 10, 2, "S1", T0)]), [(1, 10)]);
        assert_eq!(kept(vec![c(m, r1, false, 10, 1, "S1", T0), c(m, r1, false, 5, 2, "S1", T0)]), [(1, 10)]);
    }

    #[test]
    fn timestamps() {
        assert_eq!(utc_day("2025-06-14T23:45:15.072Z").as_deref(), Some("2025-06-14"));
        assert_eq!(utc_day("2025-06-14T23:45:15Z").as_deref(), Some("2025-06-14"));
        assert_eq!(utc_day("2025-07-03T15:50:07.875917Z").as_deref(), Some("2025-07-03"));
        assert_eq!(utc_day("2025-06-14T23:45:15.072-02:00").as_deref(), Some("2025-06-15"));
        assert_eq!(utc_day("2025-01-01T00:30:00+01:00").as_deref(), Some("2024-12-31"));
        assert_eq!(utc_day("2024-02-29T12:00:00Z").as_deref(), Some("2024-02-29"));
        assert_eq!(utc_day("yesterday"), None);
        assert_eq!(utc_day("2025-06-14T23:45:15.Z"), None);
        assert_eq!(parse_rfc3339_ms("1970-01-01T00:00:01.5Z"), Some(1500));
        assert_eq!(parse_rfc3339_ms("2000-03-01T00:00:00Z"), Some(951_868_800_000));
    }
}
