//! Stage: the billing header's text ([`crate::assemble::wire::billing_header`]).
//!
//! *What it does.* [`billing_header`] picks the billing text from the
//! request's first message (the profile's `billing.suffix_text`: its first
//! text block for 2.1.88, its first text that is not a reminder for
//! 2.1.3xx), hashes it into the 3-hex suffix with the profile's salt and
//! formats the header with the turn's CLI version and the chain's
//! entrypoint, and on a subagent's request the profile's subagent flag
//! (`billing.subagent`, 2.1.3xx `subagent-bash` captures: ` cc_is_subagent=true;`
//! on the agent's requests, not on the main chain's nor a compaction's).
//!
//! *Why here.* The text is read before breakpoints and collapse change the
//! message's form (the client hashes its own message, not the wire bytes).

use super::chain::ChainCtx;
use crate::assemble::wire::{self, first_block_text, first_user_text};
use crate::json::Json;
use crate::profile::SuffixText;

/// The billing header of a request of CLI `version` whose messages are
/// `messages`; `None` when the profile sends no billing block (2.0.77).
pub(crate) fn billing_header(cx: &ChainCtx<'_, '_>, version: &str, messages: &[&Json<'_>]) -> Option<String> {
    let plan = cx.plan;
    if !plan.billing_block {
        return None;
    }
    let first = messages.first();
    let text = match plan.billing_text {
        SuffixText::FirstNonReminder => first.map_or("", |m| first_user_text(m)),
        SuffixText::FirstText => first.map_or("", |m| first_block_text(m)),
    };
    let suffix = wire::billing_suffix(&plan.billing_salt, text, version);
    let extra = if is_subagent(cx.agent_id) {
        format!("{}{}", plan.billing_extra, plan.billing_subagent)
    } else {
        plan.billing_extra.clone()
    };
    Some(wire::billing_header(version, &suffix, cx.entrypoint, &extra))
}

/// Whether a chain of agent id `agent_id` is a subagent's (a compaction's
/// transcript, `agent-acompact-*`, is the main agent's request).
fn is_subagent(agent_id: Option<&str>) -> bool {
    agent_id.is_some_and(|a| !crate::input::discover::is_compaction_agent(a))
}

#[cfg(test)]
mod tests {
    use super::is_subagent;

    #[test]
    fn a_subagent_chain_is_a_named_agent_but_not_a_compaction() {
        assert!(is_subagent(Some("a5ff6edb0b52d87e8")));
        assert!(!is_subagent(Some("acompact-0123456789abcdef")));
        assert!(!is_subagent(None));
    }
}
