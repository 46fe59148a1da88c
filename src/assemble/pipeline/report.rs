//! What the pipeline repaired or changed: counts per session, summed over
//! a run ([`PipelineReport::add`]).

use super::pairing::PairingRepairs;

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
    /// [`super::leading_user::MISSING_START`].
    pub leading_user_inserted: u64,
}

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
    pub(crate) fn add(&mut self, r: &PairingRepairs) {
        self.synthetic_results += r.synthetic_results as u64;
        self.dropped_results += r.dropped_results as u64;
        self.inserted_messages += r.inserted_messages as u64;
        self.removed_messages += r.removed_messages as u64;
    }
}
