//! Where the bill paid for the cache expiring during pauses (issue 16's
//! "cache writes that never get read"): from the recorded usage alone, the
//! requests that wrote again a prefix the request before them in the same
//! chain had cached, after a pause at least as long as its TTL (facts §1.4:
//! 5 minutes, or 1 hour when the chain writes 1-hour entries). Their extra
//! cost is what writing those tokens cost over reading them.

use super::blocks::{ChainIn, SessionIn};
use crate::cost::format::json;
use crate::cost::pricing::Pricing;
use crate::cost::tokens::TokenCounts;
use serde::{Deserialize, Serialize};

/// The 5-minute TTL in ms.
const FIVE_MINUTES_MS: u64 = 5 * 60 * 1000;
/// The 1-hour TTL in ms.
const ONE_HOUR_MS: u64 = 60 * 60 * 1000;
/// Fewer tokens rewritten than the smallest minimum cacheable length
/// (facts §1.3) is the turn's own growth, not an expired prefix.
const MIN_REWRITE: u64 = 1024;

/// Every pause that let the cache expire, summed, and per session.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TtlMisses {
    /// Requests that wrote an expired prefix again.
    pub requests: u64,
    pub tokens_rewritten: u64,
    /// Writing those tokens over reading them, at each request's model's
    /// rates (requests of unpriced models are counted, not priced).
    #[serde(serialize_with = "json::usd")]
    pub extra_cost_usd: f64,
    /// The sessions with such a request, the largest extra cost first.
    pub sessions: Vec<TtlMissSession>,
}

/// One session's pauses that let the cache expire.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TtlMissSession {
    pub session_id: String,
    pub project: String,
    pub requests: u64,
    pub tokens_rewritten: u64,
    #[serde(serialize_with = "json::usd")]
    pub extra_cost_usd: f64,
    /// The shortest and the longest pause before such a request, seconds.
    pub shortest_pause_s: u64,
    pub longest_pause_s: u64,
}

impl TtlMisses {
    /// Add a report's (a shard's: its sessions are its own).
    pub fn merge(&mut self, other: &TtlMisses) {
        self.requests += other.requests;
        self.tokens_rewritten += other.tokens_rewritten;
        self.extra_cost_usd += other.extra_cost_usd;
        self.sessions.extend(other.sessions.iter().cloned());
        sort(&mut self.sessions);
    }
}

fn sort(sessions: &mut [TtlMissSession]) {
    sessions.sort_by(|a, b| {
        b.extra_cost_usd
            .total_cmp(&a.extra_cost_usd)
            .then_with(|| (&a.project, &a.session_id).cmp(&(&b.project, &b.session_id)))
    });
}

/// The pauses of every chain that let its cache expire (see the module
/// docs). The modeled cost takes each chain's misses while it pins the
/// chain ([`chain_misses`], [`ttl_misses_of`]); this reads them whole.
#[cfg(test)]
pub(super) fn ttl_misses(
    sessions: &[SessionIn],
    chains: &super::store::ChainStore,
    pricing: &Pricing,
) -> std::io::Result<TtlMisses> {
    Ok(ttl_misses_of(sessions, chains.map(|_, c| chain_misses(c, pricing))?))
}

/// [`ttl_misses`] from each chain's [`chain_misses`], in chain order.
pub(super) fn ttl_misses_of(sessions: &[SessionIn], chains: Vec<(usize, Vec<Miss>)>) -> TtlMisses {
    let mut per: Vec<Option<TtlMissSession>> = vec![None; sessions.len()];
    let mut out = TtlMisses::default();
    // Found per chain in parallel, summed in chain order.
    for (session, misses) in chains {
        for m in misses {
            let s = &sessions[session];
            let row = per[session].get_or_insert_with(|| TtlMissSession {
                session_id: s.session_id.clone(),
                project: s.project.clone(),
                shortest_pause_s: u64::MAX,
                ..TtlMissSession::default()
            });
            row.requests += 1;
            row.tokens_rewritten += m.rewritten;
            row.extra_cost_usd += m.extra;
            row.shortest_pause_s = row.shortest_pause_s.min(m.pause / 1000);
            row.longest_pause_s = row.longest_pause_s.max(m.pause / 1000);
            out.requests += 1;
            out.tokens_rewritten += m.rewritten;
            out.extra_cost_usd += m.extra;
        }
    }
    out.sessions = per.into_iter().flatten().collect();
    sort(&mut out.sessions);
    out
}

/// A request of a chain that wrote again what its cache had before a pause.
pub(super) struct Miss {
    rewritten: u64,
    extra: f64,
    pause: u64,
}

/// The [`Miss`]es of one chain, in order, and its session.
pub(super) fn chain_misses(c: &ChainIn, pricing: &Pricing) -> (usize, Vec<Miss>) {
    let mut misses = Vec::new();
    let mut prev: Option<(u64, TokenCounts)> = None;
    for r in &c.reqs {
        let Some(t) = r.recorded else { continue };
        if let Some((at, p)) = prev.replace((r.at_ms, t)) {
            let ttl = if p.cache_write_1h > 0 || t.cache_write_1h > 0 { ONE_HOUR_MS } else { FIVE_MINUTES_MS };
            let pause = r.at_ms.saturating_sub(at);
            let rewritten = t.cache_write().min(p.total_input().saturating_sub(t.cache_read));
            if pause < ttl || rewritten < MIN_REWRITE {
                continue;
            }
            let as_write = if t.cache_write_1h > 0 {
                TokenCounts { cache_write_1h: rewritten, ..TokenCounts::default() }
            } else {
                TokenCounts { cache_write_5m: rewritten, ..TokenCounts::default() }
            };
            let as_read = TokenCounts { cache_read: rewritten, ..TokenCounts::default() };
            let extra = match (pricing.cost(&r.model, &as_write), pricing.cost(&r.model, &as_read)) {
                (Some(w), Some(rd)) => w - rd,
                _ => 0.0,
            };
            misses.push(Miss { rewritten, extra, pause });
        }
    }
    (c.session, misses)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cost::modeled::blocks::ReqIn;
    use crate::cost::sim::ChainStep;
    use std::sync::Arc;

    fn req(at_s: u64, write_5m: u64, write_1h: u64, read: u64) -> ReqIn {
        ReqIn {
            id: crate::cost::modeled::blocks::ReqId::Index(0),
            at_ms: at_s * 1000,
            ready_ms: 0,
            model: Arc::from("claude-sonnet-4-5"),
            recorded: Some(TokenCounts {
                input: 3,
                cache_write_5m: write_5m,
                cache_write_1h: write_1h,
                cache_read: read,
                output: 10,
            }),
            usage_key: None,
            step: ChainStep::default(),
            len: 0,
            thinking: 0,
        }
    }

    /// A worked example on Sonnet 4.5 ($3.75 per million 5-minute writes,
    /// $6 per million 1-hour writes, $0.30 per million reads):
    /// - 20,003 tokens cached at 0 s; 6 min later the request reads 0 and
    ///   writes 20,500: 20,003 of them were the expired prefix, an extra
    ///   20,003 × (3.75 − 0.30) / 1e6 = $0.06901035;
    /// - 2 min later a plain hit: nothing;
    /// - 10 min later it reads 12,000 of the 21,003 cached and writes 9,000:
    ///   9,000 rewritten (of the 9,003 expired), 9,000 × 3.45 / 1e6 = $0.03105;
    /// - 7 min later it writes 1,000 past a read of 20,000: fewer than 1,024
    ///   tokens, its own turn, not an expired prefix;
    /// - a chain of 1-hour writes 30 min apart: nothing; 2 h apart, 30,503
    ///   rewritten × (6 − 0.30) / 1e6 = $0.1738671.
    #[test]
    fn pauses_longer_than_the_ttl_are_priced_as_rewrites() {
        let sessions = vec![
            SessionIn { session_id: "a".into(), project: "p".into(), ..SessionIn::default() },
            SessionIn { session_id: "b".into(), project: "p".into(), ..SessionIn::default() },
        ];
        let chains = vec![
            ChainIn {
                session: 0,
                reqs: vec![
                    req(0, 20_000, 0, 0),
                    req(360, 20_500, 0, 0),
                    req(480, 500, 0, 20_500),
                    req(1080, 9_000, 0, 12_000),
                    req(1500, 1_000, 0, 20_000),
                ],
                ..ChainIn::default()
            },
            ChainIn {
                session: 1,
                reqs: vec![req(0, 0, 30_000, 0), req(1800, 0, 500, 30_000), req(9000, 0, 31_000, 0)],
                ..ChainIn::default()
            },
        ];
        let got =
            ttl_misses(&sessions, &crate::cost::modeled::store::ChainStore::of(&chains), &Pricing::builtin()).unwrap();
        assert_eq!(got.requests, 3);
        assert_eq!(got.tokens_rewritten, 20_003 + 9_000 + 30_503);
        let (a, b) = (&got.sessions[1], &got.sessions[0]);
        assert_eq!((b.session_id.as_str(), b.requests, b.tokens_rewritten), ("b", 1, 30_503));
        assert!((b.extra_cost_usd - 30_503.0 * 5.7 / 1e6).abs() < 1e-9, "{}", b.extra_cost_usd);
        assert_eq!((b.shortest_pause_s, b.longest_pause_s), (7200, 7200));
        assert_eq!((a.session_id.as_str(), a.requests, a.tokens_rewritten), ("a", 2, 29_003));
        assert!((a.extra_cost_usd - 29_003.0 * 3.45 / 1e6).abs() < 1e-9, "{}", a.extra_cost_usd);
        assert_eq!((a.shortest_pause_s, a.longest_pause_s), (360, 600));
    }
}
