//! `ctxasm cost merge`: the reports of the shards of a corpus (`cost --json
//! --shard K/N`, each with its [`Partial`]) merged into the report of the
//! corpus.
//!
//! # What merges exactly
//!
//! - **Recorded usage** (`cost --recorded-only`, and `recorded` of `cost`):
//!   exactly, every field to the last bit, whatever the shard key. ccusage's
//!   rule counts a request copied into several files once across the
//!   corpus, so shard counts cannot be summed: each shard carries its usage
//!   lines (`usage::carry`) and the merge runs the rule once over all of
//!   them, then prices and sums them as a single run does.
//! - **The accuracy** (`accuracy`, every field but `requests_without_usage`,
//!   its medians and 90th percentiles too; `modeled_compared`, the cost by
//!   category): each shard carries the requests it compared, by session
//!   (`compared`); the merge compares them again in the corpus's order of
//!   sessions, so a request copied into sessions of two shards is compared
//!   once, as in a single run, and the sums are added in the single run's
//!   order.
//! - **Modeled counts and money** (`modeled`, `modeled_unpriced`, the TTL
//!   split, `what_if`, `sessions`, `rejected_requests`, the estimator's
//!   counts): summed
//!   (money from the unrounded values the partial carries; a session is in
//!   one shard, so its row is the shard's). They are a single run's when
//!   every shard modeled as the single run does: the shard key keeps each
//!   account together (`--shard-by` at least as wide as `--account`, else
//!   sessions of one account in different shards do not share a cache) and
//!   every shard uses the same estimator (`--estimator REPORT`, else each
//!   fits its own on its sessions). Then counts are equal and money differs
//!   only by the order of floating-point sums: a sum on a rounding boundary
//!   may show one unit of its last digit apart (1e-6 USD, 1e-4 points). The
//!   notes of the merged report say which of the two conditions did not
//!   hold.
//!
//! # What does not merge
//!
//! - The estimator's quantiles (`estimator.median_relative_error` /
//!   `p90_relative_error`): `null`.
//! - The estimator's fit: `estimator.bytes_per_token` and
//!   `unseen_prefix_median` are kept when every shard has the same
//!   (`--estimator`), else `null`.
//! - Per-request rows (`--per-request`, the HTML page's chart): per shard.
//!
//! Diagnostics are every shard's, sorted and each once, as a single run
//! lists them (discovery's, which every shard reports, once).
//!
//! The shards must be all of one run: the same N and key, each index once
//! (a missing shard would leave sessions out), the same `--recorded-only`,
//! `--account`, what-ifs and price table.

use super::modeled::{ComparedSession, Comparison, CostReport, WhatIfResult};
use super::pricing::Pricing;
use super::usage::carry::{CarriedFile, carry, uncarry};
use super::usage::{FileCandidates, PricingInfo, RecordedReport, Totals, Unpriced, dedup_files, price_requests};
use crate::diag::Diagnostic;
use crate::input::shard::{Shard, ShardBy};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// `partial.format` of a shard's report.
pub const PARTIAL_FORMAT: &str = "ctxasm-cost-partial";
/// `partial.version`.
pub const PARTIAL_VERSION: u32 = 2;

/// What a shard's `cost --json` report carries for the merge (its
/// `partial` object).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Partial {
    pub format: String,
    pub version: u32,
    pub shard: Shard,
    pub shard_by: ShardBy,
    /// `cost --recorded-only`: no modeled report.
    pub recorded_only: bool,
    pub pricing: PricingInfo,
    /// The shard's diagnostics.
    pub diagnostics: Vec<Diagnostic>,
    /// `cost`: the shard's modeled report, money unrounded (its recorded
    /// side is recounted from `usage`; diagnostics are above).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub modeled: Option<CostReport>,
    /// The shard's usage lines before the rule.
    pub usage: Vec<CarriedFile>,
    /// `cost`: the requests the shard compared, by session in its order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub compared: Vec<ComparedSession>,
}

impl Partial {
    /// The partial of a `cost --recorded-only` shard.
    pub fn recorded(shard: Shard, by: ShardBy, report: &RecordedReport, lines: &FileCandidates) -> Self {
        Partial {
            format: PARTIAL_FORMAT.into(),
            version: PARTIAL_VERSION,
            shard,
            shard_by: by,
            recorded_only: true,
            pricing: report.pricing.clone(),
            diagnostics: report.diagnostics.clone(),
            modeled: None,
            usage: carry(lines),
            compared: Vec::new(),
        }
    }

    /// The partial of a `cost` shard.
    pub fn modeled(shard: Shard, by: ShardBy, report: &CostReport, lines: &FileCandidates) -> Self {
        let modeled = CostReport { diagnostics: Vec::new(), turns: Vec::new(), compared: Vec::new(), ..report.clone() };
        Partial {
            format: PARTIAL_FORMAT.into(),
            version: PARTIAL_VERSION,
            shard,
            shard_by: by,
            recorded_only: false,
            pricing: report.pricing.clone(),
            diagnostics: report.diagnostics.clone(),
            modeled: Some(modeled),
            usage: carry(lines),
            compared: report.compared.clone(),
        }
    }

    /// As JSON, every money value unrounded.
    pub fn to_json(&self) -> serde_json::Result<serde_json::Value> {
        super::format::json::exact(|| serde_json::to_value(self))
    }
}

/// The report of the corpus from its shards' partials.
#[derive(Debug, Clone)]
pub struct Merged {
    pub shards: u32,
    pub shard_by: ShardBy,
    /// Exactly a single run's.
    pub recorded: RecordedReport,
    /// `cost` (not `--recorded-only`): the modeled report (see the module
    /// docs for what is exact).
    pub modeled: Option<CostReport>,
    /// What differs from a single run, and why.
    pub notes: Vec<String>,
}

/// Merge the partials (each with the name of its file, for errors) priced
/// with `pricing` (the table every shard used).
pub fn merge(parts: Vec<(String, Partial)>, pricing: &Pricing) -> Result<Merged, String> {
    check(&parts, pricing)?;
    let first = &parts[0].1;
    let (count, by, recorded_only) = (first.shard.count, first.shard_by, first.recorded_only);
    let mut files = Vec::new();
    let mut diagnostics: Vec<Diagnostic> = Vec::new();
    let mut modeled = Vec::new();
    for (name, p) in parts {
        files.extend(uncarry(p.usage));
        diagnostics.extend(p.diagnostics);
        if let Some(mut m) = p.modeled {
            m.compared = p.compared;
            modeled.push((name, m));
        } else if !recorded_only {
            return Err(format!("{name}: a partial of `cost` without its modeled report"));
        }
    }
    let mut requests = dedup_files(files);
    price_requests(&mut requests, pricing);
    let recorded = RecordedReport::from_requests(&requests, pricing, diagnostics);
    let mut notes = Vec::new();
    let modeled = if recorded_only { None } else { Some(merge_modeled(modeled, &recorded, by, pricing, &mut notes)?) };
    Ok(Merged { shards: count, shard_by: by, recorded, modeled, notes })
}

/// The shards are all of one run, each once, priced with `pricing`.
fn check(parts: &[(String, Partial)], pricing: &Pricing) -> Result<(), String> {
    let Some((first_name, first)) = parts.first() else { return Err("no report to merge".into()) };
    let price = PricingInfo::of(pricing);
    let mut seen: BTreeMap<u32, &str> = BTreeMap::new();
    for (name, p) in parts {
        if p.format != PARTIAL_FORMAT || p.version != PARTIAL_VERSION {
            return Err(format!(
                "{name}: a partial of format {:?} version {}, this ctxasm reads {PARTIAL_FORMAT:?} version \
                 {PARTIAL_VERSION}",
                p.format, p.version
            ));
        }
        if (p.shard.count, p.shard_by) != (first.shard.count, first.shard_by) {
            return Err(format!(
                "{name} is shard {} by {}, {first_name} is shard {} by {}: not shards of one run",
                p.shard, p.shard_by, first.shard, first.shard_by
            ));
        }
        if p.recorded_only != first.recorded_only {
            let what = |r: bool| if r { "cost --recorded-only" } else { "cost" };
            return Err(format!(
                "{name} is a report of `{}`, {first_name} of `{}`: not shards of one run",
                what(p.recorded_only),
                what(first.recorded_only)
            ));
        }
        if p.pricing != price {
            return Err(format!(
                "{name} was priced with {} (dated {}), this merge with {} (dated {}): give the shards' table with \
                 --pricing",
                p.pricing.table, p.pricing.date, price.table, price.date
            ));
        }
        if let Some(other) = seen.insert(p.shard.index, name) {
            return Err(format!("shard {} is given twice: {other} and {name}", p.shard));
        }
    }
    let missing: Vec<String> = (0..first.shard.count)
        .filter(|k| !seen.contains_key(k))
        .map(|k| format!("{k}/{}", first.shard.count))
        .collect();
    if !missing.is_empty() {
        let (s, are) = if missing.len() == 1 { ("", "is") } else { ("s", "are") };
        return Err(format!(
            "shard{s} {} {are} missing: a merge covers the corpus only with every shard",
            missing.join(", ")
        ));
    }
    Ok(())
}

fn add_totals(a: &mut Totals, b: &Totals) {
    a.requests += b.requests;
    a.input_tokens += b.input_tokens;
    a.cache_creation_input_tokens += b.cache_creation_input_tokens;
    a.cache_read_input_tokens += b.cache_read_input_tokens;
    a.output_tokens += b.output_tokens;
    a.cost_usd += b.cost_usd;
}

fn add_unpriced(a: &mut BTreeMap<String, Unpriced>, b: &[Unpriced]) {
    for u in b {
        let m = a.entry(u.model.clone()).or_insert_with(|| Unpriced { model: u.model.clone(), ..Unpriced::default() });
        m.requests += u.requests;
        m.tokens += u.tokens;
        m.input_tokens += u.input_tokens;
        m.cache_creation_input_tokens += u.cache_creation_input_tokens;
        m.cache_read_input_tokens += u.cache_read_input_tokens;
        m.output_tokens += u.output_tokens;
    }
}

/// How wide an account or shard key is: session 0, project 1, root 2.
fn width(scope: &str) -> u8 {
    match scope {
        "session" => 0,
        "project" => 1,
        _ => 2,
    }
}

fn merge_modeled(
    reports: Vec<(String, CostReport)>,
    recorded: &RecordedReport,
    by: ShardBy,
    pricing: &Pricing,
    notes: &mut Vec<String>,
) -> Result<CostReport, String> {
    let Some((first_name, first)) = reports.first() else { return Err("no report to merge".into()) };
    let what_ifs: Vec<&str> = first.what_if.iter().map(|w| w.what_if.as_str()).collect();
    for (name, r) in &reports {
        if r.account != first.account {
            return Err(format!(
                "{name} was modeled with --account {}, {first_name} with --account {}: not shards of one run",
                r.account, first.account
            ));
        }
        let these: Vec<&str> = r.what_if.iter().map(|w| w.what_if.as_str()).collect();
        if these != what_ifs {
            return Err(format!(
                "{name} has the what-ifs [{}], {first_name} [{}]: not shards of one run",
                these.join(", "),
                what_ifs.join(", ")
            ));
        }
    }
    let mut out = CostReport {
        recorded: recorded.totals,
        bill: recorded.headline(),
        recorded_unpriced: recorded.unpriced.clone(),
        account: first.account.clone(),
        pricing: recorded.pricing.clone(),
        diagnostics: recorded.diagnostics.clone(),
        what_if: first
            .what_if
            .iter()
            .map(|w| WhatIfResult { what_if: w.what_if.clone(), ..WhatIfResult::default() })
            .collect(),
        ..CostReport::default()
    };
    let mut modeled_unpriced = BTreeMap::new();
    let mut what_if_unpriced: Vec<BTreeMap<String, Unpriced>> = vec![BTreeMap::new(); out.what_if.len()];
    // A what-if no shard could apply is not applicable to the corpus (the
    // first shard says why).
    let mut applicable = vec![false; out.what_if.len()];
    let same_fit = reports.iter().all(|(_, r)| {
        r.estimator.bytes_per_token == first.estimator.bytes_per_token
            && r.estimator.unseen_prefix_median == first.estimator.unseen_prefix_median
    });
    for (_, r) in &reports {
        add_totals(&mut out.modeled, &r.modeled);
        add_unpriced(&mut modeled_unpriced, &r.modeled_unpriced);
        let (c, d) = (&mut out.modeled_cache_creation, &r.modeled_cache_creation);
        c.ephemeral_5m_input_tokens += d.ephemeral_5m_input_tokens;
        c.ephemeral_1h_input_tokens += d.ephemeral_1h_input_tokens;
        let (a, b) = (&mut out.accuracy, &r.accuracy);
        a.requests_without_usage += b.requests_without_usage;
        let (e, f) = (&mut out.estimator, &r.estimator);
        e.samples += f.samples;
        e.blocks_pinned += f.blocks_pinned;
        e.blocks_estimated += f.blocks_estimated;
        e.inconsistent_requests += f.inconsistent_requests;
        for (i, w) in r.what_if.iter().enumerate() {
            add_totals(&mut out.what_if[i].modeled, &w.modeled);
            add_unpriced(&mut what_if_unpriced[i], &w.unpriced);
            applicable[i] |= w.not_applicable.is_none();
        }
        out.sessions.extend(r.sessions.iter().cloned());
        out.rejected_requests += r.rejected_requests;
        out.ttl_misses.merge(&r.ttl_misses);
        out.context += r.context;
        out.worst_requests.extend(r.worst_requests.iter().cloned());
        super::modeled::keep_worst(&mut out.worst_requests);
    }
    out.modeled_unpriced = modeled_unpriced.into_values().collect();
    out.sessions.sort_by(|a, b| (&a.project, &a.session_id).cmp(&(&b.project, &b.session_id)));
    // The requests of the bill compared again in the corpus's order of
    // sessions (discovery's: by first file), each recorded response once.
    let mut compared: Vec<&ComparedSession> = reports.iter().flat_map(|(_, r)| &r.compared).collect();
    compared.sort_by(|a, b| a.file.as_bytes().cmp(b.file.as_bytes()));
    let mut comparison = Comparison::default();
    for c in compared.iter().flat_map(|s| &s.requests) {
        comparison.add_compared(c, pricing);
    }
    comparison.finish(&mut out);
    let baseline = out.modeled.cost_usd;
    for (i, w) in out.what_if.iter_mut().enumerate() {
        if !applicable[i] {
            w.not_applicable = first.what_if[i].not_applicable.clone();
        }
    }
    for (w, unpriced) in out.what_if.iter_mut().zip(what_if_unpriced) {
        w.unpriced = unpriced.into_values().collect();
        w.delta_usd = w.modeled.cost_usd - baseline;
        w.delta_pct = if baseline > 0.0 { 100.0 * w.delta_usd / baseline } else { 0.0 };
    }
    let e = &mut out.estimator;
    e.median_relative_error = f64::NAN;
    e.p90_relative_error = f64::NAN;
    notes.push(
        "the estimator's medians and 90th percentiles of error are quantiles over each shard's requests: not \
         merged (null)"
            .into(),
    );
    if same_fit {
        e.bytes_per_token = first.estimator.bytes_per_token.clone();
        e.unseen_prefix_median = first.estimator.unseen_prefix_median;
    } else {
        e.bytes_per_token = first.estimator.bytes_per_token.keys().map(|&k| (k, f64::NAN)).collect();
        e.unseen_prefix_median = None;
        notes.push(
            "each shard fitted its own estimator on its sessions (estimator.bytes_per_token and \
             unseen_prefix_median differ: null here), where a single run fits one on the corpus; give every shard \
             the same with --estimator REPORT"
                .into(),
        );
    }
    if width(&by.to_string()) < width(&first.account) {
        notes.push(format!(
            "sharded by {by} with --account {}: sessions of one account in different shards did not share a prompt \
             cache, as they do in a single run; --shard-by {} keeps each account in one shard",
            first.account, first.account
        ));
    }
    notes.push("per-request rows (--per-request, the HTML page) are per shard: not merged".into());
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn partial(index: u32, count: u32) -> (String, Partial) {
        let pricing = Pricing::builtin();
        let report = RecordedReport { pricing: PricingInfo::of(&pricing), ..RecordedReport::default() };
        (format!("s{index}.json"), Partial::recorded(Shard { index, count }, ShardBy::Session, &report, &Vec::new()))
    }

    #[test]
    fn every_shard_once_and_of_one_run() {
        let p = Pricing::builtin();
        assert!(merge(vec![partial(0, 2), partial(1, 2)], &p).is_ok());
        assert_eq!(
            merge(vec![partial(0, 3)], &p).unwrap_err(),
            "shards 1/3, 2/3 are missing: a merge covers the corpus only with every shard"
        );
        assert_eq!(
            merge(vec![partial(1, 2), partial(0, 2), partial(1, 2)], &p).unwrap_err(),
            "shard 1/2 is given twice: s1.json and s1.json"
        );
        assert_eq!(
            merge(vec![partial(0, 2), partial(1, 3)], &p).unwrap_err(),
            "s1.json is shard 1/3 by session, s0.json is shard 0/2 by session: not shards of one run"
        );
        let mut other = partial(1, 2);
        other.1.pricing.date = "1999-01-01".into();
        let e = merge(vec![partial(0, 2), other], &p).unwrap_err();
        assert!(e.starts_with("s1.json was priced with the built-in price table (dated 1999-01-01)"), "{e}");
        let mut old = partial(1, 2);
        old.1.version = 9;
        let e = merge(vec![partial(0, 2), old], &p).unwrap_err();
        assert!(e.starts_with("s1.json: a partial of format \"ctxasm-cost-partial\" version 9"), "{e}");
    }
}
