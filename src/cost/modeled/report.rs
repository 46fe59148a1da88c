//! The report of `ctxasm cost`: its types ([`CostReport`] and its rows)
//! and how the replays are summed into it — recorded against modeled,
//! accuracy, per session and per request, the what-ifs.
//!
//! Sums and statistics only: the passes that produce the numbers are
//! `blocks`, `pinning` and `replay`; printing is `cost::report`'s and
//! `cost::html`'s.

use super::blocks::SessionIn;
use super::context::ContextTokens;
use super::options::ModelOptions;
use super::options::{Boundary, WhatIf};
use super::pinning::{EstimatorReport, quantile, sorted};
use super::replay::{Predictions, Warmed, replay};
use super::store::ChainStore;
use crate::cost::format::json;
use crate::cost::pricing::Pricing;
use crate::cost::sim::{Estimator, Place};
use crate::cost::tokens::TokenCounts;
use crate::cost::usage::{CacheCreation, Headline, PricingInfo, Totals, Unpriced, UnpricedList};
use crate::diag::Diagnostic;
use serde::{Deserialize, Serialize};

/// Error statistics of one predicted quantity against the recorded one.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ErrorStats {
    /// Requests compared.
    pub requests: u64,
    pub median_abs_tokens: f64,
    pub p90_abs_tokens: f64,
    /// Over the requests where the recorded value is > 0: |modeled − recorded| / recorded.
    pub relative_over: u64,
    #[serde(serialize_with = "json::ratio")]
    pub median_relative: f64,
    #[serde(serialize_with = "json::ratio")]
    pub p90_relative: f64,
}

impl ErrorStats {
    fn of(pairs: &[(u64, u64)]) -> Self {
        let abs = sorted(pairs.iter().map(|&(m, r)| m.abs_diff(r) as f64).collect());
        let rel = sorted(pairs.iter().filter(|p| p.1 > 0).map(|&(m, r)| m.abs_diff(r) as f64 / r as f64).collect());
        ErrorStats {
            requests: pairs.len() as u64,
            median_abs_tokens: quantile(&abs, 0.5),
            p90_abs_tokens: quantile(&abs, 0.9),
            relative_over: rel.len() as u64,
            median_relative: quantile(&rel, 0.5),
            p90_relative: quantile(&rel, 0.9),
        }
    }
}

/// Requests by whether the recorded and the modeled usage read the cache.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct HitAgreement {
    pub both: u64,
    pub recorded_only: u64,
    pub modeled_only: u64,
    pub neither: u64,
}

/// Modeled against recorded, on the requests that have both.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Accuracy {
    /// Requests with recorded usage matched to an assembled request.
    pub requests_compared: u64,
    /// Assembled requests without recorded usage (not compared).
    pub requests_without_usage: u64,
    /// Assembled requests whose recorded response another session file of
    /// the corpus holds too (a copied or resumed session): compared once,
    /// as the bill counts them.
    #[serde(default)]
    pub requests_copied: u64,
    pub cache_read: ErrorStats,
    pub cache_write: ErrorStats,
    pub hits: HitAgreement,
    /// Cost of the compared requests (of priced models).
    #[serde(serialize_with = "json::usd")]
    pub recorded_cost_usd: f64,
    #[serde(serialize_with = "json::usd")]
    pub modeled_cost_usd: f64,
    /// (modeled − recorded) / recorded, in %.
    #[serde(serialize_with = "json::pct")]
    pub cost_error_pct: f64,
}

/// One what-if against the baseline.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct WhatIfResult {
    pub what_if: String,
    pub modeled: Totals,
    /// Requests of models without a price under this what-if (not in its
    /// cost).
    pub unpriced: Vec<Unpriced>,
    #[serde(serialize_with = "json::usd")]
    pub delta_usd: f64,
    #[serde(serialize_with = "json::pct")]
    pub delta_pct: f64,
    /// Why the what-if changes no request of the corpus, when it cannot
    /// (`boundary=tools` with no tool list to mark): its delta is then no
    /// answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_applicable: Option<String>,
}

/// One session's row.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SessionCost {
    pub session_id: String,
    pub project: String,
    /// Its first prompt as typed, trimmed (none: no prompt a person typed).
    #[serde(default)]
    pub title: Option<String>,
    /// Its first entry's timestamp, as written.
    #[serde(default)]
    pub started: Option<String>,
    pub requests: u64,
    pub by_pipeline: bool,
    /// Tools and system prompt modeled as the unseen prefix.
    pub unseen_prompt: bool,
    /// Over the requests with recorded usage (0 without).
    #[serde(serialize_with = "json::usd")]
    pub recorded_cost_usd: f64,
    #[serde(serialize_with = "json::usd")]
    pub modeled_cost_usd: f64,
    /// Modeled requests of a model without a price (not in the costs).
    pub unpriced_requests: u64,
    /// Cache reads / whole input, recorded and modeled.
    #[serde(serialize_with = "json::opt_ratio")]
    pub recorded_hit_ratio: Option<f64>,
    #[serde(serialize_with = "json::ratio")]
    pub modeled_hit_ratio: f64,
}

/// One request's row (for the HTML report's per-turn chart).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct TurnRow {
    pub custom_id: String,
    /// Index in [`CostReport::sessions`].
    pub session: usize,
    pub at_ms: u64,
    pub recorded: Option<TokenCounts>,
    pub modeled: TokenCounts,
    #[serde(serialize_with = "json::opt_usd")]
    pub recorded_cost_usd: Option<f64>,
    #[serde(serialize_with = "json::opt_usd")]
    pub modeled_cost_usd: Option<f64>,
    /// What it carried, by part (the `/context` view).
    pub context: ContextTokens,
}

/// One of the requests where the model and the bill disagree most.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Disagreement {
    pub custom_id: String,
    pub session_id: String,
    pub project: String,
    /// When its response was written (RFC 3339, UTC).
    pub at: String,
    pub recorded: TokenCounts,
    pub modeled: TokenCounts,
    #[serde(serialize_with = "json::usd")]
    pub recorded_cost_usd: f64,
    #[serde(serialize_with = "json::usd")]
    pub modeled_cost_usd: f64,
}

impl Disagreement {
    /// Modeled minus recorded, USD.
    pub fn delta_usd(&self) -> f64 {
        self.modeled_cost_usd - self.recorded_cost_usd
    }
}

/// Requests kept in [`CostReport::worst_requests`].
pub const WORST_REQUESTS: usize = 20;

/// The largest disagreements first (ties by session, then id), at most
/// [`WORST_REQUESTS`].
pub fn keep_worst(list: &mut Vec<Disagreement>) {
    list.sort_by(|a, b| {
        b.delta_usd()
            .abs()
            .total_cmp(&a.delta_usd().abs())
            .then_with(|| (&a.project, &a.session_id, &a.custom_id).cmp(&(&b.project, &b.session_id, &b.custom_id)))
    });
    list.truncate(WORST_REQUESTS);
}

/// Cost by category (USD), recorded and modeled.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct CategoryCost {
    #[serde(serialize_with = "json::usd")]
    pub input: f64,
    #[serde(serialize_with = "json::usd")]
    pub cache_write_5m: f64,
    #[serde(serialize_with = "json::usd")]
    pub cache_write_1h: f64,
    #[serde(serialize_with = "json::usd")]
    pub cache_read: f64,
    #[serde(serialize_with = "json::usd")]
    pub output: f64,
}

impl CategoryCost {
    fn add(&mut self, pricing: &Pricing, model: &str, t: &TokenCounts) {
        let Some(p) = pricing.price(model) else { return };
        let r = p.rates_for(t);
        self.input += t.input as f64 * r.input / 1e6;
        self.cache_write_5m += t.cache_write_5m as f64 * r.cache_write_5m / 1e6;
        self.cache_write_1h += t.cache_write_1h as f64 * r.cache_write_1h / 1e6;
        self.cache_read += t.cache_read as f64 * r.cache_read / 1e6;
        self.output += t.output as f64 * r.output / 1e6;
    }
}

/// `ctxasm cost`: recorded, modeled, how far apart, and the what-ifs.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CostReport {
    /// The recorded usage of the corpus, as `cost --recorded-only` counts it.
    pub recorded: Totals,
    /// The bill at a glance (recorded usage): period, cost by month, model
    /// and project, the writes' TTL split.
    #[serde(default)]
    pub bill: Headline,
    /// The simulator's prediction for every assembled request.
    pub modeled: Totals,
    /// The same over the requests compared ([`Accuracy::requests_compared`]:
    /// those of the bill, each once), beside `recorded` in the summary.
    #[serde(default)]
    pub modeled_compared: Totals,
    /// Recorded requests of models without a price: in the token counts of
    /// `recorded`, not in its cost.
    pub recorded_unpriced: Vec<Unpriced>,
    /// The same for `modeled`.
    pub modeled_unpriced: Vec<Unpriced>,
    pub modeled_cache_creation: CacheCreation,
    pub accuracy: Accuracy,
    pub estimator: EstimatorReport,
    pub what_if: Vec<WhatIfResult>,
    /// Sorted by project, then session id.
    pub sessions: Vec<SessionCost>,
    /// Compared requests, by category.
    pub recorded_by_category: CategoryCost,
    pub modeled_by_category: CategoryCost,
    pub account: String,
    pub pricing: PricingInfo,
    /// Requests the API would refuse (more than 4 breakpoints).
    pub rejected_requests: u64,
    /// Where the recorded bill paid for the cache expiring during pauses.
    #[serde(default)]
    pub ttl_misses: super::TtlMisses,
    /// The requests where the model and the bill disagree most.
    #[serde(default)]
    pub worst_requests: Vec<Disagreement>,
    /// Every modeled request's input tokens by part, summed (the
    /// `/context` view of the corpus).
    #[serde(default)]
    pub context: ContextTokens,
    pub diagnostics: Vec<Diagnostic>,
    #[serde(skip)]
    pub turns: Vec<TurnRow>,
    /// The compared requests by session, kept for a shard's partial report
    /// (`cost_report_and_lines`), else empty.
    #[serde(skip)]
    pub compared: Vec<ComparedSession>,
}

/// Sums of modeled requests: totals, the TTL split and the unpriced ones.
#[derive(Default)]
struct Sums {
    totals: Totals,
    cache_creation: CacheCreation,
    unpriced: UnpricedList,
}

impl Sums {
    /// One request of `model` (`cost` is `None` when it has no price).
    fn add(&mut self, model: &str, tokens: &TokenCounts, cost: Option<f64>) {
        let t = &mut self.totals;
        t.requests += 1;
        t.input_tokens += tokens.input;
        t.cache_creation_input_tokens += tokens.cache_write();
        t.cache_read_input_tokens += tokens.cache_read;
        t.output_tokens += tokens.output;
        match cost {
            Some(c) => t.cost_usd += c,
            None => self.unpriced.add(model, tokens),
        }
        self.cache_creation.ephemeral_5m_input_tokens += tokens.cache_write_5m;
        self.cache_creation.ephemeral_1h_input_tokens += tokens.cache_write_1h;
    }
}

/// The model a request is priced as: the what-if's, else its own.
fn priced_model<'a>(own: &'a str, what_if: &'a WhatIf) -> &'a str {
    match what_if {
        WhatIf::Model(m) => m,
        _ => own,
    }
}

/// A request of the bill as the accuracy compares it: the key of its
/// recorded response (the same in every file that holds a copy), its model,
/// modeled and recorded usage and their cost. A shard's partial report
/// carries them, so that the merge compares each request of the corpus
/// once, as a single run does. One JSON array per request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(from = "ComparedRow", into = "ComparedRow")]
pub struct Compared {
    pub key: Option<u64>,
    pub model: String,
    pub modeled: TokenCounts,
    pub recorded: TokenCounts,
    pub modeled_cost_usd: Option<f64>,
    pub recorded_cost_usd: Option<f64>,
}

/// [`Compared`] as JSON: key, model, modeled and recorded usage (input,
/// 5-minute writes, 1-hour writes, reads, output), their costs.
type ComparedRow = (Option<u64>, String, [u64; 5], [u64; 5], Option<f64>, Option<f64>);

fn counts(t: &TokenCounts) -> [u64; 5] {
    [t.input, t.cache_write_5m, t.cache_write_1h, t.cache_read, t.output]
}

fn of_counts([input, cache_write_5m, cache_write_1h, cache_read, output]: [u64; 5]) -> TokenCounts {
    TokenCounts { input, cache_write_5m, cache_write_1h, cache_read, output }
}

impl From<Compared> for ComparedRow {
    fn from(c: Compared) -> Self {
        (c.key, c.model, counts(&c.modeled), counts(&c.recorded), c.modeled_cost_usd, c.recorded_cost_usd)
    }
}

impl From<ComparedRow> for Compared {
    fn from((key, model, modeled, recorded, modeled_cost_usd, recorded_cost_usd): ComparedRow) -> Self {
        Compared {
            key,
            model,
            modeled: of_counts(modeled),
            recorded: of_counts(recorded),
            modeled_cost_usd,
            recorded_cost_usd,
        }
    }
}

/// The compared requests of one session in the order a run compares them,
/// and the session's first file (discovery's order of sessions).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ComparedSession {
    pub file: String,
    /// Its index in the run (not carried).
    #[serde(skip)]
    pub session: usize,
    pub requests: Vec<Compared>,
}

/// The accuracy's sums over the requests of the bill in corpus order,
/// each recorded response once (a copy in a later file is counted in
/// `requests_copied`, not compared): what a single run and the merge of
/// its shards both compute.
#[derive(Default)]
pub struct Comparison {
    seen: rustc_hash::FxHashSet<u64>,
    compared: Sums,
    read_pairs: Vec<(u64, u64)>,
    write_pairs: Vec<(u64, u64)>,
    accuracy: Accuracy,
    recorded_by_category: CategoryCost,
    modeled_by_category: CategoryCost,
}

impl Comparison {
    /// One request with recorded usage, `key` its recorded response's.
    #[allow(clippy::too_many_arguments)]
    pub fn add(
        &mut self,
        key: Option<u64>,
        model: &str,
        modeled: &TokenCounts,
        recorded: &TokenCounts,
        modeled_cost: Option<f64>,
        recorded_cost: Option<f64>,
        pricing: &Pricing,
    ) {
        let a = &mut self.accuracy;
        if key.is_some_and(|k| !self.seen.insert(k)) {
            a.requests_copied += 1;
            return;
        }
        self.compared.add(model, modeled, modeled_cost);
        a.requests_compared += 1;
        self.read_pairs.push((modeled.cache_read, recorded.cache_read));
        self.write_pairs.push((modeled.cache_write(), recorded.cache_write()));
        let h = &mut a.hits;
        match (recorded.cache_read > 0, modeled.cache_read > 0) {
            (true, true) => h.both += 1,
            (true, false) => h.recorded_only += 1,
            (false, true) => h.modeled_only += 1,
            (false, false) => h.neither += 1,
        }
        a.recorded_cost_usd += recorded_cost.unwrap_or(0.0);
        a.modeled_cost_usd += modeled_cost.unwrap_or(0.0);
        self.recorded_by_category.add(pricing, model, recorded);
        self.modeled_by_category.add(pricing, model, modeled);
    }

    /// [`Comparison::add`] of a carried request.
    pub fn add_compared(&mut self, c: &Compared, pricing: &Pricing) {
        self.add(c.key, &c.model, &c.modeled, &c.recorded, c.modeled_cost_usd, c.recorded_cost_usd, pricing);
    }

    /// Into `rep`: `modeled_compared`, the accuracy (but
    /// `requests_without_usage`, left as it is) and the cost by category.
    pub fn finish(self, rep: &mut CostReport) {
        let mut acc = self.accuracy;
        acc.requests_without_usage = rep.accuracy.requests_without_usage;
        acc.cache_read = ErrorStats::of(&self.read_pairs);
        acc.cache_write = ErrorStats::of(&self.write_pairs);
        acc.cost_error_pct = if acc.recorded_cost_usd > 0.0 {
            100.0 * (acc.modeled_cost_usd - acc.recorded_cost_usd) / acc.recorded_cost_usd
        } else {
            0.0
        };
        rep.accuracy = acc;
        rep.modeled_compared = self.compared.totals;
        rep.recorded_by_category = self.recorded_by_category;
        rep.modeled_by_category = self.modeled_by_category;
    }
}

/// Sum the baseline replay into `rep`: modeled totals, accuracy against the
/// recorded usage, one row per session (sorted by project, then session id)
/// and per request; with `keep`, the compared requests for a shard's
/// partial report ([`CostReport::compared`]).
pub(super) fn add_baseline(
    rep: &mut CostReport,
    sessions: &[SessionIn],
    chains: &ChainStore,
    base: &Predictions,
    pricing: &Pricing,
    keep: bool,
    opts_keep_turns: bool,
) -> std::io::Result<()> {
    let mut per_session: Vec<SessionCost> = sessions
        .iter()
        .map(|s| SessionCost {
            session_id: s.session_id.clone(),
            project: s.project.clone(),
            title: s.title.clone(),
            started: s.started.clone(),
            by_pipeline: s.by_pipeline,
            unseen_prompt: s.unseen_prompt,
            ..SessionCost::default()
        })
        .collect();
    let mut ratio_acc: Vec<[u64; 4]> = vec![[0; 4]; sessions.len()];
    let mut sums = Sums::default();
    let mut comparison = Comparison::default();
    let mut carried: Vec<ComparedSession> = Vec::new();
    let keep_turns = opts_keep_turns;
    let mut worst = Worst::default();
    if keep_turns {
        rep.turns.reserve_exact((0..chains.len()).map(|ci| chains.reqs(ci)).sum());
    }
    for c in chains.each() {
        let (ci, c) = c?;
        let context = super::context::per_request(&c);
        for (ri, r) in c.reqs.iter().enumerate() {
            let p = base.get(ci, ri);
            let ctx = context.get(ri).copied().unwrap_or_default();
            rep.context += ctx;
            sums.add(&r.model, &p.tokens, p.cost);
            rep.rejected_requests += u64::from(p.rejected);
            let s = &mut per_session[c.session];
            s.requests += 1;
            s.modeled_cost_usd += p.cost.unwrap_or(0.0);
            s.unpriced_requests += u64::from(p.cost.is_none());
            let acc = &mut ratio_acc[c.session];
            acc[0] += p.tokens.cache_read;
            acc[1] += p.tokens.total_input();
            let rec_cost = r.recorded.and_then(|t| pricing.cost(&r.model, &t));
            if let Some(t) = r.recorded {
                acc[2] += t.cache_read;
                acc[3] += t.total_input();
                s.recorded_cost_usd += rec_cost.unwrap_or(0.0);
                comparison.add(r.usage_key, &r.model, &p.tokens, &t, p.cost, rec_cost, pricing);
                if keep {
                    if carried.last().is_none_or(|l| l.session != c.session) {
                        let file = sessions[c.session].first_file.clone();
                        carried.push(ComparedSession { file, session: c.session, requests: Vec::new() });
                    }
                    if let Some(l) = carried.last_mut() {
                        l.requests.push(Compared {
                            key: r.usage_key,
                            model: r.model.to_string(),
                            modeled: p.tokens,
                            recorded: t,
                            modeled_cost_usd: p.cost,
                            recorded_cost_usd: rec_cost,
                        });
                    }
                }
            } else {
                rep.accuracy.requests_without_usage += 1;
            }
            let gap = match (p.cost, rec_cost) {
                (Some(m), Some(r)) => Some((m - r).abs()),
                _ => None,
            };
            if keep_turns || gap.is_some_and(|g| worst.admits(g)) {
                let row = TurnRow {
                    custom_id: r.id.render(&c.id_prefix),
                    session: c.session,
                    at_ms: r.at_ms,
                    recorded: r.recorded,
                    modeled: p.tokens,
                    recorded_cost_usd: rec_cost,
                    modeled_cost_usd: p.cost,
                    context: ctx,
                };
                if keep_turns {
                    rep.turns.push(row);
                } else if let Some(g) = gap {
                    worst.push(g, row);
                }
            }
        }
    }
    for (s, a) in per_session.iter_mut().zip(&ratio_acc) {
        s.modeled_hit_ratio = if a[1] > 0 { a[0] as f64 / a[1] as f64 } else { 0.0 };
        s.recorded_hit_ratio = (a[3] > 0).then(|| a[2] as f64 / a[3] as f64);
    }
    rep.modeled = sums.totals;
    comparison.finish(rep);
    rep.compared = carried;
    rep.modeled_cache_creation = sums.cache_creation;
    rep.modeled_unpriced = sums.unpriced.into_vec();
    if keep_turns {
        rep.sessions = sorted_sessions(per_session, &mut rep.turns);
        rep.worst_requests = worst_requests(&rep.turns, &rep.sessions);
    } else {
        let mut rows = worst.into_rows();
        rep.sessions = sorted_sessions(per_session, &mut rows);
        rep.worst_requests = worst_requests(&rows, &rep.sessions);
    }
    Ok(())
}

/// The rows of the requests where model and bill differ most, kept while
/// the requests are summed (without [`ModelOptions::keep_turns`]): at most
/// twice [`WORST_REQUESTS`] at a time, in the order they came.
///
/// [`ModelOptions::keep_turns`]: super::ModelOptions::keep_turns
#[derive(Default)]
struct Worst {
    rows: Vec<(f64, usize, TurnRow)>,
    seen: usize,
    /// The smallest gap still among the largest, once pruned.
    floor: f64,
}

impl Worst {
    /// Whether a request `gap` USD apart could be among the largest.
    fn admits(&self, gap: f64) -> bool {
        self.rows.len() < WORST_REQUESTS || gap >= self.floor
    }

    fn push(&mut self, gap: f64, row: TurnRow) {
        self.rows.push((gap, self.seen, row));
        self.seen += 1;
        if self.rows.len() >= 2 * WORST_REQUESTS {
            self.prune();
        }
    }

    /// The largest first, the earlier first among equal ones (as
    /// [`worst_requests`] orders them), cut to [`WORST_REQUESTS`].
    fn prune(&mut self) {
        self.rows.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        self.rows.truncate(WORST_REQUESTS);
        self.floor = self.rows.last().map_or(0.0, |r| r.0);
    }

    /// The kept rows in the order they came.
    fn into_rows(mut self) -> Vec<TurnRow> {
        self.prune();
        self.rows.sort_by_key(|r| r.1);
        self.rows.into_iter().map(|r| r.2).collect()
    }
}

/// The turns where modeled and recorded cost differ most.
fn worst_requests(turns: &[TurnRow], sessions: &[SessionCost]) -> Vec<Disagreement> {
    let mut idx: Vec<(f64, usize)> = turns
        .iter()
        .enumerate()
        .filter_map(|(i, t)| Some(((t.modeled_cost_usd? - t.recorded_cost_usd?).abs(), i)))
        .collect();
    idx.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    let mut out: Vec<Disagreement> = idx
        .iter()
        .take(WORST_REQUESTS)
        .filter_map(|&(_, i)| {
            let t = &turns[i];
            let s = sessions.get(t.session)?;
            Some(Disagreement {
                custom_id: t.custom_id.clone(),
                session_id: s.session_id.clone(),
                project: s.project.clone(),
                at: crate::time::format_rfc3339_ms(i64::try_from(t.at_ms).unwrap_or(i64::MAX), false),
                recorded: t.recorded?,
                modeled: t.modeled,
                recorded_cost_usd: t.recorded_cost_usd?,
                modeled_cost_usd: t.modeled_cost_usd?,
            })
        })
        .collect();
    keep_worst(&mut out);
    out
}

/// The sessions by project, then session id, with each turn's session index
/// moved along.
fn sorted_sessions(per_session: Vec<SessionCost>, turns: &mut [TurnRow]) -> Vec<SessionCost> {
    let mut perm: Vec<usize> = (0..per_session.len()).collect();
    perm.sort_by(|&a, &b| {
        let (a, b) = (&per_session[a], &per_session[b]);
        (&a.project, &a.session_id).cmp(&(&b.project, &b.session_id))
    });
    let mut new_index = vec![0; perm.len()];
    for (new, &old) in perm.iter().enumerate() {
        new_index[old] = new;
    }
    for t in turns.iter_mut() {
        t.session = new_index[t.session];
    }
    let mut slots: Vec<Option<SessionCost>> = per_session.into_iter().map(Some).collect();
    perm.iter().filter_map(|&i| slots[i].take()).collect()
}

/// One replay per what-if, each summed against the `baseline` cost.
#[allow(clippy::too_many_arguments)]
pub(super) fn what_if_results(
    sessions: &[SessionIn],
    chains: &ChainStore,
    order: &[(u64, u32, u32)],
    opts: &ModelOptions,
    est: &Estimator,
    pricing: &Pricing,
    baseline: f64,
    outside: &Warmed,
) -> std::io::Result<Vec<WhatIfResult>> {
    opts.what_ifs
        .iter()
        .map(|w| {
            let res = replay(sessions, chains, order, opts, Some(w), est, pricing, Some(outside))?;
            let mut sums = Sums::default();
            for c in chains.each() {
                let (ci, c) = c?;
                for (r, p) in c.reqs.iter().zip(res.chain(ci)) {
                    sums.add(priced_model(&r.model, w), &p.tokens, p.cost);
                }
            }
            let t = sums.totals;
            let delta = t.cost_usd - baseline;
            Ok(WhatIfResult {
                what_if: w.to_string(),
                modeled: t,
                unpriced: sums.unpriced.into_vec(),
                delta_usd: delta,
                delta_pct: if baseline > 0.0 { 100.0 * delta / baseline } else { 0.0 },
                not_applicable: not_applicable(w, chains)?,
            })
        })
        .collect()
}

/// Why `w` changes no request of `chains`, when it cannot: `boundary=tools`
/// marks the last tool of a request that has tools and no breakpoint there.
fn not_applicable(w: &WhatIf, chains: &ChainStore) -> std::io::Result<Option<String>> {
    let WhatIf::Boundary(Boundary::Tools) = w else { return Ok(None) };
    let (mut with_tools, mut marked) = (0u64, 0u64);
    let mut path: Vec<u32> = Vec::new();
    for c in chains.each() {
        let (_, c) = c?;
        path.clear();
        for r in &c.reqs {
            path.truncate(r.step.keep);
            path.extend(r.step.added.clone().map(|i| i as u32));
            let last_tool = path.iter().rposition(|&i| c.arena.get(i as usize).is_some_and(|b| b.place == Place::Tool));
            if let Some(t) = last_tool {
                with_tools += 1;
                marked += u64::from(r.step.breakpoints.iter().any(|&(p, _)| p as usize == t));
            }
        }
    }
    Ok(if with_tools == 0 {
        Some(
            "not applicable: no request has a tool list to mark (a session without a recorded prompt \
             is modeled with an unseen prefix for its tools and system prompt)"
                .to_string(),
        )
    } else if marked == with_tools {
        Some(format!(
            "not applicable: every request with tools ({with_tools}) already has a breakpoint on its last tool"
        ))
    } else {
        None
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_stats_median_and_p90() {
        let pairs: Vec<(u64, u64)> = (0..10).map(|i| (100 + i, 100)).chain([(5, 0)]).collect();
        let e = ErrorStats::of(&pairs);
        assert_eq!(e.requests, 11);
        assert_eq!(e.relative_over, 10);
        assert_eq!(e.median_relative, 0.05);
        assert_eq!(e.p90_relative, 0.08);
        assert_eq!(e.median_abs_tokens, 5.0);
    }
}
