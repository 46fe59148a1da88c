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
//!    usage recorded on the assistant message it produced.
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
//!   those are replaced by one *unseen prefix* block with the system
//!   prompt's 5-minute breakpoint, whose identity is (CLI version, cwd, main
//!   or subagent) and whose size is the first request's recorded total minus
//!   the estimate of its messages (the corpus median for a chain whose first
//!   request has no usage).
//! - **Thinking blocks of earlier turns.** On models before Opus 4.5 /
//!   Sonnet 4.6 (and every Haiku), a user turn that is not a tool result
//!   after a thinking turn invalidates the messages cache (facts §1.5): the
//!   API drops earlier turns' thinking from the prompt. Those blocks are
//!   counted as empty and as another prefix from that turn on.
//!
//! A request's time is its transcript timestamp: the `api-request`
//! record's (when it was sent) in record replay, the assistant line's (when
//! the response was written) in the pipeline, which is later than the start
//! the TTL counts from (facts §1.4) by the response's duration.
//!
//! Accounts: caches are per organization / workspace (facts §1.7), which a
//! transcript does not record. [`Account::Root`] (the default) takes every
//! session under one projects root as one account; `no-cross-session-cache`
//! gives each session its own.

use super::pricing::Pricing;
use super::sim::{
    BlockBuilder, BlockFeat, BlockKind, CacheSim, ChainStep, Estimator, N_KINDS, PinReport, Place, Role, SimBlock,
    SimConfig, SimRequest, Ttl, apply_automatic, pin_chain,
};
use super::tokens::TokenCounts;
use super::usage::{self, CacheCreation, PricingInfo, Totals};
use crate::assemble::driver::{Assembler, assemble_session};
use crate::assemble::{Body, Request};
use crate::corpus::{RunOptions, Session, for_each_session_of};
use crate::diag::Diagnostic;
use crate::input::discover::Discovery;
use crate::json::Json;
use crate::model::entry::Entry;
use crate::time::parse_timestamp_ms;
use rayon::prelude::*;
use rustc_hash::FxHashMap;
use serde::Serialize;
use xxhash_rust::xxh3::xxh3_64;

// ---------------------------------------------------------------------------
// Options
// ---------------------------------------------------------------------------

/// Which sessions share a cache (facts §1.7: per organization / workspace).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Account {
    /// Every session under the same projects root (`~/.claude/projects`).
    #[default]
    Root,
    /// Every session of the same project folder.
    Project,
    /// Each session alone.
    Session,
}

impl std::str::FromStr for Account {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "root" => Ok(Account::Root),
            "project" => Ok(Account::Project),
            "session" => Ok(Account::Session),
            other => Err(format!("expected root, project or session, got {other:?}")),
        }
    }
}

/// Where the cache boundary before the messages sits (`--what-if boundary=`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Boundary {
    /// No breakpoint on tools or system: only the messages' breakpoints.
    None,
    /// One more breakpoint on the last tool, so the tool list is cached
    /// apart from the system prompt (facts §1.1 [TUPC]).
    Tools,
}

/// One change to the requests, simulated against the baseline.
#[derive(Debug, Clone, PartialEq)]
pub enum WhatIf {
    /// Every breakpoint with this TTL (`ttl=1h`, `ttl=5m`).
    Ttl(Ttl),
    /// N breakpoints per request (`breakpoints=N`, 0–4), in this order: the
    /// last block of the last user message, the request's tool / system
    /// breakpoints (newest first), the last block of each earlier user
    /// message (newest first).
    Breakpoints(usize),
    /// Every request sent to this model (`model=NAME`): its price and its
    /// minimum cacheable length; the token counts are kept.
    Model(String),
    /// The system prompt longer by this many bytes (`system-prompt-growth=BYTES`,
    /// negative shrinks it), in tokens by the fitted estimator.
    SystemPromptGrowth(i64),
    /// Each session its own cache (`no-cross-session-cache`).
    NoCrossSessionCache,
    /// `boundary=none|tools`.
    Boundary(Boundary),
}

impl std::str::FromStr for WhatIf {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let (k, v) = s.split_once('=').unwrap_or((s, ""));
        let bad = |what: &str| format!("--what-if {s:?}: {what}");
        match (k, v) {
            ("ttl", "1h") => Ok(WhatIf::Ttl(Ttl::OneHour)),
            ("ttl", "5m") => Ok(WhatIf::Ttl(Ttl::FiveMinutes)),
            ("ttl", _) => Err(bad("ttl is 5m or 1h")),
            ("breakpoints", n) => match n.parse::<usize>() {
                Ok(n) if n <= 4 => Ok(WhatIf::Breakpoints(n)),
                _ => Err(bad("breakpoints is 0 to 4 (the API refuses more, facts §1.2)")),
            },
            ("model", m) if !m.is_empty() => Ok(WhatIf::Model(m.to_string())),
            ("model", _) => Err(bad("model needs a name")),
            ("system-prompt-growth", b) => b
                .parse::<i64>()
                .map(WhatIf::SystemPromptGrowth)
                .map_err(|_| bad("system-prompt-growth is a number of bytes")),
            ("no-cross-session-cache", "") => Ok(WhatIf::NoCrossSessionCache),
            ("boundary", "none") => Ok(WhatIf::Boundary(Boundary::None)),
            ("boundary", "tools") => Ok(WhatIf::Boundary(Boundary::Tools)),
            ("boundary", _) => Err(bad("boundary is none or tools")),
            _ => Err(bad(
                "expected ttl=1h|5m, breakpoints=N, model=NAME, system-prompt-growth=BYTES, no-cross-session-cache or boundary=none|tools",
            )),
        }
    }
}

impl std::fmt::Display for WhatIf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            WhatIf::Ttl(Ttl::OneHour) => write!(f, "ttl=1h"),
            WhatIf::Ttl(Ttl::FiveMinutes) => write!(f, "ttl=5m"),
            WhatIf::Breakpoints(n) => write!(f, "breakpoints={n}"),
            WhatIf::Model(m) => write!(f, "model={m}"),
            WhatIf::SystemPromptGrowth(b) => write!(f, "system-prompt-growth={b}"),
            WhatIf::NoCrossSessionCache => write!(f, "no-cross-session-cache"),
            WhatIf::Boundary(Boundary::None) => write!(f, "boundary=none"),
            WhatIf::Boundary(Boundary::Tools) => write!(f, "boundary=tools"),
        }
    }
}

/// How to model.
#[derive(Debug, Clone)]
pub struct ModelOptions {
    pub sim: SimConfig,
    pub account: Account,
    pub what_ifs: Vec<WhatIf>,
    /// The pipeline's profile gives the client's prompt text and tools (else
    /// sessions without a recorded shape get the unseen prefix block).
    pub prompt_known: bool,
    /// Size of the unseen prefix when no chain of the corpus has a first
    /// request with usage.
    pub unseen_prefix_default: u32,
    /// Whether a chain's first request finds the prefix through its first
    /// tool / system breakpoint in the cache, warmed by the account's
    /// sessions that are not in the corpus (see the module docs).
    pub warm_prefix: WarmPrefix,
}

/// See [`ModelOptions::warm_prefix`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum WarmPrefix {
    /// When the first request's recorded usage shows a cache read.
    #[default]
    Recorded,
    Always,
    Never,
}

impl std::str::FromStr for WarmPrefix {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "recorded" => Ok(WarmPrefix::Recorded),
            "always" => Ok(WarmPrefix::Always),
            "never" => Ok(WarmPrefix::Never),
            other => Err(format!("expected recorded, always or never, got {other:?}")),
        }
    }
}

/// The unseen prefix of the public corpus's chains, median, rounded
/// (`ctxasm cost ../shared/corpora/public --json`:
/// `estimator.unseen_prefix_median` = 11,482 tokens): what Claude Code
/// 1.0–2.1 sent as tools + system prompt.
pub const UNSEEN_PREFIX_DEFAULT: u32 = 11_500;

impl Default for ModelOptions {
    fn default() -> Self {
        ModelOptions {
            sim: SimConfig::default(),
            account: Account::Root,
            what_ifs: Vec::new(),
            prompt_known: false,
            unseen_prefix_default: UNSEEN_PREFIX_DEFAULT,
            warm_prefix: WarmPrefix::Recorded,
        }
    }
}

// ---------------------------------------------------------------------------
// Pass 1: blocks
// ---------------------------------------------------------------------------

/// One request of a chain.
#[derive(Debug, Clone)]
struct ReqIn {
    custom_id: String,
    at_ms: u64,
    model: String,
    recorded: Option<TokenCounts>,
    step: ChainStep,
    /// Blocks in the request (`keep` + added).
    len: usize,
}

/// One chain stored once.
#[derive(Debug, Default)]
struct ChainIn {
    session: usize,
    arena: Vec<SimBlock>,
    feats: Vec<BlockFeat>,
    /// Arena index of the unseen prefix block.
    unseen: Option<usize>,
    reqs: Vec<ReqIn>,
}

/// What pass 1 keeps of a session.
#[derive(Debug, Default)]
struct SessionIn {
    session_id: String,
    project: String,
    scope_root: u64,
    scope_project: u64,
    scope_session: u64,
    by_pipeline: bool,
    unseen_prompt: bool,
    diagnostics: Vec<Diagnostic>,
    /// The session's usage lines, for the corpus-wide recorded count.
    usage_lines: usage::FileCandidates,
}

/// Models that keep earlier turns' thinking in the prompt (facts §1.5: the
/// messages cache survives a user turn after a thinking turn on Opus 4.5+ and
/// Sonnet 4.6+; earlier Opus / Sonnet and every Haiku lose it). Prefixes of
/// the normalized model id, as in the minimum-length table.
pub static KEEPS_THINKING: &[&str] = &[
    "claude-opus-4-5",
    "claude-opus-4-6",
    "claude-opus-4-7",
    "claude-opus-4-8",
    "claude-opus-5",
    "claude-sonnet-4-6",
    "claude-sonnet-5",
    "claude-fable",
    "claude-mythos",
];

/// The model drops earlier turns' thinking (see [`KEEPS_THINKING`]).
pub fn strips_old_thinking(model: &str) -> bool {
    let id = super::pricing::normalize_model_id(model);
    !KEEPS_THINKING.iter().any(|p| id.starts_with(p))
}

/// Hash mark of a thinking block the API dropped.
const STRIPPED: u128 = 0x5354_5249_5050_4544_5448_494e_4b49_4e47;

/// Blocks of one segment, built once per node.
#[derive(Default)]
struct SegmentBlocks {
    by_node: FxHashMap<usize, (Vec<SimBlock>, Vec<BlockFeat>)>,
    builder: BlockBuilder,
}

/// A message, or one tool / system block of the given kind and place.
enum Segment {
    Message,
    Value(BlockKind, Place),
}

impl SegmentBlocks {
    /// Append the blocks of node `v`, built the first time it is seen.
    fn append(&mut self, v: &Json<'_>, seg: Segment, out: &mut Vec<SimBlock>, feats: &mut Vec<BlockFeat>) {
        let key = v as *const Json<'_> as usize;
        let builder = &mut self.builder;
        let (b, f) = self.by_node.entry(key).or_insert_with(|| {
            let (mut b, mut f) = (Vec::new(), Vec::new());
            match seg {
                Segment::Message => builder.push_message(v, &mut b, &mut f),
                Segment::Value(kind, place) => builder.push(v, kind, place, &mut b, &mut f),
            }
            (b, f)
        });
        out.extend_from_slice(b);
        feats.extend_from_slice(f);
    }
}

/// The blocks of one request; with `unseen`, that block instead of the
/// tools and system.
fn request_blocks(
    body: &Body<'_>,
    seg: &mut SegmentBlocks,
    unseen: Option<&SimBlock>,
    out: &mut Vec<SimBlock>,
    feats: &mut Vec<BlockFeat>,
) {
    out.clear();
    feats.clear();
    match unseen {
        Some(u) => {
            out.push(u.clone());
            feats.push(BlockFeat::default());
        }
        None => {
            if let Some(Json::Arr(tools)) = body.tools {
                for t in tools.iter() {
                    seg.append(t, Segment::Value(BlockKind::Tool, Place::Tool), out, feats);
                }
            }
            for s in &body.system {
                seg.append(s, Segment::Value(BlockKind::System, Place::System), out, feats);
            }
        }
    }
    for m in &body.messages {
        seg.append(m, Segment::Message, out, feats);
    }
    apply_automatic(body, out);
}

/// Mark the thinking blocks before the last user turn that is not a tool
/// result as dropped (see [`strips_old_thinking`]).
fn strip_old_thinking(blocks: &mut [SimBlock], feats: &mut [BlockFeat]) {
    let last_turn = blocks.iter().rposition(|b| {
        matches!(b.place, Place::Message { role: Role::User, first: true }) && b.kind != BlockKind::ToolResult
    });
    let Some(turn) = last_turn else { return };
    for (b, f) in blocks[..turn].iter_mut().zip(&mut feats[..turn]) {
        if f.thinking {
            b.hash ^= STRIPPED;
            *f = BlockFeat { thinking: true, ..BlockFeat::default() };
        }
    }
}

/// The entry written at `line` of `file`.
fn entry_at<'s, 'a>(session: &'s Session<'a, '_>, file: &str, line: u32) -> Option<&'s Entry<'a>> {
    let f = session.files().find(|f| f.file.display == file)?;
    let entries = &f.parsed.entries;
    entries.binary_search_by_key(&line, |e| e.line).ok().and_then(|i| entries.get(i))
}

fn scope_of(parts: &[&str]) -> u64 {
    xxh3_64(parts.join("\u{0}").as_bytes())
}

/// Pass 1 for one session.
fn session_blocks<'a>(
    bump: &'a bumpalo::Bump,
    session: &Session<'a, '_>,
    assembler: &Assembler,
    opts: &ModelOptions,
) -> (SessionIn, Vec<ChainIn>) {
    let out = assemble_session(bump, session, assembler);
    let (session_id, project) = usage::session_identity(session);
    let first_path = session.files().next().map(|f| f.file.path.clone()).unwrap_or_default();
    let project_dir = if session.main.is_some() {
        first_path.parent().map(std::path::Path::to_path_buf).unwrap_or_default()
    } else {
        first_path
            .ancestors()
            .find(|a| a.file_name().is_some_and(|n| n == "subagents"))
            .and_then(|s| s.parent())
            .and_then(|s| s.parent())
            .map(std::path::Path::to_path_buf)
            .unwrap_or_default()
    };
    let root = project_dir.parent().map(|p| p.to_string_lossy().into_owned()).unwrap_or_default();
    let project_path = project_dir.to_string_lossy().into_owned();
    let has_shapes = session.files().any(|f| {
        f.parsed.entries.iter().any(|e| matches!(e.kind, crate::model::entry::EntryKind::ApiRequestShape { .. }))
    });
    let unseen_prompt = out.by_pipeline && !has_shapes && !opts.prompt_known;
    let sin = SessionIn {
        usage_lines: Vec::new(),
        scope_root: scope_of(&["root", &root]),
        scope_project: scope_of(&["project", &project_path]),
        scope_session: scope_of(&["session", &project_path, &session_id]),
        session_id,
        project,
        by_pipeline: out.by_pipeline,
        unseen_prompt,
        diagnostics: out.diagnostics,
    };
    // Recorded usage by message id; api-request id → message id.
    let lines = usage::session_usage_lines(session);
    let recorded = usage::dedup_files(lines.clone());
    let mut by_message: FxHashMap<&str, TokenCounts> = FxHashMap::default();
    for r in &recorded {
        if let Some(m) = r.message_id.as_deref() {
            by_message.entry(m).or_insert(r.tokens);
        }
    }
    let mut by_request_ref: FxHashMap<&str, &str> = FxHashMap::default();
    if !out.by_pipeline {
        for e in session.files().flat_map(|f| f.parsed.entries.iter()) {
            if let (Some(a), Some(r)) = (e.as_assistant(), e.raw.get_str("requestRef"))
                && let Some(m) = a.message_id
            {
                by_request_ref.entry(r).or_insert(m);
            }
        }
    }
    let usage_of = |r: &Request<'_>| -> Option<TokenCounts> {
        let e = entry_at(session, r.file, r.line)?;
        let mid = match e.as_assistant() {
            Some(a) => a.message_id?,
            None => by_request_ref.get(e.raw.get_str("id")?).copied()?,
        };
        by_message.get(mid).copied()
    };
    let version = session.files().flat_map(|f| f.parsed.entries.iter()).find_map(|e| e.env.version).unwrap_or("");
    let cwd = session.files().flat_map(|f| f.parsed.entries.iter()).find_map(|e| e.env.cwd).unwrap_or("");

    // Chains in order of first request.
    let mut order: Vec<Option<&str>> = Vec::new();
    for r in &out.requests {
        if !order.contains(&r.agent_id) {
            order.push(r.agent_id);
        }
    }
    let mut seg = SegmentBlocks::default();
    let (mut blocks, mut feats) = (Vec::new(), Vec::new());
    let mut chains = Vec::with_capacity(order.len());
    for agent in order {
        let mut chain = ChainIn::default();
        let unseen_block = unseen_prompt.then(|| SimBlock {
            hash: u128::from(scope_of(&[
                "unseen prefix",
                version,
                cwd,
                if agent.is_some() { "agent" } else { "main" },
            ])) | (1u128 << 127),
            tokens: 0,
            ttl: Some(Ttl::FiveMinutes),
            kind: BlockKind::System,
            place: Place::System,
            pinned: false,
        });
        let mut prev: Vec<SimBlock> = Vec::new();
        let mut last_ms = 0u64;
        for r in out.requests.iter().filter(|r| r.agent_id == agent) {
            request_blocks(&r.body, &mut seg, unseen_block.as_ref(), &mut blocks, &mut feats);
            let model = r.body.model.as_str().unwrap_or("").to_string();
            if strips_old_thinking(&model) {
                strip_old_thinking(&mut blocks, &mut feats);
            }
            let keep = super::sim::common_prefix(&prev, &blocks);
            let start = chain.arena.len();
            chain.arena.extend_from_slice(&blocks[keep..]);
            chain.feats.extend_from_slice(&feats[keep..]);
            if chain.unseen.is_none() && unseen_block.is_some() && keep == 0 {
                chain.unseen = Some(start);
            }
            let breakpoints = blocks
                .iter()
                .enumerate()
                .filter_map(|(i, b)| b.ttl.map(|t| (u32::try_from(i).unwrap_or(u32::MAX), t)))
                .collect();
            let at_ms = r.timestamp.and_then(parse_timestamp_ms).unwrap_or(last_ms).max(last_ms);
            last_ms = at_ms;
            chain.reqs.push(ReqIn {
                custom_id: r.custom_id.clone(),
                at_ms,
                model,
                recorded: usage_of(r),
                step: ChainStep { keep, added: start..chain.arena.len(), breakpoints },
                len: blocks.len(),
            });
            std::mem::swap(&mut prev, &mut blocks);
        }
        // A pipeline chain whose usage shows 1-hour writes was sent with
        // `ttl: "1h"` (the transcript does not hold the request).
        if out.by_pipeline && chain.reqs.iter().any(|r| r.recorded.is_some_and(|t| t.cache_write_1h > 0)) {
            for r in &mut chain.reqs {
                for bp in &mut r.step.breakpoints {
                    bp.1 = Ttl::OneHour;
                }
            }
        }
        chains.push(chain);
    }
    drop(by_message);
    drop(by_request_ref);
    drop(recorded);
    let mut sin = sin;
    sin.usage_lines = lines;
    (sin, chains)
}

// ---------------------------------------------------------------------------
// Pass 2: tokens
// ---------------------------------------------------------------------------

/// How the estimator was fitted, and how well it predicts what it was
/// fitted on.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct EstimatorReport {
    /// Requests that only append to the one before, both with usage.
    pub samples: u64,
    /// Bytes per token by kind (`image` is a factor on the image formula).
    pub bytes_per_token: BTreeMapF,
    /// |estimate − recorded| / recorded of the appended tokens.
    pub median_relative_error: f64,
    pub p90_relative_error: f64,
    /// Blocks whose count comes from recorded usage / from the estimate.
    pub blocks_pinned: u64,
    pub blocks_estimated: u64,
    /// Requests whose usage contradicts counts pinned before (left alone).
    pub inconsistent_requests: u64,
    /// Median size of the unseen prefix (tokens), over chains with usage.
    pub unseen_prefix_median: Option<u64>,
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

fn quantile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let i = ((sorted.len() - 1) as f64 * q).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

fn sorted(mut v: Vec<f64>) -> Vec<f64> {
    v.sort_by(f64::total_cmp);
    v
}

/// Samples for the fit: (features added, recorded tokens added).
fn fit_samples(chains: &[ChainIn]) -> Vec<([f64; N_KINDS], f64)> {
    let mut out = Vec::new();
    for c in chains {
        for w in c.reqs.windows(2) {
            let (a, b) = (&w[0], &w[1]);
            let (Some(ra), Some(rb)) = (a.recorded, b.recorded) else { continue };
            let (ta, tb) = (ra.total_input(), rb.total_input());
            if b.step.keep != a.len || tb < ta || b.step.added.is_empty() {
                continue;
            }
            let mut x = [0.0; N_KINDS];
            for i in b.step.added.clone() {
                if Some(i) == c.unseen {
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
    }
    out
}

/// The unseen prefix of a chain whose first request has usage: its total
/// minus the estimate of the other blocks (at least 0).
fn unseen_residual(c: &ChainIn, est: &Estimator) -> Option<u64> {
    let u = c.unseen?;
    let first = c.reqs.first()?;
    let total = first.recorded?.total_input();
    let others: u64 = first
        .step
        .added
        .clone()
        .filter(|&i| i != u)
        .map(|i| est.estimate_features(&c.feats[i].vector(c.arena[i].kind)).ceil() as u64)
        .sum();
    let residual = total.saturating_sub(others);
    // With a warm prefix the first request reads exactly it (facts §1.6).
    let read = first.recorded?.cache_read;
    Some(if read > 0 && read <= residual { read } else { residual })
}

/// Give every block its tokens and pin them to the recorded usage.
fn tokens_and_pins(c: &mut ChainIn, est: &Estimator, unseen_default: u64) -> PinReport {
    let residual = unseen_residual(c, est);
    // A prefix size read from the first request's cache read is exact: it
    // is pinned before the rest of the total is spread.
    let from_read = c.reqs.first().and_then(|r| r.recorded).is_some_and(|t| Some(t.cache_read) == residual);
    for (i, (b, f)) in c.arena.iter_mut().zip(&c.feats).enumerate() {
        b.tokens = if Some(i) == c.unseen {
            b.pinned = from_read;
            u32::try_from(residual.unwrap_or(unseen_default)).unwrap_or(u32::MAX)
        } else {
            let t = est.estimate_features(&f.vector(b.kind)).ceil();
            if t.is_finite() { t.clamp(0.0, f64::from(u32::MAX)) as u32 } else { 0 }
        };
    }
    let steps: Vec<ChainStep> = c.reqs.iter().map(|r| r.step.clone()).collect();
    let totals: Vec<Option<u64>> = c.reqs.iter().map(|r| r.recorded.map(|t| t.total_input())).collect();
    pin_chain(&mut c.arena, &steps, &totals)
}

// ---------------------------------------------------------------------------
// Pass 3: replay
// ---------------------------------------------------------------------------

/// One request's predicted usage.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct Predicted {
    tokens: TokenCounts,
    cost: Option<f64>,
    rejected: bool,
}

/// Apply `w` to one request (tokens per system byte from `est`).
fn apply_what_if(w: &WhatIf, req: &mut SimRequest, est: &Estimator, max_bps: usize) {
    match w {
        WhatIf::Ttl(t) => {
            for b in req.blocks.iter_mut().filter(|b| b.ttl.is_some()) {
                b.ttl = Some(*t);
            }
        }
        WhatIf::Breakpoints(n) => {
            let n = (*n).min(max_bps);
            let head: Vec<usize> = req
                .blocks
                .iter()
                .enumerate()
                .filter(|(_, b)| b.ttl.is_some() && matches!(b.place, Place::Tool | Place::System))
                .map(|(i, _)| i)
                .collect();
            // Last block of each user message, newest first.
            let mut user_ends = Vec::new();
            let mut end = None;
            for (i, b) in req.blocks.iter().enumerate().rev() {
                match b.place {
                    Place::Message { role, first } => {
                        if end.is_none() {
                            end = Some((i, role));
                        }
                        if first {
                            if let Some((e, Role::User)) = end {
                                user_ends.push(e);
                            }
                            end = None;
                        }
                    }
                    _ => break,
                }
            }
            let ttl = req.blocks.iter().find_map(|b| b.ttl).unwrap_or_default();
            for b in req.blocks.iter_mut() {
                b.ttl = None;
            }
            // The last message's, then the tool / system ones, then earlier
            // user messages'.
            let mut order: Vec<usize> = user_ends.first().copied().into_iter().collect();
            order.extend(head.iter().rev());
            order.extend(user_ends.iter().skip(1));
            for i in order.into_iter().take(n) {
                if let Some(b) = req.blocks.get_mut(i) {
                    b.ttl = Some(ttl);
                }
            }
        }
        WhatIf::Model(m) => req.model = m.clone(),
        WhatIf::SystemPromptGrowth(bytes) => {
            let bpt = est.bytes_per_token[BlockKind::System.index()];
            let delta = if bpt > 0.0 && bpt.is_finite() { *bytes as f64 / bpt } else { 0.0 };
            if let Some(b) = req.blocks.iter_mut().rev().find(|b| b.place == Place::System) {
                let t = (f64::from(b.tokens) + delta).round().clamp(0.0, f64::from(u32::MAX));
                b.tokens = t as u32;
                // A longer prompt is another prefix.
                b.hash ^= u128::from(bytes.unsigned_abs()) << 64 | 0x9e37;
            }
        }
        WhatIf::NoCrossSessionCache => {}
        WhatIf::Boundary(Boundary::None) => {
            for b in req.blocks.iter_mut().filter(|b| matches!(b.place, Place::Tool | Place::System)) {
                b.ttl = None;
            }
        }
        WhatIf::Boundary(Boundary::Tools) => {
            let ttl = req.blocks.iter().find_map(|b| b.ttl).unwrap_or_default();
            if let Some(i) = req.blocks.iter().rposition(|b| b.place == Place::Tool)
                && req.blocks[i].ttl.is_none()
            {
                req.blocks[i].ttl = Some(ttl);
                // Keep within the limit: drop the first message-side breakpoint
                // before the last one when there are too many.
                let marked: Vec<usize> =
                    req.blocks.iter().enumerate().filter(|(_, b)| b.ttl.is_some()).map(|(i, _)| i).collect();
                if marked.len() > max_bps
                    && let Some(&drop) = marked.iter().find(|&&j| j != i && req.blocks[j].place == Place::System)
                {
                    req.blocks[drop].ttl = None;
                }
            }
        }
    }
}

/// Replay every request in time order; `what_if` changes each request.
fn replay(
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
        req.model.clone_from(&r.model);
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

// ---------------------------------------------------------------------------
// The report
// ---------------------------------------------------------------------------

/// Error statistics of one predicted quantity against the recorded one.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ErrorStats {
    /// Requests compared.
    pub requests: u64,
    pub median_abs_tokens: f64,
    pub p90_abs_tokens: f64,
    /// Over the requests where the recorded value is > 0: |modeled − recorded| / recorded.
    pub relative_over: u64,
    pub median_relative: f64,
    pub p90_relative: f64,
}

impl ErrorStats {
    fn of(pairs: &[(u64, u64)]) -> Self {
        let abs = sorted(pairs.iter().map(|&(m, r)| m.abs_diff(r) as f64).collect());
        let rel = sorted(pairs.iter().filter(|p| p.1 > 0).map(|&(m, r)| m.abs_diff(r) as f64 / r as f64).collect());
        ErrorStats {
            requests: pairs.len() as u64,
            median_abs_tokens: quantile(&abs, 0.5),
            p90_abs_tokens: quantile(&abs, 0.9),
            relative_over: rel.len() as u64,
            median_relative: quantile(&rel, 0.5),
            p90_relative: quantile(&rel, 0.9),
        }
    }
}

/// Requests by whether the recorded and the modeled usage read the cache.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct HitAgreement {
    pub both: u64,
    pub recorded_only: u64,
    pub modeled_only: u64,
    pub neither: u64,
}

/// Modeled against recorded, on the requests that have both.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Accuracy {
    /// Requests with recorded usage matched to an assembled request.
    pub requests_compared: u64,
    /// Assembled requests without recorded usage (not compared).
    pub requests_without_usage: u64,
    pub cache_read: ErrorStats,
    pub cache_write: ErrorStats,
    pub hits: HitAgreement,
    /// Cost of the compared requests.
    pub recorded_cost_usd: f64,
    pub modeled_cost_usd: f64,
    /// (modeled − recorded) / recorded, in %.
    pub cost_error_pct: f64,
    /// The targets: total cost within 2 %, median cache-read error ≤ 5 %.
    pub cost_within_2pct: bool,
    pub median_read_error_within_5pct: bool,
}

/// One what-if against the baseline.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct WhatIfResult {
    pub what_if: String,
    pub modeled: Totals,
    pub delta_usd: f64,
    pub delta_pct: f64,
}

/// One session's row.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct SessionCost {
    pub session_id: String,
    pub project: String,
    pub requests: u64,
    pub by_pipeline: bool,
    /// Tools and system prompt modeled as the unseen prefix.
    pub unseen_prompt: bool,
    /// Over the requests with recorded usage (0 without).
    pub recorded_cost_usd: f64,
    pub modeled_cost_usd: f64,
    /// Cache reads / whole input, recorded and modeled.
    pub recorded_hit_ratio: Option<f64>,
    pub modeled_hit_ratio: f64,
}

/// One request's row (for the HTML report's per-turn chart).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct TurnRow {
    pub custom_id: String,
    /// Index in [`CostReport::sessions`].
    pub session: usize,
    pub at_ms: u64,
    pub recorded: Option<TokenCounts>,
    pub modeled: TokenCounts,
    pub recorded_cost_usd: Option<f64>,
    pub modeled_cost_usd: Option<f64>,
}

/// Cost by category (USD), recorded and modeled.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct CategoryCost {
    pub input: f64,
    pub cache_write_5m: f64,
    pub cache_write_1h: f64,
    pub cache_read: f64,
    pub output: f64,
}

impl CategoryCost {
    fn add(&mut self, pricing: &Pricing, model: &str, t: &TokenCounts) {
        let Some(p) = pricing.price(model) else { return };
        let r = p.rates_for(t);
        self.input += t.input as f64 * r.input / 1e6;
        self.cache_write_5m += t.cache_write_5m as f64 * r.cache_write_5m / 1e6;
        self.cache_write_1h += t.cache_write_1h as f64 * r.cache_write_1h / 1e6;
        self.cache_read += t.cache_read as f64 * r.cache_read / 1e6;
        self.output += t.output as f64 * r.output / 1e6;
    }
}

/// `ctxasm cost`: recorded, modeled, how far apart, and the what-ifs.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct CostReport {
    /// The recorded usage of the corpus, as `cost --recorded-only` counts it.
    pub recorded: Totals,
    /// The simulator's prediction for every assembled request.
    pub modeled: Totals,
    pub modeled_cache_creation: CacheCreation,
    pub accuracy: Accuracy,
    pub estimator: EstimatorReport,
    pub what_if: Vec<WhatIfResult>,
    /// Sorted by project, then session id.
    pub sessions: Vec<SessionCost>,
    /// Compared requests, by category.
    pub recorded_by_category: CategoryCost,
    pub modeled_by_category: CategoryCost,
    pub account: String,
    pub pricing: PricingInfo,
    /// Requests the API would refuse (more than 4 breakpoints).
    pub rejected_requests: u64,
    pub diagnostics: Vec<Diagnostic>,
    #[serde(skip)]
    pub turns: Vec<TurnRow>,
}

fn add_totals(t: &mut Totals, c: &mut CacheCreation, tokens: &TokenCounts, cost: Option<f64>) {
    t.requests += 1;
    t.input_tokens += tokens.input;
    t.cache_creation_input_tokens += tokens.cache_write();
    t.cache_read_input_tokens += tokens.cache_read;
    t.output_tokens += tokens.output;
    t.cost_usd += cost.unwrap_or(0.0);
    c.ephemeral_5m_input_tokens += tokens.cache_write_5m;
    c.ephemeral_1h_input_tokens += tokens.cache_write_1h;
}

/// Model the cost of every session of `disc`.
pub fn cost_report(
    disc: &Discovery,
    run: &RunOptions<'_>,
    assembler: &Assembler,
    pricing: &Pricing,
    opts: &ModelOptions,
) -> CostReport {
    let mut diagnostics = disc.diagnostics.clone();
    let mut sessions: Vec<SessionIn> = Vec::new();
    let mut chains: Vec<ChainIn> = Vec::new();
    for result in for_each_session_of(disc, &disc.groups, run, |bump, s| session_blocks(bump, s, assembler, opts)) {
        match result {
            Ok((s, cs)) => {
                let idx = sessions.len();
                chains.extend(cs.into_iter().map(|mut c| {
                    c.session = idx;
                    c
                }));
                sessions.push(s);
            }
            Err(d) => diagnostics.push(d),
        }
    }
    // The corpus-wide recorded usage: the same lines, the global rule
    // (what `cost --recorded-only` counts), from this one read.
    let mut lines = Vec::new();
    for s in &mut sessions {
        lines.append(&mut s.usage_lines);
    }
    let mut recorded_requests = usage::dedup_files(lines);
    usage::price_requests(&mut recorded_requests, pricing);
    let recorded = usage::RecordedReport::from_requests(&recorded_requests, pricing, Vec::new());
    drop(recorded_requests);
    for s in &mut sessions {
        diagnostics.append(&mut s.diagnostics);
    }

    // Pass 2.
    let samples = fit_samples(&chains);
    let est = if samples.len() >= 8 { Estimator::fit(&samples) } else { Estimator::default() };
    let fit_err = sorted(
        samples.iter().filter(|(_, y)| *y > 0.0).map(|(x, y)| (est.estimate_features(x) - y).abs() / y).collect(),
    );
    let residuals = sorted(chains.iter().filter_map(|c| unseen_residual(c, &est)).map(|v| v as f64).collect());
    let unseen_median = (!residuals.is_empty()).then(|| quantile(&residuals, 0.5) as u64);
    let unseen_default = unseen_median.unwrap_or(u64::from(opts.unseen_prefix_default));
    let pins: Vec<PinReport> = chains.par_iter_mut().map(|c| tokens_and_pins(c, &est, unseen_default)).collect();
    let mut estimator = EstimatorReport {
        samples: samples.len() as u64,
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

    // Pass 3.
    let mut order: Vec<(u64, u32, u32)> = Vec::new();
    for (ci, c) in chains.iter().enumerate() {
        for (ri, r) in c.reqs.iter().enumerate() {
            order.push((r.at_ms, ci as u32, ri as u32));
        }
    }
    order.sort_unstable();
    let base = replay(&sessions, &chains, &order, opts, None, &est, pricing);

    let mut rep = CostReport {
        recorded: recorded.totals,
        account: match opts.account {
            Account::Root => "root",
            Account::Project => "project",
            Account::Session => "session",
        }
        .to_string(),
        pricing: recorded.pricing.clone(),
        estimator,
        ..CostReport::default()
    };
    rep.diagnostics = diagnostics;
    let mut read_pairs = Vec::new();
    let mut write_pairs = Vec::new();
    let mut per_session: Vec<SessionCost> = sessions
        .iter()
        .map(|s| SessionCost {
            session_id: s.session_id.clone(),
            project: s.project.clone(),
            by_pipeline: s.by_pipeline,
            unseen_prompt: s.unseen_prompt,
            ..SessionCost::default()
        })
        .collect();
    let mut ratio_acc: Vec<[u64; 4]> = vec![[0; 4]; sessions.len()];
    for (ci, c) in chains.iter().enumerate() {
        for (ri, r) in c.reqs.iter().enumerate() {
            let p = base[ci][ri];
            add_totals(&mut rep.modeled, &mut rep.modeled_cache_creation, &p.tokens, p.cost);
            rep.rejected_requests += u64::from(p.rejected);
            let s = &mut per_session[c.session];
            s.requests += 1;
            s.modeled_cost_usd += p.cost.unwrap_or(0.0);
            let acc = &mut ratio_acc[c.session];
            acc[0] += p.tokens.cache_read;
            acc[1] += p.tokens.total_input();
            let rec_cost = r.recorded.and_then(|t| pricing.cost(&r.model, &t));
            if let Some(t) = r.recorded {
                acc[2] += t.cache_read;
                acc[3] += t.total_input();
                rep.accuracy.requests_compared += 1;
                read_pairs.push((p.tokens.cache_read, t.cache_read));
                write_pairs.push((p.tokens.cache_write(), t.cache_write()));
                let h = &mut rep.accuracy.hits;
                match (t.cache_read > 0, p.tokens.cache_read > 0) {
                    (true, true) => h.both += 1,
                    (true, false) => h.recorded_only += 1,
                    (false, true) => h.modeled_only += 1,
                    (false, false) => h.neither += 1,
                }
                rep.accuracy.recorded_cost_usd += rec_cost.unwrap_or(0.0);
                rep.accuracy.modeled_cost_usd += p.cost.unwrap_or(0.0);
                s.recorded_cost_usd += rec_cost.unwrap_or(0.0);
                rep.recorded_by_category.add(pricing, &r.model, &t);
                rep.modeled_by_category.add(pricing, &r.model, &p.tokens);
            } else {
                rep.accuracy.requests_without_usage += 1;
            }
            rep.turns.push(TurnRow {
                custom_id: r.custom_id.clone(),
                session: c.session,
                at_ms: r.at_ms,
                recorded: r.recorded,
                modeled: p.tokens,
                recorded_cost_usd: rec_cost,
                modeled_cost_usd: p.cost,
            });
        }
    }
    for (s, a) in per_session.iter_mut().zip(&ratio_acc) {
        s.modeled_hit_ratio = if a[1] > 0 { a[0] as f64 / a[1] as f64 } else { 0.0 };
        s.recorded_hit_ratio = (a[3] > 0).then(|| a[2] as f64 / a[3] as f64);
    }
    let mut perm: Vec<usize> = (0..per_session.len()).collect();
    perm.sort_by(|&a, &b| {
        let (a, b) = (&per_session[a], &per_session[b]);
        (&a.project, &a.session_id).cmp(&(&b.project, &b.session_id))
    });
    let mut new_index = vec![0; perm.len()];
    for (new, &old) in perm.iter().enumerate() {
        new_index[old] = new;
    }
    for t in &mut rep.turns {
        t.session = new_index[t.session];
    }
    let mut slots: Vec<Option<SessionCost>> = per_session.into_iter().map(Some).collect();
    rep.sessions = perm.iter().filter_map(|&i| slots[i].take()).collect();
    let acc = &mut rep.accuracy;
    acc.cache_read = ErrorStats::of(&read_pairs);
    acc.cache_write = ErrorStats::of(&write_pairs);
    acc.cost_error_pct = if acc.recorded_cost_usd > 0.0 {
        100.0 * (acc.modeled_cost_usd - acc.recorded_cost_usd) / acc.recorded_cost_usd
    } else {
        0.0
    };
    acc.cost_within_2pct = acc.requests_compared > 0 && acc.cost_error_pct.abs() <= 2.0;
    acc.median_read_error_within_5pct = acc.cache_read.relative_over > 0 && acc.cache_read.median_relative <= 0.05;

    // What-ifs.
    let baseline = rep.modeled.cost_usd;
    rep.what_if = opts
        .what_ifs
        .iter()
        .map(|w| {
            let res = replay(&sessions, &chains, &order, opts, Some(w), &est, pricing);
            let mut t = Totals::default();
            let mut c = CacheCreation::default();
            for p in res.iter().flatten() {
                add_totals(&mut t, &mut c, &p.tokens, p.cost);
            }
            let delta = t.cost_usd - baseline;
            WhatIfResult {
                what_if: w.to_string(),
                modeled: t,
                delta_usd: delta,
                delta_pct: if baseline > 0.0 { 100.0 * delta / baseline } else { 0.0 },
            }
        })
        .collect();
    rep
}

#[cfg(test)]
mod tests {
    use super::*;

    fn block(hash: u128, tokens: u32, ttl: Option<Ttl>, place: Place) -> SimBlock {
        SimBlock { hash, tokens, ttl, kind: BlockKind::Text, place, pinned: false }
    }

    #[test]
    fn what_if_parses_and_prints_back() {
        for s in [
            "ttl=1h",
            "ttl=5m",
            "breakpoints=0",
            "breakpoints=4",
            "model=claude-opus-4-8",
            "system-prompt-growth=4000",
            "system-prompt-growth=-200",
            "no-cross-session-cache",
            "boundary=none",
            "boundary=tools",
        ] {
            let w: WhatIf = s.parse().unwrap();
            assert_eq!(w.to_string(), s);
        }
        for bad in ["ttl=2h", "breakpoints=5", "model=", "system-prompt-growth=x", "boundary=mid", "colour=red"] {
            let err = bad.parse::<WhatIf>().unwrap_err();
            assert!(err.contains(bad), "{err}");
        }
    }

    fn user(first: bool) -> Place {
        Place::Message { role: Role::User, first }
    }
    fn assistant(first: bool) -> Place {
        Place::Message { role: Role::Assistant, first }
    }

    #[test]
    fn breakpoints_what_if_marks_the_last_message_then_system_then_earlier_messages() {
        let m5 = Some(Ttl::FiveMinutes);
        let blocks = vec![
            block(1, 10, None, Place::Tool),
            block(2, 10, m5, Place::System),
            block(3, 10, None, user(true)),
            block(4, 10, None, assistant(true)),
            block(5, 10, None, user(true)),
            block(6, 10, None, user(false)),
            block(7, 10, None, assistant(true)),
            block(8, 10, m5, user(true)),
        ];
        let req = SimRequest { blocks, ..SimRequest::default() };
        let marks = |n| {
            let mut r = req.clone();
            apply_what_if(&WhatIf::Breakpoints(n), &mut r, &Estimator::default(), 4);
            r.blocks.iter().enumerate().filter(|(_, b)| b.ttl.is_some()).map(|(i, _)| i).collect::<Vec<_>>()
        };
        assert_eq!(marks(0), Vec::<usize>::new());
        assert_eq!(marks(1), [7]);
        assert_eq!(marks(2), [1, 7]);
        assert_eq!(marks(3), [1, 5, 7]);
        assert_eq!(marks(4), [1, 2, 5, 7]);
    }

    #[test]
    fn boundary_and_ttl_what_ifs() {
        let m5 = Some(Ttl::FiveMinutes);
        let req = SimRequest {
            blocks: vec![
                block(1, 10, None, Place::Tool),
                block(2, 10, m5, Place::System),
                block(3, 10, m5, user(true)),
            ],
            ..SimRequest::default()
        };
        let mut r = req.clone();
        apply_what_if(&WhatIf::Boundary(Boundary::None), &mut r, &Estimator::default(), 4);
        assert_eq!(r.blocks.iter().map(|b| b.ttl).collect::<Vec<_>>(), [None, None, m5]);
        let mut r = req.clone();
        apply_what_if(&WhatIf::Boundary(Boundary::Tools), &mut r, &Estimator::default(), 4);
        assert_eq!(r.blocks.iter().map(|b| b.ttl).collect::<Vec<_>>(), [m5, m5, m5]);
        let mut r = req.clone();
        apply_what_if(&WhatIf::Ttl(Ttl::OneHour), &mut r, &Estimator::default(), 4);
        let h1 = Some(Ttl::OneHour);
        assert_eq!(r.blocks.iter().map(|b| b.ttl).collect::<Vec<_>>(), [None, h1, h1]);
        // 4000 bytes at 4 bytes per token: 1000 more tokens in the last system block, another prefix.
        let mut r = req.clone();
        apply_what_if(&WhatIf::SystemPromptGrowth(4000), &mut r, &Estimator::uniform(4.0), 4);
        assert_eq!(r.blocks[1].tokens, 1010);
        assert_ne!(r.blocks[1].hash, 2);
    }

    #[test]
    fn thinking_before_the_last_user_turn_is_dropped_on_older_models() {
        assert!(strips_old_thinking("claude-sonnet-4-20250514"));
        assert!(strips_old_thinking("claude-opus-4-1-20250805"));
        assert!(strips_old_thinking("claude-haiku-4-5"));
        assert!(!strips_old_thinking("claude-opus-4-5-20251101"));
        assert!(!strips_old_thinking("claude-sonnet-4-6"));
        assert!(!strips_old_thinking("claude-opus-5-5"));
        let think = BlockFeat { bytes: 40, image_tokens: 0, thinking: true };
        let text = BlockFeat { bytes: 40, image_tokens: 0, thinking: false };
        let mut blocks = vec![
            block(1, 0, None, user(true)),
            block(2, 0, None, assistant(true)), // thinking of turn 1
            block(3, 0, None, assistant(false)),
            SimBlock { kind: BlockKind::ToolResult, ..block(4, 0, None, user(true)) },
            block(5, 0, None, assistant(true)), // thinking, still turn 1
            block(6, 0, None, user(true)),      // a new user turn
            block(7, 0, None, assistant(true)), // thinking of turn 2
        ];
        let mut feats = vec![text, think, text, text, think, text, think];
        strip_old_thinking(&mut blocks, &mut feats);
        let hashes: Vec<u128> = blocks.iter().map(|b| b.hash).collect();
        assert_eq!(hashes, [1, 2 ^ STRIPPED, 3, 4, 5 ^ STRIPPED, 6, 7]);
        assert_eq!(feats[1].bytes, 0);
        assert_eq!(feats[6].bytes, 40);
    }

    #[test]
    fn error_stats_median_and_p90() {
        let pairs: Vec<(u64, u64)> = (0..10).map(|i| (100 + i, 100)).chain([(5, 0)]).collect();
        let e = ErrorStats::of(&pairs);
        assert_eq!(e.requests, 11);
        assert_eq!(e.relative_over, 10);
        assert_eq!(e.median_relative, 0.05);
        assert_eq!(e.p90_relative, 0.08);
        assert_eq!(e.median_abs_tokens, 5.0);
    }
}
