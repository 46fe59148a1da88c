//! Stage: resume — a turn's messages built from where they stop being the
//! last turn's, so a turn costs what it adds, not the whole conversation
//! again (a session of N turns in time and memory linear in N).
//!
//! *What it keeps* ([`Memo`], per chain): the last turn's projection
//! ([`PathMemo`]), where each of its entries' pieces start, and the points
//! where normalization and pairing can resume (after a whole assistant
//! message: [`normalize::Mark`], [`pairing::PairState`]) with the messages
//! paired before each.
//!
//! *Invariants.* The messages are those the stages would build from
//! scratch, byte for byte: a turn resumes only from a point whose pieces
//! before it are unchanged, and anything the memo cannot vouch for (a
//! compaction in between, a new CLI process moving a reminder, a branch of
//! the conversation) starts from the beginning.

use super::projection::PathMemo;

/// What one turn of a chain leaves for the next to resume from.
#[derive(Default)]
pub(crate) struct Memo<'a> {
    /// The last turn's projection.
    pub(crate) path: PathMemo,
    /// Per entry of that path, where its pieces start.
    pub(crate) piece_at: Vec<usize>,
    /// What the pieces depended on: the per-process reminder's place and
    /// the anchored reminders' epoch.
    pub(crate) pieces_key: Option<(Option<usize>, u64)>,
    _marker: std::marker::PhantomData<&'a ()>,
}
