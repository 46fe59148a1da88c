//! The system prompt of each CLI process of a print-mode session, when the
//! processes' arguments (env.json's `argv`) render it differently: 1.0.128
//! names the `--allowedTools` in its prompt, and a resumed process may allow
//! others (the `resume-multi-prompt` capture: its third, `--continue`,
//! process allows none). A `-p` process answers one prompt, so the k-th
//! plain prompt of the main chain is process k's.

use crate::model::content::BlockKind;
use crate::model::entry::Entry;

/// Which process the turn whose first entry is `first` belongs to: the
/// plain prompts (not meta, not tool results) before it, less one;
/// `prompts_before` is [`prompts_before`] of the chain's entries.
pub(crate) fn process_of(prompts_before: &[u32], first: usize) -> usize {
    let at = first.min(prompts_before.len().saturating_sub(1));
    prompts_before.get(at).map_or(0, |&n| n as usize).saturating_sub(1)
}

/// Per entry index (and one past the last), how many plain prompts come
/// before it: counted once per chain, so each turn's lookup is O(1).
pub(crate) fn prompts_before(entries: &[Entry<'_>]) -> Vec<u32> {
    let mut out = Vec::with_capacity(entries.len() + 1);
    let mut n = 0u32;
    out.push(0);
    for e in entries {
        let plain = !e.env.is_meta
            && e.as_user()
                .is_some_and(|u| !u.content.blocks().iter().any(|b| matches!(b.kind, BlockKind::ToolResult { .. })));
        n += u32::from(plain);
        out.push(n);
    }
    out
}

/// The environment of process `k`: its arguments first (what the prompt
/// is rendered from).
pub(crate) fn env_of(env: &crate::env::SessionEnv, k: usize) -> crate::env::SessionEnv {
    let mut e = env.clone();
    if k < e.argv.len() {
        e.argv.rotate_left(k);
    }
    e
}
