//! Stage: spine — a request's messages as parts shared with the chain's
//! earlier requests.
//!
//! *What it does.* [`Spine::next`] keeps the first `keep` messages of the
//! chain's last request, appends the turn's others and returns the whole
//! as [`Messages::Parts`].
//!
//! *Why.* A turn's request is the last one's plus what the turn added: a
//! list per request would hold all n messages each time, n² for a session
//! of n turns.
//!
//! *How.* The messages no later turn changes (before the turn's first
//! breakpoint: `stable`) go on the chain's log, one buffer that grows in
//! place; the rest (the marked last messages) are the request's own tail.
//! A request is then the log as far as it reached, and its tail: two parts,
//! whatever the length (the earlier way, O(log n) parts per request and
//! each message copied O(log n) times, was 316 bytes a turn). A turn that
//! keeps less than the log (a branch, a compaction, a change before the
//! last breakpoint) freezes the kept part of the log as a part of its own
//! and starts a new one; frozen parts follow the binary rule below, so a
//! chain whose every turn cuts the log still has O(log n) parts a request.
//!
//! *Invariants.* A part never changes once made (cutting one makes a
//! shorter slice of it; the log is only written past every slice of it
//! handed out); each frozen part is more than twice as long as the next.

use crate::assemble::Messages;
use crate::json::Json;
use bumpalo::Bump;

/// The chain's last request's messages: frozen parts, the log, the tail.
#[derive(Default)]
pub(crate) struct Spine<'a> {
    frozen: Vec<&'a [&'a Json<'a>]>,
    frozen_len: usize,
    log: Log<'a>,
    tail: &'a [&'a Json<'a>],
}

impl<'a> Spine<'a> {
    /// The parts of the last request, in order.
    fn parts(&self) -> impl Iterator<Item = &'a [&'a Json<'a>]> + '_ {
        self.frozen.iter().copied().chain([self.log.filled(), self.tail]).filter(|p| !p.is_empty())
    }

    fn len(&self) -> usize {
        self.frozen_len + self.log.len + self.tail.len()
    }

    /// How many leading messages of `messages` are the last request's
    /// (the same nodes).
    pub(crate) fn common_prefix(&self, messages: &[&Json<'_>]) -> usize {
        let mut n = 0;
        for part in self.parts() {
            let rest = &messages[n.min(messages.len())..];
            let same = part.iter().zip(rest).take_while(|(a, b)| std::ptr::eq(**a, **b)).count();
            n += same;
            if same < part.len() {
                break;
            }
        }
        n
    }

    /// The first `keep` messages of the last request, then `more`: this
    /// request's messages (and the last request's for the next call). The
    /// first `stable` of `more` go on the log.
    pub(crate) fn next(&mut self, bump: &'a Bump, keep: usize, more: &[&'a Json<'a>], stable: usize) -> Messages<'a> {
        let keep = keep.min(self.len());
        let logged = self.frozen_len + self.log.len;
        if keep >= logged {
            // The kept messages of the last tail join the log.
            let tail = self.tail;
            self.log.extend(bump, &tail[..keep - logged]);
        } else {
            if keep >= self.frozen_len {
                let cut = &self.log.filled()[..keep - self.frozen_len];
                if !cut.is_empty() {
                    self.frozen.push(cut);
                }
            } else {
                self.cut_frozen(keep);
            }
            self.frozen_len = keep;
            self.log = Log::default();
            self.merge(bump);
        }
        let stable = stable.min(more.len());
        self.log.extend(bump, &more[..stable]);
        self.tail = bump.alloc_slice_copy(&more[stable..]);
        let parts: smallvec::SmallVec<[&'a [&'a Json<'a>]; 4]> = self.parts().collect();
        Messages::Parts(bump.alloc_slice_copy(&parts), self.len())
    }

    /// The frozen parts cut to their first `keep` messages.
    fn cut_frozen(&mut self, keep: usize) {
        let mut total = 0;
        let mut kept = 0;
        while let Some(part) = self.frozen.get(kept).copied() {
            if total + part.len() <= keep {
                total += part.len();
                kept += 1;
                continue;
            }
            if total < keep {
                self.frozen[kept] = &part[..keep - total];
                kept += 1;
            }
            break;
        }
        self.frozen.truncate(kept);
    }

    /// Each frozen part more than twice as long as the next: two that are
    /// not are made one.
    fn merge(&mut self, bump: &'a Bump) {
        while let [.., a, b] = self.frozen[..] {
            if a.len() > 2 * b.len() {
                break;
            }
            let merged = bump
                .alloc_slice_fill_iter((0..a.len() + b.len()).map(|i| if i < a.len() { a[i] } else { b[i - a.len()] }));
            self.frozen.truncate(self.frozen.len() - 2);
            self.frozen.push(merged);
        }
    }
}

/// A list that grows in place in the arena and hands out its filled part
/// as slices that never change: it writes only past everything it handed
/// out, and moves to a buffer twice as large (copying the filled part;
/// the old buffer stays, for the slices of it) when full.
struct Log<'a> {
    /// The buffer: `cap` slots, the first `len` written.
    ptr: std::ptr::NonNull<&'a Json<'a>>,
    cap: usize,
    len: usize,
    _arena: std::marker::PhantomData<&'a [&'a Json<'a>]>,
}

impl Default for Log<'_> {
    fn default() -> Self {
        Log { ptr: std::ptr::NonNull::dangling(), cap: 0, len: 0, _arena: std::marker::PhantomData }
    }
}

impl<'a> Log<'a> {
    /// The written part, for as long as the arena lives.
    fn filled(&self) -> &'a [&'a Json<'a>] {
        // SAFETY: `ptr` is either dangling with `len == 0` (an empty slice
        // of a well-aligned non-null pointer) or the start of an arena
        // buffer of `cap >= len` slots that lives for `'a`, whose first
        // `len` slots are written. Those slots are never written again:
        // `extend` writes only at `len..cap` and `len` only grows.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }

    /// Append `items`.
    fn extend(&mut self, bump: &'a Bump, items: &[&'a Json<'a>]) {
        if items.is_empty() {
            return;
        }
        let need = self.len + items.len();
        if need > self.cap {
            let cap = need.max(2 * self.cap).max(16);
            let buf: &'a mut [&'a Json<'a>] = bump.alloc_slice_fill_copy(cap, &crate::json::NULL);
            buf[..self.len].copy_from_slice(self.filled());
            self.ptr = std::ptr::NonNull::from(buf).cast();
            self.cap = cap;
        }
        // SAFETY: `len + items.len() <= cap`, so the slots written are in
        // the buffer (`ptr` came from the `&mut` of its allocation, which
        // nothing else holds: this log is its only owner), and at or past
        // `len`, so no slice handed out by `filled` covers them. `items`
        // is not in them (they were never handed out).
        unsafe { std::ptr::copy_nonoverlapping(items.as_ptr(), self.ptr.as_ptr().add(self.len), items.len()) };
        self.len = need;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_request_is_the_kept_prefix_then_what_it_adds_in_few_parts() {
        let bump = Bump::new();
        let nodes: Vec<&Json<'_>> = (0..5000).map(|i| &*bump.alloc(Json::U64(i))).collect();
        let other: &Json<'_> = bump.alloc(Json::Str("changed"));
        // `stable` 2: the turn's new messages go on the log, the marked one
        // is the tail (the pipeline's way); 0: nothing goes on the log until
        // the next turn keeps it; 3: the marked one too, so every turn cuts
        // the log.
        for (stable, most) in [(2, 2), (0, 2), (3, 14)] {
            let mut spine = Spine::default();
            let mut want: Vec<&Json<'_>> = Vec::new();
            let mut max_parts = 0;
            let mut made = Vec::new();
            // Each turn: the last message changes (a breakpoint), two are added.
            for t in 0..2000 {
                let keep = want.len().saturating_sub(1);
                want.truncate(keep);
                let more = [nodes[2 * t], nodes[2 * t + 1], other];
                assert_eq!(spine.common_prefix(&[&want[..], &more[..]].concat()), keep);
                want.extend_from_slice(&more);
                let got = spine.next(&bump, keep, &more, stable);
                let Messages::Parts(parts, len) = got else { panic!("parts") };
                assert_eq!(len, want.len());
                max_parts = max_parts.max(parts.len());
                made.push((got, want.clone()));
            }
            // log2(6000) ≈ 12.6: a handful of parts, never one per turn;
            // two when the log takes the new messages.
            assert!(max_parts <= most, "stable {stable}: {max_parts} parts");
            // Every request still holds its own messages: the log grew in
            // place past them, never over them.
            for (got, want) in &made {
                let flat: Vec<&Json<'_>> = got.iter().collect();
                assert!(flat.len() == want.len() && flat.iter().zip(want).all(|(a, b)| std::ptr::eq(*a, *b)));
            }
            // Cutting inside the log or a part keeps the earlier requests
            // intact, and the spine goes on from the cut.
            let before = spine.next(&bump, 6000, &[], 0);
            let cut = spine.next(&bump, 10, &[other], 0);
            assert_eq!(cut.len(), 11);
            assert!(std::ptr::eq(cut.get(9).unwrap(), nodes[9]) && std::ptr::eq(cut.last().unwrap(), other));
            let on = spine.next(&bump, 11, &[nodes[0]], 1);
            assert_eq!(on.len(), 12);
            assert!(std::ptr::eq(on.get(10).unwrap(), other) && std::ptr::eq(on.last().unwrap(), nodes[0]));
            assert_eq!(before.len(), 4001);
            assert!(before.iter().take(4000).zip(&nodes).all(|(a, b)| std::ptr::eq(a, *b)));
            assert!(std::ptr::eq(before.last().unwrap(), other));
            let (got, want) = &made[1999];
            assert!(got.iter().zip(want).all(|(a, b)| std::ptr::eq(a, *b)));
        }
    }
}
