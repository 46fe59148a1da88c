//! Pass 2: tokens. An [`Estimator`] is fitted by least squares on the
//! requests that only append to the one before (recorded total minus the
//! previous total, against the bytes added by kind); every block gets its
//! estimate, then [`pin_chain`] makes each request's total equal to its
//! recorded usage (facts §1.6). The unseen prefix's size is the first
//! request's total minus the estimate of its other blocks.
//!
//! No cache simulation here (pass 3 is `replay`).

use super::blocks::{ChainIn, unseen_part};
use super::options::ModelOptions;
use super::store::ChainStore;
use crate::cost::sim::{BlockFeat, BlockKind, ChainStep, Estimator, Fit, N_KINDS, PinReport, pin_chain};
use serde::{Deserialize, Serialize};

/// How the estimator was fitted, and how well it predicts what it was
/// fitted on.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct EstimatorReport {
    /// Requests that only append to the one before, both with usage.
    pub samples: u64,
    /// Bytes per token by kind (`image` is a factor on the image formula;
    /// `null` in JSON: the kind was fitted to 0 tokens, infinite bytes per
    /// token).
    #[serde(serialize_with = "crate::cost::format::json::ratio_map", deserialize_with = "kind_map")]
    pub bytes_per_token: BTreeMapF,
    /// |estimate − recorded| / recorded of the appended tokens.
    #[serde(serialize_with = "crate::cost::format::json::ratio")]
    pub median_relative_error: f64,
    #[serde(serialize_with = "crate::cost::format::json::ratio")]
    pub p90_relative_error: f64,
    /// Blocks whose count comes from recorded usage / from the estimate.
    pub blocks_pinned: u64,
    pub blocks_estimated: u64,
    /// Requests whose usage contradicts counts pinned before (left alone).
    pub inconsistent_requests: u64,
    /// Median size of the unseen prefix (tokens), over chains with usage
    /// (with [`ModelOptions::fixed_estimator`], the size given with it).
    pub unseen_prefix_median: Option<u64>,
}

/// [`EstimatorReport::bytes_per_token`] read back: the kinds it knows,
/// `null` as infinity.
fn kind_map<'de, D: serde::Deserializer<'de>>(d: D) -> Result<BTreeMapF, D::Error> {
    let m = std::collections::BTreeMap::<String, Option<f64>>::deserialize(d)?;
    Ok(BlockKind::ALL
        .iter()
        .filter_map(|&k| m.get(kind_name(k)).map(|v| (kind_name(k), v.unwrap_or(f64::INFINITY))))
        .collect())
}

/// The estimator of an earlier `cost --json` report (its
/// `estimator.bytes_per_token` and `unseen_prefix_median`), to model with
/// instead of fitting one ([`ModelOptions::fixed_estimator`]).
pub fn estimator_of_report(report: &serde_json::Value) -> Result<(Estimator, Option<u64>), String> {
    let e = report.get("estimator").ok_or("no \"estimator\" object (not a `cost --json` report?)")?;
    let bpt = e.get("bytes_per_token").and_then(|b| b.as_object()).ok_or("no estimator.bytes_per_token object")?;
    if bpt.values().all(serde_json::Value::is_null) {
        return Err(
            "estimator.bytes_per_token has no value (a merge of shards that fitted their own estimators?)".into()
        );
    }
    let mut est = Estimator::default();
    for k in BlockKind::ALL {
        est.bytes_per_token[k.index()] = match bpt.get(kind_name(k)) {
            Some(serde_json::Value::Null) => f64::INFINITY,
            Some(v) => v
                .as_f64()
                .filter(|x| *x > 0.0)
                .ok_or_else(|| format!("estimator.bytes_per_token.{} is not a positive number", kind_name(k)))?,
            None => return Err(format!("estimator.bytes_per_token has no {:?}", kind_name(k))),
        };
    }
    let unseen = e.get("unseen_prefix_median").and_then(serde_json::Value::as_u64);
    Ok((est, unseen))
}

/// Kind name → value, in kind order.
pub type BTreeMapF = std::collections::BTreeMap<&'static str, f64>;

fn kind_name(k: BlockKind) -> &'static str {
    match k {
        BlockKind::Text => "text",
        BlockKind::ToolUse => "tool_use",
        BlockKind::ToolResult => "tool_result",
        BlockKind::Image => "image",
        BlockKind::System => "system",
        BlockKind::Tool => "tool",
    }
}

pub(super) fn quantile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let i = ((sorted.len() - 1) as f64 * q).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

pub(super) fn sorted(mut v: Vec<f64>) -> Vec<f64> {
    v.sort_by(f64::total_cmp);
    v
}

/// A fit sample: (features added, recorded tokens added).
type Sample = ([f64; N_KINDS], f64);

/// The fit's normal equations over every chain's samples (in chain order),
/// and per chain what [`unseen_residual`] needs of it (one read of the
/// chains for both). The samples are summed as their chain comes, not
/// held: at 56 B each they were most of a large corpus's peak.
fn fit_samples(chains: &ChainStore) -> std::io::Result<(Fit, Vec<ResidualInput>)> {
    let mut fit = Fit::default();
    let mut inputs = Vec::new();
    chains.map_into(
        |_, c| (chain_samples(c), residual_input(c)),
        |_, (samples, input)| {
            for (x, y) in &samples {
                fit.add(x, *y);
            }
            inputs.extend(input);
        },
    )?;
    Ok((fit, inputs))
}

/// |estimate − recorded| / recorded of each of the chain's fit samples
/// that recorded tokens added (before its features are dropped).
fn fit_errors(c: &ChainIn, est: &Estimator) -> Vec<f64> {
    chain_samples(c).iter().filter(|(_, y)| *y > 0.0).map(|(x, y)| (est.estimate_features(x) - y).abs() / y).collect()
}

/// What [`unseen_residual`] reads of a chain: its first request's total
/// and the blocks it added besides the unseen prefix.
struct ResidualInput {
    total: u64,
    blocks: Vec<(BlockKind, BlockFeat)>,
}

fn residual_input(c: &ChainIn) -> Option<ResidualInput> {
    c.unseen?;
    let first = c.reqs.first()?;
    let total = first.recorded?.total_input();
    let blocks = first
        .step
        .added
        .clone()
        .filter(|&i| c.unseen_part(i).is_none())
        .map(|i| (c.arena[i].kind, c.feats[i]))
        .collect();
    Some(ResidualInput { total, blocks })
}

/// [`fit_samples`] of one chain.
fn chain_samples(c: &ChainIn) -> Vec<Sample> {
    let mut out = Vec::new();
    for w in c.reqs.windows(2) {
        let (a, b) = (&w[0], &w[1]);
        let (Some(ra), Some(rb)) = (a.recorded, b.recorded) else { continue };
        let (ta, tb) = (ra.total_input(), rb.total_input());
        if b.step.keep != a.len || tb < ta || b.step.added.is_empty() {
            continue;
        }
        let mut x = [0.0; N_KINDS];
        for i in b.step.added.clone() {
            if c.unseen_part(i).is_some() {
                continue;
            }
            let v = c.feats[i].vector(c.arena[i].kind);
            for k in 0..N_KINDS {
                x[k] += v[k];
            }
        }
        if x.iter().sum::<f64>() > 0.0 {
            out.push((x, (tb - ta) as f64));
        }
    }
    out
}

/// The unseen prefix of a chain whose first request has usage: its total
/// minus the estimate of the other blocks (at least 0).
fn unseen_residual(c: &ChainIn, est: &Estimator) -> Option<u64> {
    residual_input(c).map(|r| residual(&r, est))
}

fn residual(r: &ResidualInput, est: &Estimator) -> u64 {
    let others: u64 = r.blocks.iter().map(|(kind, f)| est.estimate_features(&f.vector(*kind)).ceil() as u64).sum();
    r.total.saturating_sub(others)
}

/// The sizes of the unseen prefix's two blocks (see `blocks::unseen_blocks`)
/// from its whole size and the chain's recorded usage, and whether they are
/// exact (read from the usage).
///
/// The first request's cache read, when it read part of the prefix warm, is
/// the first block (facts §1.6: a read ends at a breakpoint). The system
/// prompt ends where the chain's later requests fall back to when their
/// messages changed: the cache read of a request that read less than the
/// request before it sent, and more than the first block (the value most
/// of them read, the smaller on a tie; read twice at least when the first
/// request read some); the second block reaches there.
/// Whatever else the first request sent that the transcript does not hold
/// (its first message's reminders and attachments) is in its messages'
/// blocks, where pinning spreads it. Without such reads the second block
/// is empty and the first is the first request's read, else all of it.
fn unseen_split(c: &ChainIn, residual: Option<u64>, default: u64) -> ([u64; 2], bool) {
    let Some(whole) = residual else { return ([default, 0], false) };
    let read = c.reqs.first().and_then(|r| r.recorded).map_or(0, |t| t.cache_read);
    let mut levels: Vec<u64> = c
        .reqs
        .windows(2)
        .filter_map(|w| {
            let (before, now) = (w[0].recorded?, w[1].recorded?);
            let r = now.cache_read;
            (r > read && r <= whole && r < before.total_input()).then_some(r)
        })
        .collect();
    levels.sort_unstable();
    // Past a first read (a level already), another level must be read
    // twice: read once, it may be where anything else ended.
    let mut system = None;
    let mut best = if read > 0 { 1 } else { 0 };
    for run in levels.chunk_by(|a, b| a == b) {
        if run.len() > best {
            best = run.len();
            system = Some(run[0]);
        }
    }
    match (system, read) {
        (Some(s), r) if r > 0 && r <= whole => ([r, s - r], true),
        (Some(s), _) => ([s, 0], true),
        (None, r) if r > 0 && r <= whole => ([r, 0], true),
        (None, _) => ([whole, 0], false),
    }
}

/// Give every block its tokens and pin them to the recorded usage.
fn tokens_and_pins(c: &mut ChainIn, est: &Estimator, unseen_default: u64) -> PinReport {
    // Sizes read from the first request's cache read are exact: pinned
    // before the rest of the total is spread.
    let (sizes, from_read) = unseen_split(c, unseen_residual(c, est), unseen_default);
    let first = c.unseen;
    for (i, (b, f)) in c.arena.iter_mut().zip(&c.feats).enumerate() {
        b.tokens = if let Some(part) = unseen_part(first, &c.unseen_again, i) {
            // Again (after a change): the sizes the first request gave,
            // kept when the rest of the request is pinned.
            b.pinned = from_read || first.is_none_or(|u| i >= u + 2);
            u32::try_from(sizes[part]).unwrap_or(u32::MAX)
        } else {
            let t = est.estimate_features(&f.vector(b.kind)).ceil();
            if t.is_finite() { t.clamp(0.0, f64::from(u32::MAX)) as u32 } else { 0 }
        };
    }
    // The features gave the estimates; nothing reads them again.
    c.feats = Vec::new();
    let steps: Vec<ChainStep> = c.reqs.iter().map(|r| r.step.clone()).collect();
    let totals: Vec<Option<u64>> = c.reqs.iter().map(|r| r.recorded.map(|t| t.total_input())).collect();
    pin_chain(&mut c.arena, &steps, &totals)
}

/// Pass 2: the estimator fitted on the corpus (the default with fewer than
/// 8 samples), every block's tokens estimated and pinned to the recorded
/// usage, and how that went; and `also` of every chain, taken while it is
/// read for pinning (what the passes after need of its requests).
pub(super) fn fit_and_pin<X: Send>(
    chains: &mut ChainStore,
    opts: &ModelOptions,
    also: impl Fn(&ChainIn) -> X + Sync,
) -> std::io::Result<(Estimator, EstimatorReport, Vec<X>)> {
    let (fit, residual_inputs) = fit_samples(chains)?;
    let est = match opts.fixed_estimator {
        Some((est, _)) => est,
        None if fit.samples >= 8 => fit.solve(),
        None => Estimator::default(),
    };
    let residuals = sorted(residual_inputs.iter().map(|r| residual(r, &est) as f64).collect());
    drop(residual_inputs);
    let unseen_median = match opts.fixed_estimator {
        Some((_, Some(size))) => Some(size),
        _ => (!residuals.is_empty()).then(|| quantile(&residuals, 0.5) as u64),
    };
    let unseen_default = unseen_median.unwrap_or(u64::from(opts.unseen_prefix_default));
    let (mut pins, mut also_out, mut fit_err) =
        (Vec::with_capacity(chains.len()), Vec::with_capacity(chains.len()), Vec::new());
    chains.update(
        |c| (fit_errors(c, &est), tokens_and_pins(c, &est, unseen_default), also(c)),
        |_, (errors, pin, x)| {
            fit_err.extend(errors);
            pins.push(pin);
            also_out.push(x);
        },
    )?;
    let fit_err = sorted(fit_err);
    let mut estimator = EstimatorReport {
        samples: fit.samples,
        bytes_per_token: BlockKind::ALL.iter().map(|&k| (kind_name(k), est.bytes_per_token[k.index()])).collect(),
        median_relative_error: quantile(&fit_err, 0.5),
        p90_relative_error: quantile(&fit_err, 0.9),
        unseen_prefix_median: unseen_median,
        ..EstimatorReport::default()
    };
    for p in &pins {
        estimator.blocks_pinned += p.pinned as u64;
        estimator.blocks_estimated += p.estimated as u64;
        estimator.inconsistent_requests += p.inconsistent as u64;
    }
    Ok((est, estimator, also_out))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cost::modeled::blocks::{ReqId, ReqIn};
    use crate::cost::tokens::TokenCounts;
    use std::sync::Arc;

    /// A chain whose requests recorded these (cache read, total input).
    fn chain(usage: &[(u64, u64)]) -> ChainIn {
        let reqs = usage
            .iter()
            .map(|&(read, total)| ReqIn {
                id: ReqId::Index(0),
                at_ms: 0,
                ready_ms: 0,
                model: Arc::from("m"),
                recorded: Some(TokenCounts {
                    cache_read: read,
                    cache_write_5m: total - read,
                    ..TokenCounts::default()
                }),
                usage_key: None,
                step: ChainStep::default(),
                len: 0,
                thinking: 0,
            })
            .collect();
        ChainIn { unseen: Some(0), reqs, ..ChainIn::default() }
    }

    /// The fit is summed as the chains come, in their order: the same
    /// normal equations, estimator and fit errors as every sample held and
    /// fitted at once (what it did before).
    #[test]
    fn the_fit_summed_chain_by_chain_is_the_fit_of_all_samples() {
        let chains = crate::cost::modeled::test_util::fixture_chains();
        let all: Vec<Sample> = chains.iter().flat_map(chain_samples).collect();
        assert!(all.len() > 100, "{} samples", all.len());
        let (fit, inputs) = fit_samples(&ChainStore::of(&chains)).unwrap();
        assert_eq!(fit.samples, all.len() as u64);
        assert_eq!(fit.solve(), Estimator::fit(&all));
        assert_eq!(inputs.len(), chains.iter().filter_map(residual_input).count());
        let est = fit.solve();
        let mut each: Vec<f64> = chains.iter().flat_map(|c| fit_errors(c, &est)).collect();
        let mut whole: Vec<f64> =
            all.iter().filter(|(_, y)| *y > 0.0).map(|(x, y)| (est.estimate_features(x) - y).abs() / y).collect();
        each.sort_by(f64::total_cmp);
        whole.sort_by(f64::total_cmp);
        assert_eq!(each, whole);
    }

    /// The unseen prefix of 19,000 tokens (a first request of 19,400): the
    /// first request read 5,000 warm; later requests that read less than
    /// the one before sent fell back to 14,000 twice and 11,000 once (and
    /// one read everything), so the system prompt ends at 14,000: blocks of
    /// 5,000 and 9,000, the other 5,000 in the first request's messages.
    #[test]
    fn the_unseen_prefix_splits_where_the_chain_falls_back() {
        let c = chain(&[(5_000, 19_400), (14_000, 19_900), (19_900, 20_300), (14_000, 20_500), (11_000, 20_800)]);
        assert_eq!(unseen_split(&c, Some(19_000), 7), ([5_000, 9_000], true));
        // One fall-back read past a first read is not enough.
        let c = chain(&[(5_000, 19_400), (14_000, 19_900)]);
        assert_eq!(unseen_split(&c, Some(19_000), 7), ([5_000, 0], true));
        // Without a first read, one is the level (all of it one block).
        let c = chain(&[(0, 19_400), (14_000, 19_900)]);
        assert_eq!(unseen_split(&c, Some(19_000), 7), ([14_000, 0], true));
        // No read at all: the whole prefix, left to pinning; no usage: the
        // corpus default.
        let c = chain(&[(0, 19_400), (19_400, 19_900)]);
        assert_eq!(unseen_split(&c, Some(19_000), 7), ([19_000, 0], false));
        assert_eq!(unseen_split(&c, None, 7), ([7, 0], false));
        // A tie: the smaller level.
        let c = chain(&[(0, 19_400), (14_000, 19_900), (19_900, 20_300), (12_000, 20_500)]);
        assert_eq!(unseen_split(&c, Some(19_000), 7), ([12_000, 0], true));
    }
}
