//! The context-assembly pipeline: build every request of a session from the
//! conversation itself, stage by stage (SPEC.md "The pipeline described by
//! the seeds"), instead of replaying recorded requests.
//!
//! Per chain (main transcript, then each subagent), per turn (assistant API
//! message, [`projection::turns`]):
//! projection → attachments / pieces → [`normalize`] → tool pairing →
//! media limit → cache breakpoints → wire form → request body.
//! The system blocks, tools and params come from the [`Layout`]: for
//! `cc-2.1.328` the system prompt and tools of the session
//! (`api-request-shape`), for the seed layout the blocks rendered from a
//! profile and the session environment (`system_prompt`, `system_blocks`).

use super::normalize::{self, Piece, Rules};
use super::pairing::{PairingRepairs, ensure_tool_result_pairing};
use super::projection::{self, Links};
use super::records::{RecordOptions, billing_suffix, collapse, custom_id, first_user_text};
use super::{Body, Request, breakpoints, media};
use crate::corpus::{ParsedFile, Session};
use crate::diag::{DiagKind, Diagnostic};
use crate::json::Json;
use crate::json::writer;
use crate::model::entry::{Entry, EntryKind};
use bumpalo::Bump;
use std::collections::HashMap;

/// Where a request's system blocks and tools come from.
#[derive(Debug, Clone)]
pub enum SystemSource {
    /// The session's `api-request-shape` written before the turn (2.1.3xx):
    /// its blocks each get the breakpoint's `cache_control`, after the
    /// what-if edits.
    SessionShape(ShapeEdits),
    /// Blocks and tools rendered once for the session (seed layout).
    Rendered { blocks: Vec<serde_json::Value>, tools: Option<serde_json::Value> },
}

/// What-if changes to a session's recorded system prompt and tools.
#[derive(Debug, Clone, Default)]
pub struct ShapeEdits {
    /// Replaces the CLI prefix (first shape block).
    pub prefix: Option<String>,
    /// Replaces the blocks after the prefix with one block.
    pub prompt: Option<String>,
    /// Appended to the last block after `"\n\n"` (2.1.328
    /// append-system-prompt capture).
    pub append: Option<String>,
    /// Replaces the tool list.
    pub tools: Option<serde_json::Value>,
}

impl ShapeEdits {
    fn is_empty(&self) -> bool {
        self.prefix.is_none() && self.prompt.is_none() && self.append.is_none() && self.tools.is_none()
    }
}

/// Which text feeds the billing header's suffix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BillingText {
    /// The first text block of the first message (2.1.88).
    FirstBlock,
    /// The first text of the first message that is not a reminder (2.1.3xx).
    FirstNonReminder,
}

/// What the messages side needs from a profile.
#[derive(Debug, Clone)]
pub struct Layout {
    pub system: SystemSource,
    /// Body params after `metadata`, in wire order (`max_tokens`,
    /// `thinking`, `context_management`, `output_config`).
    pub params: Vec<(String, serde_json::Value)>,
    /// `anthropic-beta` header values.
    pub betas: Vec<String>,
    /// Appended to the billing header (2.1.88: `" cch=00000;"`).
    pub billing_extra: String,
    pub billing_text: BillingText,
    /// Param names copied into every `role: system` message (2.1.328:
    /// `output_config`).
    pub system_message_params: Vec<String>,
    /// System-role attachments become user text (no system turns).
    pub system_attachments_as_user: bool,
    pub attachments_into_tool_result: bool,
    /// The message breakpoint's `cache_control` value.
    pub cache_control: serde_json::Value,
    /// Replaces the model of every request (what-if `--model`).
    pub model: Option<String>,
}

impl Layout {
    /// The `cc-2.1.328` layout as captured (all 14 scenarios).
    pub fn cc_2_1_328() -> Self {
        use serde_json::json;
        Layout {
            system: SystemSource::SessionShape(ShapeEdits::default()),
            params: vec![
                ("max_tokens".into(), json!(128000)),
                ("thinking".into(), json!({"type": "adaptive", "display": "omitted"})),
                ("context_management".into(), json!({"edits": [{"type": "clear_thinking_20251015", "keep": "all"}]})),
                ("output_config".into(), json!({"effort": "medium"})),
            ],
            betas: [
                "claude-code-20250219",
                "interleaved-thinking-2025-05-14",
                "context-management-2025-06-27",
                "per-turn-control-2026-07-01",
                "mid-conversation-tool-changes-2026-07-01",
            ]
            .map(String::from)
            .to_vec(),
            billing_extra: String::new(),
            billing_text: BillingText::FirstNonReminder,
            system_message_params: vec!["output_config".into()],
            system_attachments_as_user: false,
            attachments_into_tool_result: false,
            cache_control: json!({"type": "ephemeral"}),
            model: None,
        }
    }
}

/// Pieces the transcript does not hold, added by the profile.
#[derive(Debug, Clone, Default)]
pub struct Extras {
    /// A meta user message put first in every request (seed
    /// `prependUserContext`).
    pub user_context: Option<String>,
    /// A reminder attached to the first prompt of every CLI process (2.1.88
    /// skills listing; a process starts at the file start or after a
    /// `last-prompt` line).
    pub per_process: Option<String>,
    /// Reminders attached after a tool result, by the uuid of its entry
    /// (conditional memory rules brought in by a `Read`).
    pub after_read: HashMap<String, Vec<String>>,
    /// Problems found while preparing (memory includes refused…), reported
    /// as diagnostics of the session.
    pub warnings: Vec<(crate::diag::DiagKind, String)>,
    /// The todo reminder of the seed layout: its text and after how many
    /// assistant lines without a `TodoWrite` call (or since the last
    /// reminder) it is attached after the newest message. It stays in the
    /// requests that follow in the same process (2.1.88 keeps attachments in
    /// memory, not in the transcript; seeds: `TODO_REMINDER_CONFIG`, 10
    /// turns; checked on long-session, where the 10th assistant line
    /// triggers it).
    pub todo_reminder: Option<(String, usize)>,
}

/// Counts of what the pipeline repaired or changed, per session.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct PipelineReport {
    pub turns: u64,
    pub requests_repaired: u64,
    pub pairing: PairingRepairsTotal,
    pub media_stripped: u64,
    pub thinking_only_dropped: u64,
    pub empty_assistant_dropped: u64,
    pub approximated_attachments: u64,
    /// Requests whose conversation was empty or started with an assistant
    /// message (its start is not in the file): a user message was put
    /// first — the
    /// subagent's prompt when the main transcript has it, else
    /// [`MISSING_START`].
    pub leading_user_inserted: u64,
}

/// Text of the user message put before a conversation whose start is not in
/// the transcript (ctxasm's wording).
pub const MISSING_START: &str = "[The start of this conversation is not in the transcript]";

/// [`PairingRepairs`] summed over requests.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct PairingRepairsTotal {
    pub synthetic_results: u64,
    pub dropped_results: u64,
    pub inserted_messages: u64,
    pub removed_messages: u64,
}

impl PipelineReport {
    /// Add another session's counts.
    pub fn add(&mut self, o: &PipelineReport) {
        self.turns += o.turns;
        self.requests_repaired += o.requests_repaired;
        self.pairing.synthetic_results += o.pairing.synthetic_results;
        self.pairing.dropped_results += o.pairing.dropped_results;
        self.pairing.inserted_messages += o.pairing.inserted_messages;
        self.pairing.removed_messages += o.pairing.removed_messages;
        self.media_stripped += o.media_stripped;
        self.thinking_only_dropped += o.thinking_only_dropped;
        self.empty_assistant_dropped += o.empty_assistant_dropped;
        self.approximated_attachments += o.approximated_attachments;
        self.leading_user_inserted += o.leading_user_inserted;
    }
}

impl PairingRepairsTotal {
    fn add(&mut self, r: &PairingRepairs) {
        self.synthetic_results += r.synthetic_results as u64;
        self.dropped_results += r.dropped_results as u64;
        self.inserted_messages += r.inserted_messages as u64;
        self.removed_messages += r.removed_messages as u64;
    }
}

/// What the pipeline produced for one session.
#[derive(Debug, Default)]
pub struct SessionPipeline<'a> {
    pub requests: Vec<Request<'a>>,
    pub report: PipelineReport,
    pub diagnostics: Vec<Diagnostic>,
}

/// Assemble every turn of `session`.
pub fn assemble_pipeline<'a>(
    bump: &'a Bump,
    session: &Session<'a, '_>,
    layout: &Layout,
    extras: &Extras,
    identity: &RecordOptions,
) -> SessionPipeline<'a> {
    let mut out = SessionPipeline::default();
    let statics = Statics::new(bump, layout);
    let mut shapes: HashMap<&'a str, &'a Json<'a>> = HashMap::new();
    for f in session.files() {
        for e in &f.parsed.entries {
            if let EntryKind::ApiRequestShape { shape_hash: Some(h), shape: Some(s) } = e.kind {
                shapes.entry(h).or_insert(s);
            }
        }
    }
    for f in session.files() {
        // A subagent file, or a file of sidechain lines that name their
        // agent (a 2.0.x agent transcript not named `agent-*.jsonl`): its
        // requests are the agent's, so their ids never collide with the
        // main chain's.
        let agent_id: Option<&'a str> = match &f.file.kind {
            crate::input::discover::FileKind::Subagent { agent_id, .. } => Some(bump.alloc_str(agent_id)),
            _ => {
                let mut conv = f.parsed.entries.iter().filter(|e| e.is_conversation());
                let all_side = conv.clone().next().is_some() && conv.all(|e| e.env.is_sidechain);
                let named = f.parsed.entries.iter().find(|e| e.is_conversation()).and_then(|e| e.env.agent_id);
                if all_side { named } else { None }
            }
        };
        chain(bump, f, agent_id, session, layout, &statics, extras, identity, &mut out);
    }
    out
}

/// Layout values converted once per session.
struct Statics<'a> {
    params: Vec<(&'a str, Json<'a>)>,
    system_extra: Vec<(&'a str, Json<'a>)>,
    cache_control: Json<'a>,
    /// Rendered system blocks (one node each for the whole session) and
    /// their segment keys (xxh3-128 of their bytes, computed once).
    system: Option<(Vec<&'a Json<'a>>, Vec<Option<u128>>)>,
    tools: Option<&'a Json<'a>>,
    tools_key: Option<u128>,
    betas: Vec<&'a str>,
}

fn content_key(v: &Json<'_>) -> u128 {
    xxhash_rust::xxh3::xxh3_128(&writer::to_vec(v))
}

impl<'a> Statics<'a> {
    fn new(bump: &'a Bump, layout: &Layout) -> Self {
        let params: Vec<(&'a str, Json<'a>)> =
            layout.params.iter().map(|(k, v)| (&*bump.alloc_str(k), Json::from_serde(bump, v))).collect();
        let system_extra =
            params.iter().filter(|(k, _)| layout.system_message_params.iter().any(|p| p == k)).copied().collect();
        let (system, tools) = match &layout.system {
            SystemSource::SessionShape(edits) => {
                (None, edits.tools.as_ref().map(|t| &*bump.alloc(Json::from_serde(bump, t))))
            }
            SystemSource::Rendered { blocks, tools } => {
                let nodes: Vec<&'a Json<'a>> = blocks.iter().map(|b| &*bump.alloc(Json::from_serde(bump, b))).collect();
                let keys = nodes.iter().map(|n| Some(content_key(n))).collect();
                (Some((nodes, keys)), tools.as_ref().map(|t| &*bump.alloc(Json::from_serde(bump, t))))
            }
        };
        Statics {
            params,
            system_extra,
            cache_control: Json::from_serde(bump, &layout.cache_control),
            system,
            tools_key: tools.map(content_key),
            tools,
            betas: layout.betas.iter().map(|b| &*bump.alloc_str(b)).collect(),
        }
    }
}

/// Structural equality that is O(1) for values built from the same arena
/// slices (messages rebuilt for each turn from the same transcript blocks).
fn same(a: &Json<'_>, b: &Json<'_>) -> bool {
    match (a, b) {
        (Json::Arr(x), Json::Arr(y)) => {
            std::ptr::eq(x.as_ptr(), y.as_ptr()) && x.len() == y.len()
                || x.len() == y.len() && x.iter().zip(y.iter()).all(|(p, q)| same(p, q))
        }
        (Json::Obj(x), Json::Obj(y)) => {
            std::ptr::eq(x.as_ptr(), y.as_ptr()) && x.len() == y.len()
                || x.len() == y.len() && x.iter().zip(y.iter()).all(|((k, p), (l, q))| k == l && same(p, q))
        }
        (Json::Str(x), Json::Str(y)) => std::ptr::eq(x.as_ptr(), y.as_ptr()) && x.len() == y.len() || x == y,
        _ => a == b,
    }
}

#[allow(clippy::too_many_arguments)]
fn chain<'a>(
    bump: &'a Bump,
    f: &ParsedFile<'a, '_>,
    agent_id: Option<&'a str>,
    session: &Session<'a, '_>,
    layout: &Layout,
    statics: &Statics<'a>,
    extras: &Extras,
    identity: &RecordOptions,
    out: &mut SessionPipeline<'a>,
) {
    let entries = &f.parsed.entries;
    let display: &'a str = bump.alloc_str(&f.file.display);
    let links = Links::new(entries);
    let agent_prompt = agent_id.and_then(|id| subagent_prompt(session, id));
    let rules = Rules {
        system_message_extra: statics.system_extra.clone(),
        system_attachments_as_user: layout.system_attachments_as_user,
        attachments_into_tool_result: layout.attachments_into_tool_result,
    };
    let entrypoint = entries
        .iter()
        .chain(session.main.iter().flat_map(|m| m.parsed.entries.iter()))
        .find_map(|e| e.raw.get_str("entrypoint"))
        .unwrap_or("cli");
    // Pieces of each entry, built once and shared by every turn.
    let mut pieces: Vec<Option<Piece<'a>>> = Vec::with_capacity(entries.len());
    for e in entries {
        let p = normalize::piece_of_entry(bump, e);
        if let (Some(Piece::Attachment { .. }), EntryKind::Attachment(a)) = (&p, &e.kind)
            && a.rendered.is_none()
        {
            out.report.approximated_attachments += 1;
        }
        pieces.push(p);
    }
    let user_context = extras.user_context.as_deref().map(|t| Piece::User {
        blocks: bump.alloc_slice_copy(&[normalize::text_block(bump, bump.alloc_str(t))]),
        tool_results: false,
    });
    let per_process = extras.per_process.as_deref().map(|t| Piece::Attachment {
        role: super::attachments::AttachmentRole::User,
        texts: smallvec::smallvec![&*bump.alloc_str(t)],
    });
    // Prompts that start a CLI process (seed: the skills listing rides on them).
    let process_starts = process_first_prompts(entries);
    let mut shape: Option<&'a Json<'a>> = None;
    let mut shape_line = 0usize;
    let mut scratch: Vec<Piece<'a>> = Vec::new();
    let mut prev_turn: Vec<&'a Json<'a>> = Vec::new();
    let mut collapsed: rustc_hash::FxHashMap<*const Json<'a>, &'a Json<'a>> = Default::default();
    // The system blocks and tools of the current shape, built once per shape.
    let mut shape_sys: Option<ShapeSystem<'a>> = None;
    // Reminders the running process added (entry index they follow, text).
    let mut anchored: Vec<(usize, &'a str)> = Vec::new();
    let mut anchored_process: Option<usize> = None;
    for (n, turn) in projection::turns(entries).iter().enumerate() {
        out.report.turns += 1;
        let projected = projection::project(entries, &links, turn);
        // Only the running process's listing is sent: earlier processes'
        // listings lived in their memory, not in the transcript.
        let current_start = process_starts.iter().rev().find(|&&i| i < turn.first).copied();
        if anchored_process != current_start {
            anchored.clear();
            anchored_process = current_start;
        }
        if let Some((text, every)) = &extras.todo_reminder
            && let Some(&last) = projected.last()
        {
            let mut since = 0usize;
            for &i in projected.iter().rev() {
                if anchored.iter().any(|&(a, _)| a == i) || uses_tool(&entries[i], "TodoWrite") {
                    break;
                }
                if matches!(entries[i].kind, EntryKind::Assistant(_)) {
                    since += 1;
                }
            }
            if since >= *every {
                anchored.push((last, bump.alloc_str(text)));
            }
        }
        scratch.clear();
        if let Some(p) = &user_context {
            scratch.push(p.clone());
        }
        for &i in &projected {
            if let Some(p) = &pieces[i] {
                scratch.push(p.clone());
            }
            if let Some(p) = &per_process
                && current_start == Some(i)
            {
                scratch.push(p.clone());
            }
            for &(_, text) in anchored.iter().filter(|(a, _)| *a == i) {
                scratch.push(Piece::Attachment {
                    role: super::attachments::AttachmentRole::User,
                    texts: smallvec::smallvec![text],
                });
            }
            for r in read_reminders(&entries[i], extras) {
                scratch.push(Piece::Attachment {
                    role: super::attachments::AttachmentRole::User,
                    texts: smallvec::smallvec![&*bump.alloc_str(r)],
                });
            }
        }
        let (messages, nrep) = normalize::normalize(bump, &scratch, &rules);
        out.report.thinking_only_dropped += nrep.dropped_thinking_only as u64;
        out.report.empty_assistant_dropped += nrep.dropped_empty_assistant as u64;
        let (messages, prep) = ensure_tool_result_pairing(bump, &messages);
        out.report.pairing.add(&prep);
        let (mut messages, stripped) = media::limit_media(bump, &messages);
        out.report.media_stripped += stripped as u64;
        if prep.any() || stripped > 0 {
            out.report.requests_repaired += 1;
        }
        if messages
            .iter()
            .find(|m| m.get_str("role") != Some("system"))
            .is_none_or(|m| m.get_str("role") != Some("user"))
        {
            // The conversation's start is not in this file (a subagent file
            // without its prompt, an excerpt, a lost line): the API needs a
            // user message first.
            let text = agent_prompt.unwrap_or(MISSING_START);
            messages.insert(0, normalize::message(bump, "user", &[normalize::text_block(bump, text)], &[]));
            out.report.leading_user_inserted += 1;
            if !(prep.any() || stripped > 0) {
                out.report.requests_repaired += 1;
            }
        }
        let first_text: &str = match layout.billing_text {
            BillingText::FirstNonReminder => messages.first().map_or("", |m| first_user_text(m)),
            BillingText::FirstBlock => messages.first().map_or("", |m| first_block_text(m)),
        };
        let first_text = first_text.to_string();
        // A message equal to the previous turn's at the same place is that
        // node: dedup and the byte caches then see it once per session.
        for (m, p) in messages.iter_mut().zip(&prev_turn) {
            if !std::ptr::eq(*m, *p) && same(m, p) {
                *m = p;
            }
        }
        prev_turn.clone_from(&messages);
        breakpoints::add_cache_breakpoints(bump, &mut messages, statics.cache_control);
        let last = messages.len().saturating_sub(1);
        let messages: Vec<&'a Json<'a>> = messages
            .into_iter()
            .enumerate()
            .map(|(i, m)| {
                if i == last {
                    collapse(bump, m)
                } else {
                    *collapsed.entry(m as *const Json<'a>).or_insert_with(|| collapse(bump, m))
                }
            })
            .collect();
        // System and tools.
        let e = &entries[turn.first];
        let (sys_nodes, sys_keys, tools, tools_key): (&[&'a Json<'a>], &[Option<u128>], _, _) = match &statics.system {
            Some((nodes, keys)) => (nodes, keys, statics.tools, statics.tools_key),
            None => {
                // The newest shape written before this turn.
                while shape_line < turn.first {
                    if let EntryKind::ApiRequestShape { shape: Some(s), .. } = entries[shape_line].kind {
                        shape = Some(s);
                    }
                    shape_line += 1;
                }
                let Some(s) = shape.or_else(|| session_shape(session)) else {
                    out.diagnostics.push(Diagnostic::new(
                        display,
                        e.line,
                        DiagKind::InvalidRequest,
                        "no system prompt for this turn: the session has no api-request-shape; pass --profile with an extracted profile",
                    ));
                    continue;
                };
                if shape_sys.as_ref().is_none_or(|c| !std::ptr::eq(c.0, s)) {
                    shape_sys = Some(shape_system(bump, s, layout, statics));
                }
                let Some((_, nodes, keys, tools, tools_key)) = &shape_sys else { continue };
                (nodes, keys, *tools, *tools_key)
            }
        };
        let version = e.env.version.unwrap_or("");
        let suffix = billing_suffix(&identity.billing_salt, &first_text, version);
        let header = format!(
            "x-anthropic-billing-header: cc_version={version}.{suffix}; cc_entrypoint={entrypoint};{}",
            layout.billing_extra
        );
        let mut system: Vec<&'a Json<'a>> = Vec::with_capacity(sys_nodes.len() + 1);
        system.push(bump.alloc(normalize::text_block(bump, bump.alloc_str(&header))));
        system.extend_from_slice(sys_nodes);
        let mut system_keys = Vec::with_capacity(sys_keys.len() + 1);
        system_keys.push(None);
        system_keys.extend_from_slice(sys_keys);
        let model = match &layout.model {
            Some(m) => Json::Str(bump.alloc_str(m)),
            None => e.as_assistant().and_then(|a| a.model).map_or(Json::Null, Json::Str),
        };
        let session_id = e.env.session_id.unwrap_or("");
        let body = Body {
            model,
            messages,
            system,
            system_keys,
            tools,
            tools_key,
            metadata: user_id(bump, identity, session_id),
            params: statics.params.clone(),
            stream: true,
            betas: statics.betas.clone(),
        };
        out.requests.push(Request {
            custom_id: custom_id(&super::records::id_session_part(f.file, session_id), agent_id, n),
            session_id,
            agent_id,
            index: n,
            file: display,
            line: e.line,
            timestamp: e.env.timestamp,
            body,
        });
    }
}

/// The prompt the main transcript gave subagent `agent_id`: the `prompt`
/// input of the tool call whose result names the agent
/// (`toolUseResult.agentId`).
fn subagent_prompt<'a>(session: &Session<'a, '_>, agent_id: &str) -> Option<&'a str> {
    let main = &session.main.as_ref()?.parsed.entries;
    let call_id = main.iter().find_map(|e| {
        let u = e.as_user()?;
        (u.tool_use_result?.get_str("agentId")? == agent_id).then_some(())?;
        u.content.blocks().iter().find_map(|b| match b.kind {
            crate::model::content::BlockKind::ToolResult { tool_use_id, .. } => Some(tool_use_id),
            _ => None,
        })
    })?;
    main.iter().filter_map(Entry::as_assistant).flat_map(|a| a.content.blocks()).find_map(|b| match b.kind {
        crate::model::content::BlockKind::ToolUse { id, input, .. } if id == call_id => input.get_str("prompt"),
        _ => None,
    })
}

/// Apply what-if edits to a shape's system blocks.
fn edit_shape<'a>(bump: &'a Bump, blocks: &mut Vec<Json<'a>>, edits: &ShapeEdits) {
    let text = |t: &str| normalize::text_block(bump, bump.alloc_str(t));
    if let Some(p) = &edits.prefix {
        match blocks.first_mut() {
            Some(b) => *b = text(p),
            None => blocks.push(text(p)),
        }
    }
    if let Some(p) = &edits.prompt {
        blocks.truncate(1);
        blocks.push(text(p));
    }
    if let Some(a) = &edits.append
        && let Some(last) = blocks.last_mut()
    {
        let joined = format!("{}\n\n{a}", last.get_str("text").unwrap_or(""));
        *last = normalize::with_member(bump, last, "text", Json::Str(bump.alloc_str(&joined))).unwrap_or(*last);
    }
}

/// A shape (by address), its system blocks (edited, each with the
/// breakpoint's cache control), their segment keys, its tools and their key.
type ShapeSystem<'a> = (*const Json<'a>, Vec<&'a Json<'a>>, Vec<Option<u128>>, Option<&'a Json<'a>>, Option<u128>);

/// The [`ShapeSystem`] of shape `s`.
fn shape_system<'a>(bump: &'a Bump, s: &'a Json<'a>, layout: &Layout, statics: &Statics<'a>) -> ShapeSystem<'a> {
    let cc = statics.cache_control;
    let edits = match &layout.system {
        SystemSource::SessionShape(edits) => Some(edits),
        SystemSource::Rendered { .. } => None,
    };
    let mut blocks: Vec<Json<'a>> = s.get("system").and_then(Json::as_array).unwrap_or(&[]).to_vec();
    if let Some(edits) = edits.filter(|e| !e.is_empty()) {
        edit_shape(bump, &mut blocks, edits);
    }
    let nodes: Vec<&'a Json<'a>> = blocks
        .iter()
        .map(|b| &*bump.alloc(normalize::with_member(bump, b, "cache_control", cc).unwrap_or(*b)))
        .collect();
    let keys = nodes.iter().map(|n| Some(content_key(n))).collect();
    let (tools, tools_key) = match statics.tools {
        Some(t) => (Some(t), statics.tools_key),
        None => (s.get("tools"), s.get("tools").map(content_key)),
    };
    (s as *const Json<'a>, nodes, keys, tools, tools_key)
}

/// Any shape of the session (a subagent file may not write its own).
fn session_shape<'a>(session: &Session<'a, '_>) -> Option<&'a Json<'a>> {
    session.files().flat_map(|f| f.parsed.entries.iter()).find_map(|e| match e.kind {
        EntryKind::ApiRequestShape { shape: Some(s), .. } => Some(s),
        _ => None,
    })
}

fn first_block_text<'a>(m: &Json<'a>) -> &'a str {
    match m.get("content") {
        Some(Json::Str(s)) => s,
        Some(Json::Arr(blocks)) => blocks.iter().find_map(|b| b.get_str("text")).unwrap_or(""),
        _ => "",
    }
}

/// `metadata` with `user_id` the JSON text Claude Code sends.
fn user_id<'a>(bump: &'a Bump, identity: &RecordOptions, session_id: &str) -> Json<'a> {
    let mut s = Vec::with_capacity(160);
    s.extend_from_slice(b"{\"device_id\":");
    writer::write_str(&mut s, &identity.device_id);
    s.extend_from_slice(b",\"account_uuid\":");
    writer::write_str(&mut s, &identity.account_uuid);
    s.extend_from_slice(b",\"session_id\":");
    writer::write_str(&mut s, session_id);
    s.push(b'}');
    let s = bump.alloc_str(&String::from_utf8_lossy(&s));
    Json::Obj(bump.alloc_slice_copy(&[("user_id", Json::Str(s))]))
}

/// Entry indices of the prompts that begin a CLI process: the first plain
/// user prompt of the file and the first one after each `last-prompt` line
/// (a `-p` process writes `last-prompt` as it ends; checked on
/// resume-multi-prompt of the 2.1.88 captures).
fn process_first_prompts(entries: &[Entry<'_>]) -> Vec<usize> {
    let mut out = Vec::new();
    let mut waiting = true;
    for (i, e) in entries.iter().enumerate() {
        match &e.kind {
            EntryKind::LastPrompt { .. } => waiting = true,
            EntryKind::User(u) if waiting && !e.env.is_meta => {
                let is_tool_result = u
                    .content
                    .blocks()
                    .iter()
                    .any(|b| matches!(b.kind, crate::model::content::BlockKind::ToolResult { .. }));
                if !is_tool_result {
                    out.push(i);
                    waiting = false;
                }
            }
            _ => {}
        }
    }
    out
}

/// Whether `e` is an assistant line calling tool `name`.
fn uses_tool(e: &Entry<'_>, name: &str) -> bool {
    e.as_assistant().is_some_and(|a| {
        a.content
            .blocks()
            .iter()
            .any(|b| matches!(b.kind, crate::model::content::BlockKind::ToolUse { name: n, .. } if n == name))
    })
}

/// Reminders to add after the tool result in `e`.
fn read_reminders<'x>(e: &Entry<'_>, extras: &'x Extras) -> &'x [String] {
    if extras.after_read.is_empty() {
        return &[];
    }
    e.env.uuid.and_then(|u| extras.after_read.get(u)).map_or(&[], Vec::as_slice)
}
