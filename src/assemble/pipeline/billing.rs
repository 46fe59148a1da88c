//! Stage: the billing header's text ([`crate::assemble::wire::billing_header`]).
//!
//! *What it does.* [`billing_header`] picks the billing text from the
//! request's first message (the profile's `billing.suffix_text`: its first
//! text block for 2.1.88, its first text that is not a reminder for
//! 2.1.3xx), hashes it into the 3-hex suffix with the profile's salt and
//! formats the header with the turn's CLI version and the chain's
//! entrypoint.
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
    Some(wire::billing_header(version, &suffix, cx.entrypoint, &plan.billing_extra))
}
