//! Pass 3: every request of the corpus in time order through one
//! [`CacheSim`], so a prefix one session wrote can be read by another
//! session of the same account; once for the baseline and once per what-if.
//!
//! Works on the chains passes 1 and 2 built; summing the results is
//! `report`'s.

use super::blocks::{ChainIn, SessionIn};
use super::options::{Account, ModelOptions, WarmPrefix, WhatIf};
use super::what_if::apply_what_if;
use crate::cost::pricing::Pricing;
use crate::cost::sim::{CacheSim, Estimator, Place, SimRequest};
use crate::cost::tokens::TokenCounts;

/// One request's predicted usage.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(super) struct Predicted {
    pub(super) tokens: TokenCounts,
    pub(super) cost: Option<f64>,
    pub(super) rejected: bool,
}

/// Replay every request in time order; `what_if` changes each request.
pub(super) fn replay(
    sessions: &[SessionIn],
    chains: &[ChainIn],
    order: &[(u64, u32, u32)],
    opts: &ModelOptions,
    what_if: Option<&WhatIf>,
    est: &Estimator,
    pricing: &Pricing,
) -> Vec<Vec<Predicted>> {
    let mut sim = CacheSim::new(opts.sim.clone());
    let mut out: Vec<Vec<Predicted>> = chains.iter().map(|c| vec![Predicted::default(); c.reqs.len()]).collect();
    let mut cur: Vec<Vec<u32>> = vec![Vec::new(); chains.len()];
    let mut req = SimRequest::default();
    let no_cross = matches!(what_if, Some(WhatIf::NoCrossSessionCache));
    for &(_, ci, ri) in order {
        let (ci, ri) = (ci as usize, ri as usize);
        let chain = &chains[ci];
        let r = &chain.reqs[ri];
        let path = &mut cur[ci];
        path.truncate(r.step.keep);
        path.extend(r.step.added.clone().map(|i| i as u32));
        req.blocks.clear();
        req.blocks.extend(path.iter().map(|&i| {
            let mut b = chain.arena[i as usize].clone();
            b.ttl = None;
            b
        }));
        for &(p, t) in &r.step.breakpoints {
            if let Some(b) = req.blocks.get_mut(p as usize) {
                b.ttl = Some(t);
            }
        }
        let s = &sessions[chain.session];
        req.scope = match (no_cross, opts.account) {
            (true, _) | (_, Account::Session) => s.scope_session,
            (_, Account::Project) => s.scope_project,
            (_, Account::Root) => s.scope_root,
        };
        req.at_ms = r.at_ms;
        req.model.clear();
        req.model.push_str(&r.model);
        if let Some(w) = what_if {
            apply_what_if(w, &mut req, est, opts.sim.max_breakpoints);
        }
        let warm = match opts.warm_prefix {
            WarmPrefix::Recorded => r.recorded.is_some_and(|t| t.cache_read > 0),
            WarmPrefix::Always => true,
            WarmPrefix::Never => false,
        };
        if warm
            && !no_cross
            && ri == 0
            && let Some(b) =
                req.blocks.iter().position(|b| b.ttl.is_some() && matches!(b.place, Place::Tool | Place::System))
        {
            sim.warm(&req, b);
        }
        let res = sim.step(&req);
        let tokens = TokenCounts {
            input: res.input,
            cache_write_5m: res.cache_write_5m,
            cache_write_1h: res.cache_write_1h,
            cache_read: res.cache_read,
            output: r.recorded.map_or(0, |t| t.output),
        };
        out[ci][ri] =
            Predicted { tokens, cost: pricing.cost(&req.model, &tokens), rejected: res.flags.too_many_breakpoints };
    }
    out
}

/// Every request of the corpus as (time, chain, request), in time order.
pub(super) fn time_order(chains: &[ChainIn]) -> Vec<(u64, u32, u32)> {
    let mut order: Vec<(u64, u32, u32)> = Vec::new();
    for (ci, c) in chains.iter().enumerate() {
        for (ri, r) in c.reqs.iter().enumerate() {
            order.push((r.at_ms, ci as u32, ri as u32));
        }
    }
    order.sort_unstable();
    order
}
