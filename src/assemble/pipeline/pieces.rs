//! Stage: the pieces of one turn, in order — the prepended user context,
//! then for each projected entry its own piece, after a prompt that started
//! a CLI process the system-turn members of that process (layouts that
//! send some: `--effort` may differ per process), the per-process reminder
//! on the prompt that started the running CLI process, the reminders
//! anchored after it, and the memory rules a `Read` result brought in.
//!
//! *Why.* 2.1.88 adds these pieces in memory (seeds `prependUserContext`,
//! the skills listing, `TODO_REMINDER_CONFIG`, conditional rules); the
//! transcript holds only the entries. 2.1.3xx writes everything as
//! attachments, so for it only the entries' pieces are gathered.
//!
//! *Invariants.* The output is rebuilt from scratch every turn
//! ([`ChainState::scratch`] is only reused for its allocation).

use super::chain::{ChainCtx, ChainState, user_reminder};
use super::normalize::Piece;

/// Fill `st.scratch` with the pieces of a turn whose projected entries are
/// `projected` and whose CLI process started at `current_start`.
pub(crate) fn gather_pieces<'a>(
    cx: &ChainCtx<'a, '_>,
    st: &mut ChainState<'a>,
    projected: &[usize],
    current_start: Option<usize>,
) {
    st.scratch.clear();
    st.scratch.extend(cx.user_context.iter().cloned());
    st.memo.piece_at.clear();
    append_pieces(cx, st, projected, current_start);
}

/// [`gather_pieces`] when the first `kept` entries of `projected` are the
/// last turn's path: their pieces are kept when nothing they depend on
/// changed (the per-process reminder's place, the anchored reminders), and
/// only the new entries' are added. Returns how many leading pieces are
/// the last turn's.
pub(crate) fn gather_pieces_from<'a>(
    cx: &ChainCtx<'a, '_>,
    st: &mut ChainState<'a>,
    projected: &[usize],
    kept: usize,
    current_start: Option<usize>,
) -> usize {
    let key = (cx.per_process_at.or(current_start), st.anchored_epoch);
    let reminders_moved = st.anchored_low.is_some_and(|low| kept > 0 && low <= projected[kept - 1]);
    if kept == 0 || st.memo.pieces_key != Some(key) || reminders_moved || st.memo.piece_at.len() < kept {
        st.memo.pieces_key = Some(key);
        gather_pieces(cx, st, projected, current_start);
        return 0;
    }
    let at = st.memo.piece_at.get(kept).copied().unwrap_or(st.scratch.len());
    st.scratch.truncate(at);
    st.memo.piece_at.truncate(kept);
    append_pieces(cx, st, &projected[kept..], current_start);
    at
}

/// Append the pieces of `entries` (path positions after those already
/// gathered) to `st.scratch`, noting where each entry's start.
fn append_pieces<'a>(cx: &ChainCtx<'a, '_>, st: &mut ChainState<'a>, entries: &[usize], current_start: Option<usize>) {
    let out = &mut st.scratch;
    let sends_members = !cx.plan.system_message_params.is_empty();
    // A subagent built from its type's definition gets the per-process
    // reminder on its first tool result, not its prompt (2.1.88
    // subagent-bash capture: the skills listing joined to the result).
    let per_process_at = cx.per_process_at.or(current_start);
    for &i in entries {
        st.memo.piece_at.push(out.len());
        out.extend(cx.pieces[i].iter().cloned());
        if sends_members && let Some(k) = cx.process_starts.iter().position(|&s| s == i) {
            out.push(Piece::Params { extra: cx.statics.system_extra_of(k) });
        }
        if per_process_at == Some(i) {
            out.extend(cx.per_process.iter().cloned());
        }
        if let Some(texts) = st.anchored.get(&i) {
            out.extend(texts.iter().map(|&text| user_reminder(text)));
        }
        out.extend(read_reminders(cx, i).iter().map(|r| -> Piece<'a> { user_reminder(cx.bump.alloc_str(r)) }));
    }
}

/// Reminders to add after the tool result of entry `i`.
fn read_reminders<'x>(cx: &ChainCtx<'_, 'x>, i: usize) -> &'x [String] {
    let extras = cx.extras;
    if extras.after_read.is_empty() {
        return &[];
    }
    cx.entries[i].env.uuid.and_then(|u| extras.after_read.get(u)).map_or(&[], Vec::as_slice)
}
