//! The rule over a whole corpus in one pass, in memory that follows the
//! largest session: each session's usage lines become compact records
//! ([`SessionLines`], on the worker that read the session), and
//! [`CorpusUsage`] takes them in discovery order and applies the rule of
//! the module docs as `dedup` does, keeping per request only what the rule
//! compares and the report sums: the tokens, 128-bit hashes of the message
//! id, request id and line session, the instant, and indices of its session
//! and model. No string of a request is kept (a timestamp only when it is
//! not in the form its instant gives back).
//!
//! The result is `dedup_files` + [`RecordedReport::from_requests`]'s,
//! request for request and in the same order (so sums are added in the
//! same order): files are taken in path order (the order of
//! [`Discovery::files`]; a file that comes before another group's files is
//! held until their turn), lines in file order, and the rule is the same,
//! on hashes instead of strings (two different ids hash alike with
//! probability about 2^-128 per pair). `tests/it/cost_usage.rs` compares
//! the two on the fixtures and the corpora.

use super::RecordedReport;
use super::report::ReqView;
use crate::cost::pricing::Pricing;
use crate::cost::tokens::TokenCounts;
use crate::diag::Diagnostic;
use crate::input::discover::{Discovery, SessionGroup};
use crate::input::scan::UsageLine;
use crate::time::{format_rfc3339_ms, parse_rfc3339_ms};
use rustc_hash::FxHashMap;
use smallvec::SmallVec;
use std::borrow::Cow;
use std::collections::BTreeMap;
use xxhash_rust::xxh3::xxh3_128;

const NO_MODEL: u32 = u32::MAX;

/// One usage line, compact.
#[derive(Debug, Clone)]
struct Rec {
    tokens: TokenCounts,
    /// Hash of `message.id` (with [`Rec::has_mid`]).
    mid: u128,
    /// Hash of `requestId` (with [`Rec::has_rid`]).
    rid: u128,
    /// Hash of the line's session (its `sessionId`, else the request's).
    line_session: u128,
    /// The instant, in ms (with [`Rec::has_ts`]).
    ts_ms: i64,
    /// The timestamp as written, when [`format_rfc3339_ms`] does not give
    /// it back from `ts_ms` (a moment only: [`CorpusUsage`] keeps these
    /// apart).
    ts_text: Option<Box<str>>,
    /// Index of the model: the session's, then the corpus's.
    model: u32,
    /// Index of the session in [`CorpusUsage`] (set when taken).
    session: u32,
    has_mid: bool,
    has_rid: bool,
    has_ts: bool,
    is_sidechain: bool,
}

impl Rec {
    /// ccusage's preference (rule 4): `true` when `self` replaces `kept`.
    fn preferred_to(&self, kept: &Rec) -> bool {
        if self.is_sidechain != kept.is_sidechain {
            return kept.is_sidechain;
        }
        self.tokens.total() > kept.tokens.total()
    }

    /// Rule 2's key equal: same message id and request id, and without a
    /// request id the same line session.
    fn same_key(&self, o: &Rec) -> bool {
        self.has_mid
            && o.has_mid
            && self.mid == o.mid
            && self.has_rid == o.has_rid
            && self.rid == o.rid
            && (self.has_rid || self.line_session == o.line_session)
    }
}

fn hash(s: &str) -> u128 {
    xxh3_128(s.as_bytes())
}

/// The usage lines of one session, compact, by file.
#[derive(Debug, Default)]
pub struct SessionLines {
    session_id: String,
    project: String,
    /// The models the lines name, each once.
    models: Vec<String>,
    /// (index in [`Discovery::files`], the file's lines in order).
    files: Vec<(usize, Vec<Rec>)>,
}

impl SessionLines {
    /// For the session `(session_id, project)` (see the module docs of
    /// `usage`).
    pub fn new(session_id: String, project: String) -> Self {
        SessionLines { session_id, project, ..SessionLines::default() }
    }

    /// Add a file's usage lines (`index` in [`Discovery::files`]):
    /// `<synthetic>` lines are left out, and consecutive main-chain copies
    /// of one streamed message collapse as `session_candidates` collapses
    /// them.
    pub fn add_file<'a>(&mut self, index: usize, lines: impl IntoIterator<Item = UsageLine<'a>>) {
        let session = hash(&self.session_id);
        let mut recs: Vec<Rec> = Vec::new();
        for u in lines {
            if u.model == Some("<synthetic>") {
                continue;
            }
            let rec = self.rec(&u, session);
            if let Some(last) = recs.last_mut()
                && !rec.is_sidechain
                && !last.is_sidechain
                && rec.has_mid
                && last.same_key(&rec)
                && last.line_session == rec.line_session
            {
                if rec.preferred_to(last) {
                    *last = rec;
                }
                continue;
            }
            recs.push(rec);
        }
        self.files.push((index, recs));
    }

    fn rec(&mut self, u: &UsageLine<'_>, session: u128) -> Rec {
        let mut tokens = TokenCounts::from_usage(&u.usage);
        if u.usage.cache_creation_5m.is_none() && u.usage.cache_creation_1h.is_none() && u.cache_creation_object {
            // As `candidate`: a `cache_creation` object without either key.
            tokens.cache_write_5m = 0;
        }
        let ts_ms = u.timestamp.and_then(parse_rfc3339_ms);
        let ts_text = match (u.timestamp, ts_ms) {
            (Some(t), Some(ms)) if format_rfc3339_ms(ms, true) != t => Some(t.into()),
            _ => None,
        };
        let model = match u.model {
            None => NO_MODEL,
            Some(m) => match self.models.iter().position(|x| x == m) {
                Some(i) => i as u32,
                None => {
                    self.models.push(m.to_string());
                    (self.models.len() - 1) as u32
                }
            },
        };
        Rec {
            tokens,
            mid: u.message_id.map_or(0, hash),
            rid: u.request_id.map_or(0, hash),
            line_session: u.session_id.map_or(session, hash),
            ts_ms: ts_ms.unwrap_or(0),
            ts_text,
            model,
            session: 0,
            has_mid: u.message_id.is_some(),
            has_rid: u.request_id.is_some(),
            has_ts: ts_ms.is_some(),
            is_sidechain: u.is_sidechain,
        }
    }
}

/// The rule over a corpus, fed session by session in discovery order.
#[derive(Debug, Default)]
pub struct CorpusUsage {
    /// (session id, project) of each session taken.
    sessions: Vec<(String, String)>,
    models: Vec<String>,
    model_index: FxHashMap<String, u32>,
    /// Files taken but not yet counted: one before them in path order is
    /// still to come.
    waiting: BTreeMap<usize, Vec<Rec>>,
    /// The next file to count, in path order.
    next_file: usize,
    /// The kept requests, at the position of their first line.
    kept: Vec<Rec>,
    /// The timestamps of kept requests not in the form their instant gives.
    ts_text: FxHashMap<u32, Box<str>>,
    /// Message id hash → positions in `kept` (ccusage's index lists).
    by_message: FxHashMap<u128, SmallVec<[u32; 2]>>,
    diagnostics: Vec<Diagnostic>,
}

impl CorpusUsage {
    /// An empty count; discovery's problems are the first diagnostics.
    pub fn new(disc: &Discovery) -> Self {
        CorpusUsage { diagnostics: disc.diagnostics.clone(), ..CorpusUsage::default() }
    }

    /// A diagnostic in order (a session's read problems, a session that
    /// failed).
    pub fn diagnostic(&mut self, d: Diagnostic) {
        self.diagnostics.push(d);
    }

    /// Take the lines of the session of `group` (`None`: the session could
    /// not be read; its files count as empty).
    pub fn add(&mut self, group: &SessionGroup, lines: Option<SessionLines>) {
        match lines {
            None => {
                for i in group.files() {
                    self.waiting.insert(i, Vec::new());
                }
            }
            Some(s) => {
                let session = self.sessions.len() as u32;
                let models: Vec<u32> = s.models.into_iter().map(|m| self.model_id(m)).collect();
                self.sessions.push((s.session_id, s.project));
                for (i, mut recs) in s.files {
                    for r in &mut recs {
                        r.session = session;
                        if r.model != NO_MODEL {
                            r.model = models[r.model as usize];
                        }
                    }
                    self.waiting.insert(i, recs);
                }
            }
        }
        while let Some(recs) = self.waiting.remove(&self.next_file) {
            self.next_file += 1;
            self.count(recs);
        }
    }

    fn model_id(&mut self, m: String) -> u32 {
        if let Some(&i) = self.model_index.get(&m) {
            return i;
        }
        let i = self.models.len() as u32;
        self.models.push(m.clone());
        self.model_index.insert(m, i);
        i
    }

    /// The rule over one file's lines.
    fn count(&mut self, recs: Vec<Rec>) {
        for mut line in recs {
            let text = line.ts_text.take();
            if !line.has_mid {
                self.keep_new(line, text);
                continue;
            }
            let list = self.by_message.get(&line.mid);
            let exact = list.and_then(|l| l.iter().copied().find(|&i| self.kept[i as usize].same_key(&line)));
            let found = exact.or_else(|| {
                list.and_then(|l| {
                    l.iter().copied().find(|&i| {
                        let k = &self.kept[i as usize];
                        k.has_mid
                            && k.mid == line.mid
                            && (line.is_sidechain || k.is_sidechain)
                            && k.line_session == line.line_session
                            && k.has_ts
                            && line.has_ts
                            && k.ts_ms == line.ts_ms
                    })
                })
            });
            let mid = line.mid;
            let i = match found {
                Some(i) => {
                    if !line.preferred_to(&self.kept[i as usize]) {
                        continue;
                    }
                    self.kept[i as usize] = line;
                    match text {
                        Some(t) => self.ts_text.insert(i, t),
                        None => self.ts_text.remove(&i),
                    };
                    i
                }
                None => self.keep_new(line, text),
            };
            let list = self.by_message.entry(mid).or_default();
            if !list.contains(&i) {
                list.push(i);
            }
        }
    }

    fn keep_new(&mut self, line: Rec, text: Option<Box<str>>) -> u32 {
        let i = self.kept.len() as u32;
        self.kept.push(line);
        if let Some(t) = text {
            self.ts_text.insert(i, t);
        }
        i
    }

    /// The report: every request kept, priced with `pricing`, summed.
    pub fn finish(mut self, pricing: &Pricing) -> RecordedReport {
        // Files still waiting (none when every group was taken): in order.
        for (_, recs) in std::mem::take(&mut self.waiting) {
            self.count(recs);
        }
        let prices: Vec<_> = self.models.iter().map(|m| pricing.price(m)).collect();
        let views = self.kept.iter().enumerate().map(|(i, k)| {
            let (session_id, project) = &self.sessions[k.session as usize];
            let price = (k.model != NO_MODEL).then(|| prices[k.model as usize]).flatten();
            let timestamp = match self.ts_text.get(&(i as u32)) {
                Some(t) => Some(Cow::Borrowed(&**t)),
                None => k.has_ts.then(|| Cow::Owned(format_rfc3339_ms(k.ts_ms, true))),
            };
            ReqView {
                session_id,
                project,
                timestamp,
                model: (k.model != NO_MODEL).then(|| self.models[k.model as usize].as_str()),
                tokens: k.tokens,
                cost_usd: price.map(|p| p.cost(&k.tokens)),
                long_context: price.is_some_and(|p| p.is_long_context(&k.tokens)),
            }
        });
        RecordedReport::from_views(views, pricing, std::mem::take(&mut self.diagnostics))
    }
}
