//! Exact token counts from recorded usage: a chain of requests (each
//! extending the one before) has its blocks' estimates replaced by counts
//! that add up to each request's recorded prompt size (facts §1.6, §5),
//! stored once per chain ([`pin_chain`]) or per request
//! ([`exact_from_usage`]).
//!
//! Reads no transcript: the recorded totals are the caller's.

use super::blocks::{SimBlock, SimRequest, Ttl};

/// What [`exact_from_usage`] did, counting each block once: in the request
/// that first sends it (not in the prefix shared with the one before).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PinReport {
    /// Blocks whose counts add up to recorded usage.
    pub pinned: usize,
    /// Blocks left with their estimate.
    pub estimated: usize,
    pub requests_with_usage: usize,
    /// Requests whose usage contradicts counts already pinned (left alone).
    pub inconsistent: usize,
}

/// Blocks two requests share from the start (same place and content).
pub fn common_prefix(a: &[SimBlock], b: &[SimBlock]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x.hash == y.hash && x.place == y.place).count()
}

/// Split `total` over `at` in proportion to the blocks' current tokens
/// (largest remainder, so the parts add up exactly).
fn spread(total: u64, blocks: &mut [SimBlock], at: &[usize]) {
    let weights: smallvec::SmallVec<[f64; 16]> =
        at.iter().map(|&i| f64::from(blocks.get(i).map_or(0, |b| b.tokens).max(1))).collect();
    let sum: f64 = weights.iter().sum();
    let mut parts: Vec<(usize, u64, f64)> = at
        .iter()
        .zip(&weights)
        .map(|(&i, w)| {
            let exact = total as f64 * w / sum;
            (i, exact.floor() as u64, exact - exact.floor())
        })
        .collect();
    let given: u64 = parts.iter().map(|p| p.1).sum();
    let mut order: Vec<usize> = (0..parts.len()).collect();
    order.sort_by(|&a, &b| parts[b].2.total_cmp(&parts[a].2));
    for &k in order.iter().cycle().take(total.saturating_sub(given) as usize) {
        parts[k].1 += 1;
    }
    for (i, n, _) in parts {
        if let Some(b) = blocks.get_mut(i) {
            b.tokens = u32::try_from(n).unwrap_or(u32::MAX);
            b.pinned = true;
        }
    }
}

/// One request of a chain whose blocks are stored once, in an arena: it
/// keeps the first `keep` blocks of the request before it and adds
/// `arena[added]`; its breakpoints are its own (the same block is marked in
/// one request and not in the next).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ChainStep {
    pub keep: usize,
    pub added: std::ops::Range<usize>,
    /// (position in the request, TTL) of each breakpoint.
    pub breakpoints: smallvec::SmallVec<[(u32, Ttl); 4]>,
}

/// [`exact_from_usage`] over a chain stored as an arena and its steps: a
/// block shared by several requests is one arena entry, so a count pinned
/// by a later request holds in the earlier ones too.
///
/// The pinned tokens of the current request and its blocks still open are
/// kept from one request to the next (a block leaves the request only when
/// a later one drops it, and is pinned only by a spread), so a chain of n
/// requests costs n, not n².
pub fn pin_chain(arena: &mut [SimBlock], steps: &[ChainStep], totals: &[Option<u64>]) -> PinReport {
    let mut report = PinReport::default();
    let mut cur: Vec<usize> = Vec::new();
    // Positions in `cur` of the blocks not pinned, in order, and the
    // pinned tokens of `cur`.
    let mut open_at: Vec<usize> = Vec::new();
    let mut known: u64 = 0;
    let mut open: Vec<usize> = Vec::new();
    for (i, step) in steps.iter().enumerate() {
        let keep = step.keep.min(cur.len());
        for b in cur[keep..].iter().filter_map(|&p| arena.get(p)) {
            if b.pinned {
                known -= u64::from(b.tokens);
            }
        }
        cur.truncate(keep);
        while open_at.last().is_some_and(|&q| q >= keep) {
            open_at.pop();
        }
        for p in step.added.clone() {
            match arena.get(p) {
                Some(b) if b.pinned => known += u64::from(b.tokens),
                Some(_) => open_at.push(cur.len()),
                None => {}
            }
            cur.push(p);
        }
        let Some(total) = totals.get(i).copied().flatten() else { continue };
        report.requests_with_usage += 1;
        if total < known || (open_at.is_empty() && total != known) {
            report.inconsistent += 1;
            continue;
        }
        if !open_at.is_empty() {
            open.clear();
            open.extend(open_at.iter().map(|&q| cur[q]));
            spread(total - known, arena, &open);
            known += open.iter().filter_map(|&p| arena.get(p)).map(|b| u64::from(b.tokens)).sum::<u64>();
            open_at.clear();
        }
    }
    for b in arena.iter() {
        if b.pinned {
            report.pinned += 1;
        } else {
            report.estimated += 1;
        }
    }
    report
}

/// Pin block token counts to recorded usage. `requests` are one chain of a
/// session in order (each request extends the one before); `totals[n]` is
/// request n's recorded prompt size, `input_tokens + cache_creation_input_tokens
/// + cache_read_input_tokens` (facts §1.6), when known.
///
/// A request inherits the counts of the prefix it shares with the previous
/// one; its recorded total minus the pinned tokens is spread over its other
/// blocks by their estimated weight (the new blocks, and shared ones an
/// earlier request without usage left estimated — those are updated in the
/// earlier requests too). Framing tokens the API adds land in the blocks of
/// the request that introduced them (facts §5 "Overhead"). The work is
/// [`pin_chain`]'s, on the chain stored once.
pub fn exact_from_usage(requests: &mut [SimRequest], totals: &[Option<u64>]) -> PinReport {
    let mut arena: Vec<SimBlock> = Vec::new();
    let mut steps: Vec<ChainStep> = Vec::with_capacity(requests.len());
    for i in 0..requests.len() {
        let keep = if i == 0 { 0 } else { common_prefix(&requests[i - 1].blocks, &requests[i].blocks) };
        let start = arena.len();
        arena.extend(requests[i].blocks[keep..].iter().cloned());
        steps.push(ChainStep { keep, added: start..arena.len(), breakpoints: Default::default() });
    }
    let report = pin_chain(&mut arena, &steps, totals);
    let mut cur: Vec<usize> = Vec::new();
    for (req, step) in requests.iter_mut().zip(&steps) {
        cur.truncate(step.keep);
        cur.extend(step.added.clone());
        for (b, &p) in req.blocks.iter_mut().zip(&cur) {
            b.tokens = arena[p].tokens;
            b.pinned = arena[p].pinned;
        }
    }
    report
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cost::sim::test_util::*;

    #[test]
    fn exact_counts_from_usage() {
        let b = |id: u128, tokens| blk(id, tokens, None);
        let mut reqs = vec![
            req(0, SONNET, vec![b(1, 100), b(2, 300)]),
            req(1, SONNET, vec![b(1, 100), b(2, 300), b(3, 50), b(4, 50)]),
            req(2, SONNET, vec![b(1, 100), b(2, 300), b(3, 50), b(4, 50), b(5, 10)]),
            req(3, SONNET, vec![b(1, 100), b(2, 300), b(3, 50), b(4, 50), b(5, 10), b(6, 30)]),
        ];
        let r = exact_from_usage(&mut reqs, &[Some(800), Some(1001), None, Some(1100)]);
        let tokens = |r: &SimRequest| r.blocks.iter().map(|b| b.tokens).collect::<Vec<_>>();
        assert_eq!(tokens(&reqs[0]), [200, 600]);
        // 201 over two blocks of equal weight: the parts add up exactly.
        assert_eq!(tokens(&reqs[1])[2..].iter().sum::<u32>(), 201);
        // Request 2 had no usage: its new block was settled by request 3
        // (99 = 1100 − 1001 over weights 10 : 30) and written back.
        assert_eq!(tokens(&reqs[3])[4..], [25, 74]);
        assert_eq!(tokens(&reqs[2])[4], 25);
        assert!(reqs.iter().all(|r| r.blocks.iter().all(|b| b.pinned)));
        assert_eq!(r, PinReport { pinned: 6, estimated: 0, requests_with_usage: 3, inconsistent: 0 });
        // Usage smaller than what is already pinned: reported, left alone.
        let mut reqs = vec![req(0, SONNET, vec![b(1, 100)]), req(1, SONNET, vec![b(1, 100), b(2, 5)])];
        let r = exact_from_usage(&mut reqs, &[Some(500), Some(400)]);
        assert_eq!(r, PinReport { pinned: 1, estimated: 1, requests_with_usage: 2, inconsistent: 1 });
    }
}
