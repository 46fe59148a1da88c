//! Stage: spine — a request's messages as parts shared with the chain's
//! earlier requests.
//!
//! *What it does.* [`Spine::next`] keeps the first `keep` messages of the
//! chain's last request, appends the turn's others and returns the whole
//! as [`Messages::Parts`].
//!
//! *Why.* A turn's request is the last one's plus what the turn added: a
//! list per request would hold all n messages each time, n² for a session
//! of n turns; parts hold O(log n) slices per request.
//!
//! *Invariants.* A part never changes once made (cutting one makes a
//! shorter slice of it); each part is more than twice as long as the next,
//! so a request has O(log n) parts and a message is copied O(log n) times.

use crate::assemble::Messages;
use crate::json::Json;
use bumpalo::Bump;

/// The chain's last request's messages, as parts.
#[derive(Default)]
pub(crate) struct Spine<'a> {
    parts: Vec<&'a [&'a Json<'a>]>,
    len: usize,
}

impl<'a> Spine<'a> {
    /// How many leading messages of `messages` are the last request's
    /// (the same nodes).
    pub(crate) fn common_prefix(&self, messages: &[&Json<'_>]) -> usize {
        let mut n = 0;
        for part in &self.parts {
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
    /// request's messages (and the last request's for the next call).
    pub(crate) fn next(&mut self, bump: &'a Bump, keep: usize, more: &[&'a Json<'a>]) -> Messages<'a> {
        let keep = keep.min(self.len);
        let mut total = 0;
        let mut kept = 0;
        while let Some(part) = self.parts.get(kept).copied() {
            if total + part.len() <= keep {
                total += part.len();
                kept += 1;
                continue;
            }
            if total < keep {
                self.parts[kept] = &part[..keep - total];
                kept += 1;
            }
            break;
        }
        self.parts.truncate(kept);
        if !more.is_empty() {
            self.parts.push(bump.alloc_slice_copy(more));
        }
        while let [.., a, b] = self.parts[..] {
            if a.len() > 2 * b.len() {
                break;
            }
            let merged = bump
                .alloc_slice_fill_iter((0..a.len() + b.len()).map(|i| if i < a.len() { a[i] } else { b[i - a.len()] }));
            self.parts.truncate(self.parts.len() - 2);
            self.parts.push(merged);
        }
        self.len = keep + more.len();
        Messages::Parts(bump.alloc_slice_copy(&self.parts), self.len)
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
        let mut spine = Spine::default();
        let mut want: Vec<&Json<'_>> = Vec::new();
        let mut max_parts = 0;
        // Each turn: the last message changes (a breakpoint), two are added.
        for t in 0..2000 {
            let keep = want.len().saturating_sub(1);
            want.truncate(keep);
            let more = [nodes[2 * t], nodes[2 * t + 1], other];
            assert_eq!(spine.common_prefix(&[&want[..], &more[..]].concat()), keep);
            want.extend_from_slice(&more);
            let got = spine.next(&bump, keep, &more);
            let Messages::Parts(parts, len) = got else { panic!("parts") };
            assert_eq!(len, want.len());
            max_parts = max_parts.max(parts.len());
            let flat: Vec<&Json<'_>> = got.iter().collect();
            assert!(flat.iter().zip(&want).all(|(a, b)| std::ptr::eq(*a, *b)) && flat.len() == want.len());
        }
        // log2(6000) ≈ 12.6: a handful of parts, never one per turn.
        assert!(max_parts <= 14, "{max_parts} parts");
        // Cutting inside a part keeps the earlier request's parts intact.
        let before = spine.next(&bump, 6000, &[]);
        let cut = spine.next(&bump, 10, &[other]);
        assert_eq!(cut.len(), 11);
        assert!(std::ptr::eq(cut.get(9).unwrap(), nodes[9]) && std::ptr::eq(cut.last().unwrap(), other));
        assert_eq!(before.len(), 4001);
        assert!(before.iter().take(4000).zip(&nodes).all(|(a, b)| std::ptr::eq(a, *b)));
        assert!(std::ptr::eq(before.last().unwrap(), other));
    }
}
