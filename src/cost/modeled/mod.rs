//! The modeled cost: every session assembled (record replay where the
//! transcript has records, the pipeline otherwise), its requests turned into
//! [`SimBlock`]s, token counts pinned to the recorded usage, and the whole
//! corpus replayed through one [`CacheSim`] in time order, so a prefix one
//! session wrote can be read by another session of the same account.
//!
//! Three passes:
//!
//! 1. **Blocks** (in parallel, per session): each chain (the main
//!    conversation, each subagent) is stored once, as an arena of blocks and
//!    per request a [`ChainStep`] (blocks kept from the request before, blocks
//!    added, its own breakpoints). A message that stays the same node across
//!    turns is serialized and hashed once. Each request is matched to the
//!    usage recorded on the assistant message it produced. Each chain is
//!    then encoded into a temporary file (`store`), not held: the passes
//!    after read them back, the replay only those under way.
//! 2. **Tokens**: an [`Estimator`] is fitted by least squares on the
//!    requests that only append to the one before (recorded total minus the
//!    previous total, against the bytes added by kind); every block gets its
//!    estimate, then [`pin_chain`] makes each request's total equal to its
//!    recorded usage (facts §1.6).
//! 3. **Replay**: every request of the corpus in time order through the
//!    simulator, once for the baseline and once per what-if.
//!
//! Two things the transcript does not say are modeled, and documented here:
//!
//! - **The client's prompt when no profile gives it.** A session without a
//!   recorded shape, assembled with a profile that has no prompt text, gets
//!   the CLI prefix as system prompt and placeholder tools. For the cost
//!   those are replaced by an *unseen prefix* of two blocks, each with a
//!   5-minute breakpoint, whose identity is (CLI version, the chain's cwd,
//!   main or subagent) and whose sizes come from the recorded usage: the
//!   part the first request read warm, the rest of the system prompt up to
//!   where later requests fall back (`pinning`), what else the first
//!   request sent that the transcript lacks in its messages (the corpus
//!   median for a chain whose first request has no usage).
//! - **What the release sent that its transcript does not say**, by the
//!   session's version ([`crate::profile::ReleaseTraits`]): two message
//!   breakpoints before 2.1.69; under stream-json input before 2.0.30, a
//!   prompt's attachments sent with it only; and, for a release without a
//!   profile on a model without adaptive thinking, the thinking config of
//!   each prompt's requests (`blocks::Mark`).
//! - **Thinking blocks of earlier turns.** On models before Opus 4.5 /
//!   Sonnet 4.6 (and every Haiku), a user turn that is not a tool result
//!   after a thinking turn invalidates the messages cache (facts §1.5): the
//!   API drops earlier turns' thinking from the prompt. Those blocks are
//!   counted as empty and as another prefix from that turn on.
//!
//! A request's time is when it was sent, where the TTL counts from (facts
//! §1.4): the `api-request` record's timestamp in record replay; in the
//! pipeline, the time of the user line it answers (written just before the
//! request goes; the response's lines come later, as it streams), else its
//! response's first line.
//!
//! Deferred tools: a pipeline chain's prompt changes where a ToolSearch
//! result first loads deferred tools, and again where it loads web search
//! or web fetch (the unseen prefix's identity says which; see
//! `blocks::Loaded`).
//!
//! Accounts: caches are per organization / workspace (facts §1.7), which a
//! transcript does not record. [`Account::Root`] (the default) takes every
//! session under one projects root as one account; `no-cross-session-cache`
//! gives each session its own.
//!
//! The parts, in pass order: `options` (what to model), `blocks` (pass 1),
//! `store` (where its chains wait), `pinning` (pass 2), `replay` and
//! `what_if` (pass 3), `report` (the sums).
//! Reads transcripts only through `corpus` and `assemble`; prints nothing.
//!
//! [`SimBlock`]: crate::cost::sim::SimBlock
//! [`ChainStep`]: crate::cost::sim::ChainStep
//! [`CacheSim`]: crate::cost::sim::CacheSim
//! [`Estimator`]: crate::cost::sim::Estimator
//! [`pin_chain`]: crate::cost::sim::pin_chain

mod blocks;
mod context;
mod expiry;
mod options;
mod pinning;
mod replay;
mod report;
mod store;
mod what_if;

pub use blocks::{KEEPS_THINKING, strips_old_thinking};
pub use expiry::{TtlMissSession, TtlMisses};
pub use options::{Account, Boundary, ModelOptions, UNSEEN_PREFIX_DEFAULT, WarmPrefix, WhatIf};
pub use pinning::{BTreeMapF, EstimatorReport, estimator_of_report};
pub use report::{
    Accuracy, CategoryCost, Compared, ComparedSession, Comparison, CostReport, Disagreement, ErrorStats, HitAgreement,
    SessionCost, TurnRow, WORST_REQUESTS, WhatIfResult, keep_worst,
};

use crate::assemble::Assembler;
use crate::corpus::RunOptions;
use crate::cost::pricing::Pricing;
use crate::cost::usage::FileCandidates;
use crate::input::discover::Discovery;

/// Model the cost of every session of `disc`.
pub fn cost_report(
    disc: &Discovery,
    run: &RunOptions<'_>,
    assembler: &Assembler,
    pricing: &Pricing,
    opts: &ModelOptions,
) -> std::io::Result<CostReport> {
    model(disc, run, assembler, pricing, opts, false).map(|(r, _)| r)
}

/// [`cost_report`], and the usage lines its recorded side was counted
/// from (before the rule: what a shard's partial report carries, see
/// `usage::carry`).
pub fn cost_report_and_lines(
    disc: &Discovery,
    run: &RunOptions<'_>,
    assembler: &Assembler,
    pricing: &Pricing,
    opts: &ModelOptions,
) -> std::io::Result<(CostReport, FileCandidates)> {
    model(disc, run, assembler, pricing, opts, true)
}

fn model(
    disc: &Discovery,
    run: &RunOptions<'_>,
    assembler: &Assembler,
    pricing: &Pricing,
    opts: &ModelOptions,
    keep_lines: bool,
) -> std::io::Result<(CostReport, FileCandidates)> {
    let (mut sessions, mut chains, mut diagnostics, recorded, lines) =
        blocks::read_corpus(disc, run, assembler, opts, keep_lines);
    let recorded = recorded.finish(pricing);
    let bill = recorded.headline();
    for s in &mut sessions {
        diagnostics.append(&mut s.diagnostics);
    }
    // In one order whatever the sessions' (the merge of a corpus's shards
    // gives the same).
    diagnostics.sort();
    diagnostics.dedup();
    let (est, estimator, per_chain) =
        pinning::fit_and_pin(&mut chains, opts, |c| (replay::request_times(c), expiry::chain_misses(c, pricing)))?;
    let (times, misses): (Vec<Vec<u64>>, Vec<_>) = per_chain.into_iter().unzip();
    let order = replay::time_order_of(&times);
    drop(times);
    let base = replay::replay(&sessions, &chains, &order, opts, None, &est, pricing, None)?;
    let mut rep = CostReport {
        recorded: recorded.totals,
        bill,
        recorded_unpriced: recorded.unpriced,
        account: match opts.account {
            Account::Root => "root",
            Account::Project => "project",
            Account::Session => "session",
        }
        .to_string(),
        pricing: recorded.pricing,
        estimator,
        diagnostics,
        ..CostReport::default()
    };
    rep.ttl_misses = expiry::ttl_misses_of(&sessions, misses);
    report::add_baseline(&mut rep, &sessions, &chains, &base, pricing, keep_lines, opts.keep_turns)?;
    // Summed: not held beside each what-if's predictions (but which
    // requests its warming made live).
    let outside = base.warmed_list();
    drop(base);
    rep.what_if =
        report::what_if_results(&sessions, &chains, &order, opts, &est, pricing, rep.modeled.cost_usd, &outside)?;
    Ok((rep, lines))
}

/// Blocks and places the tests of every part build.
#[cfg(test)]
pub(crate) mod test_util {
    use crate::cost::sim::{BlockKind, Place, Role, SimBlock, Ttl};

    pub(crate) fn block(hash: u128, tokens: u32, ttl: Option<Ttl>, place: Place) -> SimBlock {
        SimBlock { hash, tokens, ttl, kind: BlockKind::Text, place, pinned: false, dropped: false }
    }

    pub(crate) fn user(first: bool) -> Place {
        Place::Message { role: Role::User, first }
    }
    pub(crate) fn assistant(first: bool) -> Place {
        Place::Message { role: Role::Assistant, first }
    }

    /// The chains of the captured fixtures, as pass 1 builds them.
    pub(super) fn fixture_chains() -> Vec<super::blocks::ChainIn> {
        use crate::assemble::{Assembler, Mode};
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let disc = crate::input::discover::discover(&[root.join("tests/fixtures/usage"), root.join("corpora")]);
        let prep = crate::assemble::pipeline::Setup::load("cc-2.1.328", None, Default::default()).unwrap();
        let assembler = Assembler { mode: Mode::Auto, pipeline: Some(prep), ..Assembler::default() };
        let run = crate::corpus::RunOptions::default();
        let (_, store, ..) =
            super::blocks::read_corpus(&disc, &run, &assembler, &super::ModelOptions::default(), false);
        store.each().map(|c| c.map(|(_, c)| c)).collect::<std::io::Result<Vec<_>>>().unwrap()
    }
}
