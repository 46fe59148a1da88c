//! A prompt-cache simulator: which part of each request's prompt the API
//! would read from its cache, write to it (5 m or 1 h) or take as plain
//! input, given the requests in time order.
//!
//! Every rule cites `../shared/docs/anthropic-api-facts.md` ("facts §x.y"),
//! which paraphrases the official prompt-caching guide [PC] and its
//! companions. In short:
//!
//! - A request is a list of blocks in the API's order, tools → system →
//!   messages (facts §1.1); [`blocks_of`] flattens a [`Body`] into
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

use super::pricing::{builtin_min_cacheable, lookup_min_cacheable};
use crate::assemble::Body;
use crate::json::Json;
use crate::json::writer;
use rustc_hash::FxHashMap;
use xxhash_rust::xxh3::{xxh3_128, xxh3_128_with_seed};

// ---------------------------------------------------------------------------
// Blocks
// ---------------------------------------------------------------------------

/// A cache entry's lifetime: `ttl` of `cache_control`, `5m` by default
/// (facts §1.1 "Object shape").
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub enum Ttl {
    #[default]
    FiveMinutes,
    OneHour,
}

impl Ttl {
    /// The lifetime in milliseconds (facts §1.4).
    pub fn millis(self) -> u64 {
        match self {
            Ttl::FiveMinutes => 5 * 60 * 1000,
            Ttl::OneHour => 60 * 60 * 1000,
        }
    }

    /// The TTL a `cache_control` value asks for: `{"type":"ephemeral"}` is
    /// 5 m, `"ttl":"1h"` is 1 h (facts §1.1); `null` is no breakpoint.
    pub fn of_cache_control(cc: &Json<'_>) -> Option<Ttl> {
        match cc {
            Json::Obj(_) if cc.get_str("ttl") == Some("1h") => Some(Ttl::OneHour),
            Json::Obj(_) => Some(Ttl::FiveMinutes),
            _ => None,
        }
    }
}

/// Number of content kinds the [`Estimator`] tells apart.
pub const N_KINDS: usize = 6;

/// What a block holds, for token estimation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BlockKind {
    /// Message text (also thinking and documents).
    Text,
    /// `tool_use` and other JSON inputs the model wrote.
    ToolUse,
    /// `tool_result` and server-tool results.
    ToolResult,
    /// An image block.
    Image,
    /// A `system` block, or the content of a `system`-role message.
    System,
    /// One tool definition.
    Tool,
}

impl BlockKind {
    pub const ALL: [BlockKind; N_KINDS] = [
        BlockKind::Text,
        BlockKind::ToolUse,
        BlockKind::ToolResult,
        BlockKind::Image,
        BlockKind::System,
        BlockKind::Tool,
    ];

    /// Index into [`Estimator::bytes_per_token`].
    pub fn index(self) -> usize {
        self as usize
    }
}

/// A message's role, part of where a block sits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Role {
    User,
    Assistant,
    System,
    Other,
}

impl Role {
    fn of(s: Option<&str>) -> Role {
        match s {
            Some("user") => Role::User,
            Some("assistant") => Role::Assistant,
            Some("system") => Role::System,
            _ => Role::Other,
        }
    }
}

/// Where a block sits: the same bytes as a tool, a system block or in a
/// message of another role (or starting a new message) are another prefix.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Place {
    Tool,
    System,
    /// `first`: the block opens its message.
    Message {
        role: Role,
        first: bool,
    },
}

impl Place {
    fn tag(self) -> u8 {
        match self {
            Place::Tool => 1,
            Place::System => 2,
            Place::Message { role, first } => 8 + 2 * role as u8 + first as u8,
        }
    }
}

/// One block of a request's prompt.
#[derive(Debug, Clone, PartialEq)]
pub struct SimBlock {
    /// xxh3-128 of the block's bytes with every `cache_control` left out
    /// (a string message content hashes as the one text block it stands for).
    pub hash: u128,
    pub tokens: u32,
    /// The block carries `cache_control`: a breakpoint with this TTL.
    pub ttl: Option<Ttl>,
    pub kind: BlockKind,
    pub place: Place,
    /// `tokens` comes from recorded usage ([`exact_from_usage`]), not an estimate.
    pub pinned: bool,
}

/// One request to simulate.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SimRequest {
    /// When the request started, in ms since the epoch (the TTL clock starts
    /// at the start of a request, facts §1.4).
    pub at_ms: u64,
    /// The `model` of the body: caches are per model (facts §1.5).
    pub model: String,
    /// Organization / workspace: caches are never shared across them (facts §1.7).
    pub scope: u64,
    pub blocks: Vec<SimBlock>,
}

/// Types that cannot carry `cache_control` (facts §1.1 "These cannot carry").
fn can_carry(block: &Json<'_>) -> bool {
    match block.get_str("type") {
        Some("thinking") | Some("redacted_thinking") => false,
        Some("text") => block.get_str("text").is_some_and(|t| !t.is_empty()),
        _ => true,
    }
}

fn kind_of_message_block(block: &Json<'_>, role: Role) -> BlockKind {
    match block.get_str("type") {
        Some("image") => BlockKind::Image,
        Some("tool_use") | Some("server_tool_use") | Some("mcp_tool_use") => BlockKind::ToolUse,
        Some(t) if t == "tool_result" || t.ends_with("_tool_result") => BlockKind::ToolResult,
        _ if role == Role::System => BlockKind::System,
        _ => BlockKind::Text,
    }
}

/// Append `v` as compact JSON in document order with every `cache_control`
/// member left out; with `images`, image objects are handled as
/// [`ImageAcc`] says.
fn write_stripped(out: &mut Vec<u8>, v: &Json<'_>, mut images: Option<&mut ImageAcc>) {
    match v {
        Json::Arr(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_stripped(out, item, images.as_deref_mut());
            }
            out.push(b']');
        }
        Json::Obj(members) => {
            if let Some(acc) = images.as_deref_mut()
                && v.get_str("type") == Some("image")
            {
                acc.tokens += f64::from(image_block_tokens(v));
                if acc.keep {
                    let start = out.len();
                    write_stripped(out, v, None);
                    acc.bytes += out.len() - start;
                } else {
                    out.extend_from_slice(b"null");
                }
                return;
            }
            out.push(b'{');
            let mut first = true;
            for (k, val) in members.iter().filter(|(k, _)| *k != "cache_control") {
                if !first {
                    out.push(b',');
                }
                first = false;
                writer::write_str(out, k);
                out.push(b':');
                write_stripped(out, val, images.as_deref_mut());
            }
            out.push(b'}');
        }
        scalar => writer::write(out, scalar),
    }
}

/// The identity of a block: xxh3-128 of its bytes without `cache_control`.
pub fn block_hash(block: &Json<'_>, scratch: &mut Vec<u8>) -> u128 {
    scratch.clear();
    write_stripped(scratch, block, None);
    xxh3_128(scratch)
}

/// The blocks of `body` in the order the API caches them: each tool, each
/// system block, then each message's content blocks (a string content is
/// one text block) — facts §1.1 "tools, then system, then messages".
/// Breakpoints are where `cache_control` sits: on a tool (facts §1.1 [TUPC]),
/// a system block or a message block. A top-level `cache_control` param
/// (automatic caching) marks the last block that can carry one, unless it
/// is already marked (facts §1.1, §1.2 "Automatic-caching edge cases").
/// Only a block's own `cache_control` counts; one nested inside a block
/// (e.g. in a tool result's content) is not a breakpoint here.
pub fn blocks_of(body: &Body<'_>, tokens: &dyn Fn(&Json<'_>, BlockKind) -> u32) -> Vec<SimBlock> {
    let mut out = Vec::with_capacity(body.messages.len() * 2 + body.system.len() + 32);
    let mut scratch = Vec::new();
    for_each_block(body, &mut |v, kind, place| {
        out.push(SimBlock {
            hash: block_hash(v, &mut scratch),
            tokens: tokens(v, kind),
            ttl: v.get("cache_control").and_then(Ttl::of_cache_control),
            kind,
            place,
            pinned: false,
        });
    });
    apply_automatic(body, &mut out);
    out
}

/// The estimator's input of one block, kept beside it: serialized bytes
/// without `cache_control` and without image data, and the image formula's
/// tokens of the images in it (see [`kind_features`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct BlockFeat {
    pub bytes: u32,
    pub image_tokens: u32,
    /// A `thinking` / `redacted_thinking` block.
    pub thinking: bool,
}

impl BlockFeat {
    /// As a feature vector for the block's `kind`.
    pub fn vector(self, kind: BlockKind) -> [f64; N_KINDS] {
        let mut f = [0.0; N_KINDS];
        if kind != BlockKind::Image {
            f[kind.index()] = f64::from(self.bytes);
        }
        f[BlockKind::Image.index()] += f64::from(self.image_tokens);
        f
    }
}

/// [`blocks_of`] with `tokens` left 0 and each block's [`BlockFeat`], from
/// one serialization per block (the hash covers the image data, the
/// features do not).
pub fn blocks_with_features(body: &Body<'_>) -> (Vec<SimBlock>, Vec<BlockFeat>) {
    let n = body.messages.len() * 2 + body.system.len() + 32;
    let (mut out, mut feats) = (Vec::with_capacity(n), Vec::with_capacity(n));
    let mut b = BlockBuilder::default();
    for_each_block(body, &mut |v, kind, place| b.push(v, kind, place, &mut out, &mut feats));
    apply_automatic(body, &mut out);
    (out, feats)
}

/// Builds [`SimBlock`]s and their [`BlockFeat`]s one segment at a time (a
/// tool, a system block, a message), for callers that reuse the blocks of a
/// segment unchanged across requests.
#[derive(Debug, Default)]
pub struct BlockBuilder {
    scratch: Vec<u8>,
}

impl BlockBuilder {
    /// Append the block `v`.
    pub fn push(
        &mut self,
        v: &Json<'_>,
        kind: BlockKind,
        place: Place,
        out: &mut Vec<SimBlock>,
        feats: &mut Vec<BlockFeat>,
    ) {
        self.scratch.clear();
        let mut acc = ImageAcc { keep: true, ..ImageAcc::default() };
        write_stripped(&mut self.scratch, v, Some(&mut acc));
        let text = self.scratch.len().saturating_sub(acc.bytes);
        out.push(SimBlock {
            hash: xxh3_128(&self.scratch),
            tokens: 0,
            ttl: v.get("cache_control").and_then(Ttl::of_cache_control),
            kind,
            place,
            pinned: false,
        });
        feats.push(BlockFeat {
            bytes: u32::try_from(text).unwrap_or(u32::MAX),
            image_tokens: acc.tokens.ceil().min(f64::from(u32::MAX)) as u32,
            thinking: matches!(v.get_str("type"), Some("thinking") | Some("redacted_thinking")),
        });
    }

    /// Append the blocks of message `m` (a string content is one text block).
    pub fn push_message(&mut self, m: &Json<'_>, out: &mut Vec<SimBlock>, feats: &mut Vec<BlockFeat>) {
        message_blocks(m, &mut |v, kind, place| self.push(v, kind, place, out, feats));
    }
}

/// What [`write_stripped`] does with image blocks when given one: add
/// their [`image_block_tokens`] to `tokens`, and either write them, counting
/// their bytes (`keep`), or write `null` in their place.
#[derive(Default)]
struct ImageAcc {
    tokens: f64,
    bytes: usize,
    keep: bool,
}

/// Call `f` on every block of `body` in cache order, with its kind and place.
fn for_each_block(body: &Body<'_>, f: &mut dyn FnMut(&Json<'_>, BlockKind, Place)) {
    if let Some(Json::Arr(tools)) = body.tools {
        for t in tools.iter() {
            f(t, BlockKind::Tool, Place::Tool);
        }
    }
    for s in &body.system {
        f(s, BlockKind::System, Place::System);
    }
    for m in &body.messages {
        message_blocks(m, f);
    }
}

/// Call `f` on every block of message `m`.
fn message_blocks(m: &Json<'_>, f: &mut dyn FnMut(&Json<'_>, BlockKind, Place)) {
    let role = Role::of(m.get_str("role"));
    match m.get("content") {
        Some(Json::Str(s)) => {
            // The string shorthand is one text block (the record replay
            // sends a one-block message as a string, README "assemble").
            let members = [("type", Json::Str("text")), ("text", Json::Str(s))];
            let block = Json::Obj(&members);
            let kind = if role == Role::System { BlockKind::System } else { BlockKind::Text };
            f(&block, kind, Place::Message { role, first: true });
        }
        Some(Json::Arr(items)) => {
            for (k, it) in items.iter().enumerate() {
                f(it, kind_of_message_block(it, role), Place::Message { role, first: k == 0 });
            }
        }
        _ => {}
    }
}

/// A top-level `cache_control` param (automatic caching) marks the last
/// block that can carry one, unless it is already marked (facts §1.1, §1.2
/// "Automatic-caching edge cases").
pub fn apply_automatic(body: &Body<'_>, out: &mut [SimBlock]) {
    let auto = body.params.iter().find(|(k, _)| *k == "cache_control").and_then(|(_, v)| Ttl::of_cache_control(v));
    let Some(ttl) = auto else { return };
    let mut last_markable = None;
    let mut i = 0;
    for_each_block(body, &mut |v, _, _| {
        if can_carry(v) {
            last_markable = Some(i);
        }
        i += 1;
    });
    if let Some(b) = last_markable.and_then(|i| out.get_mut(i))
        && b.ttl.is_none()
    {
        b.ttl = Some(ttl);
    }
}

// ---------------------------------------------------------------------------
// The simulator
// ---------------------------------------------------------------------------

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
}

impl Default for SimConfig {
    fn default() -> Self {
        SimConfig {
            lookback: 20,
            max_breakpoints: 4,
            min_lengths: builtin_min_cacheable().to_vec(),
            fallback_min: 1024,
            ready_delay_ms: 0,
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
    prefix: Vec<(u128, u64)>,
}

/// The cumulative key after `block`: the prefix key, where the block sits,
/// and its content hash.
#[inline]
fn chain(prev: u128, block: &SimBlock) -> u128 {
    let mut buf = [0u8; 33];
    buf[..16].copy_from_slice(&prev.to_le_bytes());
    buf[16] = block.place.tag();
    buf[17..].copy_from_slice(&block.hash.to_le_bytes());
    xxh3_128(&buf)
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
        for b in blocks {
            key = chain(key, b);
        }
        let now = req.at_ms;
        if self.entries.get(&key).is_some_and(|e| e.live(now)) {
            return false;
        }
        let ttl = blocks.last().and_then(|b| b.ttl).unwrap_or_default();
        self.entries.insert(key, Entry { ttl, ready_ms: now, expires_ms: now + ttl.millis() });
        true
    }

    /// Simulate one request, in time order after the previous ones.
    pub fn step(&mut self, req: &SimRequest) -> SimResult {
        let mut res = SimResult::default();
        let now = req.at_ms;
        self.totals.requests += 1;
        if now < self.last_ms {
            res.flags.out_of_order = true;
            self.totals.out_of_order += 1;
        }
        self.last_ms = self.last_ms.max(now);
        let total: u64 = req.blocks.iter().map(|b| u64::from(b.tokens)).sum();
        let bps: smallvec::SmallVec<[(usize, Ttl); 8]> =
            req.blocks.iter().enumerate().filter_map(|(i, b)| b.ttl.map(|t| (i, t))).collect();
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
        let (min, known) = self.min_for(&req.model);
        if !known {
            res.flags.unknown_model = true;
            self.totals.unknown_model += 1;
        }
        let Some(&(last, _)) = bps.last() else {
            // No breakpoint: nothing is read or written (facts §1.1).
            res.input = total;
            self.totals.input += total;
            return res;
        };
        // Cumulative keys and token sums through the last breakpoint; the
        // key starts from (scope, model): caches are per model and never
        // shared across organizations (facts §1.5, §1.7).
        self.prefix.clear();
        let mut key = xxh3_128_with_seed(req.model.as_bytes(), req.scope);
        let mut sum = 0u64;
        for b in &req.blocks[..=last] {
            key = chain(key, b);
            sum += u64::from(b.tokens);
            self.prefix.push((key, sum));
        }
        // facts §1.2: each breakpoint checks itself and walks back, at most
        // 20 positions, for an entry an earlier request wrote; a hit
        // refreshes the entry (facts §1.4 "Every read refreshes it").
        let mut hit: Option<usize> = None;
        for &(b, ttl) in &bps {
            let lo = (b + 1).saturating_sub(self.config.lookback.max(1));
            let found = (lo..=b).rev().find(|&j| self.entries.get(&self.prefix[j].0).is_some_and(|e| e.live(now)));
            if let Some(j) = found
                && let Some(e) = self.entries.get_mut(&self.prefix[j].0)
            {
                e.expires_ms = e.expires_ms.max(now + e.ttl.millis());
                hit = hit.max(Some(j));
                self.totals.hits += 1;
            }
            res.per_breakpoint.push(BreakpointOutcome {
                block: b,
                ttl,
                prefix_tokens: self.prefix[b].1,
                hit: found,
                written: 0,
                below_minimum: false,
            });
        }
        // facts §1.4 billing positions: reads through the highest hit; each
        // later breakpoint writes from the previous write at its own TTL
        // (1h writes B−A, 5m writes C−B when the order is right), if its
        // prefix reaches the model's minimum (facts §1.3: below it nothing
        // is cached, no error); input is what follows (facts §1.6).
        let read = hit.map_or(0, |j| self.prefix[j].1);
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
            let entry =
                Entry { ttl: out.ttl, ready_ms: now + self.config.ready_delay_ms, expires_ms: now + out.ttl.millis() };
            self.entries.insert(self.prefix[out.block].0, entry);
            self.totals.writes += 1;
        }
        res.cache_read = read;
        res.input = total.saturating_sub(upto);
        self.totals.cache_read += res.cache_read;
        self.totals.cache_write_5m += res.cache_write_5m;
        self.totals.cache_write_1h += res.cache_write_1h;
        self.totals.input += res.input;
        self.purge();
        res
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

// ---------------------------------------------------------------------------
// Token estimation
// ---------------------------------------------------------------------------

/// Tokens of an image whose size is unknown: the size above which the API
/// scales images down (~1,600 tokens, [VIS] below).
pub const IMAGE_TOKENS_UNKNOWN: u32 = 1600;

/// Tokens of a `width`×`height` image: `width*height/750`, after scaling
/// down (aspect kept) to a long edge of at most 1568 px and at most ~1,600
/// tokens. Source [VIS]: the vision guide, https://docs.claude.com/en/docs/vision
/// "Evaluate image size" (not in the facts file; see the open questions).
pub fn image_tokens(width: u32, height: u32) -> u32 {
    let (w, h) = (f64::from(width), f64::from(height));
    let long = w.max(h);
    let mut scale = if long > 1568.0 { 1568.0 / long } else { 1.0 };
    let at = |s: f64| (w * s) * (h * s) / 750.0;
    if at(scale) > f64::from(IMAGE_TOKENS_UNKNOWN) {
        scale *= (f64::from(IMAGE_TOKENS_UNKNOWN) / at(scale)).sqrt();
    }
    at(scale).ceil().min(f64::from(IMAGE_TOKENS_UNKNOWN)) as u32
}

/// Tokens of an image block: [`image_tokens`] of its size when the base64
/// data's header gives one (PNG, GIF, WebP, JPEG), else
/// [`IMAGE_TOKENS_UNKNOWN`].
pub fn image_block_tokens(block: &Json<'_>) -> u32 {
    image_dims(block).map_or(IMAGE_TOKENS_UNKNOWN, |(w, h)| image_tokens(w, h))
}

/// Width and height of a base64 image block, from the image's header.
pub fn image_dims(block: &Json<'_>) -> Option<(u32, u32)> {
    use base64::Engine;
    let source = block.get("source")?;
    let data = source.get_str("data")?;
    let decode = |n: usize| {
        let part = data.get(..n.min(data.len()) / 4 * 4)?;
        base64::engine::general_purpose::STANDARD.decode(part).ok()
    };
    let head = decode(64)?;
    let be16 = |b: &[u8], i: usize| Some(u32::from(u16::from_be_bytes([*b.get(i)?, *b.get(i + 1)?])));
    let le16 = |b: &[u8], i: usize| Some(u32::from(u16::from_le_bytes([*b.get(i)?, *b.get(i + 1)?])));
    let le24 = |b: &[u8], i: usize| Some(u32::from_le_bytes([*b.get(i)?, *b.get(i + 1)?, *b.get(i + 2)?, 0]));
    if head.starts_with(b"\x89PNG\r\n\x1a\n") {
        let w = u32::from_be_bytes(head.get(16..20)?.try_into().ok()?);
        let h = u32::from_be_bytes(head.get(20..24)?.try_into().ok()?);
        return Some((w, h));
    }
    if head.starts_with(b"GIF8") {
        return Some((le16(&head, 6)?, le16(&head, 8)?));
    }
    if head.starts_with(b"RIFF") && head.get(8..12) == Some(b"WEBP") {
        return match head.get(12..16)? {
            b"VP8 " => Some((le16(&head, 26)? & 0x3fff, le16(&head, 28)? & 0x3fff)),
            b"VP8L" => {
                let b = head.get(21..25)?;
                let (b0, b1, b2, b3) = (u32::from(b[0]), u32::from(b[1]), u32::from(b[2]), u32::from(b[3]));
                Some((1 + (b0 | (b1 & 0x3f) << 8), 1 + (b1 >> 6 | b2 << 2 | (b3 & 0xf) << 10)))
            }
            b"VP8X" => Some((1 + le24(&head, 24)?, 1 + le24(&head, 27)?)),
            _ => None,
        };
    }
    if head.starts_with(b"\xff\xd8") {
        let all = decode(data.len())?;
        let mut i = 2;
        while i + 4 <= all.len() {
            if all[i] != 0xff {
                i += 1;
                continue;
            }
            let m = all[i + 1];
            if m == 0xff || m == 0x01 || (0xd0..=0xd9).contains(&m) {
                i += if m == 0xff { 1 } else { 2 };
                continue;
            }
            let len = be16(&all, i + 2)? as usize;
            if (0xc0..=0xcf).contains(&m) && !matches!(m, 0xc4 | 0xc8 | 0xcc) {
                return Some((be16(&all, i + 7)?, be16(&all, i + 5)?));
            }
            i += 2 + len;
        }
    }
    None
}

/// The estimator's input for one block: serialized bytes (without
/// `cache_control`) in the slot of `kind`, and the image formula's tokens
/// of any image in it in the [`BlockKind::Image`] slot.
pub fn kind_features(block: &Json<'_>, kind: BlockKind) -> [f64; N_KINDS] {
    let mut f = [0.0; N_KINDS];
    let mut images = ImageAcc::default();
    let mut buf = Vec::new();
    write_stripped(&mut buf, block, Some(&mut images));
    if kind != BlockKind::Image {
        f[kind.index()] = buf.len() as f64;
    }
    f[BlockKind::Image.index()] += images.tokens;
    f
}

/// Tokens from bytes, by content kind (facts §5: no public tokenizer for
/// current models; chars/3.5–4 is the usual proxy, reconciled from usage).
/// For [`BlockKind::Image`] the feature is the image formula's tokens, so its
/// entry is a correction factor (1 = the formula as documented).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Estimator {
    pub bytes_per_token: [f64; N_KINDS],
}

impl Default for Estimator {
    /// 4 bytes per token, images by the formula.
    fn default() -> Self {
        Estimator::uniform(4.0)
    }
}

impl Estimator {
    /// `bytes_per_token` for every byte kind; images by the formula.
    pub fn uniform(bytes_per_token: f64) -> Self {
        let mut b = [bytes_per_token; N_KINDS];
        b[BlockKind::Image.index()] = 1.0;
        Estimator { bytes_per_token: b }
    }

    /// Tokens for a feature vector (see [`kind_features`]), unrounded.
    pub fn estimate_features(&self, f: &[f64; N_KINDS]) -> f64 {
        f.iter().zip(&self.bytes_per_token).map(|(x, b)| if *b > 0.0 { x / b } else { 0.0 }).sum()
    }

    /// Tokens of one block, rounded up.
    pub fn estimate(&self, block: &Json<'_>, kind: BlockKind) -> u32 {
        let t = self.estimate_features(&kind_features(block, kind)).ceil();
        if t.is_finite() { t.clamp(0.0, f64::from(u32::MAX)) as u32 } else { 0 }
    }

    /// `self` as the callback [`blocks_of`] takes.
    pub fn tokens_fn(&self) -> impl Fn(&Json<'_>, BlockKind) -> u32 + '_ {
        move |b, k| self.estimate(b, k)
    }

    /// Least-squares fit of tokens-per-feature with every coefficient ≥ 0
    /// (Lawson–Hanson active set on the normal equations, N ≤ 6) from
    /// samples of (features summed over a prompt, its recorded tokens).
    /// A kind that never occurs keeps the default; a kind fitted to 0
    /// tokens gets `f64::INFINITY` bytes per token.
    pub fn fit(samples: &[([f64; N_KINDS], f64)]) -> Estimator {
        let mut g = [[0.0; N_KINDS]; N_KINDS];
        let mut rhs = [0.0; N_KINDS];
        for (x, y) in samples {
            for i in 0..N_KINDS {
                rhs[i] += x[i] * y;
                for j in 0..N_KINDS {
                    g[i][j] += x[i] * x[j];
                }
            }
        }
        let coef = nnls(&g, &rhs);
        let default = Estimator::default();
        let mut out = default;
        for k in 0..N_KINDS {
            out.bytes_per_token[k] = if g[k][k] <= 0.0 {
                default.bytes_per_token[k]
            } else if coef[k] > 0.0 {
                1.0 / coef[k]
            } else {
                f64::INFINITY
            };
        }
        out
    }
}

/// Solve `g[set,set] x = rhs[set]` (zeros outside `set`) by Gaussian
/// elimination with partial pivoting; `None` when singular.
fn solve_on(g: &[[f64; N_KINDS]; N_KINDS], rhs: &[f64; N_KINDS], set: &[bool; N_KINDS]) -> Option<[f64; N_KINDS]> {
    let idx: smallvec::SmallVec<[usize; N_KINDS]> = (0..N_KINDS).filter(|&k| set[k]).collect();
    let n = idx.len();
    let mut a = [[0.0; N_KINDS + 1]; N_KINDS];
    for (r, &i) in idx.iter().enumerate() {
        for (c, &j) in idx.iter().enumerate() {
            a[r][c] = g[i][j];
        }
        a[r][n] = rhs[i];
    }
    let scale = (0..n).map(|r| a[r][r].abs()).fold(0.0, f64::max);
    for col in 0..n {
        let piv = (col..n).max_by(|&x, &y| a[x][col].abs().total_cmp(&a[y][col].abs()))?;
        if a[piv][col].abs() <= 1e-12 * scale {
            return None;
        }
        a.swap(col, piv);
        let pivot = a[col];
        for (r, row) in a.iter_mut().enumerate().take(n) {
            if r != col {
                let f = row[col] / pivot[col];
                for (x, p) in row.iter_mut().zip(&pivot).take(n + 1).skip(col) {
                    *x -= f * p;
                }
            }
        }
    }
    let mut x = [0.0; N_KINDS];
    for (r, &i) in idx.iter().enumerate() {
        x[i] = a[r][n] / a[r][r];
    }
    Some(x)
}

/// Non-negative least squares from the normal equations `g x = rhs`
/// (Lawson & Hanson 1974, ch. 23).
fn nnls(g: &[[f64; N_KINDS]; N_KINDS], rhs: &[f64; N_KINDS]) -> [f64; N_KINDS] {
    let mut x = [0.0; N_KINDS];
    let mut set = [false; N_KINDS];
    let mut barred = [false; N_KINDS];
    let tol = 1e-12 * rhs.iter().fold(0.0f64, |m, v| m.max(v.abs())).max(1e-300);
    for _ in 0..4 * N_KINDS {
        let grad = |x: &[f64; N_KINDS], k: usize| rhs[k] - (0..N_KINDS).map(|j| g[k][j] * x[j]).sum::<f64>();
        let Some(t) = (0..N_KINDS)
            .filter(|&k| !set[k] && !barred[k] && g[k][k] > 0.0 && grad(&x, k) > tol)
            .max_by(|&a, &b| grad(&x, a).total_cmp(&grad(&x, b)))
        else {
            break;
        };
        set[t] = true;
        for _ in 0..4 * N_KINDS {
            let Some(s) = solve_on(g, rhs, &set) else {
                // Collinear with the set: this kind adds nothing.
                set[t] = false;
                barred[t] = true;
                break;
            };
            if (0..N_KINDS).filter(|&k| set[k]).all(|k| s[k] > 0.0) {
                x = s;
                break;
            }
            let alpha =
                (0..N_KINDS).filter(|&k| set[k] && s[k] <= 0.0).map(|k| x[k] / (x[k] - s[k])).fold(1.0f64, f64::min);
            for k in 0..N_KINDS {
                x[k] += alpha * (s[k] - x[k]);
                if set[k] && x[k] <= 1e-15 {
                    set[k] = false;
                    x[k] = 0.0;
                }
            }
        }
    }
    x
}

// ---------------------------------------------------------------------------
// Exact counts from recorded usage
// ---------------------------------------------------------------------------

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
pub fn pin_chain(arena: &mut [SimBlock], steps: &[ChainStep], totals: &[Option<u64>]) -> PinReport {
    let mut report = PinReport::default();
    let mut cur: Vec<usize> = Vec::new();
    let mut open: Vec<usize> = Vec::new();
    for (i, step) in steps.iter().enumerate() {
        cur.truncate(step.keep);
        cur.extend(step.added.clone());
        let Some(total) = totals.get(i).copied().flatten() else { continue };
        report.requests_with_usage += 1;
        let known: u64 =
            cur.iter().filter_map(|&p| arena.get(p)).filter(|b| b.pinned).map(|b| u64::from(b.tokens)).sum();
        open.clear();
        open.extend(cur.iter().copied().filter(|&p| arena.get(p).is_some_and(|b| !b.pinned)));
        if total < known || (open.is_empty() && total != known) {
            report.inconsistent += 1;
            continue;
        }
        if !open.is_empty() {
            spread(total - known, arena, &open);
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
    use crate::cost::pricing::min_cacheable_tokens;
    use crate::json::LineParser;
    use crate::time::parse_timestamp_ms;
    use bumpalo::Bump;

    const MIN: u64 = 60 * 1000;

    /// A system-place block `id` of `tokens` tokens.
    fn blk(id: u128, tokens: u32, ttl: Option<Ttl>) -> SimBlock {
        SimBlock { hash: id, tokens, ttl, kind: BlockKind::Text, place: Place::System, pinned: false }
    }

    fn req(at_ms: u64, model: &str, blocks: Vec<SimBlock>) -> SimRequest {
        SimRequest { at_ms, model: model.into(), scope: 0, blocks }
    }

    const M5: Option<Ttl> = Some(Ttl::FiveMinutes);
    const H1: Option<Ttl> = Some(Ttl::OneHour);
    /// Minimum 1,024 (facts §1.3).
    const SONNET: &str = "claude-sonnet-4-5-20250929";

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
        // Exactly 5 min after the last use: gone, written again.
        let r = sim.step(&req(13 * MIN, SONNET, prefix_2000(M5)));
        assert_eq!((r.cache_read, r.cache_write_5m), (0, 2000));
        // A 1h entry survives 59 min without use, not 61.
        let mut sim = CacheSim::default();
        assert_eq!(sim.step(&req(0, SONNET, prefix_2000(H1))).cache_write_1h, 2000);
        assert_eq!(sim.step(&req(59 * MIN, SONNET, prefix_2000(H1))).cache_read, 2000);
        assert_eq!(sim.step(&req(59 * MIN + 61 * MIN, SONNET, prefix_2000(H1))).cache_write_1h, 2000);
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

    fn parse<'a>(bump: &'a Bump, s: &str) -> &'a Json<'a> {
        bump.alloc(LineParser::new().parse(bump, s.as_bytes()).unwrap())
    }

    #[test]
    fn blocks_with_features_agrees_with_blocks_of_and_kind_features() {
        let bump = Bump::new();
        // A 2x3 PNG: the header gives its size; its data counts as image tokens, not bytes.
        let img = parse(
            &bump,
            r#"{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBORw0KGgoAAAANSUhEUgAAAAIAAAADCAYAAAC56t6BAAAAEElEQVR4nGNgYPj/H4QZGAA"}}"#,
        );
        let text = parse(&bump, r#"{"type":"text","text":"look","cache_control":{"type":"ephemeral"}}"#);
        let content = Json::Arr(bump.alloc_slice_copy(&[*img, *text]));
        let m = Json::Obj(bump.alloc_slice_copy(&[("role", Json::Str("user")), ("content", content)]));
        let sys = parse(&bump, r#"{"type":"text","text":"system text"}"#);
        let mut body = Body::from_messages(vec![bump.alloc(m)]);
        body.system = vec![sys];
        let est = Estimator::uniform(1.0);
        let by_tokens = blocks_of(&body, &est.tokens_fn());
        let (blocks, feats) = blocks_with_features(&body);
        assert_eq!(
            blocks.iter().map(|b| (b.hash, b.ttl, b.kind)).collect::<Vec<_>>(),
            by_tokens.iter().map(|b| (b.hash, b.ttl, b.kind)).collect::<Vec<_>>()
        );
        let sys_bytes = br#"{"type":"text","text":"system text"}"#.len() as u32;
        let text_bytes = br#"{"type":"text","text":"look"}"#.len() as u32;
        assert_eq!(
            feats,
            [
                BlockFeat { bytes: sys_bytes, image_tokens: 0, thinking: false },
                BlockFeat { bytes: 0, image_tokens: image_tokens(2, 3), thinking: false },
                BlockFeat { bytes: text_bytes, image_tokens: 0, thinking: false },
            ]
        );
        for ((b, f), t) in blocks.iter().zip(&feats).zip(&by_tokens) {
            assert_eq!(
                f.vector(b.kind),
                kind_features(
                    match b.kind {
                        BlockKind::Image => img,
                        BlockKind::System => sys,
                        _ => text,
                    },
                    b.kind
                )
            );
            assert_eq!(est.estimate_features(&f.vector(b.kind)).ceil() as u32, t.tokens);
        }
    }

    #[test]
    fn blocks_of_flattens_tools_system_messages_with_breakpoints() {
        let bump = Bump::new();
        let tools = parse(&bump, r#"[{"name":"a"},{"name":"b","cache_control":{"type":"ephemeral","ttl":"1h"}}]"#);
        let sys = parse(&bump, r#"{"type":"text","text":"sys","cache_control":{"type":"ephemeral"}}"#);
        let m0 = parse(&bump, r#"{"role":"user","content":"hi"}"#);
        let m1 = parse(
            &bump,
            r#"{"role":"assistant","content":[{"type":"thinking","thinking":"t"},{"type":"tool_use","id":"x","name":"a","input":{}}]}"#,
        );
        let m2 = parse(
            &bump,
            r#"{"role":"user","content":[{"type":"tool_result","tool_use_id":"x","content":"ok","cache_control":{"type":"ephemeral"}}]}"#,
        );
        let m3 = parse(&bump, r#"{"role":"user","content":[{"type":"text","text":"hi"}]}"#);
        let mut body = Body::from_messages(vec![m0, m1, m2, m3]);
        body.tools = Some(tools);
        body.system = vec![sys];
        let b = blocks_of(&body, &|_, k| if k == BlockKind::Tool { 100 } else { 10 });
        let got: Vec<_> = b.iter().map(|b| (b.kind, b.ttl, b.place, b.tokens)).collect();
        let msg = |role, first| Place::Message { role, first };
        assert_eq!(
            got,
            [
                (BlockKind::Tool, None, Place::Tool, 100),
                (BlockKind::Tool, H1, Place::Tool, 100),
                (BlockKind::System, M5, Place::System, 10),
                (BlockKind::Text, None, msg(Role::User, true), 10),
                (BlockKind::Text, None, msg(Role::Assistant, true), 10),
                (BlockKind::ToolUse, None, msg(Role::Assistant, false), 10),
                (BlockKind::ToolResult, M5, msg(Role::User, true), 10),
                (BlockKind::Text, None, msg(Role::User, true), 10),
            ]
        );
        // A string content is the text block it stands for; cache_control
        // does not change a block's identity.
        assert_eq!(b[3].hash, b[7].hash);
        let bare = parse(&bump, r#"{"type":"tool_result","tool_use_id":"x","content":"ok"}"#);
        assert_eq!(b[6].hash, block_hash(bare, &mut Vec::new()));
        // Automatic caching marks the last block that can carry it.
        let cc = *parse(&bump, r#"{"type":"ephemeral"}"#);
        let mut auto = Body::from_messages(vec![m1]);
        auto.params = vec![("cache_control", cc)];
        let b = blocks_of(&auto, &|_, _| 1);
        assert_eq!(b.iter().map(|b| b.ttl).collect::<Vec<_>>(), [None, M5]);
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

    #[test]
    fn image_tokens_follow_the_vision_formula() {
        assert_eq!(image_tokens(200, 200), 54);
        assert_eq!(image_tokens(1092, 1092), 1590);
        assert_eq!(image_tokens(1000, 1000), 1334);
        assert!(image_tokens(4000, 3000) <= IMAGE_TOKENS_UNKNOWN);
        assert!(image_tokens(4000, 3000) >= IMAGE_TOKENS_UNKNOWN - 2);
        use base64::Engine;
        let mut png = b"\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR".to_vec();
        png.extend(1092u32.to_be_bytes());
        png.extend(546u32.to_be_bytes());
        png.extend([8, 6, 0, 0, 0]);
        let data = base64::engine::general_purpose::STANDARD.encode(&png);
        let bump = Bump::new();
        let img =
            format!(r#"{{"type":"image","source":{{"type":"base64","media_type":"image/png","data":"{data}"}}}}"#);
        let img = parse(&bump, &img);
        assert_eq!(image_dims(img), Some((1092, 546)));
        assert_eq!(Estimator::default().estimate(img, BlockKind::Image), 795);
        let jpeg = [0xff, 0xd8, 0xff, 0xe0, 0, 4, 0, 0, 0xff, 0xc0, 0, 11, 8, 0, 100, 0, 200, 3, 0, 0, 0];
        let data = base64::engine::general_purpose::STANDARD.encode(jpeg);
        let j = format!(r#"{{"type":"image","source":{{"type":"base64","data":"{data}"}}}}"#);
        assert_eq!(image_dims(parse(&bump, &j)), Some((200, 100)));
        // An image inside a tool result counts by the formula, the rest by bytes.
        let tr = format!(r#"{{"type":"tool_result","content":[{}]}}"#, img.to_compact_string());
        let f = kind_features(parse(&bump, &tr), BlockKind::ToolResult);
        assert_eq!(f[BlockKind::Image.index()], 795.0);
        assert_eq!(f[BlockKind::ToolResult.index()], r#"{"type":"tool_result","content":[null]}"#.len() as f64);
        let unknown = parse(&bump, r#"{"type":"image","source":{"type":"url","url":"x"}}"#);
        assert_eq!(image_block_tokens(unknown), IMAGE_TOKENS_UNKNOWN);
    }

    #[test]
    fn estimator_default_and_fit() {
        let bump = Bump::new();
        let t = parse(&bump, r#"{"type":"text","text":"hello world"}"#);
        // 36 bytes / 4 = 9 tokens.
        assert_eq!(Estimator::default().estimate(t, BlockKind::Text), 9);
        // tokens = text/4 + tool_use/2.5 + tools/3 exactly; no system data.
        let truth = [0.25, 0.4, 0.0, 1.0, 0.0, 1.0 / 3.0];
        let samples: Vec<([f64; N_KINDS], f64)> = (0..20)
            .map(|i| {
                let i = f64::from(i);
                let x = [100.0 + 37.0 * i, 50.0 * (i % 3.0), 0.0, 0.0, 0.0, 900.0 + 11.0 * i * i];
                (x, x.iter().zip(&truth).map(|(a, b)| a * b).sum())
            })
            .collect();
        let e = Estimator::fit(&samples);
        assert!((e.bytes_per_token[0] - 4.0).abs() < 1e-6, "{e:?}");
        assert!((e.bytes_per_token[1] - 2.5).abs() < 1e-6, "{e:?}");
        assert!((e.bytes_per_token[5] - 3.0).abs() < 1e-6, "{e:?}");
        assert_eq!(e.bytes_per_token[BlockKind::System.index()], 4.0);
        assert_eq!(e.bytes_per_token[BlockKind::Image.index()], 1.0);
        // A kind whose unconstrained coefficient would be negative is held at 0.
        let samples = [([10.0, 10.0, 0.0, 0.0, 0.0, 0.0], 5.0), ([10.0, 0.0, 0.0, 0.0, 0.0, 0.0], 6.0)];
        let e = Estimator::fit(&samples);
        assert_eq!(e.bytes_per_token[1], f64::INFINITY);
        assert!((e.bytes_per_token[0] - 200.0 / 110.0).abs() < 1e-9, "{e:?}");
    }

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
