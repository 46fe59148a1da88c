//! Stage: resume — a turn's messages built from where they stop being the
//! last turn's, so a turn costs what it adds, not the whole conversation
//! again (a session of N turns takes time and memory linear in N).
//!
//! *What it keeps* ([`Memo`], per chain): the last turn's projection
//! ([`PathMemo`]), where each of its entries' pieces start, the messages
//! the last turn paired, and the points where normalization and pairing
//! can resume — after a whole assistant message ([`Mark`], [`PairState`]) —
//! with how many paired messages and media blocks come before each.
//!
//! *What it does* ([`paired_messages`]): given the turn's pieces and how
//! many leading ones are the last turn's, it resumes at the last point
//! before the first new piece: normalizes and pairs only what follows, and
//! keeps the paired messages before it. A message rebuilt equal to the
//! last turn's at its place becomes that node (as the `share` stage does).
//!
//! *Invariants.* The messages are those the stages build from scratch,
//! byte for byte (`tests.rs` checks every turn of every fixture both
//! ways): a point is used only when the pieces before it are unchanged,
//! and anything the memo cannot vouch for (a compaction in between, a new
//! CLI process moving a reminder, a branch of the conversation) resumes
//! from the start.

use super::normalize::{self, Mark, Piece, Rules};
use super::pairing::{self, PairState, PairingRepairs};
use super::projection::PathMemo;
use crate::json::Json;
use bumpalo::Bump;

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
    /// The last turn's paired messages.
    pub(crate) paired: Vec<&'a Json<'a>>,
    /// Where a turn can resume, ascending; empty before the first turn.
    points: Vec<Point<'a>>,
}

/// A point a turn can resume from.
#[derive(Clone)]
struct Point<'a> {
    norm: Mark<'a>,
    pair: PairState<'a>,
    /// Paired messages before it.
    paired: usize,
    /// Media blocks in those.
    media: usize,
}

impl Memo<'_> {
    /// Forget everything: the next turn starts from scratch.
    pub(crate) fn clear(&mut self) {
        self.path.clear();
        self.pieces_key = None;
        self.points.clear();
        self.paired.clear();
    }
}

/// Points a chain keeps at most: the start, the last [`RECENT_POINTS`]
/// and a few sparser ones before them. A turn of a long session resumes
/// from its last point; one that goes back further (a branch) resumes from
/// the kept point before where it changes, the start at worst, and only
/// re-does more. A point for every turn was 184 bytes a turn.
const MAX_POINTS: usize = if cfg!(test) { 8 } else { 64 };
const RECENT_POINTS: usize = MAX_POINTS / 2;

/// Past [`MAX_POINTS`], every other point older than the last
/// [`RECENT_POINTS`] is dropped (the start is kept), in order.
fn thin<T>(points: &mut Vec<T>) {
    if points.len() <= MAX_POINTS {
        return;
    }
    let old_end = points.len() - RECENT_POINTS;
    let mut i = 0;
    points.retain(|_| {
        let keep = i == 0 || i >= old_end || i % 2 == 0;
        i += 1;
        keep
    });
}

/// What [`paired_messages`] built.
pub(crate) struct Paired {
    /// How many leading messages of [`Memo::paired`] are the last turn's
    /// nodes.
    pub(crate) unchanged: usize,
    /// Media blocks in all of them.
    pub(crate) media: usize,
    pub(crate) normalize: normalize::Report,
    pub(crate) pairing: PairingRepairs,
}

/// The turn's messages, normalized and paired, into `memo.paired`: the
/// first `same` pieces are the last turn's.
pub(crate) fn paired_messages<'a>(
    bump: &'a Bump,
    pieces: &[Piece<'a>],
    same: usize,
    (rules, answers): (&Rules<'a>, &rustc_hash::FxHashMap<usize, &'a Json<'a>>),
    memo: &mut Memo<'a>,
) -> Paired {
    if memo.points.is_empty() {
        memo.points.push(Point { norm: Mark::start(bump, rules), pair: PairState::default(), paired: 0, media: 0 });
        memo.paired.clear();
    }
    // The last point before the first new piece that the pieces after it
    // do not join (the start always resumes).
    let mut k = memo.points.partition_point(|p| p.norm.piece <= same).max(1);
    while k > 1 && !memo.points[k - 1].norm.resumes(pieces) {
        k -= 1;
    }
    memo.points.truncate(k);
    let from = memo.points[k - 1].clone();
    let old = memo.paired.get(from.paired..).unwrap_or(&[]);
    let (messages, report, marks) = normalize::normalize_from(bump, pieces, &from.norm, rules, (old, answers));
    let at: Vec<usize> = marks.iter().map(|m| m.message - from.norm.message).collect();
    let (mut added, end, states) = pairing::pairing_from(bump, &messages, from.pair.clone(), &at);
    // One node per message across turns.
    for (m, old) in added.iter_mut().zip(memo.paired.get(from.paired..).unwrap_or(&[])) {
        if !std::ptr::eq(*m, *old) && super::share::same(m, old) {
            *m = old;
        }
    }
    let old = memo.paired.get(from.paired..).unwrap_or(&[]);
    let unchanged = from.paired + added.iter().zip(old).take_while(|(m, o)| std::ptr::eq(**m, **o)).count();
    let media_of: Vec<usize> = added.iter().map(|m| super::media::count_of(m)).collect();
    for (mark, (len, pair)) in marks.into_iter().zip(states) {
        let media = from.media + media_of[..len].iter().sum::<usize>();
        memo.points.push(Point { norm: mark, pair, paired: from.paired + len, media });
        thin(&mut memo.points);
    }
    memo.paired.truncate(from.paired);
    memo.paired.extend(added);
    Paired { unchanged, media: from.media + media_of.iter().sum::<usize>(), normalize: report, pairing: end.repairs }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Points stay few and in order: the start, the recent ones all, a few
    /// sparser ones before them.
    #[test]
    fn points_are_thinned_past_the_most_kept() {
        let mut points = Vec::new();
        for turn in 0..1000 {
            points.push(turn);
            thin(&mut points);
            assert!(points.len() <= MAX_POINTS);
        }
        assert_eq!(points[0], 0);
        assert!(points.windows(2).all(|w| w[0] < w[1]));
        let recent: Vec<usize> = (1000 - RECENT_POINTS..1000).collect();
        assert_eq!(points[points.len() - RECENT_POINTS..], recent[..]);
        assert_eq!(points, [0, 992, 994, 995, 996, 997, 998, 999]);
    }
}
