//! A what-if applied to one request before it is simulated: breakpoints
//! moved or re-timed, another model, a longer system prompt (see
//! [`WhatIf`] for each).
//!
//! Changes one [`SimRequest`] in place; replaying it is `replay`'s.

use super::options::{Boundary, WhatIf};
use crate::cost::sim::{BlockKind, Estimator, Place, Role, SimRequest};

/// Apply `w` to one request (tokens per system byte from `est`).
pub(super) fn apply_what_if(w: &WhatIf, req: &mut SimRequest, est: &Estimator, max_bps: usize) {
    match w {
        WhatIf::Ttl(t) => {
            for b in req.blocks.iter_mut().filter(|b| b.ttl.is_some()) {
                b.ttl = Some(*t);
            }
        }
        WhatIf::Breakpoints(n) => set_breakpoints(req, (*n).min(max_bps)),
        WhatIf::Model(m) => req.model = m.clone(),
        WhatIf::SystemPromptGrowth(bytes) => {
            let bpt = est.bytes_per_token[BlockKind::System.index()];
            let delta = if bpt > 0.0 && bpt.is_finite() { *bytes as f64 / bpt } else { 0.0 };
            if let Some(b) = req.blocks.iter_mut().rev().find(|b| b.place == Place::System) {
                let t = (f64::from(b.tokens) + delta).round().clamp(0.0, f64::from(u32::MAX));
                b.tokens = t as u32;
                // A longer prompt is another prefix.
                b.hash ^= u128::from(bytes.unsigned_abs()) << 64 | 0x9e37;
            }
        }
        WhatIf::NoCrossSessionCache => {}
        WhatIf::Boundary(Boundary::None) => {
            for b in req.blocks.iter_mut().filter(|b| matches!(b.place, Place::Tool | Place::System)) {
                b.ttl = None;
            }
        }
        WhatIf::Boundary(Boundary::Tools) => mark_last_tool(req, max_bps),
    }
}

/// `n` breakpoints, in the order [`WhatIf::Breakpoints`] gives, all with
/// the request's first TTL.
fn set_breakpoints(req: &mut SimRequest, n: usize) {
    let head: Vec<usize> = req
        .blocks
        .iter()
        .enumerate()
        .filter(|(_, b)| b.ttl.is_some() && matches!(b.place, Place::Tool | Place::System))
        .map(|(i, _)| i)
        .collect();
    // Last block of each user message, newest first.
    let mut user_ends = Vec::new();
    let mut end = None;
    for (i, b) in req.blocks.iter().enumerate().rev() {
        match b.place {
            Place::Message { role, first } => {
                if end.is_none() {
                    end = Some((i, role));
                }
                if first {
                    if let Some((e, Role::User)) = end {
                        user_ends.push(e);
                    }
                    end = None;
                }
            }
            _ => break,
        }
    }
    let ttl = req.blocks.iter().find_map(|b| b.ttl).unwrap_or_default();
    for b in req.blocks.iter_mut() {
        b.ttl = None;
    }
    // The last message's, then the tool / system ones, then earlier
    // user messages'.
    let mut order: Vec<usize> = user_ends.first().copied().into_iter().collect();
    order.extend(head.iter().rev());
    order.extend(user_ends.iter().skip(1));
    for i in order.into_iter().take(n) {
        if let Some(b) = req.blocks.get_mut(i) {
            b.ttl = Some(ttl);
        }
    }
}

/// A breakpoint on the last tool (`boundary=tools`), keeping within
/// `max_bps`.
fn mark_last_tool(req: &mut SimRequest, max_bps: usize) {
    let ttl = req.blocks.iter().find_map(|b| b.ttl).unwrap_or_default();
    if let Some(i) = req.blocks.iter().rposition(|b| b.place == Place::Tool)
        && req.blocks[i].ttl.is_none()
    {
        req.blocks[i].ttl = Some(ttl);
        // Keep within the limit: drop the first message-side breakpoint
        // before the last one when there are too many.
        let marked: Vec<usize> =
            req.blocks.iter().enumerate().filter(|(_, b)| b.ttl.is_some()).map(|(i, _)| i).collect();
        if marked.len() > max_bps
            && let Some(&drop) = marked.iter().find(|&&j| j != i && req.blocks[j].place == Place::System)
        {
            req.blocks[drop].ttl = None;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cost::modeled::test_util::*;
    use crate::cost::sim::Ttl;

    #[test]
    fn breakpoints_what_if_marks_the_last_message_then_system_then_earlier_messages() {
        let m5 = Some(Ttl::FiveMinutes);
        let blocks = vec![
            block(1, 10, None, Place::Tool),
            block(2, 10, m5, Place::System),
            block(3, 10, None, user(true)),
            block(4, 10, None, assistant(true)),
            block(5, 10, None, user(true)),
            block(6, 10, None, user(false)),
            block(7, 10, None, assistant(true)),
            block(8, 10, m5, user(true)),
        ];
        let req = SimRequest { blocks, ..SimRequest::default() };
        let marks = |n| {
            let mut r = req.clone();
            apply_what_if(&WhatIf::Breakpoints(n), &mut r, &Estimator::default(), 4);
            r.blocks.iter().enumerate().filter(|(_, b)| b.ttl.is_some()).map(|(i, _)| i).collect::<Vec<_>>()
        };
        assert_eq!(marks(0), Vec::<usize>::new());
        assert_eq!(marks(1), [7]);
        assert_eq!(marks(2), [1, 7]);
        assert_eq!(marks(3), [1, 5, 7]);
        assert_eq!(marks(4), [1, 2, 5, 7]);
    }

    #[test]
    fn boundary_and_ttl_what_ifs() {
        let m5 = Some(Ttl::FiveMinutes);
        let req = SimRequest {
            blocks: vec![
                block(1, 10, None, Place::Tool),
                block(2, 10, m5, Place::System),
                block(3, 10, m5, user(true)),
            ],
            ..SimRequest::default()
        };
        let mut r = req.clone();
        apply_what_if(&WhatIf::Boundary(Boundary::None), &mut r, &Estimator::default(), 4);
        assert_eq!(r.blocks.iter().map(|b| b.ttl).collect::<Vec<_>>(), [None, None, m5]);
        let mut r = req.clone();
        apply_what_if(&WhatIf::Boundary(Boundary::Tools), &mut r, &Estimator::default(), 4);
        assert_eq!(r.blocks.iter().map(|b| b.ttl).collect::<Vec<_>>(), [m5, m5, m5]);
        let mut r = req.clone();
        apply_what_if(&WhatIf::Ttl(Ttl::OneHour), &mut r, &Estimator::default(), 4);
        let h1 = Some(Ttl::OneHour);
        assert_eq!(r.blocks.iter().map(|b| b.ttl).collect::<Vec<_>>(), [None, h1, h1]);
        // 4000 bytes at 4 bytes per token: 1000 more tokens in the last system block, another prefix.
        let mut r = req.clone();
        apply_what_if(&WhatIf::SystemPromptGrowth(4000), &mut r, &Estimator::uniform(4.0), 4);
        assert_eq!(r.blocks[1].tokens, 1010);
        assert_ne!(r.blocks[1].hash, 2);
    }
}
