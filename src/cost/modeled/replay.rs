//! Pass 3: every request of the corpus in time order through one
//! [`CacheSim`], so a prefix one session wrote can be read by another
//! session of the same account; once for the baseline and once per what-if.
//!
//! Works on the chains passes 1 and 2 built; summing the results is
//! `report`'s.

use super::blocks::{ChainIn, SessionIn};
use super::options::{Account, ModelOptions, WarmPrefix, WhatIf};
use super::store::ChainStore;
use super::what_if::apply_what_if;
use crate::cost::pricing::Pricing;
use crate::cost::pricing::tokenizer_factor;
use crate::cost::sim::{CacheSim, ChainStep, Estimator, Place, PrefixKeys, SimRequest, SimResult, Ttl};
use crate::cost::tokens::TokenCounts;

/// One request's predicted usage.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(super) struct Predicted {
    pub(super) tokens: TokenCounts,
    pub(super) cost: Option<f64>,
    pub(super) rejected: bool,
}

/// Every request's [`Predicted`] and whether warming made its prefix live
/// (see [`replay`]), chain by chain in one list of 32-byte rows (a
/// `Predicted` is 64 B: at 2 GB of corpus, about 100,000 requests, they
/// were the replay's largest part).
#[derive(Debug, Default)]
pub(super) struct Predictions {
    at: Rows,
    rows: Vec<Row>,
    /// The tokens of rows with a count past 32 bits ([`BIG`]).
    big: rustc_hash::FxHashMap<usize, TokenCounts>,
}

/// Where each chain's requests are in a list of every request, chain by
/// chain.
#[derive(Debug, Default, Clone)]
struct Rows {
    /// Where each chain's rows start, and the end.
    start: Vec<usize>,
}

impl Rows {
    fn of(chains: &ChainStore) -> Rows {
        let mut start = Vec::with_capacity(chains.len() + 1);
        let mut n = 0;
        for ci in 0..chains.len() {
            start.push(n);
            n += chains.reqs(ci);
        }
        start.push(n);
        Rows { start }
    }

    /// Chain `ci`'s rows (empty past the end).
    fn chain(&self, ci: usize) -> std::ops::Range<usize> {
        match (self.start.get(ci), self.start.get(ci + 1)) {
            (Some(&a), Some(&b)) => a..b,
            _ => 0..0,
        }
    }

    /// The row of request `ri` of chain `ci`.
    fn row(&self, ci: usize, ri: usize) -> Option<usize> {
        let r = self.chain(ci);
        (ri < r.len()).then_some(r.start + ri)
    }

    fn len(&self) -> usize {
        self.start.last().copied().unwrap_or(0)
    }
}

/// Whether warming made each request's prefix live
/// ([`Predictions::warmed_list`]).
#[derive(Debug)]
pub(super) struct Warmed {
    at: Rows,
    warmed: Vec<bool>,
}

impl Warmed {
    /// Request `ri` of chain `ci` (`None` past the end).
    fn get(&self, ci: usize, ri: usize) -> Option<bool> {
        self.at.row(ci, ri).and_then(|i| self.warmed.get(i).copied())
    }
}

#[derive(Debug, Clone, Copy, Default)]
struct Row {
    /// input, cache writes 5m and 1h, cache read, output.
    tokens: [u32; 5],
    flags: u32,
    cost: f64,
}

/// [`Row::flags`]: too many breakpoints (the API rejects it).
const REJECTED: u32 = 1;
/// The cost is priced (else `None`).
const PRICED: u32 = 2;
/// The tokens are in [`Predictions::big`].
const BIG: u32 = 4;
/// Warming made the prefix live.
const WARMED: u32 = 8;

impl Predictions {
    /// Every request of `chains`: no tokens, no cost, not warmed.
    pub(super) fn new(chains: &ChainStore) -> Predictions {
        let at = Rows::of(chains);
        Predictions { rows: vec![Row::default(); at.len()], at, big: Default::default() }
    }

    /// Request `ri` of chain `ci` (the default past the end).
    pub(super) fn get(&self, ci: usize, ri: usize) -> Predicted {
        self.at.row(ci, ri).map_or_else(Predicted::default, |i| self.unpack(i))
    }

    fn unpack(&self, i: usize) -> Predicted {
        let r = &self.rows[i];
        let [input, cache_write_5m, cache_write_1h, cache_read, output] = r.tokens.map(u64::from);
        let tokens = if r.flags & BIG != 0 {
            self.big.get(&i).copied().unwrap_or_default()
        } else {
            TokenCounts { input, cache_write_5m, cache_write_1h, cache_read, output }
        };
        Predicted { tokens, cost: (r.flags & PRICED != 0).then_some(r.cost), rejected: r.flags & REJECTED != 0 }
    }

    /// Chain `ci`'s requests in order.
    pub(super) fn chain(&self, ci: usize) -> impl Iterator<Item = Predicted> + '_ {
        self.at.chain(ci).map(|i| self.unpack(i))
    }

    /// Whether warming made each request's prefix live, apart (what a what-if's
    /// replay needs of the baseline's, 1 B a request).
    pub(super) fn warmed_list(&self) -> Warmed {
        Warmed { at: self.at.clone(), warmed: self.rows.iter().map(|r| r.flags & WARMED != 0).collect() }
    }

    fn set_warmed(&mut self, ci: usize, ri: usize, warmed: bool) {
        if let Some(i) = self.at.row(ci, ri) {
            self.rows[i].flags = (self.rows[i].flags & !WARMED) | if warmed { WARMED } else { 0 };
        }
    }

    /// Request `ri` of chain `ci` predicted `p` (whether it was warmed
    /// stays).
    fn set(&mut self, ci: usize, ri: usize, p: &Predicted) {
        let Some(i) = self.at.row(ci, ri) else { return };
        let t = &p.tokens;
        let all = [t.input, t.cache_write_5m, t.cache_write_1h, t.cache_read, t.output];
        let mut flags = self.rows[i].flags & WARMED;
        flags |= if p.rejected { REJECTED } else { 0 } | if p.cost.is_some() { PRICED } else { 0 };
        let tokens = match all.map(u32::try_from) {
            [Ok(a), Ok(b), Ok(c), Ok(d), Ok(e)] => {
                self.big.remove(&i);
                [a, b, c, d, e]
            }
            _ => {
                flags |= BIG;
                self.big.insert(i, *t);
                [0; 5]
            }
        };
        self.rows[i] = Row { tokens, flags, cost: p.cost.unwrap_or(0.0) };
    }
}

/// Replay every request in time order; `what_if` changes each request.
///
/// A request keeps the first blocks of the one before it in its chain
/// (`ChainStep::keep`): its path, token sums and the simulator's prefix
/// keys are kept per chain and extended by the added blocks only, so a
/// chain of n requests costs n, not n², unless the what-if rewrites the
/// blocks themselves (then each request is built whole, as the same
/// numbers).
///
/// A request whose recorded usage shows reading a prefix is warmed before
/// it (`ModelOptions::warm_prefix`) when it is its chain's first, the first
/// with another unseen prefix (deferred tools loaded: a subagent of another
/// worktree may have loaded the same) or another model (the cache is per
/// model), or comes [`WARM_AFTER_MS`] or more
/// after the one before (its chain's static prefix may have expired
/// since): that prefix, through the first tool or
/// system breakpoint, counts as written just before by a request the corpus
/// does not hold (the account's other sessions: the cache is per
/// organization, facts §1.7). Real usage shows the static prefix still read
/// after gaps of 8 minutes to 12 hours while the messages after it are
/// written again. Returned beside the predictions, per request: whether that
/// warming made the prefix live (`false`: nothing to warm, or a session of
/// the corpus had it live already). `no-cross-session-cache` gives each
/// session its own cache and warms only where the baseline's warming made
/// the prefix live (`outside`): the sharing it removes is the sharing
/// between the sessions read, not the unseen writer's.
///
/// A request whose recorded response an earlier request of the same
/// account already had (a copy in another file) is not simulated again: it
/// gets that request's prediction.
///
/// A chain is read from `chains` when its first request comes and let go
/// after its last: the replay holds the chains under way at its point in
/// time, not the corpus's.
#[allow(clippy::too_many_arguments)]
pub(super) fn replay(
    sessions: &[SessionIn],
    chains: &ChainStore,
    order: &[(u64, u32, u32)],
    opts: &ModelOptions,
    what_if: Option<&WhatIf>,
    est: &Estimator,
    pricing: &Pricing,
    outside: Option<&Warmed>,
) -> std::io::Result<Predictions> {
    let n = chains.len();
    let mut last_at: Vec<u64> = vec![0; n];
    // The chains under way: the chain, its uncached tail, its requests
    // not replayed yet.
    let mut live: rustc_hash::FxHashMap<usize, (ChainIn, u64, usize)> = rustc_hash::FxHashMap::default();
    let mut buf = Vec::new();
    let mut sim = CacheSim::new(opts.sim.clone());
    let mut out = Predictions::new(chains);
    let incremental = matches!(what_if, None | Some(WhatIf::NoCrossSessionCache | WhatIf::Model(_) | WhatIf::Ttl(_)));
    let mut cursors: Vec<Cursor> = std::iter::repeat_with(Cursor::default).take(chains.len()).collect();
    let mut req = SimRequest::default();
    let no_cross = matches!(what_if, Some(WhatIf::NoCrossSessionCache));
    // The request of each recorded response simulated (chain, request), by
    // its cache scope and key.
    let mut simulated: rustc_hash::FxHashMap<(u64, u64), (u32, u32)> = rustc_hash::FxHashMap::default();
    // A chain whose last request was just replayed, let go at the next.
    let mut retire: Option<usize> = None;
    for &(_, ci, ri) in order {
        let (ci, ri) = (ci as usize, ri as usize);
        if let Some(done) = retire.take() {
            live.remove(&done);
        }
        let (chain, tail, left) = match live.entry(ci) {
            std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
            std::collections::hash_map::Entry::Vacant(e) => {
                let chain = chains.load_with(ci, &mut buf)?;
                let tail = uncached_tail(&chain);
                let left = chain.reqs.len();
                e.insert((chain, tail, left))
            }
        };
        let tail = *tail;
        *left = left.saturating_sub(1);
        if *left == 0 {
            retire = Some(ci);
        }
        let chain: &ChainIn = chain;
        let Some(r) = chain.reqs.get(ri) else { continue };
        let s = &sessions[chain.session];
        let scope = match (no_cross, opts.account) {
            (true, _) | (_, Account::Session) => s.scope_session,
            (_, Account::Project) => s.scope_project,
            (_, Account::Root) => s.scope_root,
        };
        // A copy of a request simulated already in its account (the same
        // recorded response in another file: a copied session, an excerpt)
        // is that one API request: its prediction, and no second pass
        // through the cache, which would read what the first wrote. (In
        // another account it is simulated there: a shard by root then
        // models as a single run.)
        if let Some(&(c0, r0)) = r.usage_key.and_then(|k| simulated.get(&(scope, k))) {
            let p = out.get(c0 as usize, r0 as usize);
            out.set(ci, ri, &p);
            last_at[ci] = r.at_ms;
            // Its blocks, for the chain's next request (both modes).
            cursors[ci].advance(chain, &r.step);
            if ri + 1 == chain.reqs.len() {
                cursors[ci] = Cursor::default();
            }
            continue;
        }
        // A request whose unseen prefix is another (deferred tools loaded)
        // starts that prefix as a chain's first request does.
        // So does the first request of another model (the cache is per
        // model, facts §1.5: its prefix may be warm for that model).
        let new_prefix = chain.unseen_again.iter().any(|&i| r.step.added.contains(&i))
            || (ri > 0 && chain.reqs[ri - 1].model != r.model);
        let after_gap = ri == 0 || new_prefix || r.at_ms.saturating_sub(last_at[ci]) >= WARM_AFTER_MS;
        last_at[ci] = r.at_ms;
        let warm = match opts.warm_prefix {
            // An excerpt's first request without usage: the requests
            // before it, which the corpus does not hold, wrote its prefix.
            WarmPrefix::Recorded => r.recorded.map_or(ri == 0 && chain.excerpt, |t| t.cache_read > 0),
            WarmPrefix::Always => true,
            WarmPrefix::Never => false,
        } && after_gap
            && (!no_cross || outside.is_none_or(|o| o.get(ci, ri).unwrap_or(true)));
        let cursor = &mut cursors[ci];
        let res = if incremental {
            let model = match what_if {
                Some(WhatIf::Model(m)) => m.as_str(),
                _ => &*r.model,
            };
            let ttl = match what_if {
                Some(WhatIf::Ttl(t)) => Some(*t),
                _ => None,
            };
            cursor.advance(chain, &r.step);
            if warm {
                let live = cursor.warm(&mut sim, chain, &r.step, ttl, r.at_ms, model, scope, &mut req);
                out.set_warmed(ci, ri, live);
            }
            let res = cursor.step(
                &mut sim,
                chain,
                &r.step,
                ttl,
                (r.at_ms, r.ready_ms),
                (model, scope, r.thinking),
                opts.sim.max_breakpoints,
            );
            req.model.clear();
            req.model.push_str(model);
            res
        } else {
            let path = &mut cursor.path;
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
            req.scope = scope;
            req.thinking = r.thinking;
            req.at_ms = r.at_ms;
            req.ready_ms = r.ready_ms;
            req.model.clear();
            req.model.push_str(&r.model);
            if let Some(w) = what_if {
                apply_what_if(w, &mut req, est, opts.sim.max_breakpoints);
            }
            if warm
                && let Some(b) =
                    req.blocks.iter().position(|b| b.ttl.is_some() && matches!(b.place, Place::Tool | Place::System))
            {
                out.set_warmed(ci, ri, sim.warm(&req, b));
            }
            sim.step(&req)
        };
        if ri + 1 == chain.reqs.len() {
            // The chain's last request: its state is not needed again.
            *cursor = Cursor::default();
        }
        let mut tokens = TokenCounts {
            input: res.input,
            cache_write_5m: res.cache_write_5m,
            cache_write_1h: res.cache_write_1h,
            cache_read: res.cache_read,
            output: r.recorded.map_or(0, |t| t.output),
        };
        if tokens.input == 0 {
            tail_uncached(&mut tokens, tail);
        }
        // The same text sent to a model of the other tokenizer: every count,
        // the output's too, in its tokens (facts §2a). Which blocks hit is
        // kept (the minimum cacheable length is not re-checked).
        if let Some(WhatIf::Model(m)) = what_if {
            let f = tokenizer_factor(&r.model, m);
            if f != 1.0 {
                tokens = tokens.scaled(f);
            }
        }
        let p = Predicted { tokens, cost: pricing.cost(&req.model, &tokens), rejected: res.flags.too_many_breakpoints };
        out.set(ci, ri, &p);
        if let Some(k) = r.usage_key {
            simulated.insert((scope, k), (ci as u32, ri as u32));
        }
    }
    Ok(out)
}

/// A chain's request this long after the one before may find its static
/// prefix expired in the simulator (every request of a chain refreshes it:
/// the 5-minute TTL, facts §1.4); it is warmed again when the recorded usage
/// shows a read (see [`replay`]).
pub(super) const WARM_AFTER_MS: u64 = 5 * 60 * 1000;

/// The tokens a request sends after its last breakpoint even when the
/// breakpoint is on its last block (the turn's framing: real usage shows
/// 1–13 `input_tokens` on nearly every such request): the median recorded
/// `input_tokens` of the chain's requests (0 without usage). Per chain, so a
/// shard of the corpus gets the same.
fn uncached_tail(c: &ChainIn) -> u64 {
    let mut v: Vec<u64> = c.reqs.iter().filter_map(|r| r.recorded.map(|t| t.input)).collect();
    if v.is_empty() {
        return 0;
    }
    v.sort_unstable();
    v[(v.len() - 1) / 2]
}

/// A request whose blocks are all behind breakpoints: `tail` of its tokens
/// are uncached input instead of read (or, with nothing read, written), so
/// its total is unchanged: pinning puts the recorded total in the blocks,
/// and the tail of an earlier request is inside what the next one reads.
fn tail_uncached(t: &mut TokenCounts, tail: u64) {
    for part in [&mut t.cache_read, &mut t.cache_write_5m, &mut t.cache_write_1h] {
        if *part >= tail && *part > 0 {
            *part -= tail;
            t.input += tail;
            return;
        }
    }
}

/// Where a chain's replay stands: the arena indices of its last request's
/// blocks, the cumulative tokens through each and the simulator's keys of
/// its first blocks.
#[derive(Debug, Default)]
struct Cursor {
    path: Vec<u32>,
    sums: Vec<u64>,
    keys: PrefixKeys,
}

impl Cursor {
    /// To the request of `step`: the kept blocks and the added ones.
    fn advance(&mut self, chain: &ChainIn, step: &ChainStep) {
        self.path.truncate(step.keep);
        self.sums.truncate(step.keep);
        self.keys.truncate(step.keep);
        let mut sum = self.sums.last().copied().unwrap_or(0);
        for i in step.added.clone() {
            self.path.push(i as u32);
            sum += u64::from(chain.arena[i].tokens);
            self.sums.push(sum);
        }
    }

    /// The request's breakpoints (position, TTL; `ttl` for every one when
    /// given), as the whole request built would have them.
    fn breakpoints(&self, step: &ChainStep, ttl: Option<Ttl>) -> smallvec::SmallVec<[(usize, Ttl); 8]> {
        let mut bps: smallvec::SmallVec<[(usize, Ttl); 8]> = step
            .breakpoints
            .iter()
            .filter(|&&(p, _)| (p as usize) < self.path.len())
            .map(|&(p, t)| (p as usize, ttl.unwrap_or(t)))
            .collect();
        // In block order, the last TTL given at a position winning.
        bps.sort_by_key(|b| b.0);
        let mut k = 0;
        while k + 1 < bps.len() {
            if bps[k].0 == bps[k + 1].0 {
                bps.remove(k);
            } else {
                k += 1;
            }
        }
        bps
    }

    /// The simulator's result for the request the cursor is at.
    #[allow(clippy::too_many_arguments)]
    fn step(
        &mut self,
        sim: &mut CacheSim,
        chain: &ChainIn,
        step: &ChainStep,
        ttl: Option<Ttl>,
        (at_ms, ready_ms): (u64, u64),
        (model, scope, thinking): (&str, u64, u64),
        max_bps: usize,
    ) -> SimResult {
        let bps = self.breakpoints(step, ttl);
        self.keys.reset(model, scope, thinking);
        if let Some(&(last, _)) = bps.last()
            && bps.len() <= max_bps
            && self.keys.len() <= last
        {
            let from = self.keys.len();
            self.keys.extend(self.path[from..=last].iter().map(|&i| &chain.arena[i as usize]));
        }
        let total = self.sums.last().copied().unwrap_or(0);
        sim.step_keys(at_ms, ready_ms, model, &bps, total, &self.keys)
    }

    /// [`CacheSim::warm`] of the request's prefix through its first tool or
    /// system breakpoint.
    #[allow(clippy::too_many_arguments)]
    fn warm(
        &self,
        sim: &mut CacheSim,
        chain: &ChainIn,
        step: &ChainStep,
        ttl: Option<Ttl>,
        at_ms: u64,
        model: &str,
        scope: u64,
        req: &mut SimRequest,
    ) -> bool {
        let bps = self.breakpoints(step, ttl);
        let Some(&(b, t)) =
            bps.iter().find(|&&(p, _)| matches!(chain.arena[self.path[p] as usize].place, Place::Tool | Place::System))
        else {
            return false;
        };
        req.blocks.clear();
        req.blocks.extend(self.path[..=b].iter().map(|&i| {
            let mut blk = chain.arena[i as usize].clone();
            blk.ttl = None;
            blk
        }));
        req.blocks[b].ttl = Some(t);
        req.model.clear();
        req.model.push_str(model);
        req.scope = scope;
        req.at_ms = at_ms;
        sim.warm(req, b)
    }
}

/// Every request of the corpus as (time, chain, request), in time order
/// (the modeled cost takes each chain's [`request_times`] while it pins
/// it, and [`time_order_of`] them).
#[cfg(test)]
pub(super) fn time_order(chains: &ChainStore) -> std::io::Result<Vec<(u64, u32, u32)>> {
    Ok(time_order_of(&chains.map(|_, c| request_times(c))?))
}

/// The times of a chain's requests.
pub(super) fn request_times(c: &ChainIn) -> Vec<u64> {
    c.reqs.iter().map(|r| r.at_ms).collect()
}

/// [`time_order`] from each chain's [`request_times`].
pub(super) fn time_order_of(times: &[Vec<u64>]) -> Vec<(u64, u32, u32)> {
    let mut order: Vec<(u64, u32, u32)> = Vec::with_capacity(times.iter().map(Vec::len).sum());
    for (ci, t) in times.iter().enumerate() {
        order.extend(t.iter().enumerate().map(|(ri, &at)| (at, ci as u32, ri as u32)));
    }
    order.sort_unstable();
    order
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cost::modeled::blocks::ReqIn;
    use crate::cost::modeled::test_util::{block, user};
    use std::sync::Arc;

    /// Whether each request was warmed, by chain.
    fn warmed(p: &Predictions, chains: &ChainStore) -> Vec<Vec<bool>> {
        let list = p.warmed_list();
        (0..chains.len()).map(|ci| (0..chains.reqs(ci)).map(|ri| list.get(ci, ri) == Some(true)).collect()).collect()
    }

    /// A row keeps what it was given: counts past 32 bits, no cost, the
    /// rejection, and whether it was warmed apart from the prediction.
    #[test]
    fn a_prediction_reads_back_as_set() {
        let (_, c) = one(0, 0, 7, 70, false);
        let chains = ChainStore::of(&[c.clone(), ChainIn::default(), c]);
        let mut p = Predictions::new(&chains);
        let big = TokenCounts { input: 1 << 40, cache_write_5m: 2, cache_write_1h: 3, cache_read: 4, output: 5 };
        let small = TokenCounts { input: 6, cache_write_5m: 7, cache_write_1h: 8, cache_read: 9, output: 10 };
        p.set_warmed(0, 0, true);
        p.set(0, 0, &Predicted { tokens: big, cost: None, rejected: true });
        p.set(2, 0, &Predicted { tokens: small, cost: Some(0.25), rejected: false });
        assert_eq!(p.get(0, 0), Predicted { tokens: big, cost: None, rejected: true });
        assert_eq!(p.get(2, 0), Predicted { tokens: small, cost: Some(0.25), rejected: false });
        assert_eq!(p.chain(2).collect::<Vec<_>>(), [p.get(2, 0)]);
        assert_eq!(warmed(&p, &chains), [vec![true], vec![], vec![false]]);
        let list = p.warmed_list();
        assert_eq!(
            [list.get(0, 0), list.get(2, 0), list.get(1, 0), list.get(3, 0)],
            [Some(true), Some(false), None, None]
        );
        // Set again, small: the large counts go; past the end: nothing.
        p.set(0, 0, &Predicted { tokens: small, cost: Some(1.0), rejected: false });
        assert_eq!(p.get(0, 0), Predicted { tokens: small, cost: Some(1.0), rejected: false });
        assert!(p.big.is_empty() && p.warmed_list().get(0, 0) == Some(true));
        assert_eq!(p.get(1, 0), Predicted::default());
        assert_eq!(p.get(9, 0), Predicted::default());
        assert_eq!(std::mem::size_of::<Row>(), 32);
    }

    /// A session of one chain of one request at `at_s` seconds: a system
    /// block `system` of 2,000 tokens and a message of 100, a 5-minute
    /// breakpoint on each; `read`: its recorded usage shows a cache read.
    fn one(session: usize, at_s: u64, system: u128, msg: u128, read: bool) -> (SessionIn, ChainIn) {
        let m5 = Some(Ttl::FiveMinutes);
        let s =
            SessionIn { scope_root: 1, scope_project: 1, scope_session: 100 + session as u64, ..SessionIn::default() };
        let recorded = TokenCounts { cache_read: if read { 2000 } else { 0 }, ..TokenCounts::default() };
        let c = ChainIn {
            session,
            arena: vec![block(system, 2000, m5, Place::System), block(msg, 100, m5, user(true))],
            reqs: vec![ReqIn {
                id: crate::cost::modeled::blocks::ReqId::Full(format!("s{session}").into()),
                at_ms: 1_000_000 + at_s * 1000,
                ready_ms: 0,
                model: Arc::from("claude-sonnet-4-5"),
                recorded: Some(recorded),
                usage_key: None,
                step: ChainStep {
                    keep: 0,
                    added: 0..2,
                    breakpoints: smallvec::smallvec![(0, Ttl::FiveMinutes), (1, Ttl::FiveMinutes)],
                },
                len: 2,
                thinking: 0,
            }],
            ..ChainIn::default()
        };
        (s, c)
    }

    /// The tail: the chain's median recorded `input_tokens` (4 of 1, 4, 4,
    /// 9 and a request without usage), moved from reads to input, else from
    /// writes; a request with nothing to take it from keeps its counts.
    #[test]
    fn the_uncached_tail_comes_out_of_reads_then_writes() {
        let (_, mut c) = one(0, 0, 7, 70, false);
        let r = c.reqs[0].clone();
        c.reqs = [Some(1), Some(4), None, Some(9), Some(4)]
            .into_iter()
            .map(|i| ReqIn { recorded: i.map(|input| TokenCounts { input, ..TokenCounts::default() }), ..r.clone() })
            .collect();
        assert_eq!(uncached_tail(&c), 4);
        assert_eq!(uncached_tail(&ChainIn::default()), 0);
        let t = |input, cache_write_5m, cache_write_1h, cache_read| TokenCounts {
            input,
            cache_write_5m,
            cache_write_1h,
            cache_read,
            output: 7,
        };
        for (before, after) in [
            (t(0, 100, 0, 2000), t(4, 100, 0, 1996)),
            (t(0, 100, 50, 0), t(4, 96, 50, 0)),
            (t(0, 0, 50, 0), t(4, 0, 46, 0)),
            (t(0, 3, 0, 2), t(0, 3, 0, 2)),
            (t(0, 0, 0, 0), t(0, 0, 0, 0)),
        ] {
            let mut got = before;
            tail_uncached(&mut got, 4);
            assert_eq!(got, after, "{before:?}");
        }
    }

    /// A worked example of the warm prefix after a gap: one chain, three
    /// requests of the same two blocks (a 2,000-token system prompt, a
    /// 100-token message) at 0 s, 10 min and 20 min. The first writes 2,100.
    /// At 10 min everything has expired (5-minute TTL); the recorded usage
    /// shows a read, so the static prefix is warm (kept by the account's
    /// other sessions): 2,000 read, 100 written. At 20 min the recorded
    /// usage shows no read: nothing is warmed, 2,100 written. 4 min after
    /// the first, nothing had expired: no warming needed (a plain hit).
    #[test]
    fn the_static_prefix_is_warm_again_after_a_gap_when_the_usage_shows_a_read() {
        let (s, mut c) = one(0, 0, 7, 70, false);
        let r = c.reqs[0].clone();
        let at = |s: u64, read: bool| ReqIn {
            at_ms: 1_000_000 + s * 1000,
            recorded: Some(TokenCounts { cache_read: if read { 2000 } else { 0 }, ..TokenCounts::default() }),
            step: ChainStep { keep: 2, added: 2..2, ..r.step.clone() },
            ..r.clone()
        };
        c.reqs = vec![r.clone(), at(600, true), at(1200, false), at(1440, true)];
        let chains = ChainStore::of(&[c]);
        let order = time_order(&chains).unwrap();
        let (opts, est, pricing) = (ModelOptions::default(), Estimator::default(), Pricing::builtin());
        let got = replay(&[s], &chains, &order, &opts, None, &est, &pricing, None).unwrap();
        let rw: Vec<(u64, u64)> = got.chain(0).map(|p| (p.tokens.cache_read, p.tokens.cache_write())).collect();
        assert_eq!(rw, [(0, 2100), (2000, 100), (0, 2100), (2100, 0)]);
        assert_eq!(warmed(&got, &chains), [[false, true, false, false]]);
    }

    /// A worked example: A writes a prefix; B, another session, reads it a
    /// minute later (the corpus explains the read); C reads a prefix nobody
    /// in the corpus wrote (the unseen writer: warmed). Baseline: A writes
    /// 2,100, B and C read 2,000 and write 100 each. Without cross-session
    /// caching only B changes: it writes its 2,000 instead of reading them;
    /// C's unseen writer stays.
    #[test]
    fn no_cross_session_cache_removes_the_corpus_sharing_not_the_unseen_writer() {
        let (sa, ca) = one(0, 0, 7, 70, false);
        let (sb, cb) = one(1, 60, 7, 71, true);
        let (sc, cc) = one(2, 60, 8, 72, true);
        let (sessions, chains) = (vec![sa, sb, sc], ChainStore::of(&[ca, cb, cc]));
        let order = time_order(&chains).unwrap();
        let (opts, est, pricing) = (ModelOptions::default(), Estimator::default(), Pricing::builtin());
        let sums = |p: &Predictions| -> Vec<(u64, u64)> {
            (0..3).map(|ci| p.get(ci, 0)).map(|p| (p.tokens.cache_read, p.tokens.cache_write())).collect()
        };
        let base = replay(&sessions, &chains, &order, &opts, None, &est, &pricing, None).unwrap();
        assert_eq!(sums(&base), [(0, 2100), (2000, 100), (2000, 100)]);
        assert_eq!(warmed(&base, &chains), [[false], [false], [true]]);
        let w = WhatIf::NoCrossSessionCache;
        let outside = base.warmed_list();
        let cold = replay(&sessions, &chains, &order, &opts, Some(&w), &est, &pricing, Some(&outside)).unwrap();
        assert_eq!(sums(&cold), [(0, 2100), (0, 2100), (2000, 100)]);
        // Before, the what-if dropped the unseen writer too: C wrote 2,100.
        let all_cold = Predictions::new(&chains).warmed_list();
        let colder = replay(&sessions, &chains, &order, &opts, Some(&w), &est, &pricing, Some(&all_cold)).unwrap();
        assert_eq!(sums(&colder), [(0, 2100), (0, 2100), (0, 2100)]);
    }
}
