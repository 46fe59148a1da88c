//! The system prompt of each CLI process of a print-mode session, when the
//! processes' arguments (env.json's `argv`) render it differently: 1.0.128
//! names the `--allowedTools` in its prompt, and a resumed process may allow
//! others (the `resume-multi-prompt` capture: its third, `--continue`,
//! process allows none). A `-p` process answers one prompt, so the k-th
//! plain prompt of the main chain is process k's.

use crate::model::content::BlockKind;
use crate::model::entry::Entry;

/// Which process the turn whose first entry is `first` belongs to: the
/// plain prompts (not meta, not tool results) before it, less one.
pub(crate) fn process_of(entries: &[Entry<'_>], first: usize) -> usize {
    let prompts = entries[..first.min(entries.len())]
        .iter()
        .filter(|e| {
            !e.env.is_meta
                && e.as_user()
                    .is_some_and(|u| !u.content.blocks().iter().any(|b| matches!(b.kind, BlockKind::ToolResult { .. })))
        })
        .count();
    prompts.saturating_sub(1)
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
