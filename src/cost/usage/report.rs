//! The recorded-usage report (`ctxasm cost --recorded-only`, and the
//! recorded side of `ctxasm cost`): totals, per session, project, UTC day
//! and model, from requests already counted once and priced.
//!
//! Sums only: which lines are requests is `usage`'s and `dedup`'s.

use super::{FileCandidates, RecordedRequest, dedup_files, price_requests, usage_lines_corpus};
use crate::corpus::RunOptions;
use crate::cost::format::json;
use crate::cost::pricing::Pricing;
use crate::cost::tokens::TokenCounts;
use crate::diag::Diagnostic;
use crate::input::discover::Discovery;
use crate::time::{DAY_MS, date_of_days, format_rfc3339_ms, parse_rfc3339_ms};
use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The keys of every `totals` object.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Totals {
    pub requests: u64,
    pub input_tokens: u64,
    /// 5-minute + 1-hour cache writes.
    pub cache_creation_input_tokens: u64,
    pub cache_read_input_tokens: u64,
    pub output_tokens: u64,
    /// Priced requests only: requests of a model without a price are
    /// counted in the tokens above and listed as [`Unpriced`], never priced
    /// at 0. In JSON rounded to 1e-6 USD.
    #[serde(serialize_with = "json::usd")]
    pub cost_usd: f64,
}

/// The requests of one model the price table has no row for: counted,
/// listed, and left out of every `cost_usd`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Unpriced {
    /// The model as the request names it (`unknown` when it names none).
    pub model: String,
    pub requests: u64,
    /// Input + cache writes + cache reads + output.
    pub tokens: u64,
    pub input_tokens: u64,
    pub cache_creation_input_tokens: u64,
    pub cache_read_input_tokens: u64,
    pub output_tokens: u64,
}

/// [`Unpriced`] rows being summed, by model.
#[derive(Debug, Clone, Default)]
pub struct UnpricedList(BTreeMap<String, Unpriced>);

impl UnpricedList {
    /// One unpriced request of `model` (`""` counts as `unknown`).
    pub fn add(&mut self, model: &str, t: &TokenCounts) {
        let model = if model.is_empty() { "unknown" } else { model };
        let u = self
            .0
            .entry(model.to_string())
            .or_insert_with(|| Unpriced { model: model.to_string(), ..Unpriced::default() });
        u.requests += 1;
        u.tokens += t.total_input() + t.output;
        u.input_tokens += t.input;
        u.cache_creation_input_tokens += t.cache_write();
        u.cache_read_input_tokens += t.cache_read;
        u.output_tokens += t.output;
    }

    /// The rows, sorted by model.
    pub fn into_vec(self) -> Vec<Unpriced> {
        self.0.into_values().collect()
    }
}

/// The TTL split of `cache_creation_input_tokens`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
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
    /// Add `other`'s sums.
    pub fn merge(&mut self, other: &UsageSum) {
        let (t, o) = (&mut self.totals, &other.totals);
        t.requests += o.requests;
        t.input_tokens += o.input_tokens;
        t.cache_creation_input_tokens += o.cache_creation_input_tokens;
        t.cache_read_input_tokens += o.cache_read_input_tokens;
        t.output_tokens += o.output_tokens;
        t.cost_usd += o.cost_usd;
        self.cache_creation.ephemeral_5m_input_tokens += other.cache_creation.ephemeral_5m_input_tokens;
        self.cache_creation.ephemeral_1h_input_tokens += other.cache_creation.ephemeral_1h_input_tokens;
        self.unpriced_requests += other.unpriced_requests;
        self.long_context_requests += other.long_context_requests;
    }

    pub(super) fn add(&mut self, r: &ReqView<'_>) {
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
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PricingInfo {
    /// The table's own `source` and `date`.
    pub source: String,
    pub date: String,
    /// Which table: `the built-in price table` or `the price table FILE`.
    pub table: String,
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
    /// Their requests and tokens (not in `cost_usd`), sorted by model.
    pub unpriced: Vec<Unpriced>,
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

/// The bill at a glance, for the top of `cost`'s reports: when it ran, what
/// it cost per month, model and project, and its writes' TTL split.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Headline {
    /// The first and last UTC day with a request (`None` without a
    /// timestamp).
    pub first_day: Option<String>,
    pub last_day: Option<String>,
    /// Cost in USD by UTC month (`YYYY-MM`; `unknown` without a timestamp).
    #[serde(serialize_with = "crate::cost::format::json::usd_map")]
    pub by_month: BTreeMap<String, f64>,
    /// Cost in USD by model as recorded.
    #[serde(serialize_with = "crate::cost::format::json::usd_map")]
    pub by_model: BTreeMap<String, f64>,
    /// Cost in USD by project.
    #[serde(serialize_with = "crate::cost::format::json::usd_map")]
    pub by_project: BTreeMap<String, f64>,
    /// The recorded writes' TTL split.
    pub cache_creation: CacheCreation,
}

impl RecordedReport {
    /// [`Headline`] of this report's sums.
    pub fn headline(&self) -> Headline {
        let days = || self.by_day.keys().filter(|d| d.as_str() != "unknown");
        let mut by_month: BTreeMap<String, f64> = BTreeMap::new();
        for (d, sum) in &self.by_day {
            let month = if d == "unknown" { d.as_str() } else { d.get(..7).unwrap_or(d) };
            *by_month.entry(month.to_string()).or_default() += sum.totals.cost_usd;
        }
        Headline {
            first_day: days().next().cloned(),
            last_day: days().next_back().cloned(),
            by_month,
            by_model: self.by_model.iter().map(|(m, u)| (m.clone(), u.usage.totals.cost_usd)).collect(),
            by_project: self.by_project.iter().map(|(p, u)| (p.clone(), u.totals.cost_usd)).collect(),
            cache_creation: self.cache_creation,
        }
    }
}

/// A request's timestamp as the report reads it.
#[derive(Debug, Clone, Copy)]
pub(super) enum Stamp<'r> {
    None,
    /// As written.
    Text(&'r str),
    /// An instant whose text is [`format_rfc3339_ms`]'s (with
    /// milliseconds): written only when a session's first or last.
    Ms(i64),
}

/// One priced request as the report sums it.
#[derive(Debug, Clone)]
pub(super) struct ReqView<'r> {
    pub(super) session_id: &'r str,
    pub(super) project: &'r str,
    pub(super) stamp: Stamp<'r>,
    pub(super) model: Option<&'r str>,
    pub(super) tokens: TokenCounts,
    pub(super) cost_usd: Option<f64>,
    pub(super) long_context: bool,
}

impl RecordedReport {
    /// Sum priced requests (from [`super::recorded_requests_corpus`]).
    /// Diagnostics are sorted (file, line, kind, message), each once.
    pub fn from_requests(requests: &[RecordedRequest], pricing: &Pricing, diagnostics: Vec<Diagnostic>) -> Self {
        let views = requests.iter().map(|r| ReqView {
            session_id: &r.session_id,
            project: &r.project,
            stamp: r.timestamp.as_deref().map_or(Stamp::None, Stamp::Text),
            model: r.model.as_deref(),
            tokens: r.tokens,
            cost_usd: r.cost_usd,
            long_context: r.long_context,
        });
        Self::from_views(views, pricing, diagnostics)
    }

    /// Sum priced requests, in the order the rule keeps them.
    pub(super) fn from_views<'r>(
        requests: impl Iterator<Item = ReqView<'r>>,
        pricing: &Pricing,
        mut diagnostics: Vec<Diagnostic>,
    ) -> Self {
        diagnostics.sort();
        diagnostics.dedup();
        let mut rep = RecordedReport { pricing: PricingInfo::of(pricing), diagnostics, ..RecordedReport::default() };
        let mut all = UsageSum::default();
        let mut unpriced = UnpricedList::default();
        let mut sessions: BTreeMap<(&str, &str), SessionUsage> = BTreeMap::new();
        // By UTC day number (`utc_day` is the date of the instant's day).
        let mut days: FxHashMap<i64, UsageSum> = FxHashMap::default();
        let mut unknown_day: Option<UsageSum> = None;
        for r in requests {
            all.add(&r);
            let s = sessions.entry((r.project, r.session_id)).or_insert_with(|| SessionUsage {
                session_id: r.session_id.to_string(),
                project: r.project.to_string(),
                ..SessionUsage::default()
            });
            s.usage.add(&r);
            let ms = match r.stamp {
                Stamp::None => None,
                Stamp::Text(t) => parse_rfc3339_ms(t),
                Stamp::Ms(ms) => Some(ms),
            };
            let text = |ms: i64| match r.stamp {
                Stamp::Text(t) => t.to_string(),
                _ => format_rfc3339_ms(ms, true),
            };
            if let Some(ms) = ms {
                if s.first_ms.is_none_or(|f| ms < f) {
                    s.first_ms = Some(ms);
                    s.first_timestamp = Some(text(ms));
                }
                if s.last_ms.is_none_or(|l| ms > l) {
                    s.last_ms = Some(ms);
                    s.last_timestamp = Some(text(ms));
                }
            }
            let model = r.model.unwrap_or("unknown");
            if r.cost_usd.is_none() {
                unpriced.add(model, &r.tokens);
            }
            if !s.models.iter().any(|m| m == model) {
                s.models.push(model.to_string());
            }
            match rep.by_project.get_mut(r.project) {
                Some(p) => p.add(&r),
                None => rep.by_project.entry(r.project.to_string()).or_default().add(&r),
            }
            match ms {
                Some(ms) => days.entry(ms.div_euclid(DAY_MS)).or_default().add(&r),
                None => unknown_day.get_or_insert_default().add(&r),
            }
            let m = match rep.by_model.get_mut(model) {
                Some(m) => m,
                None => rep.by_model.entry(model.to_string()).or_insert_with(|| ModelUsage {
                    priced_as: r.model.and_then(|m| pricing.price(m)).map(|p| p.id.clone()),
                    ..ModelUsage::default()
                }),
            };
            m.usage.add(&r);
        }
        rep.by_day = days.into_iter().map(|(d, sum)| (date_of_days(d), sum)).collect();
        if let Some(sum) = unknown_day {
            rep.by_day.insert("unknown".to_string(), sum);
        }
        rep.totals = all.totals;
        rep.cache_creation = all.cache_creation;
        rep.unpriced_requests = all.unpriced_requests;
        rep.long_context_requests = all.long_context_requests;
        rep.unpriced_models =
            rep.by_model.iter().filter(|(_, m)| m.usage.unpriced_requests > 0).map(|(k, _)| k.clone()).collect();
        rep.unpriced = unpriced.into_vec();
        rep.by_session = sessions.into_values().collect();
        rep
    }
}

impl PricingInfo {
    pub fn of(pricing: &Pricing) -> Self {
        PricingInfo { source: pricing.source.clone(), date: pricing.date.clone(), table: pricing.table.clone() }
    }
}

/// [`recorded_report`](super::recorded_report), and the usage lines it was counted from (before
/// the rule: what a shard's partial report carries, see `carry`).
pub fn recorded_report_and_lines(
    disc: &Discovery,
    run: &RunOptions<'_>,
    pricing: &Pricing,
) -> (RecordedReport, FileCandidates) {
    let (files, diagnostics) = usage_lines_corpus(disc, run);
    let mut requests = dedup_files(files.clone());
    price_requests(&mut requests, pricing);
    (RecordedReport::from_requests(&requests, pricing, diagnostics), files)
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::time::utc_day;

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
