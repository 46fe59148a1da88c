//! Normalization: from projected transcript entries to API messages
//! (SPEC.md stage 4, `normalizeMessagesForAPI`).
//!
//! Entries first become [`Piece`]s ([`piece_of_entry`]); the pipeline may add
//! pieces a transcript does not hold (the 2.1.88 skills listing, the user
//! context). [`normalize`] then, in order:
//! 0. strips internal fields ([`strip_internal`]: `caller`, tool-search
//!    `tool_reference` items);
//! 1. drops what is never sent: progress and metadata lines, synthetic API
//!    error messages (not the resume filler, [`is_resume_filler`]), `isVisibleInTranscriptOnly` user lines, assistant
//!    messages of only thinking (orphaned thinking) or only whitespace text;
//!    a local-command `system` line becomes user text;
//! 2. reorders attachments: a user-role attachment moves up past plain user
//!    messages (prompts, meta text) and system-role attachments, and stops
//!    at an assistant message, a tool result or another user-role
//!    attachment — so reminders go before the prompt they came with and
//!    after the tool results they came with; a plain user message moves up
//!    past system-role attachments, so those a process wrote before its
//!    prompt join the ones written after it in one system message (2.1.3xx
//!    after `/compact`: the listings written at the compaction, then the
//!    prompt, then the date; compact-resume captures);
//! 3. builds messages: consecutive user-role attachments are one user
//!    message (their texts as text blocks); consecutive system-role
//!    attachments are one `role: "system"` message whose text is their
//!    texts without the `<system-reminder>` wrapper, joined by `"\n\n"`,
//!    plus the profile's extra members (`output_config` in 2.1.328);
//!    assistant lines sharing a `message.id` are one message;
//! 4. merges consecutive user messages: a text block ending the earlier
//!    message gets `"\n"` appended (not with [`Rules::merge_plain`], 2.1.50),
//!    then the blocks are concatenated; with
//!    [`Rules::attachments_into_tool_result`] (2.1.88) attachment text after
//!    a string tool result is appended to that result's content instead.
//!
//! Rules 2–4 were found on the captures: all requests of the 14 2.1.328
//! scenarios and of the 14 2.1.88 scenarios (see `tests/pipeline.rs`).

use super::attachments::{self, AttachmentRole};
pub use crate::assemble::wire::{message, text_block, with_member};
use crate::json::Json;
use crate::model::content::BlockKind;
use crate::model::entry::{Entry, EntryKind};
use bumpalo::Bump;
use smallvec::SmallVec;

/// A unit of conversation before normalization.
#[derive(Debug, Clone, PartialEq)]
pub enum Piece<'a> {
    /// A user message: a prompt, meta text, tool results.
    User { blocks: &'a [Json<'a>], tool_results: bool },
    /// One line of an assistant message.
    Assistant { id: Option<&'a str>, blocks: &'a [Json<'a>] },
    /// Text an attachment adds.
    Attachment { role: AttachmentRole, texts: SmallVec<[&'a str; 2]> },
    /// From here on, the members system turns carry (a CLI process's
    /// `--effort`, after the prompt that started it): sends nothing itself.
    Params { extra: &'a [(&'a str, Json<'a>)] },
}

/// Profile-dependent normalization choices.
#[derive(Debug, Clone, Default)]
pub struct Rules<'a> {
    /// Members a `role: "system"` message carries when they differ from
    /// the last ones sent (2.1.328: `output_config`), until a
    /// [`Piece::Params`] says otherwise.
    pub system_message_extra: Vec<(&'a str, Json<'a>)>,
    /// Those members go on the first system turn only (2.1.300).
    pub system_message_extra_first_only: bool,
    /// System-role attachments are sent as user text (layouts without
    /// system turns).
    pub system_attachments_as_user: bool,
    /// A system turn's texts keep their `<system-reminder>` wrapper
    /// (2.1.275 Sonnet 5: role `system-reminder`).
    pub system_keeps_reminder: bool,
    /// 2.1.88: attachment text following a string `tool_result` is appended
    /// to that result: the result without trailing whitespace, then each
    /// text after `"\n\n"` (memory-files and long-session captures).
    pub attachments_into_tool_result: bool,
    /// Rule 4 without the `"\n"`: the blocks are concatenated as they are
    /// (2.1.50, 2.0.77: [`crate::profile::Layout::merges_with_newline`] off).
    pub merge_plain: bool,
}

/// What normalization dropped or merged.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Report {
    pub dropped_thinking_only: usize,
    pub dropped_empty_assistant: usize,
    pub merged_user_messages: usize,
    pub merged_assistant_lines: usize,
}

/// The piece an entry contributes, if any (no profile attachment
/// templates).
pub fn piece_of_entry<'a>(bump: &'a Bump, e: &Entry<'a>) -> Option<Piece<'a>> {
    piece_of_entry_with(bump, e, &[], &Aliases::new())
}

/// Tool names sent under another name ([`Profile::tool_aliases`](crate::profile::Profile::tool_aliases)).
pub type Aliases = std::collections::BTreeMap<String, String>;

/// The piece an entry contributes, attachments rendered with the profile's
/// `templates` where they have no `rendered` text.
pub fn piece_of_entry_with<'a>(
    bump: &'a Bump,
    e: &Entry<'a>,
    templates: &[crate::profile::AttachmentTemplate],
    aliases: &Aliases,
) -> Option<Piece<'a>> {
    match &e.kind {
        EntryKind::User(u) => {
            // A compact summary is written visible-in-transcript-only, and is
            // what the model gets instead of the history before the boundary.
            if u.is_visible_in_transcript_only && !u.is_compact_summary {
                return None;
            }
            let blocks: &'a [Json<'a>] = match e.raw.get("message").and_then(|m| m.get("content"))? {
                Json::Arr(blocks) => blocks,
                Json::Str(s) => bump.alloc_slice_copy(&[text_block(bump, s)]),
                _ => return None,
            };
            if blocks.is_empty() {
                return None;
            }
            let blocks = strip_internal(bump, blocks, aliases);
            let tool_results = u.content.blocks().iter().any(|b| matches!(b.kind, BlockKind::ToolResult { .. }));
            Some(Piece::User { blocks, tool_results })
        }
        EntryKind::Assistant(a) => {
            if a.is_api_error_message || (a.model == Some("<synthetic>") && !is_resume_filler(e)) {
                return None;
            }
            let blocks = e.raw.get("message").and_then(|m| m.get("content")).and_then(Json::as_array)?;
            Some(Piece::Assistant { id: a.message_id, blocks: strip_internal(bump, blocks, aliases) })
        }
        EntryKind::Attachment(_) => {
            let r = attachments::render_with(bump, e, templates)?;
            Some(Piece::Attachment { role: r.role, texts: r.texts })
        }
        EntryKind::System(s) if s.subtype == Some("local_command") => {
            let text = s.content.filter(|t| !t.trim().is_empty())?;
            Some(Piece::User { blocks: bump.alloc_slice_copy(&[text_block(bump, text)]), tool_results: false })
        }
        _ => None,
    }
}

/// Whether `e` is the `<synthetic>` assistant message a resumed CLI writes
/// when the transcript it continues ends on a user message (a killed
/// process, a `/compact`-only one): written with `isApiErrorMessage: false`
/// or, by 1.0.128, without it (API errors say `true`, or carry their
/// `error`), and sent, so the next prompt stays a user
/// message of its own (2.1.88 killed-resume and compact-resume captures).
pub(crate) fn is_resume_filler(e: &Entry<'_>) -> bool {
    e.as_assistant().is_some_and(|a| a.model == Some("<synthetic>") && !a.is_api_error_message)
        // 1.0.128 writes the filler without the flag.
        && e.raw.get_bool("isApiErrorMessage") != Some(true)
        // A synthetic API error says which error (`error`, `apiErrorStatus`).
        && e.raw.get("error").is_none()
        && e.raw.get("apiErrorStatus").is_none()
}

/// Blocks without the client's internal fields (seeds: "strip unsupported
/// fields such as tool_reference, caller"): `caller` of a `tool_use`
/// (2.1.x transcripts write `{"type":"direct"}`), and `tool_reference`
/// items inside a `tool_result` (tool search results; ctxasm does not send
/// the tool-search beta). A `tool_use` whose name the release sends under
/// another name gets that name (`aliases`). Blocks without any of these are
/// returned as they are.
fn strip_internal<'a>(bump: &'a Bump, blocks: &'a [Json<'a>], aliases: &Aliases) -> &'a [Json<'a>] {
    let alias = |b: &Json<'_>| b.get_str("name").and_then(|n| aliases.get(n));
    let has_internal = |b: &Json<'_>| match b.get_str("type") {
        Some("tool_use") => b.get("caller").is_some() || alias(b).is_some(),
        Some("tool_result") => b
            .get("content")
            .and_then(Json::as_array)
            .is_some_and(|c| c.iter().any(|x| x.get_str("type") == Some("tool_reference"))),
        _ => false,
    };
    if !blocks.iter().any(has_internal) {
        return blocks;
    }
    let out: Vec<Json<'a>> = blocks
        .iter()
        .map(|b| {
            if !has_internal(b) {
                return *b;
            }
            let renamed: Option<&'a str> =
                alias(b).filter(|_| b.get_str("type") == Some("tool_use")).map(|a| &*bump.alloc_str(a));
            let members: Vec<(&'a str, Json<'a>)> = b
                .as_object()
                .unwrap_or(&[])
                .iter()
                .filter(|(k, _)| *k != "caller")
                .map(|&(k, v)| match (k, v) {
                    ("name", _) if let Some(n) = renamed => (k, Json::Str(n)),
                    ("content", Json::Arr(items)) => {
                        let kept: Vec<Json<'a>> =
                            items.iter().filter(|x| x.get_str("type") != Some("tool_reference")).copied().collect();
                        (k, Json::Arr(bump.alloc_slice_copy(&kept)))
                    }
                    other => other,
                })
                .collect();
            Json::Obj(bump.alloc_slice_copy(&members))
        })
        .collect();
    bump.alloc_slice_copy(&out)
}

fn is_thinking(b: &Json<'_>) -> bool {
    matches!(b.get_str("type"), Some("thinking") | Some("redacted_thinking"))
}

fn is_blank_text(b: &Json<'_>) -> bool {
    b.get_str("type") == Some("text") && b.get_str("text").is_none_or(|t| t.trim().is_empty())
}

#[derive(Debug)]
enum Msg<'a> {
    User(Vec<Json<'a>>),
    Assistant(Option<&'a str>, Vec<Json<'a>>),
    /// Texts (none: an empty turn that only carries members) and members.
    System(Vec<&'a str>, &'a [(&'a str, Json<'a>)]),
}

/// A message being built and the index of the piece it starts at.
type Built<'a> = (Msg<'a>, usize);

/// What normalization dropped or merged, at the piece it happened at (so a
/// [`Mark`] knows the counts before it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Event {
    ThinkingOnlyDropped,
    EmptyAssistantDropped,
    UserMessagesMerged,
    AssistantLinesMerged,
}

impl Report {
    fn add(&mut self, e: Event) {
        match e {
            Event::ThinkingOnlyDropped => self.dropped_thinking_only += 1,
            Event::EmptyAssistantDropped => self.dropped_empty_assistant += 1,
            Event::UserMessagesMerged => self.merged_user_messages += 1,
            Event::AssistantLinesMerged => self.merged_assistant_lines += 1,
        }
    }
}

/// Where normalization can resume: a piece boundary right after a whole
/// assistant message that is sent (not hollow). Nothing crosses it — an
/// attachment moves up no further than an assistant message, lines of one
/// `message.id` merge only when adjacent, user messages merge only when no
/// assistant message is between them — so the messages before it are
/// final, and what follows depends on them only through the members last
/// sent and the count of system turns, which a mark keeps.
#[derive(Debug, Clone)]
pub(crate) struct Mark<'a> {
    /// The piece it is before.
    pub(crate) piece: usize,
    /// The messages before it.
    pub(crate) message: usize,
    /// The `message.id` of the assistant message it follows (`None` at the
    /// start): a next piece of that id would join it.
    after: Option<&'a str>,
    members: Members<'a>,
    /// System turns with texts before it.
    systems: usize,
    /// What was dropped and merged before it.
    pub(crate) report: Report,
}

impl<'a> Mark<'a> {
    /// The start of a conversation.
    pub(crate) fn start(bump: &'a Bump, rules: &Rules<'a>) -> Self {
        Mark {
            piece: 0,
            message: 0,
            after: None,
            members: Members::new(bump.alloc_slice_copy(&rules.system_message_extra)),
            systems: 0,
            report: Report::default(),
        }
    }

    /// Whether normalization of `pieces` can resume here: the pieces up to
    /// it are those it was found on (the caller's), and the next piece does
    /// not continue the assistant message it follows.
    pub(crate) fn resumes(&self, pieces: &[Piece<'_>]) -> bool {
        self.piece <= pieces.len()
            && !matches!((pieces.get(self.piece), self.after),
                (Some(Piece::Assistant { id: Some(id), .. }), Some(after)) if *id == after)
    }
}

/// Build the API messages (content always as block lists; the wire's
/// string form is chosen later, after cache breakpoints): the module docs'
/// steps in order.
pub fn normalize<'a>(bump: &'a Bump, pieces: &[Piece<'a>], rules: &Rules<'a>) -> (Vec<&'a Json<'a>>, Report) {
    let (out, report, _) = normalize_from(bump, pieces, &Mark::start(bump, rules), rules, (&[], &Default::default()));
    (out, report)
}

/// The `message` of each assistant line of `entries` that is its wire form
/// as it stands (`{"role":"assistant","content":[…]}`), by the address of
/// its first block's members: [`normalize_from`]'s `answers`.
pub(crate) fn written_answers<'a>(entries: &[Entry<'a>]) -> rustc_hash::FxHashMap<usize, &'a Json<'a>> {
    entries
        .iter()
        .filter(|e| matches!(e.kind, EntryKind::Assistant(_)))
        .filter_map(|e| e.raw.get("message"))
        .filter_map(|m| match m.as_object()? {
            [("role", Json::Str("assistant")), ("content", Json::Arr([Json::Obj(first), ..]))] => {
                Some((first.as_ptr() as usize, m))
            }
            _ => None,
        })
        .collect()
}

/// The line's `message` (`answers`, by its first block's members) whose
/// content is `blocks`, block for block the same nodes.
fn written_answer<'a>(
    answers: &rustc_hash::FxHashMap<usize, &'a Json<'a>>,
    blocks: &[Json<'a>],
) -> Option<&'a Json<'a>> {
    let Some(Json::Obj(first)) = blocks.first() else { return None };
    let m = answers.get(&(first.as_ptr() as usize))?;
    let Some([_, ("content", Json::Arr(content))]) = m.as_object() else { return None };
    let same = |a: &Json<'_>, b: &Json<'_>| match (a, b) {
        (Json::Obj(x), Json::Obj(y)) => std::ptr::eq(*x, *y),
        _ => a == b,
    };
    (content.len() == blocks.len() && content.iter().zip(blocks).all(|(a, b)| same(a, b))).then_some(*m)
}

/// Whether `m` is the message [`message`] makes of `role` and `blocks`
/// (no other members).
fn is_message(m: &Json<'_>, role: &str, blocks: &[Json<'_>]) -> bool {
    matches!(m.as_object(), Some([("role", Json::Str(r)), ("content", Json::Arr(b))]) if *r == role && *b == blocks)
}

/// [`normalize`] of `pieces` from `from` on (a mark found on the same
/// pieces before it): the messages after `from.message`, the report of the
/// whole list (`from`'s counts included), and the marks after `from`.
/// `old`: the messages built last time from `from` on; a message equal to
/// the one at its place there is that node, not a new one (a turn rebuilds
/// the user message before the last assistant message each time).
/// `answers`: assistant lines' messages that are their own wire form, by
/// the address of their first block's members; an assistant message of
/// exactly such a line's blocks is that node.
pub(crate) fn normalize_from<'a>(
    bump: &'a Bump,
    pieces: &[Piece<'a>],
    from: &Mark<'a>,
    rules: &Rules<'a>,
    (old, answers): (&[&'a Json<'a>], &rustc_hash::FxHashMap<usize, &'a Json<'a>>),
) -> (Vec<&'a Json<'a>>, Report, Vec<Mark<'a>>) {
    let order = reorder_attachments(&pieces[from.piece.min(pieces.len())..], rules);
    let mut events: Vec<(usize, Event)> = Vec::new();
    let (built, candidates) = build_messages(bump, &order, from, &mut events);
    let kept = drop_hollow_assistants(built, &mut events);
    let merged = merge_user_messages(bump, kept, rules, &mut events);
    let mut report = from.report;
    events.iter().for_each(|&(_, e)| report.add(e));
    let mut systems = from.systems;
    let mut out = Vec::with_capacity(merged.len());
    // Per message: its first piece and the system turns before it.
    let mut starts: Vec<(usize, usize)> = Vec::with_capacity(merged.len());
    let mut is_assistant: Vec<bool> = Vec::with_capacity(merged.len());
    for (m, start) in merged {
        starts.push((start, systems));
        is_assistant.push(matches!(m, Msg::Assistant(..)));
        let same =
            |role: &str, blocks: &[Json<'a>]| old.get(out.len()).copied().filter(|o| is_message(o, role, blocks));
        out.push(match m {
            Msg::User(blocks) => same("user", &blocks).unwrap_or_else(|| message(bump, "user", &blocks, &[])),
            Msg::Assistant(_, blocks) => same("assistant", &blocks)
                .or_else(|| written_answer(answers, &blocks))
                .unwrap_or_else(|| message(bump, "assistant", &blocks, &[])),
            Msg::System(texts, extra) if texts.is_empty() => message(bump, "system", &[], extra),
            Msg::System(texts, extra) => {
                let strip = |t: &'a str| if rules.system_keeps_reminder { t } else { strip_reminder(t) };
                let text = texts.iter().map(|t| strip(t)).collect::<Vec<_>>().join("\n\n");
                let block = text_block(bump, bump.alloc_str(&text));
                systems += 1;
                let extra = if rules.system_message_extra_first_only && systems > 1 { &[][..] } else { extra };
                message(bump, "system", &[block], extra)
            }
        });
    }
    // A candidate is a mark when the message before it is the assistant
    // message it follows, kept (a hollow one is dropped, and the user
    // messages around it merge across).
    let marks = candidates
        .into_iter()
        .filter_map(|mut c| {
            let m = starts.partition_point(|&(s, _)| s < c.piece);
            if m == 0 || !is_assistant[m - 1] {
                return None;
            }
            c.message = from.message + m;
            c.systems = starts.get(m).map_or(systems, |&(_, k)| k);
            c.report = from.report;
            events.iter().filter(|&&(at, _)| at < c.piece).for_each(|&(_, e)| c.report.add(e));
            Some(c)
        })
        .collect();
    (out, report, marks)
}

/// Steps 1 + 2: system attachments as user text where the rules say so, then
/// each user-role attachment moved up past plain user messages and
/// system-role attachments.
fn reorder_attachments<'a>(pieces: &[Piece<'a>], rules: &Rules<'a>) -> Vec<Piece<'a>> {
    let mut order: Vec<Piece<'a>> = Vec::with_capacity(pieces.len());
    for p in pieces {
        let p = match p {
            Piece::Attachment { role: AttachmentRole::System, texts } if rules.system_attachments_as_user => {
                Piece::Attachment { role: AttachmentRole::User, texts: texts.clone() }
            }
            other => other.clone(),
        };
        match &p {
            Piece::Attachment { role: AttachmentRole::User, .. } => {
                let mut at = order.len();
                while at > 0 {
                    match &order[at - 1] {
                        Piece::User { tool_results: false, .. }
                        | Piece::Params { .. }
                        | Piece::Attachment { role: AttachmentRole::System, .. } => at -= 1,
                        _ => break,
                    }
                }
                order.insert(at, p);
            }
            Piece::User { tool_results: false, .. } => {
                let mut at = order.len();
                while at > 0 && matches!(order[at - 1], Piece::Attachment { role: AttachmentRole::System, .. }) {
                    at -= 1;
                }
                order.insert(at, p);
            }
            _ => order.push(p),
        }
    }
    order
}

/// Step 3: pieces → messages (consecutive user-role attachments one user
/// message, consecutive system-role ones one system turn, assistant lines
/// of one `message.id` one message). A system turn carries the members in
/// force when they differ from the last ones sent; a [`Piece::Params`]
/// change of members sent before that no system turn carries before the
/// next assistant message (or the end) gets an empty system turn of its own
/// (2.1.332 captures: `--effort` on a resume with no new system
/// attachment). `order` starts at piece `from.piece`, with `from`'s
/// members; the candidate marks are the boundaries after assistant lines
/// that the next piece does not continue.
fn build_messages<'a>(
    bump: &'a Bump,
    order: &[Piece<'a>],
    from: &Mark<'a>,
    events: &mut Vec<(usize, Event)>,
) -> (Vec<Built<'a>>, Vec<Mark<'a>>) {
    let mut msgs: Vec<Built<'a>> = Vec::new();
    let mut candidates: Vec<Mark<'a>> = Vec::new();
    let mut prev_user_attachment = false;
    let mut members = from.members.clone();
    for (k, p) in order.iter().enumerate() {
        let at = from.piece + k;
        if let (Some(Piece::Assistant { id, .. }), true) = (k.checked_sub(1).and_then(|j| order.get(j)), k > 0)
            && !matches!(p, Piece::Assistant { id: next, .. } if next.is_some() && next == id)
        {
            candidates.push(Mark {
                piece: at,
                message: 0,
                after: *id,
                members: members.clone(),
                systems: 0,
                report: Report::default(),
            });
        }
        match p {
            Piece::Attachment { role: AttachmentRole::User, texts } => {
                let blocks: Vec<Json<'a>> = texts.iter().map(|t| text_block(bump, t)).collect();
                match msgs.last_mut() {
                    Some((Msg::User(prev), _)) if prev_user_attachment => prev.extend(blocks),
                    _ => msgs.push((Msg::User(blocks), at)),
                }
                prev_user_attachment = true;
                continue;
            }
            Piece::Attachment { role: AttachmentRole::System, texts } => match msgs.last_mut() {
                Some((Msg::System(prev, _), _)) if !prev.is_empty() => prev.extend(texts.iter().copied()),
                _ => msgs.push((Msg::System(texts.to_vec(), members.carry()), at)),
            },
            Piece::Params { extra } => {
                members.set(extra);
                continue;
            }
            Piece::User { blocks, .. } => msgs.push((Msg::User(blocks.to_vec()), at)),
            Piece::Assistant { id, blocks } => {
                members.announce(&mut msgs, at);
                match msgs.last_mut() {
                    Some((Msg::Assistant(prev_id, prev), _)) if id.is_some() && prev_id == id => {
                        events.push((at, Event::AssistantLinesMerged));
                        prev.extend_from_slice(blocks)
                    }
                    _ => msgs.push((Msg::Assistant(*id, blocks.to_vec()), at)),
                }
            }
        }
        prev_user_attachment = false;
    }
    members.announce(&mut msgs, from.piece + order.len());
    (msgs, candidates)
}

/// The system-turn members in force, the last ones sent, and whether a
/// [`Piece::Params`] set them since a system turn last could carry them.
#[derive(Debug, Clone)]
struct Members<'a> {
    current: &'a [(&'a str, Json<'a>)],
    sent: Option<&'a [(&'a str, Json<'a>)]>,
    pending: bool,
}

impl<'a> Members<'a> {
    fn new(current: &'a [(&'a str, Json<'a>)]) -> Self {
        Members { current, sent: None, pending: false }
    }

    fn set(&mut self, extra: &'a [(&'a str, Json<'a>)]) {
        self.current = extra;
        self.pending = true;
    }

    /// The members a new system turn carries: the current ones when they
    /// are not the last sent.
    fn carry(&mut self) -> &'a [(&'a str, Json<'a>)] {
        self.pending = false;
        if self.current.is_empty() || self.sent == Some(self.current) {
            return &[];
        }
        self.sent = Some(self.current);
        self.current
    }

    /// An empty system turn for members set and not carried yet — a
    /// change only: before any system turn was sent (a transcript of a
    /// release without system turns) nothing is announced.
    fn announce(&mut self, msgs: &mut Vec<Built<'a>>, at: usize) {
        if self.pending && self.sent.is_some() {
            let extra = self.carry();
            if !extra.is_empty() {
                msgs.push((Msg::System(Vec::new(), extra), at));
            }
        }
    }
}

/// Assistant messages (fragments merged) of only thinking or blank text are
/// not sent.
fn drop_hollow_assistants<'a>(msgs: Vec<Built<'a>>, events: &mut Vec<(usize, Event)>) -> Vec<Built<'a>> {
    msgs.into_iter()
        .filter(|(m, start)| match m {
            Msg::Assistant(_, blocks) if !blocks.is_empty() && blocks.iter().all(is_thinking) => {
                events.push((*start, Event::ThinkingOnlyDropped));
                false
            }
            Msg::Assistant(_, blocks) if blocks.iter().all(is_blank_text) => {
                events.push((*start, Event::EmptyAssistantDropped));
                false
            }
            _ => true,
        })
        .collect()
}

/// Step 4: consecutive user messages merged; a system turn between them
/// does not separate them (it stays after the merged message).
fn merge_user_messages<'a>(
    bump: &'a Bump,
    msgs: Vec<Built<'a>>,
    rules: &Rules<'a>,
    events: &mut Vec<(usize, Event)>,
) -> Vec<Built<'a>> {
    let mut merged: Vec<Built<'a>> = Vec::with_capacity(msgs.len());
    for (m, start) in msgs {
        let prev_user = merged.iter().rposition(|(p, _)| !matches!(p, Msg::System(..)));
        match (prev_user.map(|i| &mut merged[i].0), m) {
            (Some(Msg::User(prev)), Msg::User(next)) => {
                events.push((start, Event::UserMessagesMerged));
                merge_user(bump, prev, next, rules);
            }
            (_, m) => merged.push((m, start)),
        }
    }
    merged
}

fn merge_user<'a>(bump: &'a Bump, prev: &mut Vec<Json<'a>>, next: Vec<Json<'a>>, rules: &Rules<'a>) {
    if rules.attachments_into_tool_result
        && next.iter().all(|b| b.get_str("type") == Some("text"))
        && let Some(last) = prev.last_mut()
        && last.get_str("type") == Some("tool_result")
        && let Some(content) = last.get_str("content")
    {
        let mut s = String::from(content.trim_end());
        for b in &next {
            s.push_str("\n\n");
            s.push_str(b.get_str("text").unwrap_or(""));
        }
        if let Some(v) = with_member(bump, last, "content", Json::Str(bump.alloc_str(&s))) {
            *last = v;
        }
        return;
    }
    if !rules.merge_plain
        && let Some(last) = prev.last_mut()
        && last.get_str("type") == Some("text")
        && let Some(text) = last.get_str("text")
        && let Some(v) = with_member(bump, last, "text", Json::Str(bump.alloc_str(&format!("{text}\n"))))
    {
        *last = v;
    }
    prev.extend(next);
}

/// The text of a system-role attachment without its reminder wrapper.
fn strip_reminder(t: &str) -> &str {
    let t = t.strip_prefix("<system-reminder>\n").unwrap_or(t);
    let t = t.strip_suffix('\n').unwrap_or(t);
    t.strip_suffix("\n</system-reminder>").unwrap_or(t)
}

#[cfg(test)]
mod tests {
    use super::*;
    use smallvec::smallvec;

    fn s(bump: &Bump, v: &[&Json]) -> String {
        let _ = bump;
        v.iter().map(|m| m.to_compact_string()).collect::<Vec<_>>().join("\n")
    }

    #[test]
    fn internal_fields_are_stripped() {
        use crate::input::{ReadOptions, parse_bytes};
        let bump = Bump::new();
        // Real lines (public corpus, 2.1.x subagent of -experiments-worktrees), shortened.
        let lines = br#"{"type":"assistant","uuid":"a","message":{"id":"m","role":"assistant","model":"claude-opus-4-6","content":[{"type":"tool_use","id":"toolu_01LCjj9FHpZLTzS2h6hjtsuG","name":"Bash","input":{"command":"pwd && ls -la"},"caller":{"type":"direct"}}]}}
{"type":"user","uuid":"u","parentUuid":"a","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_01KJ8gB7S8MLZxpshCBaGaLv","content":[{"type":"tool_reference","tool_name":"WebSearch"},{"type":"tool_reference","tool_name":"WebFetch"}]}]}}
"#;
        let parsed = parse_bytes(&bump, lines, "t", &ReadOptions::default());
        let got: Vec<String> = parsed
            .entries
            .iter()
            .map(|e| match piece_of_entry(&bump, e).unwrap() {
                Piece::Assistant { blocks, .. } | Piece::User { blocks, .. } => Json::Arr(blocks).to_compact_string(),
                Piece::Attachment { .. } | Piece::Params { .. } => String::new(),
            })
            .collect();
        assert_eq!(
            got,
            [
                r#"[{"type":"tool_use","id":"toolu_01LCjj9FHpZLTzS2h6hjtsuG","name":"Bash","input":{"command":"pwd && ls -la"}}]"#,
                r#"[{"type":"tool_result","tool_use_id":"toolu_01KJ8gB7S8MLZxpshCBaGaLv","content":[]}]"#,
            ]
        );
    }

    #[test]
    fn attachments_move_before_the_prompt_and_merge_with_newline() {
        let bump = Bump::new();
        let prompt = Piece::User { blocks: bump.alloc_slice_copy(&[text_block(&bump, "hi")]), tool_results: false };
        let pieces = vec![
            prompt,
            Piece::Attachment {
                role: AttachmentRole::System,
                texts: smallvec!["<system-reminder>\nenv\n</system-reminder>"],
            },
            Piece::Attachment { role: AttachmentRole::User, texts: smallvec!["A"] },
            Piece::Attachment {
                role: AttachmentRole::System,
                texts: smallvec!["<system-reminder>\ndate\n</system-reminder>"],
            },
            Piece::Attachment { role: AttachmentRole::User, texts: smallvec!["B"] },
        ];
        let (msgs, report) = normalize(&bump, &pieces, &Rules::default());
        assert_eq!(
            s(&bump, &msgs),
            "{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"A\"},{\"type\":\"text\",\"text\":\"B\\n\"},{\"type\":\"text\",\"text\":\"hi\"}]}\n{\"role\":\"system\",\"content\":[{\"type\":\"text\",\"text\":\"env\\n\\ndate\"}]}"
        );
        assert_eq!(report.merged_user_messages, 1);
    }

    #[test]
    fn a_system_turn_keeps_the_reminder_wrapper_where_the_rules_say() {
        let bump = Bump::new();
        let pieces = vec![
            Piece::User { blocks: bump.alloc_slice_copy(&[text_block(&bump, "hi")]), tool_results: false },
            Piece::Attachment {
                role: AttachmentRole::System,
                texts: smallvec![
                    "<system-reminder>\nenv\n</system-reminder>",
                    "<system-reminder>\nmodel\n</system-reminder>"
                ],
            },
        ];
        let turn = |keep: bool| {
            let rules = Rules { system_keeps_reminder: keep, ..Rules::default() };
            let (m, _) = normalize(&bump, &pieces, &rules);
            m[1].to_compact_string()
        };
        assert_eq!(turn(false), r#"{"role":"system","content":[{"type":"text","text":"env\n\nmodel"}]}"#);
        assert_eq!(
            turn(true),
            r#"{"role":"system","content":[{"type":"text","text":"<system-reminder>\nenv\n</system-reminder>\n\n<system-reminder>\nmodel\n</system-reminder>"}]}"#
        );
    }

    #[test]
    fn system_turns_carry_members_when_they_change() {
        // 2.1.332 resume-effort-change: the first system turn carries the
        // effort; a process with another effort and no system attachment
        // gets an empty system turn after its prompt; a system turn of an
        // unchanged effort carries nothing.
        let bump = Bump::new();
        let effort = |e: &'static str| -> &'static [(&'static str, Json<'static>)] {
            let config: &'static [(&'static str, Json<'static>)] = Box::leak(Box::new([("effort", Json::Str(e))]));
            Box::leak(Box::new([("output_config", Json::Obj(config))]))
        };
        let user = |t: &'static str| Piece::User {
            blocks: bump.alloc_slice_copy(&[text_block(&bump, t)]),
            tool_results: false,
        };
        let sys = |t: &'static str| Piece::Attachment { role: AttachmentRole::System, texts: smallvec![t] };
        let answer = |id: &'static str| Piece::Assistant {
            id: Some(id),
            blocks: bump.alloc_slice_copy(&[text_block(&bump, "ok")]),
        };
        let pieces = vec![
            user("first"),
            Piece::Params { extra: effort("medium") },
            sys("env"),
            answer("m0"),
            user("second"),
            Piece::Params { extra: effort("high") },
            answer("m1"),
            user("third"),
            Piece::Params { extra: effort("high") },
            sys("model"),
        ];
        let rules = Rules { system_message_extra: effort("medium").to_vec(), ..Rules::default() };
        let (msgs, _) = normalize(&bump, &pieces, &rules);
        let lines: Vec<String> = msgs.iter().map(|m| m.to_compact_string()).collect();
        assert_eq!(
            lines,
            [
                r#"{"role":"user","content":[{"type":"text","text":"first"}]}"#,
                r#"{"role":"system","content":[{"type":"text","text":"env"}],"output_config":{"effort":"medium"}}"#,
                r#"{"role":"assistant","content":[{"type":"text","text":"ok"}]}"#,
                r#"{"role":"user","content":[{"type":"text","text":"second"}]}"#,
                r#"{"role":"system","content":[],"output_config":{"effort":"high"}}"#,
                r#"{"role":"assistant","content":[{"type":"text","text":"ok"}]}"#,
                r#"{"role":"user","content":[{"type":"text","text":"third"}]}"#,
                r#"{"role":"system","content":[{"type":"text","text":"model"}]}"#,
            ]
        );
        // Without members (older layouts: no Params pieces) nothing is added.
        let older: Vec<Piece> = pieces.into_iter().filter(|p| !matches!(p, Piece::Params { .. })).collect();
        let (plain, _) = normalize(&bump, &older, &Rules::default());
        assert!(plain.iter().all(|m| m.get("output_config").is_none()), "{plain:?}");
    }

    #[test]
    fn system_turn_params_on_the_first_only() {
        let bump = Bump::new();
        let sys = |t: &'static str| Piece::Attachment { role: AttachmentRole::System, texts: smallvec![t] };
        let text = |t: &'static str| -> &[Json<'_>] { bump.alloc_slice_copy(&[text_block(&bump, t)]) };
        let pieces = vec![
            Piece::User { blocks: text("a"), tool_results: false },
            sys("s1"),
            Piece::Assistant { id: Some("m"), blocks: text("ok") },
            Piece::User { blocks: text("b"), tool_results: false },
            sys("s2"),
        ];
        let mut rules = Rules { system_message_extra: vec![("output_config", Json::Str("x"))], ..Rules::default() };
        // The members ride on the first system turn (a later one carries
        // them only when a process changes them: see the test above), with
        // or without the layout's first-only rule (2.1.300).
        let (msgs, _) = normalize(&bump, &pieces, &rules);
        let with: Vec<bool> = msgs.iter().map(|m| m.get("output_config").is_some()).collect();
        assert_eq!(with, [false, true, false, false, false]);
        rules.system_message_extra_first_only = true;
        let (msgs, _) = normalize(&bump, &pieces, &rules);
        let with: Vec<bool> = msgs.iter().map(|m| m.get("output_config").is_some()).collect();
        assert_eq!(with, [false, true, false, false, false]);
    }

    #[test]
    fn attachments_stay_after_tool_results_and_fragments_merge() {
        let bump = Bump::new();
        let tu = |id: &'static str| -> Json<'static> {
            Json::Obj(Box::leak(Box::new([("type", Json::Str("tool_use")), ("id", Json::Str(id))])))
        };
        let tr = Json::Obj(bump.alloc_slice_copy(&[("type", Json::Str("tool_result")), ("content", Json::Str("x\n"))]));
        let think = Json::Obj(bump.alloc_slice_copy(&[("type", Json::Str("thinking")), ("thinking", Json::Str("t"))]));
        let pieces = vec![
            Piece::User { blocks: bump.alloc_slice_copy(&[text_block(&bump, "go")]), tool_results: false },
            Piece::Assistant { id: Some("m0"), blocks: bump.alloc_slice_copy(&[think]) },
            Piece::Assistant { id: Some("m1"), blocks: bump.alloc_slice_copy(&[tu("a")]) },
            Piece::Assistant { id: Some("m1"), blocks: bump.alloc_slice_copy(&[tu("b")]) },
            Piece::User { blocks: bump.alloc_slice_copy(&[tr]), tool_results: true },
            Piece::Attachment { role: AttachmentRole::User, texts: smallvec!["R"] },
        ];
        let (msgs, report) = normalize(&bump, &pieces, &Rules::default());
        assert_eq!(msgs.len(), 3);
        assert_eq!(
            msgs[1].to_compact_string(),
            "{\"role\":\"assistant\",\"content\":[{\"type\":\"tool_use\",\"id\":\"a\"},{\"type\":\"tool_use\",\"id\":\"b\"}]}"
        );
        assert_eq!(
            msgs[2].to_compact_string(),
            "{\"role\":\"user\",\"content\":[{\"type\":\"tool_result\",\"content\":\"x\\n\"},{\"type\":\"text\",\"text\":\"R\"}]}"
        );
        assert_eq!((report.dropped_thinking_only, report.merged_assistant_lines), (1, 1));
        // 2.1.88: the reminder goes into the tool result.
        let rules = Rules { attachments_into_tool_result: true, ..Rules::default() };
        let (msgs, _) = normalize(&bump, &pieces, &rules);
        assert_eq!(
            msgs[2].to_compact_string(),
            "{\"role\":\"user\",\"content\":[{\"type\":\"tool_result\",\"content\":\"x\\n\\nR\"}]}"
        );
    }

    /// A message built again equal to the one at its place last time is
    /// that node; one that differs is new.
    #[test]
    fn a_message_built_again_is_the_last_ones_node() {
        let bump = Bump::new();
        let user = |t: &'static str| Piece::User {
            blocks: bump.alloc_slice_copy(&[text_block(&bump, t)]),
            tool_results: false,
        };
        let said = Piece::Assistant { id: Some("m"), blocks: bump.alloc_slice_copy(&[text_block(&bump, "ok")]) };
        let rules = Rules::default();
        let start = Mark::start(&bump, &rules);
        let pieces = vec![user("hi"), said, user("next")];
        let none = rustc_hash::FxHashMap::default();
        let (first, _, _) = normalize_from(&bump, &pieces, &start, &rules, (&[], &none));
        let (again, _, _) = normalize_from(&bump, &pieces, &start, &rules, (&first, &none));
        assert_eq!(again.len(), 3);
        assert!(first.iter().zip(&again).all(|(a, b)| std::ptr::eq(*a, *b)));
        // The last prompt changed: the messages before it are the old
        // nodes, it is a new one.
        let changed = vec![pieces[0].clone(), pieces[1].clone(), user("other")];
        let (other, _, _) = normalize_from(&bump, &changed, &start, &rules, (&first, &none));
        assert!(std::ptr::eq(other[0], first[0]) && std::ptr::eq(other[1], first[1]));
        assert!(!std::ptr::eq(other[2], first[2]));
        assert_eq!(other[2].to_compact_string(), r#"{"role":"user","content":[{"type":"text","text":"other"}]}"#);
    }

    /// An assistant message of a line read for requests (its message is
    /// then `{role, content}`) is the line's message node; a block the
    /// wire form changes (a `tool_use`'s `caller`) makes a new one.
    #[test]
    fn an_assistant_message_is_its_lines_message_when_that_is_the_wire_form() {
        use crate::input::{Fields, ReadOptions, parse_bytes};
        let bump = Bump::new();
        let lines = br#"{"type":"assistant","uuid":"a","requestId":"r","message":{"id":"m1","type":"message","role":"assistant","model":"claude-x","content":[{"type":"text","text":"ok"}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":1}}}
{"type":"assistant","uuid":"b","parentUuid":"a","message":{"id":"m2","role":"assistant","model":"claude-x","content":[{"type":"tool_use","id":"t","name":"Bash","input":{},"caller":{"type":"direct"}}]}}
{"type":"assistant","uuid":"c","parentUuid":"b","message":{"id":"m3","role":"assistant","content":[{"type":"text","text":"x"}],"container":null}}
"#;
        let opts = ReadOptions { fields: Fields::Requests, ..ReadOptions::default() };
        let parsed = parse_bytes(&bump, lines, "t", &opts);
        let e = &parsed.entries;
        let answers = written_answers(e);
        // The third keeps a member the wire form has not.
        assert_eq!(answers.len(), 2);
        let rules = Rules::default();
        let start = Mark::start(&bump, &rules);
        for (i, written) in [(0, true), (1, false), (2, false)] {
            let piece = piece_of_entry(&bump, &e[i]).unwrap();
            let (msgs, _, _) = normalize_from(&bump, &[piece], &start, &rules, (&[], &answers));
            let raw = e[i].raw.get("message").unwrap();
            assert_eq!(std::ptr::eq(msgs[0], raw), written, "line {i}");
        }
        let piece = piece_of_entry(&bump, &e[1]).unwrap();
        let (msgs, _, _) = normalize_from(&bump, &[piece], &start, &rules, (&[], &answers));
        assert_eq!(
            msgs[0].to_compact_string(),
            r#"{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"Bash","input":{}}]}"#
        );
    }
}
