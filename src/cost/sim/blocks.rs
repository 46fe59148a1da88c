//! A request's prompt as the cache sees it: [`blocks_of`] and
//! [`BlockBuilder`] flatten a [`Body`] into [`SimBlock`]s in the API's order
//! (tools → system → messages, facts §1.1), each identified by the xxh3-128
//! of its bytes without `cache_control`, with its breakpoint, kind and
//! place; [`BlockFeat`] keeps the estimator's input of each block beside it.
//!
//! No token counting beyond the image formula's (in `estimate`), no cache
//! state (that is `cache`).

use super::estimate::image_block_tokens;
use crate::assemble::Body;
use crate::json::Json;
use crate::json::writer;
use xxhash_rust::xxh3::xxh3_128;

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

/// Number of content kinds the [`Estimator`](super::Estimator) tells apart.
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

    /// Index into [`Estimator::bytes_per_token`](super::Estimator::bytes_per_token).
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
    pub(super) fn tag(self) -> u8 {
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
    /// `tokens` comes from recorded usage ([`exact_from_usage`](super::exact_from_usage)), not an estimate.
    pub pinned: bool,
    /// Not in the prompt the API reads (an earlier turn's thinking it
    /// drops, facts §1.5): its prefix is the block before's, and it is no
    /// position of the 20-block lookback (facts §1.2).
    pub dropped: bool,
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
    /// The thinking config's identity (0: none known): another one
    /// invalidates the messages cache (facts §1.5), see
    /// [`PrefixKeys`](super::PrefixKeys).
    pub thinking: u64,
    pub blocks: Vec<SimBlock>,
    /// When what it writes becomes usable, in ms since the epoch: once
    /// its response has started (facts §1.4 "Parallel fan-out"); 0 = at
    /// its start (plus [`SimConfig::ready_delay_ms`](super::SimConfig)).
    pub ready_ms: u64,
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
pub(super) fn write_stripped(out: &mut Vec<u8>, v: &Json<'_>, mut images: Option<&mut ImageAcc>) {
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
            dropped: false,
        });
    });
    apply_automatic(body, &mut out);
    out
}

/// The estimator's input of one block, kept beside it: serialized bytes
/// without `cache_control` and without image data, and the image formula's
/// tokens of the images in it (see [`kind_features`](super::kind_features)).
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
            dropped: false,
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
pub(super) struct ImageAcc {
    pub(super) tokens: f64,
    pub(super) bytes: usize,
    pub(super) keep: bool,
}

/// Call `f` on every block of `body` in cache order, with its kind and place.
fn for_each_block(body: &Body<'_>, f: &mut dyn FnMut(&Json<'_>, BlockKind, Place)) {
    if let Some(Json::Arr(tools)) = body.tools {
        for t in tools.iter() {
            f(t, BlockKind::Tool, Place::Tool);
        }
    }
    for s in body.system.iter() {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cost::sim::test_util::*;
    use crate::cost::sim::*;
    use bumpalo::Bump;

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
        body.system = vec![sys].into();
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
        body.system = vec![sys].into();
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
        auto.params = vec![("cache_control", cc)].into();
        let b = blocks_of(&auto, &|_, _| 1);
        assert_eq!(b.iter().map(|b| b.ttl).collect::<Vec<_>>(), [None, M5]);
    }
}
