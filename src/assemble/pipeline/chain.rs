//! The values the stages of one chain share: [`ChainCtx`] (fixed for the
//! chain: its entries, the plan, what each entry contributes) and
//! [`ChainState`] (what one turn leaves for the next: the shape in force,
//! the previous turn's message nodes, the reminders the running CLI process
//! added). Built once per chain by [`ChainCtx::new`]; no stage reads the
//! disk, the environment or the clock.

use super::attachments::AttachmentRole;
use super::normalize::{self, Piece};
use super::plan::{Extras, Plan, Statics};
use super::projection::Links;
use super::reminders::process_first_prompts;
use super::report::PipelineReport;
use super::system::ShapeSystem;
use crate::assemble::wire::RecordOptions;
use crate::corpus::{ParsedFile, Session};
use crate::json::Json;
use crate::model::content::BlockKind;
use crate::model::entry::{Entry, EntryKind};
use bumpalo::Bump;

/// What every stage of one chain reads.
pub(crate) struct ChainCtx<'a, 's> {
    pub(crate) bump: &'a Bump,
    pub(crate) file: &'s ParsedFile<'a, 's>,
    pub(crate) entries: &'s [Entry<'a>],
    /// The file's display name, in the arena (requests point at it).
    pub(crate) display: &'a str,
    pub(crate) agent_id: Option<&'a str>,
    pub(crate) session: &'s Session<'a, 's>,
    pub(crate) plan: &'s Plan,
    pub(crate) statics: &'s Statics<'a>,
    pub(crate) extras: &'s Extras,
    pub(crate) identity: &'s RecordOptions,
    pub(crate) links: Links<'a, 's>,
    /// The prompt the main chain gave this subagent, if it is one.
    pub(crate) agent_prompt: Option<&'a str>,
    /// The warmed-up agent this chain is ([`Statics::agents`] index).
    pub(crate) agent: Option<usize>,
    /// `cc_entrypoint` of the billing header.
    pub(crate) entrypoint: &'a str,
    /// Each entry's piece, built once and shared by every turn.
    pub(crate) pieces: Vec<Option<Piece<'a>>>,
    /// The `message` of each user line whose content is a string, by the
    /// address of that string: the wire form of the message made of it,
    /// already in the tree ([`super::collapse`]).
    pub(crate) prompts: rustc_hash::FxHashMap<usize, &'a Json<'a>>,
    /// The `message` of each assistant line that is its wire form as it
    /// stands (`{"role":"assistant","content":[…]}`: a request-building
    /// read leaves the rest out), by the address of its first block's
    /// members ([`super::normalize::normalize_from`]).
    pub(crate) answers: rustc_hash::FxHashMap<usize, &'a Json<'a>>,
    /// [`Extras::user_context`] as a piece.
    pub(crate) user_context: Option<Piece<'a>>,
    /// [`Extras::per_process`] as a piece.
    pub(crate) per_process: Option<Piece<'a>>,
    /// Entry indices of the prompts that start a CLI process.
    pub(crate) process_starts: Vec<usize>,
    /// Plain prompts before each entry ([`super::processes::prompts_before`]).
    pub(crate) prompts_before: Vec<u32>,
    /// Where the per-process reminder goes instead of the process start: a
    /// subagent built from its type's definition gets it on its first tool
    /// result (2.1.88 subagent-bash capture); `usize::MAX` when it has none.
    pub(crate) per_process_at: Option<usize>,
    /// Which of the file's turns this chain builds.
    pub(crate) part: Part<'a>,
    /// Per entry index i (and the end): the index + 1 of the last
    /// `api-request` record before i (0: none), and the assistant entries
    /// before i; filled only for a layout with `params_from_records`
    /// ([`super::body`]: each turn's lookups in O(1), not a scan back).
    pub(crate) records_before: Vec<u32>,
    pub(crate) assistants_before: Vec<u32>,
    /// The last billing header block and metadata built, reused by the
    /// next request when equal: one node per chain instead of per request.
    pub(crate) last_header: std::cell::Cell<Option<(&'a str, &'a Json<'a>)>>,
    pub(crate) last_metadata: std::cell::Cell<Option<(&'a str, Json<'a>)>>,
    /// The lists of the last request built, in the arena, borrowed by the
    /// next request when equal ([`super::body`]).
    pub(crate) last_lists: std::cell::Cell<super::body::Lists<'a>>,
}

/// Which turns of a file one chain builds. 1.0.x writes a Task subagent's
/// lines into the main transcript (`isSidechain`, a root of their own whose
/// prompt is the call's `prompt`), so such a file holds the main chain and
/// one inline subagent chain per sidechain root (1.0.128 subagent probe).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Part<'a> {
    /// Every turn (a file of one chain).
    Whole,
    /// The turns that are not sidechain lines.
    Main,
    /// The sidechain turns under the root of this uuid.
    Inline(&'a str),
}

/// The chains of file `f` ([`Part`]): the whole file, or, when a main
/// transcript holds sidechain lines, its main chain and each sidechain root
/// a turn hangs off, in file order. A turn is the root's: one under a
/// main-chain root is the main chain's, whatever its own flag says.
pub(crate) fn parts<'a>(f: &ParsedFile<'a, '_>) -> Vec<Part<'a>> {
    let entries = &f.parsed.entries;
    let conv = || entries.iter().filter(|e| e.is_conversation());
    if !matches!(f.file.kind, crate::input::discover::FileKind::Session)
        || !conv().any(|e| e.env.is_sidechain)
        || conv().all(|e| e.env.is_sidechain)
    {
        return vec![Part::Whole];
    }
    let links = Links::of_tree(entries, &f.tree);
    let roots = roots(entries, &links);
    let mut out = vec![Part::Main];
    for t in super::projection::turns(entries) {
        if let Some((root, true)) = roots[t.first]
            && !out.contains(&Part::Inline(root))
        {
            out.push(Part::Inline(root));
        }
    }
    out
}

/// The root of each entry's `parentUuid` chain (a missing parent or a
/// cycle ends the walk): its uuid, and whether it is a sidechain line.
/// Linear: a parent written before its child reuses the parent's root.
fn roots<'a>(entries: &[Entry<'a>], links: &Links<'a, '_>) -> Vec<Option<(&'a str, bool)>> {
    let mut out: Vec<Option<(&'a str, bool)>> = Vec::with_capacity(entries.len());
    for i in 0..entries.len() {
        let parent = entries[i].env.parent_uuid.and_then(|p| links.index_of(p));
        let root = match parent {
            Some(p) if p < i => out[p],
            Some(_) => {
                // A parent written later (rare): walk, bounded.
                let mut cur = i;
                for _ in 0..entries.len() {
                    match entries[cur].env.parent_uuid.and_then(|p| links.index_of(p)) {
                        Some(p) if p != cur => cur = p,
                        _ => break,
                    }
                }
                entries[cur].env.uuid.map(|u| (u, entries[cur].env.is_sidechain))
            }
            None => entries[i].env.uuid.map(|u| (u, entries[i].env.is_sidechain)),
        };
        out.push(root);
    }
    out
}

impl<'a> ChainCtx<'a, '_> {
    /// The turns of the chain, in file order.
    pub(crate) fn turns(&self) -> Vec<super::projection::Turn> {
        let mut turns = super::projection::turns(self.entries);
        if self.part == Part::Whole {
            return turns;
        }
        let roots = roots(self.entries, &self.links);
        match self.part {
            Part::Inline(root) => turns.retain(|t| roots[t.first] == Some((root, true))),
            _ => turns.retain(|t| !matches!(roots[t.first], Some((_, true)))),
        }
        turns
    }
}

/// What one turn leaves for the next.
#[derive(Default)]
pub(crate) struct ChainState<'a> {
    /// The newest `api-request-shape` read so far and how far it was read.
    pub(crate) shape: Option<&'a Json<'a>>,
    pub(crate) shape_line: usize,
    /// The system blocks and tools of the current shape, built once per
    /// shape.
    pub(crate) shape_system: Option<ShapeSystem<'a>>,
    /// What the last request's messages leave for the next
    /// ([`super::finish`]).
    pub(crate) finish: super::finish::FinishState<'a>,
    /// Reminders the running process added, by the entry index they
    /// follow, in the order added.
    pub(crate) anchored: rustc_hash::FxHashMap<usize, Vec<&'a str>>,
    /// The process start those reminders belong to.
    pub(crate) anchored_process: Option<usize>,
    /// Bumped when the reminders are cleared (a new process).
    pub(crate) anchored_epoch: u64,
    /// The lowest entry a reminder was anchored at this turn.
    pub(crate) anchored_low: Option<usize>,
    /// The pieces of the last turn built ([`super::pieces`]).
    pub(crate) scratch: Vec<Piece<'a>>,
    /// What the last turn left for the next one to resume from
    /// ([`super::resume`]).
    pub(crate) memo: super::resume::Memo<'a>,
}

/// What every chain of one session shares.
#[derive(Clone, Copy)]
pub(crate) struct SessionCtx<'a, 's> {
    pub(crate) bump: &'a Bump,
    pub(crate) session: &'s Session<'a, 's>,
    pub(crate) plan: &'s Plan,
    pub(crate) statics: &'s Statics<'a>,
    pub(crate) extras: &'s Extras,
    pub(crate) identity: &'s RecordOptions,
    /// Which warmed-up agent each warmup sidechain is, by agent id
    /// ([`super::agent::assign_warmups`]).
    pub(crate) warmups: &'s [(&'a str, usize)],
}

impl<'a, 's> ChainCtx<'a, 's> {
    /// The context of chain `file` of the session `sx` (its agent, if a
    /// subagent's, from [`chain_agent_id`]).
    pub(crate) fn new(
        sx: &SessionCtx<'a, 's>,
        file: &'s ParsedFile<'a, 's>,
        part: Part<'a>,
        report: &mut PipelineReport,
    ) -> Self {
        let SessionCtx { bump, session, plan, statics, extras, identity, warmups } = *sx;
        let entries = &file.parsed.entries;
        let links = Links::of_tree(entries, &file.tree);
        // An inline subagent: its prompt, and the call that gave it.
        let inline = match part {
            Part::Inline(root) => {
                let prompt = links.index_of(root).and_then(|i| entries[i].as_user()).and_then(|u| match u.content {
                    crate::model::content::Content::Text(t) => Some(t),
                    c => c.blocks().iter().find_map(|b| match b.kind {
                        BlockKind::Text { text } => Some(text),
                        _ => None,
                    }),
                });
                Some((prompt, prompt.and_then(|p| inline_call(entries, p))))
            }
            _ => None,
        };
        let agent_id = match part {
            Part::Inline(root) => Some(root),
            _ => chain_agent_id(bump, file),
        };
        let entrypoint = entries
            .iter()
            .chain(session.main.iter().flat_map(|m| m.parsed.entries.iter()))
            .find_map(|e| e.raw.get_str("entrypoint"))
            .or_else(|| extras.entrypoint.as_deref().map(|t| &*bump.alloc_str(t)))
            .unwrap_or("cli");
        let agent = agent_id.and_then(|id| warmups.iter().find(|(w, _)| *w == id)).map(|&(_, i)| i).or_else(|| {
            // A Task subagent whose type the profile defines (2.1.88).
            let call = match inline {
                Some((_, call)) => call,
                None => agent_id.and_then(|id| subagent_call(session, id)),
            };
            let kind = call.and_then(|input| input.get_str("subagent_type"));
            kind.and_then(|k| plan.agents.iter().position(|a| a.subagent_type.as_deref() == Some(k)))
        });
        let pieces = entries
            .iter()
            .map(|e| {
                let templates = &plan.attachment_templates;
                if let Some(p) = profile_reminder(bump, e, &extras.attachment_texts) {
                    return Some(p);
                }
                if let Some(p) = super::notifications::notification_piece(bump, e, extras.task_notification.as_deref())
                {
                    return Some(p);
                }
                let p = normalize::piece_of_entry_with(bump, e, templates, &plan.tool_aliases);
                if let (Some(Piece::Attachment { .. }), EntryKind::Attachment(a)) = (&p, &e.kind)
                    && a.rendered.is_none()
                    && !templates.iter().any(|t| a.attachment_type == Some(t.kind.as_str()))
                {
                    report.approximated_attachments += 1;
                }
                p
            })
            .collect();
        let prompts = super::collapse::written_prompts(entries);
        let answers = normalize::written_answers(entries);
        ChainCtx {
            bump,
            file,
            entries,
            prompts,
            answers,
            display: bump.alloc_str(&file.file.display),
            agent_id,
            session,
            plan,
            statics,
            extras,
            identity,
            links,
            agent_prompt: match inline {
                Some((prompt, _)) => prompt,
                None => agent_id.and_then(|id| subagent_prompt(session, id)),
            },
            agent,
            entrypoint,
            pieces,
            user_context: extras.user_context.as_deref().map(|t| Piece::User {
                blocks: bump.alloc_slice_copy(&[normalize::text_block(bump, bump.alloc_str(t))]),
                tool_results: false,
            }),
            per_process: extras.per_process.as_deref().map(|t| user_reminder(bump.alloc_str(t))),
            records_before: if plan.params_from_records.is_empty() { Vec::new() } else { records_before(entries) },
            assistants_before: if plan.params_from_records.is_empty() {
                Vec::new()
            } else {
                assistants_before(entries)
            },
            last_header: std::cell::Cell::new(None),
            last_metadata: std::cell::Cell::new(None),
            last_lists: std::cell::Cell::new(super::body::Lists::default()),
            process_starts: process_first_prompts(entries),
            prompts_before: super::processes::prompts_before(entries),
            per_process_at: agent
                .and_then(|a| statics.agents.get(a))
                .filter(|a| a.subagent)
                // No tool result: no request of the agent carries it (2.1.88
                // subagent probe: a one-request agent's prompt has none).
                .map(|_| {
                    let own = |e: &&Entry<'_>| !matches!(part, Part::Inline(_)) || e.env.is_sidechain;
                    entries.iter().position(|e| own(&e) && holds_tool_result(e)).unwrap_or(usize::MAX)
                }),
            part,
        }
    }
}

/// Whether `e` is a user line holding a tool result.
fn holds_tool_result(e: &Entry<'_>) -> bool {
    e.as_user().is_some_and(|u| u.content.blocks().iter().any(|b| matches!(b.kind, BlockKind::ToolResult { .. })))
}

/// The input of the main chain's tool call whose `prompt` is `prompt` (an
/// inline subagent's call, [`Part::Inline`]).
fn inline_call<'a>(entries: &[Entry<'a>], prompt: &str) -> Option<&'a Json<'a>> {
    entries
        .iter()
        .filter(|e| !e.env.is_sidechain)
        .filter_map(Entry::as_assistant)
        .flat_map(|a| a.content.blocks())
        .find_map(|b| match b.kind {
            BlockKind::ToolUse { input, .. } if input.get_str("prompt") == Some(prompt) => Some(input),
            _ => None,
        })
}

/// A user-role attachment piece of one text.
pub(crate) fn user_reminder(text: &str) -> Piece<'_> {
    Piece::Attachment { role: AttachmentRole::User, texts: smallvec::smallvec![text] }
}

/// The agent id of a chain: a subagent file's, or the one its sidechain
/// lines name when every conversation line of the file is a sidechain (a
/// 2.0.x agent transcript not named `agent-*.jsonl`), so the agent's
/// request ids never collide with the main chain's.
fn chain_agent_id<'a>(bump: &'a Bump, f: &ParsedFile<'a, '_>) -> Option<&'a str> {
    if let crate::input::discover::FileKind::Subagent { agent_id, .. } = &f.file.kind {
        return Some(bump.alloc_str(agent_id));
    }
    let mut conv = f.parsed.entries.iter().filter(|e| e.is_conversation());
    let all_side = conv.clone().next().is_some() && conv.all(|e| e.env.is_sidechain);
    let named = f.parsed.entries.iter().find(|e| e.is_conversation()).and_then(|e| e.env.shared.agent_id);
    if all_side { named } else { None }
}

/// Whether a tool result of the main transcript names subagent `agent_id`
/// (`toolUseResult.agentId`: a Task subagent).
pub(crate) fn names_agent(session: &Session<'_, '_>, agent_id: &str) -> bool {
    session.main.as_ref().is_some_and(|m| {
        m.parsed
            .entries
            .iter()
            .any(|e| e.as_user().and_then(|u| u.tool_use_result).and_then(|r| r.get_str("agentId")) == Some(agent_id))
    })
}

/// The prompt the main transcript gave subagent `agent_id`: the `prompt`
/// input of the tool call whose result names the agent
/// (`toolUseResult.agentId`).
fn subagent_prompt<'a>(session: &Session<'a, '_>, agent_id: &str) -> Option<&'a str> {
    subagent_call(session, agent_id)?.get_str("prompt")
}

/// The input of the main transcript's tool call whose result names
/// subagent `agent_id` (`toolUseResult.agentId`).
fn subagent_call<'a>(session: &Session<'a, '_>, agent_id: &str) -> Option<&'a Json<'a>> {
    let main = &session.main.as_ref()?.parsed.entries;
    let call_id = main.iter().find_map(|e| {
        let u = e.as_user()?;
        (u.tool_use_result?.get_str("agentId")? == agent_id).then_some(())?;
        u.content.blocks().iter().find_map(|b| match b.kind {
            BlockKind::ToolResult { tool_use_id, .. } => Some(tool_use_id),
            _ => None,
        })
    })?;
    main.iter().filter_map(Entry::as_assistant).flat_map(|a| a.content.blocks()).find_map(|b| match b.kind {
        BlockKind::ToolUse { id, input, .. } if id == call_id => Some(input),
        _ => None,
    })
}

/// A reminder attachment written with an empty list and no text, sent as
/// the profile's text for its kind (2.1.150 `task_reminder`).
fn profile_reminder<'a>(
    bump: &'a bumpalo::Bump,
    e: &crate::model::entry::Entry<'a>,
    texts: &std::collections::BTreeMap<String, String>,
) -> Option<Piece<'a>> {
    let EntryKind::Attachment(a) = &e.kind else { return None };
    let text = texts.get(a.attachment_type?)?;
    let empty = a.attachment.get("content").and_then(crate::json::Json::as_array).is_some_and(<[_]>::is_empty);
    (empty && a.rendered.is_none() && e.raw.get("rendered").is_none()).then(|| Piece::Attachment {
        role: super::attachments::AttachmentRole::User,
        texts: smallvec::smallvec![&*bump.alloc_str(text)],
    })
}

/// For each entry index and the end: the index + 1 of the last `api-request`
/// record before it (0: none).
fn records_before(entries: &[Entry<'_>]) -> Vec<u32> {
    let mut out = Vec::with_capacity(entries.len() + 1);
    let mut last = 0u32;
    out.push(0);
    for (i, e) in entries.iter().enumerate() {
        if matches!(e.kind, EntryKind::ApiRequest(_)) {
            last = u32::try_from(i + 1).unwrap_or(u32::MAX);
        }
        out.push(last);
    }
    out
}

/// For each entry index and the end: the assistant entries before it.
fn assistants_before(entries: &[Entry<'_>]) -> Vec<u32> {
    let mut out = Vec::with_capacity(entries.len() + 1);
    let mut n = 0u32;
    out.push(0);
    for e in entries {
        n += u32::from(e.as_assistant().is_some());
        out.push(n);
    }
    out
}
