//! Pass 1 (in parallel, per session): every chain of a session (the main
//! conversation, each subagent) stored once, as an arena of [`SimBlock`]s
//! and per request a [`ChainStep`], each request matched to the usage
//! recorded on the assistant message it produced; the unseen prefix and
//! the dropped thinking blocks of the module docs are applied here.
//!
//! Token counts are left 0 (pass 2 gives them); nothing is simulated.

use super::options::ModelOptions;
use super::store::ChainStore;
use crate::assemble::{Assembler, assemble_session};
use crate::assemble::{Body, Request};
use crate::corpus::{RunOptions, Session, stream_sessions};
use crate::cost::sim::{BlockBuilder, BlockFeat, BlockKind, ChainStep, Place, Role, SimBlock, Ttl, apply_automatic};
use crate::cost::tokens::TokenCounts;
use crate::cost::usage;
use crate::diag::Diagnostic;
use crate::input::discover::Discovery;
use crate::json::Json;
use crate::model::content::{BlockKind as ContentKind, Content, ToolResultContent};
use crate::model::entry::Entry;
use crate::time::parse_timestamp_ms;
use rustc_hash::FxHashMap;
use std::sync::Arc;
use xxhash_rust::xxh3::xxh3_64;

/// A request's `custom_id`, compact: nearly always its chain's
/// [`ChainIn::id_prefix`] and a number (`<session>_<n>`,
/// `<session>_<agent>_<n>`), else written out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum ReqId {
    Index(u32),
    Full(Box<str>),
}

impl ReqId {
    /// `custom_id` in a chain whose ids start with `prefix`.
    fn of(custom_id: &str, prefix: &str) -> ReqId {
        match custom_id.strip_prefix(prefix).and_then(|n| n.parse::<u32>().ok().filter(|v| v.to_string() == n)) {
            Some(n) => ReqId::Index(n),
            None => ReqId::Full(custom_id.into()),
        }
    }

    /// The `custom_id` written out.
    pub(super) fn render(&self, prefix: &str) -> String {
        match self {
            ReqId::Index(n) => format!("{prefix}{n}"),
            ReqId::Full(s) => s.to_string(),
        }
    }
}

/// One request of a chain.
#[derive(Debug, Clone)]
pub(super) struct ReqIn {
    /// Its `custom_id` (see [`ReqId::render`]).
    pub(super) id: ReqId,
    pub(super) at_ms: u64,
    /// When its response started (its first line's time in the
    /// pipeline, which is not before `at_ms`): what it writes is usable
    /// from then (facts §1.4 "Parallel fan-out"); 0 = at `at_ms`.
    pub(super) ready_ms: u64,
    /// Shared by the requests of a chain that name the same model.
    pub(super) model: Arc<str>,
    pub(super) recorded: Option<TokenCounts>,
    /// The recorded response's message id, hashed: the same API request in
    /// two session files (a copied or resumed session) has the same one.
    pub(super) usage_key: Option<u64>,
    pub(super) step: ChainStep,
    /// Blocks in the request (`keep` + added).
    pub(super) len: usize,
    /// Its thinking config's identity (0: none known; see [`Mark`]).
    pub(super) thinking: u64,
}

/// One chain stored once.
#[derive(Debug, Default, Clone)]
pub(super) struct ChainIn {
    pub(super) session: usize,
    pub(super) arena: Vec<SimBlock>,
    pub(super) feats: Vec<BlockFeat>,
    /// What the `custom_id`s of its requests start with (to the last `_`
    /// of its first request's).
    pub(super) id_prefix: Box<str>,
    /// Arena index of the unseen prefix's first block (its first
    /// request's; the second follows it, see [`unseen_blocks`]).
    pub(super) unseen: Option<usize>,
    /// Arena indices of the unseen prefix's first block in requests built
    /// again from their first block (after deferred tools were loaded, or a
    /// change the request before does not share): the same sizes.
    pub(super) unseen_again: Vec<usize>,
    /// An excerpt of a longer conversation ([`excerpt_parent`]): its first
    /// request's unseen prefix holds the messages before it, which the
    /// requests before it (not in the corpus) wrote.
    pub(super) excerpt: bool,
    pub(super) reqs: Vec<ReqIn>,
}

impl ChainIn {
    /// Which block of the unseen prefix arena block `i` is (0 or 1), if it
    /// is one.
    pub(super) fn unseen_part(&self, i: usize) -> Option<usize> {
        unseen_part(self.unseen, &self.unseen_again, i)
    }
}

/// [`ChainIn::unseen_part`] of a chain's `unseen` and `unseen_again`
/// (for a caller holding its arena mutably).
pub(super) fn unseen_part(unseen: Option<usize>, again: &[usize], i: usize) -> Option<usize> {
    let first = |u: usize| (i >= u && i < u + 2).then(|| i - u);
    unseen.and_then(first).or_else(|| {
        let k = again.partition_point(|&u| u + 1 < i);
        again.get(k).copied().and_then(first)
    })
}

/// What pass 1 keeps of a session.
#[derive(Debug, Default)]
pub(super) struct SessionIn {
    pub(super) session_id: String,
    pub(super) project: String,
    pub(super) scope_root: u64,
    pub(super) scope_project: u64,
    pub(super) scope_session: u64,
    pub(super) by_pipeline: bool,
    pub(super) unseen_prompt: bool,
    /// Its first prompt as a person typed it, trimmed ([`first_prompt`]).
    pub(super) title: Option<String>,
    /// Its first entry's timestamp, as written.
    pub(super) started: Option<String>,
    /// Its first file by path (where discovery puts the session), lossy.
    pub(super) first_file: String,
    pub(super) diagnostics: Vec<Diagnostic>,
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
    let id = crate::cost::pricing::normalize_model_id(model);
    !KEEPS_THINKING.iter().any(|p| id.starts_with(p))
}

/// Hash mark of a thinking block the API dropped.
const STRIPPED: u128 = 0x5354_5249_5050_4544_5448_494e_4b49_4e47;

/// Hash mark of a prompt's first block while the attachments its release
/// sends with it (and not again, see [`ReleaseTraits`]) are in the request.
///
/// [`ReleaseTraits`]: crate::profile::ReleaseTraits
const ATTACHED: u128 = 0x4154_5441_4348_4d45_4e54_5320_4f4e_4345;

/// The thinking config of a turn whose responses think, when the request
/// does not say it (see [`Mark`]).
const THINKING_ON: u64 = 0x5448_494e_4b49_4e47;

/// A model the CLI sends adaptive thinking for (`{"type":"adaptive"}`: one
/// config for every turn; the captures: 2.1.88 with Sonnet 4.6, 2.1.328
/// with Opus 5.5 and Sonnet 5.5): those that keep earlier thinking
/// ([`KEEPS_THINKING`]) but Opus 4.5. Earlier models get a budget per
/// prompt (see [`Mark`]).
fn adaptive_thinking(model: &str) -> bool {
    let id = crate::cost::pricing::normalize_model_id(model);
    !strips_old_thinking(model) && !id.starts_with("claude-opus-4-5")
}

/// What a request sent that its pipeline body does not say, per request of
/// a chain, one value for the requests of a prompt (a turn: the prompt's
/// request and the tool results after it).
///
/// - `attached`: the message (index) of the turn's prompt in a session the
///   2.0 VS Code extension drove (its prompts carry IDE context blocks; it
///   runs the CLI with stream-json input) of a release that sends a
///   prompt's attachments there with that prompt only
///   ([`ReleaseTraits::attachments_one_prompt`]). Its first block is marked
///   [`ATTACHED`] in the turn's requests, so the next prompt's request
///   differs from there. Every prompt: the extension's prompts come with
///   the IDE's context (public 2.0.5 extension session: each of its nine
///   prompts that has a next one was sent differently by it, the next
///   prompt reading at most the messages before it).
/// - `thinking`: the thinking config of a chain whose prompt is unseen (a
///   release without a profile) on a model without adaptive thinking:
///   releases to 2.1.0 at least send `thinking` with a budget only for the
///   prompts that ask for it ("think", "think hard", "ultrathink": captured
///   1.0.24 to 2.1.0) and none for the others, and a change invalidates the
///   messages cache (facts §1.5). A turn any of whose responses holds a
///   thinking block was sent with it ([`THINKING_ON`]); one whose responses
///   hold none, without (0). (Public 1.0.24 and 1.0.43: the prompts that
///   asked read only the system prompt, having followed turns without
///   thinking by seconds.) Budgets are not told apart.
///
/// [`ReleaseTraits::attachments_one_prompt`]: crate::profile::ReleaseTraits::attachments_one_prompt
///
/// `mention`: an `attached` prompt @-mentions a path: its attachment is a
/// message of its own before it ("Called the Read tool"), which carries the
/// second-to-last breakpoint of the prompt's request (releases marking the
/// last two messages), so that breakpoint goes when the attachment does.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Mark {
    attached: Option<usize>,
    mention: bool,
    thinking: u64,
}

/// What [`turn_marks`] needs of a session.
struct MarkRules<'f> {
    attachments_one_prompt: bool,
    /// The IDE drove the session (see [`Mark`]).
    ide: bool,
    /// The thinking config is inferred (the prompt is unseen).
    infer_thinking: bool,
    /// The response to a request holds a thinking block.
    thought: &'f dyn Fn(&Request<'_>) -> bool,
}

/// A message a person sent: a user message with content other than tool
/// results (what the user types after refusing a tool call is in the same
/// message as the refusal's result).
fn is_prompt(m: &Json<'_>) -> bool {
    if m.get_str("role") != Some("user") {
        return false;
    }
    match m.get("content") {
        Some(Json::Str(_)) => true,
        Some(Json::Arr(items)) => items.iter().any(|b| b.get_str("type") != Some("tool_result")),
        _ => false,
    }
}

/// A prompt text that @-mentions a path (`@README.md`, `@src/`): `@` at
/// the start or after white space, something after it.
fn mentions_path(m: &Json<'_>) -> bool {
    let mentions = |t: &str| {
        let b = t.as_bytes();
        b.iter().enumerate().any(|(i, &c)| {
            c == b'@'
                && (i == 0 || b[i - 1].is_ascii_whitespace())
                && b.get(i + 1).is_some_and(|n| !n.is_ascii_whitespace())
        })
    };
    match m.get("content") {
        Some(Json::Str(t)) => mentions(t),
        Some(Json::Arr(items)) => {
            items.iter().any(|b| b.get_str("type") == Some("text") && b.get_str("text").is_some_and(mentions))
        }
        _ => false,
    }
}

/// A prompt with an IDE context block (`<ide_opened_file>`,
/// `<ide_selection>`, …) as the 2.0 extension sends them.
fn has_ide_context(m: &Json<'_>) -> bool {
    let ide = |t: &str| t.trim_start().starts_with("<ide_");
    match m.get("content") {
        Some(Json::Str(t)) => ide(t),
        Some(Json::Arr(items)) => items.iter().any(|b| b.get_str("text").is_some_and(ide)),
        _ => false,
    }
}

/// The [`Mark`] of each request of one chain (in the chain's order).
fn turn_marks(chain: &[&Request<'_>], rules: &MarkRules<'_>) -> Vec<Mark> {
    let mut out = vec![Mark::default(); chain.len()];
    if !rules.attachments_one_prompt && !rules.infer_thinking {
        return out;
    }
    let mut i = 0;
    while i < chain.len() {
        let mut j = i + 1;
        while j < chain.len() && !chain[j].body.messages.last().is_some_and(is_prompt) {
            j += 1;
        }
        let prompt = chain[i].body.messages.last().filter(|m| is_prompt(m));
        let attached =
            (rules.attachments_one_prompt && rules.ide && prompt.is_some()).then(|| chain[i].body.messages.len() - 1);
        let thinking = rules.infer_thinking
            && !adaptive_thinking(chain[i].body.model.as_str().unwrap_or(""))
            && chain[i..j].iter().any(|r| (rules.thought)(r));
        let mention = attached.is_some() && prompt.is_some_and(mentions_path);
        for m in &mut out[i..j] {
            *m = Mark { attached, mention, thinking: if thinking { THINKING_ON } else { 0 } };
        }
        i = j;
    }
    out
}

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
    unseen: Option<&[SimBlock; 2]>,
    out: &mut Vec<SimBlock>,
    feats: &mut Vec<BlockFeat>,
    msg_start: &mut Vec<usize>,
) {
    out.clear();
    feats.clear();
    msg_start.clear();
    push_header(body, seg, unseen, out, feats);
    for m in &body.messages {
        msg_start.push(out.len());
        seg.append(m, Segment::Message, out, feats);
    }
    apply_automatic(body, out);
}

/// Append the header of a request: the unseen block, or its tools and
/// system.
fn push_header(
    body: &Body<'_>,
    seg: &mut SegmentBlocks,
    unseen: Option<&[SimBlock; 2]>,
    out: &mut Vec<SimBlock>,
    feats: &mut Vec<BlockFeat>,
) {
    match unseen {
        Some(u) => {
            out.extend_from_slice(u);
            feats.extend_from_slice(&[BlockFeat::default(); 2]);
        }
        None => {
            if let Some(Json::Arr(tools)) = body.tools {
                for t in tools.iter() {
                    seg.append(t, Segment::Value(BlockKind::Tool, Place::Tool), out, feats);
                }
            }
            for s in body.system.iter() {
                seg.append(s, Segment::Value(BlockKind::System, Place::System), out, feats);
            }
        }
    }
}

/// A top-level `cache_control` param (automatic caching, see
/// [`apply_automatic`]).
fn has_automatic(body: &Body<'_>) -> bool {
    body.params.iter().any(|(k, _)| *k == "cache_control")
}

/// A block that opens a user turn (what [`strip_old_thinking`] looks for):
/// user content that is not a tool result, at the start of its message or
/// after tool results (what the user typed after refusing a tool call).
fn opens_turn(b: &SimBlock) -> bool {
    matches!(b.place, Place::Message { role: Role::User, .. }) && b.kind != BlockKind::ToolResult
}

/// Mark the thinking blocks before the last user turn that is not a tool
/// result as dropped (see [`strips_old_thinking`]).
fn strip_old_thinking(blocks: &mut [SimBlock], feats: &mut [BlockFeat]) {
    let last_turn = blocks.iter().rposition(opens_turn);
    let Some(turn) = last_turn else { return };
    for (b, f) in blocks[..turn].iter_mut().zip(&mut feats[..turn]) {
        if f.thinking {
            b.hash ^= STRIPPED;
            b.dropped = true;
            *f = BlockFeat { thinking: true, ..BlockFeat::default() };
        }
    }
}

/// What a user entry's ToolSearch results loaded (`tool_reference` blocks
/// in a tool result): web search or fetch among them, other tools, none.
fn deferred_tools_loaded(e: &Entry<'_>) -> Loaded {
    let Some(u) = e.as_user() else { return Loaded::None };
    let mut out = Loaded::None;
    for b in u.content.blocks() {
        let ContentKind::ToolResult { content: ToolResultContent::Blocks(bs), .. } = b.kind else { continue };
        for b in bs.iter() {
            if let ContentKind::ToolReference { tool_name } = b.kind {
                out =
                    out.max(if matches!(tool_name, "WebSearch" | "WebFetch") { Loaded::Web } else { Loaded::Deferred });
            }
        }
    }
    out
}

/// When a request rebuilt by the pipeline was sent (see [`start_before`]).
fn request_start(session: &Session<'_, '_>, r: &Request<'_>) -> Option<u64> {
    let f = session.files().find(|f| f.file.display == r.file)?;
    start_before(&f.parsed.entries, r.line)
}

/// When the request answered by the response written at `line` was sent:
/// the time of the last user line (a prompt, tool results) between the
/// response before it and its first line, on the same side of the chain. The response's
/// own lines are written as it streams, later than the start the TTL
/// counts from (facts §1.4); the user line is written just before the
/// request goes. `None` when there is no such line with a time.
fn start_before(entries: &[Entry<'_>], line: u32) -> Option<u64> {
    let at = entries.binary_search_by_key(&line, |e| e.line).ok()?;
    let resp = &entries[at];
    let id = resp.as_assistant()?.message_id?;
    let side = resp.env.is_sidechain;
    // Back to the response's first line: lines of the same message, with
    // the tool results written between them.
    let mut first = at;
    let mut after = 0;
    for (j, e) in entries[..at].iter().enumerate().rev() {
        match e.as_assistant() {
            Some(a) if a.message_id == Some(id) => first = j,
            Some(_) if e.env.is_sidechain == side => {
                after = j + 1;
                break;
            }
            _ => {}
        }
    }
    // The user line between the response before and this one.
    entries[after..first]
        .iter()
        .rev()
        .find(|e| e.env.is_sidechain == side && e.as_user().is_some())
        .and_then(|e| parse_timestamp_ms(e.env.timestamp?))
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
    disc: &Discovery,
    session: &Session<'a, '_>,
    assembler: &Assembler,
    opts: &ModelOptions,
    keep_lines: bool,
    whole: bool,
) -> SessionOut {
    let out = assemble_session(bump, session, assembler);
    let sin = session_in(session, out.by_pipeline, out.diagnostics, opts);
    // Recorded usage by message id; api-request id → message id.
    let recorded = usage::recorded_requests(session);
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
    let usage_of = |r: &Request<'_>| -> Option<(TokenCounts, u64)> {
        let e = entry_at(session, r.file, r.line)?;
        let mid = match e.as_assistant() {
            Some(a) => a.message_id?,
            None => by_request_ref.get(e.raw.get_str("id")?).copied()?,
        };
        by_message.get(mid).map(|t| (*t, xxh3_64(mid.as_bytes())))
    };
    let start_of = |r: &Request<'_>| if out.by_pipeline { request_start(session, r) } else { None };
    let version =
        session.files().flat_map(|f| f.parsed.entries.iter()).find_map(|e| e.env.shared.version).unwrap_or("");
    let cwd = session.files().flat_map(|f| f.parsed.entries.iter()).find_map(|e| e.env.shared.cwd).unwrap_or("");

    // Chains in order of first request.
    let mut order: Vec<Option<&str>> = Vec::new();
    for r in &out.requests {
        if !order.contains(&r.agent_id) {
            order.push(r.agent_id);
        }
    }
    let mut seg = SegmentBlocks::default();
    let mut scratch = ChainScratch::default();
    let mut chains = Vec::with_capacity(order.len());
    // Per file, the first line where a ToolSearch result loaded deferred
    // tools, and web search or fetch (see [`Loaded`]): the requests
    // answered after them send them.
    let mut loads: FxHashMap<&str, [u32; 2]> = FxHashMap::default();
    if sin.unseen_prompt {
        for f in session.files() {
            let mut at = [u32::MAX; 2];
            for e in &f.parsed.entries {
                match deferred_tools_loaded(e) {
                    Loaded::None => {}
                    Loaded::Deferred => at[0] = at[0].min(e.line),
                    Loaded::Web => {
                        at[0] = at[0].min(e.line);
                        at[1] = e.line;
                        break;
                    }
                }
            }
            if at[0] != u32::MAX {
                loads.insert(f.file.display.as_str(), at);
            }
        }
    }
    let loaded = |r: &Request<'_>| match loads.get(r.file) {
        Some(&[_, web]) if r.line > web => Loaded::Web,
        Some(&[any, _]) if r.line > any => Loaded::Deferred,
        _ => Loaded::None,
    };
    // What the requests sent that the pipeline's bodies do not say.
    let traits = crate::profile::release_traits(version);
    let thinking_ids: rustc_hash::FxHashSet<&str> = if sin.unseen_prompt {
        session
            .files()
            .flat_map(|f| f.parsed.entries.iter())
            .filter_map(|e| {
                let a = e.as_assistant()?;
                let thinks = a
                    .content
                    .blocks()
                    .iter()
                    .any(|b| matches!(b.kind, ContentKind::Thinking { .. } | ContentKind::RedactedThinking { .. }));
                if thinks { a.message_id } else { None }
            })
            .collect()
    } else {
        Default::default()
    };
    let thought = |r: &Request<'_>| {
        entry_at(session, r.file, r.line)
            .and_then(|e| e.as_assistant())
            .and_then(|a| a.message_id)
            .is_some_and(|m| thinking_ids.contains(m))
    };
    let rules = MarkRules {
        attachments_one_prompt: out.by_pipeline && traits.attachments_one_prompt,
        // Only read where it matters.
        ide: out.by_pipeline
            && traits.attachments_one_prompt
            && out.requests.iter().any(|r| r.body.messages.last().is_some_and(|m| is_prompt(m) && has_ide_context(m))),
        infer_thinking: sin.unseen_prompt,
        thought: &thought,
    };
    for agent in order {
        let first = out.requests.iter().find(|r| r.agent_id == agent);
        // The chain's own working directory (a subagent in a worktree has
        // its own: its environment section differs).
        let cwd = first
            .and_then(|r| session.files().find(|f| f.file.display == r.file))
            .and_then(|f| f.parsed.entries.iter().find_map(|e| e.env.shared.cwd))
            .unwrap_or(cwd);
        let excerpt = first.and_then(|r| excerpt_parent(session, r.file, agent)).unwrap_or("");
        let unseen = sin.unseen_prompt.then(|| {
            [Loaded::None, Loaded::Deferred, Loaded::Web]
                .map(|l| unseen_blocks(version, cwd, agent.is_some(), excerpt, l))
        });
        let own: Vec<&Request<'_>> = out.requests.iter().filter(|r| r.agent_id == agent).collect();
        let marks = turn_marks(&own, &rules);
        drop(own);
        let mut chain = chain_of(
            &out.requests,
            agent,
            unseen,
            &loaded,
            &start_of,
            &mut seg,
            &mut scratch,
            &usage_of,
            &marks,
            sin.unseen_prompt && traits.marks_last_two_messages,
            out.by_pipeline,
            whole,
        );
        chain.excerpt = !excerpt.is_empty();
        chains.push(chain);
    }
    drop(by_message);
    drop(by_request_ref);
    drop(recorded);
    let full_lines = if keep_lines { usage::session_usage_lines(session) } else { Vec::new() };
    (sin, chains, usage::session_lines(session, disc), full_lines)
}

/// What pass 1 gives for a session: its identity, its chains, its usage
/// lines (compact) for the corpus-wide recorded count, and (for a shard's
/// partial report) the same lines in full.
type SessionOut = (SessionIn, Vec<ChainIn>, usage::SessionLines, usage::FileCandidates);

/// What pass 1 keeps of a session: its identity, the cache scope of each
/// [`Account`](super::Account) and whether its prompt is the unseen prefix.
fn session_in(
    session: &Session<'_, '_>,
    by_pipeline: bool,
    diagnostics: Vec<Diagnostic>,
    opts: &ModelOptions,
) -> SessionIn {
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
    let has_shapes = session.has_shapes();
    let unseen_prompt = by_pipeline && !has_shapes && !opts.prompt_known;
    let main = session.files().next();
    let started = main.and_then(|f| f.parsed.entries.iter().find_map(|e| e.env.timestamp)).map(str::to_string);
    SessionIn {
        title: main.and_then(|f| {
            first_prompt(&f.parsed.entries, false)
                .or_else(|| first_prompt(&f.parsed.entries, true).map(|p| format!("subagent: {p}")))
        }),
        started,
        first_file: session
            .files()
            .map(|f| f.file.path.as_path())
            .min()
            .map(|p| p.to_string_lossy().into_owned())
            .unwrap_or_default(),
        scope_root: scope_of(&["root", &root]),
        scope_project: scope_of(&["project", &project_path]),
        scope_session: scope_of(&["session", &project_path, &session_id]),
        session_id,
        project,
        by_pipeline,
        unseen_prompt,
        diagnostics,
    }
}

/// Characters of a first prompt kept in a session's name.
const TITLE_CHARS: usize = 80;

/// The first prompt a person typed in `entries` (the main chain's first
/// user text that is not the harness's: no meta line, compaction summary,
/// `<tag>` block such as a command, a reminder or IDE context, nor the
/// local-command caveat), whitespace collapsed, cut to [`TITLE_CHARS`]
/// characters with `…`; with `sidechains`, a subagent's prompts count too
/// (a subagent's file read without its session's).
pub(super) fn first_prompt(entries: &[Entry<'_>], sidechains: bool) -> Option<String> {
    let typed = |t: &str| {
        let t = t.trim_start();
        !t.is_empty() && !t.starts_with('<') && !t.starts_with("Caveat: ")
    };
    let text = entries.iter().filter(|e| (sidechains || !e.env.is_sidechain) && !e.env.is_meta).find_map(|e| {
        let u = e.as_user().filter(|u| !u.is_compact_summary)?;
        match u.content {
            Content::Text(t) => Some(t).filter(|t| typed(t)),
            Content::Blocks(bs) => bs.iter().find_map(|b| match b.kind {
                ContentKind::Text { text } if typed(text) => Some(text),
                _ => None,
            }),
            Content::Missing => None,
        }
    })?;
    let words: Vec<&str> = text.split_whitespace().collect();
    let one_line = words.join(" ");
    Some(match one_line.char_indices().nth(TITLE_CHARS) {
        Some((cut, _)) => format!("{}…", one_line[..cut].trim_end()),
        None => one_line,
    })
}

/// Which deferred tools a request of a pipeline chain sends, as the cache
/// sees them. From the request after a ToolSearch result that loaded tools
/// (`tool_reference` blocks), the CLI sends them in `tools` with
/// `defer_loading` (what 2.1.114 sends; the other tools stay as they were),
/// and the recorded usage shows the prefix changed twice, not per tool: at
/// the first tool loaded, and when web search or web fetch is (facts §1.5:
/// toggling them invalidates the system prompt's cache). Public corpus,
/// 2.1.114: the main chain read nothing after its first load (task tools),
/// and so did a subagent after loading web search and fetch; two other
/// subagents that loaded those two read the prefix the first had written;
/// one of them then loaded twelve more tools and read everything. From
/// 2.1.3xx the CLI sends a placeholder deferred tool from the first request
/// on, so the prefix does not change there.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Loaded {
    None = 0,
    Deferred = 1,
    Web = 2,
}

/// The unseen prefix blocks of a chain, each with the system prompt's
/// 5-minute breakpoint: the part its first request read warm (its tools and
/// the start of its system prompt, which the account's other sessions
/// write too) and the rest (public 2.0.5: a session's first request read
/// 5,161 tokens and wrote the rest of its system prompt; each later prompt
/// whose messages changed read 14,627, the whole system prompt, not the
/// 5,161; facts §1.2: a breakpoint on each system block). Their sizes are
/// given in pass 2 (the second is empty when the first request read
/// nothing or everything). Their identity is (CLI version, the
/// chain's cwd, main or subagent, the message an excerpt hangs from, which
/// [`Loaded`] deferred tools it sends), the first's without the excerpt. The
/// chain's own cwd: a subagent in a worktree has its own (public corpus,
/// 2.1.114: one that came back 322 s after its last request read nothing,
/// though a subagent of another worktree had written its whole prompt
/// 1.6 s before). An excerpt's (see [`excerpt_parent`]) holds the
/// conversation before it, which no other excerpt's does.
fn unseen_blocks(version: &str, cwd: &str, agent: bool, excerpt: &str, loaded: Loaded) -> [SimBlock; 2] {
    let who = if agent { "agent" } else { "main" };
    let tools = match loaded {
        Loaded::None => "",
        Loaded::Deferred => "deferred tools",
        Loaded::Web => "deferred tools, web search or fetch",
    };
    let block = |parts: &[&str]| SimBlock {
        hash: u128::from(scope_of(parts)) | (1u128 << 127),
        tokens: 0,
        ttl: Some(Ttl::FiveMinutes),
        kind: BlockKind::System,
        place: Place::System,
        pinned: false,
        dropped: false,
    };
    [
        block(&["unseen prefix read first", version, cwd, who, tools]),
        block(&["unseen prefix", version, cwd, who, excerpt, tools]),
    ]
}

/// The uuid a chain's first message hangs from when the session holds no
/// entry of that uuid: the chain is an excerpt of a longer conversation
/// (public corpus: one-line copies of a request, each in a file of its
/// own), so its unseen prefix holds the messages before it too. Before,
/// five such excerpts of one session read each other's prompts whole where
/// each had really written its last few hundred tokens (−5% to −26%).
fn excerpt_parent<'a>(session: &Session<'a, '_>, file: &str, agent: Option<&str>) -> Option<&'a str> {
    let f = session.files().find(|f| f.file.display == file)?;
    let first = f.parsed.entries.iter().find(|e| {
        (e.as_assistant().is_some() || e.as_user().is_some())
            && e.env.shared.agent_id == agent
            && (agent.is_some() || !e.env.is_sidechain)
    })?;
    let parent = first.env.parent_uuid?;
    let held = session.files().flat_map(|f| f.parsed.entries.iter()).any(|e| e.env.uuid == Some(parent));
    (!held).then_some(parent)
}

/// The last request of a chain as pass 1 built it, and what building the
/// next one from it needs: a request that shares its first messages with
/// this one (`Body::shared`) and the same header is built from the blocks
/// after them, so a chain of n requests costs n, not n².
#[derive(Default)]
struct ChainCur {
    /// The request's blocks as sent (thinking dropped, automatic mark).
    blocks: Vec<SimBlock>,
    feats: Vec<BlockFeat>,
    /// The features before thinking was dropped.
    raw_feats: Vec<BlockFeat>,
    /// Blocks of the header (the unseen block, or the tools and system).
    header: usize,
    /// Position of each message's first block.
    msg_start: Vec<usize>,
    /// Positions of the blocks that open a user turn, of those with
    /// `cache_control`.
    turns: Vec<usize>,
    marked: Vec<usize>,
    /// The thinking before the last turn was dropped.
    strip: bool,
    /// The blocks can be built on: no automatic mark was applied.
    reusable: bool,
    /// The block marked [`ATTACHED`] (see [`Mark`]).
    attached: Option<usize>,
}

/// Requests [`ChainCur::extend`] built (what the oracle test checks it saw).
#[cfg(test)]
static EXTENDED: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// Scratch of [`chain_of`], reused across chains.
#[derive(Default)]
struct ChainScratch {
    blocks: Vec<SimBlock>,
    feats: Vec<BlockFeat>,
    msg_start: Vec<usize>,
    tail: Vec<SimBlock>,
}

impl ChainCur {
    /// The request's breakpoints (position, TTL): the ones its body marks;
    /// with `two`, those of its tools and system and, in place of its
    /// messages' marks, one on the last block of each of its last two
    /// messages that can carry one (not a thinking block), with the TTL of
    /// its last message mark (see [`ReleaseTraits`]); when the last message
    /// is a prompt whose @-mention is sent as a message before it (see
    /// [`Mark`]), the other is on that attachment (the prompt's marked first
    /// block), not on the message before.
    ///
    /// [`ReleaseTraits`]: crate::profile::ReleaseTraits
    fn breakpoints(&self, two: bool, mark: Mark) -> smallvec::SmallVec<[(u32, Ttl); 4]> {
        let at = |i: usize| u32::try_from(i).unwrap_or(u32::MAX);
        let mut out: smallvec::SmallVec<[(u32, Ttl); 4]> = self
            .marked
            .iter()
            .filter(|&&i| !two || i < self.header)
            .filter_map(|&i| self.blocks[i].ttl.map(|t| (at(i), t)))
            .collect();
        let last_ttl = self.marked.iter().rev().find(|&&i| i >= self.header).and_then(|&i| self.blocks[i].ttl);
        if let (true, Some(ttl)) = (two, last_ttl) {
            let n = self.msg_start.len();
            let on_attachment = mark.mention && mark.attached.is_some_and(|m| m + 1 == n);
            for m in n.saturating_sub(2)..n {
                if on_attachment && m + 2 == n {
                    if let Some(&p) = self.msg_start.get(n - 1) {
                        out.push((at(p), ttl));
                    }
                    continue;
                }
                let end = self.msg_start.get(m + 1).copied().unwrap_or(self.blocks.len());
                let last = end.checked_sub(1).filter(|&p| p >= self.msg_start[m]);
                if let Some(p) = last.filter(|&p| !self.raw_feats.get(p).is_some_and(|f| f.thinking)) {
                    out.push((at(p), ttl));
                }
            }
            out.sort_unstable_by_key(|b| b.0);
            out.dedup_by_key(|b| b.0);
        }
        out
    }

    /// The request of `body` built whole (what every request was before
    /// the incremental build, and its oracle): the blocks it keeps from
    /// the one before.
    #[allow(clippy::too_many_arguments)]
    fn rebuild(
        &mut self,
        body: &Body<'_>,
        seg: &mut SegmentBlocks,
        unseen: Option<&[SimBlock; 2]>,
        strip: bool,
        attached: Option<usize>,
        scratch: &mut ChainScratch,
    ) -> usize {
        let (blocks, feats) = (&mut scratch.blocks, &mut scratch.feats);
        request_blocks(body, seg, unseen, blocks, feats, &mut scratch.msg_start);
        self.attached = attached.and_then(|m| scratch.msg_start.get(m).copied()).filter(|&p| p < blocks.len());
        if let Some(p) = self.attached {
            blocks[p].hash ^= ATTACHED;
        }
        self.raw_feats.clear();
        self.raw_feats.extend_from_slice(feats);
        if strip {
            strip_old_thinking(blocks, feats);
        }
        let keep = crate::cost::sim::common_prefix(&self.blocks, blocks);
        std::mem::swap(&mut self.blocks, blocks);
        std::mem::swap(&mut self.feats, feats);
        std::mem::swap(&mut self.msg_start, &mut scratch.msg_start);
        self.header = self.msg_start.first().copied().unwrap_or(self.blocks.len());
        self.turns.clear();
        self.turns.extend(self.blocks.iter().enumerate().filter(|(_, b)| opens_turn(b)).map(|(i, _)| i));
        self.marked.clear();
        self.marked.extend(self.blocks.iter().enumerate().filter(|(_, b)| b.ttl.is_some()).map(|(i, _)| i));
        self.strip = strip;
        self.reusable = !has_automatic(body);
        keep
    }

    /// The request of `body`, whose first `shared` messages are those of
    /// the request before, built from the blocks after them; `None` (and
    /// nothing changed) when it cannot be: then [`rebuild`](Self::rebuild).
    /// The same blocks, features and `keep` as `rebuild`.
    #[allow(clippy::too_many_arguments)]
    fn extend(
        &mut self,
        body: &Body<'_>,
        shared: usize,
        seg: &mut SegmentBlocks,
        unseen: Option<&[SimBlock; 2]>,
        strip: bool,
        attached: Option<usize>,
        scratch: &mut ChainScratch,
    ) -> Option<usize> {
        if !self.reusable || has_automatic(body) || strip != self.strip || shared == 0 || shared > self.msg_start.len()
        {
            return None;
        }
        // The same header, block for block.
        let (hb, hf) = (&mut scratch.blocks, &mut scratch.feats);
        hb.clear();
        hf.clear();
        push_header(body, seg, unseen, hb, hf);
        if hb.len() != self.header || hb[..] != self.blocks[..self.header] || hf[..] != self.raw_feats[..self.header] {
            return None;
        }
        // Blocks before `d` are those of the request before, but for the
        // thinking dropped.
        let d = self.msg_start.get(shared).copied().unwrap_or(self.blocks.len());
        let before_turn = if strip { self.turns.last().copied().unwrap_or(0) } else { 0 };
        scratch.tail.clear();
        scratch.tail.extend(self.blocks.drain(d..));
        self.feats.truncate(d);
        self.raw_feats.truncate(d);
        self.msg_start.truncate(shared);
        while self.turns.last().is_some_and(|&t| t >= d) {
            self.turns.pop();
        }
        while self.marked.last().is_some_and(|&t| t >= d) {
            self.marked.pop();
        }
        for m in body.messages.iter_from(shared) {
            self.msg_start.push(self.blocks.len());
            seg.append(m, Segment::Message, &mut self.blocks, &mut self.raw_feats);
        }
        self.feats.extend_from_slice(&self.raw_feats[d..]);
        for (i, b) in self.blocks.iter().enumerate().skip(d) {
            if opens_turn(b) {
                self.turns.push(i);
            }
            if b.ttl.is_some() {
                self.marked.push(i);
            }
        }
        // Dropped thinking: before the request before's last turn then,
        // before this one's now.
        let mut first_change = None;
        if strip {
            let was = before_turn.min(d);
            let now = self.turns.last().copied().unwrap_or(0);
            for i in was.min(now)..was.max(now) {
                if !self.raw_feats[i].thinking {
                    continue;
                }
                self.blocks[i].hash ^= STRIPPED;
                self.blocks[i].dropped = now > was;
                self.feats[i] =
                    if now > was { BlockFeat { thinking: true, ..BlockFeat::default() } } else { self.raw_feats[i] };
                if i < d && first_change.is_none() {
                    first_change = Some(i);
                }
            }
        }
        // The prompt whose attachments are in the request: the mark moves
        // (or goes) at the next prompt.
        let now = attached.and_then(|m| self.msg_start.get(m).copied()).filter(|&p| p < self.blocks.len());
        let changed = |p: usize, first: &mut Option<usize>| {
            if p < d {
                *first = Some(first.map_or(p, |f| f.min(p)));
            }
        };
        if self.attached != now {
            if let Some(p) = self.attached.filter(|&p| p < d) {
                self.blocks[p].hash ^= ATTACHED;
                changed(p, &mut first_change);
            }
            if let Some(p) = now {
                self.blocks[p].hash ^= ATTACHED;
                changed(p, &mut first_change);
            }
        } else if let Some(p) = now.filter(|&p| p >= d) {
            self.blocks[p].hash ^= ATTACHED;
        }
        self.attached = now;
        #[cfg(test)]
        EXTENDED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Some(first_change.unwrap_or_else(|| d + crate::cost::sim::common_prefix(&scratch.tail, &self.blocks[d..])))
    }
}

/// One chain (the requests of `agent`, `None` for the main conversation)
/// stored once; `scratch` is reused across chains. Each request is built
/// from the one before where it shares its first messages with it
/// ([`ChainCur::extend`]); with `whole`, every request is built whole.
#[allow(clippy::too_many_arguments)]
fn chain_of(
    requests: &[Request<'_>],
    agent: Option<&str>,
    unseen_blocks: Option<[[SimBlock; 2]; 3]>,
    loaded: &dyn Fn(&Request<'_>) -> Loaded,
    start_of: &dyn Fn(&Request<'_>) -> Option<u64>,
    seg: &mut SegmentBlocks,
    scratch: &mut ChainScratch,
    usage_of: &dyn Fn(&Request<'_>) -> Option<(TokenCounts, u64)>,
    marks: &[Mark],
    two_marks: bool,
    by_pipeline: bool,
    whole: bool,
) -> ChainIn {
    let mut chain = ChainIn::default();
    let mut cur = ChainCur::default();
    let mut last_ms = 0u64;
    let mut models: Vec<Arc<str>> = Vec::new();
    let mut prev_index = None;
    for (k, (index, r)) in requests.iter().enumerate().filter(|(_, r)| r.agent_id == agent).enumerate() {
        let name = r.body.model.as_str().unwrap_or("");
        let model = match models.iter().find(|m| &***m == name) {
            Some(m) => m.clone(),
            None => {
                models.push(name.into());
                models[models.len() - 1].clone()
            }
        };
        let strip = strips_old_thinking(&model);
        // `shared` counts the messages of the request just before in the
        // session's list: this chain's only when it is the chain's last.
        let follows = !whole && prev_index.is_some_and(|p| p + 1 == index);
        prev_index = Some(index);
        let shared = if follows { r.body.shared } else { 0 };
        let unseen_block = unseen_blocks.as_ref().map(|u| &u[loaded(r) as usize]);
        let mark = marks.get(k).copied().unwrap_or_default();
        let keep = match cur.extend(&r.body, shared, seg, unseen_block, strip, mark.attached, scratch) {
            Some(keep) => keep,
            None => cur.rebuild(&r.body, seg, unseen_block, strip, mark.attached, scratch),
        };
        let blocks = &cur.blocks;
        let start = chain.arena.len();
        chain.arena.extend_from_slice(&blocks[keep..]);
        chain.feats.extend_from_slice(&cur.feats[keep..]);
        if unseen_block.is_some() && keep == 0 {
            match chain.unseen {
                None => chain.unseen = Some(start),
                Some(_) => chain.unseen_again.push(start),
            }
        }
        let breakpoints = cur.breakpoints(two_marks, mark);
        let response_ms = r.timestamp.and_then(parse_timestamp_ms);
        let at_ms = start_of(r).or(response_ms).unwrap_or(last_ms).max(last_ms);
        let ready_ms = response_ms.unwrap_or(0).max(at_ms);
        last_ms = at_ms;
        let used = usage_of(r);
        chain.reqs.push(ReqIn {
            id: {
                if chain.reqs.is_empty() {
                    let cut = r.custom_id.rfind('_').map_or(0, |i| i + 1);
                    chain.id_prefix = r.custom_id[..cut].into();
                }
                ReqId::of(&r.custom_id, &chain.id_prefix)
            },
            at_ms,
            ready_ms,
            model,
            recorded: used.map(|u| u.0),
            usage_key: used.map(|u| u.1),
            step: ChainStep { keep, added: start..chain.arena.len(), breakpoints },
            len: blocks.len(),
            thinking: mark.thinking,
        });
    }
    // A pipeline chain whose usage shows 1-hour writes was sent with
    // `ttl: "1h"` (the transcript does not hold the request).
    if by_pipeline && chain.reqs.iter().any(|r| r.recorded.is_some_and(|t| t.cache_write_1h > 0)) {
        for r in &mut chain.reqs {
            for bp in &mut r.step.breakpoints {
                bp.1 = Ttl::OneHour;
            }
        }
    }
    // Kept until the corpus is replayed: without the growth slack.
    chain.reqs.shrink_to_fit();
    chain.arena.shrink_to_fit();
    chain.feats.shrink_to_fit();
    chain
}

/// Pass 1 over the corpus: the blocks of every session (in parallel, taken
/// in discovery order as they come), its chains tagged with the session's
/// index; discovery's problems and the sessions that could not be read as
/// diagnostics, in that order; and the corpus-wide recorded usage (what
/// `cost --recorded-only` counts), its lines counted as the sessions come
/// and not kept; with `keep_lines`, they are kept in full too (what a
/// shard's partial report carries).
pub(super) fn read_corpus(
    disc: &Discovery,
    run: &RunOptions<'_>,
    assembler: &Assembler,
    opts: &ModelOptions,
    keep_lines: bool,
) -> (Vec<SessionIn>, ChainStore, Vec<Diagnostic>, usage::CorpusUsage, usage::FileCandidates) {
    read_corpus_with(disc, run, assembler, opts, keep_lines, false)
}

/// [`read_corpus`]; with `whole`, every request's blocks built whole (the
/// oracle of the incremental build).
fn read_corpus_with(
    disc: &Discovery,
    run: &RunOptions<'_>,
    assembler: &Assembler,
    opts: &ModelOptions,
    keep_lines: bool,
    whole: bool,
) -> (Vec<SessionIn>, ChainStore, Vec<Diagnostic>, usage::CorpusUsage, usage::FileCandidates) {
    let mut diagnostics = disc.diagnostics.clone();
    let mut sessions: Vec<SessionIn> = Vec::new();
    // Each chain stored as its session comes, not held.
    let mut chains = ChainStore::new();
    let mut buf = Vec::new();
    let mut recorded = usage::CorpusUsage::default();
    let mut full_lines = Vec::new();
    let mut groups = disc.groups.iter();
    let sink = |result: Result<SessionOut, Diagnostic>| {
        let Some(group) = groups.next() else { return Ok(()) };
        match result {
            Ok((s, cs, lines, mut full)) => {
                let idx = sessions.len();
                for mut c in cs {
                    c.session = idx;
                    chains.push(&c, &mut buf);
                }
                sessions.push(s);
                recorded.add(group, Some(lines));
                full_lines.append(&mut full);
            }
            Err(d) => {
                diagnostics.push(d);
                recorded.add(group, None);
            }
        }
        Ok(())
    };
    // The sink never fails.
    let _ = stream_sessions(
        disc,
        run,
        |_| 0,
        Err,
        |bump, s| Ok(session_blocks(bump, disc, s, assembler, opts, keep_lines, whole)),
        sink,
    );
    chains.finish();
    (sessions, chains, diagnostics, recorded, full_lines)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cost::modeled::test_util::*;

    /// A session's name is the first prompt a person typed: past the meta
    /// line, the local-command caveat, a slash command, a reminder and IDE
    /// context blocks; whitespace collapsed, cut at 80 characters.
    #[test]
    fn the_first_typed_prompt_names_a_session() {
        let bump = bumpalo::Bump::new();
        let lines = [
            r#"{"type":"user","uuid":"a","isMeta":true,"message":{"role":"user","content":"Caveat: meta"}}"#,
            r#"{"type":"user","uuid":"b","message":{"role":"user","content":"Caveat: The messages below were generated by the user while running local commands."}}"#,
            r#"{"type":"user","uuid":"c","message":{"role":"user","content":"<command-name>/clear</command-name>"}}"#,
            r#"{"type":"user","uuid":"d","isSidechain":true,"message":{"role":"user","content":"a subagent's task"}}"#,
            r#"{"type":"user","uuid":"e","message":{"role":"user","content":[{"type":"text","text":"<ide_opened_file>x</ide_opened_file>"},{"type":"text","text":"  Fix   the\nbuild,\tplease. "}]}}"#,
            r#"{"type":"user","uuid":"f","message":{"role":"user","content":"later"}}"#,
        ];
        let parse = |ls: &[&str]| {
            let text = ls.join("\n") + "\n";
            crate::input::parse_bytes(&bump, text.as_bytes(), "t.jsonl", &crate::input::ReadOptions::default())
        };
        let p = parse(&lines);
        assert_eq!(first_prompt(&p.entries, false).as_deref(), Some("Fix the build, please."));
        let only_agent = parse(&lines[3..4]);
        assert_eq!(first_prompt(&only_agent.entries, false), None);
        assert_eq!(first_prompt(&only_agent.entries, true).as_deref(), Some("a subagent's task"));
        let long =
            format!(r#"{{"type":"user","uuid":"g","message":{{"role":"user","content":"{}"}}}}"#, "é".repeat(100));
        let p = parse(&[long.as_str()]);
        assert_eq!(first_prompt(&p.entries, false), Some(format!("{}…", "é".repeat(80))));
    }

    fn parsed<'b>(bump: &'b bumpalo::Bump, lines: &[&str]) -> crate::input::ParsedLines<'b> {
        let text = lines.join("\n") + "\n";
        crate::input::parse_bytes(
            bump,
            bump.alloc_str(&text).as_bytes(),
            "t.jsonl",
            &crate::input::ReadOptions::default(),
        )
    }

    /// A pipeline request starts when the user line it answers was written:
    /// before the response's first line, past the tool results written
    /// between the lines of a streamed response, and on its own side of
    /// the chain.
    #[test]
    fn a_request_starts_at_the_user_line_it_answers() {
        let bump = bumpalo::Bump::new();
        let a = |id: &str, ts: &str, side: bool| {
            format!(
                r#"{{"type":"assistant","uuid":"{id}{ts}","isSidechain":{side},"timestamp":"2026-01-01T00:00:{ts}.000Z","message":{{"id":"{id}","role":"assistant","content":[{{"type":"text","text":"x"}}]}}}}"#
            )
        };
        let u = |ts: &str, side: bool| {
            format!(
                r#"{{"type":"user","uuid":"u{ts}","isSidechain":{side},"timestamp":"2026-01-01T00:00:{ts}.000Z","message":{{"role":"user","content":"go"}}}}"#
            )
        };
        let lines = [
            u("00", false),       // 1
            a("m1", "05", false), // 2
            u("06", false),       // 3: a tool result between lines of m1
            a("m1", "07", false), // 4
            u("10", true),        // 5: a subagent's prompt
            u("20", false),       // 6
            a("m2", "30", false), // 7
            a("s1", "31", true),  // 8
        ];
        let refs: Vec<&str> = lines.iter().map(String::as_str).collect();
        let p = parsed(&bump, &refs);
        let ms = |s: u64| Some(1_767_225_600_000 + s * 1000);
        assert_eq!(start_before(&p.entries, 2), ms(0));
        assert_eq!(start_before(&p.entries, 4), ms(0), "from the response's first line");
        assert_eq!(start_before(&p.entries, 7), ms(20));
        assert_eq!(start_before(&p.entries, 8), ms(10), "its own side of the chain");
        assert_eq!(start_before(&p.entries, 1), None, "not a response");
        let back_to_back = parsed(&bump, &[refs[0], refs[1], refs[6]]);
        assert_eq!(start_before(&back_to_back.entries, 3), None, "no user line since the response before");
        let first = parsed(&bump, &refs[1..2]);
        assert_eq!(start_before(&first.entries, 1), None, "nothing before it");
    }

    /// A request's `custom_id` is its chain's prefix and a number where it
    /// is one as written, else kept whole; either way it comes back as it
    /// was.
    #[test]
    fn request_ids_come_back_as_written() {
        let p = "s1_a2_";
        for (id, compact) in [
            ("s1_a2_0", true),
            ("s1_a2_17", true),
            ("s1_a2_007", false),
            ("s1_a2_x", false),
            ("s9_3", false),
            ("s1_a2_99999999999", false),
        ] {
            let r = ReqId::of(id, p);
            assert_eq!(matches!(r, ReqId::Index(_)), compact, "{id}");
            assert_eq!(r.render(p), id);
        }
    }

    /// What a ToolSearch result loaded, from its `tool_reference` blocks:
    /// web search or fetch weigh more than other tools; other results and
    /// lines load nothing.
    #[test]
    fn tool_search_results_say_which_deferred_tools_were_loaded() {
        let bump = bumpalo::Bump::new();
        let result = |names: &[&str]| {
            let refs: Vec<String> =
                names.iter().map(|n| format!(r#"{{"type":"tool_reference","tool_name":"{n}"}}"#)).collect();
            format!(
                r#"{{"type":"user","uuid":"u","message":{{"role":"user","content":[{{"type":"tool_result","tool_use_id":"t","content":[{}]}}]}}}}"#,
                refs.join(",")
            )
        };
        let loaded = |line: &str| {
            let p = parsed(&bump, &[line]);
            deferred_tools_loaded(&p.entries[0])
        };
        assert_eq!(loaded(&result(&["TaskCreate", "TaskList"])), Loaded::Deferred);
        assert_eq!(loaded(&result(&["TaskCreate", "WebFetch"])), Loaded::Web);
        assert_eq!(loaded(&result(&["WebSearch"])), Loaded::Web);
        assert_eq!(loaded(&result(&[])), Loaded::None);
        let text = r#"{"type":"user","uuid":"u","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":"No matching deferred tools found"}]}}"#;
        assert_eq!(loaded(text), Loaded::None);
    }

    /// Every chain's arena, features and steps as pass 1 builds them
    /// request by request from the one before, against every request built
    /// whole: on every fixture and the sample corpus, in pipeline and in
    /// auto mode (records where a session has them), and on the shared
    /// corpora (`../shared/corpora`) when CTXASM_SHARED_ORACLE is set (slow
    /// in a debug build). The incremental build must be used somewhere, or
    /// the test proves nothing.
    #[test]
    fn incremental_blocks_equal_blocks_built_whole() {
        use crate::assemble::pipeline::Setup;
        use crate::assemble::{Assembler, Mode};
        use crate::input::discover::discover;
        use std::path::{Path, PathBuf};
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let mut dirs: Vec<PathBuf> = std::fs::read_dir(root.join("tests/fixtures"))
            .unwrap()
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.is_dir())
            .collect();
        dirs.sort();
        dirs.push(root.join("corpora"));
        let shared_corpora = root.join("../shared/corpora");
        if shared_corpora.is_dir() && std::env::var_os("CTXASM_SHARED_ORACLE").is_some() {
            dirs.push(shared_corpora);
        }
        let extended_before = EXTENDED.load(std::sync::atomic::Ordering::Relaxed);
        for mode in [Mode::Pipeline, Mode::Auto] {
            let prep = Setup::load("cc-2.1.328", None, Default::default()).unwrap();
            let assembler = Assembler { mode, pipeline: Some(prep), ..Assembler::default() };
            for opts in [ModelOptions::default(), ModelOptions { prompt_known: true, ..ModelOptions::default() }] {
                for dir in &dirs {
                    let disc = discover(std::slice::from_ref(dir));
                    let run = RunOptions::default();
                    let (_, inc, ..) = read_corpus_with(&disc, &run, &assembler, &opts, false, false);
                    let (_, whole, ..) = read_corpus_with(&disc, &run, &assembler, &opts, false, true);
                    assert_eq!(inc.len(), whole.len(), "{}", dir.display());
                    for (a, b) in inc.each().zip(whole.each()) {
                        let ((_, a), (_, b)) = (a.unwrap(), b.unwrap());
                        let at = format!("{} {mode:?}: session {}", dir.display(), a.session);
                        assert_eq!(a.session, b.session, "{at}");
                        assert_eq!((a.unseen, &a.unseen_again), (b.unseen, &b.unseen_again), "{at}");
                        assert_eq!(a.id_prefix, b.id_prefix, "{at}");
                        assert_eq!(a.arena, b.arena, "{at}");
                        assert_eq!(a.feats, b.feats, "{at}");
                        assert_eq!(a.reqs.len(), b.reqs.len(), "{at}");
                        for (x, y) in a.reqs.iter().zip(&b.reqs) {
                            assert_eq!(x.id, y.id, "{at}");
                            assert_eq!(
                                (x.at_ms, &x.model, x.recorded, x.len, x.thinking),
                                (y.at_ms, &y.model, y.recorded, y.len, y.thinking)
                            );
                            assert_eq!(x.step, y.step, "{at} {:?}", x.id);
                        }
                    }
                }
            }
        }
        let extended = EXTENDED.load(std::sync::atomic::Ordering::Relaxed) - extended_before;
        assert!(extended > 100, "{extended}");
    }

    #[test]
    fn thinking_before_the_last_user_turn_is_dropped_on_older_models() {
        assert!(strips_old_thinking("claude-sonnet-4-20250514"));
        assert!(strips_old_thinking("claude-opus-4-1-20250805"));
        assert!(strips_old_thinking("claude-haiku-4-5"));
        assert!(!strips_old_thinking("claude-opus-4-5-20251101"));
        assert!(!strips_old_thinking("claude-sonnet-4-6"));
        assert!(!strips_old_thinking("claude-opus-5-5"));
        assert!(adaptive_thinking("claude-sonnet-4-6") && adaptive_thinking("claude-opus-5-5"));
        assert!(!adaptive_thinking("claude-opus-4-5-20251101") && !adaptive_thinking("claude-sonnet-4-5-20250929"));
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
        let dropped: Vec<bool> = blocks.iter().map(|b| b.dropped).collect();
        assert_eq!(dropped, [false, true, false, false, true, false, false]);
        assert_eq!(feats[1].bytes, 0);
        assert_eq!(feats[6].bytes, 40);
        // A refused tool call's result, then what the user typed, in one
        // message (`[Request interrupted by user for tool use]` and the new
        // prompt): a user turn too. Public corpus, 2.0.37 (cb2e607c): the
        // prompt after the next one read through this message, as when the
        // thinking before it had been dropped here.
        let mut blocks = vec![
            block(1, 0, None, user(true)),
            block(2, 0, None, assistant(true)), // thinking
            SimBlock { kind: BlockKind::ToolResult, ..block(3, 0, None, user(true)) },
            block(4, 0, None, user(false)),     // typed after the refusal
            block(5, 0, None, assistant(true)), // thinking of the new turn
        ];
        let mut feats = vec![text, think, text, text, think];
        strip_old_thinking(&mut blocks, &mut feats);
        let hashes: Vec<u128> = blocks.iter().map(|b| b.hash).collect();
        assert_eq!(hashes, [1, 2 ^ STRIPPED, 3, 4, 5]);
    }
}
