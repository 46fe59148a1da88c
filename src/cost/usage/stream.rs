//! The rule over a whole corpus in one pass, in memory that follows the
//! largest session plus about 70 bytes per distinct request: each
//! session's usage lines become compact records ([`SessionLines`], on the
//! worker that read the session), and [`CorpusUsage`] takes them in
//! discovery order and applies the rule of the module docs as `dedup`
//! does, keeping per request only what the rule compares and the report
//! sums ([`Kept`], 64 bytes): the tokens, 64-bit hashes of the message id
//! and request id, an index of the line's session, the instant, and
//! indices of its session and model; the requests of one message id are
//! chained, and one table of 4-byte slots finds a message id's first. No
//! string of a request is kept (a timestamp only when it is not in the
//! form its instant gives back, token counts past 32 bits aside).
//!
//! The result is `dedup_files` + [`RecordedReport::from_requests`]'s,
//! request for request and in the same order (so sums are added in the
//! same order): files are taken in path order (the order of
//! [`Discovery::files`]; a file that comes before another group's files is
//! held until their turn), lines in file order, and the rule is the same,
//! on hashes instead of strings (two different ids hash alike with
//! probability about 2^-64 per pair: about 3e-8 for a million requests).
//! `tests/it/cost_usage.rs` compares the two on the fixtures and the
//! corpora.

use super::RecordedReport;
use super::report::{ReqView, Stamp};
use super::views::{UsageView, ViewOptions};
use crate::cost::pricing::Pricing;
use crate::cost::tokens::TokenCounts;
use crate::diag::Diagnostic;
use crate::input::discover::{Discovery, SessionGroup};
use crate::input::scan::UsageLine;
use crate::time::{is_rfc3339_ms_text, parse_rfc3339_ms};
use rustc_hash::FxHashMap;
use std::collections::BTreeMap;
use xxhash_rust::xxh3::xxh3_64;

const NO_MODEL: u32 = u32::MAX;
/// No next request of the same message id ([`Kept::next`]).
const NONE: u32 = u32::MAX;

const HAS_MID: u8 = 1;
const HAS_RID: u8 = 2;
const HAS_TS: u8 = 4;
const SIDECHAIN: u8 = 8;
/// A token count past `u32::MAX`: the counts are in [`CorpusUsage::big`].
const BIG: u8 = 16;

/// One usage line, compact, as a worker makes it.
#[derive(Debug, Clone)]
struct Rec {
    tokens: TokenCounts,
    /// Hash of `message.id` (with [`HAS_MID`]).
    mid: u64,
    /// Hash of `requestId` (with [`HAS_RID`]).
    rid: u64,
    /// Hash of the line's session (its `sessionId`, else the request's).
    line_session: u64,
    /// The instant, in ms (with [`HAS_TS`]).
    ts_ms: i64,
    /// The timestamp as written, when [`crate::time::format_rfc3339_ms`] does not give
    /// it back from `ts_ms` (a moment only: [`CorpusUsage`] keeps these
    /// apart).
    ts_text: Option<Box<str>>,
    /// Index of the model in [`SessionLines::models`].
    model: u32,
    flags: u8,
}

impl Rec {
    fn is(&self, flag: u8) -> bool {
        self.flags & flag != 0
    }

    /// Rule 2's key equal, between two lines of one session: same message
    /// id and request id, and without a request id the same line session.
    fn same_key(&self, o: &Rec) -> bool {
        self.is(HAS_MID)
            && o.is(HAS_MID)
            && self.mid == o.mid
            && self.is(HAS_RID) == o.is(HAS_RID)
            && self.rid == o.rid
            && (self.is(HAS_RID) || self.line_session == o.line_session)
    }
}

/// ccusage's preference (rule 4): `true` when a line with (`sidechain`,
/// `total`) replaces a kept one with (`kept_sidechain`, `kept_total`).
fn preferred(sidechain: bool, total: u64, kept_sidechain: bool, kept_total: u64) -> bool {
    if sidechain != kept_sidechain {
        return kept_sidechain;
    }
    total > kept_total
}

fn hash(s: &str) -> u64 {
    xxh3_64(s.as_bytes())
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
                && !rec.is(SIDECHAIN)
                && !last.is(SIDECHAIN)
                && rec.is(HAS_MID)
                && last.same_key(&rec)
                && last.line_session == rec.line_session
            {
                if preferred(false, rec.tokens.total(), false, last.tokens.total()) {
                    *last = rec;
                }
                continue;
            }
            recs.push(rec);
        }
        recs.shrink_to_fit();
        self.files.push((index, recs));
    }

    fn rec(&mut self, u: &UsageLine<'_>, session: u64) -> Rec {
        let mut tokens = TokenCounts::from_usage(&u.usage);
        if u.usage.cache_creation_5m.is_none() && u.usage.cache_creation_1h.is_none() && u.cache_creation_object {
            // As `candidate`: a `cache_creation` object without either key.
            tokens.cache_write_5m = 0;
        }
        let ts_ms = u.timestamp.and_then(parse_rfc3339_ms);
        let ts_text = match (u.timestamp, ts_ms) {
            (Some(t), Some(ms)) if !is_rfc3339_ms_text(ms, t) => Some(t.into()),
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
        let flag = |on: bool, f: u8| if on { f } else { 0 };
        Rec {
            tokens,
            mid: u.message_id.map_or(0, hash),
            rid: u.request_id.map_or(0, hash),
            line_session: u.session_id.map_or(session, hash),
            ts_ms: ts_ms.unwrap_or(0),
            ts_text,
            model,
            flags: flag(u.message_id.is_some(), HAS_MID)
                | flag(u.request_id.is_some(), HAS_RID)
                | flag(ts_ms.is_some(), HAS_TS)
                | flag(u.is_sidechain, SIDECHAIN),
        }
    }
}

/// A kept request: what the rule compares and the report sums.
#[derive(Debug, Clone, Copy)]
struct Kept {
    /// input, 5-minute writes, 1-hour writes, cache reads, output (with
    /// [`BIG`], in [`CorpusUsage::big`] instead).
    tokens: [u32; 5],
    ts_ms: i64,
    mid: u64,
    rid: u64,
    /// Index of the line's session in [`CorpusUsage::line_sessions`].
    line_session: u32,
    /// Index of the session in [`CorpusUsage::sessions`].
    session: u32,
    /// Index of the model in [`CorpusUsage::models`].
    model: u32,
    /// The next kept request of the same message id (chained in order).
    next: u32,
    flags: u8,
}

impl Kept {
    fn is(&self, flag: u8) -> bool {
        self.flags & flag != 0
    }

    /// `line` kept (its model already the corpus's index).
    fn of(line: &Rec, line_session: u32, session: u32) -> Self {
        let t = &line.tokens;
        let small = [t.input, t.cache_write_5m, t.cache_write_1h, t.cache_read, t.output].map(u32::try_from);
        let (tokens, big) = match small {
            [Ok(a), Ok(b), Ok(c), Ok(d), Ok(e)] => ([a, b, c, d, e], 0),
            _ => ([0; 5], BIG),
        };
        Kept {
            tokens,
            ts_ms: line.ts_ms,
            mid: line.mid,
            rid: line.rid,
            line_session,
            session,
            model: line.model,
            next: NONE,
            flags: line.flags | big,
        }
    }
}

const _: () = assert!(std::mem::size_of::<Kept>() == 64);

/// The first kept request of each message id: open addressing on the id's
/// hash, slots of 4 bytes (the position in `kept` + 1, 0 for empty).
#[derive(Debug, Default)]
struct FirstOfMessage {
    slots: Vec<u32>,
    len: usize,
}

impl FirstOfMessage {
    /// The first kept request with message id hash `mid`.
    fn get(&self, kept: &[Kept], mid: u64) -> Option<u32> {
        if self.slots.is_empty() {
            return None;
        }
        let mask = self.slots.len() - 1;
        let mut at = mid as usize & mask;
        loop {
            match self.slots[at] {
                0 => return None,
                s if kept[s as usize - 1].mid == mid => return Some(s - 1),
                _ => at = (at + 1) & mask,
            }
        }
    }

    /// Record `i` as the first of its message id (none is recorded yet).
    fn insert(&mut self, kept: &[Kept], i: u32) {
        if (self.len + 1) * 2 > self.slots.len() {
            let size = (self.slots.len() * 2).max(1024);
            let old = std::mem::replace(&mut self.slots, vec![0; size]);
            for s in old.into_iter().filter(|&s| s != 0) {
                self.place(kept[s as usize - 1].mid, s);
            }
        }
        self.place(kept[i as usize].mid, i + 1);
        self.len += 1;
    }

    fn place(&mut self, mid: u64, slot: u32) {
        let mask = self.slots.len() - 1;
        let mut at = mid as usize & mask;
        while self.slots[at] != 0 {
            at = (at + 1) & mask;
        }
        self.slots[at] = slot;
    }
}

/// The rule over a corpus, fed session by session in discovery order.
#[derive(Debug, Default)]
pub struct CorpusUsage {
    /// (session id, project) of each session taken.
    sessions: Vec<(String, String)>,
    models: Vec<String>,
    model_index: FxHashMap<String, u32>,
    /// Hash of a line session → its index.
    line_sessions: FxHashMap<u64, u32>,
    /// Files taken but not yet counted: one before them in path order is
    /// still to come.
    waiting: BTreeMap<usize, (u32, Vec<Rec>)>,
    /// The next file to count, in path order.
    next_file: usize,
    /// The kept requests, at the position of their first line.
    kept: Vec<Kept>,
    first: FirstOfMessage,
    /// The timestamps of kept requests not in the form their instant gives.
    ts_text: FxHashMap<u32, Box<str>>,
    /// The tokens of kept requests with a count past 32 bits.
    big: FxHashMap<u32, TokenCounts>,
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
                    self.waiting.insert(i, (0, Vec::new()));
                }
            }
            Some(s) => {
                let session = self.sessions.len() as u32;
                let models: Vec<u32> = s.models.into_iter().map(|m| self.model_id(m)).collect();
                self.sessions.push((s.session_id, s.project));
                for (i, mut recs) in s.files {
                    for r in &mut recs {
                        if r.model != NO_MODEL {
                            r.model = models[r.model as usize];
                        }
                    }
                    self.waiting.insert(i, (session, recs));
                }
            }
        }
        while let Some((session, recs)) = self.waiting.remove(&self.next_file) {
            self.next_file += 1;
            self.count(session, recs);
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

    fn line_session(&mut self, h: u64) -> u32 {
        let next = self.line_sessions.len() as u32;
        *self.line_sessions.entry(h).or_insert(next)
    }

    fn tokens(&self, i: u32) -> TokenCounts {
        let k = &self.kept[i as usize];
        if k.is(BIG) {
            return self.big.get(&i).copied().unwrap_or_default();
        }
        let [input, cache_write_5m, cache_write_1h, cache_read, output] = k.tokens.map(u64::from);
        TokenCounts { input, cache_write_5m, cache_write_1h, cache_read, output }
    }

    /// The rule over one file's lines (of the session `session`).
    fn count(&mut self, session: u32, recs: Vec<Rec>) {
        for mut line in recs {
            let text = line.ts_text.take();
            let line_session = self.line_session(line.line_session);
            let new = Kept::of(&line, line_session, session);
            if !line.is(HAS_MID) {
                self.keep_new(new, text, &line.tokens);
                continue;
            }
            let head = self.first.get(&self.kept, line.mid);
            // Rule 2 over the requests of the message id, then rule 3.
            let kept = &self.kept;
            let chain = || std::iter::successors(head, |&i| Some(kept[i as usize].next).filter(|&n| n != NONE));
            let exact = chain().find(|&i| {
                let k = &self.kept[i as usize];
                k.is(HAS_MID)
                    && k.mid == line.mid
                    && k.is(HAS_RID) == line.is(HAS_RID)
                    && k.rid == line.rid
                    && (line.is(HAS_RID) || k.line_session == line_session)
            });
            let found = exact.or_else(|| {
                chain().find(|&i| {
                    let k = &self.kept[i as usize];
                    k.is(HAS_MID)
                        && k.mid == line.mid
                        && (line.is(SIDECHAIN) || k.is(SIDECHAIN))
                        && k.line_session == line_session
                        && k.is(HAS_TS)
                        && line.is(HAS_TS)
                        && k.ts_ms == line.ts_ms
                })
            });
            match found {
                Some(i) => {
                    let k = &self.kept[i as usize];
                    let kept_total = self.tokens(i).total();
                    if !preferred(line.is(SIDECHAIN), line.tokens.total(), k.is(SIDECHAIN), kept_total) {
                        continue;
                    }
                    let next = k.next;
                    self.kept[i as usize] = Kept { next, ..new };
                    match text {
                        Some(t) => self.ts_text.insert(i, t),
                        None => self.ts_text.remove(&i),
                    };
                    if new.is(BIG) {
                        self.big.insert(i, line.tokens);
                    } else {
                        self.big.remove(&i);
                    }
                }
                None => {
                    let i = self.keep_new(new, text, &line.tokens);
                    match head {
                        None => self.first.insert(&self.kept, i),
                        Some(h) => {
                            let mut last = h;
                            while self.kept[last as usize].next != NONE {
                                last = self.kept[last as usize].next;
                            }
                            self.kept[last as usize].next = i;
                        }
                    }
                }
            }
        }
    }

    fn keep_new(&mut self, k: Kept, text: Option<Box<str>>, tokens: &TokenCounts) -> u32 {
        let i = self.kept.len() as u32;
        self.kept.push(k);
        if let Some(t) = text {
            self.ts_text.insert(i, t);
        }
        if k.is(BIG) {
            self.big.insert(i, *tokens);
        }
        i
    }

    /// The report: every request kept, priced with `pricing`, summed.
    pub fn finish(self, pricing: &Pricing) -> RecordedReport {
        self.finish_with(pricing, |views, diagnostics| RecordedReport::from_views(views, pricing, diagnostics))
    }

    /// The view `opts` of every request kept, priced with `pricing`.
    pub fn finish_view(self, pricing: &Pricing, opts: &ViewOptions) -> UsageView {
        self.finish_with(pricing, |views, diagnostics| super::views::build(views, opts, pricing, diagnostics))
    }

    /// `f` of every request kept, priced with `pricing`, in the order the
    /// rule keeps them, and the diagnostics.
    fn finish_with<R>(
        mut self,
        pricing: &Pricing,
        f: impl for<'r> FnOnce(&mut dyn Iterator<Item = ReqView<'r>>, Vec<Diagnostic>) -> R,
    ) -> R {
        // Files still waiting (none when every group was taken): in order.
        for (_, (session, recs)) in std::mem::take(&mut self.waiting) {
            self.count(session, recs);
        }
        let diagnostics = std::mem::take(&mut self.diagnostics);
        let prices: Vec<_> = self.models.iter().map(|m| pricing.price(m)).collect();
        let mut views = (0..self.kept.len() as u32).map(|i| {
            let k = &self.kept[i as usize];
            let (session_id, project) = &self.sessions[k.session as usize];
            let price = (k.model != NO_MODEL).then(|| prices[k.model as usize]).flatten();
            let tokens = self.tokens(i);
            let stamp = match self.ts_text.get(&i) {
                Some(t) => Stamp::Text(t),
                None if k.is(HAS_TS) => Stamp::Ms(k.ts_ms),
                None => Stamp::None,
            };
            ReqView {
                session_id,
                project,
                stamp,
                model: (k.model != NO_MODEL).then(|| self.models[k.model as usize].as_str()),
                tokens,
                cost_usd: price.map(|p| p.cost(&tokens)),
                long_context: price.is_some_and(|p| p.is_long_context(&tokens)),
            }
        });
        f(&mut views, diagnostics)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::entry::Usage;

    fn line<'a>(n: u32, mid: Option<&'a str>, rid: &'a str, sid: &'a str, input: u64, output: u64) -> UsageLine<'a> {
        UsageLine {
            line: n,
            session_id: Some(sid),
            timestamp: Some("2026-01-02T03:04:05.678Z"),
            agent_id: None,
            is_sidechain: false,
            message_id: mid,
            request_id: Some(rid),
            model: Some("claude-sonnet-4-5"),
            usage: Usage {
                input_tokens: input,
                output_tokens: output,
                cache_creation_input_tokens: 0,
                cache_read_input_tokens: 0,
                cache_creation_5m: None,
                cache_creation_1h: None,
                service_tier: None,
            },
            cache_creation_object: false,
        }
    }

    /// Thousands of message ids (the first-of-message table grows many
    /// times), copies in a later session that win or lose, lines without a
    /// message id, and counts past 32 bits: each request once, in the
    /// session of the line that wins, its tokens exact.
    #[test]
    fn many_requests_copies_and_large_counts() {
        const N: u64 = 5000;
        let ids: Vec<(String, String)> = (0..N).map(|i| (format!("msg_{i}"), format!("req_{i}"))).collect();
        let big = 5_000_000_000u64;
        let mut first = SessionLines::new("s1".into(), "p".into());
        let lines = ids.iter().enumerate().map(|(i, (m, r))| {
            let input = if i == 7 { big } else { i as u64 };
            line(i as u32 + 1, Some(m.as_str()), r, "s1", input, 1)
        });
        let no_id = (0..3).map(|k| line(10_000 + k, None, "req_x", "s1", 10, 1));
        first.add_file(0, lines.chain(no_id).collect::<Vec<_>>());
        let mut second = SessionLines::new("s2".into(), "p".into());
        // Even ids copied with a larger total (they move to s2), odd ones
        // with a smaller one (they stay), id 7 (past 32 bits) smaller.
        let copies = ids.iter().enumerate().map(|(i, (m, r))| {
            let output = if i % 2 == 0 { 2 } else { 0 };
            line(i as u32 + 1, Some(m.as_str()), r, "s2", i as u64, output)
        });
        second.add_file(1, copies.collect::<Vec<_>>());
        let mut acc = CorpusUsage::default();
        acc.add(&SessionGroup { main: Some(0), subagents: Vec::new() }, Some(first));
        acc.add(&SessionGroup { main: Some(1), subagents: Vec::new() }, Some(second));
        let rep = acc.finish(&Pricing::builtin());
        let evens = N.div_ceil(2);
        assert_eq!(rep.totals.requests, N + 3);
        let inputs: u64 = (0..N).map(|i| if i == 7 { big } else { i }).sum();
        assert_eq!(rep.totals.input_tokens, inputs + 30);
        assert_eq!(rep.totals.output_tokens, evens * 2 + (N - evens) + 3);
        let rows: Vec<(&str, u64)> =
            rep.by_session.iter().map(|s| (s.session_id.as_str(), s.usage.totals.requests)).collect();
        assert_eq!(rows, [("s1", N - evens + 3), ("s2", evens)]);
        assert_eq!(rep.by_day.keys().collect::<Vec<_>>(), ["2026-01-02"]);
        assert_eq!(rep.by_session[0].first_timestamp.as_deref(), Some("2026-01-02T03:04:05.678Z"));
    }
}
