//! The cache state machine: [`CacheSim`] takes requests in time order and
//! says, per breakpoint, what the API would read from its cache, write to it
//! (5 m or 1 h) or take as plain input (facts §1.2 – §1.7), with the rules'
//! parameters in [`SimConfig`].
//!
//! It sees only [`SimBlock`]s with their token counts: building blocks is
//! `blocks`', counting tokens `estimate`'s and `pin`'s.

use super::blocks::{Place, SimBlock, SimRequest, Ttl};
use crate::cost::pricing::{builtin_min_cacheable, lookup_min_cacheable};
use rustc_hash::FxHashMap;
use xxhash_rust::xxh3::{xxh3_128, xxh3_128_with_seed};

/// The rules' parameters, documented values by default.
#[derive(Debug, Clone, PartialEq)]
pub struct SimConfig {
    /// Positions checked per breakpoint, itself included (facts §1.2: 20).
    pub lookback: usize,
    /// Breakpoints allowed per request (facts §1.2: 4; more is HTTP 400).
    pub max_breakpoints: usize,
    /// Minimum cacheable length by model-id prefix (facts §1.3); by default
    /// the built-in `pricing.json`'s table.
    pub min_lengths: Vec<(String, u32)>,
    /// Minimum for a model the table does not know (flagged).
    pub fallback_min: u32,
    /// An entry becomes usable this long after the start of the request
    /// that wrote it (facts §1.4 "Parallel fan-out": once the first response
    /// has started); 0 = at once.
    pub ready_delay_ms: u64,
    /// An entry lives this long past its TTL: entries expire after *at
    /// least* 5 minutes (or 1 hour) and are deleted "promptly, though not
    /// immediately" (facts §1.4). On the public corpus a read 306 s after
    /// the entry's last use hit and one 313 s after missed.
    pub expiry_grace_ms: u64,
}

impl Default for SimConfig {
    fn default() -> Self {
        SimConfig {
            lookback: 20,
            max_breakpoints: 4,
            min_lengths: builtin_min_cacheable().to_vec(),
            fallback_min: 1024,
            ready_delay_ms: 0,
            expiry_grace_ms: 10_000,
        }
    }
}

/// What happened at one breakpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BreakpointOutcome {
    /// Index of the marked block in [`SimRequest::blocks`].
    pub block: usize,
    pub ttl: Ttl,
    /// Tokens from the start through the marked block.
    pub prefix_tokens: u64,
    /// The block where this breakpoint's lookback found a live entry.
    pub hit: Option<usize>,
    /// Tokens this breakpoint wrote at its TTL (0 when the read covers it).
    pub written: u64,
    /// The prefix is shorter than the model's minimum: nothing cached here.
    pub below_minimum: bool,
}

/// Conditions worth reporting about one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SimFlags {
    /// More than `max_breakpoints` breakpoints: the API answers 400, nothing
    /// is billed or cached (facts §1.2).
    pub too_many_breakpoints: bool,
    /// A 1 h breakpoint after a 5 m one (facts §1.4 "Mixing TTLs").
    pub ttl_order_violation: bool,
    /// The model is not in the minimum-length table; `fallback_min` used.
    pub unknown_model: bool,
    /// Earlier than a request already simulated.
    pub out_of_order: bool,
}

/// One request's predicted usage (facts §1.6: read + writes + input = the
/// whole prompt).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SimResult {
    /// `cache_read_input_tokens`.
    pub cache_read: u64,
    /// `cache_creation.ephemeral_5m_input_tokens`.
    pub cache_write_5m: u64,
    /// `cache_creation.ephemeral_1h_input_tokens`.
    pub cache_write_1h: u64,
    /// `input_tokens`: the tokens after the last write or read.
    pub input: u64,
    pub per_breakpoint: Vec<BreakpointOutcome>,
    pub flags: SimFlags,
}

impl SimResult {
    pub fn cache_creation(&self) -> u64 {
        self.cache_write_5m + self.cache_write_1h
    }

    /// Total prompt tokens billed (0 for a rejected request).
    pub fn total(&self) -> u64 {
        self.cache_read + self.cache_creation() + self.input
    }
}

/// Running totals over every [`CacheSim::step`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SimTotals {
    pub requests: u64,
    /// Requests the API would refuse (too many breakpoints).
    pub rejected: u64,
    pub ttl_order_violations: u64,
    pub unknown_model: u64,
    pub out_of_order: u64,
    pub cache_read: u64,
    pub cache_write_5m: u64,
    pub cache_write_1h: u64,
    pub input: u64,
    /// Breakpoints with a lookback hit / that wrote an entry.
    pub hits: u64,
    pub writes: u64,
}

#[derive(Debug, Clone, Copy)]
struct Entry {
    ttl: Ttl,
    ready_ms: u64,
    expires_ms: u64,
}

impl Entry {
    fn live(&self, now: u64) -> bool {
        self.ready_ms <= now && now < self.expires_ms
    }
}

/// The cache of one API deployment: entries keyed by the cumulative hash of
/// (scope, model, prefix through a breakpoint), each with its TTL and
/// expiry.
#[derive(Debug, Default)]
pub struct CacheSim {
    config: SimConfig,
    entries: FxHashMap<u128, Entry>,
    min_by_model: FxHashMap<String, (u32, bool)>,
    totals: SimTotals,
    last_ms: u64,
    purge_at: usize,
    prefix: PrefixKeys,
}

/// The cumulative key after `block`: the prefix key, where the block sits,
/// and its content hash.
#[inline]
fn chain(prev: u128, block: &SimBlock) -> u128 {
    if block.dropped {
        return prev;
    }
    let mut buf = [0u8; 33];
    buf[..16].copy_from_slice(&prev.to_le_bytes());
    buf[16] = block.place.tag();
    buf[17..].copy_from_slice(&block.hash.to_le_bytes());
    xxh3_128(&buf)
}

/// The cumulative keys of a request's blocks from its start, with the
/// token sum through each: what a breakpoint's lookback looks up. Built for
/// one (model, scope) (caches are per model and organization, facts §1.5,
/// §1.7); [`truncate`](Self::truncate) and [`extend`](Self::extend) keep
/// them across requests that share their first blocks.
///
/// The request's thinking config (`thinking`, 0 for none known) is part of
/// every key from its first message block on: changing it invalidates the
/// messages cache, not the tools' or the system's (facts §1.5).
#[derive(Debug, Default, Clone)]
pub struct PrefixKeys {
    seed: u128,
    thinking: u64,
    /// Where the first message block is keyed, once it is.
    messages_at: Option<usize>,
    keys: Vec<(u128, u64)>,
}

/// The key before a request's first message block, its thinking config
/// mixed in.
#[inline]
fn with_thinking(prev: u128, thinking: u64) -> u128 {
    if thinking == 0 {
        return prev;
    }
    let mut buf = [0u8; 24];
    buf[..16].copy_from_slice(&prev.to_le_bytes());
    buf[16..].copy_from_slice(&thinking.to_le_bytes());
    xxh3_128(&buf)
}

impl PrefixKeys {
    /// Keys for requests of `model` in `scope` with the thinking config
    /// `thinking`: kept when they are the ones the keys were built for,
    /// else cleared (another thinking config: the keys of the tools and
    /// system are kept).
    pub fn reset(&mut self, model: &str, scope: u64, thinking: u64) {
        let seed = xxh3_128_with_seed(model.as_bytes(), scope);
        if seed != self.seed {
            self.seed = seed;
            self.keys.clear();
            self.messages_at = None;
        } else if thinking != self.thinking
            && let Some(at) = self.messages_at.take()
        {
            self.keys.truncate(at);
        }
        self.thinking = thinking;
    }

    /// Blocks keyed so far.
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// Keep the keys of the first `n` blocks.
    pub fn truncate(&mut self, n: usize) {
        self.keys.truncate(n);
        if self.messages_at.is_some_and(|at| at >= n) {
            self.messages_at = None;
        }
    }

    /// Key the blocks that follow those keyed.
    pub fn extend<'b>(&mut self, blocks: impl IntoIterator<Item = &'b SimBlock>) {
        let (mut key, mut sum) = self.keys.last().copied().unwrap_or((self.seed, 0));
        for b in blocks {
            if self.messages_at.is_none() && matches!(b.place, Place::Message { .. }) {
                self.messages_at = Some(self.keys.len());
                key = with_thinking(key, self.thinking);
            }
            key = chain(key, b);
            sum += u64::from(b.tokens);
            self.keys.push((key, sum));
        }
    }
}

impl CacheSim {
    pub fn new(config: SimConfig) -> Self {
        CacheSim { config, purge_at: 4096, ..CacheSim::default() }
    }

    pub fn config(&self) -> &SimConfig {
        &self.config
    }

    pub fn totals(&self) -> &SimTotals {
        &self.totals
    }

    /// Entries held (expired ones are dropped lazily).
    pub fn entries(&self) -> usize {
        self.entries.len()
    }

    /// The minimum cacheable length for `model`, and whether the table knows it.
    pub fn min_for(&mut self, model: &str) -> (u32, bool) {
        if let Some(&v) = self.min_by_model.get(model) {
            return v;
        }
        let v = match lookup_min_cacheable(&self.config.min_lengths, model) {
            Some(n) => (n, true),
            None => (self.config.fallback_min, false),
        };
        self.min_by_model.insert(model.to_string(), v);
        v
    }

    /// Make the prefix of `req` through block `upto` a live entry, as if a
    /// request outside the simulation (another session of the account) had
    /// just written or read it; `false` when it already was live. The TTL is
    /// the block's own, else 5 m.
    pub fn warm(&mut self, req: &SimRequest, upto: usize) -> bool {
        let Some(blocks) = req.blocks.get(..=upto) else { return false };
        let mut key = xxh3_128_with_seed(req.model.as_bytes(), req.scope);
        let mut messages = false;
        for b in blocks {
            if !messages && matches!(b.place, Place::Message { .. }) {
                messages = true;
                key = with_thinking(key, req.thinking);
            }
            key = chain(key, b);
        }
        let now = req.at_ms;
        if self.entries.get(&key).is_some_and(|e| e.live(now)) {
            return false;
        }
        let ttl = blocks.last().and_then(|b| b.ttl).unwrap_or_default();
        let expires_ms = now + ttl.millis() + self.config.expiry_grace_ms;
        self.entries.insert(key, Entry { ttl, ready_ms: now, expires_ms });
        true
    }

    /// Simulate one request, in time order after the previous ones.
    pub fn step(&mut self, req: &SimRequest) -> SimResult {
        let total: u64 = req.blocks.iter().map(|b| u64::from(b.tokens)).sum();
        let bps: smallvec::SmallVec<[(usize, Ttl); 8]> =
            req.blocks.iter().enumerate().filter_map(|(i, b)| b.ttl.map(|t| (i, t))).collect();
        let mut prefix = std::mem::take(&mut self.prefix);
        prefix.reset(&req.model, req.scope, req.thinking);
        prefix.truncate(0);
        if let Some(&(last, _)) = bps.last()
            && bps.len() <= self.config.max_breakpoints
        {
            prefix.extend(&req.blocks[..=last]);
        }
        let res = self.step_keys(req.at_ms, req.ready_ms, &req.model, &bps, total, &prefix);
        self.prefix = prefix;
        res
    }

    /// [`step`](Self::step) of a request given by its breakpoints (position,
    /// TTL, in order), its total tokens and the cumulative keys of its
    /// blocks at least through the last breakpoint (built with the
    /// request's model and scope): a caller walking requests that share
    /// their prefixes keeps `keys` across them and extends only the new
    /// blocks. The same result as `step` on the whole request.
    pub fn step_keys(
        &mut self,
        at_ms: u64,
        ready_ms: u64,
        model: &str,
        bps: &[(usize, Ttl)],
        total: u64,
        keys: &PrefixKeys,
    ) -> SimResult {
        let mut res = SimResult::default();
        let now = at_ms;
        self.totals.requests += 1;
        if now < self.last_ms {
            res.flags.out_of_order = true;
            self.totals.out_of_order += 1;
        }
        self.last_ms = self.last_ms.max(now);
        // facts §1.2: more than 4 breakpoints is a 400; nothing is billed.
        if bps.len() > self.config.max_breakpoints {
            res.flags.too_many_breakpoints = true;
            self.totals.rejected += 1;
            return res;
        }
        // facts §1.4 "Mixing TTLs": every 1h breakpoint before any 5m one.
        if bps.windows(2).any(|w| w[0].1 < w[1].1) {
            res.flags.ttl_order_violation = true;
            self.totals.ttl_order_violations += 1;
        }
        let (min, known) = self.min_for(model);
        if !known {
            res.flags.unknown_model = true;
            self.totals.unknown_model += 1;
        }
        if bps.is_empty() {
            // No breakpoint: nothing is read or written (facts §1.1).
            res.input = total;
            self.totals.input += total;
            return res;
        }
        // Cumulative keys and token sums through the last breakpoint; the
        // key starts from (scope, model): caches are per model and never
        // shared across organizations (facts §1.5, §1.7).
        let prefix = &keys.keys;
        let hit = self.look_back(prefix, bps, now, &mut res);
        let read = hit.map_or(0, |j| prefix[j].1);
        let ready = ready_ms.max(now + self.config.ready_delay_ms);
        let upto = self.write_entries(prefix, &mut res, hit, read, min, (now, ready));
        res.cache_read = read;
        res.input = total.saturating_sub(upto);
        self.totals.cache_read += res.cache_read;
        self.totals.cache_write_5m += res.cache_write_5m;
        self.totals.cache_write_1h += res.cache_write_1h;
        self.totals.input += res.input;
        self.purge();
        res
    }

    /// Each breakpoint's lookback for a live entry (in `prefix`), each
    /// hit refreshed; the furthest hit.
    fn look_back(
        &mut self,
        prefix: &[(u128, u64)],
        bps: &[(usize, Ttl)],
        now: u64,
        res: &mut SimResult,
    ) -> Option<usize> {
        // facts §1.2: each breakpoint checks itself and walks back, at most
        // 20 positions, for an entry an earlier request wrote; a hit
        // refreshes the entry (facts §1.4 "Every read refreshes it").
        // A dropped block (its key is the block before's) is no position.
        let mut hit: Option<usize> = None;
        let lookback = self.config.lookback.max(1);
        for &(b, ttl) in bps {
            let (mut j, mut seen, mut found) = (b, 0, None);
            loop {
                if j == 0 || prefix[j].0 != prefix[j - 1].0 {
                    seen += 1;
                    if seen > lookback {
                        break;
                    }
                    if self.entries.get(&prefix[j].0).is_some_and(|e| e.live(now)) {
                        found = Some(j);
                        break;
                    }
                }
                if j == 0 {
                    break;
                }
                j -= 1;
            }
            if let Some(j) = found
                && let Some(e) = self.entries.get_mut(&prefix[j].0)
            {
                e.expires_ms = e.expires_ms.max(now + e.ttl.millis() + self.config.expiry_grace_ms);
                hit = hit.max(Some(j));
                self.totals.hits += 1;
            }
            res.per_breakpoint.push(BreakpointOutcome {
                block: b,
                ttl,
                prefix_tokens: prefix[b].1,
                hit: found,
                written: 0,
                below_minimum: false,
            });
        }
        hit
    }

    /// The writes of the breakpoints after the read (`read` tokens through
    /// block `hit`), each a new entry; how far the read and the writes reach.
    fn write_entries(
        &mut self,
        prefix: &[(u128, u64)],
        res: &mut SimResult,
        hit: Option<usize>,
        read: u64,
        min: u32,
        (now, ready): (u64, u64),
    ) -> u64 {
        // facts §1.4 billing positions: reads through the highest hit; each
        // later breakpoint writes from the previous write at its own TTL
        // (1h writes B−A, 5m writes C−B when the order is right), if its
        // prefix reaches the model's minimum (facts §1.3: below it nothing
        // is cached, no error); input is what follows (facts §1.6).
        let mut upto = read;
        for out in &mut res.per_breakpoint {
            if hit.is_some_and(|j| out.block <= j) {
                continue;
            }
            if out.prefix_tokens < u64::from(min) {
                out.below_minimum = true;
                continue;
            }
            out.written = out.prefix_tokens.saturating_sub(upto);
            upto = upto.max(out.prefix_tokens);
            match out.ttl {
                Ttl::FiveMinutes => res.cache_write_5m += out.written,
                Ttl::OneHour => res.cache_write_1h += out.written,
            }
            let mut entry = Entry {
                ttl: out.ttl,
                ready_ms: ready,
                expires_ms: now + out.ttl.millis() + self.config.expiry_grace_ms,
            };
            // A write of a prefix another request is still writing: usable
            // when the first of them is.
            if let Some(e) = self.entries.get(&prefix[out.block].0).filter(|e| e.expires_ms > now) {
                entry.ready_ms = entry.ready_ms.min(e.ready_ms);
            }
            self.entries.insert(prefix[out.block].0, entry);
            self.totals.writes += 1;
        }
        upto
    }

    /// Drop expired entries once the map has doubled since the last purge.
    fn purge(&mut self) {
        if self.entries.len() < self.purge_at.max(4096) {
            return;
        }
        let now = self.last_ms;
        self.entries.retain(|_, e| e.expires_ms > now);
        self.purge_at = self.entries.len() * 2;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cost::pricing::min_cacheable_tokens;
    use crate::cost::sim::test_util::*;

    const MIN: u64 = 60 * 1000;

    fn prefix_2000(ttl: Option<Ttl>) -> Vec<SimBlock> {
        vec![blk(1, 1500, None), blk(2, 500, ttl), blk(3, 40, None)]
    }

    /// facts §1.4: 5 minutes from the start of the last request that wrote
    /// or read the entry; each read refreshes it; the clock does not wait
    /// for the response to end.
    #[test]
    fn ttl_expiry_and_refresh() {
        let mut sim = CacheSim::default();
        let r = sim.step(&req(0, SONNET, prefix_2000(M5)));
        assert_eq!((r.cache_read, r.cache_write_5m, r.input), (0, 2000, 40));
        // 4 min later: a hit, which moves the expiry to 9 min.
        let r = sim.step(&req(4 * MIN, SONNET, prefix_2000(M5)));
        assert_eq!((r.cache_read, r.cache_write_5m, r.input), (2000, 0, 40));
        assert_eq!(r.per_breakpoint[0].hit, Some(1));
        // 8 min: alive only because of the refresh (the write was at 0).
        let r = sim.step(&req(8 * MIN, SONNET, prefix_2000(M5)));
        assert_eq!(r.cache_read, 2000);
        // 5 min after the last use and the grace (10 s): gone, written again;
        // 5 min 6 s after, still read (a real read did so after 306 s).
        let mut late = CacheSim::default();
        late.step(&req(0, SONNET, prefix_2000(M5)));
        assert_eq!(late.step(&req(5 * MIN + 6_000, SONNET, prefix_2000(M5))).cache_read, 2000);
        let r = sim.step(&req(13 * MIN + 10_000, SONNET, prefix_2000(M5)));
        assert_eq!((r.cache_read, r.cache_write_5m), (0, 2000));
        // Without the grace, exactly 5 min is too late.
        let mut hard = CacheSim::new(SimConfig { expiry_grace_ms: 0, ..SimConfig::default() });
        hard.step(&req(0, SONNET, prefix_2000(M5)));
        assert_eq!(hard.step(&req(5 * MIN, SONNET, prefix_2000(M5))).cache_write_5m, 2000);
        // A 1h entry survives 59 min without use, not 61.
        let mut sim = CacheSim::default();
        assert_eq!(sim.step(&req(0, SONNET, prefix_2000(H1))).cache_write_1h, 2000);
        assert_eq!(sim.step(&req(59 * MIN, SONNET, prefix_2000(H1))).cache_read, 2000);
        assert_eq!(sim.step(&req(59 * MIN + 61 * MIN, SONNET, prefix_2000(H1))).cache_write_1h, 2000);
    }

    /// Another thinking config invalidates the messages' cache, not the
    /// tools' or the system's (facts §1.5), the keys kept across requests
    /// (`PrefixKeys`) the same as built whole; the entry written with the
    /// first config is still there for a request that goes back to it.
    #[test]
    fn another_thinking_config_invalidates_the_messages_only() {
        let blocks = vec![
            SimBlock { place: Place::Tool, ..blk(1, 1500, None) },
            blk(2, 500, M5),
            SimBlock { place: Place::Message { role: crate::cost::sim::Role::User, first: true }, ..blk(3, 2000, M5) },
        ];
        let at = |ms, thinking| SimRequest { thinking, ..req(ms, SONNET, blocks.clone()) };
        let mut sim = CacheSim::new(SimConfig::default());
        let mut keys = PrefixKeys::default();
        let mut by_keys = CacheSim::new(SimConfig::default());
        let bps = [(1, Ttl::FiveMinutes), (2, Ttl::FiveMinutes)];
        let mut both = |r: SimRequest| {
            let whole = sim.step(&r);
            keys.reset(&r.model, r.scope, r.thinking);
            let from = keys.len();
            keys.extend(&r.blocks[from..]);
            let kept = by_keys.step_keys(r.at_ms, r.ready_ms, &r.model, &bps, 4000, &keys);
            assert_eq!((whole.cache_read, whole.cache_write_5m), (kept.cache_read, kept.cache_write_5m));
            (whole.cache_read, whole.cache_write_5m)
        };
        assert_eq!(both(at(0, 0)), (0, 4000));
        assert_eq!(both(at(1000, 0)), (4000, 0));
        assert_eq!(both(at(2000, 7)), (2000, 2000));
        assert_eq!(both(at(3000, 7)), (4000, 0));
        assert_eq!(both(at(4000, 0)), (4000, 0));
    }

    /// facts §1.4 "Parallel fan-out": an entry is usable once the first
    /// response has started; with that delay, parallel requests all write.
    #[test]
    fn parallel_requests_write_until_the_first_response_starts() {
        let mut sim = CacheSim::new(SimConfig { ready_delay_ms: 2000, ..SimConfig::default() });
        assert_eq!(sim.step(&req(0, SONNET, prefix_2000(M5))).cache_write_5m, 2000);
        assert_eq!(sim.step(&req(500, SONNET, prefix_2000(M5))).cache_write_5m, 2000);
        assert_eq!(sim.step(&req(2500, SONNET, prefix_2000(M5))).cache_read, 2000);
    }

    /// The same from each request's own response start (`ready_ms`, the
    /// pipeline's first response line): a request 100 ms after another
    /// that shares its prefix writes it again (the public corpus's
    /// subagents launched together both wrote); one after the first's
    /// response started reads it.
    #[test]
    fn a_write_is_read_once_its_response_has_started() {
        let mut sim = CacheSim::default();
        let at = |ms, ready| SimRequest { ready_ms: ready, ..req(ms, SONNET, prefix_2000(M5)) };
        assert_eq!(sim.step(&at(0, 1_500)).cache_write_5m, 2000);
        assert_eq!(sim.step(&at(100, 1_700)).cache_write_5m, 2000);
        assert_eq!(sim.step(&at(1_600, 3_000)).cache_read, 2000);
        // 0: usable from the request's start.
        let mut now = CacheSim::default();
        now.step(&at(0, 0));
        assert_eq!(now.step(&at(100, 0)).cache_read, 2000);
    }

    /// A conversation of `n` 100-token blocks after a 1,000-token system
    /// block, the last block marked.
    fn convo(n: u128) -> Vec<SimBlock> {
        let mut v = vec![blk(1000, 1000, None)];
        v.extend((1..=n).map(|i| blk(i, 100, None)));
        if let Some(b) = v.last_mut() {
            b.ttl = M5;
        }
        v
    }

    /// facts §1.2: a breakpoint checks itself and 19 earlier positions for
    /// an earlier write; a turn that adds 20 blocks misses unless a second
    /// breakpoint is added.
    #[test]
    fn lookback_hits_within_20_blocks_and_misses_beyond() {
        for (added, hit) in [(19u128, true), (20, false)] {
            let mut sim = CacheSim::default();
            let r = sim.step(&req(0, SONNET, convo(10)));
            assert_eq!(r.cache_write_5m, 2000);
            let r = sim.step(&req(1000, SONNET, convo(10 + added)));
            let want_read = if hit { 2000 } else { 0 };
            assert_eq!(r.cache_read, want_read, "{added} blocks added");
            assert_eq!(r.cache_write_5m, 2000 + 100 * added as u64 - want_read);
            assert_eq!(r.per_breakpoint[0].hit, hit.then_some(10));
        }
        // A second breakpoint within reach of the old one finds it.
        let mut sim = CacheSim::default();
        sim.step(&req(0, SONNET, convo(10)));
        let mut b = convo(30);
        b[15].ttl = M5;
        let r = sim.step(&req(1000, SONNET, b));
        assert_eq!((r.cache_read, r.cache_write_5m), (2000, 2000));
        assert_eq!(
            r.per_breakpoint.iter().map(|o| (o.hit, o.written)).collect::<Vec<_>>(),
            [(Some(10), 500), (None, 1500)]
        );
    }

    /// A dropped block (an earlier turn's thinking the API leaves out,
    /// facts §1.5) is not in the prompt: the prefix through it is the block
    /// before's, and the lookback (facts §1.2) does not count it. Ten
    /// blocks written; the next request adds 24 blocks of which 6 are
    /// dropped: 18 positions, the old write in reach (24 kept: out of it).
    /// Public corpus, 2.0.37 (cb2e607c): a prompt after four tool steps
    /// with thinking read the write 20 blocks back, 15 without the dropped
    /// thinking.
    #[test]
    fn dropped_blocks_are_no_lookback_positions() {
        for (dropped, hit) in [(true, true), (false, false)] {
            let mut sim = CacheSim::default();
            sim.step(&req(0, SONNET, convo(10)));
            let mut b = convo(34);
            for i in (12..=32).step_by(4).take(6) {
                b[i].dropped = dropped;
                b[i].tokens = if dropped { 0 } else { 100 };
            }
            let r = sim.step(&req(1000, SONNET, b));
            assert_eq!(r.per_breakpoint[0].hit, hit.then_some(10), "dropped {dropped}");
            assert_eq!(r.cache_read, if hit { 2000 } else { 0 }, "dropped {dropped}");
        }
        // The prefix through a dropped block is the one before it.
        let mut sim = CacheSim::default();
        sim.step(&req(0, SONNET, convo(10)));
        let mut b = convo(10);
        b.insert(10, SimBlock { dropped: true, ttl: None, ..blk(77, 0, None) });
        b[10].ttl = None;
        let r = sim.step(&req(1000, SONNET, b));
        assert_eq!((r.cache_read, r.cache_write_5m), (2000, 0));
    }

    /// facts §1.3: below the model's minimum nothing is cached, no error,
    /// both counters 0.
    #[test]
    fn a_prefix_below_the_minimum_is_not_cached() {
        let blocks = || vec![blk(1, 3000, M5), blk(2, 10, None)];
        let mut sim = CacheSim::default();
        for at in [0, 1000] {
            let r = sim.step(&req(at, "claude-opus-4-5", blocks()));
            assert_eq!((r.cache_read, r.cache_creation(), r.input), (0, 0, 3010));
            assert!(r.per_breakpoint[0].below_minimum);
        }
        assert_eq!(sim.entries(), 0);
        // The same prefix on a 1,024 model is written.
        assert_eq!(sim.step(&req(2000, SONNET, blocks())).cache_write_5m, 3000);
        // An early breakpoint below the minimum, a later one above: the
        // later one writes everything before it.
        let r = sim.step(&req(3000, SONNET, vec![blk(7, 600, M5), blk(8, 600, M5)]));
        assert!(r.per_breakpoint[0].below_minimum);
        assert_eq!((r.per_breakpoint[1].written, r.cache_write_5m, r.input), (1200, 1200, 0));
    }

    /// facts §1.2: at most 4 breakpoints; 5 is a 400 and nothing happens.
    #[test]
    fn five_breakpoints_are_rejected() {
        let mk = |n: u128| (1..=n).map(|i| blk(i, 500, M5)).collect::<Vec<_>>();
        let mut sim = CacheSim::default();
        let r = sim.step(&req(0, SONNET, mk(5)));
        assert!(r.flags.too_many_breakpoints);
        assert_eq!((r.total(), sim.entries(), sim.totals().rejected), (0, 0, 1));
        let r = sim.step(&req(0, SONNET, mk(4)));
        assert!(!r.flags.too_many_breakpoints);
        // 500 and 1,000 tokens are below the 1,024 minimum: two entries.
        assert_eq!((r.cache_write_5m, sim.entries()), (2000, 2));
    }

    /// facts §1.4 "Mixing TTLs": 1h before 5m; reads A, 1h writes B−A, 5m
    /// writes C−B. After 10 minutes the 5m entry is gone and the 1h one
    /// still serves the read.
    #[test]
    fn mixed_ttls_bill_by_position_and_flag_a_wrong_order() {
        let blocks = || vec![blk(1, 2000, H1), blk(2, 300, None), blk(3, 700, M5), blk(4, 50, None)];
        let mut sim = CacheSim::default();
        let r = sim.step(&req(0, SONNET, blocks()));
        assert!(!r.flags.ttl_order_violation);
        assert_eq!((r.cache_read, r.cache_write_1h, r.cache_write_5m, r.input), (0, 2000, 1000, 50));
        let r = sim.step(&req(10 * MIN, SONNET, blocks()));
        assert_eq!((r.cache_read, r.cache_write_1h, r.cache_write_5m, r.input), (2000, 0, 1000, 50));
        let r = sim.step(&req(11 * MIN, SONNET, vec![blk(9, 2000, M5), blk(10, 1000, H1)]));
        assert!(r.flags.ttl_order_violation);
        assert_eq!(sim.totals().ttl_order_violations, 1);
    }

    /// facts §1.1/§1.6: the second request of a growing conversation reads
    /// the first one's prefix and writes only what was added.
    #[test]
    fn growing_conversation_reads_the_old_prefix_and_writes_the_delta() {
        let first = vec![blk(1, 3000, M5), blk(2, 200, None), blk(3, 300, M5)];
        let mut second = first.clone();
        second[2].ttl = None;
        second.extend([blk(4, 150, None), blk(5, 250, M5), blk(6, 30, None)]);
        let mut sim = CacheSim::default();
        let r = sim.step(&req(0, SONNET, first));
        assert_eq!((r.cache_read, r.cache_write_5m, r.input), (0, 3500, 0));
        let r = sim.step(&req(30_000, SONNET, second));
        assert_eq!((r.cache_read, r.cache_write_5m, r.input), (3500, 400, 30));
        assert_eq!(r.per_breakpoint[0].hit, Some(0));
        assert_eq!(r.per_breakpoint[1].hit, Some(2));
        let t = sim.totals();
        assert_eq!((t.requests, t.cache_read, t.cache_write_5m, t.input, t.hits, t.writes), (2, 3500, 3900, 30, 2, 3));
    }

    /// facts §1.5/§1.7: an identical tools+system prefix is shared across
    /// sessions of the same model and organization, not across models or
    /// organizations.
    #[test]
    fn identical_system_prefix_is_shared_across_sessions_of_one_model_only() {
        let session = |msg: u128| vec![blk(1, 1200, None), blk(2, 800, M5), blk(msg, 100, None), blk(msg + 1, 50, M5)];
        let mut sim = CacheSim::default();
        assert_eq!(sim.step(&req(0, SONNET, session(10))).cache_write_5m, 2150);
        let r = sim.step(&req(1000, SONNET, session(20)));
        assert_eq!((r.cache_read, r.cache_write_5m), (2000, 150));
        let r = sim.step(&req(2000, "claude-opus-4-1", session(30)));
        assert_eq!((r.cache_read, r.cache_write_5m), (0, 2150));
        let other_org = SimRequest { scope: 7, ..req(3000, SONNET, session(40)) };
        assert_eq!(sim.step(&other_org).cache_read, 0);
    }

    #[test]
    fn min_length_table_by_normalized_model_prefix() {
        for (model, want) in [
            ("claude-opus-5-5", Some(512)),
            ("claude-sonnet-5-5", Some(1024)),
            ("claude-opus-4-1-20250805", Some(1024)),
            ("claude-opus-4-20250514", Some(1024)),
            ("claude-opus-4-5-20251101", Some(4096)),
            ("us.anthropic.claude-haiku-4-5-20251001-v1:0", Some(4096)),
            ("claude-opus-4-7@20260101", Some(2048)),
            ("claude-sonnet-4-6[1m]", Some(1024)),
            ("claude-3-5-haiku-20241022", Some(2048)),
            ("claude-opus-4-10", Some(1024)),
            ("gpt-5", None),
        ] {
            assert_eq!(min_cacheable_tokens(model), want, "{model}");
        }
        let mut sim = CacheSim::default();
        let r = sim.step(&req(0, "claude-haiku-9", vec![blk(1, 1100, M5)]));
        assert!(r.flags.unknown_model);
        assert_eq!(r.cache_write_5m, 1100);
    }
}
