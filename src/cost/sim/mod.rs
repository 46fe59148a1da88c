//! A prompt-cache simulator: which part of each request's prompt the API
//! would read from its cache, write to it (5 m or 1 h) or take as plain
//! input, given the requests in time order.
//!
//! Every rule cites `../shared/docs/anthropic-api-facts.md` ("facts §x.y"),
//! which paraphrases the official prompt-caching guide [PC] and its
//! companions. In short:
//!
//! - A request is a list of blocks in the API's order, tools → system →
//!   messages (facts §1.1); [`blocks_of`] flattens a [`Body`](crate::assemble::Body) into
//!   [`SimBlock`]s, each identified by the xxh3-128 of its bytes without
//!   `cache_control` (marking a block does not change what it is).
//! - A `cache_control` marks a breakpoint; at most 4 per request, more is an
//!   HTTP 400 (facts §1.2).
//! - A cache entry is the cumulative hash of the prefix ending at a
//!   breakpoint, per model and organization/workspace (facts §1.5, §1.7).
//!   Each breakpoint looks back over at most 20 positions, itself included,
//!   for an entry an earlier request wrote (facts §1.2).
//! - Reads are the tokens up to the furthest hit; each breakpoint after it
//!   writes the tokens since the previous write at its TTL, when its prefix
//!   is at least the model's minimum cacheable length (facts §1.3, §1.4);
//!   the tokens after the last breakpoint are plain input (facts §1.6).
//! - Entries live 5 m or 1 h from the start of the last request that wrote
//!   or read them (facts §1.4).
//!
//! Token counts come from an [`Estimator`] (bytes per token by content kind,
//! fitted by non-negative least squares) and can be pinned to the recorded
//! usage of a session with [`exact_from_usage`] (facts §1.6, §5).
//!
//! The parts: `blocks` (a request as cache blocks), `cache` (the
//! [`CacheSim`] state machine), `estimate` (the [`Estimator`] and the image
//! formula), `pin` (counts pinned to recorded usage). Pure computation: no
//! I/O, no clock (a request's time is given), no prints.

mod blocks;
mod cache;
mod estimate;
mod pin;

pub use blocks::{
    BlockBuilder, BlockFeat, BlockKind, N_KINDS, Place, Role, SimBlock, SimRequest, Ttl, apply_automatic, block_hash,
    blocks_of, blocks_with_features,
};
pub use cache::{BreakpointOutcome, CacheSim, PrefixKeys, SimConfig, SimFlags, SimResult, SimTotals};
pub use estimate::{Estimator, Fit, IMAGE_TOKENS_UNKNOWN, image_block_tokens, image_dims, image_tokens, kind_features};
pub use pin::{ChainStep, PinReport, common_prefix, exact_from_usage, pin_chain};

/// Blocks and requests the tests of every part build.
#[cfg(test)]
pub(crate) mod test_util {
    use super::*;
    use crate::json::{Json, LineParser};
    use bumpalo::Bump;

    /// A system-place block `id` of `tokens` tokens.
    pub(crate) fn blk(id: u128, tokens: u32, ttl: Option<Ttl>) -> SimBlock {
        SimBlock { hash: id, tokens, ttl, kind: BlockKind::Text, place: Place::System, pinned: false, dropped: false }
    }

    pub(crate) fn req(at_ms: u64, model: &str, blocks: Vec<SimBlock>) -> SimRequest {
        SimRequest { at_ms, model: model.into(), scope: 0, thinking: 0, blocks, ready_ms: 0 }
    }

    pub(crate) const M5: Option<Ttl> = Some(Ttl::FiveMinutes);
    pub(crate) const H1: Option<Ttl> = Some(Ttl::OneHour);
    /// Minimum 1,024 (facts §1.3).
    pub(crate) const SONNET: &str = "claude-sonnet-4-5-20250929";

    pub(crate) fn parse<'a>(bump: &'a Bump, s: &str) -> &'a Json<'a> {
        bump.alloc(LineParser::new().parse(bump, s.as_bytes()).unwrap())
    }
}

#[cfg(test)]
mod tests {
    use crate::time::parse_timestamp_ms;

    /// The clock the simulator's requests run on (`crate::time`).
    #[test]
    fn timestamps() {
        assert_eq!(parse_timestamp_ms("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(parse_timestamp_ms("2026-11-30T19:29:25.660Z"), Some(1_796_066_965_660));
        assert_eq!(parse_timestamp_ms("2024-02-29T23:59:59.999Z"), Some(1_709_251_199_999));
        assert_eq!(parse_timestamp_ms("2026-11-30T20:29:25.66+01:00"), Some(1_796_066_965_660));
        assert_eq!(parse_timestamp_ms("2026-11-30"), None);
        assert_eq!(parse_timestamp_ms("2026-11-30T19:29:25.660"), None);
    }
}
