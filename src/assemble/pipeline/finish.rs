//! Stage: finish — the turn's paired messages made the request's: a user
//! message first, the billing text, one node per message across turns, the
//! cache breakpoints, the wire forms; built over what the turn changed.
//!
//! *What it does.* [`finish`] runs the stages `leading_user`, `billing`,
//! `share`, `breakpoints` and `collapse` in that order. A turn resumed from
//! the last one ([`super::resume`]) whose first `unchanged` paired
//! messages are the last turn's runs them only from there: the messages
//! before both turns' breakpoints are the last request's nodes, kept as
//! parts of the chain's [`Spine`]. Any other turn (the first, a compaction,
//! media over the limit, a change of the leading user message or of the
//! user-block rule) runs them over the whole conversation.
//!
//! *Why.* Run over every message each turn, these stages alone cost n² in
//! a session of n turns.
//!
//! *Invariants.* Both ways give the same bytes (`tests.rs` builds every
//! turn of every fixture both ways): the share stage already made the
//! kept messages the last turn's nodes, breakpoints touch the last
//! messages only (found from the end), and collapse maps a node to one wire
//! form per chain.

use super::chain::ChainCtx;
use super::spine::Spine;
use super::{billing, breakpoints, collapse, compaction, leading_user, media, share};
use crate::assemble::Messages;
use crate::assemble::validate::MAX_MEDIA;
use crate::json::Json;
use rustc_hash::FxHashMap;

/// What the last turn left.
#[derive(Default)]
pub(crate) struct FinishState<'a> {
    /// Its messages after sharing, before breakpoints.
    work: Vec<&'a Json<'a>>,
    /// Its request's messages.
    spine: Spine<'a>,
    /// Wire forms of message nodes already collapsed.
    collapsed: FxHashMap<*const Json<'a>, &'a Json<'a>>,
    /// `work` is the paired messages (after a leading user message when
    /// `lead`): the next turn may resume.
    synced: bool,
    lead: bool,
    keeps: bool,
    /// The first message its breakpoints changed, or its last message.
    dirty_from: usize,
}

#[cfg(test)]
impl FinishState<'_> {
    /// The next turn runs over the whole conversation.
    pub(crate) fn forget(&mut self) {
        self.synced = false;
    }
}

/// How the turn is sent.
pub(crate) struct Turn<'a> {
    pub(crate) version: &'a str,
    /// User messages keep their blocks (`collapse`).
    pub(crate) keeps: bool,
    /// A compaction's instruction, and whether it is a request of its own.
    pub(crate) compact: Option<(&'a str, bool)>,
    /// The turn resumed with this many leading paired messages the last
    /// turn's.
    pub(crate) unchanged: Option<usize>,
    /// Media blocks in the paired messages.
    pub(crate) media: usize,
}

/// The request's messages.
pub(crate) struct Finished<'a> {
    pub(crate) messages: Messages<'a>,
    /// Leading messages that are the last request's.
    pub(crate) shared: usize,
    pub(crate) header: Option<String>,
    pub(crate) stripped: usize,
    pub(crate) inserted: bool,
}

/// The turn's request messages from its paired messages (kept in step
/// with the shared nodes).
pub(crate) fn finish<'a>(
    cx: &ChainCtx<'a, '_>,
    fs: &mut FinishState<'a>,
    paired: &mut Vec<&'a Json<'a>>,
    turn: &Turn<'a>,
) -> Finished<'a> {
    match turn.unchanged {
        Some(unchanged) if turn.media <= MAX_MEDIA && turn.compact.is_none() => {
            resumed(cx, fs, paired, unchanged, turn).unwrap_or_else(|| whole(cx, fs, paired, turn))
        }
        _ => whole(cx, fs, paired, turn),
    }
}

/// Every stage over every message.
fn whole<'a>(
    cx: &ChainCtx<'a, '_>,
    fs: &mut FinishState<'a>,
    paired: &mut Vec<&'a Json<'a>>,
    turn: &Turn<'a>,
) -> Finished<'a> {
    let bump = cx.bump;
    let (mut messages, stripped) =
        if turn.media <= MAX_MEDIA { (paired.clone(), 0) } else { media::limit_media(bump, paired) };
    let inserted = leading_user::ensure_leading_user(bump, &mut messages, cx.agent_prompt);
    let header = billing::billing_header(cx, turn.version, &messages);
    share::share_with_previous(&mut messages, &mut fs.work);
    fs.synced = stripped == 0 && turn.compact.is_none();
    if fs.synced {
        paired.clear();
        paired.extend_from_slice(&messages[usize::from(inserted)..]);
    }
    if let Some((instruction, true)) = turn.compact {
        compaction::append_instruction_block(bump, &mut messages, instruction);
    }
    let (cc, count, skip) = (cx.statics.cache_control, cx.plan.message_breakpoints, cx.plan.breakpoint_skips_system);
    let targets = breakpoints::targets(&messages, count, skip);
    breakpoints::add_cache_breakpoints_skipping(bump, &mut messages, cc, count, skip);
    let mut messages = collapse::collapse_messages(bump, messages, &mut fs.collapsed, &cx.prompts, turn.keeps);
    if let Some((instruction, false)) = turn.compact {
        compaction::append_instruction(bump, &mut messages, instruction);
    }
    fs.lead = inserted;
    fs.keeps = turn.keeps;
    fs.dirty_from = dirty_from(&targets, fs.work.len());
    let shared = fs.spine.common_prefix(&messages);
    let stable = fs.dirty_from.saturating_sub(shared);
    let messages = fs.spine.next(bump, shared, &messages[shared..], stable);
    Finished { messages, shared, header, stripped, inserted }
}

/// The stages from where the turn changed the last one's messages; `None`
/// when the last turn does not allow it.
fn resumed<'a>(
    cx: &ChainCtx<'a, '_>,
    fs: &mut FinishState<'a>,
    paired: &[&'a Json<'a>],
    unchanged: usize,
    turn: &Turn<'a>,
) -> Option<Finished<'a>> {
    let lead = !leading_user::starts_with_user(paired);
    if !fs.synced || fs.keeps != turn.keeps || fs.lead != lead {
        return None;
    }
    let bump = cx.bump;
    // The resume stage made the new messages the last turn's nodes where
    // equal (as `share` does): the paired messages are this turn's `work`.
    let added = paired.get(unchanged..)?;
    let base = usize::from(lead) + unchanged;
    fs.work.truncate(base);
    fs.work.extend_from_slice(added);
    let header = billing::billing_header(cx, turn.version, &fs.work[..fs.work.len().min(1)]);
    let (cc, count, skip) = (cx.statics.cache_control, cx.plan.message_breakpoints, cx.plan.breakpoint_skips_system);
    let targets = breakpoints::targets(&fs.work, count, skip);
    let dirty = dirty_from(&targets, fs.work.len());
    let keep = base.min(fs.dirty_from).min(dirty);
    let mut tail = fs.work[keep..].to_vec();
    for &t in &targets {
        breakpoints::mark(bump, &mut tail[t - keep], cc);
    }
    let tail = collapse::collapse_messages(bump, tail, &mut fs.collapsed, &cx.prompts, turn.keeps);
    fs.dirty_from = dirty;
    let messages = fs.spine.next(bump, keep, &tail, dirty - keep);
    Some(Finished { messages, shared: keep, header, stripped: 0, inserted: lead })
}

/// The first message a turn's breakpoints change, or its last message
/// (collapsed afresh each turn).
fn dirty_from(targets: &[usize], len: usize) -> usize {
    targets.first().copied().unwrap_or(usize::MAX).min(len.saturating_sub(1))
}
