//! Stage: the compaction requests of a chain (`/compact`, auto-compaction).
//!
//! *What it does.* [`jobs`] lists what a chain sends, in order: one
//! [`Job::Turn`] per assistant API message, and one [`Job::Compact`] per
//! compaction — the conversation up to the boundary, then the instruction
//! as a plain string user message ([`append_instruction`], after the
//! breakpoints, so the cache breakpoint stays on the history's last
//! message). Where the request comes from depends on the release:
//! - 2.1.88 writes it into an `agent-acompact-*` file: the history copied
//!   from the main chain (same uuids, which are not requests of their own),
//!   then the instruction and the summary. The copies' turns are skipped;
//!   the instruction line is the last projected entry.
//! - 2.1.3xx writes no file and no `api-request` record: the main chain's
//!   `compact_boundary` names the pre-compaction leaf (`logicalParentUuid`),
//!   and the instruction is the profile's ([`Plan::compaction_instruction`],
//!   learned by `profile capture`'s compact probe).
//!
//! *Why per process.* The compacting CLI process sends the history as it
//! holds it: its per-process reminder (2.1.88's skills listing) only when
//! its own first prompt is in that history ([`compacting_process_start`]) —
//! a `--resume` running only `/compact` has sent none (2.1.88
//! compact-resume capture).
//!
//! [`Plan::compaction_instruction`]: super::plan::Plan::compaction_instruction

use super::chain::ChainCtx;
use super::normalize::Piece;
use super::projection::{self, Turn};
use super::reminders::process_first_prompts;
use crate::json::Json;
use crate::model::entry::{Entry, EntryKind};
use bumpalo::Bump;
use rustc_hash::FxHashSet;

/// One request a chain sends.
pub(crate) enum Job<'a, 't> {
    /// The request that produced an assistant message (projected when it
    /// is built: holding every turn's history at once would cost memory
    /// quadratic in the session's length).
    Turn(&'t Turn),
    /// A request whose history is given (a warmup without a reply).
    Given { first: usize, projected: Vec<usize> },
    /// A compaction request: `projected` is its history, `at` the entry it
    /// is sent as (the history's last assistant line: model, session,
    /// line), `k` its number among the session's compactions.
    Compact { at: usize, projected: Vec<usize>, instruction: &'a str, k: usize, current_start: Option<usize> },
}

/// Whether `cx` is a compaction agent's file (2.1.88 `agent-acompact-*`).
pub(crate) fn is_compaction_chain(cx: &ChainCtx<'_, '_>) -> bool {
    cx.agent_id.is_some_and(crate::input::discover::is_compaction_agent)
}

/// The jobs of the chain, in the order they were sent (see the module docs).
pub(crate) fn jobs<'a, 't>(cx: &ChainCtx<'a, '_>, turns: &'t [Turn]) -> Vec<Job<'a, 't>> {
    if is_compaction_chain(cx) {
        return compaction_chain_jobs(cx, turns);
    }
    let mut boundaries = main_boundaries(cx).into_iter().peekable();
    let mut out = Vec::with_capacity(turns.len());
    for t in turns {
        while let Some(b) = boundaries.next_if(|b| b.0 < t.first) {
            out.extend(boundary_job(cx, b));
        }
        out.push(Job::Turn(t));
    }
    out.extend(boundaries.flat_map(|b| boundary_job(cx, b)));
    out
}

/// The main chain's compact boundaries whose request no compaction file
/// holds: (boundary index, leaf index, number among the boundaries).
fn main_boundaries(cx: &ChainCtx<'_, '_>) -> Vec<(usize, usize, usize)> {
    if cx.agent_id.is_some() {
        return Vec::new();
    }
    let copied: FxHashSet<&str> = cx
        .session
        .subagents
        .iter()
        .filter(|f| f.file.kind.is_compaction())
        .flat_map(|f| f.parsed.entries.iter().filter_map(|e| e.env.uuid))
        .collect();
    let mut out = Vec::new();
    for (k, (b, e)) in cx.entries.iter().enumerate().filter(|(_, e)| e.is_compact_boundary()).enumerate() {
        let Some(leaf) = e.env.shared.logical_parent_uuid else { continue };
        if copied.contains(leaf) {
            continue;
        }
        if let Some(l) = cx.links.index_of(leaf) {
            out.push((b, l, k));
        }
    }
    out
}

/// The compaction request at boundary `(b, leaf, k)` of the main chain,
/// when the profile knows the instruction.
fn boundary_job<'a, 't>(cx: &ChainCtx<'a, '_>, (b, leaf, k): (usize, usize, usize)) -> Option<Job<'a, 't>> {
    let instruction = cx.plan.compaction_instruction.as_deref().map(|t| &*cx.bump.alloc_str(t))?;
    let projected = projection::history_to(cx.entries, &cx.links, leaf);
    let at = last_assistant(cx.entries, &projected).unwrap_or(leaf);
    let current_start = compacting_process_start(cx.entries, b);
    Some(Job::Compact { at, projected, instruction, k, current_start })
}

/// The jobs of a 2.1.88 compaction file: its own turns only, each sending
/// the history and, last, the instruction line.
fn compaction_chain_jobs<'a, 't>(cx: &ChainCtx<'a, '_>, turns: &'t [Turn]) -> Vec<Job<'a, 't>> {
    let main = cx.session.main.as_ref().map_or(&[][..], |m| &m.parsed.entries[..]);
    let in_main: FxHashSet<&str> = main.iter().filter_map(|e| e.env.uuid).collect();
    let mut out = Vec::new();
    for t in turns {
        if cx.entries[t.first].env.uuid.is_some_and(|u| in_main.contains(u)) {
            continue; // a copy of the main chain's history, not a request
        }
        let mut projected = projection::project(cx.entries, &cx.links, t);
        let instruction = projected.last().and_then(|&i| string_prompt(&cx.entries[i]));
        let Some(instruction) = instruction else {
            out.push(Job::Given { first: t.first, projected });
            continue;
        };
        projected.pop();
        let leaf = projected.last().and_then(|&i| cx.entries[i].env.uuid);
        let boundary = main
            .iter()
            .enumerate()
            .filter(|(_, e)| e.is_compact_boundary())
            .enumerate()
            .find(|(_, (_, e))| leaf.is_some() && e.env.shared.logical_parent_uuid == leaf);
        let k = boundary.map_or(0, |(k, _)| k);
        // The compacting process's first prompt, found in the main chain,
        // is the copy with its uuid here.
        let current_start = boundary
            .and_then(|(_, (b, _))| compacting_process_start(main, b))
            .and_then(|s| main[s].env.uuid)
            .and_then(|u| cx.links.index_of(u));
        out.push(Job::Compact { at: t.first, projected, instruction, k, current_start });
    }
    out
}

/// The text of a user line whose content is a plain string.
fn string_prompt<'a>(e: &Entry<'a>) -> Option<&'a str> {
    e.as_user()?;
    e.raw.get("message")?.get_str("content")
}

/// The last assistant line of `projected`.
fn last_assistant(entries: &[Entry<'_>], projected: &[usize]) -> Option<usize> {
    projected.iter().rev().copied().find(|&i| matches!(entries[i].kind, EntryKind::Assistant(_)))
}

/// The first prompt of the CLI process running at entry `b`, when that
/// prompt came before `b` (a process that compacts before any prompt has
/// sent none).
fn compacting_process_start(entries: &[Entry<'_>], b: usize) -> Option<usize> {
    let starts = process_first_prompts(entries);
    let s = *starts.iter().rev().find(|&&s| s < b)?;
    // A process delimiter between that prompt and `b`: another process.
    let delimited = entries[s..b]
        .iter()
        .any(|e| matches!(e.kind, EntryKind::LastPrompt { .. }) || super::normalize::is_resume_filler(e));
    (!delimited).then_some(s)
}

/// The process start a compaction request is sent in: the reminders the
/// chain anchored belong to another process when it differs.
pub(crate) fn enter_process(st: &mut super::chain::ChainState<'_>, start: Option<usize>) -> Option<usize> {
    if st.anchored_process != start {
        st.anchored.clear();
        st.anchored_process = start;
        st.anchored_epoch += 1;
    }
    start
}

/// The instruction as a user message of one text block, before the
/// breakpoints are marked (a compaction of its own, before 2.1.88).
pub(crate) fn append_instruction_block<'a>(bump: &'a Bump, messages: &mut Vec<&'a Json<'a>>, instruction: &'a str) {
    let block = super::normalize::text_block(bump, instruction);
    messages.push(super::normalize::message(bump, "user", &[block], &[]));
}

/// The pieces of a compaction of its own: the history's messages as the
/// transcript holds them, without the reminders and context the turns get.
pub(crate) fn plain_pieces<'a>(cx: &ChainCtx<'a, '_>, st: &mut super::chain::ChainState<'a>, projected: &[usize]) {
    st.scratch.clear();
    let messages = projected.iter().flat_map(|&i| cx.pieces[i].iter());
    st.scratch.extend(messages.filter(|p| matches!(p, Piece::User { .. } | Piece::Assistant { .. })).cloned());
}

/// The compaction instruction as the request's last message, a plain
/// string user message (after breakpoints and collapse).
pub(crate) fn append_instruction<'a>(bump: &'a Bump, messages: &mut Vec<&'a Json<'a>>, instruction: &'a str) {
    let members = [("role", Json::Str("user")), ("content", Json::Str(instruction))];
    messages.push(bump.alloc(Json::Obj(bump.alloc_slice_copy(&members))));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::input::{ReadOptions, parse_bytes};

    /// The 2.1.88 compact-resume capture's shape: a prompt and its answer,
    /// `last-prompt`, a process that only compacts (boundary, summary,
    /// command lines), then the resume filler and a new prompt.
    const LINES: &str = concat!(
        r#"{"type":"user","uuid":"u1","message":{"role":"user","content":"first"}}"#,
        "\n",
        r#"{"type":"assistant","uuid":"a1","parentUuid":"u1","message":{"id":"m1","role":"assistant","model":"m","content":[{"type":"text","text":"ok"}]}}"#,
        "\n",
        r#"{"type":"last-prompt","lastPrompt":"first"}"#,
        "\n",
        r#"{"type":"system","subtype":"compact_boundary","uuid":"b1","parentUuid":null,"logicalParentUuid":"a1"}"#,
        "\n",
        r#"{"type":"user","uuid":"s1","parentUuid":"b1","isCompactSummary":true,"message":{"role":"user","content":"Summary."}}"#,
        "\n",
        r#"{"type":"user","uuid":"c1","parentUuid":"s1","message":{"role":"user","content":"<command-name>/compact</command-name>"}}"#,
        "\n",
        r#"{"type":"assistant","uuid":"f1","parentUuid":"c1","isApiErrorMessage":false,"message":{"id":"x","role":"assistant","model":"<synthetic>","content":[{"type":"text","text":"No response requested."}]}}"#,
        "\n",
        r#"{"type":"user","uuid":"u2","parentUuid":"f1","message":{"role":"user","content":"third"}}"#,
        "\n",
    );

    #[test]
    fn a_process_that_only_compacts_has_sent_no_prompt() {
        let bump = Bump::new();
        let parsed = parse_bytes(&bump, LINES.as_bytes(), "t.jsonl", &ReadOptions::default());
        let e = &parsed.entries;
        // The compaction at the boundary (index 3) runs in the process
        // after last-prompt, which has sent nothing yet.
        assert_eq!(compacting_process_start(e, 3), None);
        // Without the last-prompt line, one process: its first prompt.
        let one: Vec<&str> = LINES.lines().filter(|l| !l.contains("last-prompt")).collect();
        let parsed1 = parse_bytes(&bump, one.join("\n").as_bytes(), "t.jsonl", &ReadOptions::default());
        assert_eq!(compacting_process_start(&parsed1.entries, 2), Some(0));
        // The compacting process's first user line is the summary; the
        // filler starts another process, whose first prompt is "third".
        assert_eq!(process_first_prompts(e), [0, 4, 7]);
        assert_eq!(string_prompt(&e[0]), Some("first"));
        assert_eq!(string_prompt(&e[1]), None);
        let links = super::super::projection::Links::new(e);
        assert_eq!(projection::history_to(e, &links, 1), [0, 1]);
        assert_eq!(last_assistant(e, &[0, 1]), Some(1));
    }

    #[test]
    fn the_instruction_is_a_plain_string_message_last() {
        let bump = Bump::new();
        let mut messages = vec![&*bump.alloc(Json::Null)];
        append_instruction(&bump, &mut messages, "Summarize.");
        assert_eq!(messages[1].to_compact_string(), r#"{"role":"user","content":"Summarize."}"#);
    }
}
